// How a Predictor runs the batches that are not one uniform call: a mixed batch (one launch, or a
// prefill call and a decode call), and an MLA extend in the form its engine picks per batch
// (BackendCaps::mla_extend: MHA over per-head K/V, or absorbed over the latent cache); and each
// layer's kernels with their measured surface applied to the layer's shape.
#include <fmt/format.h>

#include "backends/KernelFamily.hpp"
#include "cost/Predictor.hpp"
#include "hardware/AttentionSurface.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

bool Predictor::extendAbsorbed(const Workload& workload) const {
  if (!input_.mla_extend || decodeLike(workload.phase) || absorbed_shapes_.empty()) return false;
  if (input_.mla_extend->absorbed_in_prefill_graph && chooseGraph(workload).mode == GraphMode::Piecewise) return true;
  double prefix = 0;
  for (const auto& g : workload.groups) prefix += static_cast<double>(g.count * g.prefix());
  return input_.mla_extend->absorbed(prefix);
}

// Which tokens take which MLA form's projections: those of the attention calls predictAttention runs.
MlaExtendRows Predictor::mlaExtendRows(const Workload& workload) const {
  MlaExtendRows rows;
  if (decodeLike(workload.phase) || !input_.model->primaryLayer().isMla()) return rows;
  const auto tokens = static_cast<double>(workload.tokens());
  if (extendAbsorbed(workload) || input_.prefill_kernel->attendsLatentCache())
    return {.up_projected = 0, .absorbed_tokens = tokens};
  const bool by_phase = workload.phase == Phase::Extend && !workload.isUniform() && !wholeBatchOneForm();
  // In MHA form every row's context; by phase, the single-token rows run in the decode call's latent form.
  rows.up_projected = 0;
  for (const auto& g : workload.groups) {
    if (by_phase && g.q_len == 1) {
      rows.absorbed_tokens += static_cast<double>(g.count);
    } else {
      rows.up_projected += static_cast<double>(g.count * g.context);
    }
  }
  return rows;
}

bool Predictor::wholeBatchOneForm() const { return input_.mla_extend && input_.mla_extend->decode_rows_join_extend; }

AttentionCost Predictor::mixedByPhase(std::size_t layer, const Workload& workload) const {
  thread_local std::vector<RequestGroup> prefill, decode;  // reused: no allocation once warm
  prefill.clear();
  decode.clear();
  for (const auto& g : workload.groups) (g.q_len == 1 ? decode : prefill).push_back(g);
  if (prefill.empty() || decode.empty()) {
    return attnsim::predictAttention(prefill_shapes_[layer], layerModel(extend_model_, layer), device_, workload.phase,
                                     workload.groups, input_.page_size);
  }
  const AttentionCost first = attnsim::predictAttention(prefill_shapes_[layer], layerModel(extend_model_, layer),
                                                        device_, Phase::Extend, prefill, input_.page_size);
  const AttentionCost second = attnsim::predictAttention(decode_shapes_[layer], layerModel(decode_model_, layer),
                                                         device_, Phase::Decode, decode, input_.page_size);
  return sequentialCalls(first, second);
}

std::string Predictor::mixedNote(const Workload& workload) const {
  bool single = false, multi = false;
  for (const auto& g : workload.groups) (g.q_len == 1 ? single : multi) = true;
  if (!single || !multi) return "";
  const KernelFamily& k = *input_.prefill_kernel;
  if (wholeBatchOneForm() && extendAbsorbed(workload)) {
    const KernelFamily& a = *input_.absorbed_extend_kernel;
    std::string how = fmt::format(
        "mixed batch: one absorbed {} launch over the latent cache for every row, the engine's form for this batch "
        "({})",
        a.id, input_.mla_extend->source);
    if (&a != input_.decode_kernel) {
      how +=
          fmt::format("; its single-token rows run in {}, not in the decode kernel {}", a.id, input_.decode_kernel->id);
    }
    if (a.packsQueryHeadsInPrefill() || &a == input_.decode_kernel) return how;
    return how +
           "; its extend tiles hold one query head, so every single-token row computes a padded query tile per "
           "query head and re-reads the latent cache per head";
  }
  if (wholeBatchOneForm()) {
    return fmt::format(
        "mixed batch: the whole batch runs as one extend in MHA form, the single-token rows too: every "
        "row's cached latent is up-projected per head through kv_b_proj and attended by {} ({})",
        k.id, input_.mla_extend->source);
  }
  if (input_.prefill_kernel != input_.decode_kernel) {
    return fmt::format(
        "mixed batch: a {} call over the prefill rows, then a {} call over the single-token rows "
        "(separate prefill and decode kernels)",
        k.id, input_.decode_kernel->id);
  }
  if (mixed_by_phase_) {
    return fmt::format("mixed batch: a prefill call, then a decode call over the single-token rows ({})",
                       k.mixed_batch_source);
  }
  std::string how = fmt::format("mixed batch: one {} launch over every sequence ({})", k.id,
                                k.mixed_batch_source.empty() ? "attnsim default" : k.mixed_batch_source);
  if (k.packsQueryHeadsInPrefill()) return how;
  return how +
         "; its prefill tiles hold one query head, so every single-token row computes a padded query tile "
         "per query head and re-reads its KV per head: more than a decode call where compute is scarce";
}

