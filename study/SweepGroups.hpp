#pragma once
// The work a sweep shares between points: for one hardware × model × engine × serving options ×
// workload class (a group), the engine's own selection and, for every candidate backend, the
// engine's verdict and a ready Predictor. Selection does not depend on batch or context, so it
// runs once per group; each point then only calls Predictor::predict.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost/MemoryModel.hpp"
#include "cost/Predictor.hpp"
#include "simulator/Scenario.hpp"

namespace attnsim {

class Catalog;

struct SweepCandidate {
  std::string engine, backend, variant;
  std::optional<std::string> refusal;  // the engine's reasons when it refuses this backend
  std::optional<Predictor> predictor;  // set when valid
  bool engine_default = false;         // the backend the engine picks on its own
  // The GPU as the engine splits it when it runs this backend (its page size, workspace, graph
  // memory; simulator/Capacity memorySplitFor, as rank does): each point's batch is checked
  // against its KV pool. Empty when refused or the engine has no serving: model.
  std::optional<MemorySplit> memory{};
};

struct SweepGroup {
  std::int64_t id = 0;
  Scenario scenario;           // its workload stands for the group's class
  std::string workload_class;  // "decode", "prefill", "extend", "verify draft=4 topk=1 eagle"
  std::shared_ptr<const ModelSpec> model;
  // The engine's own selection.
  std::optional<std::string> refusal;
  std::string backend, variant, prefill_backend, decode_backend, kv_dtype, notes;
  std::optional<std::int64_t> page_size;
  std::vector<SweepCandidate> candidates;
  int default_slot = -1;  // index into candidates; -1 when the engine refuses or picks none of them
  // The GPU as the engine splits it for its own deployment (simulator/Capacity capacityOf): every
  // point's batch is checked against its KV pool. Empty when the engine refuses or has no serving: model.
  std::optional<MemorySplit> memory;
};

// Runs the engine's selection for the group's scenario and prepares every candidate (the
// engine's backends named in `backends`), through simulator/EngineRun as rank does.
SweepGroup evaluateGroup(const Catalog& c, const Scenario& s, std::shared_ptr<const ModelSpec> model,
                         const std::vector<std::string>& backends);

// The selection and candidates of evaluateGroup, which catches the engine's flag errors.
void runCandidates(const Catalog& c, SweepGroup& g, const std::vector<std::string>& backends);

// The class of a workload: what selection sees of it (phase, and the draft tree of a verify step).
std::string workloadClass(const Workload& w, const std::optional<std::string>& spec_algorithm);

}  // namespace attnsim
