#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "reports/StepValidation.hpp"
#include "reports/ValidationReport.hpp"
#include "study/Measurements.hpp"

namespace attnsim::cli {

namespace {

using nlohmann::json;

std::vector<std::int64_t> parseContexts(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const auto& item : splitList(text)) {
    try {
      out.push_back(std::stoll(item));
    } catch (const std::exception&) {
      throw UsageError("--holdout-contexts: '" + item + "' is not an integer");
    }
  }
  return out;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

// Writes `text` to `path` through a temporary file, so a failure leaves nothing half written.
void writeFile(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f || !(f << text) || !f.flush()) throw UsageError("cannot write '" + path.string() + "'");
  }
  std::filesystem::rename(tmp, path);
}

std::string sourcesOf(const std::vector<MeasurementRow>& rows, const std::string& hardware) {
  std::vector<std::string> files;
  for (const auto& r : rows) {
    if (r.hardware == hardware && std::find(files.begin(), files.end(), r.source) == files.end())
      files.push_back(r.source);
  }
  return join(files, ", ");
}

}  // namespace

Runner addMeasurementsCommand(CLI::App& app, const GlobalOptions& global) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto db = std::make_shared<std::string>();
  CLI::App* import = app.add_subcommand("import", "validate measurement CSV files and load them into a study database");
  app.require_subcommand(1);
  import->add_option("files", *files, "CSV files from measurements/harness.py")->required();
  import->add_option("--db", *db, "SQLite study file (created when new)")->required();
  return [&global, files, db]() {
    const Catalog c = global.loadCatalog();
    std::vector<MeasurementRow> all;
    for (const auto& f : *files) {
      auto rows = readMeasurementCsv(f, c);  // throws before anything is written
      all.insert(all.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    }
    Store store(*db);
    store.insertMeasurements(all);
    std::map<std::string, int> per_kind;
    for (const auto& r : all) ++per_kind[r.hardware + " " + r.kind];
    if (global.json) {
      std::cout << json{{"imported", all.size()}, {"by_hardware_and_kind", per_kind}}.dump(2) << "\n";
    } else {
      fmt::print("imported {} rows into {}\n", all.size(), *db);
      for (const auto& [k, n] : per_kind) fmt::print("  {:<30} {}\n", k, n);
    }
    return 0;
  };
}

