// tuning_writer.cc - the tuning file's text: block YAML for the header and
// the kernels, one flow map per result so that a re-tune's diff shows the
// shapes whose times or winners moved, line by line.
#include "tuning_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace kpack {
namespace {

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// Whether `s` reads back as itself written plain, inside a flow map too:
// letters, digits and a few punctuation marks inside, starting with a
// letter, a digit or '_'; not YAML's null; and, unless `number_ok`, not
// something a YAML reader would take for a number.
bool Plain(const std::string& s, bool number_ok) {
  if (s.empty() || s == "null" || s == "Null" || s == "NULL" || s == "~") return false;
  if (!IsAlnum(s[0]) && s[0] != '_') return false;
  if (s.back() == ' ' || s.find("  ") != std::string::npos) return false;
  for (char c : s)
    if (!IsAlnum(c) && std::string(" _.+-/()").find(c) == std::string::npos) return false;
  if (!number_ok) {
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    if (end != nullptr && *end == '\0') return false;
  }
  return true;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Scalar(const std::string& s, bool number_ok = false) { return Plain(s, number_ok) ? s : Quoted(s); }

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string IntList(const std::vector<int64_t>& values) {
  std::vector<std::string> items;
  for (int64_t v : values) items.push_back(std::to_string(v));
  return "[" + Join(items, ", ") + "]";
}

std::string Margin(double margin) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", margin);
  return text;
}

// One `- {rows: 1, cols: 128, best: ..., margin: ..., us: {...}}` line: a
// result, or (shape >= k.Shapes()) a probe.
std::string ResultLine(const TunedResultKernel& k, const TunedResultTable& t, size_t shape) {
  std::vector<std::string> fields;
  std::vector<int64_t> key = k.ShapeKey(shape);
  for (size_t i = 0; i < key.size(); ++i) fields.push_back(k.key[i].first + ": " + std::to_string(key[i]));
  const std::vector<std::optional<double>>& us = t.us[shape];
  ShapeWinner w = WinnerOf(us);
  if (w.best) {
    fields.push_back("best: " + Quoted(k.candidates[*w.best]));
    fields.push_back("margin: " + Margin(w.margin));
  }
  std::vector<std::string> times;
  for (size_t c = 0; c < us.size(); ++c)
    if (us[c]) times.push_back(Quoted(k.candidates[c]) + ": " + FormatMicroseconds(*us[c]));
  fields.push_back("us: {" + Join(times, ", ") + "}");
  return "          - {" + Join(fields, ", ") + "}\n";
}

}  // namespace

size_t TunedResultKernel::Shapes() const {
  size_t n = 1;
  for (const auto& axis : key) n *= axis.second.size();
  return n;
}

std::vector<int64_t> TunedResultKernel::ShapeKey(size_t shape) const {
  if (const size_t grid = Shapes(); shape >= grid) return probes.at(shape - grid);
  std::vector<int64_t> out(key.size());
  for (size_t i = key.size(); i-- > 0;) {
    out[i] = key[i].second[shape % key[i].second.size()];
    shape /= key[i].second.size();
  }
  return out;
}

std::string TunedResultKernel::ShapeLabel(size_t shape) const {
  std::vector<int64_t> values = ShapeKey(shape);
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size(); ++i) parts.push_back(key[i].first + "=" + std::to_string(values[i]));
  return Join(parts, " ");
}

std::string FormatMicroseconds(double us) {
  if (!(us > 0)) return "0";
  // Digits before the point (0 or fewer below 1): what 3 significant
  // digits leave after it.
  int digits = 1;
  for (double v = us; v >= 10; v /= 10) ++digits;
  for (double v = us; v < 1 && digits > -300; v *= 10) --digits;
  int decimals = digits >= 3 ? 0 : 3 - digits;
  char text[400];
  std::snprintf(text, sizeof text, "%.*f", decimals, us);
  std::string out = text;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

ShapeWinner WinnerOf(const std::vector<std::optional<double>>& us) {
  ShapeWinner w;
  std::optional<size_t> runner_up;
  std::optional<double> best_printed, runner_up_printed;
  for (size_t c = 0; c < us.size(); ++c) {
    if (!us[c]) continue;
    double t = std::strtod(FormatMicroseconds(*us[c]).c_str(), nullptr);
    if (!best_printed || t < *best_printed) {
      runner_up = w.best;
      runner_up_printed = best_printed;
      w.best = c;
      best_printed = t;
    } else if (!runner_up_printed || t < *runner_up_printed) {
      runner_up = c;
      runner_up_printed = t;
    }
  }
  // The margin of the measured times, as precise as they are; at least 1
  // where the printed times tie and the measured ones do not.
  if (w.best && runner_up && *us[*w.best] > 0) w.margin = std::max(1.0, *us[*runner_up] / *us[*w.best]);
  return w;
}

std::string GpuSlug(const std::string& gpu) {
  std::string out;
  bool dash = false;
  for (char c : gpu) {
    if (IsAlnum(c)) {
      if (dash && !out.empty()) out += '-';
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      dash = false;
    } else {
      dash = true;
    }
  }
  return out.empty() ? "gpu" : out;
}

std::string FormatTuningFile(const TuneResults& r) {
  std::string out = "# Written by `kpack tune` from " + r.manifest_label +
                    "; run it again rather than editing (docs/tuning.md).\n"
                    "# us: median microseconds per launch; best: the fastest; margin: the runner-up's time over "
                    "best's.\n";
  out += "kpack_tuning: 1\n";
  out += "package: " + Scalar(r.package) + "\n";
  out += "gpu: " + Scalar(r.gpu) + "\n";
  out += "sm: " + std::to_string(r.sm) + "\n";
  out += "driver: " + Quoted(r.driver) + "\n";
  out += "kpack_version: " + Scalar(r.kpack_version) + "\n";
  out += "repeats: " + std::to_string(r.repeats) + "\n";
  out += r.kernels.empty() ? "kernels: []\n" : "kernels:\n";
  for (const TunedResultKernel& k : r.kernels) {
    out += "  - kernel: " + k.kernel + "\n";
    out += "    manifest_hash: " + Scalar(k.manifest_hash) + "\n";
    std::vector<std::string> names, axes, tuned;
    for (const auto& [name, values] : k.key) {
      names.push_back(name);
      axes.push_back(name + ": " + IntList(values));
    }
    out += "    key: [" + Join(names, ", ") + "]\n";
    out += "    shapes: {" + Join(axes, ", ") + "}\n";
    out += "    tuned: [" + Join(k.tuned, ", ") + "]\n";
    out += "    tables:\n";
    for (const TunedResultTable& t : k.tables) {
      std::vector<std::string> combo;
      for (const auto& [name, value] : t.combo) combo.push_back(name + ": " + Scalar(value, true));
      out += "      - for: {" + Join(combo, ", ") + "}\n";
      if (t.unaligned) out += "        variant: unaligned\n";
      out += "        results:\n";
      const size_t grid = std::min(k.Shapes(), t.us.size());
      for (size_t s = 0; s < grid; ++s) out += ResultLine(k, t, s);
      if (t.us.size() > grid) out += "        probes:\n";
      for (size_t s = grid; s < t.us.size(); ++s) out += ResultLine(k, t, s);
    }
  }
  return out;
}

}  // namespace kpack
