#pragma once
// Flags shared by serve-sim and capacity search: generated arrivals and their lengths.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/Catalog.hpp"
#include "cli/Commands.hpp"
#include "simulator/ServeBenchmark.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim::cli {

// serve-sim's flags: the scenario, the requests (generated or a trace), the client and the SLO.
struct ServeFlags {
  ScenarioFlags scenario;
  std::string trace, write_trace, db;
  ArrivalSpec arrivals;
  ServeClient client;
  std::int64_t warmup_requests = 0;
  bool ignore_eos = false;
  double slo_ttft_ms = 2000, slo_tpot_ms = 50;
  std::vector<std::string> goodput;  // vllm bench serve --goodput KEY:MS (ttft, tpot, e2el)
  // Speculative decoding as the engines take it: SGLang's --speculative-* flags or vLLM's
  // --speculative-config JSON, and the acceptance serve-sim assumes (--spec-accept-length).
  std::optional<std::string> speculative_algorithm, speculative_config;
  std::optional<std::int64_t> speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens;
  std::optional<double> spec_accept_length;
};

// Registers every serve-sim flag on `app`. Call finishServeFlags after parsing.
void addServeFlags(CLI::App& app, ServeFlags& f);
// The defaults that depend on other flags: the random dataset follows the engine's own benchmark
// unless --backend-bench names one.
void finishServeFlags(const CLI::App& app, ServeFlags& f);
ServeSlo sloOf(const ServeFlags& f);
// The scenario of the flags, speculative decoding included (a UsageError for a malformed
// --speculative-config or both engines' spellings at once).
Scenario serveScenarioOf(const ServeFlags& f);

// One serve-sim run as the flags describe it: the requests and the benchmark (a warm-up outside the
// metrics, the run, its SLO verdict: simulator/ServeBenchmark).
struct ServeOutcome {
  ServeBenchmarkRun bench;
  std::vector<ServeRequest> requests;
};
ServeOutcome simulateServe(const Catalog& c, const ServeFlags& f);

// report serving: every published run of `published_dir` (published.csv, setups.csv) through
// serve-sim, the comparison written to `out_dir` (reports/ServingValidationReport).
int runServingReport(const GlobalOptions& global, const std::string& published_dir, const std::string& out_dir);

// --rate, --requests (--num-prompts), --arrival, --cv, --prompt-len (--random-input-len), --output-len
// (--random-output-len), --lengths, --dataset-name random, --random-range-ratio, --random-prefix-len,
// --backend-bench, --seed. `rate_inf`: --rate also takes inf (every request at t = 0).
void addArrivalFlags(CLI::App& app, ArrivalSpec& a, bool rate_inf = false);

}  // namespace attnsim::cli
