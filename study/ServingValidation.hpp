#pragma once
// Serving validation (issue 28): published serving benchmarks of vLLM and SGLang
// (measurements/data/serving/published.csv) beside serve-sim's prediction of each run. Each run's
// setup is translated to serve-sim flags in setups.csv, with what the translation approximates and
// what the engine did that serve-sim does not model; the comparison and its error summaries are here,
// the rendering is reports/ServingValidationReport.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/ServeSim.hpp"

namespace attnsim {

// The metrics compared, as the benchmarks name them; the published column and its unit.
struct ServingMetric {
  const char* column;  // published.csv column (and the key in JSON)
  const char* label;
  const char* unit;
};
inline constexpr std::array<ServingMetric, 9> kServingMetrics{{
    {"ttft_mean_ms", "TTFT mean", "ms"},
    {"ttft_median_ms", "TTFT median", "ms"},
    {"tpot_mean_ms", "TPOT mean", "ms"},
    {"tpot_median_ms", "TPOT median", "ms"},
    {"itl_mean_ms", "ITL mean", "ms"},
    {"e2e_mean_ms", "E2E mean", "ms"},
    {"output_throughput", "output throughput", "tok/s"},
    {"request_throughput", "request throughput", "req/s"},
    {"total_throughput", "total throughput", "tok/s"},
}};

// The accuracy targets (issue 28, "Done when"): the largest |error| a run may have per metric.
struct ServingTarget {
  const char* column;
  double max_abs_error;
};
inline constexpr std::array<ServingTarget, 4> kServingTargets{{
    {"ttft_mean_ms", 0.15},
    {"tpot_mean_ms", 0.10},
    {"itl_mean_ms", 0.10},
    {"output_throughput", 0.10},
}};

// One published run: its setup as the source states it and the metrics it reports.
struct PublishedServingRun {
  std::string id, engine, engine_version, model, gpu, dataset, source_url, source_locator, notes;
  int line = 0;
  std::map<std::string, double> metrics;  // column -> value; a metric the source does not state is absent
  [[nodiscard]] bool complete() const;    // notes start with "complete" (published.csv README)
};

// How a published run is expressed in serve-sim: its flags, what they approximate, what is not
// modelled. Empty flags: the run cannot be expressed (not_modelled says why). `readings`: other
// readings of a setup the source leaves ambiguous (setups.csv `other_readings`, optional: readings
// separated by ';', each serve-sim flags with their values that replace the same flags of `flags`,
// e.g. `--hardware h100-pcie`); the report predicts the run under each beside the stated one.
struct ServingSetup {
  std::string id;
  std::vector<std::string> flags;
  std::string approximations, not_modelled;
  int line = 0;
  std::vector<std::vector<std::string>> readings;
};

// `flags` with each `--name value` of `reading` in place of the same flag's value (appended when
// `flags` lacks it). A reading word that is not a `--name value` pair is an InputError.
std::vector<std::string> flagsUnderReading(const std::vector<std::string>& flags,
                                           const std::vector<std::string>& reading);

std::vector<PublishedServingRun> readPublishedServing(const std::string& path);
// Every id must be one of `published` (an unknown or repeated id is an error naming the line).
std::vector<ServingSetup> readServingSetups(const std::string& path, const std::vector<PublishedServingRun>& published);

// serve-sim's answers for one run, in the benchmarks' units (ms, tok/s, req/s).
std::map<std::string, double> servingMetricsOf(const ServeResult& r);

// Signed relative error (predicted - published) / published of one metric; none when either side
// lacks it or the published value is not positive.
std::optional<double> servingError(const PublishedServingRun& run, const std::map<std::string, double>& predicted,
                                   const std::string& column);

// serve-sim's answers under another reading of the setup (ServingSetup::readings).
struct ServingReading {
  std::vector<std::string> reading;  // the flags that replace the stated ones
  std::string command;
  std::map<std::string, double> predicted;
};

struct ServingComparison {
  const PublishedServingRun* run = nullptr;
  const ServingSetup* setup = nullptr;
  std::string command;  // the attnsim command that reproduces the prediction
  std::string backend;  // engine:backend serve-sim ran (its own choice unless the flags force one)
  std::map<std::string, double> predicted;
  std::vector<ServingReading> readings;  // one per ServingSetup::readings, in order
  // Signed relative error (predicted - published) / published, per metric both sides have.
  [[nodiscard]] std::optional<double> error(const std::string& column) const;
  // The targeted metrics (kServingTargets) whose |error| exceeds the target, in that order.
  [[nodiscard]] std::vector<std::string> beyondTargets() const;
};

struct MetricSummary {
  std::string column;
  std::size_t n = 0;
  double mape = 0, median_ape = 0, mean_signed = 0;
  std::size_t within_10 = 0, within_15 = 0;
  std::string worst_id;
  double worst_error = 0;
};

struct ServingGroupSummary {
  std::string group;  // "all", "engine vllm", "backend sglang:fa3", ...
  std::size_t runs = 0;
  std::vector<MetricSummary> metrics;
};

struct ServingValidation {
  std::vector<ServingComparison> compared;
  std::vector<const ServingSetup*> not_run;          // a setup without flags: why not
  std::vector<const PublishedServingRun*> no_setup;  // a complete run no setup translates
  std::vector<ServingGroupSummary> groups;           // all, per engine, per backend, per load regime
};

// Summaries over `compared` (fills groups): all runs, per engine, per attention backend, and per load
// regime (closed loop, all at once, open loop at a rate: each shows different costs).
void summarizeServing(ServingValidation& v);

}  // namespace attnsim
