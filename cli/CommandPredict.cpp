#include <fmt/format.h>

#include <iostream>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "cost/OperatorSources.hpp"
#include "reports/Json.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim::cli {

namespace {

void printAttention(const Prediction& p) {
  for (const auto& a : p.attention) {
    const AttentionCost& c = a.cost;
    fmt::print("attention [{} ×{} layers, kernel {}]: {:.2f} µs, {}-bound\n", a.layer->name, a.layers, a.kernel->id,
               c.time_us, boundName(c.bound));
    fmt::print(
        "  {:.3g} FLOP ({:.3g} tiled), {:.3g} bytes; {:.1f} TFLOP/s, {:.0f} GB/s achieved; {} KV split(s), "
        "{:.0f} work units, {:.0f}% of the machine busy\n",
        c.flops, c.flops_tiled, c.bytes, c.achievedTflops(), c.achievedGBps(), c.splits, c.ctas, 100 * c.utilization);
  }
}

// Provenance and bands (docs/COST_MODEL.md "Uncertainty").
void printUncertainty(const ScenarioPrediction& sp) {
  const Prediction& p = sp.prediction;
  const PredictionUncertainty& u = p.uncertainty;
  const double step = sp.stepUs();
  const double band = sp.cuda_graphs ? u.graph_band : u.eager_band;
  const char* basis = u.basis == BandBasis::HeldOut ? "held-out p90 error of the fit"
                      : u.basis == BandBasis::Fit
                          ? "the fit's MAPE scaled to a p90 and to new points (no held-out figures)"
                      : u.basis == BandBasis::ThinFit
                          ? "a thin fit: fewer than 3 points per fitted parameter, so at least the published band"
                          : "documented band of its provenance";
  fmt::print("uncertainty: attention figures are a {} (±{:.0f}%, {}); attention {:.2f} µs in [{:.2f}, {:.2f}]\n",
             provenanceLabel(u.provenance), 100 * u.attention_band, basis, p.attention_us,
             bandLow(p.attention_us, u.attention_band), bandHigh(p.attention_us, u.attention_band));
  fmt::print("             rest of the step ±{:.0f}%; step {:.1f} µs ±{:.0f}% in [{:.1f}, {:.1f}]\n",
             100 * u.non_attention_band, step, 100 * band, bandLow(step, band), bandHigh(step, band));
}

void printOperatorSources(const ScenarioPrediction& sp, const Catalog& c) {
  for (const auto& o : stepOperatorSources(c, *sp.hardware, *sp.model, sp.input.engine, sp.input.tp)) {
    fmt::print("             {}: {} (±{:.0f}%, {}): {}\n", o.what, provenanceLabel(o.provenance), 100 * o.band.band,
               bandBasisName(o.band.basis), o.source);
  }
}

void printPrediction(const ScenarioPrediction& sp, const Catalog& c) {
  const Prediction& p = sp.prediction;
  fmt::print("{}\n{}\n\n", sp.label, describe(sp.workload));
  printAttention(p);
  if (!p.mixed_note.empty()) fmt::print("{}\n", p.mixed_note);
  fmt::print("\nstep ({} kernels): eager {:.1f} µs (GPU busy {:.1f}, CPU issue {:.1f}, {} launches)\n", p.eager.nodes,
             p.eager.step_us, p.eager.gpu_busy_us, p.eager.cpu_us, p.eager.launches);
  if (sp.cuda_graphs) {
    const GraphDecision& g = p.graph_decision;
    fmt::print("                   graph {:.1f} µs ({}; {})\n", p.graph.step_us, graphModeName(g.mode), g.why);
    if (g.capture_sizes > 0) {
      fmt::print("CUDA graphs: {} sizes, batch padded to {}, one-time capture {:.1f} s and {:.0f} MiB\n",
                 g.capture_sizes, g.padded_batch, g.capture_ms / 1e3, g.capture_mib);
    }
  }
  const int dp = sp.input.attention_dp;
  if (dp > 1) {
    fmt::print(
        "DP attention: {} attention replicas of TP {}, each running attention on its share of the batch;\n"
        "  gather before and scatter after every MLP: {:.1f} µs of the eager step\n",
        dp, sp.input.tp / dp, p.tp_comm_us);
  } else if (p.tp_comm_us > 0) {
    fmt::print("TP all-reduces: {:.1f} µs of the eager step (2 per layer)\n", p.tp_comm_us);
  }
  fmt::print("kernel time by kind: attention {:.1f} µs, GEMM {:.1f}, MoE {:.1f}, elementwise {:.1f}\n",
             p.eager.by_category[0], p.eager.by_category[1], p.eager.by_category[2], p.eager.by_category[3]);
  printUncertainty(sp);
  printOperatorSources(sp, c);
}

}  // namespace