Runner addCalibrateCommand(CLI::App& app, const GlobalOptions& global) {
  auto db = std::make_shared<std::string>();
  auto hardware = std::make_shared<std::string>();
  auto holdout = std::make_shared<std::string>("1024,8192");
  auto export_dir = std::make_shared<std::string>();
  app.add_option("--db", *db, "study file with imported measurements")->required();
  app.add_option("--hardware", *hardware, "only this hardware profile");
  app.add_option("--holdout-contexts", *holdout, "context lengths kept out of the fit (comma list)");
  app.add_option("--export", *export_dir,
                 "write the fits as catalog YAML into this folder (hardware/calibrations layout)");
  return [&global, db, hardware, holdout, export_dir]() {
    const Catalog c = global.loadCatalog();
    Store store(*db);
    std::vector<MeasurementRow> rows = store.measurements("attention");
    if (!hardware->empty()) {
      (void)c.hardware(*hardware);
      std::erase_if(rows, [&](const MeasurementRow& r) { return r.hardware != *hardware; });
    }
    if (rows.empty()) throw UsageError("--db " + *db + ": no attention measurements to fit (run measurements import)");
    const ValidationOptions options{parseContexts(*holdout)};
    const auto fits = fitAll(c, rows, options);
    std::map<std::string, std::string> yaml_header;
    std::map<std::string, std::map<std::string, std::string>> yaml_kernels;  // hardware -> kernel -> phase entries
    json out = json::array();
    if (!global.json) {
      fmt::print("{:<10} {:<18} {:<8} {:>6} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10}\n", "hardware", "kernel", "phase",
                 "points", "compute", "memory", "fixed µs", "key ns", "MAPE dflt", "MAPE fit");
    }
    for (const auto& f : fits) {
      CalibrationRow row{
          f.hardware,
          f.kernel,
          f.phase,
          f.fit.params.compute_efficiency,
          f.fit.params.memory_efficiency,
          f.fit.params.fixed_us,
          f.fit.params.key_ns,
          f.fit.points,
          f.fit.mape,
          fmt::format("attnsim calibrate: {} (held out contexts {})", sourcesOf(rows, f.hardware), *holdout),
          today(),
          c.contentHash()};
      store.insertCalibration(row);
      std::vector<FitPoint> points;
      for (const auto& r : rows) {
        if (r.hardware == f.hardware && r.kernel == f.kernel && phaseClassOf(r) == f.phase &&
            !isHeldOut(r, options.holdout_contexts)) {
          points.push_back(fitPointFrom(r));
        }
      }
      const KernelModel base = measuredKernelModel(c, f.kernel, f.hardware, phaseOfClass(f.phase));
      const DeviceModel device = resolveDevice(c.hardware(f.hardware), "bf16");
      const double before = meanAbsolutePercentageError(points, base, device, f.defaults);
      if (global.json) {
        out.push_back({{"hardware", f.hardware},
                       {"kernel", f.kernel},
                       {"phase", f.phase},
                       {"points", f.fit.points},
                       {"compute_efficiency", f.fit.params.compute_efficiency},
                       {"memory_efficiency", f.fit.params.memory_efficiency},
                       {"fixed_us", f.fit.params.fixed_us},
                       {"key_ns", f.fit.params.key_ns},
                       {"train_mape_default", before},
                       {"train_mape_fit", f.fit.mape}});
      } else {
        fmt::print("{:<10} {:<18} {:<8} {:>6} {:>9.3f} {:>9.3f} {:>9.2f} {:>8.3f} {:>9.1f}% {:>9.1f}%\n", f.hardware,
                   f.kernel, f.phase, f.fit.points, f.fit.params.compute_efficiency, f.fit.params.memory_efficiency,
                   f.fit.params.fixed_us, f.fit.params.key_ns, 100 * before, 100 * f.fit.mape);
      }
      yaml_header[f.hardware] = fmt::format(
          "# Written by `attnsim calibrate --export`; refit and rewrite rather than edit.\nhardware: {}\n"
          "source: \"{}\"\ncreated: \"{}\"\n",
          f.hardware, row.source, row.created);
      yaml_kernels[f.hardware][f.kernel] += fmt::format(
          "    {}: {{compute_efficiency: {:.4f}, memory_efficiency: {:.4f}, fixed_us: {:.3f}, key_ns: {:.4f}, "
          "points: {}, fit_mape: {:.4f}}}\n",
          f.phase, f.fit.params.compute_efficiency, f.fit.params.memory_efficiency, f.fit.params.fixed_us,
          f.fit.params.key_ns, f.fit.points, f.fit.mape);
    }
    // Launch and graph costs from the non-attention rows.
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
    for (const auto& o : overheads) {
      if (!hardware->empty() && o.hardware != *hardware) continue;
      const std::string files = sourcesOf(store.measurements(), o.hardware);
      store.insertOverheadFit({o.hardware, o.kernel_launch_us, o.graph_replay_base_us, o.graph_node_us, o.points,
                               "attnsim calibrate: launch and graph_launch rows of " + files, today(),
                               c.contentHash()});
      if (!global.json) {
        fmt::print(
            "{:<10} launch: {:.2f} µs per eager kernel launch{}, graph replay base {:.2f} µs, {} per replayed node "
            "(replay time per tiny-kernel node {:.2f} µs) from {} points\n",
            o.hardware, o.kernel_launch_us,
            o.bare_launch_us > 0
                ? fmt::format(" (a step's host time per node; a bare launch {:.2f} µs)", o.bare_launch_us)
                : std::string{},
            o.graph_replay_base_us,
            o.graph_node_us > 0 ? fmt::format("{:.3f} µs GPU gap", o.graph_node_us) : std::string("no gap measured"),
            o.replay_slope_us, o.points);
      }
      auto it = yaml_header.find(o.hardware);
      if (it != yaml_header.end()) {
        it->second +=
            o.graph_node_us > 0
                ? fmt::format(
                      "overheads: {{kernel_launch_us: {:.3f}, graph_replay_base_us: {:.3f}, "
                      "graph_replay_per_node_us: {:.3f}, points: {}, note: \"{}per-node cost = the GPU's idle gap "
                      "between replayed nodes (profiler); replay time per tiny-kernel node {:.2f} µs\"}}\n",
                      o.kernel_launch_us, o.graph_replay_base_us, o.graph_node_us, o.points,
                      o.bare_launch_us > 0
                          ? fmt::format("kernel_launch_us = the synthetic decoder's eager host time per step-DAG "
                                        "node (batches 1, 4, 16, 64; a bare launch costs {:.2f} µs); ",
                                        o.bare_launch_us)
                          : std::string{},
                      o.replay_slope_us)
                : fmt::format(
                      "overheads: {{kernel_launch_us: {:.3f}, graph_replay_base_us: {:.3f}, points: {}, "
                      "note: \"no graph_node rows: per-node cost kept at the default (replay time per "
                      "tiny-kernel node {:.2f} µs includes their GPU time)\"}}\n",
                      o.kernel_launch_us, o.graph_replay_base_us, o.points, o.replay_slope_us);
      }
    }
    if (!export_dir->empty()) {
      std::filesystem::create_directories(*export_dir);
      for (const auto& [hw, header] : yaml_header) {
        std::string text = header + "kernels:\n";
        for (const auto& [kernel, phases] : yaml_kernels[hw]) text += "  " + kernel + ":\n" + phases;
        writeFile(std::filesystem::path(*export_dir) / (hw + ".yaml"), text);
      }
    }
    if (global.json) std::cout << out.dump(2) << "\n";
    return 0;
  };
}

