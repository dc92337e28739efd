// triton_source.h - what a Triton kernel's source says, read without running
// its module: the load pass asks triton_helper.py's `describe` about every
// Triton kernel of a package in one Python process, and gets back the
// parameters as Triton sees them, the autotune configs and key, the
// heuristics translated into launch expressions, the files the kernel is
// made from, and every construct that cannot be packaged (at its
// file:line:col in the Python source).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics.h"
#include "toolchain.h"
#include "triton.h"

namespace kpack {

// Where a kernel's source is and how to read it.
struct TritonDescribeRequest {
  std::string source;       // the .py file, as kpack resolved it
  std::string source_name;  // the name Triton records (root-relative)
  std::string entry;
  std::vector<std::string> python_path;
  std::string root;         // the project root
  std::vector<std::pair<std::string, std::string>> assume;  // name -> JSON literal
  bool execute = false;     // `load: execute`: the source's names are not checked
};

struct TritonParamFacts {
  std::string name;
  bool is_constexpr = false;
  std::string annotation_type;  // Triton's canonical type of an annotated param ("i64"), or ""
  bool has_default = false;
  std::optional<std::string> default_json;  // the default as a JSON literal, when it is one
  std::string default_error;   // why a default is not a literal
  bool do_not_specialize = false;
  bool do_not_specialize_on_alignment = false;
  SourceLoc loc;
};

struct TritonConfigFacts {
  std::vector<std::pair<std::string, std::string>> kwargs;  // constexpr -> JSON literal
  int64_t num_warps = 4, num_stages = 3, num_ctas = 1;
  std::optional<int64_t> maxnreg;
};

struct TritonAutotuneFacts {
  SourceLoc loc;
  std::vector<TritonConfigFacts> configs;
  std::vector<std::string> key;
  std::string error;          // the decorator cannot be packaged at all
  std::string configs_error;  // the configs need the manifest's autotune: configs:
};

struct TritonHeuristicFacts {
  std::string name;
  std::string expr;    // in kpack's expression language; "" when untranslatable
  std::string error;   // why it could not be translated
  std::string source;  // the lambda as written
  SourceLoc loc;
};

struct TritonSourceInfo {
  int line = 0;  // the entry's def
  std::vector<TritonParamFacts> params;
  std::vector<TritonAutotuneFacts> autotunes;
  std::vector<TritonHeuristicFacts> heuristics;  // in the order Triton applies them
  std::vector<std::string> inputs;
  std::vector<std::pair<SourceLoc, std::string>> errors;

  const TritonParamFacts* FindParam(const std::string& name) const;
};

// Describes Triton kernels' sources (a seam: tests fake it).
class TritonDescriber {
 public:
  virtual ~TritonDescriber() = default;
  // One info per request, in order; nullopt with *error when the helper
  // cannot run or answers garbage.
  virtual std::optional<std::vector<TritonSourceInfo>> Describe(const std::vector<TritonDescribeRequest>& requests,
                                                                std::string* error) = 0;
};

// Runs `python triton_helper.py describe` through a ToolRunner, with the
// request and the answer in a private temporary directory.
class HelperDescriber : public TritonDescriber {
 public:
  HelperDescriber(ToolRunner& runner, TritonTools tools) : runner_(runner), tools_(std::move(tools)) {}
  std::optional<std::vector<TritonSourceInfo>> Describe(const std::vector<TritonDescribeRequest>& requests,
                                                        std::string* error) override;

 private:
  ToolRunner& runner_;
  TritonTools tools_;
};

std::string DescribeRequestJson(const std::vector<TritonDescribeRequest>& requests);
std::optional<std::vector<TritonSourceInfo>> ParseDescribeJson(const std::string& json, size_t expected,
                                                               std::string* error);

// "file:line:col" as the helper writes positions.
SourceLoc ParsePythonLoc(const std::string& text);

}  // namespace kpack
