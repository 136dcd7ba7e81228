#include "hardware/OperatorFits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "hardware/AxisPosition.hpp"
#include "hardware/DeepGemmPick.hpp"
#include "hardware/MoeFit.hpp"

namespace attnsim {

const std::vector<std::string> kGemmDtypes = {"bf16", "fp8", "fp8_block", "nvfp4"};
const std::vector<std::string> kMoeDtypes = {"bf16", "fp8", "fp8_block", "nvfp4", "mxfp4"};

namespace {

// ", held-out MAPE …% p90 …% on N <unit>" of a fit's source line; "" without held-out figures.
std::string heldOutPhrase(const std::optional<HeldOutResiduals>& h, const char* unit) {
  return h ? fmt::format(", held-out MAPE {:.1f}% p90 {:.1f}% on {} {}", 100 * h->mape, 100 * h->p90_abs_rel_error,
                         h->points, unit)
           : std::string{};
}

std::vector<double> log2Axis(const YamlReader& r, std::string_view key, double min = 1) {
  std::vector<double> axis = r.getNumbers(key, min, 1e9);
  for (std::size_t i = 1; i < axis.size(); ++i) {
    if (axis[i] <= axis[i - 1]) r.fail(key, "the grid's sizes must ascend");
  }
  for (double& v : axis) v = std::log2(v);
  return axis;
}

// `engines: {<engine>: {floor_us, extra_us, per_row_us, kernel_scale (5 each), per_element_us (optional),
// points, heldout}}`.
std::vector<GemmEngineTiming> parseGemmEngineTimings(const YamlReader& engines) {
  std::vector<GemmEngineTiming> out;
  for (const auto& engine : engines.keysOf()) {
    const YamlReader r = engines.map(engine);
    GemmEngineTiming t;
    t.engine = engine;
    for (const auto& [key, into] :
         {std::pair{"floor_us", &t.floor_us}, std::pair{"extra_us", &t.extra_us},
          std::pair{"per_row_us", &t.per_row_us}, std::pair{"kernel_scale", &t.kernel_scale}}) {
      const std::vector<double> values = r.getNumbers(key, 0, 1e6);
      if (values.size() != kGemmShapeClasses)
        r.fail(key, fmt::format("{} values for {} shape classes", values.size(), kGemmShapeClasses));
      std::copy(values.begin(), values.end(), into->begin());
    }
    t.per_element_us = r.findNumber("per_element_us", 0, 1).value_or(0);
    t.points = static_cast<int>(r.getInt("points", 1, 1 << 30));
    t.heldout = parseHeldOutResiduals(r);
    r.finish();
    out.push_back(std::move(t));
  }
  engines.finish();
  return out;
}

GemmSurface parseGemmSurface(const YamlReader& r, const std::string& dtype, const std::string& origin) {
  GemmSurface s;
  s.dtype = dtype;
  s.log2_m = log2Axis(r, "m");
  s.log2_n = log2Axis(r, "n");
  s.log2_k = log2Axis(r, "k");
  s.log_efficiency = r.getNumbers("efficiency", 1e-6, 100);
  const std::size_t nodes = s.log2_m.size() * s.log2_n.size() * s.log2_k.size();
  if (s.log_efficiency.size() != nodes) {
    r.fail("efficiency", fmt::format("{} values for a grid of {} × {} × {} = {} nodes", s.log_efficiency.size(),
                                     s.log2_m.size(), s.log2_n.size(), s.log2_k.size(), nodes));
  }
  for (double& e : s.log_efficiency) e = std::log(e);
  s.m_tile = r.findNumber("m_tile", 1, 4096).value_or(1);
  if (const auto w = r.findMap("single_wave")) {
    s.single_wave =
        GemmSingleWave{w->get<std::string>("engine"), w->getNumber("fixed_us", 0, 1e4),
                       w->getNumber("per_k_block_us", 0, 1e4), static_cast<int>(w->getInt("points", 1, 1 << 30))};
    w->finish();
  }
  if (const auto engines = r.findMap("engines")) s.engines = parseGemmEngineTimings(*engines);
  for (auto& e : s.engines) e.per_tensor_fp8 = dtype == "fp8";
  s.points = static_cast<int>(r.getInt("points", 1, 1 << 30));
  s.heldout = parseHeldOutResiduals(r);
  const auto own = r.find<std::string>("source");
  s.source = fmt::format("{} GEMM efficiency surface on {} measured nodes{}: {}", dtype, s.points,
                         heldOutPhrase(s.heldout, "shapes"), own ? *own : origin);
  r.finish();
  return s;
}

}  // namespace

double GemmRoofline::us(double m, double n, double k) const {
  return std::max(2 * m * n * k / flops_per_us, (m * k * a_bytes + n * k * b_bytes + m * n * c_bytes) / bytes_per_us);
}

namespace {

// The closest non-decreasing sequence in least squares (pool adjacent violators): a node slower than
// the next larger one is averaged with it rather than passed on, so one slow outlier does not lift
// every larger shape.
void makeNonDecreasing(std::vector<double>& values, std::vector<double>& pooled, std::vector<int>& weight) {
  pooled.clear();
  weight.clear();
  for (double v : values) {
    pooled.push_back(v);
    weight.push_back(1);
    while (pooled.size() > 1 && pooled[pooled.size() - 2] > pooled.back()) {
      const double w1 = weight[weight.size() - 2], w2 = weight.back();
      const double merged = (pooled[pooled.size() - 2] * w1 + pooled.back() * w2) / (w1 + w2);
      pooled.pop_back();
      weight.pop_back();
      pooled.back() = merged;
      weight.back() += static_cast<int>(w2);
    }
  }
  std::size_t at = 0;
  for (std::size_t b = 0; b < pooled.size(); ++b) {
    for (int i = 0; i < weight[b]; ++i) values[at++] = pooled[b];
  }
}

}  // namespace

void GemmSurface::resolve(const GemmRoofline& device) {
  roofline = device;
  log_time.resize(log_efficiency.size());
  const std::size_t nm = log2_m.size(), nn = log2_n.size(), nk = log2_k.size();
  std::vector<double> line(nm), pooled;
  std::vector<int> weight;
  for (std::size_t j = 0; j < nn; ++j) {
    for (std::size_t l = 0; l < nk; ++l) {
      for (std::size_t i = 0; i < nm; ++i) {
        line[i] = std::log(device.us(std::exp2(log2_m[i]), std::exp2(log2_n[j]), std::exp2(log2_k[l]))) -
                  log_efficiency[index(i, j, l)];
      }
      makeNonDecreasing(line, pooled, weight);  // a batch of more tokens never runs faster
      for (std::size_t i = 0; i < nm; ++i) log_time[index(i, j, l)] = line[i];
    }
  }
}

double GemmSurface::kernelUs(std::string_view engine, double m, double n, double k) const {
  const double surface = surfaceUs(m, n, k);
  if (!takesSingleWave(engine)) return surface;
  if (!deepGemmSingleWaveClass(m, n, k, roofline.sms)) return surface;  // cached per thread
  return std::max(surface, single_wave->us(k));
}

double GemmSurface::surfaceUs(double m_rows, double n, double k) const {
  const double m = m_rows > m_tile ? std::ceil(m_rows / m_tile) * m_tile : m_rows;
  const double cm = std::clamp(m, std::exp2(log2_m.front()), std::exp2(log2_m.back()));
  const double cn = std::clamp(n, std::exp2(log2_n.front()), std::exp2(log2_n.back()));
  const double ck = std::clamp(k, std::exp2(log2_k.front()), std::exp2(log2_k.back()));
  const AxisPosition bm = positionOn(log2_m, std::log2(cm));
  const AxisPosition bn = positionOn(log2_n, std::log2(cn));
  const AxisPosition bk = positionOn(log2_k, std::log2(ck));
  const double inside = std::exp(interpolateGrid3(log_time, log2_m, log2_n, log2_k, bm, bn, bk));
  if (cm == m && cn == n && ck == k) return inside;
  return inside * roofline.us(m, n, k) / roofline.us(cm, cn, ck);
}

std::size_t gemmShapeClass(double m, double n, double k) {
  if (std::fmod(n, 64) != 0 || std::fmod(k, 128) != 0) return 0;
  const bool unaligned = std::fmod(m, 4) != 0 && k > 128;
  return (m < 32 ? 1 : 3) + (unaligned ? 1 : 0);
}

std::size_t gemmPerTensorFp8Class(double m) {
  if (m <= 1) return 0;
  if (m <= 16) return 1;
  if (m <= 256) return 2;
  return std::fmod(m, 256) == 0 ? 3 : 4;
}

double GemmSurface::engineUs(std::string_view engine, double m, double n, double k) const {
  const double kernel = kernelUs(engine, m, n, k);
  for (const auto& e : engines) {
    if (e.engine == engine) return e.us(kernel, m, n, k);
  }
  return kernel;
}

double AllReduceFit::us(double bytes, int ranks) const {
  if (ranks <= 1) return 0;
  const double n = ranks;
  for (const auto& r : per_ranks) {
    if (r.ranks != ranks) continue;
    const double share = (n - 1) / n * bytes;
    return std::min(r.one_shot_latency_us + share / (r.one_shot_gbps * 1e3),
                    r.two_shot_latency_us + 2 * share / (r.two_shot_gbps * 1e3));
  }
  const double one_shot =
      one_shot_latency_us + (n - 1) * one_shot_per_peer_us + (n - 1) / n * bytes / (one_shot_gbps * 1e3);
  const double two_shot =
      two_shot_latency_us + (n - 1) * two_shot_per_peer_us + 2 * (n - 1) / n * bytes / (two_shot_gbps * 1e3);
  return std::min(one_shot, two_shot);
}

namespace {

UncertaintyBand operatorBand(const std::optional<HeldOutResiduals>& heldout, double fit_mape,
                             const std::string& transferred_from) {
  UncertaintyBand b{kNonAttentionDefaultBand, BandBasis::Documented};
  if (heldout) {
    b = {heldout->p90_abs_rel_error, BandBasis::HeldOut};
  } else if (fit_mape > 0) {
    b = {kFitMapeToP90 * fit_mape, BandBasis::Fit};
  }
  if (!transferred_from.empty()) b = {std::max(b.band, kNonAttentionDefaultBand), BandBasis::Documented};
  return b;
}

}  // namespace

UncertaintyBand bandOf(const GemmSurface& s) { return operatorBand(s.heldout, 0, s.transferred_from); }
UncertaintyBand bandOf(const AllReduceFit& f) { return operatorBand(f.heldout, f.fit_mape, f.transferred_from); }

std::optional<HeldOutResiduals> parseHeldOutResiduals(const YamlReader& fit) {
  const auto r = fit.findMap("heldout");
  if (!r) return std::nullopt;
  HeldOutResiduals h;
  h.mape = r->getNumber("mape", 0, 100);
  h.p90_abs_rel_error = r->getNumber("p90_abs_rel_error", 0, 100);
  h.points = static_cast<int>(r->getInt("points", 1, 1 << 30));
  r->finish();
  return h;
}

std::vector<GemmSurface> parseGemmSurfaces(const YamlReader& gemm, const std::string& origin) {
  std::vector<GemmSurface> out;
  for (const auto& dtype : gemm.keysOf()) {
    if (std::find(kGemmDtypes.begin(), kGemmDtypes.end(), dtype) == kGemmDtypes.end()) {
      gemm.fail(dtype, fmt::format("no GEMM dtype '{}' (one of: {})", dtype, fmt::join(kGemmDtypes, ", ")));
    }
    out.push_back(parseGemmSurface(gemm.map(dtype), dtype, origin));
  }
  gemm.finish();
  return out;
}

namespace {

// `ranks: {<GPUs>: {one_shot: {latency_us, bandwidth_gbps}, two_shot: {…}}}`, ascending.
std::vector<AllReduceRegimes> parseAllReduceRegimes(const YamlReader& ranks) {
  std::vector<AllReduceRegimes> out;
  for (const auto& key : ranks.keysOf()) {
    AllReduceRegimes g;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), g.ranks);
    if (ec != std::errc{} || end != key.data() + key.size() || g.ranks < 2 || g.ranks > 1024) {
      ranks.fail(key, "expected a GPU count from 2 to 1024");
    }
    const YamlReader at = ranks.map(key);
    const YamlReader one = at.map("one_shot");
    g.one_shot_latency_us = one.getNumber("latency_us", 0, 1e4);
    g.one_shot_gbps = one.getNumber("bandwidth_gbps", 0.1, 1e5);
    one.finish();
    const YamlReader two = at.map("two_shot");
    g.two_shot_latency_us = two.getNumber("latency_us", 0, 1e4);
    g.two_shot_gbps = two.getNumber("bandwidth_gbps", 0.1, 1e5);
    two.finish();
    at.finish();
    if (!out.empty() && out.back().ranks >= g.ranks) ranks.fail(key, "the GPU counts must ascend");
    out.push_back(g);
  }
  ranks.finish();
  return out;
}

