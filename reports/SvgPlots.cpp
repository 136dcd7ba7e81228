#include "reports/SvgPlots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/Strings.hpp"

namespace attnsim {

namespace {

constexpr double kCell = 34, kRowHeight = 20, kFont = 11, kCharWidth = 6.2;

struct Layout {
  double label_width = 0, header_height = 0, width = 0, height = 0;
};

Layout layoutOf(const HeatMap& map) {
  std::size_t longest_row = map.y_label.size(), longest_column = 0;
  for (const auto& r : map.rows) longest_row = std::max(longest_row, r.size());
  for (const auto& c : map.columns) longest_column = std::max(longest_column, c.size());
  Layout l;
  l.label_width = 12 + kCharWidth * static_cast<double>(longest_row);
  l.header_height = 34 + kCharWidth * static_cast<double>(longest_column) * 0.75;
  // Column labels lean right at 45°: room for the last one's run beyond the grid.
  l.width = std::max(l.label_width + kCell * static_cast<double>(map.columns.size()) + l.header_height * 0.75,
                     kCharWidth * static_cast<double>(map.title.size() + 2));
  l.height = l.header_height + kRowHeight * static_cast<double>(map.rows.size()) + 22;
  return l;
}

int channel(const std::string& color, int i) { return std::stoi(color.substr(1 + 2 * i, 2), nullptr, 16); }

// The map's cells, labels and title, drawn at (x, y).
std::string heatMapBody(const HeatMap& map, const Layout& l, double x, double y) {
  std::string svg = fmt::format(R"svg(<g transform="translate({:.0f},{:.0f})">)svg", x, y);
  svg += fmt::format(R"svg(<text x="0" y="14" font-weight="bold">{}</text>)svg", escapeXml(map.title));
  for (std::size_t c = 0; c < map.columns.size(); ++c) {
    const double cx = l.label_width + kCell * (static_cast<double>(c) + 0.5);
    svg += fmt::format(R"svg(<text transform="translate({:.1f},{:.1f}) rotate(-45)">{}</text>)svg", cx - 2,
                       l.header_height - 4, escapeXml(map.columns[c]));
  }
  svg += fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}" text-anchor="end" fill="#555">{}</text>)svg", l.label_width - 6,
                     l.header_height - 4, escapeXml(map.y_label));
  for (std::size_t r = 0; r < map.rows.size(); ++r) {
    const double ry = l.header_height + kRowHeight * static_cast<double>(r);
    svg += fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)svg", l.label_width - 6, ry + 14,
                       escapeXml(map.rows[r]));
    for (std::size_t c = 0; c < map.columns.size() && c < map.cells[r].size(); ++c) {
      const HeatCell& cell = map.cells[r][c];
      const double cx = l.label_width + kCell * static_cast<double>(c);
      svg += fmt::format(
          R"svg(<g class="cell"><title>{}</title><rect x="{:.1f}" y="{:.1f}" width="{}" height="{}" fill="{}" )svg"
          R"svg(stroke="#fff"/><text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="9">{}</text></g>)svg",
          escapeXml(cell.tooltip), cx, ry, kCell, kRowHeight, cell.color, cx + kCell / 2, ry + 13,
          escapeXml(cell.text));
    }
  }
  svg += fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}" fill="#555">{}</text>)svg", l.label_width, l.height - 6,
                     escapeXml(map.x_label));
  return svg + "</g>";
}

std::string legendBody(const std::vector<LegendItem>& legend, double y, double width) {
  std::string svg;
  double x = 10;
  for (const auto& item : legend) {
    const double item_width = 26 + kCharWidth * static_cast<double>(item.label.size());
    if (x + item_width > width && x > 10) {
      x = 10;
      y += 18;
    }
    svg += fmt::format(R"svg(<rect x="{:.1f}" y="{:.1f}" width="14" height="12" fill="{}" stroke="#999"/>)svg", x, y,
                       item.color);
    svg += fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}">{}</text>)svg", x + 18, y + 10, escapeXml(item.label));
    x += item_width + 8;
  }
  return svg;
}

double legendHeight(const std::vector<LegendItem>& legend, double width) {
  if (legend.empty()) return 0;
  double x = 10, rows = 1;
  for (const auto& item : legend) {
    const double item_width = 26 + kCharWidth * static_cast<double>(item.label.size());
    if (x + item_width > width && x > 10) {
      x = 10;
      ++rows;
    }
    x += item_width + 8;
  }
  return 18 * rows + 8;
}

std::string svgOpen(double width, double height) {
  return fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" )svg"
      R"svg(font-family="sans-serif" font-size="{2}">)svg",
      width, height, kFont);
}

}  // namespace

std::string escapeXml(std::string_view text) { return escapeMarkup(text, "&apos;"); }

std::string heatMapSvg(const HeatMap& map, const std::vector<LegendItem>& legend) {
  return heatMapGridSvg({map}, 1, legend);
}

double heatMapSvgWidth(const HeatMap& map) { return std::max(400.0, layoutOf(map).width + 10); }

std::string heatMapGridSvg(const std::vector<HeatMap>& maps, int per_row, const std::vector<LegendItem>& legend) {
  double cell_width = 0, cell_height = 0;
  std::vector<Layout> layouts;
  for (const auto& m : maps) {
    layouts.push_back(layoutOf(m));
    cell_width = std::max(cell_width, layouts.back().width);
    cell_height = std::max(cell_height, layouts.back().height);
  }
  const auto columns = static_cast<std::size_t>(std::max(1, per_row));
  const std::size_t grid_rows = (maps.size() + columns - 1) / columns;
  const double width = std::max(400.0, cell_width * static_cast<double>(std::min(columns, maps.size())) + 10);
  const double grid_height = cell_height * static_cast<double>(grid_rows) + 6;
  std::string svg = svgOpen(width, grid_height + legendHeight(legend, width));
  svg += fmt::format(R"svg(<rect width="{:.0f}" height="{:.0f}" fill="#fff"/>)svg", width,
                     grid_height + legendHeight(legend, width));
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const std::size_t grid_row = i / columns, grid_column = i % columns;
    svg += heatMapBody(maps[i], layouts[i], 4 + cell_width * static_cast<double>(grid_column),
                       4 + cell_height * static_cast<double>(grid_row));
  }
  svg += legendBody(legend, grid_height, width);
  return svg + "</svg>\n";
}

std::string regretColor(double regret, double worst) {
  const double t = std::clamp(regret / worst, 0.0, 1.0);
  // pale green (0) -> yellow (0.5) -> red (1)
  const std::array<std::array<double, 3>, 3> stops{{{{199, 233, 192}}, {{254, 224, 139}}, {{215, 48, 39}}}};
  const std::size_t k = t < 0.5 ? 0 : 1;
  const double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  std::array<int, 3> rgb{};
  for (std::size_t i = 0; i < 3; ++i)
    rgb[i] = static_cast<int>(std::lround(stops[k][i] + u * (stops[k + 1][i] - stops[k][i])));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

std::string paletteColor(std::size_t index) {
  static const std::array<const char*, 10> palette{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                                   "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"};
  return palette[index % palette.size()];
}

std::string fadedColor(const std::string& base, double strength) {
  const double s = std::clamp(strength, 0.0, 1.0);
  std::array<int, 3> rgb{};
  for (int i = 0; i < 3; ++i)
    rgb[static_cast<std::size_t>(i)] = static_cast<int>(std::lround(255 - s * (255 - channel(base, i))));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

}  // namespace attnsim
