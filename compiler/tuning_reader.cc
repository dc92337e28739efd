#include "tuning_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "codegen_text.h"
#include "tune_hash.h"
#include "tune_probe.h"
#include "tune_reader.h"
#include "yaml_input.h"

namespace kpack {
namespace {

// A tuning file holds a node or two per byte: allowing as many nodes as it
// has bytes (and at least a manifest's budget) admits every file `kpack
// tune` writes, while an alias bomb, which is what the limit is for, still
// cannot make a small file stand for a huge tree.
YamlLimits TuningLimits(size_t bytes) { return YamlLimits{64, std::max<uint64_t>(100000, bytes)}; }

std::string JoinNames(const std::vector<std::string>& names) { return codegen::Join(names, ", "); }

// A number of microseconds as people read it: "2.91", "0.5", "12".
std::string Micros(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", us);
  return text;
}

// A YAML number (unquoted, decimal, finite); nullopt for anything else.
std::optional<double> Number(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") return std::nullopt;
  const std::string& s = node.Scalar();
  if (s.empty() || s.find_first_not_of("+-.0123456789eE") != std::string::npos) return std::nullopt;
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  double value = 0;
  auto [end, ec] = std::from_chars(begin, s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// "rows: [1, 64, 1024]", for messages.
std::string AxisText(const TuneAxis& a) {
  std::vector<std::string> values;
  for (int64_t v : a.values) values.push_back(std::to_string(v));
  return a.param + ": [" + JoinNames(values) + "]";
}

bool IsNullish(const YAML::Node& node) {
  return !node.IsDefined() || node.IsNull() || (node.IsScalar() && node.Scalar().empty());
}

// Like FileReader::CheckMap, for key lists known only at run time (a
// result's keys are the kernel's key params).
bool CheckKeys(FileReader& r, const YAML::Node& node, const std::string& what, const std::vector<std::string>& allowed,
               const std::vector<std::string>& required) {
  if (!node.IsMap()) {
    r.Error(node, what + " must be a mapping");
    return false;
  }
  std::set<std::string> seen;
  bool ok = true;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      r.Error(entry.first, "keys of " + what + " must be plain names");
      ok = false;
      continue;
    }
    const std::string name = entry.first.Scalar();
    if (!seen.insert(name).second) {
      r.Error(entry.first, "duplicate key '" + name + "' in " + what);
      ok = false;
    } else if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      r.Error(entry.first, "unknown key '" + name + "' in " + what + " (expected one of: " + JoinNames(allowed) + ")");
      ok = false;
    }
  }
  for (const std::string& key : required)
    if (!seen.count(key)) {
      r.Error(node, what + " is missing required key '" + key + "'");
      ok = false;
    }
  return ok;
}

// Reads one tuning file; see ReadTuningFile.
class TuningReader {
 public:
  TuningReader(FileReader& r, const Package& pkg) : r_(r), pkg_(pkg) {}

  std::optional<TuningFile> Read(const YAML::Node& root) {
    const int before = r_.diag().error_count();
    if (!r_.CheckMap(root, "a tuning file",
                     {"kpack_tuning", "package", "gpu", "sm", "driver", "kpack_version", "repeats", "kernels"},
                     {"kpack_tuning", "package", "gpu", "sm", "kernels"}))
      return std::nullopt;
    // The version first: a file of another format is read no further.
    if (YAML::Node v = FileReader::Get(root, "kpack_tuning"); v.IsDefined()) {
      std::optional<int64_t> version = r_.Integer(v, "kpack_tuning");
      if (!version) return std::nullopt;
      if (*version != 1) {
        r_.Error(v, "kpack_tuning " + std::to_string(*version) +
                        " is a format this kpack does not read (it reads kpack_tuning: 1); run this kpack's kpack tune "
                        "again");
        return std::nullopt;
      }
    }
    TuningFile file;
    file.path = r_.file();
    file.loc = r_.Loc(root);
    for (const auto& entry : root) {
      const std::string key = entry.first.Scalar();
      const YAML::Node& v = entry.second;
      if (key == "package") ReadPackageName(v);
      else if (key == "gpu") ReadGpu(v, file);
      else if (key == "sm") ReadSm(v, file);
      else if (key == "driver") file.driver = r_.String(v, "driver").value_or("");
      else if (key == "kpack_version") file.kpack_version = r_.String(v, "kpack_version").value_or("");
      else if (key == "repeats") ReadRepeats(v);
      else if (key == "kernels") ReadKernels(v, file);
    }
    if (r_.diag().error_count() != before) return std::nullopt;
    return file;
  }

 private:
  void ReadPackageName(const YAML::Node& v) {
    std::optional<std::string> name = r_.String(v, "package");
    if (name && *name != pkg_.name)
      r_.Error(v, "this tuning file is for package '" + *name + "', not '" + pkg_.name + "' (" + pkg_.manifest_path +
                      ")");
  }

