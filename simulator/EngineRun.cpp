#include "simulator/EngineRun.hpp"

#include "catalog/Catalog.hpp"
#include "core/Strings.hpp"

namespace attnsim {

const char* stageOf(Phase p) { return p == Phase::Prefill || p == Phase::Extend ? "prefill" : "decode"; }

EngineRun runEngine(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                    const ServingOptions& options, const std::optional<std::string>& backend, Phase phase) {
  const bool prefill = std::string(stageOf(phase)) == "prefill";
  auto attempt = [&](bool both_phases) {
    ServingOptions o = options;
    if (backend && (both_phases || !e.policy.per_stage)) {
      o.backend = backend;
    } else if (backend) {
      (prefill ? o.prefill_backend : o.decode_backend) = backend;
    }
    EngineRun run{Selector(c).select({&hw, &m, &e.policy, o}), std::nullopt};
    if (!run.selection.refusal) run.choice = prefill ? run.selection.prefill : run.selection.decode;
    return run;
  };
  EngineRun run = attempt(true);
  if (run.selection.refusal && backend && e.policy.per_stage) {
    EngineRun single = attempt(false);
    if (!single.selection.refusal) return single;
  }
  return run;
}

PredictionInput predictionInputFor(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                                   const EngineRun& run, bool cuda_graphs) {
  PredictionInput in;
  in.hardware = &hw;
  in.model = &m;
  const BackendCaps& caps = *run.choice->caps;
  in.prefill_kernel = caps.prefill_kernel.empty() ? nullptr : &c.kernel(caps.prefill_kernel);
  in.decode_kernel = caps.decode_kernel.empty() ? nullptr : &c.kernel(caps.decode_kernel);
  in.cuda_graph_level = caps.cuda_graph;
  in.graphs = e.policy.cuda_graph ? &*e.policy.cuda_graph : nullptr;
  in.engine_env = run.selection.env;
  if (!cuda_graphs) in.engine_env["cuda_graph_disabled"] = true;
  in.kv_dtype = parseKvCacheDtype(toDisplay(run.selection.env.at("kv_dtype")));
  in.page_size = std::get<std::int64_t>(run.selection.env.at("page_size"));
  in.tp = static_cast<int>(std::get<std::int64_t>(run.selection.env.at("tp")));
  return in;
}

PredictionInput kernelPredictionInput(const HardwareProfile& hw, const ModelSpec& m, const KernelFamily& kernel,
                                      KvCacheDtype kv_dtype, std::int64_t page_size, int tp) {
  PredictionInput in;
  in.hardware = &hw;
  in.model = &m;
  in.prefill_kernel = in.decode_kernel = &kernel;
  in.kv_dtype = kv_dtype;
  in.page_size = page_size;
  in.tp = tp;
  return in;
}

const KernelFamily& kernelFor(const Catalog& c, const EngineRun& run, Phase phase) {
  const BackendCaps& caps = *run.choice->caps;
  const bool prefill = std::string(stageOf(phase)) == "prefill";
  if (prefill && !caps.prefill_kernel.empty()) return c.kernel(caps.prefill_kernel);
  return c.kernel(caps.decode_kernel.empty() ? caps.prefill_kernel : caps.decode_kernel);
}

}  // namespace attnsim
