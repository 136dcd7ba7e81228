#include "reports/ValidationReport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"

namespace attnsim {

namespace {

// The family's own figures, ignoring any calibration the catalog already holds: "before".
FitParams defaultsOf(const Catalog& c, const std::string& kernel, const std::string& hardware) {
  const KernelEfficiency& e = c.kernel(kernel).efficiencyFor(c.hardware(hardware).architecture);
  return {e.compute_efficiency, e.memory_efficiency, e.fixed_us, e.key_ns};
}

std::string phaseClass(const MeasurementRow& r) { return phaseClassOf(r); }

struct Scored {
  const MeasurementRow* row;
  double before_us, after_us;
};

std::string shapeKey(const MeasurementRow& r) {
  return fmt::format("{} b{} q{} kv{} h{}/{} d{}{}", r.phase, r.batch, r.q_len, r.kv_len, r.heads, r.kv_heads,
                     r.head_dim, r.page_size > 0 ? fmt::format(" paged/{}", r.page_size) : std::string{});
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

std::string scatterSvg(const std::vector<Scored>& points) {
  const double lo = 1, hi = 1e5, size = 520, pad = 60;
  auto pos = [&](double us) {
    return pad + (std::log10(std::clamp(us, lo, hi)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * size;
  };
  std::map<std::string, std::string> colors{{"fa2", "#1f77b4"},
                                            {"cudnn-fmha", "#2ca02c"},
                                            {"mem-efficient", "#ff7f0e"},
                                            {"unfused-attention", "#d62728"},
                                            {"flex-attention", "#9467bd"}};
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{0}" font-family="sans-serif" font-size="12">)",
      size + 2 * pad);
  svg += fmt::format(R"(<rect x="{0}" y="{0}" width="{1}" height="{1}" fill="none" stroke="#444"/>)", pad, size);
  svg +=
      fmt::format(R"(<line x1="{0}" y1="{1}" x2="{1}" y2="{0}" stroke="#aaa" stroke-dasharray="4"/>)", pad, pad + size);
  for (double t = lo; t <= hi; t *= 10) {
    const double p = pos(t);
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{:g}</text>)", p, pad + size + 18, t);
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{:g}</text>)", pad - 6, 2 * pad + size - p + 4, t);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">measured µs (held-out points)</text>)", pad + size / 2,
                     pad + size + 40);
  svg += fmt::format(
      R"svg(<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">predicted µs (calibrated)</text>)svg",
      pad + size / 2, pad + size / 2);
  for (const auto& s : points) {
    const auto it = colors.find(s.row->kernel);
    svg +=
        fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}" fill-opacity="0.7"/>)", pos(s.row->median_us),
                    2 * pad + size - pos(s.after_us), it == colors.end() ? "#555" : it->second);
  }
  double y = pad + 16;
  for (const auto& [k, color] : colors) {
    svg += fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="{}"/><text x="{}" y="{}">{}</text>)", pad + 14, y - 4,
                       color, pad + 24, y, k);
    y += 16;
  }
  return svg + "</svg>\n";
}

}  // namespace

std::vector<FamilyFit> fitAll(const Catalog& c, const std::vector<MeasurementRow>& rows, const ValidationOptions& o) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::vector<FitPoint>> train;
  std::map<Key, int> test;
  for (const auto& r : rows) {
    if (r.kind != "attention") continue;
    const Key key{r.hardware, r.kernel, phaseClass(r)};
    if (isHeldOut(r, o.holdout_contexts)) {
      ++test[key];
    } else {
      train[key].push_back(fitPointFrom(r));
    }
  }
  std::vector<FamilyFit> fits;
  for (const auto& [key, points] : train) {
    FamilyFit f;
    f.hardware = std::get<0>(key);
    f.kernel = std::get<1>(key);
    f.phase = std::get<2>(key);
    f.defaults = defaultsOf(c, f.kernel, f.hardware);
    const KernelModel base = measuredKernelModel(c, f.kernel, f.hardware, phaseOfClass(f.phase));
    f.fit = fitKernel(points, base, resolveDevice(c.hardware(f.hardware), "bf16"), f.defaults);
    f.train = static_cast<int>(points.size());
    f.test = test[key];
    fits.push_back(f);
  }
  return fits;
}

