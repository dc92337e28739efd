// tuned_table_gen.cc - the decision tables of an auto dispatcher, in
// generated C: see tuned_table_gen.h for what the code does.
#include "tuned_table_gen.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include "codegen_text.h"
#include "tuning_reader.h"

namespace kpack::codegen {
namespace {

using Combo = std::vector<ConstexprValue>;

// A candidate's `valid` in one combination: folded (always, never) or a
// C expression the call evaluates.
struct Validity {
  enum class Kind { kAlways, kNever, kRuntime };
  Kind kind = Kind::kAlways;
  std::string c;  // kRuntime: EmitExprC's text
};

// The values `valid` sees for one candidate in one combination: the
// candidate's auto constexprs, the combination's other API constexprs, and
// any constexpr every build shares; params are the call's.  The bindings
// refer to the arguments, which must outlive them.
ExprBindings ValidBindings(const Kernel& k, const Combo& combo, const std::vector<int64_t>& candidate) {
  const std::vector<size_t> axes = ForAxes(k);
  // The value of constexpr `i`, if it is one of those.
  auto value = [&k, &combo, &candidate, axes](size_t i) -> std::optional<ConstexprValue> {
    const Constexpr& c = k.constexprs[i];
    if (c.Auto()) {
      size_t j = 0;
      for (size_t x = 0; x < i; ++x) j += k.constexprs[x].Auto() ? 1 : 0;
      ConstexprValue v;
      v.integer = candidate[j];
      return v;
    }
    for (size_t j = 0; j < axes.size(); ++j)
      if (axes[j] == i) return combo[j];
    if (!c.in_api && !c.Computed() && c.values.size() == 1) return c.values[0];
    return std::nullopt;
  };
  auto index = [&k](const std::string& name) -> std::optional<size_t> {
    for (size_t i = 0; i < k.constexprs.size(); ++i)
      if (k.constexprs[i].name == name) return i;
    return std::nullopt;
  };
  ExprBindings b;
  b.constant = [&k, value, index](const std::string& name) -> std::optional<int64_t> {
    std::optional<size_t> i = index(name);
    if (!i) return std::nullopt;
    const ConstexprKind kind = k.constexprs[*i].kind;
    if (kind != ConstexprKind::kInt && kind != ConstexprKind::kBool) return std::nullopt;
    std::optional<ConstexprValue> v = value(*i);
    return v ? std::optional<int64_t>(v->integer) : std::nullopt;
  };
  b.size_of = [value, index](const std::string& name) -> int64_t {
    std::optional<size_t> i = index(name);
    std::optional<ConstexprValue> v = i ? value(*i) : std::nullopt;
    return v ? Info(v->dtype).size : 0;
  };
  return b;
}

// The C test that the dispatcher's argument `c` has value `v`.
std::string ComboTest(const Constexpr& c, const ConstexprValue& v) {
  switch (c.kind) {
    case ConstexprKind::kDtype: return c.name + " == " + std::string(Info(v.dtype).enumerator);
    case ConstexprKind::kBool: return v.integer ? c.name + " != 0" : c.name + " == 0";
    case ConstexprKind::kStr: return c.name + " != NULL && strcmp(" + c.name + ", " + CString(v.text) + ") == 0";
    case ConstexprKind::kFloat: {
      // %.17g reads back as the same double, as the dispatcher compares.
      char text[40];
      std::snprintf(text, sizeof text, "%.17g", v.real);
      std::string literal = text;
      if (literal.find_first_of(".eEn") == std::string::npos) literal += ".0";
      return c.name + " == " + literal;
    }
    case ConstexprKind::kInt: break;
  }
  return c.name + " == " + std::to_string(v.integer);
}

// The ranking entry type and its end marker, for `count` candidates.
std::pair<std::string, std::string> RankType(size_t count) {
  if (count < 0xff) return {"uint8_t", "255"};
  if (count < 0xffff) return {"uint16_t", "65535"};
  return {"uint32_t", "4294967295u"};
}

class TableWriter {
 public:
  TableWriter(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs,
              const std::string& who)
      : pkg_(pkg), k_(k), who_(who), tunings_(TablesFor(pkg, k)), axes_(ForAxes(k)) {
    for (const auto& [file, tk] : tunings_)
      for (const std::vector<int64_t>& values : tk->candidates)
        if (std::find(candidates_.begin(), candidates_.end(), values) == candidates_.end())
          candidates_.push_back(values);
    // Combinations with a table somewhere, in the order of the builds.
    for (const Specialization* s : specs) {
      Combo combo;
      for (size_t axis : axes_) combo.push_back(s->values[axis]);
      if (FindCombo(combo) < combos_.size() || !AnyTable(combo)) continue;
      combos_.push_back(std::move(combo));
    }
    variants_ = AnyUnaligned() ? 2 : 1;
    if (k_.tune)
      for (size_t a = 0; a < k_.tune->key.size(); ++a) {
        std::vector<int64_t> probe_values;
        for (const auto& [file, tk] : tunings_)
          for (const TunedTable& t : tk->tables)
            for (const TunedProbe& p : t.probes) probe_values.push_back(p.at[a]);
        lookup_.push_back(LookupAxis(k_.tune->key[a].values, probe_values));
      }
    for (const Combo& combo : combos_) {
      std::vector<Validity> row;
      for (const std::vector<int64_t>& candidate : candidates_) row.push_back(Valid(combo, candidate));
      validity_.push_back(std::move(row));
    }
  }

