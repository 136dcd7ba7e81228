#include "reports/StepValidation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <memory>
#include <regex>

#include "core/Error.hpp"
#include "hardware/HardwareProfile.hpp"
#include "catalog/Catalog.hpp"
#include "cost/Predictor.hpp"

namespace attnsim {

namespace {

constexpr const char* kModel = "harness-decoder";

// "synthetic decoder: 8 layers, hidden 2048, heads 16/4, d 128, mlp 5632, context 2048; 104 kernels per step"
struct StepNote {
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp = 0, context = 0, kernels = 0;
};

StepNote parseNote(const MeasurementRow& r) {
  static const std::regex geometry(
      R"(synthetic decoder: (\d+) layers, hidden (\d+), heads (\d+)/(\d+), d (\d+), mlp (\d+), context (\d+))");
  static const std::regex kernels(R"((\d+) kernels per step)");
  std::smatch m;
  if (!std::regex_search(r.note, m, geometry)) {
    throw InputError(fmt::format("{}:{}: a step row whose note does not describe the synthetic decoder: '{}'", r.source,
                                 r.line, r.note));
  }
  StepNote n{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]),
             std::stoi(m[5]), std::stoi(m[6]), std::stoi(m[7]), 0};
  if (std::regex_search(r.note, m, kernels)) n.kernels = std::stoi(m[1]);
  return n;
}

void checkModel(const MeasurementRow& r, const StepNote& n, const ModelSpec& model) {
  const auto& layer = model.primaryLayer();
  if (n.layers != model.num_layers || n.hidden != model.hidden_size || n.mlp != model.intermediate_size ||
      n.heads != layer.num_heads || n.kv_heads != layer.num_kv_heads || n.head_dim != layer.head_dim) {
    throw InputError(
        fmt::format("{}:{}: the step row's decoder ({} layers, hidden {}, heads {}/{}, d {}, mlp {}) is "
                    "not the catalog model '{}'",
                    r.source, r.line, n.layers, n.hidden, n.heads, n.kv_heads, n.head_dim, n.mlp, kModel));
  }
}

