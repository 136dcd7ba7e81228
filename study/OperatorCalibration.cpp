#include "study/OperatorCalibration.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
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
#include "cost/Collective.hpp"
#include "cost/StepModel.hpp"
#include "study/Calibration.hpp"

namespace attnsim {

namespace {

// Where rows came from: the tables they were converted from (origin), else their files' names.
std::string originsOf(const std::vector<const MeasurementRow*>& rows, const std::string& engine) {
  std::vector<std::string> out;
  for (const auto* r : rows) {
    if (r->engine != engine) continue;
    const std::string o = r->origin.empty() ? std::filesystem::path(r->source).filename().string() : r->origin;
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  }
  return join(out, ", ");
}

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
  s.source = originsOf(rows, engine);
  s.log2_m = log2Axis(ms), s.log2_n = log2Axis(ns), s.log2_k = log2Axis(ks);
  std::vector<double> sum(s.log2_m.size() * s.log2_n.size() * s.log2_k.size(), 0.0);
  std::vector<int> count(sum.size(), 0);
  for (const auto* r : rows) {
    if (r->engine != engine || !onGemmGrid(*r)) continue;
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
  fillMissing(s);
  s.resolve(rates);
  std::vector<double> errors;
  const std::size_t first = out.points.size();
  for (const auto* r : rows) {
    const auto [m, n, k] = shapeOf(*r);
    const bool held_out = r->engine != engine || !onGemmGrid(*r);
    out.points.push_back({hardware, r->engine, "gemm:" + dtype,
                          fmt::format("m={} n={} k={}", r->batch, r->q_len, r->kv_len), r->median_us, s.us(m, n, k),
                          defaultGemmUs(c, hw, rates, *r), held_out});
  }
  for (const auto& e : heldOutErrors(std::span(out.points).subspan(first))) {
    if (e.engine == engine) s.heldout = HeldOutResiduals{e.mape, e.p90, e.points};
  }
  out.gemm.push_back({hardware, engine, std::move(s)});
}

// One regime's line: latency + per_peer · (GPUs − 1) + bytes moved / bandwidth.
struct RegimeLine {
  double latency_us = 0, per_peer_us = 0, gbps = 0;
};

// A regime's call: bytes moved (its share of the message), GPUs beyond the first, measured µs.
struct RegimeCall {
  double moved = 0, peers = 0, us = 0;
};

// The regime's line on relative residuals over its calls; the per-peer latency only when `per_peer`
// (NCCL). nullopt when the line is not physical (too few calls, a non-positive slope); a negative
// latency is held at 0.
std::optional<RegimeLine> regimeLine(const std::vector<RegimeCall>& calls, bool per_peer) {
  if (!per_peer) {
    std::vector<std::pair<double, double>> xy;
    xy.reserve(calls.size());
    for (const auto& c : calls) xy.emplace_back(c.moved, c.us);
    if (xy.size() < 2) return std::nullopt;
    const LineFit f = fitLine(xy, true);
    if (f.slope <= 0) return std::nullopt;
    return RegimeLine{std::max(0.0, f.intercept), 0, 1.0 / (f.slope * 1e3)};
  }
  if (calls.size() < 3) return std::nullopt;
  Eigen::MatrixXd a(static_cast<Eigen::Index>(calls.size()), 3);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(calls.size()));
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = 1.0 / calls[i].us;  // relative residuals
    a(row, 0) = w;
    a(row, 1) = w * calls[i].moved;
    a(row, 2) = w * calls[i].peers;
  }
  const Eigen::Vector3d beta = a.colPivHouseholderQr().solve(y);
  if (beta(1) <= 0) return std::nullopt;
  return RegimeLine{std::max(0.0, beta(0)), std::max(0.0, beta(2)), 1.0 / (beta(1) * 1e3)};
}

struct AllReduceRow {
  double bytes = 0;
  int ranks = 1;
  double us = 0;
};

// The two regimes by alternation: each training call goes to the regime that predicts it faster
// (the engine picks the faster one), each regime's line is refitted on its calls, until no call moves.
// `per_peer`: each regime's latency also grows with the GPUs (NCCL).
AllReduceFit fitRegimes(const std::vector<AllReduceRow>& train, bool per_peer) {
  AllReduceFit f;
  f.one_shot_latency_us = 3, f.one_shot_gbps = 100, f.two_shot_latency_us = 15, f.two_shot_gbps = 400;
  std::vector<char> one(train.size(), 0);
  for (std::size_t i = 0; i < train.size(); ++i) one[i] = train[i].bytes <= 512 * 1024 ? 1 : 0;
  for (int iteration = 0; iteration < 50; ++iteration) {
    std::vector<RegimeCall> a, b;
    for (std::size_t i = 0; i < train.size(); ++i) {
      const double share = (train[i].ranks - 1.0) / train[i].ranks * train[i].bytes;
      (one[i] ? a : b).push_back({one[i] ? share : 2 * share, train[i].ranks - 1.0, train[i].us});
    }
    if (auto line = regimeLine(a, per_peer)) {
      f.one_shot_latency_us = line->latency_us, f.one_shot_per_peer_us = line->per_peer_us;
      f.one_shot_gbps = line->gbps;
    }
    if (auto line = regimeLine(b, per_peer)) {
      f.two_shot_latency_us = line->latency_us, f.two_shot_per_peer_us = line->per_peer_us;
      f.two_shot_gbps = line->gbps;
    }
    bool moved = false;
    for (std::size_t i = 0; i < train.size(); ++i) {
      const double n = train[i].ranks, share = (n - 1) / n * train[i].bytes;
      const char next =
          f.one_shot_latency_us + (n - 1) * f.one_shot_per_peer_us + share / (f.one_shot_gbps * 1e3) <=
                  f.two_shot_latency_us + (n - 1) * f.two_shot_per_peer_us + 2 * share / (f.two_shot_gbps * 1e3)
              ? 1
              : 0;
      moved = moved || next != one[i];
      one[i] = next;
    }
    if (!moved) break;
  }
  return f;
}