  void ReadGpu(const YAML::Node& v, TuningFile& file) {
    std::optional<std::string> gpu = r_.String(v, "gpu");
    if (gpu && gpu->empty()) r_.Error(v, "gpu must name the device, as cuDeviceGetName does (\"NVIDIA H100 80GB HBM3\")");
    else if (gpu) file.gpu = *gpu;
  }

  void ReadSm(const YAML::Node& v, TuningFile& file) {
    std::optional<int64_t> sm = r_.Integer(v, "sm");
    if (sm && (*sm < 10 || *sm > 1000)) r_.Error(v, "sm must be 10 * major + minor of the device (90 for sm_90)");
    else if (sm) file.sm = static_cast<int>(*sm);
  }

  void ReadRepeats(const YAML::Node& v) {
    std::optional<int64_t> repeats = r_.Integer(v, "repeats");
    if (repeats && *repeats < 1) r_.Error(v, "repeats must be at least 1");
  }

  void ReadKernels(const YAML::Node& v, TuningFile& file) {
    if (!v.IsSequence()) {
      r_.Error(v, "kernels must be a list of tuned kernels");
      return;
    }
    std::map<std::string, SourceLoc> seen;
    for (const YAML::Node& item : v) {
      std::optional<TunedKernel> tk = ReadKernel(item, seen);
      if (tk) file.kernels.push_back(std::move(*tk));
    }
  }

  // The kernel's name, checked against the package; nullptr when reported.
  const Kernel* ReadKernelName(const YAML::Node& v, std::map<std::string, SourceLoc>& seen) {
    std::optional<std::string> name = r_.String(v, "kernel");
    if (!name) return nullptr;
    auto [it, inserted] = seen.emplace(*name, r_.Loc(v));
    if (!inserted) {
      r_.Error(v, "kernel '" + *name + "' is listed twice (first at " + it->second.ToString() + ")");
      return nullptr;
    }
    auto k = std::find_if(pkg_.kernels.begin(), pkg_.kernels.end(), [&](const Kernel& x) { return x.name == *name; });
    if (k == pkg_.kernels.end()) {
      r_.Error(v, "package '" + pkg_.name + "' has no kernel '" + *name + "'");
      return nullptr;
    }
    if (!k->tune) {
      r_.Error(v, "kernel '" + *name + "' has no tune: section in its manifest (" + k->manifest_path + ")");
      return nullptr;
    }
    return &*k;
  }

  std::optional<TunedKernel> ReadKernel(const YAML::Node& node, std::map<std::string, SourceLoc>& seen) {
    const int before = r_.diag().error_count();
    if (!r_.CheckMap(node, "a tuned kernel", {"kernel", "manifest_hash", "key", "shapes", "tuned", "tables"},
                     {"kernel", "manifest_hash", "key", "shapes", "tuned", "tables"}) ||
        r_.diag().error_count() != before)
      return std::nullopt;
    TunedKernel tk;
    tk.loc = r_.Loc(node);
    const Kernel* k = ReadKernelName(FileReader::Get(node, "kernel"), seen);
    if (!k) return std::nullopt;
    tk.kernel = k->name;
    const YAML::Node hash = FileReader::Get(node, "manifest_hash");
    tk.hash_loc = r_.ValueLoc(hash);
    if (std::optional<std::string> h = r_.String(hash, "manifest_hash")) {
      if (h->size() != 16 || h->find_first_not_of("0123456789abcdef") != std::string::npos)
        r_.Error(hash, "manifest_hash must be 16 lowercase hex digits, as kpack tune writes it");
      tk.manifest_hash = *h;
    }
    if (!ReadGrid(FileReader::Get(node, "key"), FileReader::Get(node, "shapes"), tk)) return std::nullopt;
    if (!ReadTuned(FileReader::Get(node, "tuned"), tk)) return std::nullopt;
    const YAML::Node tables = FileReader::Get(node, "tables");
    if (tables.IsNull()) return tk;  // `tables:` with none: nothing was built to time
    if (!tables.IsSequence()) {
      r_.Error(tables, "tables must be a list, one table per built combination");
      return std::nullopt;
    }
    std::map<std::string, size_t> labels;
    for (const YAML::Node& t : tables) ReadTable(t, tk, labels);
    if (r_.diag().error_count() != before) return std::nullopt;
    return tk;
  }

