#include "study/CalibrationRun.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>

#include "catalog/Catalog.hpp"
#include "core/Strings.hpp"
#include "study/StepValidation.hpp"

namespace attnsim {

namespace {

std::string sourcesOf(const std::vector<MeasurementRow>& rows, const std::string& hardware) {
  std::vector<std::string> files;
  for (const auto& r : rows) {
    if (r.hardware == hardware && std::find(files.begin(), files.end(), r.source) == files.end())
      files.push_back(r.source);
  }
  return join(files, ", ");
}

// The error of the family's own figures on the points the fit was made on.
double defaultTrainMape(const Catalog& c, const FamilyFit& f, const std::vector<MeasurementRow>& rows,
                        const ValidationOptions& options) {
  const KernelModel base = measuredKernelModel(c, f.kernel, f.hardware, phaseOfClass(f.phase));
  const HoldoutRule holdout(rows, options.holdout_contexts);
  std::vector<FitPoint> points;
  for (const auto& r : rows) {
    if (r.hardware == f.hardware && r.kernel == f.kernel && phaseClassOf(r) == f.phase && !holdout.heldOut(r)) {
      points.push_back(fitPointFrom(r, base, c));
    }
  }
  const DeviceModel device = resolveDevice(c.hardware(f.hardware), DType::BF16);
  return meanAbsolutePercentageError(points, base, device, f.defaults);
}

std::string overheadsYaml(const OverheadFit& o) {
  if (o.graph_node_us > 0) {
    return fmt::format(
        "overheads: {{kernel_launch_us: {:.3f}, graph_replay_base_us: {:.3f}, "
        "graph_replay_per_node_us: {:.3f}, points: {}, note: \"{}per-node cost = the GPU's idle gap "
        "between replayed nodes (profiler); replay time per tiny-kernel node {:.2f} µs\"}}\n",
        o.kernel_launch_us, o.graph_replay_base_us, o.graph_node_us, o.points,
        o.bare_launch_us > 0 ? fmt::format("kernel_launch_us = the synthetic decoder's eager host time per step-DAG "
                                           "node (batches 1, 4, 16, 64; a bare launch costs {:.2f} µs); ",
                                           o.bare_launch_us)
                             : std::string{},
        o.replay_slope_us);
  }
  return fmt::format(
      "overheads: {{kernel_launch_us: {:.3f}, graph_replay_base_us: {:.3f}, points: {}, "
      "note: \"no graph_node rows: per-node cost kept at the default (replay time per "
      "tiny-kernel node {:.2f} µs includes their GPU time)\"}}\n",
      o.kernel_launch_us, o.graph_replay_base_us, o.points, o.replay_slope_us);
}

}  // namespace

HeldOutStats heldOutStats(const std::vector<ScoredPoint>& points, const std::string& hardware,
                          const std::string& kernel, const std::string& phase_class) {
  std::vector<double> errors;
  for (const auto& p : points) {
    if (p.hardware == hardware && p.kernel == kernel && p.phase_class == phase_class)
      errors.push_back(std::fabs(p.after_us / p.measured_us - 1));
  }
  HeldOutStats s;
  s.points = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  double sum = 0;
  for (double e : errors) sum += e;
  s.mape = sum / static_cast<double>(errors.size());
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(errors.size())));
  s.p90_abs_rel_error = errors[std::max<std::size_t>(rank, 1) - 1];
  return s;
}

std::string residualsCsv(const Catalog& c, const std::vector<MeasurementRow>& rows,
                         const std::vector<FamilyCalibration>& families, const ValidationOptions& options) {
  std::vector<FamilyFit> fits;
  fits.reserve(families.size());
  for (const auto& f : families) fits.push_back(f.fit);
  std::string out =
      "hardware,kernel,impl,engine,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,dtype,q_dtype,window,page_size,"
      "held_out,other_shape,measured_us,default_us,fit_us\n";
  for (const auto& p : scoreAllPoints(c, rows, options, fits)) {
    const MeasurementRow& r = *p.row;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f}\n", r.hardware,
                       r.kernel, r.impl, r.engine, r.phase, r.batch, r.q_len, r.kv_len, r.heads, r.kv_heads, r.head_dim,
                       r.dtype, r.q_dtype, r.window, r.page_size, p.held_out ? 1 : 0, p.other_shape ? 1 : 0,
                       p.measured_us, p.before_us, p.after_us);
  }
  return out;
}

std::vector<MeasurementRow> calibrationRows(const Store& store, const Catalog& c, const std::string& hardware) {
  std::vector<MeasurementRow> rows = store.measurements("attention");
  if (!hardware.empty()) {
    (void)c.hardware(hardware);
    std::erase_if(rows, [&](const MeasurementRow& r) { return r.hardware != hardware; });
  }
  return rows;
}

