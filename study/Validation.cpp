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
#include "study/CalibrationRun.hpp"

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

// Relative spread of repeated measurements of one call, per GPU, over the rows that keep only a
// mean (no p20-p80): rows of one implementation, engine version and shape. AIConfigurator's MLA
// grid reaches most local head counts twice, from 64 and from 128 heads over TP 1 to 64
// (ai-dynamo/aiconfigurator collector/sglang/collect_mla.py get_generation_mla_test_cases).
std::vector<RepeatSpread> repeatSpreads(const std::vector<MeasurementRow>& rows) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<double>> calls;
  for (const auto& r : rows) {
    if (r.kind != "attention" || r.p20_us > 0 || r.p80_us > 0) continue;
    calls[{r.hardware, r.impl, r.engine_version, shapeKey(r)}].push_back(r.median_us);
  }
  std::map<std::string, std::vector<double>> spreads;
  for (const auto& [key, times] : calls) {
    if (times.size() < 2) continue;
    const auto [low, high] = std::minmax_element(times.begin(), times.end());
    spreads[std::get<0>(key)].push_back(*high / *low - 1);
  }
  std::vector<RepeatSpread> out;
  for (auto& [hardware, s] : spreads) {
    if (s.size() < static_cast<std::size_t>(kMinHeldOutPoints)) continue;  // too few for a p90
    std::sort(s.begin(), s.end());
    const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(s.size())));
    out.push_back({hardware, s[std::max<std::size_t>(rank, 1) - 1], static_cast<int>(s.size())});
  }
  return out;
}

// The band `rank` would give each family's predictions: its fit's, from the held-out residuals of
// its phase class (bandOf, as the calibration calibrate exports carries it).
std::map<FitKey, double> familyBands(const std::vector<ScoredPoint>& points, const std::vector<FamilyFit>& fits) {
  std::map<FitKey, double> out;
  for (const auto& f : fits) {
    KernelEfficiency e;
    e.provenance = Provenance::Measured;
    e.fit_mape = f.fit.mape;
    e.fit_points = f.fit.points;
    const HeldOutStats h = heldOutStats(points, f.hardware, f.kernel, f.phase);
    if (h.points > 0) e.heldout = HeldOutResiduals{h.mape, h.p90_abs_rel_error, h.points};
    out[{f.hardware, f.kernel, f.phase}] = bandOf(e).band;
  }
  return out;
}

// The band of a point's prediction: its phase class's fit, an extend's prefill fit, else the family's own.
double bandOfPoint(const Catalog& c, const std::map<FitKey, double>& bands, const ScoredPoint& s) {
  auto it = bands.find({s.hardware, s.kernel, s.phase_class});
  if (it == bands.end() && s.phase_class == "extend") it = bands.find({s.hardware, s.kernel, "prefill"});
  if (it != bands.end()) return it->second;
  return bandOf(c.kernel(s.kernel).efficiencyFor(c.hardware(s.hardware).architecture)).band;
}

// One entry per implementation and KV layout of a problem: repeated measurements averaged.
RankedEntry rankedEntry(const std::vector<const ScoredPoint*>& repeats, double band, double repeat_spread) {
  RankedEntry e;
  e.impl = repeats.front()->impl;
  e.band = band;
  e.repeat_spread = repeat_spread;
  e.repeats = static_cast<int>(repeats.size());
  bool spread = true;
  e.p20_us = repeats.front()->row->p20_us;
  for (const ScoredPoint* s : repeats) {
    e.measured_us += s->measured_us / e.repeats;
    e.predicted_us += s->after_us / e.repeats;
    spread = spread && s->row->p20_us > 0 && s->row->p80_us > 0;
    e.p20_us = std::min(e.p20_us, s->row->p20_us);
    e.p80_us = std::max(e.p80_us, s->row->p80_us);
  }
  if (!spread) e.p20_us = e.p80_us = 0;
  return e;
}

// The held-out points grouped per (hardware, problem), whatever their KV layout.
std::vector<RankingProblem> rankingProblems(const Catalog& c, const std::vector<ScoredPoint>& points,
                                            const std::vector<FamilyFit>& fits,
                                            const std::vector<RepeatSpread>& spreads) {
  const std::map<FitKey, double> bands = familyBands(points, fits);
  using PointsByImpl = std::map<std::pair<std::string, std::string>, std::vector<const ScoredPoint*>>;
  std::map<std::pair<std::string, std::string>, PointsByImpl> problems;
  for (const auto& s : points) problems[{s.hardware, s.problem}][{s.impl, s.shape}].push_back(&s);
  std::vector<RankingProblem> out;
  for (const auto& [key, entries] : problems) {
    RankingProblem p{key.first, key.second, {}};
    const auto spread =
        std::find_if(spreads.begin(), spreads.end(), [&p](const RepeatSpread& r) { return r.hardware == p.hardware; });
    for (const auto& [impl_shape, repeats] : entries) {
      p.entries.push_back(
          rankedEntry(repeats, bandOfPoint(c, bands, *repeats.front()), spread == spreads.end() ? 0 : spread->p90));
    }
    out.push_back(std::move(p));
  }
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
  const std::vector<RepeatSpread> spreads = repeatSpreads(rows);
  out.ranking = rankingAgreement(rankingProblems(c, out.held_out, out.fits, spreads));
  out.ranking.repeat_spreads = spreads;
  std::set<std::string> devices;
  for (const auto& f : out.fits) devices.insert(f.hardware);
  out.devices = devices.size();
  if (out.devices > 1) out.cross_device = crossDevice(c, rows, out.fits);
  return out;
}

}  // namespace attnsim