  std::string Write() {
    if (tunings_.empty() || combos_.empty()) return "";
    out_ += "  /* The choice of the decision tables (kpack tune; docs/tuning.md), where a\n"
            "     tuning applies to this device, it has a table for this combination and\n"
            "     a candidate of this call's region cell is valid; else the rules. */\n  {\n";
    WriteSelect();
    out_ += "    if (kpack_tuning >= 0) {\n";
    WriteCandidates();
    WriteRanks();
    WriteCell();
    if (variants_ == 2) {
      std::string what;
      const std::string test = AlignedVariantTest(k_, &what);
      out_ += "      /* The launcher's variant, whose own tables apply: aligned (0) when\n"
              "         " + CommentText(what) + ";\n"
              "         else unaligned (1). */\n";
      out_ += "      const int kpack_variant = (" + test + ") ? 0 : 1;\n";
    }
    out_ += "      int kpack_pick = -1;\n";
    if (axes_.empty()) {
      WriteCombo(0, "      ");
    } else {
      for (size_t i = 0; i < combos_.size(); ++i) {
        std::vector<std::string> tests;
        for (size_t j = 0; j < axes_.size(); ++j) tests.push_back(ComboTest(k_.constexprs[axes_[j]], combos_[i][j]));
        const std::string test = tests.size() == 1 ? tests[0] : "(" + Join(tests, ") && (") + ")";
        out_ += (i == 0 ? "      if (" : "      } else if (") + test + ") {\n";
        WriteCombo(i, "        ");
      }
      out_ += "      }\n";
    }
    out_ += "      if (kpack_pick >= 0)\n        return " + Call() + ";\n";
    out_ += "    }\n  }\n";
    return out_;
  }

 private:
  bool AnyTable(const Combo& combo) const {
    for (const auto& [file, tk] : tunings_)
      if (FindTable(*tk, combo) || FindTable(*tk, combo, true)) return true;
    return false;
  }

  size_t FindCombo(const Combo& combo) const {
    for (size_t i = 0; i < combos_.size(); ++i)
      if (std::equal(combos_[i].begin(), combos_[i].end(), combo.begin(), SameValue)) return i;
    return combos_.size();
  }

  // The table of `combo` (of the unaligned variant's times, or the other).
  static const TunedTable* FindTable(const TunedKernel& tk, const Combo& combo, bool unaligned = false) {
    for (const TunedTable& t : tk.tables)
      if (t.unaligned == unaligned && std::equal(t.combo.begin(), t.combo.end(), combo.begin(), SameValue)) return &t;
    return nullptr;
  }

