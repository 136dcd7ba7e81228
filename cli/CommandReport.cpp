// attnsim report KIND --db FILE --out DIR: the validation report (measurements against the model)
// and the study reports (priorities, whatif, matrix) over a sweep's store.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "cli/ServeFlags.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "core/Strings.hpp"
#include "reports/Answers.hpp"
#include "reports/OperatorReport.hpp"
#include "reports/StudyReports.hpp"
#include "reports/ValidationReport.hpp"
#include "study/StepValidation.hpp"
#include "study/Validation.hpp"

namespace attnsim::cli {

namespace {

struct ReportFlags {
  std::string what, db, out_dir, published, holdout = "1024,8192", sweep, compare, study;
  WhatIfOptions whatif;
};

int runValidationReport(const GlobalOptions& global, const ReportFlags& f) {
  const Catalog& c = global.loadCatalog();
  Store store(f.db, StoreAccess::ReadOnly);
  const auto rows = store.measurements("attention");
  if (rows.empty()) throw UsageError("--db " + f.db + ": no attention measurements (run measurements import)");
  const Validation validation = runValidation(c, rows, {parseContexts(f.holdout)});
  const StepValidation steps = stepValidation(c, store.measurements("step"));
  // --published FILE: published kernel figures of GPUs without measurements, checked (study/PublishedKernels).
  const std::vector<PublishedKernelPoint> published =
      f.published.empty() ? std::vector<PublishedKernelPoint>{} : readPublishedKernels(c, f.published);
  const std::vector<PublishedKernelCheck> checks = checkPublishedKernels(c, published);
  std::string markdown = validationMarkdown(validation, steps) + operatorValidationMarkdown(c, store.measurements());
  if (!checks.empty()) markdown.append("\n").append(publishedKernelsMarkdown(checks));
  std::filesystem::create_directories(f.out_dir);
  writeFileAtomically(std::filesystem::path(f.out_dir) / "validation.md", markdown);
  writeFileAtomically(std::filesystem::path(f.out_dir) / "scatter.svg", validationScatterSvg(validation));
  writeFileAtomically(std::filesystem::path(f.out_dir) / "heldout.csv", validationPointsCsv(validation));
  writeFileAtomically(std::filesystem::path(f.out_dir) / "ranking.csv", validationRankingCsv(validation));
  if (global.json) {
    nlohmann::json summary = validationSummaryJson(validation, f.out_dir + "/validation.md");
    if (!checks.empty()) summary["published_kernels"] = publishedKernelsJson(checks);
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << markdown;
  }
  return 0;
}

// Writes the report's files into `out_dir`; prints its JSON (--json) or the files written.
int writeAndAnnounce(const GlobalOptions& global, const StudyReport& report, const std::string& out_dir) {
  writeStudyReport(report, out_dir);
  const auto base = std::filesystem::path(out_dir) / report.kind;
  if (global.json) {
    std::cout << report.json.dump(2) << "\n";
  } else {
    fmt::print("wrote {}.html, {}.md (with {} SVG figures) and {}.json\n", base.string(), base.string(),
               report.document.figures().size(), base.string());
  }
  return 0;
}

// priorities, matrix, whatif and capacity: a sweep's or a capacity study's store (reports/Answers).
int runStoreReport(const GlobalOptions& global, ReportFlags f) {
  f.whatif.compare = splitList(f.compare);
  const Catalog& fallback = global.loadCatalog();
  const StudyReport report = storeReport({f.what, f.db, f.out_dir, f.sweep, f.study, f.whatif}, fallback);
  return writeAndAnnounce(global, report, f.out_dir);
}

}  // namespace

Runner addReportCommand(CLI::App& app, const GlobalOptions& global) {
  auto f = std::make_shared<ReportFlags>();
  app.add_option("what", f->what, "validation, priorities, whatif, matrix, capacity or serving")
      ->required()
      ->check(CLI::IsMember({"validation", "priorities", "whatif", "matrix", "capacity", "serving"}));
  app.add_option("--db", f->db, "study file (every kind but serving)");
  app.add_option("--published", f->published,
                 "serving: the folder of published runs and their serve-sim setups (measurements/data/serving); "
                 "validation: a CSV of published kernel figures to check (measurements/data/amd/published.csv)");
  app.add_option("--out", f->out_dir, "folder for the report's files")->required();
  app.add_option("--holdout-contexts", f->holdout, "validation: context lengths kept out of the fit (comma list)");
  app.add_option("--sweep", f->sweep, "the sweep to report on (name or id; default: the store's only sweep)");
  app.add_option("--compare", f->compare, "whatif: backends side by side, engine:NAME comma list");
  app.add_flag("--compare-engines", f->whatif.engines, "whatif: each engine's own choice side by side");
  app.add_flag("--compare-hardware", f->whatif.hardware, "whatif: one engine's choice on each swept device");
  app.add_option("--axis", f->whatif.axis,
                 "whatif: one choice under each value of a swept axis (engine, hardware, kv_dtype, page_size, tp, "
                 "cuda_graphs, weight_dtype, spec_decoding)");
  app.add_option("--baseline", f->whatif.baseline,
                 "whatif --axis: the value the others are compared with (default: the engine's default, the "
                 "smallest, graphs on)");
  app.add_option("--spec-accept-length", f->whatif.spec_accept_length,
                 "whatif --axis spec_decoding: mean tokens a verify step emits per request (default: see the report)")
      ->check(CLI::Range(1.0, 1024.0));
  app.add_option("--engine", f->whatif.engine, "whatif: only this engine (the one --compare-hardware follows)");
  app.add_option("--hardware", f->whatif.hardware_filter, "whatif: only this hardware profile");
  app.add_option("--model", f->whatif.model_filter, "whatif: only this model");
  app.add_option("--study", f->study, "capacity: the capacity study (name or id; default: the store's only one)");
  return [&global, f]() {
    if (f->what == "serving") {
      if (f->published.empty()) throw UsageError("report serving needs --published DIR (measurements/data/serving)");
      if (!f->db.empty()) throw UsageError("report serving reads --published, not --db");
      return runServingReport(global, f->published, f->out_dir);
    }
    if (!f->published.empty() && f->what != "validation") {
      throw UsageError("--published is for report serving and report validation; report " + f->what + " reads --db");
    }
    if (f->db.empty()) throw UsageError("report " + f->what + " needs --db FILE");
    return f->what == "validation" ? runValidationReport(global, *f) : runStoreReport(global, *f);
  };
}

}  // namespace attnsim::cli
