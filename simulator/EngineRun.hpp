#pragma once
// A backend as an engine runs it, and the bridges to the cost model's input: from an engine's
// selection, or from a kernel family alone.
#include <optional>
#include <string>

#include "cost/Predictor.hpp"
#include "selection/Selector.hpp"

namespace attnsim {

struct EngineRun {
  Selection selection;
  std::optional<BackendChoice> choice;  // the phase's backend; empty when the engine refuses
};

// The engine stage that runs a phase: prefill (prefill, extend) or decode (decode, verify).
const char* stageOf(Phase p);

// Runs the engine's selection with `backend` asked for (nullopt: the engine's own choice).
// Engines that choose per stage first get the backend for both stages (as --attention-backend
// does), then for the phase's stage only.
EngineRun runEngine(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                    const ServingOptions& options, const std::optional<std::string>& backend, Phase phase);

// The prediction input for the backend an engine run chose: its kernels, its CUDA-graph support,
// the engine's capture rules and the variables after the engine's rules.
PredictionInput predictionInputFor(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                                   const EngineRun& run, bool cuda_graphs);

// The prediction input for a kernel family outside any engine: one kernel for every phase, every
// batch captured, full CUDA graphs.
PredictionInput kernelPredictionInput(const HardwareProfile& hw, const ModelSpec& m, const KernelFamily& kernel,
                                      KvCacheDtype kv_dtype, std::int64_t page_size, int tp);

// The kernel family a run's backend uses for `phase`.
const KernelFamily& kernelFor(const Catalog& c, const EngineRun& run, Phase phase);

}  // namespace attnsim
