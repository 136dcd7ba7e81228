#include "reports/StepValidation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnsim {

namespace {

std::string comparisonTable(const StepValidation& s) {
  const StepDecoder& d = s.decoder;
  std::string md = fmt::format(
      "\n## Forward step: the synthetic decoder\n\nThe harness's decoder step (`step` rows: {} layers, hidden {}, "
      "{}/{} heads of {}, MLP {}, SDPA decode over {} tokens) against the step model of the catalog model "
      "`{}` with FA2 attention and the device's calibrated costs (its eager host time per node is "
      "fitted on batches 1, 4, 16 and 64 of these rows; see below). Eager: wall time per step issued from "
      "Python; graph: wall time per replay of one captured step.\n\n"
      "| hardware | batch | kernels measured / modelled | eager measured µs | eager predicted µs | error | graph "
      "measured µs | graph predicted µs | error |\n|---|---|---|---|---|---|---|---|---|\n",
      d.layers, d.hidden, d.heads, d.kv_heads, d.head_dim, d.mlp, s.rows.empty() ? 0 : s.rows.front().context, d.model);
  for (const auto& r : s.rows) {
    md += fmt::format("| {} | {} | {} / {} | {:.0f} | {:.0f} | {:+.0f}% | {:.0f} | {:.0f} | {:+.0f}% |\n", r.hardware,
                      r.batch, r.measured_kernels, r.model_nodes, r.eager_measured_us, r.eager_predicted_us,
                      100 * (r.eager_predicted_us / r.eager_measured_us - 1), r.graph_measured_us, r.graph_predicted_us,
                      100 * (r.graph_predicted_us / r.graph_measured_us - 1));
  }
  md += fmt::format("\nMAPE over {} batches: eager {:.1f}%, graph replay {:.1f}%.\n", s.rows.size(), 100 * s.eager_mape,
                    100 * s.graph_mape);
  return md;
}

std::string hostCostNote(const StepValidation& s) {
  if (s.refit_points == 0) return {};
  std::vector<std::string> fitted;
  for (const auto& [hardware, us] : s.host_us_per_node) fitted.push_back(fmt::format("{} {:.1f} µs", hardware, us));
  return fmt::format(
      "\nEager is host-bound at these batches, and PyTorch spends far more host time per kernel of a decoder "
      "layer than per bare launch (the `launch` rows): views, chunks and the dispatch of matmul, SDPA and "
      "RMSNorm cost host time too, and PyTorch runs {} kernels where the DAG has {}. Host time per modelled "
      "node fitted on batches 1, 4, 16, 64 ({}; `calibrate` exports it as `kernel_launch_us`): eager MAPE "
      "{:.1f}% on the other {} points.\n",
      s.rows.front().measured_kernels, s.rows.front().model_nodes, fmt::join(fitted, ", "), 100 * s.eager_refit_mape,
      s.refit_points);
}

}  // namespace

std::string stepValidationMarkdown(const StepValidation& steps) {
  if (!steps.measured) return {};
  return comparisonTable(steps) + hostCostNote(steps);
}

}  // namespace attnsim
