#pragma once
// The priorities report at any size: each point's verdict (shared by the heat maps, the tables and
// the JSON), the per-point JSON (every point, whatever the HTML shows), the heat map of groups that
// stands in for a per-point map too large for the page, and the points with the largest regrets.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/StudyReports.hpp"
#include "reports/SvgPlots.hpp"

namespace attnsim::study_report {

// The widest figure the HTML page shows without scrolling (its body's max-width in HtmlDocument).
constexpr double kPageWidth = 1100;
// A per-point heat map taller than this many rows is drawn as groups instead.
constexpr std::size_t kMaxPointRows = 48;
// How many of the worst points the HTML lists (the JSON has every point).
constexpr std::size_t kWorstPointsListed = 25;

// The candidate in `slot` at point index `i`, or nullptr.
const StudyCandidate* priorityCandidate(const StudyData& data, std::size_t i, const std::optional<std::int64_t>& slot);

// What a point says about the engine's own choice.
enum class PriorityVerdict { Refused, NotDeployable, Unranked, Fastest, Tied, Wrong };
PriorityVerdict priorityVerdict(const StudyPoint& p);
const char* priorityVerdictName(PriorityVerdict v);

// Every point of the sweep: scenario, the engine's pick and the fastest with their bands, the
// regret, the verdict (refused, not deployable with the memory note, ...).
nlohmann::json priorityPointsJson(const StudyData& data);

// One engine's regrets as groups (rows hardware · model, columns options · phase, or the phase
// alone where that is too wide): each cell the worst regret beyond the bands with the group's
// regret distribution in its tooltip.
HeatMap groupedRegretMap(const StudyData& data, const std::string& engine, const std::vector<std::size_t>& points);

// The ranked points whose pick is slower than the fastest beyond the bands, worst first, at most `n`.
ReportTable worstPointsTable(const StudyData& data, std::size_t n);

// The value at quantile q (0..1) of `values` (sorted here; nearest rank); 0 when empty.
double quantileOf(std::vector<double> values, double q);

}  // namespace attnsim::study_report
