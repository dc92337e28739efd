// tune_report.cc - the HTML report of a tuning run, drawn as inline SVG so
// that the file is all a reader needs (an archive of CI artifacts, a mail).
#include "tune_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace kpack {
namespace {

constexpr double kLeft = 72, kTop = 30, kPlotHeight = 240, kLegendWidth = 210;
// The width of a shape: narrower for a long grid (the 70 shapes of a 7 x 10
// grid in 2500 px rather than 4500), its margin in a smaller type.
constexpr size_t kManyShapes = 16;
constexpr double kSlot = 64, kNarrowSlot = 36;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t kNumColors = sizeof kColors / sizeof kColors[0];
// What a time of 0 (an empty kernel on the fake driver) is drawn at.
constexpr double kFloorUs = 1e-3;

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

std::string Margin(double m) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", m);
  return text;
}

// The rows of t.us that are the grid's shapes (the probes follow).
size_t GridRows(const TunedResultKernel& k, const TunedResultTable& t) { return std::min(k.Shapes(), t.us.size()); }

// A candidate's stroke: a color, dashed from the eleventh on.
std::string Stroke(size_t c) {
  std::string out = "stroke=\"" + std::string(kColors[c % kNumColors]) + "\"";
  if (c >= kNumColors) out += " stroke-dasharray=\"6 3\"";
  return out;
}

// The log-scaled y axis of one chart.
class Scale {
 public:
  Scale(const TunedResultTable& t, size_t shapes) : slot_(shapes <= kManyShapes ? kSlot : kNarrowSlot) {
    double lo = 0, hi = 0;
    bool any = false;
    for (size_t s = 0; s < shapes; ++s)
      for (const std::optional<double>& v : t.us[s]) {
        if (!v) continue;
        double x = std::max(*v, kFloorUs);
        lo = any ? std::min(lo, x) : x;
        hi = any ? std::max(hi, x) : x;
        any = true;
      }
    if (!any) lo = hi = 1;
    lo_ = std::log10(lo / 1.25);
    hi_ = std::log10(hi * 1.25);
  }
  std::vector<double> Ticks(const std::vector<double>& mantissas) const {
    std::vector<double> out;
    for (int e = static_cast<int>(std::floor(lo_)); e <= static_cast<int>(std::ceil(hi_)); ++e)
      for (double m : mantissas) {
        double v = m * std::pow(10.0, e);
        if (std::log10(v) >= lo_ && std::log10(v) <= hi_) out.push_back(v);
      }
    return out;
  }
  double Slot() const { return slot_; }
  double X(size_t shape) const { return kLeft + slot_ * (static_cast<double>(shape) + 0.5); }
  double Right(size_t shapes) const { return kLeft + slot_ * static_cast<double>(shapes); }
  double Y(double us) const { return kTop + kPlotHeight * (hi_ - std::log10(std::max(us, kFloorUs))) / (hi_ - lo_); }
  // 1, 2 and 5 times the powers of ten inside the range; 1 to 9 times
  // them where that leaves fewer than three.
  std::vector<double> Ticks() const {
    std::vector<double> out = Ticks({1, 2, 5});
    return out.size() >= 3 ? out : Ticks({1, 2, 3, 4, 5, 6, 7, 8, 9});
  }

 private:
  double slot_, lo_, hi_;
};

