#pragma once
// serve-sim for a scenario: the engine's scheduler limits and KV pool (simulator/Capacity), and a
// step timer that asks the step model (cost/Predictor) for each batch, memoised by a quantised
// batch key (counts and lengths in buckets of 2^(1/16), about 4%, exact up to 16).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cost/HostTime.hpp"
#include "cost/Predictor.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/Capacity.hpp"
#include "simulator/ServeSim.hpp"

namespace attnsim {

class BatchTimer {
 public:
  BatchTimer(const Catalog& c, const PredictionInput& prefill, const PredictionInput& decode, bool cuda_graphs,
             HostStepCost host = {});
  StepTime operator()(const Workload& w);
  [[nodiscard]] std::size_t evaluations() const { return memo_.size(); }
  // Every step at an end of its step-model band: +1 the slow end (t x (1 + band)), -1 the fast end
  // (t / (1 + band)), 0 the prediction itself (docs/COST_MODEL.md "Uncertainty").
  void setBandEnd(int end) { band_end_ = end; }
  // Speculative decoding: verify steps run on the engine's verify stage (`verify`), and every step also
  // runs the draft model (simulator/ServeSpec.hpp) once over the step's tokens and num_steps - 1 times
  // over topk tokens per verifying request (`draft_prefill`, `draft_decode`: the target's kernels and
  // settings with the draft model, which the caller keeps alive).
  void setSpeculative(const Catalog& c, const PredictionInput& verify, const PredictionInput& draft_prefill,
                      const PredictionInput& draft_decode, const SpecDecodeConfig& spec);
  // The bucket of a count or length, and the value that stands for it.
  static std::uint64_t bucket(std::int64_t x);
  static std::int64_t representative(std::uint64_t b);

 private:
  [[nodiscard]] double drafterUs(const Workload& rep);
  std::unique_ptr<Predictor> prefill_, decode_;
  std::unique_ptr<Predictor> verify_, draft_prefill_, draft_decode_;
  std::optional<SpecDecodeConfig> spec_;
  bool cuda_graphs_;
  HostStepCost host_;  // the engine's CPU work per step, added to (or overlapping) the GPU's
  int band_end_ = 0;
  struct Timed {
    StepTime time;
    double band = 0;  // of the step time, relative
  };
  // A batch's key, exact: its phase, then per group list (the batch's, the busiest replica's) the
  // number of groups and each group's count, q_len and context buckets (each under 2^9).
  using BatchKey = std::array<std::uint16_t, 16>;
  struct BatchKeyHash {
    std::size_t operator()(const BatchKey& k) const noexcept;
  };
  std::unordered_map<BatchKey, Timed, BatchKeyHash> memo_;
};

// The serial stage of the terms that apply in `env` (their `when`), summed.
SerialStage serialStageOf(const std::vector<StreamCostTerm>& terms, const Env& env);
// The front end's micro-batch window: the longest of the terms that apply (none: no wait).
BatchWindow batchWindowOf(const std::vector<StreamCostTerm>& terms, const Env& env);
// The benchmark client of an engine (its serving.stream.client: `vllm` is `vllm bench serve`); none: free.
SerialStage benchmarkClientOf(const Catalog& c, const std::string& engine);

struct ServeSetup {
  CapacityReport capacity;
  SchedulerConfig scheduler;
  HostStepCost host;  // the engine's per-step CPU work (serving.host; none when absent)
};
ServeSetup serveSetup(const Catalog& c, const Scenario& s);

// One scenario ready to serve many request sets: the setup and the step timer (its memo) are kept.
class ServeSession {
 public:
  ServeSession(const Catalog& c, const Scenario& s);
  [[nodiscard]] const ServeSetup& setup() const { return setup_; }
  ServeResult run(const std::vector<ServeRequest>& requests, const ServeSlo& slo, const ServeClient& client = {});
  // The time of one step over this batch as the runs take it (the step model's GPU time and the
  // engine's CPU work, memoised).
  StepTime stepTime(const Workload& w) { return (*timer_)(w); }
  // Later runs time every step at this end of its band (BatchTimer::setBandEnd).
  void setBandEnd(int end) { timer_->setBandEnd(end); }

 private:
  ServeSetup setup_;
  std::unique_ptr<ModelSpec> draft_model_;  // speculative decoding's drafter (kept for the timer)
  std::unique_ptr<BatchTimer> timer_;
};

struct ServeRun {
  ServeSetup setup;
  ServeResult result;
};
// Simulates `requests` served by the scenario's engine (scenario.engine, optional backend, TP).
ServeRun serveScenario(const Catalog& c, const Scenario& s, const std::vector<ServeRequest>& requests,
                       const ServeSlo& slo, const ServeClient& client = {});

}  // namespace attnsim
