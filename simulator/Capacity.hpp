#pragma once
// Capacity of one scenario on one GPU (per TP rank): the engine's memory split and whether the
// scenario's batch fits its KV pool. predict, rank, serve-sim and the capacity commands share it.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/MemoryModel.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim {

struct CapacityReport {
  std::shared_ptr<const ModelSpec> model;
  const HardwareProfile* hardware = nullptr;
  std::string engine, backend, kv_dtype;
  int tp = 1;
  MemorySplit split;
  Env engine_env;  // the scenario's variables and the engine's options after its rules
};

// The memory split of a prediction input the engine resolved (its variables, KV dtype, page size).
MemorySplit memorySplitFor(const Engine& e, const PredictionInput& in, bool cuda_graphs);
// The engine's memory split for the scenario (scenario.engine is required; its decode backend
// fixes the page size and KV dtype). Throws EngineRefusal when the engine refuses the scenario,
// UsageError when the engine has no serving data.
CapacityReport capacityOf(const Catalog& c, const Scenario& s);
// The fit of a prediction's batch in its engine's KV pool; empty for a kernel outside any engine.
std::optional<FitCheck> memoryFit(const Catalog& c, const ScenarioPrediction& p);

}  // namespace attnsim
