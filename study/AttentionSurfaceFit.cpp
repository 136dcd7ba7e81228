#include "study/AttentionSurfaceFit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "study/Store.hpp"

namespace attnsim {

namespace {

// A row whose KV dtype is not written as a 16-bit one is 8-bit unless it names 4 bits.
KvWidth kvWidthOfDtype(const std::string& dtype) {
  if (dtype.empty() || dtype == "bf16" || dtype == "fp16" || dtype == "auto") return KvWidth::Bits16;
  return dtype.find("fp4") != std::string::npos || dtype.find("nvfp4") != std::string::npos ? KvWidth::Bits4
                                                                                            : KvWidth::Bits8;
}

bool fp8Query(const MeasurementRow& row) { return row.q_dtype.starts_with("fp8"); }

// The length a slice's grid runs over: the context of a decode, the prompt of a prefill.
std::int64_t sliceLength(const MeasurementRow& row) { return row.phase == "decode" ? row.kv_len : row.q_len; }

}  // namespace

std::optional<SliceKey> sliceKeyOf(const MeasurementRow& row) {
  if (row.kind != "attention") return std::nullopt;
  const bool decode = row.phase == "decode" && row.q_len == 1;
  const bool prefill = row.phase == "prefill" && row.q_len == row.kv_len;
  if (!decode && !prefill) return std::nullopt;
  return SliceKey{row.engine,
                  static_cast<int>(row.heads),
                  static_cast<int>(row.kv_heads),
                  static_cast<int>(row.head_dim),
                  kvWidthOfDtype(row.dtype),
                  fp8Query(row),
                  row.window};
}

namespace {

// The rows a slice has and the batch sizes and lengths they cover: enough of each makes it a grid.
struct SliceExtent {
  std::size_t rows = 0;
  std::set<std::int64_t> batches, lengths;
  void add(std::int64_t batch, std::int64_t length, std::size_t count) {
    rows += count;
    batches.insert(batch);
    lengths.insert(length);
  }
  [[nodiscard]] bool isGrid() const {
    return rows >= kMinSlicePoints && std::ssize(batches) >= kMinSliceAxisValues &&
           std::ssize(lengths) >= kMinSliceAxisValues;
  }
};

}  // namespace

DenseSlices::DenseSlices(const std::vector<MeasurementRow>& rows, const std::vector<std::int64_t>& held_out_contexts) {
  std::map<std::pair<Family, SliceKey>, SliceExtent> extents;
  for (const auto& r : rows) {
    const auto key = sliceKeyOf(r);
    if (!key || std::find(held_out_contexts.begin(), held_out_contexts.end(), r.kv_len) != held_out_contexts.end())
      continue;
    extents[{{r.hardware, r.kernel, phaseClassOf(r)}, *key}].add(r.batch, sliceLength(r), 1);
  }
  for (const auto& [key, e] : extents) {
    if (!e.isGrid()) continue;
    dense_.insert(key);
    head_dims_.insert({key.first, key.second.head_dim});
  }
}

bool DenseSlices::onSlice(const MeasurementRow& row) const {
  const auto key = sliceKeyOf(row);
  return key && dense_.contains({{row.hardware, row.kernel, phaseClassOf(row)}, *key});
}

bool DenseSlices::otherShape(const MeasurementRow& row) const {
  const auto key = sliceKeyOf(row);
  if (!key) return false;
  const Family family{row.hardware, row.kernel, phaseClassOf(row)};
  return head_dims_.contains({family, key->head_dim}) && !dense_.contains({family, *key});
}

std::vector<FitPoint> parameterPoints(const std::vector<FitPoint>& points, const DenseSlices& dense) {
  std::vector<FitPoint> off;
  for (const auto& p : points) {
    if (p.row != nullptr && !dense.onSlice(*p.row)) off.push_back(p);
  }
  return off.empty() ? points : off;
}

namespace {

using Cells = std::map<std::pair<std::int64_t, std::int64_t>, std::vector<double>>;  // (batch, length) -> residuals

// Each measured node's mean residual; a node more than kSpike off the median of its measured
// neighbours (one step along batch or length) takes that median: one slow timing in a table (a node
// five times slower than both its neighbours) is noise, not a cliff the kernel has, and left in it
// would lift every larger node once the grid is made non-decreasing.
constexpr double kSpike = 0.4;  // ln: 1.5×

std::map<std::pair<std::int64_t, std::int64_t>, double> despiked(const Cells& cells) {
  std::map<std::pair<std::int64_t, std::int64_t>, double> mean;
  std::vector<std::int64_t> batches, lengths;
  for (const auto& [node, residuals] : cells) {
    double sum = 0;
    for (const double r : residuals) sum += r;
    mean[node] = sum / static_cast<double>(residuals.size());
    batches.push_back(node.first);
    lengths.push_back(node.second);
  }
  auto sortUnique = [](std::vector<std::int64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  sortUnique(batches);
  sortUnique(lengths);
  auto index = [](const std::vector<std::int64_t>& axis, std::int64_t v) {
    return static_cast<std::ptrdiff_t>(std::lower_bound(axis.begin(), axis.end(), v) - axis.begin());
  };
  auto out = mean;
  std::vector<double> around;
  for (const auto& [node, r] : mean) {
    const std::ptrdiff_t ib = index(batches, node.first), il = index(lengths, node.second);
    around.clear();
    for (const auto& [db, dl] : {std::pair{-1, 0}, std::pair{1, 0}, std::pair{0, -1}, std::pair{0, 1}}) {
      const std::ptrdiff_t b = ib + db, l = il + dl;
      if (b < 0 || l < 0 || b >= std::ssize(batches) || l >= std::ssize(lengths)) continue;
      const auto it = mean.find({batches[static_cast<std::size_t>(b)], lengths[static_cast<std::size_t>(l)]});
      if (it != mean.end()) around.push_back(it->second);
    }
    if (around.size() < 2) continue;
    std::sort(around.begin(), around.end());
    const double median = around.size() % 2 == 1 ? around[around.size() / 2]
                                                 : (around[around.size() / 2 - 1] + around[around.size() / 2]) / 2;
    if (std::fabs(r - median) > kSpike) out[node] = median;
  }
  return out;
}

// The slice's grid: the mean residual at each measured node, each unmeasured node the value of the
// nearest measured one in (log2 batch, log2 length).
SurfaceSlice sliceFrom(const SliceKey& key, const Cells& cells) {
  SurfaceSlice s{key.engine, key.heads, key.kv_heads, key.head_dim, key.kv, key.fp8_query, key.window, {}, {}, {}, 0};
  std::set<std::int64_t> batches, lengths;
  for (const auto& [node, residuals] : cells) {
    batches.insert(node.first);
    lengths.insert(node.second);
  }
  for (const auto b : batches) s.log2_batch.push_back(std::log2(static_cast<double>(b)));
  for (const auto l : lengths) s.log2_length.push_back(std::log2(static_cast<double>(l)));
  s.log_ratio.assign(batches.size() * lengths.size(), 0);
  s.points = static_cast<int>(cells.size());
  const std::map<std::pair<std::int64_t, std::int64_t>, double> measured = despiked(cells);
  for (std::size_t ib = 0; ib < s.log2_batch.size(); ++ib) {
    for (std::size_t il = 0; il < s.log2_length.size(); ++il) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& [node, residual] : measured) {
        const double db = std::log2(static_cast<double>(node.first)) - s.log2_batch[ib];
        const double dl = std::log2(static_cast<double>(node.second)) - s.log2_length[il];
        const double d = db * db + dl * dl;
        if (d >= best) continue;
        best = d;
        s.log_ratio[ib * s.log2_length.size() + il] = residual;
      }
    }
  }
  return s;
}

}  // namespace

