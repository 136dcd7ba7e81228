#include "hardware/AttentionSurface.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hardware/AxisPosition.hpp"

namespace attnsim {

KvWidth kvWidthOf(double kv_elem_bytes) {
  if (kv_elem_bytes >= 1.5) return KvWidth::Bits16;
  return kv_elem_bytes >= 0.9 ? KvWidth::Bits8 : KvWidth::Bits4;
}

const char* kvWidthName(KvWidth w) {
  switch (w) {
    case KvWidth::Bits16:
      return "bf16";
    case KvWidth::Bits8:
      return "fp8";
    case KvWidth::Bits4:
      return "fp4";
  }
  return "bf16";
}

namespace {

double log2Of(int v) { return std::log2(std::max(1, v)); }

}  // namespace

CorrectedGrid correctedGrid(const SurfaceSlice& slice, const std::vector<double>& node_model_us) {
  CorrectedGrid g{slice.log2_batch, slice.log2_length, {}, {}};
  const std::size_t nb = g.log2_batch.size(), nl = g.log2_length.size();
  g.log_time.resize(nb * nl);
  g.log_model.resize(nb * nl);
  for (std::size_t i = 0; i < g.log_time.size(); ++i) {
    g.log_model[i] = std::log(std::max(node_model_us[i], 1e-6));
    g.log_time[i] = g.log_model[i] + slice.log_ratio[i];
  }
  // A running maximum along batch, then along length: non-decreasing along both, except where the model
  // itself falls (a kernel whose rule changes its split count there: vLLM's FA4 leaves its 32 CUDA-graph
  // splits past 512 tokens), which the corrected time may follow by as much and no more.
  auto lift = [&](std::size_t i, std::size_t prev) {
    const double model_step = std::min(0.0, g.log_model[i] - g.log_model[prev]);
    g.log_time[i] = std::max(g.log_time[i], g.log_time[prev] + model_step);
  };
  for (std::size_t ib = 1; ib < nb; ++ib) {
    for (std::size_t il = 0; il < nl; ++il) lift(ib * nl + il, (ib - 1) * nl + il);
  }
  for (std::size_t ib = 0; ib < nb; ++ib) {
    for (std::size_t il = 1; il < nl; ++il) lift(ib * nl + il, ib * nl + il - 1);
  }
  return g;
}

namespace {

double bilinear(const CorrectedGrid& grid, const std::vector<double>& values, double log2_batch, double log2_length) {
  const AxisPosition b = positionOn(grid.log2_batch, log2_batch);
  const AxisPosition l = positionOn(grid.log2_length, log2_length);
  const std::size_t nl = grid.log2_length.size();
  const std::size_t b_hi = std::min(b.lo + 1, grid.log2_batch.size() - 1);
  const std::size_t l_hi = std::min(l.lo + 1, nl - 1);
  // lo + t·(hi − lo): monotone in t under rounding too, and exact where the nodes are equal (a
  // running maximum's flat stretches), so a corrected time never falls by a rounding error.
  auto along_length = [&](std::size_t ib) {
    const double lo = values[ib * nl + l.lo];
    return lo + l.t * (values[ib * nl + l_hi] - lo);
  };
  const double lo = along_length(b.lo);
  return lo + b.t * (along_length(b_hi) - lo);
}

}  // namespace

double correctionFactorAt(const CorrectedGrid& grid, double batch, double length) {
  const double lb = std::log2(std::max(1.0, batch)), ll = std::log2(std::max(1.0, length));
  return std::exp(bilinear(grid, grid.log_time, lb, ll) - bilinear(grid, grid.log_model, lb, ll));
}

GridLookup lookUp(const CorrectedGrid& grid, double batch, double length) {
  GridLookup out;
  const double lb = std::log2(std::max(1.0, batch)), ll = std::log2(std::max(1.0, length));
  const double cb = std::clamp(lb, grid.log2_batch.front(), grid.log2_batch.back());
  const double cl = std::clamp(ll, grid.log2_length.front(), grid.log2_length.back());
  out.inside = cb == lb && cl == ll;
  out.batch = std::exp2(cb);
  out.length = std::exp2(cl);
  out.log_time = bilinear(grid, grid.log_time, cb, cl);
  return out;
}

const SurfaceSlice* AttentionSurface::nearest(const SurfaceShape& shape) const {
  // Each mismatch of a discrete property outweighs any distance in heads and sizes.
  constexpr double kMismatch = 1000;
  const SurfaceSlice* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const auto& s : slices) {
    // A head size the surface never measured runs other code (tiles, pipelines): not corrected.
    if (s.head_dim != shape.head_dim) continue;
    double d = 0;
    d += s.kv != shape.kv ? 4 * kMismatch : 0;
    d += s.fp8_query != shape.fp8_query ? 2 * kMismatch : 0;
    d += (s.window > 0) != (shape.window > 0) ? 2 * kMismatch : 0;
    d += !shape.engine.empty() && s.engine != shape.engine ? kMismatch : 0;
    const double dkv = log2Of(s.kv_heads) - log2Of(shape.kv_heads);
    const double dheads = log2Of(s.heads) - log2Of(shape.heads);
    const double dh = shape.by_group ? dheads - dkv : dheads;  // by_group: the difference in log2 group
    d += dh * dh + (shape.by_group ? 0.1 : 1.0) * dkv * dkv;
    if (d < best_distance) {
      best_distance = d;
      best = &s;
    }
  }
  return best;
}

