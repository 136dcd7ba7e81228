// `attnsim calibrate` for the fused-MoE call: a fixed time and an efficiency grid over (tokens per
// active expert, weights read, expert intermediate width) per (device, engine, dtype), from `moe` rows.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <tuple>

#include "catalog/Catalog.hpp"
#include "core/Strings.hpp"
#include "cost/AttentionCost.hpp"
#include "cost/StepModel.hpp"
#include "hardware/AxisPosition.hpp"
#include "study/OperatorCalibration.hpp"

namespace attnsim {

namespace {

// The fixed times tried (µs), the smallest training call's 95 % their ceiling: the one whose
// efficiency grid fits the training calls best (mean |relative error|) is kept.
const std::vector<double> kMoeFixedCandidates{0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80};
// Tokens per active expert on the grid: 2^0 … 2^14.
constexpr int kMoeTokensPerExpertNodes = 15;

bool moeHeldOut(const MeasurementRow& r) {
  const std::int64_t shape_class = r.q_len / 64 + 3 * (r.kv_len / 64) + 7 * r.heads + 13 * r.kv_heads;
  const bool tokens = r.batch == 48 || r.batch == 192 || r.batch == 768 || r.batch == 3072 || r.batch == 12288;
  return shape_class % 4 == 0 || tokens;
}

// The kernel with the most rows (ties: the first by name).
std::string mainKernel(const std::vector<const MeasurementRow*>& rows) {
  std::map<std::string, int> count;
  for (const auto* r : rows) ++count[r->impl];
  std::string best;
  int most = 0;
  for (const auto& [impl, n] : count) {
    if (n > most) best = impl, most = n;
  }
  return best;
}

// A call's position on the grid's three axes, log2 of: tokens per active expert, weights read (MiB), inter.
// `call` as the kernel runs it (MoeFit::padded).
std::array<double, 3> moeGridPoint(const MoeFit& f, const MoeCall& call) {
  return {std::log2(std::max(1.0, call.tokensPerExpert())), std::log2(moeWeightMib(f.roofline, call)),
          std::log2(call.gridWidth())};
}

// Each node the hat-weighted mean of log(roofline / (measured − fixed)) of the calls around it; a node
// no call reaches takes its nearest reached node's value (by grid steps).
void fitGrid(MoeFit& f, const std::vector<const MeasurementRow*>& train) {
  const std::array<const std::vector<double>*, 3> axes{&f.log2_tokens_per_expert, &f.log2_weights_mib, &f.log2_inter};
  const std::size_t nt = axes[0]->size(), nw = axes[1]->size(), ni = axes[2]->size();
  std::vector<double> sum(nt * nw * ni, 0.0), weight(nt * nw * ni, 0.0);
  for (const auto* r : train) {
    const MoeCall call = f.padded(moeCallOf(*r));
    // The grid's efficiency is the call's without its token-tile factor (MoeFit::us).
    const double y = std::log(moeRooflineUs(f.roofline, call) / (r->median_us - f.fixed_us)) + f.tileLogFactor(call);
    const auto x = moeGridPoint(f, call);
    std::array<AxisPosition, 3> at{};
    std::array<std::size_t, 3> up{};
    for (std::size_t d = 0; d < 3; ++d) {
      at[d] = positionOn(*axes[d], x[d]);
      up[d] = std::min(at[d].lo + 1, axes[d]->size() - 1);
    }
    for (int corner = 0; corner < 8; ++corner) {
      double w = 1;
      std::array<std::size_t, 3> node{};
      for (std::size_t d = 0; d < 3; ++d) {
        const bool high = (corner >> d) & 1;
        w *= high ? at[d].t : 1 - at[d].t;
        node[d] = high ? up[d] : at[d].lo;
      }
      sum[f.index(node[0], node[1], node[2])] += w * y;
      weight[f.index(node[0], node[1], node[2])] += w;
    }
  }
  std::vector<std::size_t> reached;
  for (std::size_t j = 0; j < weight.size(); ++j) {
    if (weight[j] > 1e-9) reached.push_back(j);
  }
  auto steps = [&](std::size_t a, std::size_t b) {
    const auto d = [](std::size_t u, std::size_t v) { return u > v ? u - v : v - u; };
    return d(a / (nw * ni), b / (nw * ni)) + d(a / ni % nw, b / ni % nw) + d(a % ni, b % ni);
  };
  f.log_efficiency.assign(sum.size(), 0.0);
  for (std::size_t i = 0; i < sum.size(); ++i) {
    std::size_t best = i;
    if (weight[i] <= 1e-9) {
      std::size_t distance = nt + nw + ni;
      for (std::size_t j : reached) {
        if (steps(i, j) < distance) best = j, distance = steps(i, j);
      }
    }
    f.log_efficiency[i] = sum[best] / weight[best];
  }
}

// Each tile's exponent: the least-squares slope, through the origin, of log((measured − fixed) / (grid − fixed))
// on the log shortfall of the training calls of that tile (moeTileFill); 0 where they hardly fall short.
void fitTileFactors(MoeFit& f, const std::vector<const MeasurementRow*>& train) {
  std::vector<double> xy(f.token_tiles.size(), 0.0), xx(f.token_tiles.size(), 0.0);
  for (const auto* r : train) {
    const MoeCall call = moeCallOf(*r);
    const MoeTileFill fill = moeTileFill(f.token_tiles, call);
    const double grid = f.gridUs(call) - f.fixed_us;
    if (fill.log_shortfall <= 1e-9 || grid <= 0) continue;
    xy[fill.tile] += fill.log_shortfall * std::log((r->median_us - f.fixed_us) / grid);
    xx[fill.tile] += fill.log_shortfall * fill.log_shortfall;
  }
  for (std::size_t i = 0; i < xy.size(); ++i) f.tile_fill_exponent[i] = xx[i] > 0.05 ? xy[i] / xx[i] : 0.0;
}

// The grid and the tile exponents, each fitted with the other's last values (three rounds).
void fitGridAndTiles(MoeFit& f, const std::vector<const MeasurementRow*>& train) {
  f.tile_fill_exponent.assign(f.token_tiles.size(), 0.0);
  fitGrid(f, train);
  for (int round = 0; round < 3 && !f.token_tiles.empty(); ++round) {
    fitTileFactors(f, train);
    fitGrid(f, train);
  }
}

double trainingError(const MoeFit& f, const std::vector<const MeasurementRow*>& train) {
  double sum = 0;
  for (const auto* r : train) sum += std::fabs(f.us(moeCallOf(*r)) / r->median_us - 1);
  return sum / static_cast<double>(train.size());
}

// The step model's routed experts for the row without a fit (its default before calibration).
double defaultMoeUs(const Catalog& c, const HardwareProfile& hw, const MeasurementRow& r) {
  LinearKernels k;
  k.grouped_gemm = resolveKernel(c.kernel("grouped-gemm"), hw);
  k.elementwise = resolveKernel(c.kernel("elementwise"), hw);
  k.device = resolveDevice(hw, DType::BF16);
  k.device_weights = k.device;
  k.device_weights.tensor_flops_per_us = hw.gemmRoofline(r.dtype).flops_per_us;
  const double wb = r.dtype == "bf16" ? 2.0 : r.dtype == "nvfp4" ? 4.5 / 8 : r.dtype == "mxfp4" ? 4.25 / 8 : 1.0;
  const auto tokens = static_cast<double>(r.batch);
  return routedExpertsDefault(k, {tokens, tokens, static_cast<double>(r.q_len), static_cast<double>(r.kv_len),
                                  static_cast<double>(r.heads), static_cast<double>(r.kv_heads), 2.0, wb})
      .sum();
}

std::vector<double> powerOfTwoAxis(double lo, double hi) {
  std::vector<double> axis;
  for (double v = std::floor(std::log2(lo)); v <= std::ceil(std::log2(hi)); v += 1) axis.push_back(v);
  if (axis.size() < 2) axis.push_back(axis.back() + 1);
  return axis;
}

}  // namespace

void calibrateMoe(const Catalog& c, const std::vector<const MeasurementRow*>& rows, const std::string& hardware,
                  const std::string& engine, const std::string& dtype, OperatorCalibration& out) {
  const HardwareProfile& hw = c.hardware(hardware);
  MoeFit f;
  f.engine = engine, f.dtype = dtype, f.kernel = mainKernel(rows);
  f.roofline = hw.gemmRoofline(dtype);
  f.pad_to = c.kernel("grouped-gemm").weightPaddingOf(engine, dtype, hw.architecture);
  for (int tile : c.kernel("grouped-gemm").tokenTilesOf(engine, dtype, hw.architecture)) f.token_tiles.push_back(tile);
  std::vector<const MeasurementRow*> kept, train;
  for (const auto* r : rows) {
    if (r->impl != f.kernel) continue;
    kept.push_back(r);
    if (!moeHeldOut(*r)) train.push_back(r);
  }
  if (f.roofline.flops_per_us <= 0 || train.size() < 20) {
    out.not_fitted.push_back(fmt::format("{} moe {} {}: {} training calls of {} (a fit needs 20 and a peak for {})",
                                         hardware, engine, dtype, train.size(), f.kernel, dtype));
    return;
  }
  double min_inter = 1e18, max_inter = 0, min_mib = 1e18, max_mib = 0, min_us = 1e18;
  for (const auto* r : train) {
    const MoeCall call = f.padded(moeCallOf(*r));
    min_inter = std::min(min_inter, call.gridWidth());
    max_inter = std::max(max_inter, call.gridWidth());
    min_mib = std::min(min_mib, moeWeightMib(f.roofline, call));
    max_mib = std::max(max_mib, moeWeightMib(f.roofline, call));
    min_us = std::min(min_us, r->median_us);
  }
  f.log2_inter = powerOfTwoAxis(min_inter, max_inter);
  f.log2_weights_mib = powerOfTwoAxis(std::max(min_mib, 1.0 / 1024), max_mib);
  for (int i = 0; i < kMoeTokensPerExpertNodes; ++i) f.log2_tokens_per_expert.push_back(i);
  MoeFit best;
  double best_error = 1e18;
  for (double fixed : kMoeFixedCandidates) {
    if (fixed >= 0.95 * min_us) break;
    f.fixed_us = fixed;
    fitGridAndTiles(f, train);
    const double error = trainingError(f, train);
    if (error < best_error) best = f, best_error = error;
  }
  best.points = static_cast<int>(train.size());
  std::vector<std::string> origins;
  for (const auto* r : kept) {
    if (std::find(origins.begin(), origins.end(), r->origin) == origins.end()) origins.push_back(r->origin);
  }
  best.source = join(origins, ", ");
  const std::size_t first = out.points.size();
  for (const auto* r : kept) {
    out.points.push_back({hardware, engine, "moe:" + dtype,
                          fmt::format("tokens={} hidden={} inter={} experts={} topk={}", r->batch, r->q_len, r->kv_len,
                                      r->heads, r->kv_heads),
                          r->median_us, best.us(moeCallOf(*r)), defaultMoeUs(c, hw, *r), moeHeldOut(*r)});
  }
  for (const auto& e : heldOutErrors(std::span(out.points).subspan(first)))
    best.heldout = HeldOutResiduals{e.mape, e.p90, e.points};
  out.moe.push_back({hardware, std::move(best)});
}

std::string moeCalibrationYaml(const OperatorCalibration& c, const std::string& hardware) {
  std::string text;
  std::string engine;
  for (const auto& m : c.moe) {
    if (m.hardware != hardware) continue;
    const MoeFit& f = m.fit;
    if (text.empty()) text = "# moe: attnsim calibrate --only moe (docs/MEASUREMENTS.md)\nmoe:\n";
    if (f.engine != engine) text += fmt::format("  {}:\n", f.engine), engine = f.engine;
    auto sizes = [](const std::vector<double>& log2) {
      std::vector<std::string> v;
      v.reserve(log2.size());
      for (double x : log2) v.push_back(fmt::format("{:.6g}", std::exp2(x)));
      return fmt::format("[{}]", fmt::join(v, ", "));
    };
    text += fmt::format(
        "    {}:  # efficiency = roofline / (measured - fixed_us), [tokens_per_expert][weights_mib][inter]\n"
        "      kernel: {}\n{}      fixed_us: {}\n      tokens_per_expert: {}\n      weights_mib: {}\n      inter: {}\n"
        "      efficiency: |\n",
        f.dtype, f.kernel, f.pad_to > 1 ? fmt::format("      pad_to: {}\n", f.pad_to) : std::string(), f.fixed_us,
        sizes(f.log2_tokens_per_expert), sizes(f.log2_weights_mib), sizes(f.log2_inter));
    const std::size_t ni = f.log2_inter.size();
    for (std::size_t i = 0; i < f.log_efficiency.size(); i += ni) {
      std::vector<std::string> row;
      row.reserve(ni);
      for (std::size_t l = 0; l < ni; ++l) row.push_back(fmt::format("{:.4g}", std::exp(f.log_efficiency[i + l])));
      text += fmt::format("        {}\n", fmt::join(row, " "));  // a block of text: YamlReader::getNumbers
    }
    if (!f.token_tiles.empty()) {
      std::vector<std::string> tiles, exponents;
      tiles.reserve(f.token_tiles.size());
      exponents.reserve(f.token_tiles.size());
      for (std::size_t i = 0; i < f.token_tiles.size(); ++i) {
        tiles.push_back(fmt::format("{:.6g}", f.token_tiles[i]));
        exponents.push_back(fmt::format("{:.4g}", f.tile_fill_exponent[i]));
      }
      text += fmt::format(
          "      token_tiles: [{}]  # the time beyond fixed_us x (next power of two / tokens per expert)^exponent\n"
          "      tile_fill_exponent: [{}]  # of the call's own tile (moeTileFill)\n",
          fmt::join(tiles, ", "), fmt::join(exponents, ", "));
    }
    text += fmt::format("      points: {}\n      source: \"{}\"\n", f.points, f.source);
    if (f.heldout) {
      text += fmt::format("      heldout: {{mape: {:.4f}, p90_abs_rel_error: {:.4f}, points: {}}}\n", f.heldout->mape,
                          f.heldout->p90_abs_rel_error, f.heldout->points);
    }
  }
  return text;
}

// The held-out errors of the operator fits (GEMM, all-reduce, MoE): here to keep OperatorCalibration.cpp short.
std::vector<OperatorErrors> heldOutErrors(std::span<const OperatorPoint> points) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const OperatorPoint*>> groups;
  for (const auto& p : points) {
    if (p.held_out) groups[{p.hardware, p.engine, p.op}].push_back(&p);
  }
  std::vector<OperatorErrors> out;
  for (const auto& [key, members] : groups) {
    OperatorErrors e;
    std::tie(e.hardware, e.engine, e.op) = key;
    std::vector<double> errors;
    double worst = -1, default_sum = 0;
    for (const auto* p : members) {
      const double error = std::fabs(p->fitted_us / p->measured_us - 1);
      errors.push_back(error);
      default_sum += std::fabs(p->default_us / p->measured_us - 1);
      if (error > worst) worst = error, e.worst = *p;
    }
    std::sort(errors.begin(), errors.end());
    e.points = static_cast<int>(errors.size());
    double sum = 0;
    for (double x : errors) sum += x;
    e.mape = sum / e.points;
    e.default_mape = default_sum / e.points;
    e.p90 = errors[std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(0.9 * e.points))) - 1];
    out.push_back(std::move(e));
  }
  return out;
}

MoeCall moeCallOf(const MeasurementRow& r) {
  return {static_cast<double>(r.batch),
          static_cast<double>(r.q_len),
          static_cast<double>(r.kv_len),
          static_cast<double>(r.heads),
          static_cast<double>(r.batch * r.kv_heads),
          r.active_experts > 0 ? static_cast<double>(r.active_experts) : -1.0,
          r.expert_matrices > 0 ? static_cast<double>(r.expert_matrices) : 3.0};
}

}  // namespace attnsim