Runner addReportCommand(CLI::App& app, const GlobalOptions& global) {
  auto what = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto out_dir = std::make_shared<std::string>();
  auto holdout = std::make_shared<std::string>("1024,8192");
  app.add_option("what", *what, "validation")->required()->check(CLI::IsMember({"validation"}));
  app.add_option("--db", *db, "study file")->required();
  app.add_option("--out", *out_dir, "folder for validation.md and scatter.svg")->required();
  app.add_option("--holdout-contexts", *holdout, "context lengths kept out of the fit (comma list)");
  return [&global, what, db, out_dir, holdout]() {
    const Catalog c = global.loadCatalog();
    Store store(*db);
    const auto rows = store.measurements("attention");
    if (rows.empty()) throw UsageError("--db " + *db + ": no attention measurements (run measurements import)");
    ValidationSummary s = validationReport(c, rows, {parseContexts(*holdout)});
    const StepValidation steps = stepValidation(c, store.measurements("step"));
    const auto plot = s.markdown.rfind("\n![predicted versus measured]");
    s.markdown.insert(plot == std::string::npos ? s.markdown.size() : plot, steps.markdown);
    std::filesystem::create_directories(*out_dir);
    writeFile(std::filesystem::path(*out_dir) / "validation.md", s.markdown);
    writeFile(std::filesystem::path(*out_dir) / "scatter.svg", s.svg);
    if (global.json) {
      std::cout << json{{"worst_family_phase_mape", s.worst_test_mape},
                        {"top1_agreement", s.top1_agreement},
                        {"mean_kendall_tau", s.mean_kendall_tau},
                        {"report", *out_dir + "/validation.md"}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << s.markdown;
    }
    return 0;
  };
}

}  // namespace attnsim::cli
