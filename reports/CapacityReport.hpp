#pragma once
// attnsim report capacity (docs/REPORTS.md, docs/CAPACITY.md): from the serving results in a study
// store (study/CapacityStore), the memory split, the KV capacity per context length, latency
// percentiles against the offered rate (the knee), the highest rate within the SLO per backend and
// hardware, the GPUs a target rate needs, and the assumptions. Markdown + one self-contained HTML
// page with inline SVG + JSON, the same for the same store.
#include <string>
#include <vector>

#include "reports/StudyReports.hpp"
#include "study/CapacityQueries.hpp"

namespace attnsim {

// `command` is the command line that regenerates the report (printed in it).
StudyReport capacityReport(const CapacityData& data, const std::string& command);

// The plots the capacity report draws beside the heat maps (reports/CapacityReportPlots.cpp).
struct LineSeries {
  std::string label, color;
  std::vector<std::pair<double, double>> points;  // x, y in increasing x
};
struct LineChart {
  std::string title, x_label, y_label;
  std::vector<LineSeries> series;
  double y_limit = 0;  // a dashed horizontal line (the SLO), 0 for none
  double y_max = 0;    // clip above (0: the data's maximum)
  bool log_x = false;
};
// One line chart with its legend; every label is XML-escaped, every point carries a <title>.
std::string lineChartSvg(const LineChart& chart);

struct StackedBar {
  std::string label;
  std::vector<double> parts;  // in the order of the chart's part names
};
// Horizontal stacked bars (e.g. GPU memory: weights, KV, reserve) with a legend.
std::string stackedBarsSvg(const std::string& title, const std::string& unit, const std::vector<std::string>& parts,
                           const std::vector<StackedBar>& bars);

}  // namespace attnsim