  // `key:` and `shapes:`, into tk.key: distinct names; per name a
  // non-empty, ascending list of positive integers; at most
  // kMaxTuneShapes shapes.
  bool ReadGrid(const YAML::Node& key, const YAML::Node& shapes, TunedKernel& tk) {
    tk.key_loc = r_.Loc(key);
    tk.shapes_loc = r_.Loc(shapes);
    if (!r_.NonEmptySequence(key, "key")) return false;
    std::vector<std::string> names;
    for (const YAML::Node& item : key) {
      std::optional<std::string> name = r_.String(item, "each entry of key");
      if (!name) return false;
      if (std::find(names.begin(), names.end(), *name) != names.end()) {
        r_.Error(item, "duplicate key param '" + *name + "'");
        return false;
      }
      names.push_back(*name);
    }
    if (!CheckKeys(r_, shapes, "shapes", names, names)) return false;
    size_t grid = 1;
    for (const std::string& name : names) {
      const YAML::Node values = FileReader::Get(shapes, name);
      TuneAxis axis{name, {}, r_.Loc(values)};
      if (!r_.NonEmptySequence(values, "shapes of '" + name + "'")) return false;
      for (const YAML::Node& item : values) {
        std::optional<int64_t> v = r_.Integer(item, "a value of '" + name + "'");
        if (!v) return false;
        if (*v < 1 || (!axis.values.empty() && *v <= axis.values.back())) {
          r_.Error(item, "shapes of '" + name + "' must be positive and ascending, each value once (" +
                             std::to_string(*v) + (axis.values.empty() ? "" : " after " + std::to_string(axis.values.back())) +
                             ")");
          return false;
        }
        axis.values.push_back(*v);
      }
      grid *= axis.values.size();  // at most 4096 * a sequence's length: no overflow
      if (grid > kMaxTuneShapes) {
        r_.Error(shapes, "the grid has more than " + std::to_string(kMaxTuneShapes) + " shapes");
        return false;
      }
      tk.key.push_back(std::move(axis));
    }
    return true;
  }

  bool ReadTuned(const YAML::Node& v, TunedKernel& tk) {
    tk.tuned_loc = r_.Loc(v);
    if (!r_.NonEmptySequence(v, "tuned")) return false;
    for (const YAML::Node& item : v) {
      std::optional<std::string> name = r_.String(item, "each entry of tuned");
      if (!name) return false;
      if (std::find(tk.tuned.begin(), tk.tuned.end(), *name) != tk.tuned.end()) {
        r_.Error(item, "duplicate tuned constexpr '" + *name + "'");
        return false;
      }
      tk.tuned.push_back(*name);
    }
    return true;
  }

  void ReadFor(const YAML::Node& v, TunedTable& t) {
    if (!v.IsMap()) {
      r_.Error(v, "for must be a mapping of constexpr names to values ({} for a kernel without such constexprs)");
      return;
    }
    for (const auto& entry : v) {
      if (!entry.first.IsScalar() || !entry.second.IsScalar()) {
        r_.Error(entry.first, "each entry of for must be a constexpr name and its value");
        continue;
      }
      const std::string name = entry.first.Scalar();
      auto same = std::find_if(t.for_text.begin(), t.for_text.end(), [&](const auto& p) { return p.first == name; });
      if (same != t.for_text.end()) {
        r_.Error(entry.first, "duplicate key '" + name + "' in for");
        continue;
      }
      t.for_text.emplace_back(name, entry.second.Scalar());
      t.for_locs.push_back(r_.ValueLoc(entry.second));
    }
  }

  // `variant:`, where given: only `unaligned` (the aligned variant's
  // table, or a kernel's only one, says none).
  void ReadVariant(const YAML::Node& v, TunedTable& t) {
    t.variant_loc = r_.ValueLoc(v);
    if (!v.IsScalar() || v.Scalar() != "unaligned") {
      r_.Error(v, "variant must be 'unaligned' (leave it out of the aligned variant's table, and of a kernel "
                  "without variants)");
      return;
    }
    t.unaligned = true;
  }

