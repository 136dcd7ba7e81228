#include "study/Calibration.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"
#include "cost/StepModel.hpp"
#include "hardware/HardwareProfile.hpp"
#include "study/AttentionSurfaceFit.hpp"

namespace attnsim {

void applyStudyCalibrations(Catalog& catalog, const Store& store) {
  for (const auto& r : store.latestCalibrations()) {
    KernelEfficiency e;
    e.compute_efficiency = r.compute_efficiency;
    e.memory_efficiency = r.memory_efficiency;
    e.fixed_us = r.fixed_us;
    e.key_ns = r.key_ns;
    e.provenance = Provenance::Measured;
    e.fit_mape = r.fit_mape;
    if (r.heldout_p90_abs_rel_error && r.heldout_points) {
      e.heldout = HeldOutResiduals{r.heldout_mape.value_or(0), *r.heldout_p90_abs_rel_error, *r.heldout_points};
    }
    e.source = fmt::format("calibrated on {} points (fit MAPE {:.1f}%) on {}: {}", r.points, 100 * r.fit_mape,
                           r.created, r.source);
    catalog.applyCalibration(r.hardware, r.kernel, r.phase, e);
  }
}

namespace {

constexpr double kMinEfficiency = 0.01;
constexpr double kMaxEfficiency = 1.0;
constexpr double kMinFixed = 0.1;
constexpr double kMaxFixed = 20000.0;

constexpr double kMaxKeyNs = 200.0;
constexpr int kMlaRopeWidth = 64;  // DeepSeek-V3's qk_rope_head_dim: the latent's last 64 are keys only

// The fit's coordinates: logs of the efficiencies and the fixed time (positive by construction),
// and the per-key time itself (which may be zero).
FitParams fromTheta(const Eigen::Vector4d& theta) {
  return {std::clamp(std::exp(theta(0)), kMinEfficiency, kMaxEfficiency),
          std::clamp(std::exp(theta(1)), kMinEfficiency, kMaxEfficiency),
          std::clamp(std::exp(theta(2)), kMinFixed, kMaxFixed), std::clamp(theta(3), 0.0, kMaxKeyNs)};
}

Eigen::Vector4d toTheta(const FitParams& p) {
  return {std::log(p.compute_efficiency), std::log(p.memory_efficiency), std::log(p.fixed_us), p.key_ns};
}

Eigen::VectorXd residuals(const std::vector<FitPoint>& points, const KernelModel& base, const DeviceModel& device,
                          const FitParams& params) {
  Eigen::VectorXd r(static_cast<Eigen::Index>(points.size()));
  for (std::size_t i = 0; i < points.size(); ++i) {
    r(static_cast<Eigen::Index>(i)) = std::log(predictPoint(points[i], base, device, params) / points[i].measured_us);
  }
  return r;
}

}  // namespace

double predictPoint(const FitPoint& p, const KernelModel& base, const DeviceModel& device, const FitParams& params) {
  KernelModel k = base;
  DeviceModel d = device;
  d.tensor_flops_per_us *= p.math_peak_scale;
  k.compute_efficiency = params.compute_efficiency;
  k.memory_efficiency = params.memory_efficiency;
  k.fixed_us = params.fixed_us;
  k.key_us = params.key_ns / 1000.0;
  const std::array<RequestGroup, 2> groups{p.group, p.decodes};
  const std::size_t count = p.decodes.count > 0 ? 2 : 1;
  if (p.page_size == 0) {
    k.paged_native = false;
    k.paged_emulated = false;
  } else {
    // The harness's pool: the batch's pages.
    k.kv_pool_tokens = static_cast<double>(p.group.count * p.group.context + p.decodes.count * p.decodes.context);
  }
  const auto groups_span = std::span(groups.data(), count);
  const std::int64_t page = std::max<std::int64_t>(1, p.page_size);
  AttentionCost cost = predictAttention(p.shape, k, d, p.phase, groups_span, page);
  if (p.l2_warm && d.l2_bytes_per_us > 0 && cost.bytes <= d.l2_bytes) {
    d.bytes_per_us = d.l2_bytes_per_us;
    cost = predictAttention(p.shape, k, d, p.phase, groups_span, page);
  }
  return cost.time_us + p.outsideUs();
}

FitResult fitKernel(const std::vector<FitPoint>& points, const KernelModel& base, const DeviceModel& device,
                    FitParams start) {
  FitResult result;
  result.points = static_cast<int>(points.size());
  std::vector<std::int64_t> contexts;
  for (const auto& p : points) {
    if (std::find(contexts.begin(), contexts.end(), p.group.context) == contexts.end())
      contexts.push_back(p.group.context);
  }
  const int free_parameters = contexts.size() >= 3 ? 4 : 3;
  Eigen::Vector4d theta = toTheta(start);
  Eigen::VectorXd r = residuals(points, base, device, fromTheta(theta));
  double cost = r.squaredNorm();
  double lambda = 1e-3;
  for (int it = 0; it < 100; ++it) {
    result.iterations = it + 1;
    // Forward-difference Jacobian in log-parameter space.
    Eigen::MatrixXd J(r.size(), 4);
    J.setZero();
    for (int j = 0; j < free_parameters; ++j) {
      Eigen::Vector4d t = theta;
      const double h = j == 3 ? 1e-3 : 1e-5;
      t(j) += h;
      J.col(j) = (residuals(points, base, device, fromTheta(t)) - r) / h;
    }
    const Eigen::Matrix4d JtJ = J.transpose() * J;
    const Eigen::Vector4d g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      Eigen::Matrix4d A = JtJ;
      A.diagonal() += lambda * (JtJ.diagonal().array() + 1e-12).matrix();
      const Eigen::Vector4d step = A.ldlt().solve(-g);
      Eigen::Vector4d candidate = theta + step;
      candidate = toTheta(fromTheta(candidate));  // respect the bounds
      const Eigen::VectorXd rc = residuals(points, base, device, fromTheta(candidate));
      const double c = rc.squaredNorm();
      if (c < cost) {
        const double gain = cost - c;
        theta = candidate;
        r = rc;
        cost = c;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
        if (gain < 1e-14 * (1 + cost)) it = 1000;  // converged
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  result.params = fromTheta(theta);
  result.mape = meanAbsolutePercentageError(points, base, device, result.params);
  return result;
}

double meanAbsolutePercentageError(const std::vector<FitPoint>& points, const KernelModel& base,
                                   const DeviceModel& device, const FitParams& params) {
  if (points.empty()) return 0;
  double sum = 0;
  for (const auto& p : points) sum += std::fabs(predictPoint(p, base, device, params) - p.measured_us) / p.measured_us;
  return sum / static_cast<double>(points.size());
}

FitPoint fitPointFrom(const MeasurementRow& row, const KernelModel* kernel) {
  FitPoint p;
  p.row = &row;
  p.measured_us = row.median_us;
  p.phase = phaseOf(row);
  p.shape.num_heads = static_cast<int>(row.heads);
  p.shape.num_kv_heads = static_cast<int>(row.kv_heads);
  p.shape.d_qk = static_cast<int>(row.head_dim);
  p.shape.d_v = static_cast<int>(row.head_dim);
  p.shape.kv_token_width = 2 * p.shape.d_qk;
  if (kernel != nullptr && kernel->family != nullptr && kernel->family->algorithm == "mla_absorbed") {
    p.shape.d_v = p.shape.d_qk - kMlaRopeWidth;
    p.shape.kv_token_width = p.shape.d_qk;  // one latent vector serves as key and value
  }
  p.shape.causal = true;  // decode rows see every key, as a causal last row does
  p.shape.act_bytes = row.dtype == "fp32" ? 4 : 2;
  p.shape.kv_elem_bytes = p.shape.act_bytes;
  if (row.dtype.starts_with("fp8")) {
    p.shape.kv_elem_bytes = 1;
    p.shape.kv_quantized = true;
  }
  p.group = {row.batch, row.q_len, row.kv_len, 1};
  if (row.phase == "mixed") {
    // One fresh prefill chunk of q_len tokens and batch - 1 decodes over kv_len (the harness's layout).
    p.group = {1, row.q_len, row.q_len, 1};
    p.decodes = {row.batch - 1, 1, row.kv_len, 1};
  }
  p.page_size = row.page_size;
  p.shape.window = row.window;
  p.l2_warm = row.l2_warm;
  return p;
}

FitPoint fitPointFrom(const MeasurementRow& row, const KernelModel& kernel, const Catalog& catalog) {
  FitPoint p = fitPointFrom(row, &kernel);
  const HardwareProfile& hw = catalog.hardware(row.hardware);
  if (row.q_dtype.starts_with("fp8") && hw.peak.fp8_tflops && hw.peak.bf16_tflops) {
    p.math_peak_scale = *hw.peak.fp8_tflops / *hw.peak.bf16_tflops;
  }
  if (row.kv_write) {
    const KernelModel write = resolveKernel(catalog.kernel("kv-cache-write"), hw);
    const DeviceModel device = resolveDevice(hw, DType::BF16);
    const auto tokens = static_cast<double>(p.group.count * p.group.q_len + p.decodes.count * p.decodes.q_len);
    const double kv_heads = p.shape.num_kv_heads;
    const double elements = kv_heads * p.shape.kv_token_width;
    // K and V (d_qk + d_v wide) pass together through one token's CTA; an MLA latent row is one tensor.
    const bool mha = p.shape.kv_token_width == p.shape.d_qk + p.shape.d_v;
    const double loop = mha ? kv_heads * std::max(p.shape.d_qk, p.shape.d_v) : elements;
    p.kv_write_us = kvWriteUs(write, device, row.engine, tokens, loop,
                              kvWriteBytes(tokens, elements, p.shape.act_bytes, p.shape.kv_elem_bytes));
  }
  const KernelFamily* family = kernel.family;
  if (family != nullptr && p.shape.kv_quantized && row.dtype == "fp8_e4m3" &&
      std::find(family->query_quant.measured_as.begin(), family->query_quant.measured_as.end(), row.impl) !=
          family->query_quant.measured_as.end()) {
    const auto tokens = static_cast<double>(p.group.count * p.group.q_len + p.decodes.count * p.decodes.q_len);
    p.q_quant_us = queryQuantUs(family->query_quant, resolveKernel(catalog.kernel("elementwise"), hw),
                                resolveDevice(hw, DType::BF16), tokens * p.shape.num_heads * p.shape.d_qk);
  }
  return p;
}

KernelModel measuredKernelModel(const Catalog& catalog, const std::string& kernel, const std::string& hardware,
                                Phase phase) {
  return resolveKernel(catalog.kernel(kernel), catalog.hardware(hardware), phase);
}

Phase phaseOf(const MeasurementRow& row) {
  if (row.phase == "prefill") return Phase::Prefill;
  if (row.phase == "extend" || row.phase == "mixed") return Phase::Extend;
  if (row.phase == "verify") return Phase::Verify;
  return Phase::Decode;
}

std::string phaseClassOf(const MeasurementRow& row) { return calibrationClass(phaseOf(row)); }

Phase phaseOfClass(const std::string& phase_class) {
  if (phase_class == "decode") return Phase::Decode;
  if (phase_class == "extend") return Phase::Extend;
  return Phase::Prefill;
}

LineFit fitLine(const std::vector<std::pair<double, double>>& xy, bool relative) {
  LineFit f;
  f.points = static_cast<int>(xy.size());
  if (xy.size() < 2) return f;
  Eigen::MatrixXd a(static_cast<Eigen::Index>(xy.size()), 2);
  Eigen::VectorXd y(static_cast<Eigen::Index>(xy.size()));
  for (std::size_t i = 0; i < xy.size(); ++i) {
    // Relative residuals (each row divided by its y): graphs of 10 and of 3,000 nodes count alike,
    // so the intercept is not lost in the large ones' absolute scatter.
    const double w = relative && xy[i].second > 0 ? 1.0 / xy[i].second : 1.0;
    a(static_cast<Eigen::Index>(i), 0) = w;
    a(static_cast<Eigen::Index>(i), 1) = w * xy[i].first;
    y(static_cast<Eigen::Index>(i)) = w * xy[i].second;
  }
  const Eigen::Vector2d beta = a.colPivHouseholderQr().solve(y);
  f.intercept = beta(0);
  f.slope = beta(1);
  return f;
}

std::vector<OverheadFit> fitOverheads(const std::vector<MeasurementRow>& rows) {
  std::map<std::string, std::pair<std::vector<std::pair<double, double>>, std::vector<std::pair<double, double>>>>
      by_hw;
  std::map<std::string, std::vector<double>> node_gaps;
  for (const auto& r : rows) {
    const auto n = static_cast<double>(r.batch);
    if (r.kind == "launch") by_hw[r.hardware].first.emplace_back(n, r.median_us);
    if (r.kind == "graph_launch") by_hw[r.hardware].second.emplace_back(n, r.median_us);
    if (r.kind == "graph_node") node_gaps[r.hardware].push_back(r.median_us);
  }
  std::vector<OverheadFit> out;
  for (const auto& [hw, series] : by_hw) {
    if (series.first.size() < 2 || series.second.size() < 2) continue;
    const LineFit eager = fitLine(series.first, true);
    const LineFit graph = fitLine(series.second, true);
    OverheadFit f{hw, eager.slope, 0.0, std::max(0.0, graph.intercept), graph.slope, 0.0, eager.points + graph.points};
    if (const auto it = node_gaps.find(hw); it != node_gaps.end()) {
      auto gaps = it->second;
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
      f.graph_node_us = gaps[gaps.size() / 2];
      f.points += static_cast<int>(gaps.size());
    }
    out.push_back(f);
  }
  return out;
}

HoldoutRule::HoldoutRule(const std::vector<MeasurementRow>& rows, std::vector<std::int64_t> contexts)
    : contexts_(std::move(contexts)), dense_(std::make_shared<const DenseSlices>(rows, contexts_)) {
  for (const auto& r : rows) {
    if (r.kind != "attention" || r.page_size > 0) continue;
    std::pair<std::string, std::string> key{r.hardware, r.kernel};
    if (std::find(contiguous_.begin(), contiguous_.end(), key) == contiguous_.end()) contiguous_.push_back(key);
  }
}

bool HoldoutRule::heldOut(const MeasurementRow& row) const {
  if (row.phase == "mixed") return true;
  if (row.page_size > 0 &&
      std::find(contiguous_.begin(), contiguous_.end(),
                std::pair<std::string, std::string>{row.hardware, row.kernel}) != contiguous_.end())
    return true;
  return std::find(contexts_.begin(), contexts_.end(), row.kv_len) != contexts_.end() || otherShape(row);
}

bool HoldoutRule::otherShape(const MeasurementRow& row) const { return dense_->otherShape(row); }

}  // namespace attnsim