AllReduceFit parseAllReduceFit(const YamlReader& r, const std::string& engine, const std::string& origin) {
  AllReduceFit f;
  f.engine = engine;
  const YamlReader one = r.map("one_shot");
  f.one_shot_latency_us = one.getNumber("latency_us", 0, 1e4);
  f.one_shot_gbps = one.getNumber("bandwidth_gbps", 0.1, 1e5);
  f.one_shot_per_peer_us = one.findNumber("latency_per_peer_us", 0, 1e4).value_or(0);
  one.finish();
  const YamlReader two = r.map("two_shot");
  f.two_shot_latency_us = two.getNumber("latency_us", 0, 1e4);
  f.two_shot_gbps = two.getNumber("bandwidth_gbps", 0.1, 1e5);
  f.two_shot_per_peer_us = two.findNumber("latency_per_peer_us", 0, 1e4).value_or(0);
  two.finish();
  if (const auto ranks = r.findMap("ranks")) f.per_ranks = parseAllReduceRegimes(*ranks);
  f.points = static_cast<int>(r.getInt("points", 1, 1 << 30));
  f.fit_mape = r.getNumber("fit_mape", 0, 100);
  f.heldout = parseHeldOutResiduals(r);
  const auto own = r.find<std::string>("source");
  const std::string what = engine == kNcclAllReduce ? std::string("NCCL's all-reduce (nccl-tests)")
                                                    : fmt::format("{}'s custom all-reduce", engine);
  f.source = fmt::format("{} fitted on {} calls (fit MAPE {:.1f}%{}): {}", what, f.points, 100 * f.fit_mape,
                         heldOutPhrase(f.heldout, "calls"), own ? *own : origin);
  r.finish();
  return f;
}

}  // namespace