  void ReadTable(const YAML::Node& node, TunedKernel& tk, std::map<std::string, size_t>& labels) {
    if (!r_.CheckMap(node, "a table", {"for", "variant", "results", "probes"}, {"for", "results"})) return;
    TunedTable t;
    t.loc = r_.Loc(node);
    const YAML::Node for_node = FileReader::Get(node, "for");
    if (for_node.IsDefined()) ReadFor(for_node, t);
    if (const YAML::Node variant = FileReader::Get(node, "variant"); variant.IsDefined()) ReadVariant(variant, t);
    const YAML::Node results = FileReader::Get(node, "results");
    if (!results.IsDefined()) return;
    if (!results.IsSequence()) {
      r_.Error(results, "results must be a list, one result per shape in grid order");
      return;
    }
    const size_t grid = GridSize(tk.key);
    if (results.size() != grid) {
      r_.Error(results, "results has " + std::to_string(results.size()) + " entries; the grid of " + GridText(tk) +
                            " has " + std::to_string(grid) + " shapes, one result each in grid order");
      return;
    }
    std::set<size_t> used;
    auto use = [&](const std::vector<std::pair<size_t, double>>& ranking) {
      for (const auto& [candidate, us] : ranking)
        if (used.insert(candidate).second) t.uses.emplace_back(candidate, SourceLoc{});
    };
    for (size_t i = 0; i < grid; ++i) {
      std::optional<std::vector<std::pair<size_t, double>>> ranking = ReadResult(results[i], i, tk, labels);
      if (!ranking) continue;
      use(*ranking);
      t.ranking.push_back(std::move(*ranking));
    }
    const YAML::Node probes = FileReader::Get(node, "probes");
    if (probes.IsDefined() && !IsNullish(probes)) {
      if (!probes.IsSequence()) {
        r_.Error(probes, "probes must be a list, one entry per shape tuned between the grid's values");
        return;
      }
      std::map<std::vector<int64_t>, SourceLoc> seen;
      for (const YAML::Node& entry : probes) {
        std::optional<TunedProbe> probe = ReadProbe(entry, tk, labels, seen);
        if (!probe) continue;
        use(probe->ranking);
        t.probes.push_back(std::move(*probe));
      }
    }
    // The first use in this table, for "not built" messages about it.
    for (auto& [candidate, loc] : t.uses) loc = FirstUse(results, probes, tk.labels[candidate]);
    tk.tables.push_back(std::move(t));
  }

  // Where `label` first appears as a key of an entry's `us` in `results`,
  // else in `probes`.
  SourceLoc FirstUse(const YAML::Node& results, const YAML::Node& probes, const std::string& label) {
    for (const YAML::Node& list : {results, probes}) {
      if (!list.IsSequence()) continue;
      for (const YAML::Node& result : list) {
        const YAML::Node us = FileReader::Get(result, "us");
        if (!us.IsMap()) continue;
        for (const auto& entry : us)
          if (entry.first.IsScalar() && entry.first.Scalar() == label) return r_.ValueLoc(entry.first);
      }
    }
    return r_.Loc(results);
  }

  // "rows x cols: 4 x 4", for messages.
  static std::string GridText(const TunedKernel& tk) {
    std::vector<std::string> names, sizes;
    for (const TuneAxis& a : tk.key) {
      names.push_back(a.param);
      sizes.push_back(std::to_string(a.values.size()));
    }
    return codegen::Join(names, " x ") + ": " + codegen::Join(sizes, " x ");
  }

  static std::string ShapeText(const TunedKernel& tk, const std::vector<int64_t>& point) {
    std::vector<std::string> parts;
    for (size_t a = 0; a < tk.key.size(); ++a) parts.push_back(tk.key[a].param + " " + std::to_string(point[a]));
    return codegen::Join(parts, ", ");
  }

  // A label must be NAME=VALUE per tuned constexpr, in `tuned` order,
  // joined by one space; the values are read against the manifest later.
  bool LabelShaped(const std::string& label, const TunedKernel& tk) {
    size_t at = 0;
    for (size_t i = 0; i < tk.tuned.size(); ++i) {
      const std::string head = (i ? " " : "") + tk.tuned[i] + "=";
      if (label.compare(at, head.size(), head) != 0) return false;
      at += head.size();
      size_t end = label.find(' ', at);
      if (end == std::string::npos) end = label.size();
      if (end == at) return false;
      at = end;
    }
    return at == label.size();
  }

  // The index of candidate `label`, added at its first use; nullopt when
  // it is not shaped like one (reported).
  std::optional<size_t> Candidate(const YAML::Node& key, TunedKernel& tk, std::map<std::string, size_t>& labels) {
    const std::string label = key.Scalar();
    if (auto it = labels.find(label); it != labels.end()) return it->second;
    if (!LabelShaped(label, tk)) {
      std::vector<std::string> parts;
      for (const std::string& name : tk.tuned) parts.push_back(name + "=VALUE");
      r_.diag().Error(r_.ValueLoc(key), "'" + label + "' is not a candidate label: it must be " +
                                            codegen::Join(parts, " ") + " (tuned: " + JoinNames(tk.tuned) + ")");
      return std::nullopt;
    }
    labels.emplace(label, tk.labels.size());
    tk.labels.push_back(label);
    tk.label_locs.push_back(r_.ValueLoc(key));
    return tk.labels.size() - 1;
  }

  // One result: at shape `index` of the grid; its times, ranked fastest
  // first (ties: `best` first, then as written).  nullopt when reported.
  std::optional<std::vector<std::pair<size_t, double>>> ReadResult(const YAML::Node& node, size_t index,
                                                                   TunedKernel& tk,
                                                                   std::map<std::string, size_t>& labels) {
    std::optional<std::vector<int64_t>> at = ReadShape(node, "a result", tk);
    if (!at) return std::nullopt;
    const std::vector<int64_t> expected = GridPoint(tk.key, index);
    if (*at != expected) {
      std::vector<std::string> names;
      for (const TuneAxis& a : tk.key) names.push_back(a.param);
      r_.Error(node, "result " + std::to_string(index + 1) + " is at " + ShapeText(tk, *at) +
                         "; in grid order (row-major over key [" + JoinNames(names) + "], the last fastest) it must be " +
                         ShapeText(tk, expected));
      return std::nullopt;
    }
    return ReadTimes(node, "a result", tk, labels);
  }