ValidationSummary validationReport(const Catalog& c, const std::vector<MeasurementRow>& rows,
                                   const ValidationOptions& o) {
  ValidationSummary out;
  out.fits = fitAll(c, rows, o);
  std::map<std::tuple<std::string, std::string, std::string>, const FamilyFit*> fit_of;
  for (const auto& f : out.fits) fit_of[{f.hardware, f.kernel, f.phase}] = &f;

  std::vector<Scored> test;
  for (const auto& r : rows) {
    if (r.kind != "attention" || !isHeldOut(r, o.holdout_contexts)) continue;
    // Scored with what predict would use: the phase class's fit, an extend's prefill fit, else the
    // family's own figures (no fit for this point at all).
    auto it = fit_of.find({r.hardware, r.kernel, phaseClass(r)});
    if (it == fit_of.end() && phaseClass(r) == "extend") it = fit_of.find({r.hardware, r.kernel, "prefill"});
    const FitPoint p = fitPointFrom(r);
    const KernelModel base = measuredKernelModel(c, r.kernel, r.hardware, phaseOf(r));
    const DeviceModel device = resolveDevice(c.hardware(r.hardware), "bf16");
    const FitParams defaults = defaultsOf(c, r.kernel, r.hardware);
    const FitParams& fitted = it == fit_of.end() ? defaults : it->second->fit.params;
    test.push_back({&r, predictPoint(p, base, device, defaults), predictPoint(p, base, device, fitted)});
  }

  std::string md = "# Prediction versus measurement\n\n";
  md += fmt::format(
      "Generated by `attnsim report validation`. Fit on the contiguous-KV points whose context length is not in "
      "{{{}}}; every figure below is on the held-out points (out of sample), and paged points are never fitted: "
      "they are predicted from the contiguous fit. Before = the catalog's default efficiencies; after = the "
      "fit.\n\n",
      fmt::join(o.holdout_contexts, ", "));
  md +=
      "## Fitted parameters\n\n| hardware | kernel family | phase class | train points | compute eff. | memory eff. | "
      "fixed µs | key ns | train MAPE |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& f : out.fits) {
    md += fmt::format("| {} | {} | {} | {} | {:.3f} | {:.3f} | {:.2f} | {:.3f} | {:.1f}% |\n", f.hardware, f.kernel,
                      f.phase, f.train, f.fit.params.compute_efficiency, f.fit.params.memory_efficiency,
                      f.fit.params.fixed_us, f.fit.params.key_ns, 100 * f.fit.mape);
  }
  // Per family and phase.
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           std::pair<std::vector<double>, std::vector<double>>>
      errors;
  for (const auto& s : test) {
    auto& e = errors[{s.row->hardware, s.row->kernel, s.row->impl, s.row->phase}];
    e.first.push_back(std::fabs(s.before_us - s.row->median_us) / s.row->median_us);
    e.second.push_back(std::fabs(s.after_us - s.row->median_us) / s.row->median_us);
  }
  md +=
      "\n## Held-out error per implementation and phase\n\n| hardware | kernel family | implementation | phase | "
      "points | "
      "MAPE before | MAPE after | worst after |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, e] : errors) {
    auto mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x;
      return s / static_cast<double>(v.size());
    };
    const double after = mean(e.second);
    out.worst_test_mape = std::max(out.worst_test_mape, after);
    md += fmt::format("| {} | {} | {} | {} | {} | {:.1f}% | {:.1f}% | {:.1f}% |\n", std::get<0>(key), std::get<1>(key),
                      std::get<2>(key), std::get<3>(key), e.first.size(), 100 * mean(e.first), 100 * after,
                      100 * *std::max_element(e.second.begin(), e.second.end()));
  }
  // Worst points.
  std::vector<const Scored*> worst;
  for (const auto& s : test) worst.push_back(&s);
  std::sort(worst.begin(), worst.end(), [](const Scored* a, const Scored* b) {
    return std::fabs(a->after_us / a->row->median_us - 1) > std::fabs(b->after_us / b->row->median_us - 1);
  });
  md +=
      "\n## Worst held-out points\n\n| hardware | kernel | shape | measured µs | predicted µs | error "
      "|\n|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(10, worst.size()); ++i) {
    const Scored& s = *worst[i];
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:+.0f}% |\n", s.row->hardware, s.row->kernel,
                      shapeKey(*s.row), s.row->median_us, s.after_us, 100 * (s.after_us / s.row->median_us - 1));
  }
  // Ranking agreement per shape: which implementation is fastest, and the order of all.
  std::map<std::pair<std::string, std::string>, std::vector<const Scored*>> by_shape;
  for (const auto& s : test) by_shape[{s.row->hardware, shapeKey(*s.row)}].push_back(&s);
  int shapes = 0, top1 = 0;
  double tau_sum = 0;
  for (const auto& [key, group] : by_shape) {
    if (group.size() < 2) continue;
    std::vector<double> measured, predicted;
    for (const auto* s : group) {
      measured.push_back(s->row->median_us);
      predicted.push_back(s->after_us);
    }
    const auto best_m = std::min_element(measured.begin(), measured.end()) - measured.begin();
    const auto best_p = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
    top1 += best_m == best_p ? 1 : 0;
    tau_sum += kendallTau(measured, predicted);
    ++shapes;
  }
  out.top1_agreement = shapes > 0 ? static_cast<double>(top1) / shapes : 0;
  out.mean_kendall_tau = shapes > 0 ? tau_sum / shapes : 0;
  md += fmt::format(
      "\n## Ranking agreement\n\nOver {} held-out shapes measured with two or more implementations: the "
      "fastest measured implementation is the fastest predicted in {:.0f}% of them (top-1); mean Kendall tau "
      "of the predicted against the measured order: {:.2f}.\n",
      shapes, 100 * out.top1_agreement, out.mean_kendall_tau);
  // Cross-device: each device's fit predicting the other devices' measurements (all of them).
  std::set<std::string> devices;
  for (const auto& f : out.fits) devices.insert(f.hardware);
  if (devices.size() > 1) {
    md +=
        "\n## Cross-device\n\nParameters fitted on one device predict every measurement of another.\n\n| fitted on | "
        "predicts | kernel family | phase class | points | MAPE | MAPE with its own fit "
        "|\n|---|---|---|---|---|---|---|\n";
    for (const auto& from : out.fits) {
      for (const auto& to : out.fits) {
        if (from.kernel != to.kernel || from.phase != to.phase || from.hardware == to.hardware) continue;
        std::vector<FitPoint> points;
        for (const auto& r : rows) {
          if (r.kind == "attention" && r.hardware == to.hardware && r.kernel == to.kernel &&
              phaseClass(r) == to.phase) {
            points.push_back(fitPointFrom(r));
          }
        }
        const KernelModel base = measuredKernelModel(c, to.kernel, to.hardware, phaseOfClass(to.phase));
        const DeviceModel device = resolveDevice(c.hardware(to.hardware), "bf16");
        md += fmt::format("| {} | {} | {} | {} | {} | {:.1f}% | {:.1f}% |\n", from.hardware, to.hardware, to.kernel,
                          to.phase, points.size(),
                          100 * meanAbsolutePercentageError(points, base, device, from.fit.params),
                          100 * meanAbsolutePercentageError(points, base, device, to.fit.params));
      }
    }
  }
  md += "\n![predicted versus measured](scatter.svg)\n";
  out.markdown = md;
  out.svg = scatterSvg(test);
  return out;
}

}  // namespace attnsim