  // Whether some tuning has a table of the unaligned variant for some
  // combination: then the tables are chosen by the launcher's variant.
  bool AnyUnaligned() const {
    if (!k_.HasAlignedVariant()) return false;
    for (const auto& [file, tk] : tunings_)
      for (const TunedTable& t : tk->tables)
        if (t.unaligned) return true;
    return false;
  }

  size_t GlobalCandidate(const TunedKernel& tk, size_t local) const {
    return static_cast<size_t>(std::find(candidates_.begin(), candidates_.end(), tk.candidates[local]) -
                               candidates_.begin());
  }

  Validity Valid(const Combo& combo, const std::vector<int64_t>& candidate) const {
    if (!k_.tune || !k_.tune->valid) return {};
    ExprBindings b = ValidBindings(k_, combo, candidate);
    if (std::optional<int64_t> v = EvaluateExpr(*k_.tune->valid, b))
      return {*v != 0 ? Validity::Kind::kAlways : Validity::Kind::kNever, ""};
    return {Validity::Kind::kRuntime, EmitExprC(*k_.tune->valid, b)};
  }

  // A cell's ranking as the tables hold it: global candidates, fastest
  // first, without those never valid, ending at the first always valid.
  std::vector<size_t> Ranking(size_t combo, const TunedKernel& tk,
                              const std::vector<std::pair<size_t, double>>& ranking) const {
    std::vector<size_t> out;
    for (const auto& [local, us] : ranking) {
      size_t c = GlobalCandidate(tk, local);
      const Validity::Kind kind = validity_[combo][c].kind;
      if (kind == Validity::Kind::kNever) continue;
      out.push_back(c);
      if (kind == Validity::Kind::kAlways) break;
    }
    return out;
  }

  void WriteSelect() {
    std::vector<std::string> gpus, sms;
    for (const auto& [file, tk] : tunings_) {
      gpus.push_back(CString(file->gpu));
      sms.push_back(std::to_string(file->sm));
    }
    const std::string n = std::to_string(tunings_.size());
    out_ += "    /* The tunings with tables for " + CommentText(k_.name) + ", in the package file's order. */\n";
    out_ += "    static const char *const kpack_gpus[" + n + "] = {" + Join(gpus, ", ") + "};\n";
    out_ += "    static const int kpack_sms[" + n + "] = {" + Join(sms, ", ") + "};\n";
    out_ += "    static kpack_tuning_set kpack_tunings = {" + n + ", kpack_gpus, kpack_sms, {0}, NULL, 0};\n";
    out_ += "    int kpack_tuning = -1;\n";
    out_ += "    kpack_status kpack_tuning_st = kpack_tuning_select(" + CString(who_) +
            ", &kpack_tunings, &kpack_tuning);\n";
    out_ += "    if (kpack_tuning_st != KPACK_SUCCESS)\n      return kpack_tuning_st;\n";
  }

  void WriteCandidates() {
    std::vector<std::string> names, rows;
    for (const Constexpr& c : k_.constexprs)
      if (c.Auto()) names.push_back(c.name);
    for (const std::vector<int64_t>& values : candidates_) {
      std::vector<std::string> parts;
      for (int64_t v : values) parts.push_back(std::to_string(v));
      rows.push_back("{" + Join(parts, ", ") + "}");
    }
    out_ += "      /* The candidates: values of " + Join(names, ", ") + ". */\n";
    out_ += "      static const int kpack_candidates[" + std::to_string(candidates_.size()) + "][" +
            std::to_string(names.size()) + "] = {" + Join(rows, ", ") + "};\n";
  }