void WriteAxes(const TunedResultKernel& k, size_t shapes, const Scale& scale, std::string& out) {
  const double right = scale.Right(shapes), bottom = kTop + kPlotHeight;
  out += "<rect class=\"plot\" x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" + Num(right - kLeft) +
         "\" height=\"" + Num(kPlotHeight) + "\"/>\n";
  for (double v : scale.Ticks()) {
    const std::string y = Num(scale.Y(v));
    out += "<line class=\"grid\" x1=\"" + Num(kLeft) + "\" y1=\"" + y + "\" x2=\"" + Num(right) + "\" y2=\"" + y +
           "\"/>\n";
    out += "<text class=\"tick\" x=\"" + Num(kLeft - 6) + "\" y=\"" + y + "\" text-anchor=\"end\" dy=\"4\">" +
           FormatMicroseconds(v) + "</text>\n";
  }
  // A grid of several keys: a line where the first key's value changes.
  const size_t group = k.key.size() > 1 && !k.key[0].second.empty() ? shapes / k.key[0].second.size() : 0;
  for (size_t s = group; group > 0 && s < shapes; s += group) {
    const std::string x = Num(scale.Right(s));
    out += "<line class=\"group\" x1=\"" + x + "\" y1=\"" + Num(kTop) + "\" x2=\"" + x + "\" y2=\"" + Num(bottom) +
           "\"/>\n";
  }
  out += "<text class=\"axis\" transform=\"translate(16 " + Num(kTop + kPlotHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">us per launch (log)</text>\n";
  for (size_t s = 0; s < shapes; ++s) {
    const std::string x = Num(scale.X(s));
    out += "<text class=\"shape\" transform=\"translate(" + x + " " + Num(bottom + 12) +
           ") rotate(-40)\" text-anchor=\"end\">" + Escape(k.ShapeLabel(s)) + "</text>\n";
  }
}

// Each candidate's times as polylines over the shapes where it ran (a
// dot where it ran at one shape between two where it did not).
void WriteLines(const TunedResultKernel& k, const TunedResultTable& t, size_t shapes, const Scale& scale,
                std::string& out) {
  for (size_t c = 0; c < k.candidates.size(); ++c) {
    std::vector<std::string> run;
    auto flush = [&]() {
      if (run.size() == 1) {
        size_t comma = run[0].find(',');
        out += "<circle class=\"point\" cx=\"" + run[0].substr(0, comma) + "\" cy=\"" + run[0].substr(comma + 1) +
               "\" r=\"2.5\" fill=\"" + kColors[c % kNumColors] + "\"/>\n";
      } else if (run.size() > 1) {
        std::string points;
        for (const std::string& p : run) points += (points.empty() ? "" : " ") + p;
        out += "<polyline class=\"candidate\" data-candidate=\"" + Escape(k.candidates[c]) + "\" points=\"" + points +
               "\" fill=\"none\" " + Stroke(c) + " stroke-width=\"2\"/>\n";
      }
      run.clear();
    };
    for (size_t s = 0; s < shapes; ++s) {
      if (t.us[s][c]) run.push_back(Num(scale.X(s)) + "," + Num(scale.Y(*t.us[s][c])));
      else flush();
    }
    flush();
  }
}

void WriteWinners(const TunedResultKernel& k, const TunedResultTable& t, size_t shapes, const Scale& scale,
                  std::string& out) {
  out += "<text class=\"margin\" x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(kTop - 8) +
         "\" text-anchor=\"end\">margin</text>\n";
  for (size_t s = 0; s < shapes; ++s) {
    ShapeWinner w = WinnerOf(t.us[s]);
    if (!w.best) continue;
    const double us = *t.us[s][*w.best];
    out += "<circle class=\"winner\" cx=\"" + Num(scale.X(s)) + "\" cy=\"" + Num(scale.Y(us)) + "\" r=\"5\" fill=\"" +
           kColors[*w.best % kNumColors] + "\"><title>" + Escape(k.ShapeLabel(s) + ": " + k.candidates[*w.best] + ", " +
           FormatMicroseconds(us) + " us, margin " + Margin(w.margin)) + "</title></circle>\n";
    out += std::string(scale.Slot() < kSlot ? "<text class=\"margin narrow\"" : "<text class=\"margin\"") + " x=\"" +
           Num(scale.X(s)) + "\" y=\"" + Num(kTop - 8) + "\" text-anchor=\"middle\">" +
           Margin(w.margin) + "</text>\n";
  }
}

void WriteLegend(const TunedResultKernel& k, double x, std::string& out) {
  for (size_t c = 0; c < k.candidates.size(); ++c) {
    const double y = kTop + 10 + 18 * static_cast<double>(c);
    out += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(x + 24) + "\" y2=\"" + Num(y) + "\" " +
           Stroke(c) + " stroke-width=\"2\"/>\n";
    out += "<text class=\"legend\" x=\"" + Num(x + 30) + "\" y=\"" + Num(y + 4) + "\">" + Escape(k.candidates[c]) +
           "</text>\n";
  }
}

std::string Chart(const TunedResultKernel& k, const TunedResultTable& t) {
  const size_t shapes = GridRows(k, t);
  Scale scale(t, shapes);
  const double plot_right = scale.Right(shapes);
  const double legend_height = kTop + 20 + 18 * static_cast<double>(k.candidates.size());
  // The shape labels hang below the plot at 40 degrees: about 4.3 px of
  // height per character of the longest.
  size_t longest = 0;
  for (size_t shape = 0; shape < shapes; ++shape) longest = std::max(longest, k.ShapeLabel(shape).size());
  const double bottom = 36 + 4.3 * static_cast<double>(longest);
  // ... and reach about 4.7 px per character to the left of their shape:
  // the chart moves right where the first would be cut.
  const double shift = std::max(0.0, 4.7 * static_cast<double>(longest) - scale.Slot() / 2 - kLeft + 8);
  const double width = shift + plot_right + 24 + kLegendWidth;
  const double height = std::max(kTop + kPlotHeight + bottom, legend_height);
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
                    "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) + "\">\n";
  out += "<g transform=\"translate(" + Num(shift) + " 0)\">\n";
  WriteAxes(k, shapes, scale, out);
  WriteLines(k, t, shapes, scale, out);
  WriteWinners(k, t, shapes, scale, out);
  WriteLegend(k, plot_right + 24, out);
  return out + "</g>\n</svg>\n";
}

std::string Title(const TunedResultKernel& k, const TunedResultTable& t) {
  return (t.label.empty() ? k.kernel : k.kernel + " " + t.label) + (t.unaligned ? " (unaligned variant)" : "");
}

// The probes of a table (the shapes between the grid's values), one row
// each: every candidate's time, the winner's in bold, and the margin.  A
// winner here that wins at none of the neighbouring grid shapes is what the
// probes are for: the table's region there picks a slower candidate.
std::string ProbeTable(const TunedResultKernel& k, const TunedResultTable& t) {
  const size_t grid = GridRows(k, t);
  if (t.us.size() <= grid) return "";
  std::string out = "<table class=\"probes\">\n<caption>Probes: shapes between the grid's values</caption>\n"
                    "<thead><tr><th>Shape</th><th>Best</th><th>Margin</th>";
  for (const std::string& c : k.candidates) out += "<th>" + Escape(c) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (size_t s = grid; s < t.us.size(); ++s) {
    ShapeWinner w = WinnerOf(t.us[s]);
    out += "<tr><td>" + Escape(k.ShapeLabel(s)) + "</td><td>" + (w.best ? Escape(k.candidates[*w.best]) : "&#8212;") +
           "</td><td>" + (w.best ? Margin(w.margin) : "&#8212;") + "</td>";
    for (size_t c = 0; c < t.us[s].size(); ++c) {
      const std::optional<double>& us = t.us[s][c];
      const std::string time = us ? FormatMicroseconds(*us) : "&#8212;";
      out += w.best == c ? "<td class=\"best\">" + time + "</td>" : "<td>" + time + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

// "BLOCK=256 &#215;2, BLOCK=512 &#215;1": the winners of rows [from, to).
std::string Wins(const TunedResultKernel& k, const TunedResultTable& t, size_t from, size_t to,
                 std::optional<double>* smallest) {
  std::map<size_t, size_t> wins;
  for (size_t s = from; s < to; ++s) {
    ShapeWinner w = WinnerOf(t.us[s]);
    if (!w.best) continue;
    ++wins[*w.best];
    if (smallest && (!*smallest || w.margin < **smallest)) *smallest = w.margin;
  }
  std::string won;
  for (const auto& [c, n] : wins)
    won += (won.empty() ? "" : ", ") + Escape(k.candidates[c]) + " &#215;" + std::to_string(n);
  return won.empty() ? "&#8212;" : won;
}

// Per kernel and table: the grid's shapes, their winners and smallest
// margin; with probes or variants in the run, also the probes' winners and
// each table's variant.
void WriteSummary(const TuneResults& r, std::string& out) {
  bool probes = false;
  for (const TunedResultKernel& k : r.kernels)
    for (const TunedResultTable& t : k.tables) probes = probes || t.us.size() > GridRows(k, t);
  out += "<h2>Summary</h2>\n<table class=\"summary\">\n<thead><tr><th>Kernel</th><th>Combination</th><th>Shapes</th>"
         "<th>Wins</th><th>Smallest margin</th>" +
         std::string(probes ? "<th>Probe wins</th>" : "") + "</tr></thead>\n<tbody>\n";
  for (const TunedResultKernel& k : r.kernels)
    for (const TunedResultTable& t : k.tables) {
      const size_t grid = GridRows(k, t);
      std::optional<double> smallest;
      const std::string won = Wins(k, t, 0, grid, &smallest);
      std::string combo = t.label.empty() ? "&#8212;" : Escape(t.label);
      if (t.unaligned) combo += " (unaligned variant)";
      out += "<tr><td>" + Escape(k.kernel) + "</td><td>" + combo + "</td><td>" + std::to_string(grid) + "</td><td>" +
             won + "</td><td>" + (smallest ? Margin(*smallest) : "&#8212;") + "</td>" +
             (probes ? "<td>" + Wins(k, t, grid, t.us.size(), nullptr) + "</td>" : "") + "</tr>\n";
    }
  out += "</tbody>\n</table>\n";
}

constexpr const char* kStyle = R"(body { font-family: sans-serif; margin: 2em; color: #222; }
table.summary { border-collapse: collapse; }
table.summary th, table.summary td { border: 1px solid #ccc; padding: 0.3em 0.8em; text-align: left; }
table.probes { border-collapse: collapse; margin: -1em 0 2em 0; font-size: 90%; }
table.probes caption { text-align: left; padding: 0.3em 0; }
table.probes th, table.probes td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
table.probes td.best { font-weight: bold; }
svg { display: block; margin: 0.5em 0 2em 0; }
svg text { font-size: 11px; fill: #222; }
svg .plot { fill: #fafafa; stroke: #999; }
svg .grid { stroke: #e2e2e2; }
svg .margin { fill: #555; font-size: 10px; }
svg .narrow { font-size: 8px; }
svg .group { stroke: #bbb; stroke-dasharray: 3 3; }
svg .winner { stroke: #000; stroke-width: 1.5; }
)";

}  // namespace

std::string FormatTuneReport(const TuneResults& r) {
  const std::string title = "kpack tune: " + r.package + " on " + r.gpu;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" + Escape(title) +
                    "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<h1>" + Escape(title) + "</h1>\n";
  out += "<p>sm_" + std::to_string(r.sm) + ", driver " + Escape(r.driver) + ", kpack " + Escape(r.kpack_version) +
         "; each time is the median of " + std::to_string(r.repeats) +
         " timed batches, per launch.  A dot marks the fastest candidate at each shape; the number above it is the "
         "runner-up's time over the winner's (the margin).</p>\n";
  bool probes = false, unaligned = false;
  for (const TunedResultKernel& k : r.kernels)
    for (const TunedResultTable& t : k.tables) {
      probes = probes || t.us.size() > GridRows(k, t);
      unaligned = unaligned || t.unaligned;
    }
  if (probes)
    out += "<p>Probes are shapes between the grid's values, where a decision table's region is judged inside "
           "rather than at its corners: a probe's winner that wins at none of its neighbouring grid shapes marks a "
           "region whose choice is slower there.  Each chart's probes are listed below it.</p>\n";
  if (unaligned)
    out += "<p>A kernel whose launcher picks an aligned variant (every divisibility: auto param a multiple of 16) "
           "was also timed with its unaligned variant: those tables are charted separately, titled "
           "\"(unaligned variant)\".</p>\n";
  WriteSummary(r, out);
  for (const TunedResultKernel& k : r.kernels) {
    out += "<h2 id=\"" + Escape(k.kernel) + "\">" + Escape(k.kernel) + "</h2>\n";
    for (const TunedResultTable& t : k.tables) {
      out += "<h3>" + Escape(Title(k, t)) + "</h3>\n";
      out += Chart(k, t);
      out += ProbeTable(k, t);
    }
  }
  return out + "</body>\n</html>\n";
}

}  // namespace kpack
