#pragma once
// serve-sim and capacity search as the CLI and the Python module run them: a benchmark of one
// scenario (warm-up requests first, as the serving benchmarks send them), and the rate search over
// many scenarios. The results carry their verdicts (the SLO met or not and why; the search's band),
// which reports/Answers renders.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "simulator/CapacitySearch.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {

struct ServeBenchmark {
  std::vector<ServeRequest> requests;
  ServeSlo slo;
  ServeClient client;
  std::int64_t warmup_requests = 0;  // sent together before the benchmark, outside its metrics
  bool ignore_eos = false;           // as the benchmarks' flag (serve-sim always runs outputs to length)
  bool generated = true;             // lengths drawn from a distribution (false: a trace)
  // Whose benchmark client reads the streams (an engine id: its serving.stream.client, whose costs go
  // into client.loop); empty: client.loop as given.
  std::string client_of;
};

struct ServeBenchmarkRun {
  ServeRun run;
  std::size_t requests = 0, warmup_requests = 0;
  double warmup_s = 0;  // simulated seconds of the warm-up
  double wall_s = 0;    // seconds the simulation took
  std::int64_t max_concurrency = 0;
  bool ignore_eos = false, generated = true;
  bool meets_slo = false;  // p99 TTFT and TPOT within the SLO and nothing rejected (meetsSlo)
  SerialStage client;      // the client's loop the run charged
};

// Warm-up as sglang.bench_serving runs it (benchmark(), @ 0033168f): copies of the first request with
// at most 32 output tokens, sent together before the benchmark starts; they stay out of the metrics.
std::vector<ServeRequest> warmupRequests(const std::vector<ServeRequest>& requests, std::int64_t n);

ServeBenchmarkRun runServeBenchmark(const Catalog& c, const Scenario& s, const ServeBenchmark& b);

// capacity search: each scenario's highest rate within the SLO.
struct CapacitySearchSpec {
  std::vector<Scenario> scenarios;
  ArrivalSpec arrivals;  // lengths, process, count and seed; the rate is searched
  ServeSlo slo;
  double target_rate = 0;  // > 0: the GPUs it needs
};

struct CapacitySearchRow {
  std::string hardware, engine;
  std::int64_t tp = 1;
  bool forced_backend = false, cuda_graphs = true;
  std::optional<CapacityReport> capacity;  // absent when the engine refused the scenario (error says why)
  RateSearch search;
  std::string error;
};

// Searches every scenario in order; `on_row` gets each row as it is found. A refusal or a model that
// does not fit is a row with its error, and the search goes on.
void searchCapacities(const Catalog& c, const CapacitySearchSpec& spec,
                      const std::function<void(const CapacitySearchRow&)>& on_row);

}  // namespace attnsim
