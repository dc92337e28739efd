#include "manifest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "debug_guard.h"
#include "yaml_input.h"

namespace kpack {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 97> kReservedWords = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
    "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
    "_Complex", "_Imaginary", "bool", "true", "false", "alignas", "alignof", "and",
    "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t",
    "class", "compl", "concept", "consteval", "constexpr", "constinit", "const_cast",
    "co_await", "co_return", "co_yield", "decltype", "delete", "dynamic_cast",
    "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept", "not",
    "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "reinterpret_cast", "requires", "static_assert", "static_cast", "template", "this",
    "thread_local", "throw", "try", "typeid", "typename", "using", "virtual",
    "wchar_t", "xor", "xor_eq", "NULL",
};

// The file at `path`: from options.files when set, else from the disk.
std::optional<std::string> ReadInput(const std::string& path, const LoadOptions& options) {
  if (options.files) {
    auto it = options.files->find(path);
    if (it == options.files->end()) return std::nullopt;
    return it->second;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool InputExists(const std::string& path, const LoadOptions& options) {
  if (options.files) return options.files->count(path) > 0;
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// The project root of a package file at `package_path`.
std::string ProjectRoot(const std::string& package_path, const LoadOptions& options) {
  if (!options.project_root.empty()) return options.project_root;
  std::string dir = fs::path(package_path).parent_path().generic_string();
  return dir.empty() ? "." : dir;
}

// Whether `path` lies inside directory `root`.  On disk both are resolved
// through symlinks, so a link inside the project that points out of it is
// outside; in memory (no links) the comparison is lexical.
bool InsideRoot(const std::string& path, const std::string& root, const LoadOptions& options) {
  auto resolve = [&options](const std::string& s, std::error_code& ec) {
    fs::path absolute = fs::absolute(s, ec).lexically_normal();
    // weakly_canonical keeps a missing relative path relative: absolutize first.
    return options.files || ec ? absolute : fs::weakly_canonical(absolute, ec);
  };
  std::error_code ec;
  fs::path p = resolve(path, ec);
  if (ec) return false;
  fs::path r = resolve(root, ec);
  if (ec) return false;
  fs::path rel = p.lexically_relative(r);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

// Joins `relative` onto the directory of `base_file`, lexically normalized,
// keeping the result relative when both are (messages stay machine-neutral).
std::string ResolveBeside(const std::string& base_file, const std::string& relative) {
  fs::path joined = fs::path(base_file).parent_path() / relative;
  return joined.lexically_normal().generic_string();
}

// `path` relative to the project root, lexically: the name a compiler that
// records source paths (Triton's line info) is given, so the output does not
// depend on where the build directory is.  Its file name when there is no
// such path.
std::string RootRelative(const std::string& path, const std::string& root) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  fs::path r = ec ? fs::path() : fs::absolute(root, ec).lexically_normal();
  fs::path rel = ec ? fs::path() : p.lexically_relative(r);
  return rel.empty() ? fs::path(path).filename().generic_string() : rel.generic_string();
}

// nvcc runs its internal steps (cudafe++, cicc, the host compiler) through
// /bin/sh, so a `$(...)` in a flag or an include path would be executed even
// though kpack itself passes argv.  Such characters are refused outright.
constexpr std::string_view kShellMetacharacters = "$`;|&<>()'\"\\*?[]{}~!# \t\r\n";

// The first shell metacharacter in `s`, or 0.
char ShellMetacharacter(const std::string& s) {
  size_t at = s.find_first_of(kShellMetacharacters);
  return at == std::string::npos ? 0 : s[at];
}

std::string Quoted(char c) {
  if (c == ' ') return "a space";
  if (c == '\t' || c == '\r' || c == '\n') return "a control character";
  return "'" + std::string(1, c) + "'";
}

// Reads one YAML file and reports everything wrong in it through `diag`.
class FileReader {
 public:
  FileReader(std::string file, const LoadOptions& options, Diagnostics& diag)
      : file_(std::move(file)), options_(options), diag_(diag) {}

  const std::string& file() const { return file_; }
  const LoadOptions& options() const { return options_; }
  Diagnostics& diag() { return diag_; }

  // Parses the file; nullopt (with an error) when unreadable or not YAML.
  std::optional<YAML::Node> Parse() {
    std::optional<std::string> text = ReadInput(file_, options_);
    if (!text) {
      diag_.Error(SourceLoc{file_, 0, 0}, "cannot read file");
      return std::nullopt;
    }
    return ParseManifestText(file_, *text, diag_);
  }

  SourceLoc Loc(const YAML::Node& node) const {
    YAML::Mark mark = node.Mark();
    // Only an empty document's root has no mark (found by the fuzzer): its
    // position is the start of the file.
    if (mark.is_null()) return SourceLoc{file_, 1, 1};
    return SourceLoc{file_, mark.line + 1, mark.column + 1};
  }

  // Position of the first character of a scalar's value (after the quote of
  // a quoted scalar), so expression columns point at the right character.
  SourceLoc ValueLoc(const YAML::Node& node) const {
    SourceLoc loc = Loc(node);
    if (node.Tag() == "!") loc.col += 1;  // yaml-cpp tags quoted scalars "!"
    return loc;
  }

  void Error(const YAML::Node& node, const std::string& message) { diag_.Error(Loc(node), message); }

  // True when `path` (what `node` names) is inside the project root, or
  // when the options allow any path; reports it otherwise.
  bool Inside(const YAML::Node& node, const std::string& what, const std::string& path) {
    if (options_.allow_outside_root || InsideRoot(path, root_, options_)) return true;
    Error(node, what + " is outside the project root '" + root_ +
                    "' (kpack reads only files inside the project; pass --allow-outside-root to lift this)");
    return false;
  }
  void set_root(std::string root) { root_ = std::move(root); }
  const std::string& root() const { return root_; }

  // Checks that `node` is a map whose keys are all in `allowed`, each once,
  // and that every key in `required` is present.  Returns false if not a map.
  bool CheckMap(const YAML::Node& node, const std::string& what,
                std::initializer_list<std::string_view> allowed,
                std::initializer_list<std::string_view> required) {
    if (!node.IsMap()) {
      Error(node, what + " must be a mapping");
      return false;
    }
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) {
        Error(key, "keys of " + what + " must be plain names");
        continue;
      }
      std::string name = key.Scalar();
      if (!seen.insert(name).second) {
        Error(key, "duplicate key '" + name + "' in " + what);
        continue;
      }
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
        Error(key, "unknown key '" + name + "' in " + what + " (expected one of: " + Join(allowed) + ")");
    }
    for (std::string_view key : required)
      if (!seen.count(std::string(key)))
        Error(node, what + " is missing required key '" + std::string(key) + "'");
    return true;
  }

  // The value of `key` in map `node`; an undefined node when absent.
  static YAML::Node Get(const YAML::Node& node, std::string_view key) {
    for (const auto& entry : node)
      if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
    return YAML::Node(YAML::NodeType::Undefined);
  }

  std::optional<std::string> String(const YAML::Node& node, const std::string& what) {
    if (!node.IsScalar()) {
      Error(node, what + " must be a string");
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<std::string> Identifier(const YAML::Node& node, const std::string& what) {
    std::optional<std::string> s = String(node, what);
    if (!s) return std::nullopt;
    if (!IsCIdentifier(*s)) {
      Error(node, what + " '" + *s + "' is not a valid C identifier");
      return std::nullopt;
    }
    return s;
  }

  std::optional<bool> Bool(const YAML::Node& node, const std::string& what) {
    if (node.IsScalar() && node.Tag() != "!") {
      const std::string& s = node.Scalar();
      if (s == "true") return true;
      if (s == "false") return false;
    }
    Error(node, what + " must be true or false");
    return std::nullopt;
  }

  std::optional<int64_t> Integer(const YAML::Node& node, const std::string& what) {
    if (node.IsScalar() && node.Tag() != "!") {
      const std::string& s = node.Scalar();
      size_t digits_at = (!s.empty() && s[0] == '-') ? 1 : 0;
      bool all_digits = s.size() > digits_at && s.size() <= digits_at + 18 &&
                        std::all_of(s.begin() + digits_at, s.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (all_digits) return std::stoll(s);
    }
    Error(node, what + " must be an integer");
    return std::nullopt;
  }

  // A non-empty sequence; reports and returns false otherwise.
  bool NonEmptySequence(const YAML::Node& node, const std::string& what) {
    if (!node.IsSequence()) {
      Error(node, what + " must be a list");
      return false;
    }
    if (node.size() == 0) {
      Error(node, what + " must not be empty");
      return false;
    }
    return true;
  }

  std::vector<std::string> StringList(const YAML::Node& node, const std::string& what) {
    std::vector<std::string> out;
    if (!node.IsSequence()) {
      Error(node, what + " must be a list");
      return out;
    }
    for (const YAML::Node& item : node)
      if (std::optional<std::string> s = String(item, "each entry of " + what)) out.push_back(*s);
    return out;
  }

  // nvcc flags: strings free of shell metacharacters (see above).
  std::vector<std::string> FlagList(const YAML::Node& node, std::vector<SourceLoc>& locs) {
    std::vector<std::string> out;
    if (!node.IsSequence()) {
      Error(node, "nvcc_flags must be a list");
      return out;
    }
    for (const YAML::Node& item : node) {
      std::optional<std::string> flag = String(item, "each entry of nvcc_flags");
      if (!flag) continue;
      if (char c = ShellMetacharacter(*flag)) {
        Error(item, "nvcc flag '" + *flag + "' contains " + Quoted(c) +
                        "; nvcc passes flags through a shell, so kpack refuses shell metacharacters "
                        "(give each option and value as its own list entry)");
        continue;
      }
      out.push_back(*flag);
      locs.push_back(Loc(item));
    }
    CheckFlagReach(node);
    return out;
  }

  // nvcc flags that reach outside the project.  A manifest may come from
  // anywhere, yet its flags run during the build: a host compiler it names
  // (-ccbin) or a host-compiler -B/-wrapper/-fplugin runs any program, and
  // include and library paths read any file.  So the host-compiler choice
  // is refused outright (the build's owner chooses it, not a manifest), and
  // path values must lie inside the project root, like source paths, unless
  // --allow-outside-root.  Values come joined ("-I/x", "--include-path=/x")
  // or as the next list entry ("-I", "/x"); nvcc splits -Xcompiler values at
  // commas.  Relative paths are relative to where kpack runs, as nvcc sees
  // them.
  void CheckFlagReach(const YAML::Node& node) {
    static constexpr std::string_view kHostCompiler[] = {"-ccbin", "--compiler-bindir"};
    static constexpr std::string_view kHostOptions[] = {"-Xcompiler", "--compiler-options"};
    static constexpr std::string_view kRunsPrograms[] = {"-B", "-wrapper", "-fplugin"};
    static constexpr std::string_view kPathOptions[] = {"-I",       "-L",          "-isystem",        "-include",
                                                        "--include-path", "--library-path", "--system-include",
                                                        "--pre-include"};
    std::vector<YAML::Node> items(node.begin(), node.end());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].IsScalar()) continue;
      const std::string flag = items[i].Scalar();
      // The option's value: joined ("=v", or "v" right after a short
      // option) or the next entry; nullopt when there is none.
      auto value = [&](std::string_view option, bool short_joined) -> std::optional<std::pair<std::string, size_t>> {
        if (flag == option) {
          if (i + 1 < items.size() && items[i + 1].IsScalar()) return std::make_pair(items[i + 1].Scalar(), i + 1);
          return std::nullopt;
        }
        if (flag.rfind(option, 0) != 0) return std::nullopt;
        std::string rest = flag.substr(option.size());
        if (!rest.empty() && rest[0] == '=') return std::make_pair(rest.substr(1), i);
        if (short_joined && !rest.empty()) return std::make_pair(rest, i);
        return std::nullopt;
      };
      for (std::string_view option : kHostCompiler) {
        if (flag == option || flag.rfind(std::string(option) + "=", 0) == 0)
          Error(items[i], "nvcc flag '" + flag + "' chooses the host compiler, which would let the manifest run any "
                          "program during the build; kpack refuses -ccbin and --compiler-bindir in manifests");
      }
      for (std::string_view option : kHostOptions) {
        std::optional<std::pair<std::string, size_t>> v = value(option, false);
        if (!v) continue;
        std::string_view list = v->first;
        for (size_t start = 0; start <= list.size();) {
          size_t comma = list.find(',', start);
          std::string_view piece = list.substr(start, comma == std::string_view::npos ? list.npos : comma - start);
          for (std::string_view bad : kRunsPrograms) {
            if (piece.rfind(bad, 0) == 0) {
              Error(items[v->second], "host compiler option '" + std::string(piece) + "' (after " +
                                          std::string(option) +
                                          ") makes the host compiler run other programs; kpack refuses -B, -wrapper "
                                          "and -fplugin in manifests");
              break;
            }
          }
          if (comma == std::string_view::npos) break;
          start = comma + 1;
        }
      }
      for (std::string_view option : kPathOptions) {
        // Only "-I" and "-L" take a value glued on ("-Iinc"); "-isystem"
        // and the rest are whole words, so "-includefoo" is not "-include".
        std::optional<std::pair<std::string, size_t>> v = value(option, option.size() == 2);
        if (!v) continue;
        // Include and library paths are directories, and the project root
        // itself ("-I.") is inside: ask about a file in the directory.
        const bool names_file = option == "-include" || option == "--pre-include";
        const std::string probe = names_file ? v->first : (fs::path(v->first) / "x").generic_string();
        Inside(items[v->second], "nvcc flag '" + std::string(option) + "' path '" + v->first + "'", probe);
        break;
      }
    }
  }

  std::vector<Arch> Archs(const YAML::Node& node) {
    std::vector<Arch> out;
    if (!NonEmptySequence(node, "archs")) return out;
    for (const YAML::Node& item : node) {
      std::optional<std::string> name = String(item, "an arch");
      if (!name) continue;
      std::optional<Arch> arch = ParseArch(*name);
      if (!arch) {
        Error(item, "unknown arch '" + *name + "' (CUDA 13 supports: " + SupportedArchList() + ")");
        continue;
      }
      if (std::find(out.begin(), out.end(), *arch) != out.end()) {
        Error(item, "duplicate arch '" + *name + "'");
        continue;
      }
      out.push_back(*arch);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  static std::string Join(std::initializer_list<std::string_view> items) {
    std::string out;
    for (std::string_view item : items) {
      if (!out.empty()) out += ", ";
      out += item;
    }
    return out;
  }

 private:
  std::string file_;
  const LoadOptions& options_;
  Diagnostics& diag_;
  std::string root_ = ".";
};

// ---- Kernel manifests ------------------------------------------------------

class KernelReader {
 public:
  KernelReader(FileReader& r, const Package& package) : r_(r), package_(package) {}

  std::optional<Kernel> Read(const YAML::Node& root) {
    int errors_before = r_.diag().error_count();
    if (!r_.CheckMap(root, "a kernel manifest",
                     {"kernel", "language", "source", "entry", "doc", "constexprs", "params",
                      "exclude", "launch", "archs", "ptx", "nvcc_flags", "debug", "allow_debug"},
                     {"kernel", "source", "entry", "constexprs", "params", "launch"}))
      return std::nullopt;
    Kernel k;
    k.manifest_path = r_.file();
    k.archs = package_.archs;
    k.ptx = package_.ptx;
    k.nvcc_flags = package_.nvcc_flags;
    k.nvcc_flag_locs = package_.nvcc_flag_locs;
    k.allow_debug = package_.allow_debug;
    for (const auto& entry : root) ReadField(entry.first.Scalar(), entry.first, entry.second, k);
    if (r_.diag().error_count() != errors_before) return std::nullopt;
    MarkDebugKernel(k);
    CheckNames(k);
    if (k.language == Language::kTriton) CheckTriton(k);
    else CheckCuda(k);
    CheckLaunch(k);
    if (r_.diag().error_count() != errors_before) return std::nullopt;
    return k;
  }

 private:
  void ReadField(const std::string& key, const YAML::Node& key_node, const YAML::Node& v, Kernel& k) {
    if (key == "kernel") {
      if (auto s = r_.Identifier(v, "kernel name")) k.name = *s;
      k.loc = r_.Loc(v);
    } else if (key == "language") {
      if (auto s = r_.String(v, "language")) {
        if (*s == "cuda") k.language = Language::kCuda;
        else if (*s == "triton") k.language = Language::kTriton;
        else r_.Error(v, "unknown language '" + *s + "' (expected cuda or triton)");
      }
    } else if (key == "source") {
      ReadSource(v, k);
    } else if (key == "entry") {
      if (auto s = r_.Identifier(v, "entry")) k.entry = *s;
    } else if (key == "doc") {
      if (auto s = r_.String(v, "doc")) k.doc = *s;
    } else if (key == "constexprs") {
      ReadConstexprs(v, k);
    } else if (key == "params") {
      k.params_loc = r_.Loc(key_node);
      ReadParams(v, k);
    } else if (key == "exclude") {
      ReadExclusions(v, k);
    } else if (key == "launch") {
      ReadLaunch(v, k);
    } else if (key == "archs") {
      k.archs = r_.Archs(v);
    } else if (key == "ptx") {
      if (auto b = r_.Bool(v, "ptx")) k.ptx = *b;
    } else if (key == "nvcc_flags") {
      for (std::string& flag : r_.FlagList(v, k.nvcc_flag_locs)) k.nvcc_flags.push_back(std::move(flag));
    } else if (key == "debug") {
      if (auto b = r_.Bool(v, "debug"); b && *b) {
        k.debug = true;
        k.debug_reason = "debug: true";
        k.debug_loc = r_.Loc(key_node);
      }
    } else if (key == "allow_debug") {
      if (auto b = r_.Bool(v, "allow_debug")) k.allow_debug = *b;
    }
  }

  void ReadSource(const YAML::Node& v, Kernel& k) {
    std::optional<std::string> s = r_.String(v, "source");
    if (!s) return;
    k.source_text = *s;
    k.source_loc = r_.Loc(v);
    k.source_path = ResolveBeside(r_.file(), *s);
    k.source_name = RootRelative(k.source_path, r_.root());
    if (char c = ShellMetacharacter(k.source_path)) {
      r_.Error(v, "source path '" + k.source_path + "' contains " + Quoted(c) +
                      "; nvcc passes include paths through a shell, so kpack refuses shell metacharacters");
      return;
    }
    if (!r_.Inside(v, "source file '" + *s + "'", k.source_path)) return;
    if (!InputExists(k.source_path, r_.options()))
      r_.Error(v, "source file '" + *s + "' not found (looked for " + k.source_path + ")");
  }

  void ReadConstexprs(const YAML::Node& v, Kernel& k) {
    if (!v.IsSequence()) {
      r_.Error(v, "constexprs must be a list");
      return;
    }
    for (const YAML::Node& item : v) {
      if (!r_.CheckMap(item, "a constexpr", {"name", "type", "values", "tag"}, {"name", "type", "values"}))
        continue;
      Constexpr c;
      c.loc = r_.Loc(item);
      YAML::Node name = FileReader::Get(item, "name");
      YAML::Node type = FileReader::Get(item, "type");
      YAML::Node values = FileReader::Get(item, "values");
      YAML::Node tag = FileReader::Get(item, "tag");
      // An invalid name is still recorded, so that uses of it do not cascade
      // into "unknown type" errors; the kernel is rejected all the same.
      if (name.IsDefined()) c.name = SpelledIdentifier(name, "constexpr name");
      if (type.IsDefined()) {
        if (auto s = r_.String(type, "constexpr type")) {
          if (*s == "int") c.kind = ConstexprKind::kInt;
          else if (*s == "bool") c.kind = ConstexprKind::kBool;
          else if (*s == "dtype") c.kind = ConstexprKind::kDtype;
          else {
            r_.Error(type, "unknown constexpr type '" + *s + "' (expected int, bool or dtype)");
            continue;
          }
        }
      }
      c.tag = c.kind == ConstexprKind::kDtype ? "" : Lower(c.name);
      if (tag.IsDefined()) {
        if (auto s = r_.String(tag, "tag")) {
          bool ok = std::all_of(s->begin(), s->end(), [](char ch) {
            return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
          });
          if (!ok) r_.Error(tag, "tag '" + *s + "' may only hold letters, digits and '_'");
          else c.tag = *s;
        }
      }
      if (values.IsDefined() && r_.NonEmptySequence(values, "values of '" + c.name + "'"))
        ReadValues(values, c);
      k.constexprs.push_back(std::move(c));
    }
  }

  void ReadValues(const YAML::Node& values, Constexpr& c) {
    for (const YAML::Node& item : values) {
      ConstexprValue value;
      value.loc = r_.Loc(item);
      if (c.kind == ConstexprKind::kInt) {
        std::optional<int64_t> i = r_.Integer(item, "a value of int constexpr '" + c.name + "'");
        if (!i) continue;
        if (*i < INT32_MIN || *i > INT32_MAX) {
          r_.Error(item, "value " + std::to_string(*i) + " of '" + c.name + "' does not fit in a C int");
          continue;
        }
        value.integer = *i;
      } else if (c.kind == ConstexprKind::kBool) {
        std::optional<bool> b = r_.Bool(item, "a value of bool constexpr '" + c.name + "'");
        if (!b) continue;
        value.integer = *b ? 1 : 0;
      } else {
        std::optional<std::string> s = r_.String(item, "a dtype");
        if (!s) continue;
        std::optional<Scalar> dtype = ParseScalar(*s);
        if (!dtype || !IsDtype(*dtype)) {
          r_.Error(item, "unknown dtype '" + *s + "' (expected one of: " + std::string(DtypeList()) + ")");
          continue;
        }
        value.dtype = *dtype;
      }
      bool duplicate = std::any_of(c.values.begin(), c.values.end(), [&](const ConstexprValue& other) {
        return other.integer == value.integer && other.dtype == value.dtype;
      });
      if (duplicate) {
        r_.Error(item, "duplicate value in '" + c.name + "'");
        continue;
      }
      c.values.push_back(value);
    }
  }

  // The string at `node`, reported if it is not a C identifier; "" if it is
  // not a string at all.
  std::string SpelledIdentifier(const YAML::Node& node, const std::string& what) {
    std::optional<std::string> s = r_.String(node, what);
    if (!s) return "";
    if (!IsCIdentifier(*s)) r_.Error(node, what + " '" + *s + "' is not a valid C identifier");
    return *s;
  }

  void ReadParams(const YAML::Node& v, Kernel& k) {
    if (!v.IsSequence()) {
      r_.Error(v, "params must be a list");
      return;
    }
    for (const YAML::Node& item : v) {
      if (!r_.CheckMap(item, "a param", {"name", "type", "divisibility", "width"}, {"name", "type"})) continue;
      Param p;
      p.loc = r_.Loc(item);
      YAML::Node name = FileReader::Get(item, "name");
      YAML::Node type = FileReader::Get(item, "type");
      YAML::Node divisibility = FileReader::Get(item, "divisibility");
      if (divisibility.IsDefined()) ReadDivisibility(divisibility, p);
      YAML::Node width = FileReader::Get(item, "width");
      if (width.IsDefined()) ReadWidth(width, p);
      p.name = SpelledIdentifier(name, "param name");
      std::optional<std::string> t = r_.String(type, "param type");
      if (p.name.empty() || !t) continue;
      p.type_text = *t;
      if (!ParseParamType(*t, type, k, p.type)) continue;
      // Triton hints only integers and pointers (a pointer's hint is its
      // address: 16-byte aligned).
      if (p.divisibility && !p.type.is_pointer && (!Info(p.type.scalar).is_integer || p.type.scalar == Scalar::kBool))
        r_.diag().Error(p.divisibility_loc, "divisibility applies only to pointer and integer params ('" + p.name +
                                                "' is " + p.type_text + ")");
      // The JIT narrows only 64-bit integers it was given as Python ints.
      if (p.width_auto && (p.type.is_pointer || !p.type.dtype_constexpr.empty() || p.type.scalar != Scalar::kI64))
        r_.diag().Error(p.width_loc, "width: auto applies only to i64 params ('" + p.name + "' is " + p.type_text + ")");
      k.params.push_back(std::move(p));
    }
  }

  // `divisibility: 16` (a promise the launcher enforces) or `auto` (an
  // aligned variant besides the unhinted one; the launcher picks).
  void ReadDivisibility(const YAML::Node& node, Param& p) {
    p.divisibility_loc = r_.Loc(node);
    if (node.IsScalar() && node.Scalar() == "auto") {
      p.divisibility = 16;
      p.divisibility_auto = true;
    } else if (node.IsScalar() && node.Tag() != "!" && node.Scalar() == "16") {
      p.divisibility = 16;
    } else {
      r_.Error(node, "divisibility must be 16 or auto (16 is Triton's only divisibility hint)");
    }
  }

  // `width: auto`: an i32 variant besides the i64 build; the launcher
  // picks it when every such value fits in 32 bits.
  void ReadWidth(const YAML::Node& node, Param& p) {
    p.width_loc = r_.Loc(node);
    if (node.IsScalar() && node.Scalar() == "auto") {
      p.width_auto = true;
    } else {
      r_.Error(node, "width must be auto (an i32 variant, run when the value fits in 32 bits, as Triton's JIT does)");
    }
  }

  // `[const] NAME [*]` where NAME is a scalar or a dtype constexpr.
  bool ParseParamType(const std::string& text, const YAML::Node& node, const Kernel& k, ParamType& out) {
    std::istringstream words(text);
    std::vector<std::string> tokens;
    for (std::string word; words >> word;) {
      // Every '*' is a token of its own: "T*", "T *" and "T**" all split.
      size_t start = 0;
      for (size_t star = word.find('*'); star != std::string::npos; star = word.find('*', start)) {
        if (star > start) tokens.push_back(word.substr(start, star - start));
        tokens.push_back("*");
        start = star + 1;
      }
      if (start < word.size()) tokens.push_back(word.substr(start));
    }
    size_t i = 0;
    if (i < tokens.size() && tokens[i] == "const") {
      out.is_const = true;
      ++i;
    }
    if (i >= tokens.size()) return BadType(node, text);
    std::string base = tokens[i++];
    if (i < tokens.size() && tokens[i] == "*") {
      out.is_pointer = true;
      ++i;
    }
    if (i != tokens.size()) return BadType(node, text);
    if (out.is_const && !out.is_pointer) {
      r_.Error(node, "type '" + text + "': const applies only to pointers");
      return false;
    }
    if (const Constexpr* c = k.FindConstexpr(base); c && c->kind == ConstexprKind::kDtype) {
      if (!out.is_pointer) {
        r_.Error(node, "type '" + text + "': a dtype constexpr can only be used behind a pointer");
        return false;
      }
      out.dtype_constexpr = base;
      return true;
    }
    std::optional<Scalar> s = ParseScalar(base);
    if (!s) {
      r_.Error(node, "unknown type '" + base + "' (expected a dtype constexpr or one of: " +
                         std::string(ScalarList()) + ")");
      return false;
    }
    out.scalar = *s;
    return true;
  }

  bool BadType(const YAML::Node& node, const std::string& text) {
    r_.Error(node, "malformed type '" + text + "' (expected [const] TYPE[*])");
    return false;
  }

  void ReadExclusions(const YAML::Node& v, Kernel& k) {
    if (!v.IsSequence()) {
      r_.Error(v, "exclude must be a list");
      return;
    }
    for (const YAML::Node& item : v) {
      if (!item.IsMap() || item.size() == 0) {
        r_.Error(item, "each exclude entry must be a non-empty mapping of constexpr names to values");
        continue;
      }
      Exclusion ex;
      ex.loc = r_.Loc(item);
      std::set<std::string> seen;
      for (const auto& entry : item) {
        std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
        if (!seen.insert(name).second) {
          r_.Error(entry.first, "duplicate key '" + name + "' in exclude entry");
          continue;
        }
        auto it = std::find_if(k.constexprs.begin(), k.constexprs.end(),
                               [&](const Constexpr& c) { return c.name == name; });
        if (it == k.constexprs.end()) {
          r_.Error(entry.first, "exclude names unknown constexpr '" + name + "'");
          continue;
        }
        std::optional<ConstexprValue> value = MatchValue(*it, entry.second);
        if (value) ex.matches.emplace_back(static_cast<size_t>(it - k.constexprs.begin()), *value);
      }
      k.exclusions.push_back(std::move(ex));
    }
  }

  // The value of constexpr `c` that `node` spells, or an error.
  std::optional<ConstexprValue> MatchValue(const Constexpr& c, const YAML::Node& node) {
    std::string spelled = node.IsScalar() ? node.Scalar() : "?";
    for (const ConstexprValue& value : c.values) {
      std::string text = c.kind == ConstexprKind::kDtype ? std::string(Info(value.dtype).manifest)
                         : c.kind == ConstexprKind::kBool ? (value.integer ? "true" : "false")
                                                          : std::to_string(value.integer);
      if (node.IsScalar() && text == spelled) return value;
    }
    r_.Error(node, "'" + spelled + "' is not one of the values of '" + c.name + "'");
    return std::nullopt;
  }

  void ReadLaunch(const YAML::Node& v, Kernel& k) {
    k.launch.loc = r_.Loc(v);
    if (!r_.CheckMap(v, "launch", {"grid", "block", "shared_mem", "launch_bounds"}, {"grid"})) return;
    k.launch.shared_mem.kind = Expr::Kind::kInteger;
    for (const auto& entry : v) {
      const std::string key = entry.first.Scalar();
      const YAML::Node& value = entry.second;
      if (key == "grid") k.launch.grid = ReadDims(value, "grid");
      if (key == "block") {
        k.launch.block = ReadDims(value, "block");
        k.launch.block_loc = r_.Loc(entry.first);
      }
      if (key == "shared_mem") {
        if (auto e = ReadExpr(value, "shared_mem")) k.launch.shared_mem = *e;
        k.launch.shared_mem_loc = r_.Loc(entry.first);
      }
      if (key == "launch_bounds") {
        k.launch.launch_bounds = ReadExpr(value, "launch_bounds");
        k.launch.launch_bounds_loc = r_.Loc(entry.first);
      }
    }
  }

  std::vector<Expr> ReadDims(const YAML::Node& v, const std::string& what) {
    std::vector<Expr> out;
    if (v.IsScalar()) {
      if (auto e = ReadExpr(v, what)) out.push_back(*e);
      return out;
    }
    if (!v.IsSequence() || v.size() == 0 || v.size() > 3) {
      r_.Error(v, what + " must be an expression or a list of 1 to 3 expressions");
      return out;
    }
    for (const YAML::Node& item : v)
      if (auto e = ReadExpr(item, what)) out.push_back(*e);
    return out;
  }

  std::optional<Expr> ReadExpr(const YAML::Node& v, const std::string& what) {
    if (!v.IsScalar()) {
      r_.Error(v, what + " must be an integer expression");
      return std::nullopt;
    }
    return ParseExpr(v.Scalar(), r_.ValueLoc(v), r_.diag());
  }

  // Constexprs and params share one namespace: both are dispatcher
  // arguments.  Names starting kpack_ are the generated code's own.
  void CheckNames(const Kernel& k) {
    std::set<std::string> seen = {"stream"};
    auto check = [&](const std::string& name, const SourceLoc& loc) {
      if (name.rfind("kpack_", 0) == 0) r_.diag().Error(loc, "name '" + name + "' is reserved (kpack_ prefix)");
      else if (!seen.insert(name).second)
        r_.diag().Error(loc, "name '" + name + "' is used twice among constexprs and params (or is 'stream')");
    };
    for (const Constexpr& c : k.constexprs) check(c.name, c.loc);
    for (const Param& p : k.params) check(p.name, p.loc);
    if (k.constexprs.empty()) r_.diag().Error(k.loc, "kernel '" + k.name + "' has no constexprs");
  }

  void CheckCuda(const Kernel& k) {
    if (k.launch.block_loc.line == 0 && k.launch.loc.line > 0)
      r_.diag().Error(k.launch.loc, "launch is missing required key 'block'");
    for (const Param& p : k.params)
      if (p.divisibility)
        r_.diag().Error(p.divisibility_loc, "divisibility hints apply to Triton kernels only");
    for (const Param& p : k.params)
      if (p.width_auto)
        r_.diag().Error(p.width_loc, "width: auto applies to Triton kernels only (a CUDA kernel's C++ signature fixes its types)");
  }

  // Triton decides the block (32 x num_warps threads) and the shared
  // memory; its compile options are constexpr axes of their own.
  void CheckTriton(const Kernel& k) {
    if (k.source_path.size() < 3 || k.source_path.compare(k.source_path.size() - 3, 3, ".py") != 0)
      r_.diag().Error(k.source_loc, "a Triton kernel's source must be a .py file");
    const std::pair<const SourceLoc*, const char*> decided[] = {
        {&k.launch.block_loc, "block"}, {&k.launch.shared_mem_loc, "shared_mem"},
        {&k.launch.launch_bounds_loc, "launch_bounds"}};
    for (const auto& [loc, key] : decided)
      if (loc->line > 0)
        r_.diag().Error(*loc, std::string("a Triton kernel's ") + key +
                                  " comes from Triton (32 x num_warps threads, its shared memory); remove it");
    for (const Constexpr& c : k.constexprs)
      if (IsTritonOption(c.name) && c.kind != ConstexprKind::kInt)
        r_.diag().Error(c.loc, c.name + " must be of type int");
      else if (IsTritonOption(c.name))
        for (const ConstexprValue& v : c.values)
          if (v.integer < 1 || (c.name == "num_warps" && (v.integer > 32 || (v.integer & (v.integer - 1)))))
            r_.diag().Error(v.loc, c.name == "num_warps" ? "num_warps must be a power of two from 1 to 32"
                                                         : "num_stages must be at least 1");
    if (k.ptx) r_.diag().Error(k.loc, "Triton kernels are packaged as SASS only; ptx: true is not supported");
    for (const Arch& a : k.archs)
      if (a.variant == Arch::Variant::kFamily)
        r_.diag().Error(k.loc, "Triton cannot target the family arch " + a.Name() + "; use sm_" +
                                   std::to_string(a.number));
  }

  void CheckLaunch(const Kernel& k) {
    auto lookup = [&k](const std::string& name) {
      if (const Constexpr* c = k.FindConstexpr(name)) {
        if (c->kind == ConstexprKind::kInt) return NameKind::kIntConstexpr;
        if (c->kind == ConstexprKind::kBool) return NameKind::kBoolConstexpr;
        return NameKind::kDtypeConstexpr;
      }
      if (const Param* p = k.FindParam(name))
        return !p->type.is_pointer && Info(p->type.scalar).is_integer ? NameKind::kIntegerParam
                                                                        : NameKind::kOtherParam;
      return NameKind::kUnknown;
    };
    for (const Expr& e : k.launch.grid) CheckExpr(e, lookup, true, r_.diag());
    for (const Expr& e : k.launch.block) CheckExpr(e, lookup, true, r_.diag());
    CheckExpr(k.launch.shared_mem, lookup, true, r_.diag());
    if (k.launch.launch_bounds) CheckExpr(*k.launch.launch_bounds, lookup, false, r_.diag());
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  FileReader& r_;
  const Package& package_;
};

// ---- Package file ------------------------------------------------------------

void ReadPackageFields(FileReader& r, const YAML::Node& root, Package& pkg,
                       std::vector<std::pair<std::string, YAML::Node>>& kernel_files) {
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& v = entry.second;
    if (key == "package") {
      if (auto s = r.Identifier(v, "package name")) pkg.name = *s;
      pkg.loc = r.Loc(v);
    } else if (key == "prefix") {
      if (auto s = r.Identifier(v, "prefix")) pkg.prefix = *s;
    } else if (key == "archs") {
      pkg.archs = r.Archs(v);
    } else if (key == "ptx") {
      if (auto b = r.Bool(v, "ptx")) pkg.ptx = *b;
    } else if (key == "nvcc_flags") {
      pkg.nvcc_flags = r.FlagList(v, pkg.nvcc_flag_locs);
    } else if (key == "allow_debug") {
      if (auto b = r.Bool(v, "allow_debug")) pkg.allow_debug = *b;
    } else if (key == "max_specializations") {
      if (auto i = r.Integer(v, "max_specializations")) {
        if (*i < 1) r.Error(v, "max_specializations must be at least 1");
        else pkg.max_specializations = static_cast<uint64_t>(*i);
      }
    } else if (key == "compress") {
      // fatbinary --compress-mode; docs/building.md says which driver each needs.
      if (auto m = r.String(v, "compress")) {
        if (*m == "none" || *m == "speed" || *m == "balance" || *m == "size") pkg.compress_mode = *m;
        else r.Error(v, "compress must be one of none, speed, balance, size (got '" + *m + "')");
      }
    } else if (key == "kernels") {
      if (!r.NonEmptySequence(v, "kernels")) continue;
      for (const YAML::Node& item : v)
        if (auto s = r.String(item, "a kernel manifest path")) kernel_files.emplace_back(*s, item);
    }
  }
}

}  // namespace

bool IsCIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !digit(c)) return false;
  if (s.rfind("__", 0) == 0 || (s[0] == '_' && s.size() > 1 && s[1] >= 'A' && s[1] <= 'Z')) return false;
  return std::find(kReservedWords.begin(), kReservedWords.end(), s) == kReservedWords.end();
}