namespace {

std::vector<double> surfaceLog2Axis(const YamlReader& r, std::string_view key) {
  std::vector<double> axis = r.getNumbers(key, 1, 1e15);
  for (auto& v : axis) v = std::log2(v);
  if (!std::is_sorted(axis.begin(), axis.end()) || std::adjacent_find(axis.begin(), axis.end()) != axis.end())
    r.fail(key, "must be strictly ascending");
  return axis;
}

SurfaceSlice parseSurfaceSlice(const YamlReader& r) {
  SurfaceSlice s;
  s.engine = r.get<std::string>("engine");
  s.heads = static_cast<int>(r.getInt("heads", 1, 1 << 12));
  s.kv_heads = static_cast<int>(r.getInt("kv_heads", 1, 1 << 12));
  s.head_dim = static_cast<int>(r.getInt("head_dim", 1, 1 << 12));
  const std::string kv = r.getOneOf("kv", {"bf16", "fp8", "fp4"});
  s.kv = kv == "bf16" ? KvWidth::Bits16 : kv == "fp8" ? KvWidth::Bits8 : KvWidth::Bits4;
  s.fp8_query = r.get<bool>("fp8_query", false);
  s.window = r.getInt("window", 0, std::int64_t{1} << 40);
  s.points = static_cast<int>(r.getInt("points", 1, 1 << 30));
  s.log2_batch = surfaceLog2Axis(r, "batches");
  s.log2_length = surfaceLog2Axis(r, "lengths");
  s.log_ratio = r.getNumbers("log_ratio_x100", -1e6, 1e6);
  if (s.log_ratio.size() != s.log2_batch.size() * s.log2_length.size())
    r.fail("log_ratio_x100", fmt::format("{} values for a grid of {} batches × {} lengths", s.log_ratio.size(),
                                         s.log2_batch.size(), s.log2_length.size()));
  for (auto& v : s.log_ratio) v /= 100;
  r.finish();
  return s;
}

std::string surfaceJoined(const std::vector<double>& values, double scale, bool exponent) {
  std::string out;
  for (const double v : values) {
    if (!out.empty()) out += ' ';
    out += exponent ? fmt::format("{}", std::lround(std::exp2(v))) : fmt::format("{}", std::lround(v * scale));
  }
  return out;
}

}  // namespace

AttentionSurface parseAttentionSurface(const YamlReader& phase_entry) {
  AttentionSurface out;
  for (const auto& slice : phase_entry.list("slices")) out.slices.push_back(parseSurfaceSlice(slice));
  phase_entry.finish();
  return out;
}

std::string attentionSurfaceYaml(const AttentionSurface& s, std::string_view indent) {
  std::string out = fmt::format("{}slices:\n", indent);
  for (const auto& slice : s.slices) {
    out += fmt::format(
        "{}  - {{engine: {}, heads: {}, kv_heads: {}, head_dim: {}, kv: {}, fp8_query: {}, window: {}, points: {}, "
        "batches: \"{}\", lengths: \"{}\", log_ratio_x100: \"{}\"}}\n",
        indent, slice.engine, slice.heads, slice.kv_heads, slice.head_dim, kvWidthName(slice.kv), slice.fp8_query,
        slice.window, slice.points, surfaceJoined(slice.log2_batch, 1, true), surfaceJoined(slice.log2_length, 1, true),
        surfaceJoined(slice.log_ratio, 100, false));
  }
  return out;
}

}  // namespace attnsim
