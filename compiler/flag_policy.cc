#include "flag_policy.h"

#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

namespace kpack {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kShellMetacharacters = "$`;|&<>()'\"\\*?[]{}~!# \t\r\n";

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
void CheckFlagReach(FileReader& r, const YAML::Node& node) {
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
        r.Error(items[i], "nvcc flag '" + flag + "' chooses the host compiler, which would let the manifest run any "
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
            r.Error(items[v->second], "host compiler option '" + std::string(piece) + "' (after " +
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
      r.Inside(items[v->second], "nvcc flag '" + std::string(option) + "' path '" + v->first + "'", probe);
      break;
    }
  }
}

}  // namespace

char ShellMetacharacter(const std::string& s) {
  size_t at = s.find_first_of(kShellMetacharacters);
  return at == std::string::npos ? 0 : s[at];
}

std::string IncludePathProblem(const std::string& subject, const std::string& path) {
  char c = ShellMetacharacter(path);
  if (!c) return "";
  return subject + " contains " + Quoted(c) +
         "; nvcc passes include paths through a shell, so kpack refuses shell metacharacters";
}

std::string Quoted(char c) {
  if (c == ' ') return "a space";
  if (c == '\t' || c == '\r' || c == '\n') return "a control character";
  return "'" + std::string(1, c) + "'";
}

// nvcc flags: strings free of shell metacharacters (see above).
std::vector<std::string> FlagList(FileReader& r, const YAML::Node& node, std::vector<SourceLoc>& locs) {
  std::vector<std::string> out;
  if (!node.IsSequence()) {
    r.Error(node, "nvcc_flags must be a list");
    return out;
  }
  for (const YAML::Node& item : node) {
    std::optional<std::string> flag = r.String(item, "each entry of nvcc_flags");
    if (!flag) continue;
    if (char c = ShellMetacharacter(*flag)) {
      r.Error(item, "nvcc flag '" + *flag + "' contains " + Quoted(c) +
                      "; nvcc passes flags through a shell, so kpack refuses shell metacharacters "
                      "(give each option and value as its own list entry)");
      continue;
    }
    out.push_back(*flag);
    locs.push_back(r.Loc(item));
  }
  CheckFlagReach(r, node);
  return out;
}

}  // namespace kpack
