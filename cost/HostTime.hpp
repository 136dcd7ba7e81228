#pragma once
// What a serving step costs beside its GPU time: the engine's CPU work per step (scheduling, input
// preparation, output processing), a fixed part and parts per request and per token, and whether it
// overlaps the GPU. Overlapped (vLLM --async-scheduling, SGLang's overlap scheduler) the CPU prepares
// step n+1 while the GPU runs step n, so a step takes the longer of the two; otherwise the two add.
// The figures are engine data (backends/<engine>/engine.yaml serving.host; docs/CAPACITY.md).
#include "core/Value.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

struct ServingHost;

struct HostStepCost {
  double fixed_us = 0, per_request_us = 0, per_token_us = 0;
  bool overlap = false;
  // The CPU work of a step over this batch (every group's requests and their tokens).
  [[nodiscard]] double hostUs(const Workload& w) const;
  // A step run back to back with the previous one.
  [[nodiscard]] double stepUs(double gpu_us, double host_us) const {
    return overlap ? (gpu_us > host_us ? gpu_us : host_us) : gpu_us + host_us;
  }
};

// The engine's terms that apply to the scenario (`when` true in `env`: its variables and the engine's
// options) summed; `overlap` as the engine's expression evaluated for the scenario.
HostStepCost hostStepCost(const ServingHost& host, bool overlap, const Env& env);

}  // namespace attnsim
