// What every study report shares: loading a sweep, its provenance, model classes, writing files.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "core/Files.hpp"
#include "core/Strings.hpp"
#include "reports/StudyReports.hpp"

namespace attnsim {

namespace {

Catalog storedCatalog(const Store& store, const StudySweep& sweep, const Catalog& fallback, bool& from_store) {
  auto files = storedCatalogFiles(store, sweep.catalog_hash);
  from_store = !files.empty();
  if (!from_store) return fallback;
  return Catalog::load(CatalogSource::fromFiles(std::move(files)));
}

std::string calibrationText(const StudySweep& sweep) {
  if (sweep.calibration == "catalog") {
    return "the catalog's efficiencies (with the fits its hardware/calibrations files carry)";
  }
  return "the fits of " + sweep.calibration + " (attnsim calibrate)";
}

}  // namespace

StudyData loadStudyData(const Store& store, const std::string& sweep, const Catalog& fallback) {
  const StudySweep chosen = chooseSweep(store, sweep, fallback.contentHash());
  bool from_store = false;
  StudyData data{chosen,
                 storedCatalog(store, chosen, fallback, from_store),
                 false,
                 studyPoints(store, chosen.id),
                 studyCandidates(store, chosen.id),
                 store.measurements("attention"),
                 store.path(),
                 {}};
  data.catalog_from_store = from_store;
  std::size_t at = 0;
  for (const auto& p : data.points) {
    const std::size_t begin = at;
    while (at < data.candidates.size() && data.candidates[at].point == p.id) ++at;
    data.ranges.emplace_back(begin, at);
  }
  return data;
}

void writeStudyReport(const StudyReport& report, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  for (const auto& f : report.document.figures()) writeFileAtomically(fs::path(dir) / f.file, f.svg);
  writeFileAtomically(fs::path(dir) / (report.kind + ".md"), report.document.markdown());
  writeFileAtomically(fs::path(dir) / (report.kind + ".html"), report.document.html());
  writeFileAtomically(fs::path(dir) / (report.kind + ".json"), report.json.dump(1) + "\n");
}

namespace study_report {

// How many stored predictions rest on each provenance ("" : written before schema 4, no band).
std::map<std::string, std::int64_t> provenanceCounts(const StudyData& data) {
  std::map<std::string, std::int64_t> n{{"measured", 0}, {"published", 0}, {"default", 0}};
  for (const auto& c : data.candidates) {
    if (c.predicted) ++n[c.provenance.empty() ? "unbanded" : c.provenance];
  }
  return n;
}

void provenance(HtmlDocument& doc, const StudyData& data, const std::string& command) {
  const StudySweep& w = data.sweep;
  doc.paragraph(fmt::format(
      "Study: sweep '{}' (id {}, spec hash {}) in {}, {} of its {} points stored. Catalog hash {} ({}). Program "
      "version {} (the sweep's), report by attnsim {}. Calibration: {}.",
      w.name, w.id, w.spec_hash, data.path, w.stored_points, w.points, w.catalog_hash,
      data.catalog_from_store
          ? "rebuilt from the store's catalog_files"
          : "not stored: names resolved with this attnsim's catalog, hash " + data.catalog.contentHash(),
      w.program_version, ATTNSIM_VERSION, calibrationText(w)));
  const auto n = provenanceCounts(data);
  doc.paragraph(fmt::format(
      "Uncertainty: every time below is a model prediction with a relative band (±) from where its attention "
      "kernel's figures come from: of the {} predictions, {} rest on a measured fit (band: its held-out p90 error), "
      "{} on a published figure (±{:.0f}%) and {} on catalog defaults (±{:.0f}%){}; the rest of the step counts "
      "±{:.0f}% unless calibrated (docs/COST_MODEL.md 'Uncertainty'). Measured times, where shown, are medians with "
      "their p20-p80 spread.",
      n.at("measured") + n.at("published") + n.at("default") + (n.count("unbanded") ? n.at("unbanded") : 0),
      n.at("measured"), n.at("published"), 100 * kPublishedBand, n.at("default"), 100 * kDefaultBand,
      n.count("unbanded") ? fmt::format(", {} written before schema 4 with no band", n.at("unbanded")) : "",
      100 * kNonAttentionDefaultBand));
  doc.paragraph("Regenerate with:");
  doc.command(command);
}

nlohmann::json provenanceJson(const StudyData& data) {
  const StudySweep& w = data.sweep;
  return {{"sweep", w.name},
          {"sweep_id", w.id},
          {"spec_hash", w.spec_hash},
          {"catalog_hash", w.catalog_hash},
          {"catalog_from_store", data.catalog_from_store},
          {"calibration", w.calibration},
          {"program_version", w.program_version},
          {"report_version", ATTNSIM_VERSION},
          {"points", w.points},
          {"stored_points", w.stored_points},
          {"uncertainty",
           {{"predictions_by_provenance", provenanceCounts(data)},
            {"rule", "docs/COST_MODEL.md Uncertainty: relative bands; ties within the attention bands"}}}};
}

std::string modelClass(const Catalog& catalog, const std::string& model) {
  const auto& models = catalog.models();
  const auto it = std::find_if(models.begin(), models.end(), [&](const ModelSpec& m) { return m.id == model; });
  if (it == models.end() || it->attention_layers.empty()) return "not in the catalog";
  bool mla = false, window = false, sinks = false, mha = true;
  for (const auto& l : it->attention_layers) {
    mla = mla || l.isMla();
    window = window || l.sliding_window > 0;
    sinks = sinks || l.sinks;
    mha = mha && l.num_heads == l.num_kv_heads;
  }
  std::string out = mla ? "MLA" : mha ? "MHA" : "GQA";
  out += it->moe ? " MoE" : " dense";
  if (window) out += ", sliding window";
  if (sinks) out += ", sinks";
  return out;
}

std::string optionsLabel(const StudyPoint& point) {
  std::string out = fmt::format("tp={}", point.tp);
  if (point.kv_dtype) out += " kv=" + *point.kv_dtype;
  if (point.page_size) out += fmt::format(" page={}", *point.page_size);
  if (!point.cuda_graphs) out += " eager";
  if (point.weight_dtype) out += " weights=" + *point.weight_dtype;
  return out;
}

std::string shellWord(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./:,=+-") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

std::string micros(double us) { return us >= 100 ? fmt::format("{:.0f}", us) : fmt::format("{:.2f}", us); }

std::string reasonsText(const std::map<std::string, int>& reasons) {
  std::vector<std::string> parts;
  parts.reserve(reasons.size());
  for (const auto& [r, n] : reasons) parts.push_back(fmt::format("{} ({})", r, n));
  return parts.empty() ? "-" : join(parts, "; ");
}

}  // namespace study_report

}  // namespace attnsim