double mape(const std::vector<StepComparison>& rows, bool graph) {
  double sum = 0;
  for (const auto& r : rows) {
    const double m = graph ? r.graph_measured_us : r.eager_measured_us;
    const double p = graph ? r.graph_predicted_us : r.eager_predicted_us;
    sum += std::fabs(p - m) / m;
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

}  // namespace

StepValidation stepValidation(const Catalog& catalog, const std::vector<MeasurementRow>& step_rows) {
  StepValidation out;
  if (step_rows.empty()) return out;
  const ModelSpec& model = catalog.model(kModel);
  // (hardware, batch) -> the eager and graph rows, and what the eager row's note says.
  struct Pair {
    const MeasurementRow* eager = nullptr;
    const MeasurementRow* graph = nullptr;
    StepNote note;
  };
  std::map<std::pair<std::string, std::int64_t>, Pair> pairs;
  for (const auto& r : step_rows) {
    const StepNote note = parseNote(r);
    checkModel(r, note, model);
    auto& p = pairs[{r.hardware, r.batch}];
    if (r.impl == "cuda_graph") {
      p.graph = &r;
    } else {
      p.eager = &r;
      p.note = note;
    }
  }
  const KernelFamily& sdpa_flash = catalog.kernel("fa2");  // the decoder's SDPA decode runs FA2
  std::map<std::string, std::unique_ptr<Predictor>> predictors;
  for (const auto& [key, rows] : pairs) {
    if (!rows.eager || !rows.graph) continue;
    const auto& [hardware, batch] = key;
    auto& predictor = predictors[hardware];
    if (!predictor) {
      PredictionInput in;
      in.hardware = &catalog.hardware(hardware);
      in.model = &model;
      in.prefill_kernel = &sdpa_flash;
      in.decode_kernel = &sdpa_flash;
      in.page_size = 1;  // contiguous K/V
      predictor = std::make_unique<Predictor>(catalog, in);
    }
    const StepNote& note = rows.note;
    const Prediction p = predictor->predict(Workload::uniform(Phase::Decode, batch, 1, note.context + 1));
    out.rows.push_back({hardware, batch, note.context, note.kernels, p.eager.nodes, rows.eager->median_us,
                        p.eager.step_us, rows.graph->median_us, p.graph.step_us});
  }
  // PyTorch's eager host time per kernel of a real layer is well above a bare launch (views,
  // chunks and dispatch cost host time too): refit it per modelled node on batches 1, 4, 16 and 64
  // (where eager is host-bound) and score the other batches with it.
  std::map<std::string, std::pair<double, int>> host_fit;  // hardware -> (Σ µs per node, count)
  auto is_train = [](std::int64_t b) { return b == 1 || b == 4 || b == 16 || b == 64; };
  for (const auto& r : out.rows) {
    if (is_train(r.batch) && r.eager_measured_us > 1.5 * r.graph_measured_us && r.model_nodes > 0) {
      host_fit[r.hardware].first += r.eager_measured_us / r.model_nodes;
      host_fit[r.hardware].second += 1;
    }
  }
  std::vector<std::pair<double, double>> refit_test;  // (measured, predicted) on the other batches
  std::vector<std::string> fitted;                    // "hardware µs per node"
  for (const auto& [hardware, fit] : host_fit) {
    HardwareProfile hw = catalog.hardware(hardware);
    hw.overheads.kernel_launch_us = fit.first / fit.second;
    out.host_us_per_node[hardware] = hw.overheads.kernel_launch_us;
    PredictionInput in = predictors.at(hardware)->input();
    in.hardware = &hw;
    const Predictor refit(catalog, in);
    for (const auto& r : out.rows) {
      if (r.hardware != hardware || is_train(r.batch)) continue;
      const auto p = refit.predict(Workload::uniform(Phase::Decode, r.batch, 1, r.context + 1));
      refit_test.emplace_back(r.eager_measured_us, p.eager.step_us);
    }
    fitted.push_back(fmt::format("{} {:.1f} µs", hardware, hw.overheads.kernel_launch_us));
  }
  const auto& layer = model.primaryLayer();
  std::string md = fmt::format(
      "\n## Forward step: the synthetic decoder\n\nThe harness's decoder step (`step` rows: {} layers, hidden {}, "
      "{}/{} heads of {}, MLP {}, SDPA decode over {} tokens) against the step model of the catalog model "
      "`{}` with FA2 attention and the device's calibrated costs (its eager host time per node is "
      "fitted on batches 1, 4, 16 and 64 of these rows; see below). Eager: wall time per step issued from "
      "Python; graph: wall time per replay of one captured step.\n\n"
      "| hardware | batch | kernels measured / modelled | eager measured µs | eager predicted µs | error | graph "
      "measured µs | graph predicted µs | error |\n|---|---|---|---|---|---|---|---|---|\n",
      model.num_layers, model.hidden_size, layer.num_heads, layer.num_kv_heads, layer.head_dim, model.intermediate_size,
      out.rows.empty() ? 0 : out.rows.front().context, kModel);
  for (const auto& r : out.rows) {
    md += fmt::format("| {} | {} | {} / {} | {:.0f} | {:.0f} | {:+.0f}% | {:.0f} | {:.0f} | {:+.0f}% |\n", r.hardware,
                      r.batch, r.measured_kernels, r.model_nodes, r.eager_measured_us, r.eager_predicted_us,
                      100 * (r.eager_predicted_us / r.eager_measured_us - 1), r.graph_measured_us, r.graph_predicted_us,
                      100 * (r.graph_predicted_us / r.graph_measured_us - 1));
  }
  md += fmt::format("\nMAPE over {} batches: eager {:.1f}%, graph replay {:.1f}%.\n", out.rows.size(),
                    100 * mape(out.rows, false), 100 * mape(out.rows, true));
  if (!refit_test.empty()) {
    double sum = 0;
    for (const auto& [m, p] : refit_test) sum += std::fabs(p - m) / m;
    out.eager_refit_mape = sum / static_cast<double>(refit_test.size());
    md += fmt::format(
        "\nEager is host-bound at these batches, and PyTorch spends far more host time per kernel of a decoder "
        "layer than per bare launch (the `launch` rows): views, chunks and the dispatch of matmul, SDPA and "
        "RMSNorm cost host time too, and PyTorch runs {} kernels where the DAG has {}. Host time per modelled "
        "node fitted on batches 1, 4, 16, 64 ({}; `calibrate` exports it as `kernel_launch_us`): eager MAPE "
        "{:.1f}% on the other {} points.\n",
        out.rows.front().measured_kernels, out.rows.front().model_nodes, fmt::join(fitted, ", "),
        100 * out.eager_refit_mape, refit_test.size());
  }
  out.markdown = md;
  return out;
}

}  // namespace attnsim