  // Every (tuning, combination, variant) table, one row per cell of the
  // regions (RegionCount per key, row-major); each row the cell's Ranking
  // of its MinimaxRanking over its corners and probes, padded with the end
  // marker to the longest.
  void WriteRanks() {
    std::vector<std::vector<std::vector<size_t>>> tables;  // [table][cell] -> ranking
    std::vector<std::string> titles;
    first_.assign(combos_.size(), std::vector<std::vector<int64_t>>(tunings_.size(), std::vector<int64_t>(variants_, -1)));
    ranked_.assign(combos_.size(), {});
    std::vector<std::vector<int64_t>> grid;
    for (const TuneAxis& a : k_.tune->key) grid.push_back(a.values);
    size_t width = 1, rows = 0;
    for (size_t ci = 0; ci < combos_.size(); ++ci)
      for (size_t ti = 0; ti < tunings_.size(); ++ti)
        for (size_t v = 0; v < variants_; ++v) {
          const TunedTable* t = FindTable(*tunings_[ti].second, combos_[ci], v == 1);
          if (!t) continue;
          first_[ci][ti][v] = static_cast<int64_t>(rows);
          std::vector<ProbeRanking> probes;
          for (const TunedProbe& p : t->probes) probes.push_back({p.at, &p.ranking});
          std::vector<std::vector<size_t>> cells;
          for (const CellRanking& ranking : RegionRankings(t->ranking, grid, probes, lookup_)) {
            cells.push_back(Ranking(ci, *tunings_[ti].second, ranking));
            width = std::max(width, cells.back().size());
            ranked_[ci].insert(cells.back().begin(), cells.back().end());
          }
          rows += cells.size();
          tables.push_back(std::move(cells));
          std::string combo = ComboText(k_, combos_[ci]);
          titles.push_back(CommentText(tunings_[ti].first->gpu) + " (sm_" + std::to_string(tunings_[ti].first->sm) +
                           ")" + (combo.empty() ? "" : ", " + CommentText(combo)) +
                           (v == 1 ? ", unaligned variant" : ""));
        }
    width_ = width;
    const auto [type, end] = RankType(candidates_.size());
    end_ = end;
    type_ = type;
    // A line per value of the other keys' regions, where the last has few.
    const size_t per_line = std::min<size_t>(RegionCount(lookup_.back().size()), 9);
    out_ += "      /* Per tuning and combination, the ranking of each region cell (" + GridText() + "),\n"
            "         best first by the worst slowdown over the shapes measured in the\n"
            "         cell (else in its grid cell: the tuned shapes enclosing it and the\n"
            "         probes inside), as far as the first candidate whose valid always\n"
            "         holds;\n"
            "         " + end + " ends one. */\n";
    out_ += "      static const " + type + " kpack_ranks[" + std::to_string(rows) + "][" + std::to_string(width) +
            "] = {\n";
    for (size_t t = 0; t < tables.size(); ++t) {
      out_ += "          /* " + titles[t] + " */\n";
      for (size_t cell = 0; cell < tables[t].size(); ++cell) {
        std::vector<std::string> parts;
        for (size_t i = 0; i < width; ++i)
          parts.push_back(i < tables[t][cell].size() ? std::to_string(tables[t][cell][i]) : end);
        out_ += (cell % per_line == 0 ? "          " : " ") + std::string("{") + Join(parts, ", ") + "},";
        if (cell % per_line == per_line - 1 || cell + 1 == tables[t].size()) out_ += "\n";
      }
    }
    out_ += "      };\n";
  }

  std::string GridText() const {
    std::vector<std::string> names, sizes;
    for (size_t a = 0; a < lookup_.size(); ++a) {
      names.push_back(k_.tune->key[a].param);
      sizes.push_back(std::to_string(RegionCount(lookup_[a].size())));
    }
    return Join(names, " x ") + ": " + Join(sizes, " x ");
  }

