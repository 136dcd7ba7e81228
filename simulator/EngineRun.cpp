#include "simulator/EngineRun.hpp"

#include <fmt/format.h>

#include "catalog/Catalog.hpp"
#include "core/Strings.hpp"

namespace attnsim {

const char* stageOf(Phase p) { return p == Phase::Prefill || p == Phase::Extend ? "prefill" : "decode"; }

EngineRun runEngine(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                    const ServingOptions& options, const std::optional<std::string>& backend, Phase phase,
                    StageScope scope) {
  ServingOptions o = options;
  o.backend = backend;
  SelectionInput in{&hw, &m, &e.policy, o, std::nullopt};
  if (scope == StageScope::PhaseOnly) in.only_stage = stageOf(phase);
  EngineRun run{Selector(c).select(in), std::nullopt, backend, stageOf(phase)};
  if (!run.selection.refusal) run.choice = run.stage == "prefill" ? run.selection.prefill : run.selection.decode;
  return run;
}

Verdict EngineRun::verdict() const {
  if (selection.refusal || !choice) return Verdict::Refused;
  return !asked || choice->name == *asked ? Verdict::Runs : Verdict::RunsOther;
}

std::string EngineRun::whyNot() const {
  switch (verdict()) {
    case Verdict::Refused:
      return selection.refusal.value_or("");
    case Verdict::RunsOther:
      return fmt::format("asked for {}, {} runs {} in the {} stage{}{}", *asked, selection.engine, choice->name, stage,
                         selection.notes.empty() ? "" : ": ", join(selection.notes, "; "));
    case Verdict::Runs:
      break;
  }
  return "";
}

PredictionInput predictionInputFor(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                                   const EngineRun& run, bool cuda_graphs) {
  PredictionInput in;
  in.hardware = &hw;
  in.model = &m;
  const BackendCaps& caps = *run.choice->caps;
  in.prefill_kernel = caps.prefill_kernel.empty() ? nullptr : &c.kernel(caps.prefill_kernel);
  in.decode_kernel = caps.decode_kernel.empty() ? nullptr : &c.kernel(caps.decode_kernel);
  if (caps.mla_extend && m.primaryLayer().isMla()) {
    in.mla_extend = &*caps.mla_extend;
    if (!caps.mla_extend->absorbed_kernel.empty())
      in.absorbed_extend_kernel = &c.kernel(caps.mla_extend->absorbed_kernel);
  }
  in.cuda_graph_level = caps.cuda_graph;
  in.graphs = e.policy.cuda_graph ? &*e.policy.cuda_graph : nullptr;
  in.engine_env = run.selection.env;
  in.engine = e.policy.engine;
  if (!cuda_graphs) in.engine_env["cuda_graph_disabled"] = true;
  in.kv_dtype = parseKvCacheDtype(toDisplay(run.selection.env.at("kv_dtype")));
  in.page_size = std::get<std::int64_t>(run.selection.env.at("page_size"));
  in.tp = static_cast<int>(std::get<std::int64_t>(run.selection.env.at("tp")));
  if (e.policy.serving && e.policy.serving->attention_dp) {
    const auto dp = asNumber(e.policy.serving->attention_dp->evaluate(in.engine_env));
    if (dp && *dp > 1) in.attention_dp = static_cast<int>(*dp);
  }
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