  // One probe: a shape inside the grid's cells (every key value strictly
  // between two neighbouring grid values, or a one-value grid's value: what
  // tune_probe.h chooses from), each shape once (`seen`: those read so far),
  // its times as a result's.  nullopt when reported.
  std::optional<TunedProbe> ReadProbe(const YAML::Node& node, TunedKernel& tk, std::map<std::string, size_t>& labels,
                                      std::map<std::vector<int64_t>, SourceLoc>& seen) {
    std::optional<std::vector<int64_t>> at = ReadShape(node, "a probe", tk);
    if (!at) return std::nullopt;
    for (size_t a = 0; a < tk.key.size(); ++a) {
      const TuneAxis& axis = tk.key[a];
      if (ProbeValueFits(axis.values, (*at)[a])) continue;
      const std::string value = axis.param + " " + std::to_string((*at)[a]);
      r_.Error(FileReader::Get(node, axis.param),
               "probe at " + ShapeText(tk, *at) + ": " + value +
                   (axis.values.size() == 1 ? " is not the one value of its grid ("
                                            : " is not strictly between two neighbouring values of its grid (") +
                   AxisText(axis) + "); a probe lies inside the grid's cells, strictly between two neighbouring "
                   "values on every key (on a key of one value, at that value)");
      return std::nullopt;
    }
    auto [first, inserted] = seen.emplace(*at, r_.Loc(node));
    if (!inserted) {
      r_.Error(node, "a second probe at " + ShapeText(tk, *at) + " (the first is at " + first->second.ToString() + ")");
      return std::nullopt;
    }
    std::optional<std::vector<std::pair<size_t, double>>> ranking = ReadTimes(node, "a probe", tk, labels);
    if (!ranking) return std::nullopt;
    return TunedProbe{std::move(*at), std::move(*ranking), r_.Loc(node)};
  }

  // A result's or a probe's keys (`what`: "a result"), and its key values
  // in `key:` order; nullopt when reported.
  std::optional<std::vector<int64_t>> ReadShape(const YAML::Node& node, const std::string& what,
                                                const TunedKernel& tk) {
    std::vector<std::string> allowed, required;
    for (const TuneAxis& a : tk.key) allowed.push_back(a.param);
    required = allowed;
    required.push_back("us");
    for (const char* key : {"best", "margin", "us"}) allowed.push_back(key);
    if (!CheckKeys(r_, node, what, allowed, required)) return std::nullopt;
    std::vector<int64_t> at;
    for (const TuneAxis& a : tk.key) {
      std::optional<int64_t> v = r_.Integer(FileReader::Get(node, a.param), "the value of '" + a.param + "'");
      if (!v) return std::nullopt;
      at.push_back(*v);
    }
    return at;
  }

  // A result's or a probe's (`what`) `us`, `best` and `margin`: its times,
  // ranked fastest first (ties: `best` first, then as written).  nullopt
  // when reported.
  std::optional<std::vector<std::pair<size_t, double>>> ReadTimes(const YAML::Node& node, const std::string& what,
                                                                  TunedKernel& tk,
                                                                  std::map<std::string, size_t>& labels) {
    const YAML::Node us = FileReader::Get(node, "us");
    if (!us.IsMap()) {
      r_.Error(us, "us must map each candidate label to its time in microseconds ({} where none could run)");
      return std::nullopt;
    }
    std::vector<std::pair<size_t, double>> ranking;
    bool ok = true;
    for (const auto& entry : us) {
      if (!entry.first.IsScalar()) {
        r_.Error(entry.first, "keys of us must be candidate labels");
        ok = false;
        continue;
      }
      std::optional<size_t> c = Candidate(entry.first, tk, labels);
      if (!c) {
        ok = false;
        continue;
      }
      if (std::any_of(ranking.begin(), ranking.end(), [&](const auto& p) { return p.first == *c; })) {
        r_.Error(entry.first, "duplicate key '" + entry.first.Scalar() + "' in us");
        ok = false;
        continue;
      }
      std::optional<double> time = Number(entry.second);
      if (!time) {
        r_.Error(entry.second, "the time of '" + entry.first.Scalar() + "' must be a number of microseconds");
        ok = false;
      } else if (*time < 0) {
        r_.Error(entry.second, "the time of '" + entry.first.Scalar() + "' is negative (" + Micros(*time) + " us)");
        ok = false;
      } else {
        ranking.emplace_back(*c, *time);
      }
    }
    if (!ok || !CheckBest(node, what, ranking, tk, labels)) return std::nullopt;
    return ranking;
  }

