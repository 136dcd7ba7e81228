// The priorities report's per-point verdicts, its JSON of every point, the grouped heat map that
// replaces a per-point map too large for the page, and the worst points (reports/StudyReportsPriorityPoints.hpp).
#include "reports/StudyReportsPriorityPoints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace attnsim::study_report {

using nlohmann::json;

const StudyCandidate* priorityCandidate(const StudyData& data, std::size_t i, const std::optional<std::int64_t>& slot) {
  if (!slot) return nullptr;
  const auto [begin, end] = data.candidatesOf(i);
  for (std::size_t c = begin; c < end; ++c) {
    if (data.candidates[c].slot == *slot) return &data.candidates[c];
  }
  return nullptr;
}

PriorityVerdict priorityVerdict(const StudyPoint& p) {
  if (!p.valid) return PriorityVerdict::Refused;
  if (!p.deployable()) return PriorityVerdict::NotDeployable;  // no regret, no verdict on the priority list
  if (!p.default_rank || !p.regret) return PriorityVerdict::Unranked;
  if (*p.default_rank == 1) return PriorityVerdict::Fastest;
  // Slower than the fastest counts as wrong only beyond the uncertainty bands; a point written
  // before schema 4 has no bands and counts as before.
  if (p.default_within_band.value_or(false)) return PriorityVerdict::Tied;
  return PriorityVerdict::Wrong;
}

const char* priorityVerdictName(PriorityVerdict v) {
  switch (v) {
    case PriorityVerdict::Refused:
      return "refused";
    case PriorityVerdict::NotDeployable:
      return "not_deployable";
    case PriorityVerdict::Unranked:
      return "unranked";
    case PriorityVerdict::Fastest:
      return "fastest";
    case PriorityVerdict::Tied:
      return "tied_within_band";
    case PriorityVerdict::Wrong:
      return "wrong_beyond_band";
  }
  return "";
}

namespace {

json priorityBackendJson(const StudyCandidate* c) {
  if (!c || !c->predicted) return nullptr;
  return {{"backend", c->backend}, {"variant", c->variant}, {"step_us", c->step_us}, {"band", c->band}};
}

json priorityPointJson(const StudyData& data, std::size_t i) {
  const StudyPoint& p = data.points[i];
  const PriorityVerdict v = priorityVerdict(p);
  json j{{"engine", p.engine},
         {"hardware", p.hardware},
         {"model", p.model},
         {"options", optionsLabel(p)},
         {"workload", p.workload},
         {"phase", p.phase},
         {"batch", p.batch},
         {"context", p.context},
         {"verdict", priorityVerdictName(v)},
         {"deployable", p.deployable()}};
  if (v == PriorityVerdict::Refused) j["refusal"] = p.refusal;
  if (v == PriorityVerdict::NotDeployable) j["memory"] = p.memoryNote();
  j["engine_pick"] = priorityBackendJson(priorityCandidate(data, i, p.default_slot));
  j["fastest"] = priorityBackendJson(priorityCandidate(data, i, p.best_slot));
  j["regret"] = p.regret ? json(*p.regret) : json(nullptr);
  j["regret_us"] = p.regret_us ? json(*p.regret_us) : json(nullptr);
  return j;
}

// One group of points (a grouped heat map's cell) and what they say about the engine's pick.
struct PriorityGroup {
  std::map<PriorityVerdict, int> verdicts;
  std::vector<double> regrets;  // of the ranked points
  double worst_wrong = 0;       // the largest regret beyond the bands
  std::string worst_at;
  int points = 0;
};

void addToGroup(PriorityGroup& g, const StudyPoint& p) {
  const PriorityVerdict v = priorityVerdict(p);
  ++g.points;
  ++g.verdicts[v];
  if (v == PriorityVerdict::Fastest || v == PriorityVerdict::Tied || v == PriorityVerdict::Wrong)
    g.regrets.push_back(*p.regret);
  if (v == PriorityVerdict::Wrong && *p.regret > g.worst_wrong) {
    g.worst_wrong = *p.regret;
    g.worst_at = p.workload;
  }
}

HeatCell groupCell(const PriorityGroup& g, const std::string& where) {
  const auto count = [&g](PriorityVerdict v) {
    const auto it = g.verdicts.find(v);
    return it == g.verdicts.end() ? 0 : it->second;
  };
  const int refused = count(PriorityVerdict::Refused), undeployable = count(PriorityVerdict::NotDeployable);
  const int wrong = count(PriorityVerdict::Wrong), tied = count(PriorityVerdict::Tied);
  std::string tooltip = fmt::format("{}: {} points", where, g.points);
  if (!g.regrets.empty()) {
    tooltip += fmt::format(
        "; of {} ranked, the engine's pick is fastest at {}, tied within the bands at {}, slower beyond them at {}; "
        "regret median {}, p90 {}, worst {}",
        g.regrets.size(), count(PriorityVerdict::Fastest), tied, wrong, percent(quantileOf(g.regrets, 0.5)),
        percent(quantileOf(g.regrets, 0.9)), percent(quantileOf(g.regrets, 1.0)));
  }
  if (wrong > 0) tooltip += fmt::format("; worst beyond the bands {} at {}", percent(g.worst_wrong), g.worst_at);
  tooltip += fmt::format("; {} refused, {} not deployable (memory)", refused, undeployable);
  if (g.regrets.empty()) {
    if (refused == g.points) return {"#bdbdbd", "×", tooltip};
    if (undeployable > 0) return {kNotDeployableColor, "M", tooltip};
    return {"#eeeeee", "-", tooltip};
  }
  if (wrong > 0) {
    return {regretColor(g.worst_wrong), g.worst_wrong < 0.005 ? "<1" : fmt::format("{:.0f}", 100 * g.worst_wrong),
            tooltip};
  }
  return {regretColor(0), tied > 0 ? "≈" : "", tooltip};
}

// The map of `points` grouped by row (hardware · model) and by `column` of a point.
template <class Column>
HeatMap groupedMap(const StudyData& data, const std::vector<std::size_t>& points, Column column) {
  HeatMap m;
  std::map<std::string, std::size_t> row_of, column_of;
  std::map<std::pair<std::size_t, std::size_t>, PriorityGroup> groups;
  for (const std::size_t i : points) {
    const StudyPoint& p = data.points[i];
    const auto [r, new_row] = row_of.try_emplace(fmt::format("{} · {}", p.hardware, p.model), m.rows.size());
    if (new_row) m.rows.push_back(r->first);
    const auto [c, new_column] = column_of.try_emplace(column(p), m.columns.size());
    if (new_column) m.columns.push_back(c->first);
    addToGroup(groups[{r->second, c->second}], p);
  }
  m.cells.assign(m.rows.size(), std::vector<HeatCell>(m.columns.size()));
  for (const auto& [at, group] : groups) {
    m.cells[at.first][at.second] = groupCell(group, m.rows[at.first] + " · " + m.columns[at.second]);
  }
  return m;
}

}  // namespace