std::vector<FamilyCalibration> calibrateFamilies(Store& store, const Catalog& c,
                                                 const std::vector<MeasurementRow>& rows,
                                                 const CalibrationOptions& options) {
  std::vector<FamilyCalibration> out;
  const Validation validation = runValidation(c, rows, options.validation);
  for (const auto& f : validation.fits) {
    const FitParams& p = f.fit.params;
    CalibrationRow row{
        f.hardware,
        f.kernel,
        f.phase,
        p.compute_efficiency,
        p.memory_efficiency,
        p.fixed_us,
        p.key_ns,
        f.fit.points,
        f.fit.mape,
        fmt::format("attnsim calibrate: {} (held out contexts {})", sourcesOf(rows, f.hardware), options.holdout_note),
        todayIso(),
        c.contentHash()};
    store.insertCalibration(row);
    const KernelFamily* family = c.findKernel(f.kernel);
    out.push_back({f, std::move(row), defaultTrainMape(c, f, rows, options.validation),
                   heldOutStats(validation.held_out, f.hardware, f.kernel, f.phase),
                   family ? family->measured_proxy : std::string{}});
  }
  return out;
}

std::vector<OverheadFit> calibrateOverheads(Store& store, const Catalog& c, const CalibrationOptions& options) {
  auto overheads = fitOverheads(store.measurements());
  // A forward step issued eagerly costs the host more per kernel than a bare launch: where the
  // synthetic decoder's steps were measured, their host time per step-DAG node is the launch cost.
  const StepValidation steps = stepValidation(c, store.measurements("step"));
  for (auto& o : overheads) {
    const auto host = steps.host_us_per_node.find(o.hardware);
    if (host != steps.host_us_per_node.end()) {
      o.bare_launch_us = o.kernel_launch_us;
      o.kernel_launch_us = host->second;
    }
  }
  std::erase_if(overheads,
                [&](const OverheadFit& o) { return !options.hardware.empty() && o.hardware != options.hardware; });
  for (const auto& o : overheads) {
    const std::string files = sourcesOf(store.measurements(), o.hardware);
    store.insertOverheadFit({o.hardware, o.kernel_launch_us, o.graph_replay_base_us, o.graph_node_us, o.points,
                             "attnsim calibrate: launch and graph_launch rows of " + files, todayIso(),
                             c.contentHash()});
  }
  return overheads;
}

std::map<std::string, std::string> calibrationYaml(const std::vector<FamilyCalibration>& families,
                                                   const std::vector<OverheadFit>& overheads) {
  std::map<std::string, std::string> header;
  std::map<std::string, std::map<std::string, std::string>> kernels;  // hardware -> kernel -> phase entries
  for (const auto& family : families) {
    const FamilyFit& f = family.fit;
    const CalibrationRow& row = family.row;
    header[f.hardware] = fmt::format(
        "# Written by `attnsim calibrate --export`; refit and rewrite rather than edit.\nhardware: {}\n"
        "source: \"{}\"\ncreated: \"{}\"\n",
        f.hardware, row.source, row.created);
    const HeldOutStats& h = family.heldout;
    kernels[f.hardware][f.kernel] += fmt::format(
        "    {}: {{compute_efficiency: {:.4f}, memory_efficiency: {:.4f}, fixed_us: {:.3f}, key_ns: {:.4f}, "
        "points: {}, fit_mape: {:.4f}{}{}}}\n",
        f.phase, f.fit.params.compute_efficiency, f.fit.params.memory_efficiency, f.fit.params.fixed_us,
        f.fit.params.key_ns, f.fit.points, f.fit.mape,
        h.points > 0 ? fmt::format(", heldout: {{mape: {:.4f}, p90_abs_rel_error: {:.4f}, points: {}}}", h.mape,
                                   h.p90_abs_rel_error, h.points)
                     : std::string{},
        // A proxy's entry names what its rows stand for, ahead of the file's source.
        family.proxy.empty() ? std::string{} : fmt::format(", source: \"{}; {}\"", family.proxy, row.source));
  }
  for (const auto& o : overheads) {
    if (const auto it = header.find(o.hardware); it != header.end()) it->second += overheadsYaml(o);
  }
  std::map<std::string, std::map<std::string, std::string>> surfaces;  // hardware -> kernel -> phase entries
  for (const auto& family : families) {
    const FamilyFit& f = family.fit;
    if (f.surface.slices.empty()) continue;
    surfaces[f.hardware][f.kernel] += fmt::format("    {}:\n{}", f.phase, attentionSurfaceYaml(f.surface, "      "));
  }
  std::map<std::string, std::string> files;
  for (const auto& [hardware, text] : header) {
    files[hardware] = text + "kernels:\n";
    for (const auto& [kernel, phases] : kernels[hardware]) files[hardware] += fmt::format("  {}:\n{}", kernel, phases);
    if (surfaces[hardware].empty()) continue;
    files[hardware] += "surfaces:\n";
    for (const auto& [kernel, phases] : surfaces[hardware]) files[hardware] += fmt::format("  {}:\n{}", kernel, phases);
  }
  return files;
}

}  // namespace attnsim
