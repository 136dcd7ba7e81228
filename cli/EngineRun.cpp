#include <fmt/format.h>

#include "backends/KernelFamily.hpp"
#include "cli/PredictFlags.hpp"
#include "core/Strings.hpp"

namespace attnsim::cli {

const char* stageOf(Phase p) { return p == Phase::Prefill || p == Phase::Extend ? "prefill" : "decode"; }

// Runs the engine's selection with `backend` asked for. Engines that choose per phase first get
// the backend for both phases (as --attention-backend does), then for the predicted phase only.
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

PredictionInput inputFor(const HardwareProfile& hw, const ModelSpec& m, const Engine& e, const EngineRun& run,
                         const Catalog& c, bool graphs_on) {
  PredictionInput in;
  in.hardware = &hw;
  in.model = &m;
  const BackendCaps& caps = *run.choice->caps;
  in.prefill_kernel = caps.prefill_kernel.empty() ? nullptr : &c.kernel(caps.prefill_kernel);
  in.decode_kernel = caps.decode_kernel.empty() ? nullptr : &c.kernel(caps.decode_kernel);
  in.cuda_graph_level = caps.cuda_graph;
  in.graphs = e.policy.cuda_graph ? &*e.policy.cuda_graph : nullptr;
  in.engine_env = run.selection.env;
  if (!graphs_on) in.engine_env["cuda_graph_disabled"] = true;
  in.kv_dtype = toDisplay(run.selection.env.at("kv_dtype"));
  in.page_size = std::get<std::int64_t>(run.selection.env.at("page_size"));
  in.tp = static_cast<int>(std::get<std::int64_t>(run.selection.env.at("tp")));
  return in;
}

double stepOf(const Prediction& p, bool graphs_on) { return graphs_on ? p.graph.step_us : p.eager.step_us; }

std::string describe(const Workload& w) {
  std::vector<std::string> parts;
  for (const auto& g : w.groups)
    parts.push_back(fmt::format("{} × (q_len {}, context {})", g.count, g.q_len, g.context));
  return fmt::format("{} {}", w.isUniform() ? phaseName(w.phase) : "mixed", join(parts, " + "));
}

}  // namespace attnsim::cli
