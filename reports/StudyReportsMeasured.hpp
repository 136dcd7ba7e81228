#pragma once
// The priorities report's measured section: which of the engines' backends the store holds
// measurements of (through their kernel families' `measured_as` names), and at the sweep's points
// whose shape was measured, the predicted against the measured attention time and order.
#include <nlohmann/json.hpp>

#include "reports/HtmlDocument.hpp"
#include "reports/StudyReports.hpp"

namespace attnsim {

nlohmann::json measuredSection(HtmlDocument& doc, const StudyData& data);

}  // namespace attnsim
