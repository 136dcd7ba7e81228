// The priorities report's priority-list check: each engine's priority list on the hardware the
// store holds measurements of, position by position, against the measured order of the backends
// measured there. A position no measurement backs rests on predictions only, and the report says so.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "reports/StudyReportsMeasured.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim {

namespace {

using nlohmann::json;
using namespace study_report;

// One backend of a list at one point: measured there, predicted only, or not valid there.
struct PositionAtPoint {
  const MeasurementRow* measured = nullptr;
  const StudyCandidate* candidate = nullptr;
};

// Two measured backends of a list at one point, the earlier-listed first.
enum class PairVerdict { Agree, WithinNoise, Disagree };

PairVerdict verdict(const MeasurementRow& earlier, const MeasurementRow& later) {
  // The spread of repeated runs (p20-p80) is the noise: overlapping spreads order nothing.
  if (earlier.p20_us <= later.p80_us && later.p20_us <= earlier.p80_us) return PairVerdict::WithinNoise;
  return earlier.median_us < later.median_us ? PairVerdict::Agree : PairVerdict::Disagree;
}

struct ListCheck {
  std::string engine, hardware, phase, list;
  std::vector<std::string> order;
  std::vector<std::int64_t> measured_points, valid_points;  // per position
  std::int64_t points = 0, compared_points = 0, agree = 0, noise = 0, disagree = 0;
  double worst_ratio = 1;  // the earlier-listed backend's measured time over the later one's
  std::string worst;
};

// The priority list the engine walks for the point's stage, or nullptr (an explicit rule, a refusal,
// a point the store's catalog cannot resolve).
const PriorityList* walkedList(const Catalog& catalog, const StudyPoint& p) {
  Scenario s;
  s.hardware = p.hardware;
  s.model = p.model;
  s.engine = p.engine;
  s.kv_dtype = p.kv_dtype;
  s.page_size = p.page_size;
  s.tp = p.tp;
  s.cuda_graphs = p.cuda_graphs;
  const bool decode = p.phase == "decode";
  s.workload = Workload::uniform(decode ? Phase::Decode : Phase::Prefill, 1, decode ? 1 : 16, 16);
  try {
    const ScenarioSelection sel = selectBackends(catalog, s);
    const auto& choice = decode ? sel.selection.decode : sel.selection.prefill;
    if (!choice || !sel.engine) return nullptr;
    return sel.engine->policy.list(choice->how);
  } catch (const InputError&) {  // a model or hardware the store's catalog does not hold
    return nullptr;
  } catch (const EngineRefusal&) {
    return nullptr;
  }
}

void checkPoint(const StudyData& data, std::size_t i, const PriorityList& list, ListCheck& check) {
  const StudyPoint& p = data.points[i];
  const auto shape = shapeOf(data.catalog, p);
  if (!shape) return;
  std::vector<PositionAtPoint> at(list.order.size());
  const auto [begin, end] = data.candidatesOf(i);
  for (std::size_t c = begin; c < end; ++c) {
    const StudyCandidate& cand = data.candidates[c];
    const auto pos = std::find(list.order.begin(), list.order.end(), cand.backend);
    if (pos == list.order.end() || !cand.valid) continue;
    auto& slot = at[static_cast<std::size_t>(pos - list.order.begin())];
    slot.candidate = &cand;
    slot.measured = measuredAt(data, p, *shape, measuredNames(data.catalog, cand, shape->kind, p.phase));
  }
  ++check.points;
  for (std::size_t k = 0; k < at.size(); ++k) {
    check.valid_points[k] += at[k].candidate != nullptr;
    check.measured_points[k] += at[k].measured != nullptr;
  }
  bool compared = false;
  for (std::size_t a = 0; a < at.size(); ++a) {
    for (std::size_t b = a + 1; b < at.size(); ++b) {
      if (!at[a].measured || !at[b].measured) continue;
      compared = true;
      const PairVerdict v = verdict(*at[a].measured, *at[b].measured);
      (v == PairVerdict::Agree ? check.agree : v == PairVerdict::WithinNoise ? check.noise : check.disagree) += 1;
      const double ratio = at[a].measured->median_us / at[b].measured->median_us;
      if (v == PairVerdict::Disagree && ratio > check.worst_ratio) {
        check.worst_ratio = ratio;
        check.worst = fmt::format("{} (listed {}) {:.2f}× {} (listed {}) at {} {}", list.order[a], a + 1, ratio,
                                  list.order[b], b + 1, p.model, p.workload);
      }
    }
  }
  check.compared_points += compared;
}

struct ListChecks {
  std::vector<ListCheck> lists;
  std::set<std::string> by_rules;  // engines whose choice on the measured hardware no list made
};

ListChecks listChecks(const StudyData& data) {
  std::set<std::string> measured_hardware;
  for (const auto& m : data.measurements) measured_hardware.insert(m.hardware);
  std::map<std::tuple<std::string, std::string, std::string, std::string>, ListCheck> checks;
  std::map<std::string, const PriorityList*> walked;  // by the selection's inputs
  std::set<std::string> by_rules;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    if (!p.deployable() || !measured_hardware.count(p.hardware)) continue;
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}", p.engine, p.hardware, p.model, p.kv_dtype.value_or(""),
                                        p.page_size.value_or(0), p.tp, p.phase == "decode");
    auto it = walked.find(key);
    if (it == walked.end()) it = walked.emplace(key, walkedList(data.catalog, p)).first;
    const PriorityList* list = it->second;
    if (!list) {
      by_rules.insert(p.engine);
      continue;
    }
    const std::string phase = p.phase == "decode" ? "decode" : "prefill, extend and mixed";
    ListCheck& check = checks[{p.engine, p.hardware, phase, list->label}];
    if (check.order.empty()) {
      check.engine = p.engine;
      check.hardware = p.hardware;
      check.phase = phase;
      check.list = list->label;
      check.order = list->order;
      check.measured_points.assign(list->order.size(), 0);
      check.valid_points.assign(list->order.size(), 0);
    }
    checkPoint(data, i, *list, check);
  }
  ListChecks out;
  for (auto& [key, check] : checks) out.lists.push_back(std::move(check));
  for (const auto& c : out.lists) by_rules.erase(c.engine);
  out.by_rules = std::move(by_rules);
  return out;
}