// Measured surfaces: each layer's kernels with their grid for the layer's shape.
void Predictor::attachCorrectedGrids() {
  auto layerModels = [&](const KernelModel& model, const std::vector<AttentionShape>& shapes, Phase phase) {
    LayerModels out;
    if (!model.surface) return out;
    out.reserve(shapes.size());
    for (const auto& shape : shapes) {
      auto layer = std::make_shared<KernelModel>(model);
      auto grid = correctedGridFor(shape, model, device_, phase, input_.page_size, input_.engine);
      layer->corrected = grid.get();
      if (grid) grids_.push_back(std::move(grid));
      out.push_back(std::move(layer));
    }
    return out;
  };
  prefill_layer_models_ = layerModels(prefill_model_, prefill_shapes_, Phase::Prefill);
  decode_layer_models_ = layerModels(decode_model_, decode_shapes_, Phase::Decode);
  // An extend runs in the prefill kernel: its grid for the prompt rows; its single-token rows weigh in
  // as the decode kernel runs them, where that is the same family on the same geometry.
  auto decodeRows = [&](const KernelFamily* family, const std::vector<AttentionShape>& shapes, std::size_t i) {
    const bool same = family == input_.decode_kernel && i < decode_layer_models_.size() &&
                      shapes[i].num_kv_heads == decode_shapes_[i].num_kv_heads &&
                      shapes[i].d_qk == decode_shapes_[i].d_qk;
    return same ? decode_layer_models_[i].get() : nullptr;
  };
  for (std::size_t i = 0; i < prefill_layer_models_.size(); ++i) {
    auto layer = std::make_shared<KernelModel>(extend_model_);
    layer->corrected = prefill_layer_models_[i]->corrected;
    layer->decode_rows = decodeRows(input_.prefill_kernel, prefill_shapes_, i);
    extend_layer_models_.push_back(std::move(layer));
  }
  // An MLA extend run absorbed: the absorbed kernel's own prefill grid for the prompt rows.
  if (!input_.absorbed_extend_kernel || !absorbed_extend_model_.surface) return;
  for (std::size_t i = 0; i < absorbed_shapes_.size(); ++i) {
    auto layer = std::make_shared<KernelModel>(absorbed_extend_model_);
    auto grid = correctedGridFor(absorbed_shapes_[i], absorbed_extend_model_, device_, Phase::Prefill, input_.page_size,
                                 input_.engine);
    layer->corrected = grid.get();
    if (grid) grids_.push_back(std::move(grid));
    layer->decode_rows = decodeRows(input_.absorbed_extend_kernel, absorbed_shapes_, i);
    absorbed_layer_models_.push_back(std::move(layer));
  }
}

const KernelModel& Predictor::layerModel(const KernelModel& kernel, std::size_t layer) const {
  auto pick = [&](const LayerModels& models) -> const KernelModel& {
    return layer < models.size() ? *models[layer] : kernel;
  };
  if (&kernel == &decode_model_) return pick(decode_layer_models_);
  if (&kernel == &prefill_model_) return pick(prefill_layer_models_);
  if (&kernel == &extend_model_) return pick(extend_layer_models_);
  if (&kernel == &absorbed_extend_model_) return pick(absorbed_layer_models_);
  return kernel;
}

}  // namespace attnsim
