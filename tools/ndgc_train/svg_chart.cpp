// render_chart(): two panels of line charts in plain SVG 1.1 text.
//
// Layout (user units = pixels): 960 × 420 (1440 with a GPU panel); a title
// line, a legend line, then two or three panels of 380 × 280 plot area, 480
// px apart, with room on the left for the tick labels. The duration panel's
// y axis starts at zero (durations compare as ratios); the memory panels'
// span the data (the dataset's ~220 MiB would otherwise flatten the growth)
// and say so in their axis labels. A run that died is marked after its last
// point in each panel ("died: OutOfMemory", data-failure="<config>").
#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "table.hpp"

namespace ndgc::train_tool {
namespace {

constexpr double kPanelStep = 480, kHeight = 420;
constexpr double kPlotW = 380, kPlotH = 280;
constexpr double kTop = 80;     // plot area's top edge
constexpr double kLeft0 = 80;   // the first plot area's left edge

// Lines that coincide (on and trace usually do) must both stay visible: on
// is drawn wide underneath, trace dashed on top.
const char* stroke_style(const std::string& config) {
  if (config == "on") return "stroke-width=\"4\" stroke-opacity=\"0.6\"";
  if (config == "trace") return "stroke-width=\"2\" stroke-dasharray=\"6 4\"";
  return "stroke-width=\"2\"";
}

const char* color_of(const std::string& config) {
  if (config == "off") return "#d62728";
  if (config == "on") return "#1f77b4";
  if (config == "trace") return "#2ca02c";
  return "#7f7f7f";
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : std::min(6, int(std::ceil(-std::log10(step))));
  return fmt::format("{:.{}f}", v, decimals);
}

struct Panel {
  const char* key;    // data-panel
  const char* title;
  const char* y_label;
  bool from_zero;
  double (*value)(const EpochRow&);
};

double seconds_of(const EpochRow& e) { return e.seconds; }
double mib_of(const EpochRow& e) { return e.bytes_in_use / kMiB; }
double gpu_mib_of(const EpochRow& e) { return e.gpu_allocated_bytes / kMiB; }

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low)) high = low + 1;
  const double raw = (high - low) / std::max(1, count);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::floor(low / step) * step; v <= high + step * 1e-9; v += step)
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  if (ticks.empty() || ticks.back() < high - step * 1e-9) ticks.push_back(ticks.empty() ? low : ticks.back() + step);
  return ticks;
}

std::string render_chart(const std::vector<RunResult>& runs, const std::string& title) {
  std::vector<Panel> panels{
      {"seconds", "Epoch duration", "seconds per epoch", true, seconds_of},
      {"memory", "Host memory in use at the end of each epoch", "MiB in use (axis not from zero)", false, mib_of},
  };
  if (any_on_gpu(runs))
    panels.push_back({"gpu", "GPU memory allocated at the end of each epoch", "GPU MiB allocated (axis not from zero)",
                      false, gpu_mib_of});
  const double width = kLeft0 + kPanelStep * double(panels.size() - 1) + kPlotW + 20;  // 960 for two panels
  std::int64_t epochs = 1;
  for (const RunResult& r : runs)
    for (const EpochRow& e : r.epochs) epochs = std::max(epochs, e.epoch);

  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{3}</text>\n",
      width, kHeight, width / 2, xml_escape(title));

  // Legend: one swatch per configuration, centred under the title.
  const double legend_w = 150.0 * double(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const double x = width / 2 - legend_w / 2 + 150.0 * double(i);
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"46\" x2=\"{1}\" y2=\"46\" stroke=\"{2}\" {3}/>"
        "<text x=\"{4}\" y=\"50\">{5}</text>\n",
        x, x + 24, color_of(runs[i].config), stroke_style(runs[i].config), x + 30,
        xml_escape(config_title(runs[i].config)));
  }

  for (std::size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
    for (const RunResult& r : runs)
      for (const EpochRow& e : r.epochs) {
        lo = std::min(lo, panel.value(e));
        hi = std::max(hi, panel.value(e));
      }
    if (lo > hi) lo = 0, hi = 1;
    if (panel.from_zero) lo = 0;
    if (hi - lo < 1e-9) {  // flat: give the line some room
      const double pad = std::max(1.0, std::abs(hi) * 0.01);
      lo = panel.from_zero ? 0 : lo - pad;
      hi += pad;
    }
    const std::vector<double> yt = nice_ticks(lo, hi);
    const double y0 = yt.front(), y1 = yt.back();
    const double step = yt.size() > 1 ? yt[1] - yt[0] : 1;
    const double left = kLeft0 + kPanelStep * double(p);
    auto px = [&](double epoch) {
      return epochs == 1 ? left + kPlotW / 2 : left + (epoch - 1) / double(epochs - 1) * kPlotW;
    };
    auto py = [&](double v) { return kTop + kPlotH - (v - y0) / (y1 - y0) * kPlotH; };

    s += fmt::format("<g data-panel-frame=\"{}\">\n", panel.key);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                     left + kPlotW / 2, kTop - 12, xml_escape(panel.title));
    // Grid lines and y tick labels.
    for (double v : yt)
      s += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#dddddd\"/>"
          "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
          left, py(v), left + kPlotW, left - 6, py(v) + 4, tick_label(v, step));
    // x ticks: every epoch up to 20 epochs, then every k-th.
    const std::int64_t every = std::max<std::int64_t>(1, (epochs + 19) / 20);
    for (std::int64_t e = 1; e <= epochs; e += every)
      s += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>"
          "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
          px(double(e)), kTop + kPlotH, kTop + kPlotH + 5, kTop + kPlotH + 18, e);
    // Axes and their labels.
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>"
        "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"black\"/>\n"
        "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\">epoch</text>\n"
        "<text x=\"{6}\" y=\"{7}\" text-anchor=\"middle\" transform=\"rotate(-90 {6} {7})\">{8}</text>\n",
        left, kTop, kTop + kPlotH, left + kPlotW, left + kPlotW / 2, kTop + kPlotH + 36, left - 52,
        kTop + kPlotH / 2, xml_escape(panel.y_label));
    s += "</g>\n";
    // One polyline per configuration, with a dot per epoch.
    for (const RunResult& r : runs) {
      std::string points, dots;
      for (const EpochRow& e : r.epochs) {
        const double x = px(double(e.epoch)), y = py(panel.value(e));
        points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x, y);
        dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", x, y, color_of(r.config));
      }
      s += fmt::format(
          "<polyline data-config=\"{}\" data-panel=\"{}\" fill=\"none\" stroke=\"{}\" {} points=\"{}\"/>\n{}\n",
          xml_escape(r.config), panel.key, color_of(r.config), stroke_style(r.config), points, dots);
      if (r.failure && !r.epochs.empty()) {
        const EpochRow& last = r.epochs.back();
        s += fmt::format(
            "<text data-failure=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\" font-size=\"11\">died: {}</text>\n",
            xml_escape(r.config), px(double(last.epoch)) + 6, py(panel.value(last)) - 6, color_of(r.config),
            xml_escape(r.failure->error));
      }
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace ndgc::train_tool
