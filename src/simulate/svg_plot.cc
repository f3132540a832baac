#include "simulate/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fgpu::simulate {

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string Num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

struct Panel {
  double left, top, width, height;    // pixels
  double x_min, x_max, y_min, y_max;  // data
  double X(double x) const { return left + (x - x_min) / (x_max - x_min) * width; }
  double Y(double y) const {
    return top + height - (std::clamp(y, y_min, y_max) - y_min) / (y_max - y_min) * height;
  }
};

double NiceStep(double span) {
  for (double step : {1.0, 2.0, 5.0, 10.0, 20.0, 25.0, 50.0}) {
    if (span / step <= 8) return step;
  }
  return 100;
}

std::string Axes(const Panel& panel, const std::string& caption) {
  std::string out = "<rect x='" + Num(panel.left) + "' y='" + Num(panel.top) + "' width='" +
                    Num(panel.width) + "' height='" + Num(panel.height) + "' fill='none' stroke='#444'/>\n";
  const double x_step = NiceStep(panel.x_max - panel.x_min);
  for (double x = std::ceil(panel.x_min / x_step) * x_step; x <= panel.x_max + 1e-9; x += x_step) {
    out += "<line x1='" + Num(panel.X(x)) + "' y1='" + Num(panel.top) + "' x2='" + Num(panel.X(x)) +
           "' y2='" + Num(panel.top + panel.height) + "' stroke='#ddd'/>\n<text x='" + Num(panel.X(x)) +
           "' y='" + Num(panel.top + panel.height + 16) + "' text-anchor='middle'>" +
           Num(x).substr(0, Num(x).size() - 2) + "</text>\n";
  }
  const double y_step = NiceStep(panel.y_max - panel.y_min);
  for (double y = std::ceil(panel.y_min / y_step) * y_step; y <= panel.y_max + 1e-9; y += y_step) {
    out += "<line x1='" + Num(panel.left) + "' y1='" + Num(panel.Y(y)) + "' x2='" +
           Num(panel.left + panel.width) + "' y2='" + Num(panel.Y(y)) + "' stroke='#ddd'/>\n<text x='" +
           Num(panel.left - 6) + "' y='" + Num(panel.Y(y) + 4) + "' text-anchor='end'>" +
           Num(y).substr(0, Num(y).size() - 2) + "</text>\n";
  }
  out += "<text x='" + Num(panel.left + panel.width / 2) + "' y='" + Num(panel.top + panel.height + 36) +
         "' text-anchor='middle'>arrived GPU request (% of cluster GPUs)</text>\n";
  out += "<text x='" + Num(panel.left) + "' y='" + Num(panel.top - 8) + "'>" + Escape(caption) + "</text>\n";
  return out;
}

// One dash pattern per policy besides its colour, so the lines stay apart in print, in grey and
// for readers who do not tell the colours apart.
constexpr const char* kDashes[] = {"none", "8 4", "2 3", "10 3 2 3", "4 4", "12 4 2 4 2 4", "1 5", "6 2"};

std::string Series(const Panel& panel, const PolicySummary& summary, const char* color, const char* dash) {
  std::string band;
  std::string upper;
  std::string lower;
  std::string line;
  for (const CurvePoint& point : summary.curve) {
    if (point.arrived_pct < panel.x_min || point.arrived_pct > panel.x_max) continue;
    const std::string x = Num(panel.X(point.arrived_pct));
    line += (line.empty() ? "" : " ") + x + "," + Num(panel.Y(point.unallocated_pct.mean));
    upper += (upper.empty() ? "" : " ") + x + "," + Num(panel.Y(point.unallocated_pct.max));
    lower = x + "," + Num(panel.Y(point.unallocated_pct.min)) + (lower.empty() ? "" : " ") + lower;
  }
  if (line.empty()) return "";
  band = "<polygon points='" + upper + " " + lower + "' fill='" + color +
         "' fill-opacity='0.15' stroke='none'/>\n";
  return band + "<polyline points='" + line + "' fill='none' stroke='" + color + "' stroke-width='1.8'" +
         (std::string(dash) == "none" ? "" : std::string(" stroke-dasharray='") + dash + "'") + "/>\n";
}

}  // namespace

std::string RenderSvgPlot(const std::vector<PolicySummary>& summaries, const std::string& title) {
  const int end_pct = summaries.empty() ? 130 : summaries.front().end_pct;
  const double zoom_from = std::min(80.0, end_pct - 10.0);
  double zoom_top = 5;
  for (const PolicySummary& summary : summaries) {
    for (const CurvePoint& point : summary.curve) {
      if (point.arrived_pct >= zoom_from + 10) zoom_top = std::max(zoom_top, point.unallocated_pct.max);
    }
  }
  zoom_top = std::ceil(zoom_top / 5) * 5;
  const Panel whole{70, 60, 420, 320, 0, static_cast<double>(end_pct), 0, 100};
  const Panel zoom{570, 60, 420, 320, zoom_from, static_cast<double>(end_pct), 0, zoom_top};
  std::string svg =
      "<svg xmlns='http://www.w3.org/2000/svg' width='1020' height='" +
      Num(470 + 18 * static_cast<double>((summaries.size() + 3) / 4)) +
      "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n"
      "<text x='510' y='24' text-anchor='middle' font-size='15'>" +
      Escape(title) + "</text>\n";
  svg += "<text x='510' y='42' text-anchor='middle' fill='#555'>lower is better: the share of GPU capacity "
         "left unallocated as pods arrive (line: mean of the seeds; band: min–max)</text>\n";
  svg += Axes(whole, "unallocated GPU (%) — whole run");
  svg += Axes(zoom, "unallocated GPU (%) — from " + Num(zoom_from).substr(0, Num(zoom_from).size() - 2) +
                        "% arrived");
  for (size_t index = 0; index < summaries.size(); ++index) {
    const char* color = kColors[index % std::size(kColors)];
    const char* dash = kDashes[index % std::size(kDashes)];
    svg += Series(whole, summaries[index], color, dash) + Series(zoom, summaries[index], color, dash);
    const double x = 70 + 240 * static_cast<double>(index % 4);
    const double y = 450 + 18 * static_cast<double>(index / 4);
    svg += "<line x1='" + Num(x) + "' y1='" + Num(y - 4) + "' x2='" + Num(x + 24) + "' y2='" + Num(y - 4) +
           "' stroke='" + color + "' stroke-width='3'" +
           (std::string(dash) == "none" ? "" : std::string(" stroke-dasharray='") + dash + "'") +
           "/>\n<text x='" + Num(x + 30) + "' y='" + Num(y) + "'>" +
           Escape(summaries[index].policy) + " " + Num(summaries[index].unallocated_at_100.mean) +
           "% @100</text>\n";
  }
  return svg + "</svg>\n";
}

}  // namespace fgpu::simulate
