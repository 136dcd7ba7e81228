#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "core/Strings.hpp"
#include "hardware/KernelEfficiency.hpp"
#include "study/CalibrationMerge.hpp"
#include "study/CalibrationRun.hpp"
#include "study/Measurements.hpp"
#include "study/OperatorCalibration.hpp"
#include "study/StepValidation.hpp"
#include "study/Validation.hpp"

namespace attnsim::cli {

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

namespace {

using nlohmann::json;

void printImport(const MeasurementImport& result, const std::string& db, bool as_json) {
  if (as_json) {
    std::cout << json{{"imported", result.rows}, {"by_hardware_and_kind", result.by_hardware_and_kind}}.dump(2) << "\n";
    return;
  }
  fmt::print("imported {} rows into {}\n", result.rows, db);
  for (const auto& [k, n] : result.by_hardware_and_kind) fmt::print("  {:<30} {}\n", k, n);
}

// The band predictions with this fit will carry, as the catalog will read it back (bandOf).
UncertaintyBand fitBand(const FamilyCalibration& family) {
  KernelEfficiency e;
  e.provenance = Provenance::Measured;
  e.fit_mape = family.fit.fit.mape;
  e.fit_points = family.fit.fit.points;
  if (family.heldout.points > 0) {
    e.heldout = HeldOutResiduals{family.heldout.mape, family.heldout.p90_abs_rel_error, family.heldout.points};
  }
  return bandOf(e);
}

void printFamilies(const std::vector<FamilyCalibration>& families) {
  fmt::print("{:<10} {:<18} {:<8} {:>6} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {:>7}\n", "hardware", "kernel", "phase",
             "points", "compute", "memory", "fixed µs", "key ns", "MAPE dflt", "MAPE fit", "band");
  int thin = 0;
  for (const auto& family : families) {
    const FamilyFit& f = family.fit;
    const UncertaintyBand band = fitBand(family);
    thin += band.basis == BandBasis::ThinFit ? 1 : 0;
    fmt::print("{:<10} {:<18} {:<8} {:>6} {:>9.3f} {:>9.3f} {:>9.2f} {:>8.3f} {:>9.1f}% {:>9.1f}% {:>5.0f}%{}\n",
               f.hardware, f.kernel, f.phase, f.fit.points, f.fit.params.compute_efficiency,
               f.fit.params.memory_efficiency, f.fit.params.fixed_us, f.fit.params.key_ns,
               100 * family.train_mape_default, 100 * f.fit.mape, 100 * band.band,
               band.basis == BandBasis::ThinFit ? "  thin fit" : "");
  }
  if (thin > 0) {
    fmt::print(
        "{} thin fit(s): fewer than {} points per fitted parameter ({} points for {}); their band is at least "
        "the published {:.0f}% whatever their residuals\n",
        thin, kMinPointsPerParameter, kMinPointsPerParameter * kFitParameters, kFitParameters, 100 * kPublishedBand);
  }
}

json familiesJson(const std::vector<FamilyCalibration>& families) {
  json out = json::array();
  for (const auto& family : families) {
    const FamilyFit& f = family.fit;
    out.push_back({{"hardware", f.hardware},
                   {"kernel", f.kernel},
                   {"phase", f.phase},
                   {"points", f.fit.points},
                   {"compute_efficiency", f.fit.params.compute_efficiency},
                   {"memory_efficiency", f.fit.params.memory_efficiency},
                   {"fixed_us", f.fit.params.fixed_us},
                   {"key_ns", f.fit.params.key_ns},
                   {"train_mape_default", family.train_mape_default},
                   {"train_mape_fit", f.fit.mape},
                   {"band", fitBand(family).band},
                   {"band_basis", bandBasisName(fitBand(family).basis)}});
  }
  return out;
}

void printOverheads(const std::vector<OverheadFit>& overheads) {
  for (const auto& o : overheads) {
    fmt::print(
        "{:<10} launch: {:.2f} µs per eager kernel launch{}, graph replay base {:.2f} µs, {} per replayed node "
        "(replay time per tiny-kernel node {:.2f} µs) from {} points\n",
        o.hardware, o.kernel_launch_us,
        o.bare_launch_us > 0 ? fmt::format(" (a step's host time per node; a bare launch {:.2f} µs)", o.bare_launch_us)
                             : std::string{},
        o.graph_replay_base_us,
        o.graph_node_us > 0 ? fmt::format("{:.3f} µs GPU gap", o.graph_node_us) : std::string("no gap measured"),
        o.replay_slope_us, o.points);
  }
}

void printOperators(const OperatorCalibration& ops) {
  for (const auto& line : ops.not_fitted) fmt::print("not fitted: {}\n", line);
  if (ops.points.empty()) return;
  fmt::print("\n{:<10} {:<7} {:<15} {:>7} {:>10} {:>9} {:>8}  {}\n", "hardware", "engine", "operator", "held out",
             "MAPE dflt", "MAPE fit", "p90 fit", "worst held-out call (predicted / measured µs)");
  for (const auto& e : ops.heldOutErrors()) {
    fmt::print("{:<10} {:<7} {:<15} {:>7} {:>9.1f}% {:>8.1f}% {:>7.1f}%  {} ({:.1f} / {:.1f})\n", e.hardware, e.engine,
               e.op, e.points, 100 * e.default_mape, 100 * e.mape, 100 * e.p90, e.worst.shape, e.worst.fitted_us,
               e.worst.measured_us);
  }
}

json operatorsJson(const OperatorCalibration& ops) {
  json out = json::array();
  for (const auto& e : ops.heldOutErrors()) {
    out.push_back(
        {{"hardware", e.hardware},
         {"engine", e.engine},
         {"operator", e.op},
         {"heldout_points", e.points},
         {"heldout_mape_default", e.default_mape},
         {"heldout_mape_fit", e.mape},
         {"heldout_p90_fit", e.p90},
         {"worst",
          {{"shape", e.worst.shape}, {"predicted_us", e.worst.fitted_us}, {"measured_us", e.worst.measured_us}}}});
  }
  return out;
}

const std::vector<std::string> kCalibrateParts{"attention", "overheads", "gemm", "allreduce", "moe"};

// Each device's file merged with the catalog's file of that name (which the written file replaces when
// the folder overlays the catalog), and what changed.
void writeCalibrationFiles(const std::string& dir, const std::map<std::string, std::string>& files,
                           const GlobalOptions& global) {
  const CatalogSource source = global.catalogSource();
  std::filesystem::create_directories(dir);
  for (const auto& [hardware, text] : files) {
    const std::string path = "hardware/calibrations/" + hardware + ".yaml";
    const auto existing = source.filesUnder(path);
    const auto merged = existing.empty()
                            ? mergeCalibrationYaml(text, "", path)
                            : mergeCalibrationYaml(text, existing.front()->content, existing.front()->display);
    const auto target = std::filesystem::path(dir) / (hardware + ".yaml");
    writeFileAtomically(target, merged.text);
    if (global.json) continue;
    const auto list = [](const std::vector<std::string>& items) {
      return items.empty() ? std::string("-") : join(items, ", ");
    };
    fmt::print("wrote {}{}\n  added:    {}\n  replaced: {}\n  kept:     {}\n", target.string(),
               existing.empty() ? " (the catalog had no fits for " + hardware + ")"
                                : " (merged with " + existing.front()->display + ")",
               list(merged.added), list(merged.replaced), list(merged.kept));
  }
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
    const Catalog& c = global.loadCatalog();
    printImport(importMeasurements(*files, *db, c), *db, global.json);
    return 0;
  };
}

namespace {

// The operator fits and points of the parts asked for (--only).
OperatorCalibration calibrateWantedOperators(const OperatorCalibration& ops, const std::vector<std::string>& parts) {
  auto wanted = [&](const std::string& part) { return std::find(parts.begin(), parts.end(), part) != parts.end(); };
  OperatorCalibration kept = ops;
  if (!wanted("gemm")) kept.gemm.clear();
  if (!wanted("allreduce")) kept.all_reduce.clear();
  if (!wanted("moe")) kept.moe.clear();
  std::erase_if(kept.points, [&](const OperatorPoint& p) { return !wanted(p.op.substr(0, p.op.find(':'))); });
  return kept;
}

// The files the operator rows came from, each once.
std::string calibrateOperatorFiles(const std::vector<MeasurementRow>& measured) {
  std::vector<std::string> sources;
  for (const auto& r : measured) {
    if ((r.kind == "gemm" || r.kind == "allreduce" || r.kind == "moe") &&
        std::find(sources.begin(), sources.end(), r.source) == sources.end())
      sources.push_back(r.source);
  }
  return join(sources, ", ");
}

}  // namespace

Runner addCalibrateCommand(CLI::App& app, const GlobalOptions& global) {
  auto db = std::make_shared<std::string>();
  auto hardware = std::make_shared<std::string>();
  auto holdout = std::make_shared<std::string>("1024,8192");
  auto export_dir = std::make_shared<std::string>();
  auto only = std::make_shared<std::string>();
  auto residuals = std::make_shared<std::string>();
  app.add_option("--db", *db, "study file with imported measurements")->required();
  app.add_option("--residuals", *residuals,
                 "also write every attention row, predicted before and after the fit, as CSV to this file");
  app.add_option(
      "--only", *only,
      "fit only these parts (comma list of attention, overheads, gemm, allreduce, moe; default: all measured)");
  app.add_option("--hardware", *hardware, "only this hardware profile");
  app.add_option("--holdout-contexts", *holdout, "context lengths kept out of the fit (comma list)");
  app.add_option("--export", *export_dir,
                 "write the fits as catalog YAML into this folder (hardware/calibrations layout)");
  return [&global, db, hardware, holdout, export_dir, only, residuals]() {
    const Catalog& c = global.loadCatalog();
    const std::vector<std::string> parts = only->empty() ? kCalibrateParts : splitList(*only);
    for (const auto& p : parts) {
      if (std::find(kCalibrateParts.begin(), kCalibrateParts.end(), p) == kCalibrateParts.end())
        throw UsageError(fmt::format("--only: no part '{}' (one of: {})", p, join(kCalibrateParts, ", ")));
    }
    auto wanted = [&](const char* part) { return std::find(parts.begin(), parts.end(), part) != parts.end(); };
    Store store(*db);
    const auto rows = wanted("attention") ? calibrationRows(store, c, *hardware) : std::vector<MeasurementRow>{};
    const auto measured = store.measurements();
    const OperatorCalibration ops = wanted("gemm") || wanted("allreduce") || wanted("moe")
                                        ? calibrateOperators(c, measured, *hardware)
                                        : OperatorCalibration{};
    if (rows.empty() && ops.points.empty() && ops.not_fitted.empty())
      throw UsageError("--db " + *db +
                       ": no attention, gemm, allreduce or moe measurements to fit (run measurements import)");
    const CalibrationOptions options{*hardware, *holdout, {parseContexts(*holdout)}};
    const auto families = rows.empty() ? std::vector<FamilyCalibration>{} : calibrateFamilies(store, c, rows, options);
    if (!global.json && !families.empty()) printFamilies(families);
    if (!residuals->empty()) writeFileAtomically(*residuals, residualsCsv(c, rows, families, options.validation));
    const auto overheads = wanted("overheads") ? calibrateOverheads(store, c, options) : std::vector<OverheadFit>{};
    if (!global.json) printOverheads(overheads);
    const OperatorCalibration kept = calibrateWantedOperators(ops, parts);
    if (!global.json) printOperators(kept);
    if (!export_dir->empty()) {
      auto files = calibrationYaml(families, overheads);
      addOperatorSections(files, kept,
                          "attnsim calibrate: gemm, allreduce and moe rows of " + calibrateOperatorFiles(measured));
      writeCalibrationFiles(*export_dir, files, global);
    }
    if (global.json)
      std::cout << json{{"families", familiesJson(families)},
                        {"operators", operatorsJson(kept)},
                        {"operators_not_fitted", kept.not_fitted}}
                       .dump(2)
                << "\n";
    return 0;
  };
}

}  // namespace attnsim::cli
