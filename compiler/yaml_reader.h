// yaml_reader.h - reading one manifest file: typed values from YAML nodes,
// each rejection reported at the node's position, and the project-root
// rule for the paths a manifest names.
//
// Shared by the package file (manifest.cc), kernel manifests
// (kernel_reader.cc) and their Triton keys (triton_reader.cc).
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics.h"
#include "manifest.h"
#include "model.h"

namespace kpack {

// The file at `path`: from options.files when set, else from the disk.
std::optional<std::string> ReadInput(const std::string& path, const LoadOptions& options);
bool InputExists(const std::string& path, const LoadOptions& options);

// Joins `relative` onto the directory of `base_file`, lexically normalized,
// keeping the result relative when both are (messages stay machine-neutral).
std::string ResolveBeside(const std::string& base_file, const std::string& relative);

// `path` relative to the project root, lexically: the name a compiler that
// records source paths (Triton's line info) is given, so the output does not
// depend on where the build directory is.  Its file name when there is no
// such path.
std::string RootRelative(const std::string& path, const std::string& root);

// Whether `path` lies inside directory `root`.  On disk both are resolved
// through symlinks, so a link inside the project that points out of it is
// outside; in memory (no links) the comparison is lexical.
bool InsideRoot(const std::string& path, const std::string& root, const LoadOptions& options);

// Reads one YAML file and reports everything wrong in it through `diag`.
class FileReader {
 public:
  FileReader(std::string file, const LoadOptions& options, Diagnostics& diag)
      : file_(std::move(file)), options_(options), diag_(diag) {}

  const std::string& file() const { return file_; }
  const LoadOptions& options() const { return options_; }
  Diagnostics& diag() { return diag_; }
  void set_root(std::string root) { root_ = std::move(root); }
  const std::string& root() const { return root_; }

  // Parses the file; nullopt (with an error) when unreadable or not YAML.
  std::optional<YAML::Node> Parse();

  SourceLoc Loc(const YAML::Node& node) const;
  // Position of the first character of a scalar's value (after the quote of
  // a quoted scalar), so expression columns point at the right character.
  SourceLoc ValueLoc(const YAML::Node& node) const;
  void Error(const YAML::Node& node, const std::string& message) { diag_.Error(Loc(node), message); }

  // True when `path` (what `node` names) is inside the project root, or
  // when the options allow any path; reports it otherwise.
  bool Inside(const YAML::Node& node, const std::string& what, const std::string& path);

  // Checks that `node` is a map whose keys are all in `allowed`, each once,
  // and that every key in `required` is present.  Returns false if not a map.
  bool CheckMap(const YAML::Node& node, const std::string& what, std::initializer_list<std::string_view> allowed,
                std::initializer_list<std::string_view> required);
  // The value of `key` in map `node`; an undefined node when absent.
  static YAML::Node Get(const YAML::Node& node, std::string_view key);

  std::optional<std::string> String(const YAML::Node& node, const std::string& what);
  std::optional<std::string> Identifier(const YAML::Node& node, const std::string& what);
  std::optional<bool> Bool(const YAML::Node& node, const std::string& what);
  std::optional<int64_t> Integer(const YAML::Node& node, const std::string& what);
  // A float: a YAML number written as one (1e-6, 0.5, 3), or .inf/.nan.
  std::optional<double> Float(const YAML::Node& node, const std::string& what);
  // A non-empty sequence; reports and returns false otherwise.
  bool NonEmptySequence(const YAML::Node& node, const std::string& what);
  std::vector<std::string> StringList(const YAML::Node& node, const std::string& what);
  // The string at `node`, reported if it is not a C identifier; "" if it is
  // not a string at all.
  std::string SpelledIdentifier(const YAML::Node& node, const std::string& what);
  std::vector<Arch> Archs(const YAML::Node& node);
  // A JSON literal for a YAML scalar (true, 3, 0.5, "text", null): the
  // values of `assume:`.  nullopt, reported, for anything else.
  std::optional<std::string> JsonLiteral(const YAML::Node& node, const std::string& what);

  static std::string Join(std::initializer_list<std::string_view> items);

 private:
  std::string file_;
  const LoadOptions& options_;
  Diagnostics& diag_;
  std::string root_ = ".";
};

}  // namespace kpack
