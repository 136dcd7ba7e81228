// The what-if report: two or more backends, engines' own choices, or devices side by side over the
// swept space: validity with the engines' reasons, attention and step time, bound, eager against
// CUDA graphs, and which one wins where (heat maps over batch × context).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "reports/StudyReports.hpp"
#include "reports/StudyReportsWhatIfSubjects.hpp"
#include "reports/SvgPlots.hpp"

namespace attnsim {

namespace {

using nlohmann::json;
using namespace study_report;
using whatif::Aligned;
using whatif::Entry;
using whatif::Subject;

Entry candidateEntry(const StudyData& data, std::size_t i, const Subject& s, bool whole_step) {
  const StudyPoint& p = data.points[i];
  Entry e;
  e.present = true;
  const auto [begin, end] = data.candidatesOf(i);
  for (std::size_t c = begin; c < end; ++c) {
    const StudyCandidate& cand = data.candidates[c];
    const bool chosen = s.backend.empty() ? p.default_slot && cand.slot == *p.default_slot : cand.backend == s.backend;
    if (!chosen) continue;
    e = {true,         cand.predicted, cand.backend,  cand.reason, cand.bound,    cand.graph_mode, cand.attention_us,
         cand.step_us, cand.eager_us,  cand.graph_us, cand.band,   cand.tie_band, cand.provenance};
    // Devices, TP or CUDA graphs compared: the whole step differs, so the whole step's band separates them.
    if (whole_step) e.tie_band = e.band;
    if (!cand.predicted && e.reason.empty()) e.reason = p.valid ? "not ranked" : p.refusal;
    return e;
  }
  e.reason = p.valid ? "not a candidate here" : p.refusal;
  return e;
}

Entry entryOf(const StudyData& data, std::size_t i, const Subject& s, bool whole_step) {
  Entry e = candidateEntry(data, i, s, whole_step);
  const StudyPoint& p = data.points[i];
  e.undeployable = e.valid && !p.deployable();  // not deployable (memory), apart from the engine's refusal
  e.valid = e.valid && !e.undeployable;
  if (e.undeployable) e.reason = p.memoryNote();
  return e;
}

std::vector<Aligned> align(const StudyData& data, const WhatIfOptions& o, const std::vector<Subject>& subjects) {
  std::map<std::string, std::size_t> index;
  std::vector<Aligned> out;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    if ((!o.hardware_filter.empty() && p.hardware != o.hardware_filter) ||
        (!o.model_filter.empty() && p.model != o.model_filter) || (!o.engine.empty() && p.engine != o.engine)) {
      continue;
    }
    const std::string panel = !o.axis.empty()
                                  ? whatif::axisPanel(p, o.axis)
                                  : (o.hardware ? "" : p.hardware + " · ") + p.model + " · " + optionsLabel(p);
    for (std::size_t s = 0; s < subjects.size(); ++s) {
      const Subject& sub = subjects[s];
      if ((!sub.engine.empty() && sub.engine != p.engine) || (!sub.hardware.empty() && sub.hardware != p.hardware) ||
          (!sub.axis_value.empty() && whatif::axisValue(p, o.axis) != sub.axis_value)) {
        continue;
      }
      const std::string workload = o.axis.empty() ? p.workload : whatif::alignedWorkload(p, o.axis);
      auto [it, fresh] = index.try_emplace(fmt::format("{}|{}", panel, workload), out.size());
      if (fresh) {
        out.push_back({panel, workload, p.batch, p.context, p.phase == "decode" && p.workload.rfind("decode", 0) == 0,
                       std::vector<Entry>(subjects.size())});
      }
      Entry& e = out[it->second].entries[s];
      e = entryOf(data, i, sub, !whatif::attentionOnly(whatif::comparedAxis(o)));
      if (o.axis == "spec_decoding" && p.phase == "verify") e.tokens = whatif::acceptLength(p, o);
    }
  }
  return out;
}

// The fastest valid subject, its margin over the next (-1: none other valid), and whether the two
// are tied within their uncertainty bands.
struct Winner {
  std::size_t index = 0;
  double margin = -1;
  bool tied = false;
};
std::optional<Winner> winner(const Aligned& a) {
  std::optional<std::size_t> best, second;
  for (std::size_t s = 0; s < a.entries.size(); ++s) {
    if (!a.entries[s].valid) continue;
    if (!best || a.entries[s].perToken() < a.entries[*best].perToken()) {
      second = best;
      best = s;
    } else if (!second || a.entries[s].perToken() < a.entries[*second].perToken()) {
      second = s;
    }
  }
  if (!best) return std::nullopt;
  if (!second) return Winner{*best, -1.0, false};
  const Entry& b = a.entries[*best];
  const Entry& n = a.entries[*second];
  return Winner{*best, n.perToken() / b.perToken() - 1,
                withinBands(b.perToken(), b.tie_band, n.perToken(), n.tie_band)};
}

std::string entryText(const Subject& s, const Entry& e) {
  if (!e.present) return s.label + ": not swept here";
  if (!e.valid) return s.label + (e.undeployable ? ": " : ": refused: ") + e.reason;
  return fmt::format("{}: {} step {} µs ±{} ({} figures; attention {} µs, {}-bound, {})", s.label, e.backend,
                     micros(e.step_us), percent(e.band), e.provenance.empty() ? "unknown" : e.provenance,
                     micros(e.attention_us), e.bound, e.graph_mode);
}

HeatCell winnerCell(const Aligned& a, const std::vector<Subject>& subjects) {
  std::vector<std::string> lines;
  for (std::size_t s = 0; s < subjects.size(); ++s) lines.push_back(entryText(subjects[s], a.entries[s]));
  const std::string tooltip = a.panel + " · " + a.workload + "\n" + join(lines, "\n");
  const auto w = winner(a);
  const bool memory = std::any_of(a.entries.begin(), a.entries.end(), [](const Entry& e) { return e.undeployable; });
  if (!w) return {memory ? kNotDeployableColor : "#bdbdbd", memory ? "M" : "×", tooltip};
  if (w->margin < 0) return {fadedColor(paletteColor(w->index), 0.25), "only", tooltip};
  const std::string margin = w->margin < 0.005 ? "<1" : fmt::format("{:.0f}", 100 * w->margin);
  if (w->tied) return {fadedColor(paletteColor(w->index), 0.15), "≈" + margin, tooltip + "\n(tied within the bands)"};
  return {fadedColor(paletteColor(w->index), 0.3 + 0.7 * std::min(1.0, w->margin / 0.5)), margin, tooltip};
}

std::vector<HeatMap> decodeMaps(const std::vector<Aligned>& rows, const std::vector<Subject>& subjects) {
  std::map<std::string, HeatMap> maps;
  std::vector<std::string> order;
  for (const auto& a : rows) {
    if (!a.decode) continue;
    auto [it, fresh] = maps.try_emplace(a.panel);
    HeatMap& m = it->second;
    if (fresh) {
      order.push_back(a.panel);
      m.title = a.panel;
      m.x_label = "decode batch (requests)";
      m.y_label = "context";
    }
    const std::string col = std::to_string(a.batch), row = std::to_string(a.context);
    auto c = std::find(m.columns.begin(), m.columns.end(), col);
    if (c == m.columns.end()) {
      m.columns.push_back(col);
      for (auto& cells : m.cells) cells.resize(m.columns.size());
      c = m.columns.end() - 1;
    }
    auto r = std::find(m.rows.begin(), m.rows.end(), row);
    if (r == m.rows.end()) {
      m.rows.push_back(row);
      m.cells.emplace_back(m.columns.size());
      r = m.rows.end() - 1;
    }
    m.cells[static_cast<std::size_t>(r - m.rows.begin())][static_cast<std::size_t>(c - m.columns.begin())] =
        winnerCell(a, subjects);
  }
  std::vector<HeatMap> out;
  out.reserve(order.size());
  for (const auto& key : order) out.push_back(std::move(maps[key]));
  return out;
}

struct SubjectSummary {
  std::int64_t points = 0, valid = 0, wins = 0, ties = 0, memory_bound = 0, graphed = 0;
  double attention_sum = 0, step_sum = 0, graph_gain_sum = 0, band_sum = 0;
  std::map<std::string, int> reasons;
};

std::vector<SubjectSummary> summarize(const std::vector<Aligned>& rows, std::size_t subjects) {
  std::vector<SubjectSummary> out(subjects);
  for (const auto& a : rows) {
    const auto w = winner(a);
    for (std::size_t s = 0; s < subjects; ++s) {
      const Entry& e = a.entries[s];
      if (!e.present) continue;
      SubjectSummary& sum = out[s];
      ++sum.points;
      if (!e.valid) {
        ++sum.reasons[e.undeployable ? "not deployable (memory)" : e.reason];
        continue;
      }
      ++sum.valid;
      const bool first = w && w->index == s && w->margin >= 0;
      sum.wins += first && !w->tied ? 1 : 0;  // fastest beyond the bands
      sum.ties += first && w->tied ? 1 : 0;
      sum.band_sum += e.band;
      sum.memory_bound += e.bound == "memory" ? 1 : 0;
      sum.attention_sum += e.attention_us;
      sum.step_sum += e.step_us;
      if (e.graph_us > 0 && e.graph_mode != "eager") {
        ++sum.graphed;
        sum.graph_gain_sum += e.eager_us / e.graph_us - 1;
      }
    }
  }
  return out;
}

ReportTable summaryTable(const std::vector<Subject>& subjects, const std::vector<SubjectSummary>& sums) {
  ReportTable t{{"compared", "points", "valid", "fastest at", "tied fastest at", "band (mean)", "mean attention µs",
                 "mean step µs", "memory-bound", "graphs save (mean)", "refused because (points)"},
                {}};
  for (std::size_t s = 0; s < subjects.size(); ++s) {
    const SubjectSummary& m = sums[s];
    const double v = static_cast<double>(std::max<std::int64_t>(1, m.valid));
    t.rows.push_back({subjects[s].label, std::to_string(m.points), std::to_string(m.valid), std::to_string(m.wins),
                      std::to_string(m.ties), m.valid ? "±" + percent(m.band_sum / v) : "-",
                      m.valid ? micros(m.attention_sum / v) : "-", m.valid ? micros(m.step_sum / v) : "-",
                      m.valid ? percent(static_cast<double>(m.memory_bound) / v) : "-",
                      m.graphed ? percent(m.graph_gain_sum / static_cast<double>(m.graphed)) : "-",
                      reasonsText(m.reasons)});
  }
  return t;
}

ReportTable otherWorkloads(const std::vector<Aligned>& rows, const std::vector<Subject>& subjects) {
  ReportTable t{{"where", "workload"}, {}};
  for (const auto& s : subjects) t.header.push_back(s.label + " step µs");
  t.header.emplace_back("fastest (margin)");
  for (const auto& a : rows) {
    if (a.decode) continue;
    std::vector<std::string> row{a.panel, a.workload};
    for (const auto& e : a.entries)
      row.push_back(!e.present ? "-" : e.valid ? micros(e.step_us) : e.undeployable ? "not deployable" : "refused");
    const auto w = winner(a);
    row.push_back(!w ? "-"
                  : w->margin < 0
                      ? subjects[w->index].label + " (only)"
                      : fmt::format("{}{} (+{})", w->tied ? "≈ " : "", subjects[w->index].label, percent(w->margin)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

json alignedJson(const std::vector<Aligned>& rows, const std::vector<Subject>& subjects, const std::string& axis_name) {
  const bool axis = !axis_name.empty();
  json out = json::array();
  for (const auto& a : rows) {
    json entries = json::array();
    for (std::size_t s = 0; s < subjects.size(); ++s) {
      const Entry& e = a.entries[s];
      if (!e.present) continue;
      json j = {{"subject", subjects[s].label}, {"valid", e.valid}, {"backend", e.backend}};
      if (e.valid) {
        j.update({{"attention_us", e.attention_us},
                  {"step_us", e.step_us},
                  {"eager_us", e.eager_us},
                  {"graph_us", e.graph_us},
                  {"bound", e.bound},
                  {"graph_mode", e.graph_mode},
                  {"band", e.band},
                  {"provenance", e.provenance}});
        if (axis_name == "spec_decoding")
          j.update({{"tokens_per_step", e.tokens}, {"us_per_output_token", e.perToken()}});
        if (const auto r = axis ? whatif::ratioToBaseline(a, s) : std::nullopt) {
          j.update({{"ratio_to_baseline", r->first}, {"within_band_of_baseline", r->second}});
        }
      } else {
        j["reason"] = e.reason;
        j["not_deployable"] = e.undeployable;
      }
      entries.push_back(j);
    }
    const auto w = winner(a);
    out.push_back({{"where", a.panel},
                   {"workload", a.workload},
                   {"entries", entries},
                   {"fastest", w ? json(subjects[w->index].label) : json(nullptr)},
                   {"margin", w && w->margin >= 0 ? json(w->margin) : json(nullptr)},
                   {"tied_within_band", w && w->tied}});
  }
  return out;
}

std::vector<LegendItem> subjectLegend(const std::vector<Subject>& subjects) {
  std::vector<LegendItem> out;
  for (std::size_t s = 0; s < subjects.size(); ++s) out.push_back({paletteColor(s), subjects[s].label + " fastest"});
  out.push_back({"#bdbdbd", "× none valid"});
  out.push_back({kNotDeployableColor, "M none deployable: the batch does not fit the engine's KV pool (memory)"});
  return out;
}

std::string whatIfCommand(const StudyData& data, const WhatIfOptions& options) {
  std::string command = fmt::format("attnsim report whatif --db {} --sweep {} --out DIR", shellWord(data.path),
                                    shellWord(data.sweep.name));
  if (!options.compare.empty()) command += " --compare " + shellWord(join(options.compare, ","));
  if (options.engines) command += " --compare-engines";
  if (options.hardware) command += " --compare-hardware";
  for (const auto& [flag, value] : {std::pair{"--axis", options.axis},
                                    {"--baseline", options.baseline},
                                    {"--engine", options.engine},
                                    {"--hardware", options.hardware_filter},
                                    {"--model", options.model_filter}}) {
    if (!value.empty()) command += fmt::format(" {} {}", flag, shellWord(value));
  }
  if (options.spec_accept_length) command += fmt::format(" --spec-accept-length {}", *options.spec_accept_length);
  return command;
}

}  // namespace

// The matched points. Under --axis, a value no matched point has (one the filtered engine was not swept
// with, as SGLang's fp8_e4m3 for vLLM) is left out; a baseline none has is an error.
std::vector<Aligned> alignedRows(const StudyData& data, const WhatIfOptions& o, std::vector<Subject>& subjects) {
  auto rows = align(data, o, subjects);
  if (rows.empty()) throw UsageError("report whatif: no point of the sweep matches the filters");
  if (o.axis.empty()) return rows;
  auto present = [&rows](std::size_t s) {
    return std::any_of(rows.begin(), rows.end(), [s](const Aligned& a) { return a.entries[s].present; });
  };
  if (!present(0)) {
    throw UsageError(fmt::format("--baseline {}: no point matching the filters has {}={}", subjects[0].axis_value,
                                 o.axis, subjects[0].axis_value));
  }
  for (std::size_t s = subjects.size(); s-- > 1;) {
    if (present(s)) continue;
    subjects.erase(subjects.begin() + static_cast<std::ptrdiff_t>(s));
    for (auto& a : rows) a.entries.erase(a.entries.begin() + static_cast<std::ptrdiff_t>(s));
  }
  if (subjects.size() < 2) {
    throw UsageError(fmt::format("report whatif --axis {}: the points matching the filters have one value of it ({})",
                                 o.axis, subjects[0].axis_value));
  }
  return rows;
}

StudyReport whatIfReport(const StudyData& data, const WhatIfOptions& options) {
  auto subjects = whatif::subjectsOf(data, options);
  const auto rows = alignedRows(data, options, subjects);
  std::vector<std::string> labels;
  labels.reserve(subjects.size());
  for (const auto& s : subjects) labels.push_back(s.label);
  StudyReport report{"whatif", HtmlDocument("What if: " + join(labels, " vs ")), {}};
  HtmlDocument& doc = report.document;
  provenance(doc, data, whatIfCommand(data, options));
  const auto sums = summarize(rows, subjects.size());
  doc.paragraph(
      "How to read it: each compared item is looked up at every point of the sweep where it applies; 'fastest at' "
      "counts the points where it has the shortest predicted step time among the compared items by more than the "
      "two attention calls' uncertainty bands (the whole steps' bands when devices, TP or CUDA graphs are compared); "
      "'tied fastest at' "
      "counts those within them (a tie, '≈' below; docs/COST_MODEL.md 'Uncertainty'). 'graphs save' is the eager "
      "step time over the CUDA-graph one, minus 1, where the engine runs graphs.");
  doc.heading("Side by side");
  doc.table(summaryTable(subjects, sums));
  doc.heading("Which one wins over batch × context (decode)");
  doc.paragraph(
      "One panel per device, model and serving options; the color is the fastest item, its strength and "
      "number the margin over the next fastest in percent ('<1': under 1%; 'only': the others are refused there).");
  const auto maps = decodeMaps(rows, subjects);
  if (!maps.empty()) {
    doc.figure({"whatif-decode.svg", heatMapGridSvg(maps, 3, subjectLegend(subjects)),
                "fastest of " + join(labels, ", ") + " per decode batch and context"});
  }
  if (options.axis.empty()) {
    doc.heading("Prefill, chunked prefill and mixed batches");
    doc.table(otherWorkloads(rows, subjects));
  } else {
    whatif::axisSection(doc, rows, subjects, options);
  }
  json summary = json::array();
  for (std::size_t s = 0; s < subjects.size(); ++s) {
    summary.push_back({{"subject", subjects[s].label},
                       {"points", sums[s].points},
                       {"valid", sums[s].valid},
                       {"fastest_at", sums[s].wins},
                       {"tied_fastest_at", sums[s].ties},
                       {"refusals", sums[s].reasons}});
  }
  report.json = {{"kind", "whatif"},
                 {"provenance", provenanceJson(data)},
                 {"subjects", labels},
                 {"summary", summary},
                 {"points", alignedJson(rows, subjects, options.axis)}};
  if (!options.axis.empty()) report.json.update({{"axis", options.axis}, {"baseline", subjects.front().axis_value}});
  if (options.axis == "spec_decoding") {
    report.json["acceptance"] = {
        {"accept_length", options.spec_accept_length ? json(*options.spec_accept_length) : json()},
        {"default_accept_rate", whatif::kDefaultAcceptRate},
        {"assumed", whatif::acceptanceNote(options)}};
  }
  return report;
}

}  // namespace attnsim