AttentionSurface fitAttentionSurface(const std::vector<FitPoint>& points, const KernelModel& base,
                                     const DeviceModel& device, const FitParams& params) {
  std::map<SliceKey, Cells> slices;
  for (const auto& p : points) {
    if (!p.row) continue;
    const auto key = sliceKeyOf(*p.row);
    if (!key) continue;
    const double modelled = predictPoint(p, base, device, params) - p.outsideUs();
    // The attention call's own time: what the row timed less the KV-cache write (and the query's
    // quantization) it also timed.
    const double measured = std::max(p.measured_us - p.outsideUs(), 0.2 * p.measured_us);
    if (modelled <= 0) continue;
    slices[*key][{p.row->batch, sliceLength(*p.row)}].push_back(std::log(measured / modelled));
  }
  AttentionSurface out;
  for (const auto& [key, cells] : slices) {
    SliceExtent extent;
    for (const auto& [node, residuals] : cells) extent.add(node.first, node.second, residuals.size());
    if (extent.isGrid()) out.slices.push_back(sliceFrom(key, cells));
  }
  return out;
}

double predictCorrected(const FitPoint& p, const KernelModel& base, const DeviceModel& device, const FitParams& params,
                        const AttentionSurface* surface, CorrectedGridCache& cache) {
  if (surface == nullptr || surface->slices.empty() || p.row == nullptr ||
      (p.phase != Phase::Decode && p.phase != Phase::Prefill))
    return predictPoint(p, base, device, params);
  SurfaceShape shape = surfaceShapeOf(p.shape, p.row->engine);
  shape.fp8_query = fp8Query(*p.row);
  shape.by_group = base.family != nullptr && base.family->surface_batch_programs;
  const SurfaceSlice* slice = surface->nearest(shape);
  if (slice == nullptr) return predictPoint(p, base, device, params);
  // The slice applied to this point's shape and measurement setup: each node predicted as the point is.
  const auto key = std::make_tuple(slice, p.shape.num_heads, p.shape.num_kv_heads, p.shape.d_qk, p.shape.d_v,
                                   p.shape.kv_elem_bytes, p.shape.window, p.page_size, p.l2_warm, p.math_peak_scale);
  auto found = cache.find(key);
  if (found == cache.end()) {
    const SurfaceSlice applied = surfaceSliceFor(*slice, p.shape, base, p.phase);
    // A group-1 decode through a grouped slice: the grouped kernel's nodes, then the group-1 kernel's
    // times (cost/MeasuredCorrection.cpp correctedGridFor does the same).
    const Group1DecodeRule* g1 = slice->heads > slice->kv_heads ? group1RuleFor(p.shape, base, p.phase) : nullptr;
    std::vector<double> node_us;
    node_us.reserve(applied.log2_batch.size() * applied.log2_length.size());
    for (const double b : applied.log2_batch) {
      for (const double l : applied.log2_length) {
        FitPoint node = p;
        const auto length = std::llround(std::exp2(l));
        node.group = {std::max<std::int64_t>(1, std::llround(std::exp2(b))), p.phase == Phase::Decode ? 1 : length,
                      length, 1};
        node.decodes.count = 0;
        node.kv_write_us = 0;
        node.q_quant_us = 0;
        if (g1 != nullptr) node.shape = groupedShapeFor(p.shape, *slice);
        node_us.push_back(predictPoint(node, base, device, params));
      }
    }
    CorrectedGrid grid = correctedGrid(applied, node_us);
    if (g1 != nullptr) toGroup1Times(grid, *g1);
    found = cache.emplace(key, std::move(grid)).first;
  }
  KernelModel k = base;
  k.corrected = &found->second;
  return predictPoint(p, k, device, params);
}

}  // namespace attnsim
