// The capacity report's line charts and stacked bars, as SVG text (no plotting library, no scripts).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/CapacityReport.hpp"
#include "reports/SvgPlots.hpp"

namespace attnsim {

namespace {

constexpr double kPlotW = 520, kPlotH = 260, kLeft = 64, kTop = 30, kLegendRow = 16;

struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  [[nodiscard]] double at(double v, double length) const {
    const double f =
        log ? (std::log(std::max(v, lo)) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return std::clamp(f, 0.0, 1.0) * length;
  }
};

// A round tick step for a linear axis of `span` with about five ticks.
double tickStep(double span) {
  const double raw = span / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string axes(const LineChart& c, const Scale& x, const Scale& y) {
  std::string svg = fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)svg",
                                kLeft, kTop, kPlotW, kPlotH);
  const double ystep = tickStep(y.hi - y.lo);
  for (double v = y.lo; v <= y.hi + 1e-9; v += ystep) {
    const double py = kTop + kPlotH - y.at(v, kPlotH);
    svg += fmt::format(R"svg(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#eee"/><text x="{}" y="{:.1f}" )svg"
                       R"svg(text-anchor="end" font-size="10">{:g}</text>)svg",
                       kLeft, kLeft + kPlotW, py, py, kLeft - 4, py + 3, v);
  }
  std::vector<double> xticks;
  if (x.log) {
    for (double v = std::pow(10, std::floor(std::log10(x.lo))); v <= x.hi * 1.0001; v *= 10) {
      for (const double m : {1.0, 2.0, 5.0}) {
        if (m * v >= x.lo * 0.9999 && m * v <= x.hi * 1.0001) xticks.push_back(m * v);
      }
    }
  } else {
    for (double v = x.lo; v <= x.hi + 1e-9; v += tickStep(x.hi - x.lo)) xticks.push_back(v);
  }
  for (const double v : xticks) {
    const double px = kLeft + x.at(v, kPlotW);
    svg += fmt::format(R"svg(<text x="{:.1f}" y="{}" text-anchor="middle" font-size="10">{:g}</text>)svg", px,
                       kTop + kPlotH + 14, v);
  }
  svg += fmt::format(R"svg(<text x="{}" y="{}" text-anchor="middle" fill="#555">{}</text>)svg", kLeft + kPlotW / 2,
                     kTop + kPlotH + 30, escapeXml(c.x_label));
  svg +=
      fmt::format(R"svg(<text transform="translate(14,{}) rotate(-90)" text-anchor="middle" fill="#555">{}</text>)svg",
                  kTop + kPlotH / 2, escapeXml(c.y_label));
  return svg;
}

Scale xScale(const LineChart& c) {
  Scale x{1e300, -1e300, c.log_x};
  for (const auto& s : c.series) {
    for (const auto& [px, py] : s.points) {
      if (c.log_x && px <= 0) continue;
      x.lo = std::min(x.lo, px);
      x.hi = std::max(x.hi, px);
    }
  }
  if (x.lo > x.hi) x = {c.log_x ? 1.0 : 0.0, 10, c.log_x};
  if (!c.log_x) x.lo = 0;
  if (x.hi <= x.lo) x.hi = x.lo * 2 + 1;
  return x;
}

Scale yScale(const LineChart& c) {
  Scale y{0, c.y_limit * 1.2};
  for (const auto& s : c.series) {
    for (const auto& p : s.points) y.hi = std::max(y.hi, p.second);
  }
  if (c.y_max > 0) y.hi = std::min(y.hi, c.y_max);
  if (y.hi <= 0) y.hi = 1;
  return y;
}

}  // namespace

