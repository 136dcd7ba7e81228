// predict and rank as text (their JSON: reports/Json.cpp).
#include <algorithm>
#include <map>
#include <vector>

#include "core/Strings.hpp"
#include "cost/OperatorSources.hpp"
#include "reports/Answers.hpp"
#include "reports/Json.hpp"
#include "reports/TextOut.hpp"

namespace attnsim {

namespace {

void appendAttentionCalls(std::string& out, const Prediction& p) {
  for (const auto& a : p.attention) {
    const AttentionCost& c = a.cost;
    appendf(out, "attention [{} ×{} layers, kernel {}]: {:.2f} µs, {}-bound\n", a.layer->name, a.layers, a.kernel->id,
            c.time_us, boundName(c.bound));
    appendf(out,
            "  {:.3g} FLOP ({:.3g} tiled), {:.3g} bytes; {:.1f} TFLOP/s, {:.0f} GB/s achieved; {} KV split(s), "
            "{:.0f} work units, {:.0f}% of the machine busy\n",
            c.flops, c.flops_tiled, c.bytes, c.achievedTflops(), c.achievedGBps(), c.splits, c.ctas,
            100 * c.utilization);
  }
}

// Provenance and bands (docs/COST_MODEL.md "Uncertainty").
void appendPredictionBands(std::string& out, const ScenarioPrediction& sp) {
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
  appendf(out, "uncertainty: attention figures are a {} (±{:.0f}%, {}); attention {:.2f} µs in [{:.2f}, {:.2f}]\n",
          provenanceLabel(u.provenance), 100 * u.attention_band, basis, p.attention_us,
          bandLow(p.attention_us, u.attention_band), bandHigh(p.attention_us, u.attention_band));
  appendf(out, "             rest of the step ±{:.0f}%; step {:.1f} µs ±{:.0f}% in [{:.1f}, {:.1f}]\n",
          100 * u.non_attention_band, step, 100 * band, bandLow(step, band), bandHigh(step, band));
}

void appendStep(std::string& out, const ScenarioPrediction& sp) {
  const Prediction& p = sp.prediction;
  appendf(out, "\nstep ({} kernels): eager {:.1f} µs (GPU busy {:.1f}, CPU issue {:.1f}, {} launches)\n", p.eager.nodes,
          p.eager.step_us, p.eager.gpu_busy_us, p.eager.cpu_us, p.eager.launches);
  if (sp.cuda_graphs) {
    const GraphDecision& g = p.graph_decision;
    appendf(out, "                   graph {:.1f} µs ({}; {})\n", p.graph.step_us, graphModeName(g.mode), g.why);
    if (g.capture_sizes > 0) {
      appendf(out, "CUDA graphs: {} sizes, batch padded to {}, one-time capture {:.1f} s and {:.0f} MiB\n",
              g.capture_sizes, g.padded_batch, g.capture_ms / 1e3, g.capture_mib);
    }
  }
  const int dp = sp.input.attention_dp;
  if (dp > 1) {
    appendf(out,
            "DP attention: {} attention replicas of TP {}, each running attention on its share of the batch;\n"
            "  gather before and scatter after every MLP: {:.1f} µs of the eager step\n",
            dp, sp.input.tp / dp, p.tp_comm_us);
  } else if (p.tp_comm_us > 0) {
    appendf(out, "TP all-reduces: {:.1f} µs of the eager step (2 per layer)\n", p.tp_comm_us);
  }
  appendf(out, "kernel time by kind: attention {:.1f} µs, GEMM {:.1f}, MoE {:.1f}, elementwise {:.1f}\n",
          p.eager.by_category[0], p.eager.by_category[1], p.eager.by_category[2], p.eager.by_category[3]);
}

// The rank column: the tie group's place, marked ≈ when the group holds more than one backend.
std::string rankColumn(const Ranking& r, std::size_t i) {
  std::size_t first = i;
  while (first > 0 && r.ranked[first - 1].tie_group == r.ranked[i].tie_group) --first;
  return fmt::format("{}{}", r.ranked[i].tied ? "≈" : "", first + 1);
}

// The fits column: yes, or no and why (the weights leave no pool, or the batch's KV exceeds it).
std::string fitsColumn(const std::optional<FitCheck>& fit) {
  if (!fit) return "-";
  if (fit->fits) return "yes";
  return fit->reason == "weights" ? "no (W)" : "no (KV)";
}

void appendRankedRows(std::string& out, const Ranking& r) {
  appendf(out, "{:>4}  {:<34} {:>12} {:>6} {:>10} {:>12}  {:<8} {:<7} {}\n", "rank", "backend", "step µs", "±",
          "vs next", "attention µs", "bound", "fits", "figures");
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const RankedBackend& b = r.ranked[i];
    const std::string label = fmt::format("{}:{}{}", b.engine, b.backend,
                                          b.variant.empty() ? std::string() : fmt::format(" [{}]", b.variant));
    appendf(out, "{:>4}  {:<34} {:>12.1f} {:>5.0f}% {:>9.1f}% {:>12.2f}  {:<8} {:<7} {}{}\n", rankColumn(r, i), label,
            b.step_us, 100 * b.band, 100 * b.margin_to_next, b.attention_us, b.bound, fitsColumn(b.memory),
            provenanceLabel(b.provenance), b.engine_default ? "  ← engine default" : "");
  }
  if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const RankedBackend& b) { return b.tied; })) {
    out.append(
        "≈: tied within uncertainty with its group's fastest: the step times differ by less than the two attention "
        "calls' bands (the rest of the step is the same work for every backend); the order inside a group is not a "
        "prediction\n");
  }
  if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& b) { return b.memory && !b.memory->fits; })) {
    out.append(
        "fits: whether this backend's deployment holds the batch (the engine sizes its KV pool with the backend's "
        "page size, workspace and graphs); no (W): the weights leave no KV pool, no (KV): the batch's KV exceeds "
        "it\n");
  }
}

