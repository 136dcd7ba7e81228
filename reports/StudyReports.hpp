#pragma once
// The study reports (docs/REPORTS.md): priorities (is each engine's own choice the fastest valid
// backend?), whatif (backends, engines or hardware side by side) and matrix (the engines' support
// matrices), read from a study store's sweep tables. Each is a document (Markdown + one HTML
// page with inline SVG) and JSON; each states the sweep, catalog hash, program version and
// calibration it comes from, and is the same for the same store.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "catalog/Catalog.hpp"
#include "reports/HtmlDocument.hpp"
#include "study/Store.hpp"
#include "study/StudyQueries.hpp"

namespace attnsim {

// What the reports read: one sweep of a store, the catalog it ran with and the measurements.
struct StudyData {
  StudySweep sweep;
  Catalog catalog;
  bool catalog_from_store = false;  // false: the store lacks it, this attnsim's own catalog stands in
  std::vector<StudyPoint> points;
  std::vector<StudyCandidate> candidates;    // by point and slot
  std::vector<MeasurementRow> measurements;  // attention rows
  std::string path;                          // the store's file, as given

  // The candidates at point index `i` of `points` (a range into `candidates`).
  [[nodiscard]] std::pair<std::size_t, std::size_t> candidatesOf(std::size_t i) const { return ranges.at(i); }
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
};

// `sweep`: a sweep's name or id ("" when the store holds one). `fallback` stands in when the
// store has no catalog files for the sweep's hash.
StudyData loadStudyData(const Store& store, const std::string& sweep, const Catalog& fallback);

struct StudyReport {
  std::string kind;  // file stem: priorities, whatif, matrix
  HtmlDocument document;
  nlohmann::json json;
};

StudyReport prioritiesReport(const StudyData& data);
StudyReport matrixReport(const StudyData& data);

struct WhatIfOptions {
  std::vector<std::string> compare;  // engine:BACKEND selectors
  bool engines = false;              // each engine's own choice, side by side
  bool hardware = false;             // one engine's choice (or --compare's single backend) on each device
  std::string engine, hardware_filter, model_filter;
  // One engine's choice (or --compare's one backend) under each value of a scenario axis of the sweep:
  // engine, hardware, kv_dtype, page_size, tp or cuda_graphs; each compared with the baseline value
  // (default: the engine's default, the smallest number, graphs on).
  std::string axis, baseline;
  // --axis spec_decoding: the mean tokens a verify step emits per request (the bonus token included); unset:
  // the default per-position acceptance (whatif::kDefaultAcceptRate) over the point's draft tokens.
  std::optional<double> spec_accept_length;
};
StudyReport whatIfReport(const StudyData& data, const WhatIfOptions& options);

// KIND.md with its figures as SVG files, KIND.html (self-contained) and KIND.json in `dir`.
void writeStudyReport(const StudyReport& report, const std::string& dir);

// Shared by the report files.
namespace study_report {
// The provenance paragraph every report starts with, and its JSON.
void provenance(HtmlDocument& doc, const StudyData& data, const std::string& command);
nlohmann::json provenanceJson(const StudyData& data);
// "GQA dense", "MLA MoE", ... from the catalog; "not in the catalog" for a model it lacks.
std::string modelClass(const Catalog& catalog, const std::string& model);
// The serving options a group varies in beyond hardware and model: " · tp=8 · kv=fp8 ...".
std::string optionsLabel(const StudyPoint& point);
std::string percent(double fraction);
// An argument as a POSIX shell reads it back (single-quoted when it holds anything unusual).
std::string shellWord(const std::string& word);
std::string micros(double us);
// "reason (points); ..." or "-".
std::string reasonsText(const std::map<std::string, int>& reasons);
// The cell colour of a point the engine accepts but whose deployment does not hold the batch (violet,
// apart from the grey of a refusal).
constexpr const char* kNotDeployableColor = "#c9a0dc";
}  // namespace study_report

}  // namespace attnsim