std::string lineChartSvg(const LineChart& c) {
  const Scale x = xScale(c), y = yScale(c);
  const double height = kTop + kPlotH + 42 + kLegendRow * static_cast<double>(c.series.size());
  std::string svg = fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" )svg"
      R"svg(font-size="11"><text x="{}" y="16" font-weight="bold">{}</text>)svg",
      kLeft + kPlotW + 20, height, kLeft, escapeXml(c.title));
  svg += axes(c, x, y);
  if (c.y_limit > 0 && c.y_limit <= y.hi) {
    const double py = kTop + kPlotH - y.at(c.y_limit, kPlotH);
    svg += fmt::format(R"svg(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#c00" stroke-dasharray="5,4"/>)svg"
                       R"svg(<text x="{}" y="{:.1f}" text-anchor="end" fill="#c00" font-size="10">SLO</text>)svg",
                       kLeft, kLeft + kPlotW, py, py, kLeft + kPlotW - 2, py - 3);
  }
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const LineSeries& s = c.series[i];
    std::string path;
    for (const auto& [px, py] : s.points) {
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", kLeft + x.at(px, kPlotW),
                          kTop + kPlotH - y.at(py, kPlotH));
    }
    svg += fmt::format(R"svg(<g class="series"><polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"/>)svg",
                       s.color, path);
    for (const auto& [px, py] : s.points) {
      svg += fmt::format(
          R"svg(<circle cx="{:.1f}" cy="{:.1f}" r="2.4" fill="{}"><title>{}: {:.3g} at {:.3g}</title></circle>)svg",
          kLeft + x.at(px, kPlotW), kTop + kPlotH - y.at(py, kPlotH), s.color, escapeXml(s.label), py, px);
    }
    const double ly = kTop + kPlotH + 42 + kLegendRow * static_cast<double>(i);
    svg += fmt::format(
        R"svg(<rect x="{}" y="{:.1f}" width="12" height="4" fill="{}"/><text x="{}" y="{:.1f}">{}</text></g>)svg",
        kLeft, ly - 6, s.color, kLeft + 18, ly, escapeXml(s.label));
  }
  return svg + "</svg>\n";
}

std::string stackedBarsSvg(const std::string& title, const std::string& unit, const std::vector<std::string>& parts,
                           const std::vector<StackedBar>& bars) {
  constexpr double kBarH = 16, kLabelW = 300, kBarW = 420;
  double total = 1e-9;
  for (const auto& b : bars) {
    double sum = 0;
    for (const double v : b.parts) sum += std::max(0.0, v);
    total = std::max(total, sum);
  }
  const double height = kTop + (kBarH + 4) * static_cast<double>(bars.size()) + 30;
  std::string svg = fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" )svg"
      R"svg(font-size="11"><text x="0" y="16" font-weight="bold">{}</text>)svg",
      kLabelW + kBarW + 20, height, escapeXml(title));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = kTop + (kBarH + 4) * static_cast<double>(i);
    svg += fmt::format(R"svg(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)svg", kLabelW - 6, y + 12,
                       escapeXml(bars[i].label));
    double x = kLabelW;
    for (std::size_t p = 0; p < bars[i].parts.size() && p < parts.size(); ++p) {
      const double w = std::max(0.0, bars[i].parts[p]) / total * kBarW;
      svg += fmt::format(
          R"svg(<g class="bar"><title>{}: {}: {:.1f} {}</title><rect x="{:.1f}" y="{:.1f}" width="{:.1f}" )svg"
          R"svg(height="{}" fill="{}"/></g>)svg",
          escapeXml(bars[i].label), escapeXml(parts[p]), bars[i].parts[p], escapeXml(unit), x, y, w, kBarH,
          paletteColor(p));
      x += w;
    }
  }
  double lx = kLabelW;
  const double ly = height - 10;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    svg += fmt::format(
        R"svg(<rect x="{:.0f}" y="{:.0f}" width="10" height="10" fill="{}"/><text x="{:.0f}" y="{:.0f}">{}</text>)svg",
        lx, ly - 9, paletteColor(p), lx + 14, ly, escapeXml(parts[p]));
    lx += 24 + 6.2 * static_cast<double>(parts[p].size());
  }
  return svg + "</svg>\n";
}

}  // namespace attnsim