  // kpack_cell: the index of the call's region cell, row-major.  Per key
  // param its region (RegionOf): for a short grid the number of its
  // 2n - 2 comparisons that hold (v > g0, v >= g1, v > g1, ..., v >= g(n-1):
  // each implies the ones before it), else a binary search of the grid.
  void WriteCell() {
    out_ += "      /* Per key, the call's region of its grid's and probes' values\n"
            "         g0 < g1 < ...: 2i where it equals gi (or lies beyond the last),\n"
            "         2i + 1 strictly between gi and g(i+1). */\n";
    std::vector<std::string> terms;
    size_t stride = 1;
    const std::vector<TuneAxis>& key = k_.tune->key;
    for (size_t a = key.size(); a-- > 0;) {
      const TuneAxis& axis = key[a];
      const Param* p = k_.FindParam(axis.param);
      const std::string type(Info(p->type.scalar).c_type);
      const std::string suffix = type[0] == 'u' ? "u" : "";
      const size_t n = lookup_[a].size();
      std::vector<std::string> grid;
      for (int64_t v : lookup_[a]) grid.push_back(std::to_string(v) + suffix);
      std::string index;
      if (n == 1) {
        index = "";
      } else if (2 * n - 2 <= kMaxCompares) {
        std::vector<std::string> compares;
        for (size_t i = 0; i + 1 < n; ++i) {
          compares.push_back("(" + axis.param + " > " + grid[i] + ")");
          compares.push_back("(" + axis.param + " >= " + grid[i + 1] + ")");
        }
        index = "(size_t)(" + Join(compares, " + ") + ")";
      } else {
        index = "kpack_at_" + axis.param;
        const std::string count = std::to_string(n);
        // kpack_lo: the number of grid values below the call's (lower bound).
        out_ += "      size_t " + index + ";\n      {\n";
        out_ += "        static const " + type + " kpack_grid[" + count + "] = {" + Join(grid, ", ") + "};\n";
        out_ += "        size_t kpack_lo = 0, kpack_hi = " + count + ";\n";
        out_ += "        while (kpack_lo < kpack_hi) {\n";
        out_ += "          const size_t kpack_mid = kpack_lo + (kpack_hi - kpack_lo) / 2;\n";
        out_ += "          if (kpack_grid[kpack_mid] < " + axis.param + ")\n";
        out_ += "            kpack_lo = kpack_mid + 1;\n          else\n            kpack_hi = kpack_mid;\n";
        out_ += "        }\n";
        out_ += "        if (kpack_lo < " + count + " && kpack_grid[kpack_lo] == " + axis.param + ")\n";
        out_ += "          " + index + " = 2 * kpack_lo;\n";
        out_ += "        else if (kpack_lo == 0)\n          " + index + " = 0;\n";
        out_ += "        else if (kpack_lo == " + count + ")\n          " + index + " = " +
                std::to_string(2 * n - 2) + ";\n";
        out_ += "        else\n          " + index + " = 2 * kpack_lo - 1;\n";
        out_ += "      }\n";
      }
      if (!index.empty()) terms.push_back(stride == 1 ? index : index + " * " + std::to_string(stride));
      stride *= RegionCount(n);
    }
    std::reverse(terms.begin(), terms.end());
    out_ += "      const size_t kpack_cell = " + (terms.empty() ? std::string("0") : Join(terms, " + ")) + ";\n";
  }

