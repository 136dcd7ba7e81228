// The matrix report: which backends each engine accepts for each swept device and model (the
// candidates' verdicts, with the engines' reasons), and every engine's support tables regenerated
// from the catalog the sweep stored (as `attnsim docs`).
#include <fmt/format.h>

#include <map>
#include <set>

#include "core/Strings.hpp"
#include "reports/StudyReports.hpp"
#include "reports/SupportTables.hpp"
#include "reports/SvgPlots.hpp"

namespace attnsim {

namespace {

using nlohmann::json;
using namespace study_report;

struct MatrixVerdict {
  std::int64_t points = 0, valid = 0;
  std::int64_t undeployable = 0;  // valid, but the engine's deployment does not hold the point's batch
  std::string memory_note;        // the first such point's
  std::set<std::string> reasons;
};

// engine -> (backend, hardware · model · options) -> verdict, in first-seen order of rows and columns.
struct EngineMatrix {
  std::vector<std::string> backends, columns;
  std::map<std::pair<std::string, std::string>, MatrixVerdict> cells;
};

std::map<std::string, EngineMatrix> verdicts(const StudyData& data) {
  std::map<std::string, EngineMatrix> out;
  for (std::size_t i = 0; i < data.points.size(); ++i) {
    const StudyPoint& p = data.points[i];
    EngineMatrix& m = out[p.engine];
    const std::string column = fmt::format("{} · {} · {}", p.hardware, p.model, optionsLabel(p));
    if (std::find(m.columns.begin(), m.columns.end(), column) == m.columns.end()) m.columns.push_back(column);
    const auto [begin, end] = data.candidatesOf(i);
    for (std::size_t c = begin; c < end; ++c) {
      const StudyCandidate& cand = data.candidates[c];
      if (std::find(m.backends.begin(), m.backends.end(), cand.backend) == m.backends.end()) {
        m.backends.push_back(cand.backend);
      }
      MatrixVerdict& v = m.cells[{cand.backend, column}];
      ++v.points;
      v.valid += cand.valid ? 1 : 0;
      if (cand.valid && !p.deployable() && v.undeployable++ == 0) v.memory_note = p.memoryNote();
      if (!cand.valid && !cand.reason.empty()) v.reasons.insert(cand.reason);
    }
  }
  return out;
}

HeatMap matrixMap(const std::string& engine, const EngineMatrix& m) {
  HeatMap map{engine + ": backends accepted per device and model",
              "device · model · options (columns)",
              "backend",
              m.columns,
              m.backends,
              {}};
  for (const auto& b : m.backends) {
    auto& row = map.cells.emplace_back();
    for (const auto& col : m.columns) {
      const std::string where = fmt::format("{} on {}", b, col);
      const auto it = m.cells.find({b, col});
      if (it == m.cells.end()) {
        row.push_back({"#eeeeee", "", where + ": not a candidate"});
        continue;
      }
      const MatrixVerdict& v = it->second;
      const std::string reasons = v.reasons.empty() ? "" : ": " + join({v.reasons.begin(), v.reasons.end()}, "; ");
      const std::string memory = v.undeployable == 0
                                     ? ""
                                     : fmt::format("; not deployable (memory) at {} of {} points, e.g. {}",
                                                   v.undeployable, v.points, v.memory_note);
      if (v.valid > 0 && v.undeployable == v.valid) {
        row.push_back({kNotDeployableColor, "M", fmt::format("{}: accepted{}{}", where, memory, reasons)});
      } else if (v.valid == v.points) {
        row.push_back({"#a6d96a", "✓", fmt::format("{}: valid{}", where, memory)});
      } else if (v.valid == 0) {
        row.push_back({"#f46d43", "×", fmt::format("{}: refused{}", where, reasons)});
      } else {
        row.push_back(
            {"#fee08b", fmt::format("{}/{}", v.valid, v.points),
             fmt::format("{} on {}: valid at {} of {} points{}{}", b, col, v.valid, v.points, memory, reasons)});
      }
    }
  }
  return map;
}

ReportTable refusalTable(const std::map<std::string, EngineMatrix>& all) {
  ReportTable t{{"engine", "backend", "refused on", "the engine's reason"}, {}};
  for (const auto& [engine, m] : all) {
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_reason;
    for (const auto& [key, v] : m.cells) {
      for (const auto& r : v.reasons) by_reason[{key.first, r}].push_back(key.second);
    }
    for (const auto& [key, where] : by_reason) t.rows.push_back({engine, key.first, join(where, "; "), key.second});
  }
  return t;
}

json matrixJson(const std::map<std::string, EngineMatrix>& all) {
  json out = json::object();
  for (const auto& [engine, m] : all) {
    json cells = json::array();
    for (const auto& [key, v] : m.cells) {
      cells.push_back({{"backend", key.first},
                       {"where", key.second},
                       {"points", v.points},
                       {"valid", v.valid},
                       {"not_deployable", v.undeployable},
                       {"reasons", v.reasons}});
    }
    out[engine] = {{"backends", m.backends}, {"columns", m.columns}, {"cells", cells}};
  }
  return out;
}

}  // namespace

StudyReport matrixReport(const StudyData& data) {
  StudyReport report{"matrix", HtmlDocument("Attention backend support matrix"), {}};
  HtmlDocument& doc = report.document;
  provenance(doc, data,
             fmt::format("attnsim report matrix --db {} --sweep {} --out DIR", shellWord(data.path),
                         shellWord(data.sweep.name)));
  doc.heading("Accepted in this study");
  doc.paragraph(
      "Every backend of every swept engine, forced on each device and model of the sweep: green where the engine "
      "accepts it, red where it refuses (hover a cell for the engine's reason), yellow where it accepts some of the "
      "workloads only, violet M where it accepts it but the deployment holds none of the batches (not deployable: "
      "the weights leave no KV pool, or the batch's KV exceeds it).");
  const auto all = verdicts(data);
  std::size_t figure = 0;
  for (const auto& [engine, m] : all) {
    doc.figure({fmt::format("matrix-{}.svg", ++figure),
                heatMapSvg(matrixMap(engine, m), {{"#a6d96a", "valid"},
                                                  {"#fee08b", "valid for some workloads"},
                                                  {"#f46d43", "refused"},
                                                  {kNotDeployableColor, "M accepted, not deployable (memory)"},
                                                  {"#eeeeee", "not a candidate"}}),
                engine + ": which backends the engine accepts"});
  }
  doc.heading("The engines' reasons");
  doc.table(refusalTable(all));
  doc.heading("Support tables from the stored catalog");
  doc.paragraph(
      "The engines' published tables, regenerated from the backend descriptors the sweep ran with (as "
      "attnsim docs prints them).");
  json engines = json::array();
  for (const auto& e : data.catalog.engines()) {
    doc.markdownSection(renderSupportTables(e));
    engines.push_back(e.policy.engine);
  }
  report.json = {{"kind", "matrix"},
                 {"provenance", provenanceJson(data)},
                 {"accepted", matrixJson(all)},
                 {"support_tables", engines}};
  return report;
}

}  // namespace attnsim
