#pragma once
// The reports' plots as SVG text drawn here (no plotting library, no scripts): heat maps, one or
// a grid of them. Every label is XML-escaped; a cell's tooltip is an SVG <title>.
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {

std::string escapeXml(std::string_view text);

struct HeatCell {
  std::string color = "#eeeeee";  // fill; the default marks an empty cell
  std::string text;               // drawn in the cell (short)
  std::string tooltip;            // the cell's <title>
};

struct HeatMap {
  std::string title, x_label, y_label;
  std::vector<std::string> columns, rows;
  std::vector<std::vector<HeatCell>> cells;  // [row][column]
};

struct LegendItem {
  std::string color, label;
};

// One heat map with its legend.
std::string heatMapSvg(const HeatMap& map, const std::vector<LegendItem>& legend);
// The width in pixels of heatMapSvg's drawing of `map`.
double heatMapSvgWidth(const HeatMap& map);
// Several heat maps of the same shape side by side, `per_row` to a row, one legend below.
std::string heatMapGridSvg(const std::vector<HeatMap>& maps, int per_row, const std::vector<LegendItem>& legend);

// Regret (0 = the default is the fastest) from pale green through yellow to red at `worst` and above.
std::string regretColor(double regret, double worst = 0.5);
// One of a fixed palette of distinct colors, by index.
std::string paletteColor(std::size_t index);
// `base` mixed toward white: strength 0 = white, 1 = base.
std::string fadedColor(const std::string& base, double strength);

}  // namespace attnsim