  // `best` names the fastest candidate of a result with times (and moves
  // it to the front of `ranking`, sorted fastest first); `margin` is a
  // number.  Where no candidate ran (`us: {}`), both may be left out.
  bool CheckBest(const YAML::Node& node, const std::string& what, std::vector<std::pair<size_t, double>>& ranking,
                 const TunedKernel& tk, const std::map<std::string, size_t>& labels) {
    const YAML::Node best = FileReader::Get(node, "best");
    const YAML::Node margin = FileReader::Get(node, "margin");
    if (!IsNullish(margin) && !Number(margin)) {
      r_.Error(margin, "margin must be a number (the runner-up's time over the best's)");
      return false;
    }
    if (ranking.empty()) {
      if (IsNullish(best)) return true;
      r_.Error(best, "best names a candidate, but no candidate has a time here (us is empty)");
      return false;
    }
    if (IsNullish(best)) {
      r_.Error(node, what + " with times must name its fastest candidate as best");
      return false;
    }
    std::optional<std::string> label = r_.String(best, "best");
    if (!label) return false;
    auto it = labels.find(*label);
    auto timed = it == labels.end() ? ranking.end()
                                    : std::find_if(ranking.begin(), ranking.end(),
                                                   [&](const auto& p) { return p.first == it->second; });
    if (timed == ranking.end()) {
      r_.Error(best, "best '" + *label + "' has no time in us");
      return false;
    }
    const std::pair<size_t, double> chosen = *timed;
    std::stable_sort(ranking.begin(), ranking.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (chosen.second > ranking.front().second) {
      r_.Error(best, "best '" + *label + "' (" + Micros(chosen.second) + " us) is not the fastest: '" +
                         tk.labels[ranking.front().first] + "' took " + Micros(ranking.front().second) + " us");
      return false;
    }
    // Ties: `best` first, as the file chose.
    ranking.erase(std::find(ranking.begin(), ranking.end(), chosen));
    ranking.insert(ranking.begin(), chosen);
    return true;
  }

  FileReader& r_;
  const Package& pkg_;
};

// ---- After the expand pass ----------------------------------------------------

// The values a label names (NAME=VALUE per tuned constexpr), read against
// the manifest's constexprs; nullopt when reported.
std::optional<std::vector<int64_t>> LabelValues(const Kernel& k, const TunedKernel& tk, size_t candidate,
                                                Diagnostics& diag) {
  const std::string& label = tk.labels[candidate];
  std::vector<int64_t> values;
  size_t at = 0;
  for (const std::string& name : tk.tuned) {
    at += name.size() + 1;  // "NAME=" (after a space but the first time)
    size_t end = std::min(label.find(' ', at), label.size());
    const std::string text = label.substr(at, end - at);
    at = end + 1;
    const Constexpr& c = *k.FindConstexpr(name);  // tuned matches the manifest's auto constexprs
    auto v = std::find_if(c.values.begin(), c.values.end(), [&](const ConstexprValue& x) { return ValueText(c, x) == text; });
    if (v == c.values.end()) {
      std::vector<std::string> listed;
      for (const ConstexprValue& x : c.values) listed.push_back(ValueText(c, x));
      diag.Error(tk.label_locs[candidate], "'" + label + "': " + text + " is not a value of " + name + " (" +
                                               JoinNames(listed) + ")");
      return std::nullopt;
    }
    values.push_back(v->integer);
  }
  return values;
}

std::vector<std::string> KeyNames(const std::vector<TuneAxis>& axes) {
  std::vector<std::string> out;
  for (const TuneAxis& a : axes) out.push_back(a.param);
  return out;
}

// Key, shapes and tuned constexprs as the manifest has them.
bool SameGrid(const Kernel& k, const TunedKernel& tk, Diagnostics& diag) {
  const Tune& tune = *k.tune;
  if (KeyNames(tk.key) != KeyNames(tune.key)) {
    diag.Error(tk.key_loc, "key [" + JoinNames(KeyNames(tk.key)) + "] is not " + k.name + "'s tune: key [" +
                               JoinNames(KeyNames(tune.key)) + "] (" + tune.loc.ToString() + ")");
    return false;
  }
  for (size_t a = 0; a < tune.key.size(); ++a)
    if (tk.key[a].values != tune.key[a].values) {
      diag.Error(tk.shapes_loc, "shapes " + AxisText(tk.key[a]) + " are not " + k.name + "'s tune: shapes " +
                                    AxisText(tune.key[a]) + " (" + tune.key[a].loc.ToString() + ")");
      return false;
    }
  std::vector<std::string> autos;
  for (const Constexpr& c : k.constexprs)
    if (c.Auto()) autos.push_back(c.name);
  if (tk.tuned != autos) {
    diag.Error(tk.tuned_loc, "tuned [" + JoinNames(tk.tuned) + "] is not " + k.name +
                                 "'s auto constexprs, in their order [" + JoinNames(autos) + "]");
    return false;
  }
  return true;
}

// A table's `for`, read into its combo: exactly the ForAxes, values that
// the constexprs list.
bool ReadCombo(const Kernel& k, TunedTable& t, Diagnostics& diag) {
  const std::vector<size_t> axes = ForAxes(k);
  std::vector<std::string> names;
  for (size_t axis : axes) names.push_back(k.constexprs[axis].name);
  bool ok = true;
  for (size_t i = 0; i < t.for_text.size(); ++i)
    if (std::find(names.begin(), names.end(), t.for_text[i].first) == names.end()) {
      diag.Error(t.for_locs[i], "'" + t.for_text[i].first + "' in for is not a constexpr of " + k.name +
                                    " that callers choose without auto (" +
                                    (names.empty() ? std::string("it has none: for: {}") : JoinNames(names)) + ")");
      ok = false;
    }
  t.combo.clear();
  for (size_t axis : axes) {
    const Constexpr& c = k.constexprs[axis];
    auto it = std::find_if(t.for_text.begin(), t.for_text.end(), [&](const auto& p) { return p.first == c.name; });
    if (it == t.for_text.end()) {
      diag.Error(t.loc, "for is missing '" + c.name + "' (a table's for names a value of each of " + JoinNames(names) +
                            ")");
      ok = false;
      continue;
    }
    const SourceLoc& loc = t.for_locs[static_cast<size_t>(it - t.for_text.begin())];
    auto v = std::find_if(c.values.begin(), c.values.end(), [&](const ConstexprValue& x) { return ValueText(c, x) == it->second; });
    if (v == c.values.end()) {
      std::vector<std::string> listed;
      for (const ConstexprValue& x : c.values) listed.push_back(ValueText(c, x));
      diag.Error(loc, "'" + it->second + "' is not a value of " + c.name + " (" + JoinNames(listed) + ")");
      ok = false;
      continue;
    }
    t.combo.push_back(*v);
  }
  return ok;
}

// Whether some API specialization has the combo's values and (when given)
// the candidate's values of the auto constexprs.
bool Built(const Kernel& k, const std::vector<const Specialization*>& specs, const std::vector<ConstexprValue>& combo,
           const std::vector<int64_t>* candidate) {
  const std::vector<size_t> axes = ForAxes(k);
  return std::any_of(specs.begin(), specs.end(), [&](const Specialization* s) {
    for (size_t j = 0; j < axes.size(); ++j)
      if (!SameValue(s->values[axes[j]], combo[j])) return false;
    if (!candidate) return true;
    size_t j = 0;
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].Auto() && s->values[i].integer != (*candidate)[j++]) return false;
    return true;
  });
}

