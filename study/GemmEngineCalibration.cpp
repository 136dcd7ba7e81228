#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/DeepGemmPick.hpp"
#include "hardware/HardwareProfile.hpp"
#include "study/OperatorCalibration.hpp"

// What another engine's timed GEMM call adds to the fitted kernel surface (GemmEngineTiming).
namespace attnsim {

namespace {

// One training call: its rows of A, its elements of A (M · K), the surface's kernel time and the engine's
// measured time.
struct EngineGemmCall {
  double m = 0, elements = 0, kernel_us = 0, measured_us = 0;
};

// 0 and `count` values spread over the sorted `v` from its least to its largest (v not empty).
std::vector<double> spreadOf(std::vector<double> v, std::size_t count) {
  std::sort(v.begin(), v.end());
  std::vector<double> out{0.0};
  out.reserve(count + 1);
  for (std::size_t i = 0; i < count; ++i) out.push_back(v[i * (v.size() - 1) / (count - 1)]);
  return out;
}

// A class's floor, fixed, per-row and per-element added times, and the kernel's scale.
struct EngineGemmTerms {
  double floor = 0, extra = 0, per_row = 0, scale = 1, per_element = 0;
};

// The kernel scales tried: from 0.6 to 1.5 of the surface's time.
constexpr std::array<double, 8> kKernelScales{0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5};

double sumRelativeError(const std::vector<EngineGemmCall>& calls, const EngineGemmTerms& t) {
  double sum = 0;
  for (const auto& c : calls) {
    const double added = t.extra + t.per_row * c.m + t.per_element * c.elements;
    sum += std::fabs(std::max(t.floor, t.scale * c.kernel_us + added) / c.measured_us - 1);
  }
  return sum;
}

// The terms of one class that make its calls' summed relative error least, over a spread of
// candidates: floors from the measured times, added times from measured − kernel (whole, and per row);
// the per-element time is `per_elements`' candidates (from measured − kernel per element of A, or one
// value fixed by the caller).
EngineGemmTerms fitTerms(const std::vector<EngineGemmCall>& calls, const std::vector<double>& per_elements) {
  std::vector<double> measured, above, above_per_row;
  measured.reserve(calls.size());
  above.reserve(calls.size());
  above_per_row.reserve(calls.size());
  for (const auto& c : calls) {
    measured.push_back(c.measured_us);
    above.push_back(std::max(0.0, c.measured_us - c.kernel_us));
    above_per_row.push_back(above.back() / c.m);
  }
  EngineGemmTerms best;
  double least = sumRelativeError(calls, best);
  const std::vector<double> floors = spreadOf(measured, 16), extras = spreadOf(above, 16);
  const std::vector<double> per_rows = spreadOf(above_per_row, 12);
  for (double per_element : per_elements) {
    for (double floor : floors) {
      for (double extra : extras) {
        for (double per_row : per_rows) {
          for (double scale : kKernelScales) {
            const EngineGemmTerms t{floor, extra, per_row, scale, per_element};
            const double e = sumRelativeError(calls, t);
            if (e < least) least = e, best = t;
          }
        }
      }
    }
  }
  return best;
}

// The per-element candidates of a pooled fit: none (0) but for per-tensor FP8, whose activation
// quantization streams all of A twice (GemmEngineTiming::per_element_us).
std::vector<double> perElementCandidates(const std::vector<EngineGemmCall>& calls, bool per_tensor_fp8) {
  if (!per_tensor_fp8) return {0.0};
  std::vector<double> above_per_element;
  above_per_element.reserve(calls.size());
  for (const auto& c : calls) above_per_element.push_back(std::max(0.0, c.measured_us - c.kernel_us) / c.elements);
  return spreadOf(above_per_element, 8);
}

}  // namespace

bool gemmEngineRowHeldOut(const MeasurementRow& r) { return (r.batch + r.q_len / 32 + r.kv_len / 32) % 3 == 0; }

GemmEngineTiming fitGemmEngineTiming(const GemmSurface& s, const std::string& engine,
                                     const std::vector<const MeasurementRow*>& rows) {
  std::vector<std::vector<EngineGemmCall>> by_class(kGemmShapeClasses);
  std::vector<EngineGemmCall> all;
  GemmEngineTiming t;
  t.engine = engine;
  t.per_tensor_fp8 = s.dtype == "fp8";
  for (const auto* r : rows) {
    if (r->engine != engine || gemmEngineRowHeldOut(*r)) continue;
    const auto m = static_cast<double>(r->batch), n = static_cast<double>(r->q_len);
    const auto k = static_cast<double>(r->kv_len);
    const EngineGemmCall call{m, m * k, s.kernelUs(engine, m, n, k), r->median_us};
    by_class[t.shapeClass(m, n, k)].push_back(call);
    all.push_back(call);
    ++t.points;
  }
  if (all.empty()) return t;
  const EngineGemmTerms pooled = fitTerms(all, perElementCandidates(all, t.per_tensor_fp8));
  // One per-element time for every class (the quantization pass does not change with the GEMM's config).
  t.per_element_us = pooled.per_element;
  // The classes are where vLLM's FP8 dispatch changes path: block-FP8's DeepGEMM, FlashInfer and CUTLASS
  // (gemmShapeClass), per-tensor FP8's CUTLASS configs by M (gemmPerTensorFp8Class). bf16 (F.linear) and nvfp4
  // (FlashInfer's CuTe-DSL kernel) take one path at every shape (collector/vllm/collect_gemm.py's kernel_source), so
  // their classes share the fit over every call: split, a class's floor followed the training calls of that class alone
  // (nvfp4 M >= 32 off 4: 8.8 µs where the others' are 7.0-7.2, and the held-out small calls of that class
  // take 6.8-7.0).
  const bool classes = s.dtype == "fp8_block" || s.dtype == "fp8";
  for (std::size_t c = 0; c < kGemmShapeClasses; ++c) {
    // A class with too few calls of its own takes the fit over every class's calls.
    const EngineGemmTerms fit =
        classes && by_class[c].size() >= 3 ? fitTerms(by_class[c], {pooled.per_element}) : pooled;
    t.floor_us[c] = fit.floor;
    t.extra_us[c] = fit.extra;
    t.per_row_us[c] = fit.per_row;
    t.kernel_scale[c] = fit.scale;
  }
  return t;
}

std::string gemmEngineTimingsYaml(const GemmSurface& s) {
  if (s.engines.empty()) return {};
  std::string text =
      "    engines:  # other engines' timed calls: max(floor_us, kernel_scale · kernel + extra_us + per_row_us · M) "
      "per class, + per_element_us · M · K where given\n";
  for (const auto& e : s.engines) {
    text += fmt::format(
        "      {}: {{floor_us: [{:.2f}], extra_us: [{:.2f}], per_row_us: [{:.3g}], kernel_scale: [{:.2f}], points: {}",
        e.engine, fmt::join(e.floor_us, ", "), fmt::join(e.extra_us, ", "), fmt::join(e.per_row_us, ", "),
        fmt::join(e.kernel_scale, ", "), e.points);
    if (e.per_element_us > 0) text += fmt::format(", per_element_us: {:.4g}", e.per_element_us);
    if (e.heldout) {
      text += fmt::format(", heldout: {{mape: {:.4f}, p90_abs_rel_error: {:.4f}, points: {}}}", e.heldout->mape,
                          e.heldout->p90_abs_rel_error, e.heldout->points);
    }
    text += "}\n";
  }
  return text;
}

int gemmSingleWaveSms(const HardwareProfile& hw, const std::string& dtype) {
  return hw.architecture == "hopper" && dtype == "fp8_block" ? hw.compute_units : 0;
}

bool gemmSingleWaveRow(const MeasurementRow& r, int sms) {
  return sms > 0 &&
         deepGemmSingleWaveDeepTile(deepGemmSm90Tiles(static_cast<double>(r.batch), static_cast<double>(r.q_len),
                                                      static_cast<double>(r.kv_len), sms));
}

namespace {

// fixed + per_k_block · x by least squares of the relative error over (x, measured) pairs.
std::optional<GemmSingleWave> singleWaveLeastSquares(const std::vector<std::array<double, 2>>& calls) {
  if (calls.size() < 4) return std::nullopt;
  double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
  for (const auto& [x, t] : calls) {
    const double w = 1 / (t * t);
    s0 += w, s1 += w * x, s2 += w * x * x, t0 += w * t, t1 += w * x * t;
  }
  const double det = s0 * s2 - s1 * s1;
  if (det <= 0) return std::nullopt;
  GemmSingleWave f;
  f.fixed_us = std::max(0.0, (s2 * t0 - s1 * t1) / det);
  f.per_k_block_us = std::max(0.0, (s0 * t1 - s1 * t0) / det);
  f.points = static_cast<int>(calls.size());
  return f;
}

}  // namespace

std::optional<GemmSingleWave> fitGemmSingleWave(const GemmSurface& s, const std::vector<const MeasurementRow*>& rows,
                                                const std::string& engine, int sms) {
  std::vector<const MeasurementRow*> members;
  for (const auto* r : rows) {
    const bool grid = std::has_single_bit(static_cast<std::uint64_t>(r->batch)) &&
                      std::has_single_bit(static_cast<std::uint64_t>(r->q_len)) &&
                      std::has_single_bit(static_cast<std::uint64_t>(r->kv_len));
    if (r->engine == engine && grid && gemmSingleWaveRow(*r, sms)) members.push_back(r);
  }
  std::optional<GemmSingleWave> fit;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::array<double, 2>> calls;
    calls.reserve(members.size());
    for (const auto* r : members) {
      const auto k = static_cast<double>(r->kv_len);
      const double surface = s.surfaceUs(static_cast<double>(r->batch), static_cast<double>(r->q_len), k);
      if (fit && surface >= fit->us(k)) continue;
      calls.push_back({std::ceil(k / 128), r->median_us});
    }
    if (auto next = singleWaveLeastSquares(calls)) fit = next;
  }
  if (fit) fit->engine = engine;
  return fit;
}

}  // namespace attnsim
