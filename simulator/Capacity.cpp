#include "simulator/Capacity.hpp"

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

MemorySplit memorySplitFor(const Engine& e, const PredictionInput& in, bool cuda_graphs) {
  if (!e.policy.serving) {
    throw UsageError("engine '" + e.policy.engine + "' has no serving: section (memory split and scheduler) yet");
  }
  MemoryInput m;
  m.model = in.model;
  m.hardware = in.hardware;
  m.serving = &*e.policy.serving;
  m.graphs = in.graphs;
  m.env = in.engine_env;
  m.kv_dtype = in.kv_dtype;
  m.dtype = in.model_dtype.value_or(in.model->dtype);
  m.page_size = in.page_size;
  m.tp = in.tp;
  m.attention_dp = in.attention_dp;
  m.cuda_graphs = cuda_graphs;
  return splitMemory(m);
}

CapacityReport capacityOf(const Catalog& c, const Scenario& s) {
  if (s.engine.empty()) throw UsageError("capacity needs --engine");
  CapacityReport r;
  r.hardware = &c.hardware(s.hardware);
  r.model = resolveModel(c, s);
  const Engine& e = c.engine(s.engine);
  ServingOptions options = servingOptions(s);
  options.backend.reset();
  const EngineRun run =
      runEngine(c, *r.hardware, *r.model, e, options, s.backend, Phase::Decode, StageScope::Deployment);
  if (run.selection.refusal) throw EngineRefusal(*run.selection.refusal);
  const PredictionInput in = predictionInputFor(c, *r.hardware, *r.model, e, run, s.cuda_graphs);
  r.engine = e.policy.engine;
  r.backend = run.choice->name;
  r.kv_dtype = toDisplay(run.selection.env.at("kv_dtype"));
  r.tp = in.tp;
  r.split = memorySplitFor(e, in, s.cuda_graphs);
  r.engine_env = in.engine_env;
  return r;
}

std::optional<FitCheck> memoryFit(const Catalog& c, const ScenarioPrediction& p) {
  if (!p.backend) return std::nullopt;
  const Engine& e = c.engine(p.backend->engine);
  if (!e.policy.serving) return std::nullopt;
  return checkFit(memorySplitFor(e, p.input, p.cuda_graphs), p.workload);
}

}  // namespace attnsim