std::optional<Package> LoadPackage(const std::string& path, const LoadOptions& options, Diagnostics& diag) {
  FileReader r(path, options, diag);
  const std::string project_root = ProjectRoot(path, options);
  r.set_root(project_root);
  std::optional<YAML::Node> root = r.Parse();
  if (!root) return std::nullopt;
  if (!r.CheckMap(*root, "the package file",
                  {"package", "prefix", "archs", "ptx", "nvcc_flags", "allow_debug", "max_specializations",
                   "compress", "kernels"},
                  {"package", "archs", "kernels"}))
    return std::nullopt;
  Package pkg;
  pkg.manifest_path = path;
  std::vector<std::pair<std::string, YAML::Node>> kernel_files;
  ReadPackageFields(r, *root, pkg, kernel_files);
  if (pkg.prefix.empty()) pkg.prefix = pkg.name;
  if (!options.archs_override.empty()) pkg.archs = options.archs_override;
  if (diag.HasErrors()) return std::nullopt;

  std::map<std::string, SourceLoc> kernel_names;
  for (const auto& [relative, node] : kernel_files) {
    std::string kernel_path = ResolveBeside(path, relative);
    if (!r.Inside(node, "kernel manifest '" + relative + "'", kernel_path)) continue;
    if (!InputExists(kernel_path, options)) {
      r.Error(node, "kernel manifest '" + relative + "' not found (looked for " + kernel_path + ")");
      continue;
    }
    FileReader kr(kernel_path, options, diag);
    kr.set_root(project_root);
    std::optional<YAML::Node> kroot = kr.Parse();
    if (!kroot) continue;
    std::optional<Kernel> kernel = KernelReader(kr, pkg).Read(*kroot);
    if (!kernel) continue;
    if (!options.archs_override.empty()) kernel->archs = options.archs_override;
    auto [it, inserted] = kernel_names.emplace(kernel->name, kernel->loc);
    if (!inserted) {
      diag.Error(kernel->loc, "duplicate kernel '" + kernel->name + "' (first defined at " +
                                  it->second.ToString() + ")");
      continue;
    }
    pkg.kernels.push_back(std::move(*kernel));
  }
  if (diag.HasErrors()) return std::nullopt;
  return pkg;
}

}  // namespace kpack
