#pragma once
// Every answer of the simulator rendered once, as text and as JSON: the CLI prints these and the
// Python module returns them (its dicts are the JSON here), so the two cannot disagree. The verdicts
// (a deployment's memory fit, a run's SLO, a search's band) are fields of the results; these only
// render them. JSON field names are the CLI's contract (README); the single-scenario predict, rank,
// select and check JSON is in reports/Json.hpp.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "reports/StudyReports.hpp"
#include "simulator/CapacitySearch.hpp"
#include "simulator/Evaluation.hpp"
#include "simulator/ServeBenchmark.hpp"
#include "study/CapacityStore.hpp"
#include "study/Store.hpp"
#include "study/Sweep.hpp"

namespace attnsim {

class Catalog;

// predict: the memory verdict first (the numbers below stand for a deployment that may not fit), the
// attention calls, the step, its bands and the sources of every operator's figures.
std::string predictionText(const ScenarioPrediction& p, const Catalog& c);
// rank: the verdict, every valid backend in order with its fit, the engines' defaults, the refusals.
std::string rankingText(const Ranking& r);

// serve-sim: the benchmark's figures under the names of `vllm bench serve`.
nlohmann::json serveBenchmarkJson(const ServeBenchmarkRun& b);
std::string serveBenchmarkText(const ServeBenchmarkRun& b);

// capacity memory: the engine's memory split; weights_fit is its verdict.
nlohmann::json memorySplitJson(const CapacityReport& r);
std::string memorySplitText(const CapacityReport& r);

// capacity search: one row per hardware × engine × TP, the highest rate within the SLO and its band,
// why none when none, or the engine's refusal.
nlohmann::json capacitySearchJson(const CapacitySearchRow& row, double target_rate);
std::string capacitySearchHeader(const CapacitySearchSpec& spec);
std::string capacitySearchText(const CapacitySearchRow& row, double target_rate);

// capacity study: one stored configuration.
nlohmann::json capacityConfigJson(const CapacityConfigRow& r);
std::string capacityConfigText(const CapacityConfigRow& r);

// predict and rank over lists (a sweep run from the command line): predict's rows are the engine's own
// choice (or the one forced backend), rank's every valid backend; each with its point's memory verdict.
nlohmann::json sweepAnswerJson(const Store& store, std::int64_t sweep, bool rank, bool forced);
std::string sweepAnswerText(const nlohmann::json& rows, bool rank);

// sweep: what a run stored, and how fast (seconds and rates are timings).
nlohmann::json sweepSummaryJson(const SweepSummary& s, const SweepSpec& spec, const std::string& db, SweepShard shard);
std::string sweepSummaryText(const nlohmann::json& summary);

// report priorities, matrix, whatif or capacity over a store (opened read-only); its JSON is the answer.
struct ReportRequest {
  std::string what, db, out_dir, sweep, study;  // sweep: name or id; study: the capacity study
  WhatIfOptions whatif;
};
StudyReport storeReport(const ReportRequest& r, const Catalog& fallback);

}  // namespace attnsim
