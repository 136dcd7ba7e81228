// The priorities report: per engine × hardware × model class, how often the engine's own choice
// is the fastest valid backend, its regret, and where its priority list is wrong.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/Strings.hpp"
#include "reports/StudyReports.hpp"
#include "reports/StudyReportsMeasured.hpp"
#include "reports/StudyReportsPriorityPoints.hpp"
#include "reports/SvgPlots.hpp"

namespace attnsim {

namespace {

using nlohmann::json;
using namespace study_report;

struct PriorityRow {
  std::string engine, hardware, model_class;
  std::set<std::string> models, defaults;
  std::int64_t points = 0, refused = 0, undeployable = 0, unranked = 0, ranked = 0, fastest = 0;
  std::int64_t tied = 0, wrong = 0;  // slower than the fastest: within the bands, or beyond them
  double regret_sum = 0, worst = 0, band_sum = 0;
  std::vector<double> regrets;  // of the ranked points: their distribution
  std::string worst_where;
  std::map<std::string, int> faster;  // backends that beat the default beyond the bands, with how often
};

std::string backendAt(const StudyData& data, std::size_t i, const std::optional<std::int64_t>& slot) {
  const StudyCandidate* c = priorityCandidate(data, i, slot);
  return c ? c->backend : std::string();
}

void count(PriorityRow& row, const StudyData& data, std::size_t i) {
  const StudyPoint& p = data.points[i];
  row.models.insert(p.model);
  ++row.points;
  const PriorityVerdict v = priorityVerdict(p);
  if (v == PriorityVerdict::Refused) {
    ++row.refused;
    return;
  }
  if (v == PriorityVerdict::NotDeployable) {  // the batch does not fit: no regret, no verdict on the priority list
    ++row.undeployable;
    return;
  }
  if (v == PriorityVerdict::Unranked) {
    ++row.unranked;
    return;
  }
  ++row.ranked;
  row.defaults.insert(backendAt(data, i, p.default_slot));
  if (const StudyCandidate* d = priorityCandidate(data, i, p.default_slot)) row.band_sum += d->band;
  if (v == PriorityVerdict::Fastest) {
    ++row.fastest;
  } else if (v == PriorityVerdict::Tied) {
    ++row.tied;
  } else {
    ++row.wrong;
    ++row.faster[backendAt(data, i, p.best_slot)];
  }
  row.regret_sum += *p.regret;
  row.regrets.push_back(*p.regret);
  if (*p.regret > row.worst) {
    row.worst = *p.regret;
    row.worst_where = fmt::format("{} {} {}", p.model, optionsLabel(p), p.workload);
  }
}

std::vector<PriorityRow> priorityRows(const StudyData& data) {
  std::map<std::tuple<std::string, std::string, std::string>, PriorityRow> rows;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    const std::string cls = modelClass(data.catalog, p.model);
    PriorityRow& row = rows[{p.engine, p.hardware, cls}];
    row.engine = p.engine;
    row.hardware = p.hardware;
    row.model_class = cls;
    count(row, data, i);
  }
  std::vector<PriorityRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

std::string fasterText(const std::map<std::string, int>& faster) {
  std::vector<std::pair<std::string, int>> sorted(faster.begin(), faster.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  parts.reserve(sorted.size());
  for (const auto& [name, n] : sorted) parts.push_back(fmt::format("{} ({})", name, n));
  return parts.empty() ? "-" : join(parts, ", ");
}

ReportTable summaryTable(const std::vector<PriorityRow>& rows) {
  ReportTable t{{"engine", "hardware", "model class", "models", "points", "refused", "not deployable (memory)",
                 "ranked", "default fastest", "tied within band", "wrong beyond band", "default's band (mean)",
                 "mean regret", "median regret", "p90 regret", "worst regret", "worst at", "engine's default",
                 "faster beyond the band instead (points)"},
                {}};
  for (const auto& r : rows) {
    const bool any = r.ranked > 0;
    const auto n = static_cast<double>(r.ranked);
    t.rows.push_back(
        {r.engine, r.hardware, r.model_class, join(std::vector<std::string>(r.models.begin(), r.models.end()), ", "),
         std::to_string(r.points), std::to_string(r.refused), std::to_string(r.undeployable), std::to_string(r.ranked),
         any ? percent(static_cast<double>(r.fastest) / n) : "-", std::to_string(r.tied), std::to_string(r.wrong),
         any ? "±" + percent(r.band_sum / n) : "-", any ? percent(r.regret_sum / static_cast<double>(r.ranked)) : "-",
         any ? percent(quantileOf(r.regrets, 0.5)) : "-", any ? percent(quantileOf(r.regrets, 0.9)) : "-",
         any ? percent(r.worst) : "-", r.worst > 0 ? r.worst_where : "-",
         join(std::vector<std::string>(r.defaults.begin(), r.defaults.end()), ", "), fasterText(r.faster)});
  }
  return t;
}

json rowsJson(const std::vector<PriorityRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    out.push_back({{"engine", r.engine},
                   {"hardware", r.hardware},
                   {"model_class", r.model_class},
                   {"models", r.models},
                   {"points", r.points},
                   {"refused", r.refused},
                   {"not_deployable", r.undeployable},
                   {"unranked", r.unranked},
                   {"ranked", r.ranked},
                   {"default_fastest",
                    r.ranked ? json(static_cast<double>(r.fastest) / static_cast<double>(r.ranked)) : json(nullptr)},
                   {"tied_within_band", r.tied},
                   {"wrong_beyond_band", r.wrong},
                   {"mean_default_band", r.ranked ? json(r.band_sum / static_cast<double>(r.ranked)) : json(nullptr)},
                   {"mean_regret", r.ranked ? json(r.regret_sum / static_cast<double>(r.ranked)) : json(nullptr)},
                   {"median_regret", r.ranked ? json(quantileOf(r.regrets, 0.5)) : json(nullptr)},
                   {"p90_regret", r.ranked ? json(quantileOf(r.regrets, 0.9)) : json(nullptr)},
                   {"worst_regret", r.ranked ? json(r.worst) : json(nullptr)},
                   {"worst_at", r.worst_where},
                   {"defaults", r.defaults},
                   {"faster_instead", r.faster}});
  }
  return out;
}

HeatCell regretCell(const StudyData& data, std::size_t i) {
  const StudyPoint& p = data.points[i];
  const std::string where = fmt::format("{} · {} · {} · {}", p.hardware, p.model, optionsLabel(p), p.workload);
  const PriorityVerdict v = priorityVerdict(p);
  if (v == PriorityVerdict::Refused) return {"#bdbdbd", "×", where + ": the engine refuses: " + p.refusal};
  if (v == PriorityVerdict::NotDeployable) return {kNotDeployableColor, "M", where + ": " + p.memoryNote()};
  if (v == PriorityVerdict::Unranked) return {"#eeeeee", "-", where + ": the engine's choice is not ranked here"};
  const std::string chosen = backendAt(data, i, p.default_slot);
  if (v == PriorityVerdict::Fastest) {
    return {regretColor(0), "", where + ": " + chosen + " (the engine's choice) is fastest"};
  }
  const bool tied = v == PriorityVerdict::Tied;
  const StudyCandidate* d = priorityCandidate(data, i, p.default_slot);
  const StudyCandidate* best = priorityCandidate(data, i, p.best_slot);
  return {regretColor(*p.regret),
          fmt::format("{}{}", tied ? "≈" : "", *p.regret < 0.005 ? "<1" : fmt::format("{:.0f}", 100 * *p.regret)),
          fmt::format("{}: the engine picks {} (±{}), {} (±{}) is faster; regret {} ({} µs per step), {}", where,
                      chosen, percent(d ? d->band : 0), best ? best->backend : "", percent(best ? best->band : 0),
                      percent(*p.regret), micros(p.regret_us.value_or(0)),
                      tied ? "within the uncertainty bands (a tie)" : "beyond the uncertainty bands")};
}

struct RegretMap {
  HeatMap map;
  bool grouped = false;  // cells are groups of points (the per-point map would not fit the page)
};

// One heat map per engine: rows hardware · model · options, columns the workloads in spec order;
// where that is wider than the page or taller than kMaxPointRows, the engine's map of groups instead.
std::vector<RegretMap> regretMaps(const StudyData& data) {
  std::map<std::string, HeatMap> maps;
  std::map<std::string, std::vector<std::size_t>> points_of;
  std::map<std::string, std::map<std::string, std::size_t>> rows, columns;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    points_of[p.engine].push_back(i);
    HeatMap& m = maps[p.engine];
    const std::string row = fmt::format("{} · {} · {}", p.hardware, p.model, optionsLabel(p));
    auto [r, new_row] = rows[p.engine].try_emplace(row, m.rows.size());
    if (new_row) {
      m.rows.push_back(row);
      m.cells.emplace_back(m.columns.size());
    }
    auto [c, new_column] = columns[p.engine].try_emplace(p.workload, m.columns.size());
    if (new_column) {
      m.columns.push_back(p.workload);
      for (auto& cells : m.cells) cells.resize(m.columns.size());
    }
    m.cells[r->second][c->second] = regretCell(data, i);
  }
  std::vector<RegretMap> out;
  for (auto& [engine, m] : maps) {
    m.title = engine + ": regret of the engine's own choice (% of step time)";
    m.y_label = "hardware · model · options";
    m.x_label = "workload (hover a cell for the backends)";
    if (heatMapSvgWidth(m) <= kPageWidth && m.rows.size() <= kMaxPointRows) {
      out.push_back({std::move(m), false});
    } else {
      out.push_back({groupedRegretMap(data, engine, points_of[engine]), true});
    }
  }
  return out;
}

std::vector<LegendItem> regretLegend() {
  return {{regretColor(0), "the engine's choice is fastest"},
          {regretColor(0.1), "10% slower than the fastest valid backend"},
          {regretColor(0.25), "25%"},
          {regretColor(0.5), "50% or more"},
          {"#ffffff", "≈ within the uncertainty bands: a tie, not counted wrong"},
          {"#bdbdbd", "× the engine refuses the configuration"},
          {kNotDeployableColor,
           "M not deployable (memory): the batch does not fit the engine's KV pool beside the weights"},
          {"#eeeeee", "- the engine's choice is not ranked"}};
}

void regretSection(HtmlDocument& doc, const StudyData& data) {
  doc.heading("Where the priority list is wrong");
  doc.paragraph(
      "One heat map per engine. A cell is one point: its number is the regret in percent ('<1': under 1%), empty "
      "where the engine's pick is the fastest; grey where the engine refuses the configuration; 'M' (violet) where it "
      "accepts it but the deployment does not hold the batch (the weights leave no KV pool, or the batch's KV exceeds "
      "it): not deployable, so left out of the regrets and the table. Hover a cell (HTML) "
      "for the backends.");
  const auto maps = regretMaps(data);
  if (std::any_of(maps.begin(), maps.end(), [](const RegretMap& m) { return m.grouped; })) {
    doc.paragraph(fmt::format(
        "An engine with more points than a page holds ({} px wide, {} rows) is drawn by groups: a row per device and "
        "model, a column per serving options and phase (or per phase). A group's number is its worst regret beyond "
        "the bands, '≈' where its pick is only ever tied within them; its tooltip gives the regret distribution "
        "(median, p90, worst and where). The table below lists the worst points; priorities.json has every point.",
        kPageWidth, kMaxPointRows));
  }
  std::size_t figure = 0;
  for (const auto& m : maps) {
    doc.figure({fmt::format("priorities-{}.svg", ++figure), heatMapSvg(m.map, regretLegend()),
                m.map.title + (m.grouped ? ", per group of points" : ", per point")});
  }
}

}  // namespace

