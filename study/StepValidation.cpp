#include "study/StepValidation.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <regex>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "cost/Predictor.hpp"
#include "hardware/HardwareProfile.hpp"
#include "simulator/EngineRun.hpp"

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

StepDecoder decoderOf(const ModelSpec& model) {
  const auto& layer = model.primaryLayer();
  return {.model = kModel,
          .layers = model.num_layers,
          .hidden = model.hidden_size,
          .heads = layer.num_heads,
          .kv_heads = layer.num_kv_heads,
          .head_dim = layer.head_dim,
          .mlp = model.intermediate_size};
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

// The eager and graph rows of one (hardware, batch), and what the eager row's note says.
struct StepPair {
  const MeasurementRow* eager = nullptr;
  const MeasurementRow* graph = nullptr;
  StepNote note;
};
using StepPairs = std::map<std::pair<std::string, std::int64_t>, StepPair>;

StepPairs pairSteps(const std::vector<MeasurementRow>& step_rows, const ModelSpec& model) {
  StepPairs pairs;
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
  return pairs;
}

using Predictors = std::map<std::string, std::unique_ptr<Predictor>>;  // per hardware

std::vector<StepComparison> compareSteps(const Catalog& catalog, const ModelSpec& model, const StepPairs& pairs,
                                         Predictors& predictors) {
  const KernelFamily& sdpa_flash = catalog.kernel("fa2");  // the decoder's SDPA decode runs FA2
  std::vector<StepComparison> out;
  for (const auto& [key, rows] : pairs) {
    if (!rows.eager || !rows.graph) continue;
    const auto& [hardware, batch] = key;
    auto& predictor = predictors[hardware];
    if (!predictor) {
      // Contiguous K/V: page size 1.
      const PredictionInput in =
          kernelPredictionInput(catalog.hardware(hardware), model, sdpa_flash, KvCacheDtype::Auto, 1, 1);
      predictor = std::make_unique<Predictor>(catalog, in);
    }
    const StepNote& note = rows.note;
    const Prediction p = predictor->predict(Workload::uniform(Phase::Decode, batch, 1, note.context + 1));
    out.push_back({hardware, batch, note.context, note.kernels, p.eager.nodes, rows.eager->median_us, p.eager.step_us,
                   rows.graph->median_us, p.graph.step_us});
  }
  return out;
}

// PyTorch's eager host time per kernel of a real layer is well above a bare launch (views, chunks
// and dispatch cost host time too): refit it per modelled node on batches 1, 4, 16 and 64 (where
// eager is host-bound) and score the other batches with it.
void fitHostCost(const Catalog& catalog, const Predictors& predictors, StepValidation& out) {
  std::map<std::string, std::pair<double, int>> host_fit;  // hardware -> (Σ µs per node, count)
  auto is_train = [](std::int64_t b) { return b == 1 || b == 4 || b == 16 || b == 64; };
  for (const auto& r : out.rows) {
    if (is_train(r.batch) && r.eager_measured_us > 1.5 * r.graph_measured_us && r.model_nodes > 0) {
      host_fit[r.hardware].first += r.eager_measured_us / r.model_nodes;
      host_fit[r.hardware].second += 1;
    }
  }
  double sum = 0;  // of the relative eager errors on the other batches
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
      sum += std::fabs(p.eager.step_us - r.eager_measured_us) / r.eager_measured_us;
      ++out.refit_points;
    }
  }
  if (out.refit_points > 0) out.eager_refit_mape = sum / static_cast<double>(out.refit_points);
}

}  // namespace

StepValidation stepValidation(const Catalog& catalog, const std::vector<MeasurementRow>& step_rows) {
  StepValidation out;
  if (step_rows.empty()) return out;
  out.measured = true;
  const ModelSpec& model = catalog.model(kModel);
  out.decoder = decoderOf(model);
  const StepPairs pairs = pairSteps(step_rows, model);
  Predictors predictors;
  out.rows = compareSteps(catalog, model, pairs, predictors);
  out.eager_mape = mape(out.rows, false);
  out.graph_mape = mape(out.rows, true);
  fitHostCost(catalog, predictors, out);
  return out;
}

}  // namespace attnsim