  // The branch of combination `ci`: its table in the selected tuning, if
  // any, and the cell's first valid candidate.
  void WriteCombo(size_t ci, const std::string& indent) {
    std::vector<std::string> first;
    for (const std::vector<int64_t>& rows : first_[ci]) {
      std::vector<std::string> parts;
      for (int64_t f : rows) parts.push_back(std::to_string(f));
      first.push_back(variants_ == 1 ? parts[0] : "{" + Join(parts, ", ") + "}");
    }
    const std::string n = std::to_string(first.size());
    if (variants_ == 1) {
      out_ += indent + "static const int32_t kpack_first[" + n + "] = {" + Join(first, ", ") +
              "};  /* per tuning, its table's first row; -1: none */\n";
      out_ += indent + "const int32_t kpack_row = kpack_first[kpack_tuning];\n";
    } else {
      out_ += indent + "/* Per tuning, the first row of its table of the aligned and of the\n" + indent +
              "   unaligned variant; -1: none (an unaligned call then reads the aligned one). */\n";
      out_ += indent + "static const int32_t kpack_first[" + n + "][2] = {" + Join(first, ", ") + "};\n";
      out_ += indent + "const int32_t kpack_row = kpack_first[kpack_tuning][kpack_variant] >= 0 ? " +
              "kpack_first[kpack_tuning][kpack_variant] : kpack_first[kpack_tuning][0];\n";
    }
    out_ += indent + "if (kpack_row >= 0) {\n";
    out_ += indent + "  const " + type_ + " *kpack_rank = kpack_ranks[(size_t)kpack_row + kpack_cell];\n";
    std::vector<size_t> runtime;  // the combination's tables' candidates whose valid the call decides
    for (size_t c : ranked_[ci])
      if (validity_[ci][c].kind == Validity::Kind::kRuntime) runtime.push_back(c);
    if (runtime.empty()) {
      // The first candidate of every ranking is valid (or there is none).
      out_ += indent + "  if (kpack_rank[0] != " + end_ + ")\n" + indent + "    kpack_pick = (int)kpack_rank[0];\n";
      out_ += indent + "}\n";
      return;
    }
    bool bad = false;
    for (size_t c : runtime) bad = bad || validity_[ci][c].c.find("&kpack_bad") != std::string::npos;
    const std::string in = indent + "    ";
    out_ += indent + "  /* The first candidate whose valid holds here (" + CommentText(FormatExpr(*k_.tune->valid)) +
            "); one that fails (division by zero, overflow) does not. */\n";
    out_ += indent + "  for (size_t kpack_i = 0; kpack_i < " + std::to_string(width_) +
            " && kpack_pick < 0 && kpack_rank[kpack_i] != " + end_ + "; ++kpack_i) {\n";
    if (bad) out_ += in + "int kpack_bad = 0;\n";
    out_ += in + "int64_t kpack_valid = 1;\n";
    out_ += in + "switch (kpack_rank[kpack_i]) {\n";
    for (size_t c : runtime)
      out_ += in + "  case " + std::to_string(c) + ":\n" + in + "    kpack_valid = " + validity_[ci][c].c + ";\n" + in +
              "    break;\n";
    out_ += in + "  default:\n" + in + "    break;  /* valid always holds */\n" + in + "}\n";
    out_ += in + "if (kpack_valid != 0" + (bad ? std::string(" && !kpack_bad") : "") + ")\n";
    out_ += in + "  kpack_pick = (int)kpack_rank[kpack_i];\n";
    out_ += indent + "  }\n" + indent + "}\n";
  }

  std::string Call() const {
    std::vector<std::string> args = {"stream"};
    if (k_.launch.pdl == Pdl::kPerCall) args.push_back("pdl");
    size_t j = 0;
    for (const Constexpr& c : k_.constexprs) {
      if (c.Auto() && c.InApi()) args.push_back("kpack_candidates[kpack_pick][" + std::to_string(j) + "]");
      else if (c.InApi()) args.push_back(c.name);
      if (c.Auto()) ++j;
    }
    for (const Param& p : k_.params) args.push_back(p.name);
    return pkg_.prefix + "_" + k_.name + "(" + Join(args, ", ") + ")";
  }

  // Sums of comparisons up to this many per key (a grid of 9 values); a
  // binary search beyond.
  static constexpr size_t kMaxCompares = 16;