// Everything a tuning that is not stale must agree on with the manifest
// and the builds.
void CheckAgainstBuilds(const Kernel& k, const std::vector<const Specialization*>& specs, TunedKernel& tk,
                        Diagnostics& diag) {
  if (!SameGrid(k, tk, diag)) return;
  tk.candidates.clear();
  bool labels_ok = true;
  for (size_t c = 0; c < tk.labels.size(); ++c) {
    std::optional<std::vector<int64_t>> values = LabelValues(k, tk, c, diag);
    labels_ok = labels_ok && values.has_value();
    tk.candidates.push_back(values.value_or(std::vector<int64_t>{}));
  }
  std::vector<const TunedTable*> done;
  for (TunedTable& t : tk.tables) {
    if (t.unaligned && !k.HasAlignedVariant()) {
      diag.Error(t.variant_loc, "variant: unaligned, but " + k.name +
                                    " has no aligned variant (no divisibility: auto or equal_to_1: auto param)");
      continue;
    }
    if (!ReadCombo(k, t, diag)) continue;
    const std::string combo = ComboText(k, t.combo);
    // One table per combination and variant.
    auto twin = std::find_if(done.begin(), done.end(), [&](const TunedTable* other) {
      return other->unaligned == t.unaligned &&
             std::equal(other->combo.begin(), other->combo.end(), t.combo.begin(), SameValue);
    });
    if (twin != done.end()) {
      diag.Error(t.loc, "a second " + std::string(t.unaligned ? "unaligned-variant " : "") + "table for " +
                            (combo.empty() ? std::string("the kernel") : combo) + " (the first is at " +
                            (*twin)->loc.ToString() + ")");
      continue;
    }
    done.push_back(&t);
    if (!Built(k, specs, t.combo, nullptr)) {
      diag.Error(t.for_locs.empty() ? t.loc : t.for_locs.front(),
                 "no specialization of " + k.name + " was built with " + combo);
      continue;
    }
    if (!labels_ok) continue;
    for (const auto& [candidate, loc] : t.uses)
      if (!Built(k, specs, t.combo, &tk.candidates[candidate]))
        diag.Error(loc, "candidate '" + tk.labels[candidate] + "' was not built" +
                            (combo.empty() ? std::string() : " for " + combo));
  }
}

}  // namespace