Runner addPredictCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<ScenarioFlags>();
  app.add_option("--hardware", flags->hardware, "hardware profile id")->required();
  app.add_option("--model", flags->models, "model id (or give --num-heads etc. for a model outside the catalog)");
  app.add_option("--backend", flags->backend, "engine:NAME (validated as the engine would), or NAME with --engine");
  app.add_option("--engine", flags->engines, "predict the engine's own auto-selected backend");
  app.add_option("--kernel", flags->kernel, "a kernel family directly, outside any engine (what-if)");
  auto op = std::make_shared<OperatorFlags>();
  app.add_option("--gemm", op->gemm, "one dense GEMM of M,N,K instead of a step (with --gemm-dtype)");
  app.add_option("--gemm-dtype", op->gemm_dtype, "the --gemm call's dtype: bf16, fp8, fp8_block, nvfp4");
  app.add_option("--allreduce", op->allreduce_bytes,
                 "one TP all-reduce of this many bytes over --tp GPUs instead of a step")
      ->check(CLI::PositiveNumber);
  app.add_option("--moe", op->moe_tokens,
                 "one MoE layer call of this many tokens through --model's routed experts instead of a step "
                 "(with --tp, --ep, --engine, --weight-dtype)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ep", op->ep, "the --moe call's expert parallelism (experts split over this many GPUs)")
      ->check(CLI::PositiveNumber);
  flags->addWorkload(app);
  flags->addServing(app);
  flags->addStudy(app);
  flags->addGeometry(app);
  return [&global, flags, op]() {
    if (op->ep > 1 && op->moe_tokens <= 0) throw UsageError("--ep applies to --moe only");
    if (op->given() > 0) {
      // One operator: the flags of a step do not apply to it (an all-reduce takes --engine and --tp; an
      // MoE call --model, --engine, --tp, --ep and --weight-dtype).
      for (const auto& [given, name] : {std::pair{flags->backend, "--backend"}, std::pair{flags->kernel, "--kernel"},
                                        std::pair{flags->context, "--context"}}) {
        if (!given.empty()) throw UsageError(std::string(name) + " does not apply to --gemm, --allreduce or --moe");
      }
      if (!flags->models.empty() && op->moe_tokens <= 0)
        throw UsageError("--model does not apply to --gemm or --allreduce");
      if (!op->gemm.empty() && !flags->engines.empty()) throw UsageError("--engine does not apply to --gemm");
      predictOperator(flags->catalog(global), *flags, *op, global.json);
      return 0;
    }
    if (const int listed = runListStudy(*flags, global, false); listed >= 0) return listed;
    const Catalog c = flags->catalog(global);
    const ScenarioPrediction p = predictScenario(c, flags->scenario(flags->hardware, flags->models, flags->engines));
    if (global.json) {
      nlohmann::json j = predictionJson(p, c);  // its "memory" says whether the deployment fits
      if (p.prediction.tp_comm_us > 0) j["tp_comm_us"] = p.prediction.tp_comm_us;
      if (p.input.attention_dp > 1) j["attention_dp"] = p.input.attention_dp;
      std::cout << j.dump(2) << "\n";
    } else {
      fmt::print("{}\n", memoryLine(p.memory));  // first: the numbers below stand for a deployment that may not fit
      printPrediction(p, c);
    }
    return 0;
  };
}

}  // namespace attnsim::cli
