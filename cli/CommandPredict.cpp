#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/KernelFamily.hpp"
#include "cli/PredictFlags.hpp"
#include "core/Strings.hpp"

namespace attnsim::cli {

namespace {

using nlohmann::json;

json attentionJson(const LayerAttention& a) {
  const AttentionCost& c = a.cost;
  return {{"layer_type", a.layer->name},
          {"layers", a.layers},
          {"kernel", a.kernel->id},
          {"attention_us", c.time_us},
          {"bound", boundName(c.bound)},
          {"flops", c.flops},
          {"flops_tiled", c.flops_tiled},
          {"bytes", c.bytes},
          {"bytes_min", c.bytes_min},
          {"achieved_tflops", c.achievedTflops()},
          {"achieved_gbps", c.achievedGBps()},
          {"splits", c.splits},
          {"ctas", c.ctas},
          {"utilization", c.utilization},
          {"compute_us", c.compute_us},
          {"memory_us", c.memory_us},
          {"fixed_us", c.fixed_us}};
}

json timelineJson(const StepTimeline& t) {
  return {{"step_us", t.step_us},
          {"gpu_busy_us", t.gpu_busy_us},
          {"cpu_us", t.cpu_us},
          {"launches", t.launches},
          {"nodes", t.nodes},
          {"attention_us", t.by_category[0]},
          {"gemm_us", t.by_category[1]},
          {"moe_us", t.by_category[2]},
          {"elementwise_us", t.by_category[3]}};
}

// The parameters each attention call used, and where they came from (calibration, figure, default).
json parametersJson(const Prediction& p, const HardwareProfile& hw, Phase phase) {
  json params = json::array();
  for (const auto& a : p.attention) {
    const KernelModel k = resolveKernel(*a.kernel, hw, phase);
    params.push_back({{"kernel", a.kernel->id},
                      {"compute_efficiency", k.compute_efficiency},
                      {"memory_efficiency", k.memory_efficiency},
                      {"fixed_us", k.fixed_us},
                      {"source", *k.efficiency_source}});
  }
  params.push_back({{"hardware", hw.id}, {"launch_overheads_source", hw.overheads.source}, {"source", hw.source}});
  return params;
}

json predictionJson(const Prediction& p, const HardwareProfile& hw, bool graphs_on, Phase phase) {
  const LayerAttention& first = p.attention.front();
  double flops = 0, bytes = 0;
  for (const auto& a : p.attention) {
    flops += a.cost.flops * a.layers;
    bytes += a.cost.bytes * a.layers;
  }
  const int layers = std::max(1, p.eager.nodes > 0 ? static_cast<int>(p.attention.size()) : 1);
  (void)layers;
  int total_layers = 0;
  for (const auto& a : p.attention) total_layers += a.layers;
  json layer_types = json::array();
  for (const auto& a : p.attention) layer_types.push_back(attentionJson(a));
  return {{"attention_us", p.attention_us},
          {"step_us_eager", p.eager.step_us},
          {"step_us_graph", graphs_on ? json(p.graph.step_us) : json()},
          {"bound", boundName(first.cost.bound)},
          {"flops", flops / total_layers},
          {"bytes", bytes / total_layers},
          {"attention_layers", layer_types},
          {"eager", timelineJson(p.eager)},
          {"graph", graphs_on ? timelineJson(p.graph) : json()},
          {"graph_mode", graphs_on ? graphModeName(p.graph_decision.mode) : "off"},
          {"graph_note", p.graph_decision.why},
          {"padded_batch", p.graph_decision.padded_batch},
          {"capture_sizes", p.graph_decision.capture_sizes},
          {"capture_ms", p.graph_decision.capture_ms},
          {"capture_mib", p.graph_decision.capture_mib},
          {"parameters", parametersJson(p, hw, phase)}};
}

void printPrediction(const std::string& what, const Prediction& p, const Workload& w, bool graphs_on) {
  fmt::print("{}\n{}\n\n", what, describe(w));
  for (const auto& a : p.attention) {
    const AttentionCost& c = a.cost;
    fmt::print("attention [{} ×{} layers, kernel {}]: {:.2f} µs, {}-bound\n", a.layer->name, a.layers, a.kernel->id,
               c.time_us, boundName(c.bound));
    fmt::print(
        "  {:.3g} FLOP ({:.3g} tiled), {:.3g} bytes; {:.1f} TFLOP/s, {:.0f} GB/s achieved; {} KV split(s), "
        "{:.0f} work units, {:.0f}% of the machine busy\n",
        c.flops, c.flops_tiled, c.bytes, c.achievedTflops(), c.achievedGBps(), c.splits, c.ctas, 100 * c.utilization);
  }
  fmt::print("\nstep ({} kernels): eager {:.1f} µs (GPU busy {:.1f}, CPU issue {:.1f}, {} launches)\n", p.eager.nodes,
             p.eager.step_us, p.eager.gpu_busy_us, p.eager.cpu_us, p.eager.launches);
  if (graphs_on) {
    fmt::print("                   graph {:.1f} µs ({}; {})\n", p.graph.step_us, graphModeName(p.graph_decision.mode),
               p.graph_decision.why);
    if (p.graph_decision.capture_sizes > 0) {
      fmt::print("CUDA graphs: {} sizes, batch padded to {}, one-time capture {:.1f} s and {:.0f} MiB\n",
                 p.graph_decision.capture_sizes, p.graph_decision.padded_batch, p.graph_decision.capture_ms / 1e3,
                 p.graph_decision.capture_mib);
    }
  }
  fmt::print("kernel time by kind: attention {:.1f} µs, GEMM {:.1f}, MoE {:.1f}, elementwise {:.1f}\n",
             p.eager.by_category[0], p.eager.by_category[1], p.eager.by_category[2], p.eager.by_category[3]);
}

}  // namespace

Runner addPredictCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<PredictFlags>();
  flags->addTo(app, false);
  return [&global, flags]() {
    const Catalog c = flags->catalog(global);
    const HardwareProfile& hw = c.hardware(flags->hardware);
    const ModelSpec model = flags->resolveModel(c);
    const Workload w = flags->workload();
    const bool graphs_on = flags->cuda_graph == "on";
    const int chosen =
        (flags->backend.empty() ? 0 : 1) + (flags->kernel.empty() ? 0 : 1) + (flags->engines.empty() ? 0 : 1);
    if (chosen != 1) throw UsageError("give exactly one of --backend engine:NAME, --engine E or --kernel NAME");
    PredictionInput in;
    std::string what;
    json selection = nullptr;
    if (!flags->kernel.empty()) {
      in.hardware = &hw;
      in.model = &model;
      in.prefill_kernel = in.decode_kernel = &c.kernel(flags->kernel);
      in.kv_dtype = flags->kv_dtype.value_or("auto");
      in.page_size = flags->page_size.value_or(16);
      in.tp = static_cast<int>(flags->tp.value_or(1));
      what = fmt::format("{} · {} · kernel {} (no engine: every batch captured, full graphs)", hw.id, model.id,
                         flags->kernel);
    } else {
      std::string engine_id = flags->engines;
      std::optional<std::string> backend;
      if (!flags->backend.empty()) {
        const auto colon = flags->backend.find(':');
        if (colon == std::string::npos) throw UsageError("--backend needs engine:NAME, e.g. vllm:FLASH_ATTN");
        engine_id = flags->backend.substr(0, colon);
        backend = flags->backend.substr(colon + 1);
      }
      const Engine& e = c.engine(engine_id);
      const EngineRun run = runEngine(c, hw, model, e, flags->serving(), backend, w.phase);
      if (run.selection.refusal) throw EngineRefusal(*run.selection.refusal);
      in = inputFor(hw, model, e, run, c, graphs_on);
      what = fmt::format("{} · {} · {}:{}{} ({} {})", hw.id, model.id, e.policy.engine, run.choice->name,
                         run.choice->variant.empty() ? "" : " [" + run.choice->variant + "]", stageOf(w.phase),
                         backend ? "backend as given" : "backend the engine picks");
      selection = {{"engine", e.policy.engine},
                   {"backend", run.choice->name},
                   {"variant", run.choice->variant},
                   {"cuda_graph_support", run.choice->caps->cuda_graph},
                   {"notes", run.selection.notes}};
    }
    const Predictor predictor(c, in);
    const Prediction p = predictor.predict(w);
    if (global.json) {
      json out = predictionJson(p, hw, graphs_on, w.phase);
      out["selection"] = selection;
      json groups = json::array();
      for (const auto& g : w.groups) {
        groups.push_back({{"count", g.count}, {"q_len", g.q_len}, {"context", g.context}, {"tree_topk", g.tree_topk}});
      }
      out["scenario"] = {{"hardware", hw.id},       {"model", model.id},  {"phase", phaseName(w.phase)},
                         {"mixed", !w.isUniform()}, {"requests", groups}, {"page_size", in.page_size},
                         {"kv_dtype", in.kv_dtype}, {"tp", in.tp}};
      out["catalog_hash"] = c.contentHash();
      std::cout << out.dump(2) << "\n";
    } else {
      printPrediction(what, p, w, graphs_on);
    }
    return 0;
  };
}

}  // namespace attnsim::cli
