#include "study/Validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"
#include "study/AttentionSurfaceFit.hpp"

namespace attnsim {

namespace {

using FitKey = std::tuple<std::string, std::string, std::string>;  // hardware, kernel, phase class

// The family's own figures, ignoring any calibration the catalog already holds: "before".
FitParams defaultsOf(const Catalog& c, const std::string& kernel, const std::string& hardware) {
  const KernelEfficiency& e = c.kernel(kernel).efficiencyFor(c.hardware(hardware).architecture);
  return {e.compute_efficiency, e.memory_efficiency, e.fixed_us, e.key_ns};
}

// The attention problem a row solves: phase, batch, lengths, heads, head size and KV dtype.
std::string problemKey(const MeasurementRow& r) {
  return fmt::format("{} b{} q{} kv{} h{}/{} d{}{}{}{}", r.phase, r.batch, r.q_len, r.kv_len, r.heads, r.kv_heads,
                     r.head_dim, r.dtype == "bf16" ? std::string{} : " " + r.dtype,
                     r.q_dtype.empty() || r.q_dtype == "bf16" ? std::string{} : " q " + r.q_dtype,
                     r.window > 0 ? fmt::format(" window {}", r.window) : std::string{});
}

std::string shapeKey(const MeasurementRow& r) {
  return problemKey(r) + (r.page_size > 0 ? fmt::format(" paged/{}", r.page_size) : std::string{});
}

// Kendall's tau between two orderings of the same items (ties count as neither).
double kendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  double concordant = 0, discordant = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      concordant += s > 0 ? 1 : 0;
      discordant += s < 0 ? 1 : 0;
    }
  }
  const double n = concordant + discordant;
  return n > 0 ? (concordant - discordant) / n : 1.0;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

std::vector<ScoredPoint> scorePoints(const Catalog& c, const std::vector<MeasurementRow>& rows,
                                     const ValidationOptions& o, const std::vector<FamilyFit>& fits,
                                     bool held_out_only) {
  std::map<FitKey, const FamilyFit*> fit_of;
  for (const auto& f : fits) fit_of[{f.hardware, f.kernel, f.phase}] = &f;
  std::vector<ScoredPoint> out;
  const HoldoutRule holdout(rows, o.holdout_contexts);
  CorrectedGridCache grids;
  for (const auto& r : rows) {
    const bool held_out = holdout.heldOut(r);
    if (r.kind != "attention" || (held_out_only && !held_out)) continue;
    // Scored with what predict would use: the phase class's fit, an extend's prefill fit, else the
    // family's own figures (no fit for this point at all).
    const std::string phase_class = phaseClassOf(r);
    auto it = fit_of.find({r.hardware, r.kernel, phase_class});
    if (it == fit_of.end() && phase_class == "extend") it = fit_of.find({r.hardware, r.kernel, "prefill"});
    const KernelModel base = measuredKernelModel(c, r.kernel, r.hardware, phaseOf(r));
    const FitPoint p = fitPointFrom(r, base, c);
    const DeviceModel device = resolveDevice(c.hardware(r.hardware), DType::BF16);
    const FitParams defaults = defaultsOf(c, r.kernel, r.hardware);
    const FitParams& fitted = it == fit_of.end() ? defaults : it->second->fit.params;
    const AttentionSurface* surface = it == fit_of.end() ? nullptr : &it->second->surface;
    out.push_back({r.hardware, r.kernel, r.impl, r.phase, phase_class, shapeKey(r), problemKey(r), r.median_us,
                   predictPoint(p, base, device, defaults), predictCorrected(p, base, device, fitted, surface, grids),
                   &r, held_out, holdout.otherShape(r)});
  }
  return out;
}