bool allReduceHeldOut(const MeasurementRow& r) {
  const auto i =
      static_cast<std::int64_t>(std::lround(std::log2(static_cast<double>(std::max<std::int64_t>(1, r.q_len)))));
  return i % 3 == 1;
}

void fitAllReduce(const Catalog& c, const std::string& hardware, const std::string& engine,
                  const std::vector<const MeasurementRow*>& rows, OperatorCalibration& out) {
  const HardwareProfile& hw = c.hardware(hardware);
  if (!hw.interconnect_link) return;
  std::vector<AllReduceRow> train;
  for (const auto* r : rows) {
    if (!allReduceHeldOut(*r)) train.push_back({r->bytes, static_cast<int>(r->batch), r->median_us});
  }
  AllReduceFit f = fitRegimes(train, engine == kNcclAllReduce);
  f.engine = engine;
  f.source = originsOf(rows, engine);
  f.points = static_cast<int>(train.size());
  InterconnectLink ring = *hw.interconnect_link;
  ring.all_reduces.clear();
  double train_error = 0;
  const std::size_t first = out.points.size();
  for (const auto* r : rows) {
    const int ranks = static_cast<int>(r->batch);
    const double fitted = f.us(r->bytes, ranks);
    if (!allReduceHeldOut(*r)) train_error += std::fabs(fitted / r->median_us - 1);
    out.points.push_back({hardware, engine, "allreduce", fmt::format("bytes={:.0f} gpus={}", r->bytes, ranks),
                          r->median_us, fitted, allReduceUs(ring, r->bytes, ranks), allReduceHeldOut(*r)});
  }
  f.fit_mape = train.empty() ? 0 : train_error / static_cast<double>(train.size());
  for (const auto& e : heldOutErrors(std::span(out.points).subspan(first)))
    f.heldout = HeldOutResiduals{e.mape, e.p90, e.points};
  out.all_reduce.push_back({hardware, std::move(f)});
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
  for (const auto& [key, members] : all_reduce) fitAllReduce(c, key.first, key.second, members, out);
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
    text += fmt::format("    m: {}\n    n: {}\n    k: {}\n    efficiency: [\n", sizes(s.log2_m), sizes(s.log2_n),
                        sizes(s.log2_k));
    const std::size_t nk = s.log2_k.size();
    for (std::size_t i = 0; i < s.log_efficiency.size(); i += nk) {
      std::vector<std::string> row;
      for (std::size_t l = 0; l < nk; ++l) row.push_back(fmt::format("{:.4g}", std::exp(s.log_efficiency[i + l])));
      text += fmt::format("      {}{}\n", fmt::join(row, ", "), i + nk < s.log_efficiency.size() ? "," : "");
    }
    text += fmt::format("    ]\n    points: {}\n    source: \"{}\"\n", s.points, s.source);
    if (s.heldout) text += fmt::format("    heldout: {}\n", heldout(s.heldout));
  }
  bool first = true;
  for (const auto& a : c.all_reduce) {
    if (a.hardware != hardware) continue;
    if (first) text += "allreduce:\n", first = false;
    const AllReduceFit& f = a.fit;
    auto per_peer = [](double us) { return us > 0 ? fmt::format(", latency_per_peer_us: {:.3f}", us) : std::string{}; };
    text += fmt::format(
        "  {}: {{one_shot: {{latency_us: {:.3f}, bandwidth_gbps: {:.1f}{}}}, two_shot: {{latency_us: {:.3f}, "
        "bandwidth_gbps: {:.1f}{}}}, points: {}, fit_mape: {:.4f}{}, source: \"{}\"}}\n",
        f.engine, f.one_shot_latency_us, f.one_shot_gbps, per_peer(f.one_shot_per_peer_us), f.two_shot_latency_us,
        f.two_shot_gbps, per_peer(f.two_shot_per_peer_us), f.points, f.fit_mape,
        f.heldout ? ", heldout: " + heldout(f.heldout) : std::string{}, f.source);
  }
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