StudyReport prioritiesReport(const StudyData& data) {
  StudyReport report{"priorities", HtmlDocument("Is each engine's own choice the fastest valid backend?"), {}};
  HtmlDocument& doc = report.document;
  provenance(doc, data,
             fmt::format("attnsim report priorities --db {} --sweep {} --out DIR", shellWord(data.path),
                         shellWord(data.sweep.name)));
  doc.paragraph(
      "How to read it: an engine picks one attention backend on its own (its priority list and rules). At every "
      "point of the sweep (a device, a model, serving options and a workload) attnsim predicts the step time of "
      "every backend the engine accepts there; the regret is how much slower the engine's own pick is than the "
      "fastest of them (0% when the pick is the fastest). The heat maps show it point by point, the table sums it "
      "up per engine, device and model class: 'default fastest' is the share of the ranked points where the pick "
      "is the fastest, 'faster instead' names the backends that beat it, and the last section checks the "
      "predictions against measured kernels where the store has them.");
  doc.paragraph(
      "Uncertainty: every predicted step time carries a relative band from the provenance of its kernel's figures "
      "(a measured fit's held-out error, a published figure's or the catalog default's documented band; "
      "docs/COST_MODEL.md 'Uncertainty'). A default slower than the fastest backend is counted as a wrong default "
      "only when the gap exceeds the two attention calls' bands ('wrong beyond band'; the rest of the step is the "
      "same work for both); within them the point is a tie within uncertainty ('tied within band', '≈' in the "
      "heat maps), not evidence against the priority list. Points written by a store older than schema 4 carry "
      "no band and count as before.");
  regretSection(doc, data);
  const auto rows = priorityRows(data);
  doc.heading("The engines' own choices");
  doc.table(summaryTable(rows));
  doc.heading(fmt::format("The largest regrets beyond the bands (at most {} points)", kWorstPointsListed), 3);
  doc.paragraph(
      "The points where the engine's pick is slowest against the fastest backend it accepts, the gap beyond both "
      "bands. priorities.json lists every point ('points': scenario, the engine's pick and the fastest with their "
      "bands, the regret, the verdict, deployable or why not).");
  doc.table(worstPointsTable(data, kWorstPointsListed));
  report.json = {{"kind", "priorities"}, {"provenance", provenanceJson(data)}, {"rows", rowsJson(rows)}};
  report.json["points"] = priorityPointsJson(data);
  report.json["measured"] = measuredSection(doc, data);
  report.json["priority_lists"] = priorityCheckSection(doc, data);
  return report;
}

}  // namespace attnsim