void ReadTunings(FileReader& r, const YAML::Node& list, Package& pkg) {
  if (!list.IsSequence()) {
    r.Error(list, "tuning must be a list of tuning files (written by kpack tune)");
    return;
  }
  std::map<std::string, SourceLoc> seen;
  for (const YAML::Node& item : list) {
    std::optional<std::string> listed = r.String(item, "each entry of tuning");
    if (!listed) continue;
    const std::string path = ResolveBeside(r.file(), *listed);
    if (!r.Inside(item, "tuning file '" + *listed + "'", path)) continue;
    if (!InputExists(path, r.options())) {
      r.Error(item, "tuning file '" + *listed + "' not found (looked for " + path + ")");
      continue;
    }
    auto [it, inserted] = seen.emplace(path, r.Loc(item));
    if (!inserted) {
      r.Error(item, "tuning file '" + *listed + "' is listed twice (first at " + it->second.ToString() + ")");
      continue;
    }
    if (std::optional<TuningFile> file = ReadTuningFile(path, *listed, pkg, r.options(), r.diag()))
      pkg.tunings.push_back(std::move(*file));
  }
}

std::optional<TuningFile> ReadTuningFile(const std::string& path, const std::string& listed, const Package& pkg,
                                         const LoadOptions& options, Diagnostics& diag) {
  std::optional<std::string> text = ReadInput(path, options);
  if (!text) {
    diag.Error(SourceLoc{path, 0, 0}, "cannot read file");
    return std::nullopt;
  }
  std::optional<YAML::Node> root = ParseManifestText(path, *text, diag, TuningLimits(text->size()));
  if (!root) return std::nullopt;
  FileReader r(path, options, diag);
  std::optional<TuningFile> file = TuningReader(r, pkg).Read(*root);
  if (file) file->listed = listed;
  return file;
}

void CheckTunings(Package& pkg, const std::vector<Specialization>& specs, bool allow_stale, Diagnostics& diag) {
  for (TuningFile& file : pkg.tunings)
    for (TunedKernel& tk : file.kernels) {
      auto it = std::find_if(pkg.kernels.begin(), pkg.kernels.end(), [&](const Kernel& x) { return x.name == tk.kernel; });
      if (it == pkg.kernels.end() || !it->tune) continue;  // the load pass reported it
      const Kernel* k = &*it;
      const std::vector<const Specialization*> api = codegen::SpecsOf(*k, specs);
      if (tk.manifest_hash != TuneManifestHash(*k, api)) {
        if (!allow_stale) {
          diag.Error(tk.hash_loc, k->name + " was tuned against another version of its manifest (" +
                                      k->manifest_path + "); run kpack tune again, or build with "
                                      "--allow-stale-tuning to use its rules");
          continue;
        }
        diag.Note(tk.hash_loc.ToString() + ": warning: " + k->name + "'s tuning for " + file.gpu +
                  " is stale (its manifest changed); the auto dispatcher uses its rules there");
        tk.stale = true;
        tk.tables.clear();
        continue;
      }
      CheckAgainstBuilds(*k, api, tk, diag);
    }
}

size_t GridSize(const std::vector<TuneAxis>& axes) {
  size_t n = 1;
  for (const TuneAxis& a : axes) n *= a.values.size();
  return n;
}

std::vector<int64_t> GridPoint(const std::vector<TuneAxis>& axes, size_t index) {
  std::vector<int64_t> out(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    out[a] = axes[a].values[index % axes[a].values.size()];
    index /= axes[a].values.size();
  }
  return out;
}

double Margin(const std::vector<std::pair<size_t, double>>& ranking) {
  if (ranking.empty()) return 0;
  if (ranking.size() == 1 || ranking[0].second <= 0) return 1;
  return ranking[1].second / ranking[0].second;
}

std::string ComboText(const Kernel& k, const std::vector<ConstexprValue>& combo) {
  const std::vector<size_t> axes = ForAxes(k);
  std::vector<std::string> parts;
  for (size_t j = 0; j < axes.size() && j < combo.size(); ++j)
    parts.push_back(k.constexprs[axes[j]].name + "=" + ValueText(k.constexprs[axes[j]], combo[j]));
  return codegen::Join(parts, " ");
}

std::vector<size_t> ForAxes(const Kernel& k) {
  std::vector<size_t> out;
  for (size_t i = 0; i < k.constexprs.size(); ++i)
    if (k.constexprs[i].InApi() && !k.constexprs[i].Auto()) out.push_back(i);
  return out;
}

}  // namespace kpack
