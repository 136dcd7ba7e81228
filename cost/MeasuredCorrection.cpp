// The measured correction of an attention call (a kernel's surface on the device, applied to the
// call's shape): docs/COST_MODEL.md "Measured surfaces".
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "cost/AttentionCost.hpp"
#include "cost/AttentionCostInternal.hpp"
#include "hardware/AttentionSurface.hpp"

namespace attnsim {

namespace {

// An extend launch (a chunk over a prefix, or a mixed batch of prompts and single-token rows): its
// modelled time scaled by its parts' corrected over modelled time, each part as it runs alone (the
// prompt rows at the prefill grid's factor for their size, the single-token rows in the decode
// kernel), so a mixed launch keeps the relation to its parts that the uncorrected model has.
void correctExtend(AttentionCost& out, const AttentionShape& shape, const KernelModel& kernel,
                   const DeviceModel& device, std::span<const RequestGroup> groups, std::int64_t page_size) {
  thread_local std::vector<RequestGroup> prompts, singles;  // reused: no allocation once warm
  prompts.clear();
  singles.clear();
  double count = 0, keys = 0;
  for (const auto& g : groups) {
    if (g.q_len == 1) {
      singles.push_back(g);
      continue;
    }
    prompts.push_back(g);
    count += static_cast<double>(g.count);
    keys += static_cast<double>(g.count) * static_cast<double>(g.context);
  }
  const double fp =
      !prompts.empty() && kernel.corrected != nullptr ? correctionFactorAt(*kernel.corrected, count, keys / count) : 1;
  if (singles.empty() || kernel.decode_rows == nullptr) {
    if (prompts.empty()) return;
    out.measured_correction = fp;
    out.time_us *= fp;
    return;
  }
  KernelModel model = kernel;
  model.corrected = nullptr;
  model.decode_rows = nullptr;
  KernelModel decode_model = *kernel.decode_rows;
  decode_model.corrected = nullptr;
  const double tp =
      prompts.empty() ? 0 : predictAttention(shape, model, device, Phase::Extend, prompts, page_size).time_us;
  const double md = predictAttention(shape, decode_model, device, Phase::Decode, singles, page_size).time_us;
  const double td = predictAttention(shape, *kernel.decode_rows, device, Phase::Decode, singles, page_size).time_us;
  const double factor = tp + md > 0 ? (tp * fp + td) / (tp + md) : 1;
  out.measured_correction = factor;
  out.time_us *= factor;
}

}  // namespace

void attention_cost::applyMeasuredCorrection(AttentionCost& out, const AttentionShape& shape, const KernelModel& kernel,
                                             const DeviceModel& device, Phase phase,
                                             std::span<const RequestGroup> groups, std::int64_t page_size) {
  const bool decode = phase == Phase::Decode;
  if (groups.empty() || out.time_us <= 0) return;
  if (phase == Phase::Extend) {
    correctExtend(out, shape, kernel, device, groups, page_size);
    return;
  }
  if ((!decode && phase != Phase::Prefill) || kernel.corrected == nullptr) return;
  double requests = 0, length = 0;
  for (const auto& g : groups) {
    if (decode ? g.q_len != 1 : g.context != g.q_len) return;
    requests += static_cast<double>(g.count);
    length += static_cast<double>(g.count) * static_cast<double>(g.context);
  }
  if (requests <= 0) return;
  const GridLookup at = lookUp(*kernel.corrected, requests, length / requests);
  double corrected = std::exp(at.log_time);
  if (!at.inside) {
    KernelModel model = kernel;
    model.corrected = nullptr;
    const auto edge_length = std::llround(at.length);
    const RequestGroup edge{std::llround(at.batch), decode ? 1 : edge_length, edge_length, 1};
    const double edge_us = predictAttention(shape, model, device, phase, std::span(&edge, 1), page_size).time_us;
    if (edge_us > 0) corrected *= out.time_us / edge_us;
  }
  out.measured_correction = corrected / out.time_us;
  out.time_us = corrected;
}

SurfaceShape surfaceShapeOf(const AttentionShape& shape, std::string_view engine) {
  return {
      engine,      shape.num_heads, shape.num_kv_heads, shape.d_qk, kvWidthOf(shape.kv_elem_bytes), shape.act_bytes < 2,
      shape.window};
}

namespace {

// The (request, KV head) programs a launch of one request runs per query token block
// (KernelFamily::surface_batch_programs): a decode, one per KV head; a prefill, one per block of
// tile_q rows packing the query heads of one KV head, so in proportion to KV heads × min(group, tile_q).
double programsPerRequest(Phase phase, int heads, int kv_heads, int tile_q) {
  const int kv = std::max(1, kv_heads);
  if (phase == Phase::Decode) return kv;
  return static_cast<double>(kv) * std::min(std::max(1, heads / kv), std::max(1, tile_q));
}

// A slice matched at the call's program count instead of its batch: the slice's batch axis moved by
// log2(the slice's programs per request / the shape's), its nodes below one request dropped. A copy:
// built once per Predictor and layer type.
SurfaceSlice sliceAtPrograms(const SurfaceSlice& slice, const AttentionShape& shape, Phase phase, int tile_q) {
  const double shift = std::log2(programsPerRequest(phase, slice.heads, slice.kv_heads, tile_q) /
                                 programsPerRequest(phase, shape.num_heads, shape.num_kv_heads, tile_q));
  SurfaceSlice out = slice;
  out.log2_batch.clear();
  out.log_ratio.clear();
  const std::size_t nl = slice.log2_length.size();
  for (std::size_t ib = 0; ib < slice.log2_batch.size(); ++ib) {
    if (slice.log2_batch[ib] + shift < -1e-9) continue;
    out.log2_batch.push_back(slice.log2_batch[ib] + shift);
    const auto row = slice.log_ratio.begin() + static_cast<std::ptrdiff_t>(ib * nl);
    out.log_ratio.insert(out.log_ratio.end(), row, row + static_cast<std::ptrdiff_t>(nl));
  }
  return out.log2_batch.empty() ? slice : out;
}

}  // namespace

SurfaceSlice surfaceSliceFor(const SurfaceSlice& nearest, const AttentionShape& shape, const KernelModel& kernel,
                             Phase phase) {
  const bool by_programs = kernel.family != nullptr && kernel.family->surface_batch_programs;
  return by_programs ? sliceAtPrograms(nearest, shape, phase, kernel.tile_q) : nearest;
}

AttentionShape groupedShapeFor(const AttentionShape& shape, const SurfaceSlice& slice) {
  AttentionShape grouped = shape;
  grouped.num_heads = shape.num_kv_heads * std::max(1, slice.heads / std::max(1, slice.kv_heads));
  return grouped;
}

void toGroup1Times(CorrectedGrid& grid, const Group1DecodeRule& rule) {
  for (std::size_t i = 0; i < grid.log_time.size(); ++i) {
    grid.log_time[i] = std::log(rule.factor * std::exp(grid.log_time[i]) + rule.fixed_us);
    grid.log_model[i] = std::log(rule.factor * std::exp(grid.log_model[i]) + rule.fixed_us);
  }
}

std::shared_ptr<const CorrectedGrid> correctedGridFor(const AttentionShape& shape, const KernelModel& kernel,
                                                      const DeviceModel& device, Phase phase, std::int64_t page_size,
                                                      std::string_view engine) {
  if (kernel.surface == nullptr || (phase != Phase::Decode && phase != Phase::Prefill)) return nullptr;
  SurfaceShape wanted = surfaceShapeOf(shape, engine);
  wanted.by_group = kernel.family != nullptr && kernel.family->surface_batch_programs;
  const SurfaceSlice* nearest = kernel.surface->nearest(wanted);
  if (nearest == nullptr) return nullptr;
  const SurfaceSlice applied = surfaceSliceFor(*nearest, shape, kernel, phase);
  const SurfaceSlice* slice = &applied;
  KernelModel model = kernel;
  model.corrected = nullptr;
  // A group-1 decode through a grouped slice: the grouped kernel's nodes, then the group-1 kernel's times.
  const Group1DecodeRule* g1 = nearest->heads > nearest->kv_heads ? group1RuleFor(shape, kernel, phase) : nullptr;
  const AttentionShape node_shape = g1 != nullptr ? groupedShapeFor(shape, *nearest) : shape;
  std::vector<double> node_us;
  node_us.reserve(slice->log2_batch.size() * slice->log2_length.size());
  for (const double b : slice->log2_batch) {
    for (const double l : slice->log2_length) {
      const auto length = std::llround(std::exp2(l));
      const RequestGroup node{std::max<std::int64_t>(1, std::llround(std::exp2(b))),
                              phase == Phase::Decode ? 1 : length, length, 1};
      node_us.push_back(predictAttention(node_shape, model, device, phase, std::span(&node, 1), page_size).time_us);
    }
  }
  CorrectedGrid grid = correctedGrid(*slice, node_us);
  if (g1 != nullptr) toGroup1Times(grid, *g1);
  return std::make_shared<const CorrectedGrid>(std::move(grid));
}

}  // namespace attnsim