void appendDefaultsAndRefusals(std::string& out, const Ranking& r) {
  for (const auto& d : r.defaults) {
    if (d.backend == d.best_backend) {
      appendf(out, "\n{}: default {} is its fastest valid backend", d.engine, d.backend);
    } else {
      appendf(out, "\n{}: default {} is {:.1f}% ({:.1f} µs) slower than its fastest valid backend {}{}", d.engine,
              d.backend, 100 * d.regret, d.regret_us, d.best_backend,
              d.within_band ? ", within the uncertainty bands (a tie, not a wrong choice)"
                            : ", outside the uncertainty bands");
    }
  }
  appendf(out, "\n\n{} backend(s) not valid here{}\n", r.invalid.size(), r.invalid.empty() ? "" : ":");
  std::size_t width = 0;
  for (const auto& entry : r.invalid) width = std::max(width, entry.first.size());
  for (const auto& [backend, why] : r.invalid) {
    std::string line = why;
    std::replace(line.begin(), line.end(), '\n', ' ');
    appendf(out, "  {:<{}}  {}\n", backend, width, line);
  }
  std::map<std::string, std::vector<std::string>> runs_as;  // what runs -> the names asked for
  for (const auto& [name, runs] : r.resolved) runs_as[runs.first].push_back(name);
  for (const auto& [target, names] : runs_as) appendf(out, "{} runs when asked for {}\n", target, join(names, ", "));
}

}  // namespace

std::string predictionText(const ScenarioPrediction& sp, const Catalog& c) {
  std::string out = memoryLine(sp.memory);  // first: the numbers below stand for a deployment that may not fit
  appendf(out, "\n{}\n{}\n\n", sp.label, describe(sp.workload));
  appendAttentionCalls(out, sp.prediction);
  if (!sp.prediction.mixed_note.empty()) appendf(out, "{}\n", sp.prediction.mixed_note);
  appendStep(out, sp);
  appendPredictionBands(out, sp);
  for (const auto& o : stepOperatorSources(c, *sp.hardware, *sp.model, sp.input.engine, sp.input.tp)) {
    appendf(out, "             {}: {} (±{:.0f}%, {}): {}\n", o.what, provenanceLabel(o.provenance), 100 * o.band.band,
            bandBasisName(o.band.basis), o.source);
  }
  return out;
}

std::string rankingText(const Ranking& r) {
  const bool modelled = std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& b) { return b.memory; });
  std::string out = memoryLine(modelled ? std::optional<FitCheck>(r.memory()) : std::nullopt);
  appendf(out, "\n{} · {} · {} · step time with CUDA graphs {}\n\n", r.hardware->id, r.model->id, describe(r.workload),
          r.cuda_graphs ? "on" : "off");
  appendRankedRows(out, r);
  appendDefaultsAndRefusals(out, r);
  return out;
}

}  // namespace attnsim