std::string positions(const ListCheck& c) {
  std::vector<std::string> parts;
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    const std::string status = c.measured_points[k] > 0 ? fmt::format("measured at {}", c.measured_points[k])
                               : c.valid_points[k] > 0  ? std::string("prediction only")
                                                        : std::string("not valid here");
    parts.push_back(fmt::format("{}. {} ({})", k + 1, c.order[k], status));
  }
  return join(parts, "; ");
}

std::vector<std::string> predictionOnly(const ListCheck& c) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    if (c.measured_points[k] == 0 && c.valid_points[k] > 0) out.push_back(c.order[k]);
  }
  return out;
}

}  // namespace

json priorityCheckSection(HtmlDocument& doc, const StudyData& data) {
  doc.heading("Priority lists against measurements");
  const ListChecks all = listChecks(data);
  const auto& checks = all.lists;
  if (!all.by_rules.empty()) {
    doc.paragraph(
        fmt::format("{} picks its backend by rules rather than by walking a list here (an explicit rule in its server "
                    "arguments, or a refusal): its choice is compared with measurements in the section above.",
                    join(std::vector<std::string>(all.by_rules.begin(), all.by_rules.end()), ", ")));
  }
  if (checks.empty()) {
    doc.paragraph(
        "No priority list could be checked: the sweep has no valid point on hardware the store holds "
        "measurements of.");
    return {{"lists", json::array()}, {"engines_choosing_by_rules", all.by_rules}};
  }
  doc.paragraph(
      "Each engine's priority list as it walks it for the swept models on the measured hardware, position by "
      "position: how many points measured the backend at exactly the point's shape, or whether it rests on "
      "predictions only. Two measured backends of one list at one point form a pair: it agrees when the "
      "earlier-listed one is measured faster, is within noise when their p20-p80 spreads overlap, and disagrees "
      "otherwise.");
  ReportTable t{{"engine", "hardware", "phase", "list", "positions (points of the sweep)", "points with a pair",
                 "pairs agree / within noise / disagree", "worst disagreement", "prediction only"},
                {}};
  json out = json::array();
  for (const auto& c : checks) {
    const auto only = predictionOnly(c);
    t.rows.push_back({c.engine, c.hardware, c.phase, c.list, positions(c),
                      fmt::format("{} of {}", c.compared_points, c.points),
                      fmt::format("{} / {} / {}", c.agree, c.noise, c.disagree), c.worst.empty() ? "-" : c.worst,
                      only.empty() ? "-" : join(only, ", ")});
    json positions_json = json::array();
    for (std::size_t k = 0; k < c.order.size(); ++k) {
      positions_json.push_back(
          {{"backend", c.order[k]}, {"measured_points", c.measured_points[k]}, {"valid_points", c.valid_points[k]}});
    }
    out.push_back({{"engine", c.engine},
                   {"hardware", c.hardware},
                   {"phase", c.phase},
                   {"list", c.list},
                   {"points", c.points},
                   {"points_with_a_pair", c.compared_points},
                   {"pairs", {{"agree", c.agree}, {"within_noise", c.noise}, {"disagree", c.disagree}}},
                   {"worst_disagreement", c.worst.empty() ? json(nullptr) : json(c.worst)},
                   {"worst_ratio", c.worst.empty() ? json(nullptr) : json(c.worst_ratio)},
                   {"positions", positions_json},
                   {"prediction_only", only}});
  }
  doc.table(t);
  return {{"lists", out}, {"engines_choosing_by_rules", all.by_rules}};
}

}  // namespace attnsim
