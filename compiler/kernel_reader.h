// kernel_reader.h - one kernel manifest into a Kernel.
//
// Reading happens in two steps because a Triton kernel's manifest is only
// complete together with its source: Read() takes every key, LoadPackage
// then asks Triton's helper about every Triton kernel's source at once
// (triton_source.h), and Finish() merges what the source says (autotune
// configs, heuristics, defaults: triton_merge.h) before the checks that need
// the whole kernel (exclusions, names, launch expressions, `tune:`).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>

#include "model.h"
#include "triton_source.h"
#include "yaml_reader.h"

namespace kpack {

// The keys of a Triton kernel's manifest that Finish() reads, once the
// source has been described.
struct PendingTritonKeys {
  // A default YAML::Node is a defined null: these start undefined.
  YAML::Node autotune{YAML::NodeType::Undefined};  // `autotune:`
  YAML::Node options{YAML::NodeType::Undefined};   // `options:`
};

class KernelReader {
 public:
  KernelReader(FileReader reader, const Package& package) : r_(std::move(reader)), package_(package) {}

  FileReader& reader() { return r_; }
  const Kernel& kernel() const { return k_; }

  // Parses the manifest and reads every key it can without the source.
  // Returns false (with errors) when the manifest is not usable.
  bool Read();

  // What the describe request needs to find the kernel's source.
  TritonDescribeRequest DescribeRequest() const;

  // Merges `source` (Triton kernels; nullptr when there is no description,
  // in tests and fuzzing) and runs the whole-kernel checks.
  std::optional<Kernel> Finish(const TritonSourceInfo* source);

 private:
  void ReadField(const std::string& key, const YAML::Node& key_node, const YAML::Node& v);
  void ReadSource(const YAML::Node& v);
  void ReadConstexprs(const YAML::Node& v);
  bool ReadConstexprType(const YAML::Node& type, Constexpr& c);
  void ReadParams(const YAML::Node& v);
  void ReadParam(const YAML::Node& item);
  void ReadDivisibility(const YAML::Node& node, Param& p);
  void ReadWidth(const YAML::Node& node, Param& p);
  bool ParseParamType(const std::string& text, const YAML::Node& node, ParamType& out);
  bool BadType(const YAML::Node& node, const std::string& text);
  void ReadExclusions(const YAML::Node& v);
  std::optional<ConstexprValue> MatchValue(const Constexpr& c, const YAML::Node& node);
  void ReadLaunch(const YAML::Node& v);
  std::vector<Expr> ReadDims(const YAML::Node& v, const std::string& what);
  void CheckNames();
  void CheckCuda();
  void CheckLaunch();

  FileReader r_;
  const Package& package_;
  Kernel k_;
  std::optional<YAML::Node> root_;
  // Read in Finish(): it may name constexprs the source adds.
  YAML::Node exclude_{YAML::NodeType::Undefined};
  PendingTritonKeys triton_keys_;
  // `tune:`, read in Finish(): it names params and constexprs the source adds.
  YAML::Node tune_key_{YAML::NodeType::Undefined}, tune_{YAML::NodeType::Undefined};
  int errors_before_ = 0;
};

// Reads the values of a constexpr of kind `c.kind` from `values`: shared by
// the constexprs, the options and the manifest's autotune configs.
void ReadConstexprValues(FileReader& r, const YAML::Node& values, Constexpr& c);

// One value of kind `kind` at `node`; nullopt (reported) when it is not one.
std::optional<ConstexprValue> ReadConstexprValue(FileReader& r, const YAML::Node& node, ConstexprKind kind,
                                                 const std::string& what);

// false and true, at `loc`: the values of a computed bool the manifest
// does not restrict.
std::vector<ConstexprValue> BothBoolValues(const SourceLoc& loc);

// The expression at scalar `v`, parsed with its errors at their columns;
// nullopt (reported: "<what> must be an integer expression") otherwise.
std::optional<Expr> ReadExpr(FileReader& r, const YAML::Node& v, const std::string& what);

// What a name in a launch expression or a rule is in kernel `k`.
NameKind LookUpName(const Kernel& k, const std::string& name);

// The shortest spelling of a float that reads back the same, as Python's
// repr() writes it ("1e-06", "0.5", "3.0").
std::string FloatText(double value);

}  // namespace kpack
