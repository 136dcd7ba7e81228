#include "study/OperatorCalibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "cost/StepModel.hpp"
#include "study/Calibration.hpp"

namespace attnsim {

std::string operatorRowOrigins(const std::vector<const MeasurementRow*>& rows, const std::string& engine) {
  std::vector<std::string> out;
  for (const auto* r : rows) {
    if (r->engine != engine) continue;
    const std::string o = r->origin.empty() ? std::filesystem::path(r->source).filename().string() : r->origin;
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  }
  return join(out, ", ");
}

namespace {

// A gemm row's M, N and K (batch, q_len, kv_len).
struct GemmShape {
  double m, n, k;
};
GemmShape shapeOf(const MeasurementRow& r) {
  return {static_cast<double>(r.batch), static_cast<double>(r.q_len), static_cast<double>(r.kv_len)};
}

bool powerOfTwo(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
bool onGemmGrid(const MeasurementRow& r) { return powerOfTwo(r.batch) && powerOfTwo(r.q_len) && powerOfTwo(r.kv_len); }

// The engine with the most grid rows (ties: the first by name).
std::string gridEngine(const std::vector<const MeasurementRow*>& rows) {
  std::map<std::string, int> count;
  for (const auto* r : rows) count[r->engine] += onGemmGrid(*r) ? 1 : 0;
  std::string best;
  int most = 0;
  for (const auto& [engine, n] : count) {
    if (n > most) best = engine, most = n;
  }
  return best;
}

// Fills nodes no row measured (NaN) with the mean of their measured or filled neighbours along each axis.
void fillMissing(GemmSurface& s) {
  const std::size_t nm = s.log2_m.size(), nn = s.log2_n.size(), nk = s.log2_k.size();
  for (bool missing = true; missing;) {
    missing = false;
    bool progress = false;
    std::vector<double> next = s.log_efficiency;
    for (std::size_t i = 0; i < nm; ++i) {
      for (std::size_t j = 0; j < nn; ++j) {
        for (std::size_t l = 0; l < nk; ++l) {
          if (!std::isnan(s.log_efficiency[s.index(i, j, l)])) continue;
          double sum = 0;
          int count = 0;
          auto take = [&](std::size_t a, std::size_t b, std::size_t c) {
            const double v = s.log_efficiency[s.index(a, b, c)];
            if (!std::isnan(v)) sum += v, ++count;
          };
          if (i > 0) take(i - 1, j, l);
          if (i + 1 < nm) take(i + 1, j, l);
          if (j > 0) take(i, j - 1, l);
          if (j + 1 < nn) take(i, j + 1, l);
          if (l > 0) take(i, j, l - 1);
          if (l + 1 < nk) take(i, j, l + 1);
          if (count > 0) {
            next[s.index(i, j, l)] = sum / count;
            progress = true;
          } else {
            missing = true;
          }
        }
      }
    }
    s.log_efficiency = std::move(next);
    if (missing && !progress) throw InputError("GEMM surface: a grid node has no measured node to fill it from");
  }
}

// A node whose time lies this far (log) above what its neighbours on two or more axes say is taken as a
// stall of the measurement, not the kernel: the database times each shape once (a mean of 6 replays,
// collector/helper.py benchmark_with_power), and its repeats of one tile's shapes spread upwards only
// (B200 SGLang: 12-14 % of the calls of M 1..16 of one N, K lie 20 % above their median).
constexpr double kGemmNodeStallLog = 0.1;

// The node's time where it stood above the median of its neighbours' interpolations along each axis
// that has a node on both sides by more than kGemmNodeStallLog (the roofline carries the efficiency to
// time and back).
void dropStalledNodes(GemmSurface& s, const GemmRoofline& rates) {
  const std::array<const std::vector<double>*, 3> axes{&s.log2_m, &s.log2_n, &s.log2_k};
  std::vector<double> log_time(s.log_efficiency.size());
  auto node = [&](std::size_t i, std::size_t j, std::size_t l) { return s.index(i, j, l); };
  for (std::size_t i = 0; i < s.log2_m.size(); ++i) {
    for (std::size_t j = 0; j < s.log2_n.size(); ++j) {
      for (std::size_t l = 0; l < s.log2_k.size(); ++l) {
        log_time[node(i, j, l)] =
            std::log(rates.us(std::exp2(s.log2_m[i]), std::exp2(s.log2_n[j]), std::exp2(s.log2_k[l]))) -
            s.log_efficiency[node(i, j, l)];
      }
    }
  }
  std::vector<double> guesses;
  guesses.reserve(3);
  for (std::size_t i = 0; i < s.log2_m.size(); ++i) {
    for (std::size_t j = 0; j < s.log2_n.size(); ++j) {
      for (std::size_t l = 0; l < s.log2_k.size(); ++l) {
        const std::array<std::size_t, 3> at{i, j, l};
        guesses.clear();
        for (std::size_t d = 0; d < 3; ++d) {
          if (at[d] == 0 || at[d] + 1 >= axes[d]->size()) continue;
          auto lo = at, hi = at;
          --lo[d], ++hi[d];
          const auto& a = *axes[d];
          const double t = (a[at[d]] - a[lo[d]]) / (a[hi[d]] - a[lo[d]]);
          guesses.push_back((1 - t) * log_time[node(lo[0], lo[1], lo[2])] + t * log_time[node(hi[0], hi[1], hi[2])]);
        }
        if (guesses.size() < 2) continue;
        std::sort(guesses.begin(), guesses.end());
        const double g = guesses.size() == 2 ? (guesses[0] + guesses[1]) / 2 : guesses[1];
        const double own = log_time[node(i, j, l)];
        if (own - g > kGemmNodeStallLog) s.log_efficiency[node(i, j, l)] += own - g;
      }
    }
  }
}

// The engines of the rows other than the one whose rows make the surface.
std::set<std::string> otherEngines(const std::vector<const MeasurementRow*>& rows, const std::string& engine) {
  std::set<std::string> others;
  for (const auto* r : rows) {
    if (r->engine != engine) others.insert(r->engine);
  }
  return others;
}

// The share of a table's one-tile calls that a stall lifted: its grid rows of M 1-16 at one N, K take one
// time (one tile of A in every kernel), and the share of them 20% or more above their median beyond the
// share as far below (noise spreads both ways; a stalled replay only lifts the mean of 6,
// collector/helper.py benchmark_with_power). B200 SGLang: 7-12%; H100 SGLang: 1.2-3.8%.
double oneTileStallExcess(const std::vector<const MeasurementRow*>& rows, const std::string& engine) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<double>> groups;
  for (const auto* r : rows) {
    if (r->engine == engine && onGemmGrid(*r) && r->batch <= 16) groups[{r->q_len, r->kv_len}].push_back(r->median_us);
  }
  int above = 0, below = 0, calls = 0;
  for (auto& [nk, times] : groups) {
    if (times.size() < 4) continue;
    std::sort(times.begin(), times.end());
    const std::size_t h = times.size() / 2;
    const double median = times.size() % 2 ? times[h] : (times[h - 1] + times[h]) / 2;
    for (double t : times) above += t >= 1.2 * median, below += t <= median / 1.2, ++calls;
  }
  return calls > 0 ? static_cast<double>(above - below) / calls : 0.0;
}

// Whether a surface's nodes above their neighbours are dropped (dropStalledNodes). bf16 runs cuBLAS
// (SGLang's and vLLM's F.linear, and attnsim's own torch rows), whose heuristic picks a kernel per shape,
// so a node above its neighbours may be a pick every cuBLAS caller gets: dropped only where the table
// shows stalls, kGemmStallShare or more of its one-tile calls lifted (B200 yes, H100 no). The quantized
// kernels' nodes are dropped on both: on the H100, whose tables stall less, it smooths as much the
// per-shape block picks of DeepGEMM and CUTLASS (docs/MEASUREMENTS.md gives the held-out errors both ways).
constexpr double kGemmStallShare = 0.05;
GemmStallCheck checkStalls(const std::string& dtype, const std::vector<const MeasurementRow*>& rows,
                           const std::string& engine) {
  GemmStallCheck check;
  check.stall_share = oneTileStallExcess(rows, engine);
  check.dropped = dtype != "bf16" || check.stall_share >= kGemmStallShare;
  return check;
}

// Rows of A per tile of the kernel a dtype's calls run, above which M is padded to a whole tile: the
// block-scaled and per-tensor FP8 and the NVFP4 kernels compute 128-row tiles of A (DeepGEMM picks
// block M 64, 128 or 256 by waves, deep_gemm/jit_kernels get_best_configs; sgl-kernel's and vLLM's
// CUTLASS FP8 GEMMs and FlashInfer's CuTe-DSL NVFP4 GEMM run 128-row tiles above M 128); bf16 runs
// cuBLAS, whose heuristic picks among tile heights by shape: 1, no padding.
double gemmMTile(const std::string& dtype) { return dtype == "bf16" ? 1.0 : 128.0; }

std::vector<double> log2Axis(const std::set<std::int64_t>& values) {
  std::vector<double> axis;
  axis.reserve(values.size());
  for (auto v : values) axis.push_back(std::log2(static_cast<double>(v)));
  return axis;
}

std::size_t axisIndex(const std::vector<double>& axis, std::int64_t v) {
  return static_cast<std::size_t>(std::find(axis.begin(), axis.end(), std::log2(static_cast<double>(v))) -
                                  axis.begin());
}

// What the step model predicted for a GEMM before any surface: the dense-gemm family's roofline at
// the dtype's peak, activations in bf16.
double defaultGemmUs(const Catalog& c, const HardwareProfile& hw, const GemmRoofline& rates, const MeasurementRow& r) {
  const KernelModel k = resolveKernel(c.kernel("dense-gemm"), hw);
  DeviceModel device = resolveDevice(hw, DType::BF16);
  device.tensor_flops_per_us = rates.flops_per_us;
  const auto [m, n, kd] = shapeOf(r);
  return rooflineUs(k, device, 2 * m * n * kd, m * kd * 2 + n * kd * rates.b_bytes + m * n * 2);
}

// Each grid node's log efficiency: the mean over the engine's grid rows at that node, DeepGEMM's one-wave
// launches left out (fitted apart); nodes without rows stay NaN for fillMissing.
void averageGridNodes(GemmSurface& s, const std::vector<const MeasurementRow*>& rows, const std::string& engine,
                      const GemmRoofline& rates, int single_wave_sms) {
  std::vector<double> sum(s.log2_m.size() * s.log2_n.size() * s.log2_k.size(), 0.0);
  std::vector<int> count(sum.size(), 0);
  for (const auto* r : rows) {
    if (r->engine != engine || !onGemmGrid(*r) || gemmSingleWaveRow(*r, single_wave_sms)) continue;
    const auto [m, n, k] = shapeOf(*r);
    const std::size_t i =
        s.index(axisIndex(s.log2_m, r->batch), axisIndex(s.log2_n, r->q_len), axisIndex(s.log2_k, r->kv_len));
    sum[i] += std::log(rates.us(m, n, k) / r->median_us);
    ++count[i];
  }
  s.log_efficiency.assign(sum.size(), std::nan(""));
  for (std::size_t i = 0; i < sum.size(); ++i) {
    if (count[i] > 0) s.log_efficiency[i] = sum[i] / count[i], ++s.points;
  }
}

void fitGemm(const Catalog& c, const std::string& hardware, const std::string& dtype,
             const std::vector<const MeasurementRow*>& rows, OperatorCalibration& out) {
  const HardwareProfile& hw = c.hardware(hardware);
  const GemmRoofline rates = hw.gemmRoofline(dtype);
  if (rates.flops_per_us <= 0) return;  // no peak for the dtype: nothing to be a fraction of
  const std::string engine = gridEngine(rows);
  std::set<std::int64_t> ms, ns, ks;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> measured;
  for (const auto* r : rows) {
    if (r->engine != engine || !onGemmGrid(*r)) continue;
    ms.insert(r->batch), ns.insert(r->q_len), ks.insert(r->kv_len);
    measured.emplace(r->batch, r->q_len, r->kv_len);
  }
  const auto nodes = static_cast<int>(measured.size());
  if (nodes < kMinGemmSurfaceNodes || ms.size() < 3 || ns.size() < 3 || ks.size() < 3) {
    out.not_fitted.push_back(fmt::format(
        "{} gemm {}: {} rows, {} of them on the power-of-two grid ({} × {} × {} sizes); a surface needs {} grid "
        "nodes and 3 sizes on each axis",
        hardware, dtype, rows.size(), nodes, ms.size(), ns.size(), ks.size(), kMinGemmSurfaceNodes));
    return;
  }
  GemmSurface s;
  s.dtype = dtype;
  s.source = operatorRowOrigins(rows, engine);
  s.log2_m = log2Axis(ms), s.log2_n = log2Axis(ns), s.log2_k = log2Axis(ks);
  const int single_wave_sms = gemmSingleWaveSms(hw, dtype);  // those launches stay off the surface
  averageGridNodes(s, rows, engine, rates, single_wave_sms);
  fillMissing(s);
  s.m_tile = gemmMTile(dtype);
  const GemmStallCheck stalls = checkStalls(dtype, rows, engine);
  if (stalls.dropped) dropStalledNodes(s, rates);
  s.resolve(rates);
  if (single_wave_sms > 0) s.single_wave = fitGemmSingleWave(s, rows, engine, single_wave_sms);
  for (const auto& other : otherEngines(rows, engine)) s.engines.push_back(fitGemmEngineTiming(s, other, rows));
  const std::size_t first = out.points.size();
  for (const auto* r : rows) {
    const auto [m, n, k] = shapeOf(*r);
    const bool held_out = r->engine != engine ? gemmEngineRowHeldOut(*r) : !onGemmGrid(*r);
    out.points.push_back({hardware, r->engine, "gemm:" + dtype,
                          fmt::format("m={} n={} k={}", r->batch, r->q_len, r->kv_len), r->median_us,
                          s.engineUs(r->engine, m, n, k), defaultGemmUs(c, hw, rates, *r), held_out});
  }
  for (const auto& e : heldOutErrors(std::span(out.points).subspan(first))) {
    const HeldOutResiduals h{e.mape, e.p90, e.points};
    if (e.engine == engine) s.heldout = h;
    for (auto& t : s.engines) {
      if (t.engine == e.engine) t.heldout = h;
    }
  }
  out.gemm.push_back({hardware, engine, std::move(s), stalls});
}

}  // namespace

std::vector<OperatorErrors> OperatorCalibration::heldOutErrors() const { return attnsim::heldOutErrors(points); }

OperatorCalibration calibrateOperators(const Catalog& c, const std::vector<MeasurementRow>& rows,
                                       const std::string& hardware) {
  std::map<std::pair<std::string, std::string>, std::vector<const MeasurementRow*>> gemm, all_reduce;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const MeasurementRow*>> moe;
  for (const auto& r : rows) {
    if (!hardware.empty() && r.hardware != hardware) continue;
    if (r.kind == "gemm" && r.median_us > 0) gemm[{r.hardware, r.dtype}].push_back(&r);
    if (r.kind == "allreduce" && r.median_us > 0 && r.batch > 1) all_reduce[{r.hardware, r.engine}].push_back(&r);
    if (r.kind == "moe" && r.median_us > 0) moe[{r.hardware, r.engine, r.dtype}].push_back(&r);
  }
  OperatorCalibration out;
  for (const auto& [key, members] : gemm) fitGemm(c, key.first, key.second, members, out);
  for (const auto& [key, members] : all_reduce) calibrateAllReduce(c, key.first, key.second, members, out);
  for (const auto& [key, members] : moe)
    calibrateMoe(c, members, std::get<0>(key), std::get<1>(key), std::get<2>(key), out);
  return out;
}

std::string operatorCalibrationYaml(const OperatorCalibration& c, const std::string& hardware) {
  std::string text;
  auto heldout = [](const std::optional<HeldOutResiduals>& h) {
    return h ? fmt::format("{{mape: {:.4f}, p90_abs_rel_error: {:.4f}, points: {}}}", h->mape, h->p90_abs_rel_error,
                           h->points)
             : std::string{};
  };
  auto sizes = [](const std::vector<double>& log2) {
    std::vector<std::string> v;
    v.reserve(log2.size());
    for (double x : log2) v.push_back(fmt::format("{:.0f}", std::exp2(x)));
    return "[" + fmt::format("{}", fmt::join(v, ", ")) + "]";
  };
  for (const auto& g : c.gemm) {
    if (g.hardware != hardware) continue;
    if (text.empty()) text = "gemm:\n";
    const GemmSurface& s = g.surface;
    text += fmt::format("  {}:  # {} grid rows; efficiency = roofline / measured, [m][n][k]\n", s.dtype,
                        g.engine.empty() ? std::string("the") : g.engine + "'s");
    text += fmt::format("    m: {}\n    n: {}\n    k: {}\n", sizes(s.log2_m), sizes(s.log2_n), sizes(s.log2_k));
    if (s.m_tile > 1) text += fmt::format("    m_tile: {:.0f}  # M above it padded to a whole tile\n", s.m_tile);
    if (const auto& w = s.single_wave) {
      text += fmt::format(
          "    single_wave: {{engine: {}, fixed_us: {:.3f}, per_k_block_us: {:.4f}, points: {}}}  # DeepGEMM's "
          "one-wave "
          "launches\n",
          w->engine, w->fixed_us, w->per_k_block_us, w->points);
    }
    text += fmt::format("    # nodes above their neighbours {} ({:.1f}% of the one-tile calls lifted by a stall)\n",
                        g.stalls.dropped ? "dropped" : "kept", 100 * g.stalls.stall_share);
    // The grid as one block of text (one row of k per line): YamlReader::getNumbers says why.
    text += "    efficiency: |\n";
    const std::size_t nk = s.log2_k.size();
    for (std::size_t i = 0; i < s.log_efficiency.size(); i += nk) {
      std::vector<std::string> row;
      for (std::size_t l = 0; l < nk; ++l) row.push_back(fmt::format("{:.4g}", std::exp(s.log_efficiency[i + l])));
      text += fmt::format("      {}\n", fmt::join(row, " "));
    }
    text += fmt::format("    points: {}\n    source: \"{}\"\n", s.points, s.source);
    if (s.heldout) text += fmt::format("    heldout: {}\n", heldout(s.heldout));
    text += gemmEngineTimingsYaml(s);
  }
  text += allReduceCalibrationYaml(c, hardware);
  if (text.empty()) return text;
  return "# gemm and allreduce: attnsim calibrate --only gemm,allreduce (docs/MEASUREMENTS.md)\n" + text;
}

// The operator fits join each device's file: after its kernel fits, or as a file of their own.
void addOperatorSections(std::map<std::string, std::string>& files, const OperatorCalibration& ops,
                         const std::string& source) {
  std::set<std::string> hardware;
  for (const auto& g : ops.gemm) hardware.insert(g.hardware);
  for (const auto& a : ops.all_reduce) hardware.insert(a.hardware);
  for (const auto& m : ops.moe) hardware.insert(m.hardware);
  for (const auto& hw : hardware) {
    const std::string sections = operatorCalibrationYaml(ops, hw) + moeCalibrationYaml(ops, hw);
    auto it = files.find(hw);
    if (it == files.end()) {
      files[hw] = fmt::format(
          "# Written by `attnsim calibrate --export`; refit and rewrite rather than edit.\nhardware: {}\n"
          "source: \"{}\"\ncreated: \"{}\"\n{}kernels: {{}}\n",
          hw, source, todayIso(), sections);
    } else {
      const auto at = it->second.find("kernels:\n");
      it->second.insert(at == std::string::npos ? it->second.size() : at, sections);
    }
  }
}

}  // namespace attnsim
