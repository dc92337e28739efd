// fake_describer.h - a TritonDescriber that answers from facts the test
// writes, so the merge of a Triton kernel's source into its manifest
// (triton_merge.cc) is tested without Python or Triton.
//
// The facts are what compiler/triton_helper.py's `describe` answers
// (triton_source.h): params with their positions, autotune configs,
// heuristics translated into launch expressions.  Signature() reads a
// one-line Python `def` the way the helper does (1-based columns of each
// parameter's name, JSON literals for literal defaults), so positions in
// expected messages can be checked against the Python text by eye.
// RecordedDescriber replays an answer the real helper gave.
#pragma once

#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "triton_source.h"

namespace kpack::testing {

// The JSON literal of a Python literal default (True, None, 3, 1e-6, 'x');
// nullopt for anything else (an expression the helper would not evaluate).
inline std::optional<std::string> PythonLiteralJson(const std::string& text) {
  if (text == "True") return "true";
  if (text == "False") return "false";
  if (text == "None") return "null";
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front())
    return "\"" + text.substr(1, text.size() - 2) + "\"";
  if (text.empty()) return std::nullopt;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != 'e' && c != '+')
      return std::nullopt;
  return text;
}

// The params of `def NAME(a, b: tl.int64, C: tl.constexpr = 4):`, written
// on line `line` of `file`.  Defaults must not hold commas.
inline std::vector<TritonParamFacts> Signature(const std::string& file, int line, const std::string& def) {
  std::vector<TritonParamFacts> out;
  const size_t open = def.find('('), close = def.rfind(')');
  size_t start = open + 1;
  while (start < close) {
    size_t end = def.find(',', start);
    if (end == std::string::npos || end > close) end = close;
    size_t name_at = def.find_first_not_of(' ', start);
    std::string piece = def.substr(name_at, end - name_at);
    TritonParamFacts p;
    size_t name_end = piece.find_first_of(":= ");
    p.name = piece.substr(0, name_end);
    p.loc = SourceLoc{file, line, static_cast<int>(name_at) + 1};
    size_t eq = piece.find('=');
    std::string annotation = piece.substr(0, eq);
    p.is_constexpr = annotation.find("constexpr") != std::string::npos;
    if (annotation.find("tl.int64") != std::string::npos) p.annotation_type = "i64";
    if (eq != std::string::npos) {
      std::string text = piece.substr(piece.find_first_not_of(' ', eq + 1));
      text.erase(text.find_last_not_of(' ') + 1);
      p.has_default = true;
      p.default_json = PythonLiteralJson(text);
      if (!p.default_json) p.default_error = "its default " + text + " is not a literal";
    }
    out.push_back(std::move(p));
    start = end + 1;
  }
  return out;
}

// One triton.Config: kwargs as JSON literals, and its options.
inline TritonConfigFacts Config(std::vector<std::pair<std::string, std::string>> kwargs, int64_t num_warps = 4,
                                int64_t num_stages = 3, std::optional<int64_t> maxnreg = std::nullopt) {
  TritonConfigFacts c;
  c.kwargs = std::move(kwargs);
  c.num_warps = num_warps;
  c.num_stages = num_stages;
  c.maxnreg = maxnreg;
  return c;
}

// Answers each request by its entry, from the facts given to Add().
class FakeDescriber : public TritonDescriber {
 public:
  void Add(const std::string& entry, TritonSourceInfo info) { sources_[entry] = std::move(info); }
  TritonSourceInfo& Get(const std::string& entry) { return sources_.at(entry); }
  // Non-empty: Describe() fails with this text, as when Python is missing.
  void Fail(std::string error) { failure_ = std::move(error); }

  std::optional<std::vector<TritonSourceInfo>> Describe(const std::vector<TritonDescribeRequest>& requests,
                                                        std::string* error) override {
    ++calls_;
    requests_ = requests;
    if (!failure_.empty()) {
      *error = failure_;
      return std::nullopt;
    }
    std::vector<TritonSourceInfo> out;
    for (const TritonDescribeRequest& r : requests) {
      auto it = sources_.find(r.entry);
      if (it == sources_.end()) {
        *error = "the fake describer knows no entry '" + r.entry + "'";
        return std::nullopt;
      }
      out.push_back(it->second);
    }
    return out;
  }

  int calls() const { return calls_; }
  const std::vector<TritonDescribeRequest>& requests() const { return requests_; }

 private:
  std::map<std::string, TritonSourceInfo> sources_;
  std::string failure_;
  int calls_ = 0;
  std::vector<TritonDescribeRequest> requests_;
};

// Answers with what triton_helper.py's describe once answered (its JSON),
// for the kernels `entries` in that order: a package's real facts, replayed
// without Python.
class RecordedDescriber : public TritonDescriber {
 public:
  RecordedDescriber(std::string json, std::vector<std::string> entries)
      : json_(std::move(json)), entries_(std::move(entries)) {}

  std::optional<std::vector<TritonSourceInfo>> Describe(const std::vector<TritonDescribeRequest>& requests,
                                                        std::string* error) override {
    std::vector<std::string> asked;
    for (const TritonDescribeRequest& r : requests) asked.push_back(r.entry);
    if (asked != entries_) {
      *error = "the recorded answer is for other kernels";
      return std::nullopt;
    }
    return ParseDescribeJson(json_, requests.size(), error);
  }

 private:
  std::string json_;
  std::vector<std::string> entries_;
};

}  // namespace kpack::testing