std::vector<AllReduceFit> parseAllReduceFits(const YamlReader& allreduce, const std::string& origin) {
  std::vector<AllReduceFit> out;
  for (const auto& engine : allreduce.keysOf()) out.push_back(parseAllReduceFit(allreduce.map(engine), engine, origin));
  allreduce.finish();
  return out;
}

UncertaintyBand bandOf(const MoeFit& f) { return operatorBand(f.heldout, 0, f.transferred_from); }

namespace {

MoeFit parseMoeFit(const YamlReader& r, const std::string& engine, const std::string& dtype,
                   const std::string& origin) {
  MoeFit f;
  f.engine = engine;
  f.dtype = dtype;
  f.kernel = r.get<std::string>("kernel");
  f.fixed_us = r.getNumber("fixed_us", 0, 1e5);
  f.log2_tokens_per_expert = log2Axis(r, "tokens_per_expert");
  f.log2_weights_mib = r.has("weights_mib") ? log2Axis(r, "weights_mib", 1.0 / 1024) : std::vector<double>{0.0};
  f.log2_inter = log2Axis(r, "inter");
  f.log_efficiency = r.getNumbers("efficiency", 1e-6, 100);
  const std::size_t nodes = f.log2_tokens_per_expert.size() * f.log2_weights_mib.size() * f.log2_inter.size();
  if (f.log_efficiency.size() != nodes) {
    r.fail("efficiency",
           fmt::format("{} values for a grid of {} × {} × {} = {} nodes", f.log_efficiency.size(),
                       f.log2_tokens_per_expert.size(), f.log2_weights_mib.size(), f.log2_inter.size(), nodes));
  }
  for (double& e : f.log_efficiency) e = std::log(e);
  f.pad_to = static_cast<int>(r.findInt("pad_to", 1, 4096).value_or(1));
  if (r.has("token_tiles")) parseMoeTokenTiles(r, f);
  f.points = static_cast<int>(r.getInt("points", 1, 1 << 30));
  f.heldout = parseHeldOutResiduals(r);
  const auto own = r.find<std::string>("source");
  f.source = fmt::format("{}'s {} fused MoE ({}) fitted on {} calls{}: {}", engine, dtype, f.kernel, f.points,
                         heldOutPhrase(f.heldout, "calls"), own ? *own : origin);
  r.finish();
  return f;
}

}  // namespace

std::vector<MoeFit> parseMoeFits(const YamlReader& moe, const std::string& origin) {
  std::vector<MoeFit> out;
  for (const auto& engine : moe.keysOf()) {
    const YamlReader by_dtype = moe.map(engine);
    for (const auto& dtype : by_dtype.keysOf()) {
      if (std::find(kMoeDtypes.begin(), kMoeDtypes.end(), dtype) == kMoeDtypes.end()) {
        by_dtype.fail(dtype, fmt::format("no MoE dtype '{}' (one of: {})", dtype, fmt::join(kMoeDtypes, ", ")));
      }
      out.push_back(parseMoeFit(by_dtype.map(dtype), engine, dtype, origin));
    }
    by_dtype.finish();
  }
  moe.finish();
  return out;
}

}  // namespace attnsim