  const Package& pkg_;
  const Kernel& k_;
  const std::string who_;
  const std::vector<std::pair<const TuningFile*, const TunedKernel*>> tunings_;
  const std::vector<size_t> axes_;
  std::vector<std::vector<int64_t>> candidates_;      // every tuning's, by first appearance
  std::vector<Combo> combos_;                          // with a table somewhere, in build order
  std::vector<std::vector<Validity>> validity_;        // [combo][candidate]
  std::vector<std::vector<std::vector<int64_t>>> first_;  // [combo][tuning][variant] -> first row, -1
  size_t variants_ = 1;                                // 2: tables of the unaligned variant too
  std::vector<std::vector<int64_t>> lookup_;           // per key: LookupAxis over every table's probes
  std::vector<std::set<size_t>> ranked_;               // [combo] -> candidates its tables hold
  size_t width_ = 1;
  std::string type_, end_;
  std::string out_;
};

}  // namespace

size_t RegionCount(size_t n) { return n == 0 ? 0 : 2 * n - 1; }

size_t RegionOf(const std::vector<int64_t>& grid, int64_t v) {
  // The number of grid values below v, as the generated binary search.
  const size_t below = static_cast<size_t>(std::lower_bound(grid.begin(), grid.end(), v) - grid.begin());
  if (below < grid.size() && grid[below] == v) return 2 * below;
  if (below == 0) return 0;
  if (below == grid.size()) return 2 * grid.size() - 2;
  return 2 * below - 1;
}

CellRanking MinimaxRanking(const std::vector<const CellRanking*>& corners) {
  // Each corner's candidates' slowdowns against that corner's fastest.
  std::vector<std::map<size_t, double>> ratios;
  for (const CellRanking* corner : corners) {
    std::map<size_t, double> r;
    if (!corner->empty()) {
      double best = corner->front().second;
      for (const auto& [c, us] : *corner) best = std::min(best, us);
      for (const auto& [c, us] : *corner) r[c] = best > 0 ? us / best : (us > 0 ? HUGE_VAL : 1.0);
    }
    ratios.push_back(std::move(r));
  }
  if (corners.size() == 1) {
    // At a grid shape: the file's order (its best first among equal times).
    CellRanking out;
    for (const auto& [c, us] : *corners[0]) out.emplace_back(c, ratios[0][c]);
    return out;
  }
  struct Score {
    size_t candidate;
    double worst, sum;
  };
  std::vector<Score> scores;
  for (const auto& [c, ratio] : ratios[0]) {
    Score s{c, ratio, ratio};
    bool everywhere = true;
    for (size_t i = 1; i < ratios.size() && everywhere; ++i) {
      auto it = ratios[i].find(c);
      if (it == ratios[i].end()) {
        everywhere = false;
      } else {
        s.worst = std::max(s.worst, it->second);
        s.sum += it->second;
      }
    }
    if (everywhere) scores.push_back(s);
  }
  if (scores.empty()) {
    // Nothing ran in every corner: the first corner (the lowest per key,
    // the nearest below the call) with a ranking, as a grid shape's.
    for (const CellRanking* corner : corners)
      if (!corner->empty()) return MinimaxRanking({corner});
    return {};
  }
  std::sort(scores.begin(), scores.end(), [](const Score& a, const Score& b) {
    if (a.worst != b.worst) return a.worst < b.worst;
    if (a.sum != b.sum) return a.sum < b.sum;
    return a.candidate < b.candidate;
  });
  CellRanking out;
  for (const Score& s : scores) out.emplace_back(s.candidate, s.worst);
  return out;
}

std::vector<int64_t> LookupAxis(const std::vector<int64_t>& grid, const std::vector<int64_t>& probe_values) {
  std::set<int64_t> all(grid.begin(), grid.end());
  for (int64_t v : probe_values)
    if (v > grid.front() && v < grid.back()) all.insert(v);
  return std::vector<int64_t>(all.begin(), all.end());
}

namespace {

// One key's lookup region: the closed range of values it covers, and the
// region of the grid it lies in.
struct AxisRegion {
  int64_t lo, hi;
  size_t parent;
};

std::vector<AxisRegion> AxisRegions(const std::vector<int64_t>& grid, const std::vector<int64_t>& lookup) {
  std::vector<AxisRegion> out;
  for (size_t i = 0; i < lookup.size(); ++i) {
    out.push_back({lookup[i], lookup[i], RegionOf(grid, lookup[i])});
    if (i + 1 == lookup.size()) break;
    // Between lookup[i] and lookup[i + 1]: inside the grid's interval that
    // starts at or contains lookup[i].
    const size_t at = RegionOf(grid, lookup[i]);
    out.push_back({lookup[i], lookup[i + 1], at % 2 == 0 ? at + 1 : at});
  }
  return out;
}

}  // namespace

std::vector<CellRanking> RegionRankings(const std::vector<CellRanking>& grid_ranking,
                                        const std::vector<std::vector<int64_t>>& grid,
                                        const std::vector<ProbeRanking>& probes,
                                        const std::vector<std::vector<int64_t>>& lookup_axes) {
  const std::vector<std::vector<int64_t>>& lookup = lookup_axes.empty() ? grid : lookup_axes;
  std::vector<std::vector<AxisRegion>> regions;
  size_t cells = 1;
  for (size_t a = 0; a < grid.size(); ++a) {
    regions.push_back(AxisRegions(grid[a], lookup[a]));
    cells *= regions.back().size();
  }
  // The shapes measured (grid, then probes with times), as key values and rankings.
  std::vector<std::pair<std::vector<int64_t>, const CellRanking*>> measured;
  for (size_t g = 0; g < grid_ranking.size(); ++g) {
    std::vector<int64_t> at(grid.size());
    for (size_t a = grid.size(), rest = g; a-- > 0; rest /= grid[a].size()) at[a] = grid[a][rest % grid[a].size()];
    measured.emplace_back(std::move(at), &grid_ranking[g]);
  }
  for (const ProbeRanking& p : probes)
    if (!p.ranking->empty()) measured.emplace_back(p.at, p.ranking);
  std::vector<CellRanking> out;
  std::vector<size_t> region(grid.size(), 0);  // the cell's lookup region per key, last fastest
  for (size_t cell = 0; cell < cells; ++cell) {
    // The shapes inside the cell (its closed range on every key), and
    // those inside its grid cell: the corners and that cell's probes.
    std::vector<const CellRanking*> own, parent;
    bool point = true;
    for (size_t a = 0; a < grid.size(); ++a) point = point && regions[a][region[a]].lo == regions[a][region[a]].hi;
    for (const auto& [at, ranking] : measured) {
      bool in_own = true, in_parent = true;
      for (size_t a = 0; a < grid.size(); ++a) {
        const AxisRegion& r = regions[a][region[a]];
        in_own = in_own && at[a] >= r.lo && at[a] <= r.hi;
        const size_t p = r.parent, i = p / 2;
        const int64_t lo = grid[a][i], hi = grid[a][p % 2 == 0 ? i : i + 1];
        in_parent = in_parent && at[a] >= lo && at[a] <= hi;
      }
      if (in_own) own.push_back(ranking);
      if (in_parent) parent.push_back(ranking);
    }
    // A cell with a measured shape at each end of it (or one measured
    // point) goes by those alone; a cell that the lookup's finer axes cut
    // off from them (between a grid value and a probe on one key, at a grid
    // value on another) by its grid cell's.
    out.push_back(MinimaxRanking(own.size() >= 2 || (point && own.size() == 1) ? own : parent));
    for (size_t a = region.size(); a-- > 0;) {
      if (++region[a] < regions[a].size()) break;
      region[a] = 0;
    }
  }
  return out;
}

std::vector<std::pair<const TuningFile*, const TunedKernel*>> TablesFor(const Package& pkg, const Kernel& k) {
  std::vector<std::pair<const TuningFile*, const TunedKernel*>> out;
  if (!k.tune) return out;
  for (const TuningFile& file : pkg.tunings)
    for (const TunedKernel& tk : file.kernels)
      if (tk.kernel == k.name && !tk.stale && !tk.tables.empty() && tk.candidates.size() == tk.labels.size())
        out.emplace_back(&file, &tk);
  return out;
}

std::string TunedChoiceSource(const Package& pkg, const Kernel& k, const std::vector<const Specialization*>& specs,
                              const std::string& who) {
  return TableWriter(pkg, k, specs, who).Write();
}

std::set<std::string> TunedDeviceAttributes(const Package& pkg, const Kernel& k) {
  if (TablesFor(pkg, k).empty() || !k.tune->valid) return {};
  return DeviceAttributesUsed(*k.tune->valid);
}

std::set<std::string> TunedFunctionsUsed(const Kernel& k) {
  if (!k.tune || !k.tune->valid) return {};
  return FunctionsUsed(*k.tune->valid);
}

}  // namespace kpack::codegen