std::vector<HeldOutError> heldOutErrors(const std::vector<ScoredPoint>& points) {
  struct Errors {
    std::vector<double> before, after, measured_shapes, other_shapes;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Errors> errors;
  for (const auto& s : points) {
    auto& e = errors[{s.hardware, s.kernel, s.impl, s.phase}];
    const double after = std::fabs(s.after_us - s.measured_us) / s.measured_us;
    e.before.push_back(std::fabs(s.before_us - s.measured_us) / s.measured_us);
    e.after.push_back(after);
    (s.other_shape ? e.other_shapes : e.measured_shapes).push_back(after);
  }
  std::vector<HeldOutError> out;
  for (const auto& [key, e] : errors) {
    const auto& [hardware, kernel, impl, phase] = key;
    HeldOutError h{hardware,        kernel,         impl,          phase,
                   e.before.size(), mean(e.before), mean(e.after), *std::max_element(e.after.begin(), e.after.end())};
    h.measured_shape_points = e.measured_shapes.size();
    h.other_shape_points = e.other_shapes.size();
    h.measured_shape_mape = e.measured_shapes.empty() ? 0 : mean(e.measured_shapes);
    h.other_shape_mape = e.other_shapes.empty() ? 0 : mean(e.other_shapes);
    out.push_back(h);
  }
  return out;
}

std::vector<ScoredPoint> worstPoints(const std::vector<ScoredPoint>& points, std::size_t count) {
  std::vector<const ScoredPoint*> worst;
  worst.reserve(points.size());
  for (const auto& s : points) worst.push_back(&s);
  std::sort(worst.begin(), worst.end(), [](const ScoredPoint* a, const ScoredPoint* b) {
    return std::fabs(a->after_us / a->measured_us - 1) > std::fabs(b->after_us / b->measured_us - 1);
  });
  std::vector<ScoredPoint> out;
  for (std::size_t i = 0; i < std::min(count, worst.size()); ++i) out.push_back(*worst[i]);
  return out;
}

// Per shape: which implementation is fastest, and the order of all.
RankingAgreement rankingAgreement(const std::vector<ScoredPoint>& points) {
  std::map<std::pair<std::string, std::string>, std::vector<const ScoredPoint*>> by_shape;
  for (const auto& s : points) by_shape[{s.hardware, s.problem}].push_back(&s);
  RankingAgreement out;
  int top1 = 0;
  double tau_sum = 0;
  for (const auto& [key, group] : by_shape) {
    if (group.size() < 2) continue;
    std::vector<double> measured, predicted;
    for (const auto* s : group) {
      measured.push_back(s->measured_us);
      predicted.push_back(s->after_us);
    }
    const auto best_m = std::min_element(measured.begin(), measured.end()) - measured.begin();
    const auto best_p = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
    top1 += best_m == best_p ? 1 : 0;
    tau_sum += kendallTau(measured, predicted);
    ++out.shapes;
  }
  out.top1 = out.shapes > 0 ? static_cast<double>(top1) / out.shapes : 0;
  out.mean_kendall_tau = out.shapes > 0 ? tau_sum / out.shapes : 0;
  return out;
}

// Each device's fit predicting the other devices' measurements (all of them, not only held out).
std::vector<CrossDeviceRow> crossDevice(const Catalog& c, const std::vector<MeasurementRow>& rows,
                                        const std::vector<FamilyFit>& fits) {
  std::vector<CrossDeviceRow> out;
  for (const auto& from : fits) {
    for (const auto& to : fits) {
      if (from.kernel != to.kernel || from.phase != to.phase || from.hardware == to.hardware) continue;
      const KernelModel base = measuredKernelModel(c, to.kernel, to.hardware, phaseOfClass(to.phase));
      std::vector<FitPoint> points;
      for (const auto& r : rows) {
        if (r.kind == "attention" && r.hardware == to.hardware && r.kernel == to.kernel &&
            phaseClassOf(r) == to.phase && r.phase != "mixed") {
          points.push_back(fitPointFrom(r, base, c));
        }
      }
      const DeviceModel device = resolveDevice(c.hardware(to.hardware), DType::BF16);
      out.push_back({from.hardware, to.hardware, to.kernel, to.phase, points.size(),
                     meanAbsolutePercentageError(points, base, device, from.fit.params),
                     meanAbsolutePercentageError(points, base, device, to.fit.params)});
    }
  }
  return out;
}

}  // namespace

std::vector<FamilyFit> fitAll(const Catalog& c, const std::vector<MeasurementRow>& rows, const ValidationOptions& o) {
  std::map<FitKey, std::vector<const MeasurementRow*>> train;
  std::map<FitKey, int> test;
  const HoldoutRule holdout(rows, o.holdout_contexts);
  for (const auto& r : rows) {
    if (r.kind != "attention") continue;
    const FitKey key{r.hardware, r.kernel, phaseClassOf(r)};
    if (holdout.heldOut(r)) {
      ++test[key];
    } else {
      train[key].push_back(&r);
    }
  }
  std::vector<FamilyFit> fits;
  for (const auto& [key, train_rows] : train) {
    FamilyFit f;
    f.hardware = std::get<0>(key);
    f.kernel = std::get<1>(key);
    f.phase = std::get<2>(key);
    f.defaults = defaultsOf(c, f.kernel, f.hardware);
    const KernelModel base = measuredKernelModel(c, f.kernel, f.hardware, phaseOfClass(f.phase));
    std::vector<FitPoint> points;
    points.reserve(train_rows.size());
    for (const MeasurementRow* r : train_rows) points.push_back(fitPointFrom(*r, base, c));
    const DeviceModel device = resolveDevice(c.hardware(f.hardware), DType::BF16);
    f.fit = fitKernel(parameterPoints(points, holdout.denseSlices()), base, device, f.defaults);
    f.surface = fitAttentionSurface(points, base, device, f.fit.params);
    f.train = static_cast<int>(points.size());
    f.test = test[key];
    fits.push_back(f);
  }
  return fits;
}

std::vector<ScoredPoint> scoreAllPoints(const Catalog& c, const std::vector<MeasurementRow>& rows,
                                        const ValidationOptions& o, const std::vector<FamilyFit>& fits) {
  return scorePoints(c, rows, o, fits, false);
}

Validation runValidation(const Catalog& c, const std::vector<MeasurementRow>& rows, const ValidationOptions& o) {
  Validation out;
  out.holdout_contexts = o.holdout_contexts;
  out.fits = fitAll(c, rows, o);
  out.held_out = scorePoints(c, rows, o, out.fits, true);
  out.errors = heldOutErrors(out.held_out);
  for (const auto& e : out.errors) out.worst_test_mape = std::max(out.worst_test_mape, e.mape_after);
  out.worst = worstPoints(out.held_out, 10);
  out.ranking = rankingAgreement(out.held_out);
  std::set<std::string> devices;
  for (const auto& f : out.fits) devices.insert(f.hardware);
  out.devices = devices.size();
  if (out.devices > 1) out.cross_device = crossDevice(c, rows, out.fits);
  return out;
}

}  // namespace attnsim
