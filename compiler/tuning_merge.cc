#include "tuning_merge.h"

#include <algorithm>
#include <utility>

#include "codegen_text.h"

namespace kpack {
namespace {

constexpr const char* kEntry = "  - kernel: ";

// A tuning file cut at its `kernels:` line: the lines before and
// including it, and each kernel's entry (its name and its lines).
struct Parts {
  std::vector<std::string> header;
  std::vector<std::pair<std::string, std::string>> kernels;
  size_t bad_line = 0;  // 1-based: a line that fits neither; 0 when none
  bool has_kernels = false;
};

Parts Split(const std::string& text) {
  Parts p;
  const std::vector<std::string> lines = codegen::SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (!p.has_kernels) {
      p.header.push_back(line);
      p.has_kernels = line == "kernels:";
    } else if (line.rfind(kEntry, 0) == 0) {
      p.kernels.emplace_back(line.substr(std::string(kEntry).size()), line + "\n");
    } else if (!p.kernels.empty() && line.rfind("    ", 0) == 0) {
      p.kernels.back().second += line + "\n";
    } else if (p.bad_line == 0) {
      p.bad_line = i + 1;
    }
  }
  return p;
}

// The value of header line `key: VALUE` and its 1-based line; "" and 0
// when absent.
std::pair<std::string, size_t> HeaderValue(const Parts& p, const std::string& key) {
  for (size_t i = 0; i < p.header.size(); ++i)
    if (p.header[i].rfind(key + ": ", 0) == 0) return {p.header[i].substr(key.size() + 2), i + 1};
  return {"", 0};
}

}  // namespace

TuningMerge MergeTuningText(const std::string& path, const std::string& existing, const std::string& fresh) {
  TuningMerge out;
  const Parts old = Split(existing), now = Split(fresh);
  const std::string redo = "; tune every kernel (without --kernel) to write it anew, or write elsewhere (-o)";
  if (!old.has_kernels || old.bad_line != 0) {
    const size_t line = old.has_kernels ? old.bad_line : 1;
    out.error = path + ":" + std::to_string(line) + ":1: error: " +
                (old.has_kernels ? std::string("this line is not part of a kernel's entry as kpack tune writes it")
                                 : std::string("not a tuning file as kpack tune writes it (no 'kernels:' line)")) +
                ", so --kernel cannot merge into it" + redo;
    return out;
  }
  for (const char* key : {"package", "gpu"}) {
    const auto [was, line] = HeaderValue(old, key);
    const std::string is = HeaderValue(now, key).first;
    if (was != is) {
      out.error = path + ":" + std::to_string(std::max<size_t>(line, 1)) + ":1: error: this tuning file is for " + key +
                  " '" + was + "', and this run tuned " + key + " '" + is + "'" + redo;
      return out;
    }
  }
  for (const std::string& line : now.header) out.text += line + "\n";
  std::vector<bool> placed(now.kernels.size(), false);
  for (const auto& [name, entry] : old.kernels) {
    auto fresh_entry = std::find_if(now.kernels.begin(), now.kernels.end(),
                                    [&name = name](const auto& k) { return k.first == name; });
    if (fresh_entry == now.kernels.end()) {
      out.text += entry;
      out.kept.push_back(name);
    } else {
      out.text += fresh_entry->second;
      placed[static_cast<size_t>(fresh_entry - now.kernels.begin())] = true;
    }
  }
  for (size_t i = 0; i < now.kernels.size(); ++i)
    if (!placed[i]) out.text += now.kernels[i].second;
  return out;
}

}  // namespace kpack