json priorityPointsJson(const StudyData& data) {
  json out = json::array();
  for (std::size_t i = 0; i < data.points.size(); ++i) out.push_back(priorityPointJson(data, i));
  return out;
}

HeatMap groupedRegretMap(const StudyData& data, const std::string& engine, const std::vector<std::size_t>& points) {
  HeatMap m = groupedMap(data, points, [](const StudyPoint& p) { return optionsLabel(p) + " · " + p.phase; });
  m.x_label = "options · phase (hover a cell for the regret distribution)";
  if (heatMapSvgWidth(m) > kPageWidth) {
    m = groupedMap(data, points, [](const StudyPoint& p) { return p.phase; });
    m.x_label = "phase, every option together (hover a cell for the regret distribution)";
  }
  m.title = engine + ": worst regret beyond the bands per group (% of step time)";
  m.y_label = "hardware · model";
  return m;
}

ReportTable worstPointsTable(const StudyData& data, std::size_t n) {
  std::vector<std::size_t> wrong;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    if (priorityVerdict(data.points[i]) == PriorityVerdict::Wrong) wrong.push_back(i);
  }
  std::stable_sort(wrong.begin(), wrong.end(),
                   [&](std::size_t a, std::size_t b) { return *data.points[a].regret > *data.points[b].regret; });
  wrong.resize(std::min(wrong.size(), n));
  ReportTable t{{"engine", "hardware", "model", "options", "workload", "engine's pick (band)", "fastest (band)",
                 "regret", "µs per step"},
                {}};
  t.rows.reserve(wrong.size());
  for (const std::size_t i : wrong) {
    const StudyPoint& p = data.points[i];
    const auto backend = [&](const std::optional<std::int64_t>& slot) {
      const StudyCandidate* c = priorityCandidate(data, i, slot);
      return c ? fmt::format("{} (±{})", c->backend, percent(c->band)) : std::string("-");
    };
    t.rows.push_back({p.engine, p.hardware, p.model, optionsLabel(p), p.workload, backend(p.default_slot),
                      backend(p.best_slot), percent(*p.regret), micros(p.regret_us.value_or(0))});
  }
  return t;
}

double quantileOf(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace attnsim::study_report
