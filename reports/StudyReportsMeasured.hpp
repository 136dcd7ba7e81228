#pragma once
// The priorities report's measured section: which of the engines' backends the store holds
// measurements of (through their kernel families' `measured_as` names), and at the sweep's points
// whose shape was measured, the predicted against the measured attention time and order; the
// priority-list check built on them.
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "reports/HtmlDocument.hpp"
#include "reports/StudyReports.hpp"

namespace attnsim {

nlohmann::json measuredSection(HtmlDocument& doc, const StudyData& data);
// Each engine's priority list on the measured hardware against the measured order of the backends
// measured there, and which positions rest on predictions only (StudyReportsPriorityCheck.cpp).
nlohmann::json priorityCheckSection(HtmlDocument& doc, const StudyData& data);

namespace study_report {

// The shape a point's attention call has, as the harness records it; nullopt when the model is
// not in the catalog or interleaves several layer types (its attention time is a mean over them).
struct Shape {
  int heads = 0, kv_heads = 0, head_dim = 0;
  std::string kind;
};
std::optional<Shape> shapeOf(const Catalog& catalog, const StudyPoint& p);
// The measurement names of the kernel families a backend runs for a phase ("": both phases), as
// the variant it resolved to at the point (its base capabilities when it has none).
std::set<std::string> measuredNames(const Catalog& catalog, const StudyCandidate& cand, const std::string& kind,
                                    const std::string& phase);
// The row measuring one of `names` at exactly the point's shape (batch, query and KV length, heads
// per GPU, head size, KV dtype), or nullptr.
const MeasurementRow* measuredAt(const StudyData& data, const StudyPoint& p, const Shape& s,
                                 const std::set<std::string>& names);

}  // namespace study_report

}  // namespace attnsim
