#include "triton_source.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "fs_util.h"
#include "json_util.h"

namespace kpack {
namespace {

namespace json = llvm::json;

TritonParamFacts ParseParam(const json::Object& o) {
  TritonParamFacts p;
  p.name = JsonGetString(o, "name");
  p.is_constexpr = o.getBoolean("constexpr").value_or(false);
  p.annotation_type = JsonGetString(o, "annotation_type");
  p.has_default = o.getBoolean("has_default").value_or(false);
  // Literals come as their JSON text, written by Python: 3.0 stays a float.
  if (std::optional<llvm::StringRef> text = o.getString("default")) p.default_json = text->str();
  p.default_error = JsonGetString(o, "default_error");
  p.do_not_specialize = o.getBoolean("do_not_specialize").value_or(false);
  p.do_not_specialize_on_alignment = o.getBoolean("do_not_specialize_on_alignment").value_or(false);
  p.loc = ParsePythonLoc(JsonGetString(o, "loc"));
  return p;
}

TritonAutotuneFacts ParseAutotune(const json::Object& o) {
  TritonAutotuneFacts a;
  a.loc = ParsePythonLoc(JsonGetString(o, "loc"));
  a.key = JsonGetStrings(o, "key");
  a.error = JsonGetString(o, "error");
  a.configs_error = JsonGetString(o, "configs_error");
  if (const json::Array* configs = o.getArray("configs")) {
    for (const json::Value& c : *configs) {
      const json::Object* co = c.getAsObject();
      if (!co) continue;
      TritonConfigFacts f;
      if (const json::Object* kwargs = co->getObject("kwargs"))
        for (const auto& [k, v] : *kwargs)
          if (std::optional<llvm::StringRef> text = v.getAsString()) f.kwargs.emplace_back(k.str(), text->str());
      // Triton keeps a kwargs dict's insertion order; llvm::json sorts
      // keys, which is as good: the order only names the axes.
      f.num_warps = co->getInteger("num_warps").value_or(4);
      f.num_stages = co->getInteger("num_stages").value_or(3);
      f.num_ctas = co->getInteger("num_ctas").value_or(1);
      if (std::optional<int64_t> maxnreg = co->getInteger("maxnreg")) f.maxnreg = *maxnreg;
      a.configs.push_back(std::move(f));
    }
  }
  return a;
}

std::optional<TritonSourceInfo> ParseKernel(const json::Object& o) {
  TritonSourceInfo info;
  info.line = static_cast<int>(o.getInteger("line").value_or(0));
  info.inputs = JsonGetStrings(o, "inputs");
  if (const json::Array* params = o.getArray("params"))
    for (const json::Value& p : *params)
      if (const json::Object* po = p.getAsObject()) info.params.push_back(ParseParam(*po));
  if (const json::Array* decorators = o.getArray("decorators")) {
    for (const json::Value& d : *decorators) {
      const json::Object* dobj = d.getAsObject();
      if (!dobj) return std::nullopt;
      std::string kind = JsonGetString(*dobj, "kind");
      if (kind == "autotune") info.autotunes.push_back(ParseAutotune(*dobj));
      if (kind != "heuristics") continue;
      if (const json::Array* values = dobj->getArray("values"))
        for (const json::Value& v : *values)
          if (const json::Object* vo = v.getAsObject())
            info.heuristics.push_back({JsonGetString(*vo, "name"), JsonGetString(*vo, "expr"),
                                       JsonGetString(*vo, "error"), JsonGetString(*vo, "source"),
                                       ParsePythonLoc(JsonGetString(*vo, "loc"))});
    }
  }
  if (const json::Array* errors = o.getArray("errors"))
    for (const json::Value& e : *errors)
      if (const json::Object* eo = e.getAsObject())
        info.errors.emplace_back(ParsePythonLoc(JsonGetString(*eo, "loc")), JsonGetString(*eo, "message"));
  return info;
}

}  // namespace

const TritonParamFacts* TritonSourceInfo::FindParam(const std::string& name) const {
  for (const TritonParamFacts& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

SourceLoc ParsePythonLoc(const std::string& text) {
  // file:line:col, where the file may itself hold colons.
  size_t last = text.rfind(':');
  size_t middle = last == std::string::npos || last == 0 ? std::string::npos : text.rfind(':', last - 1);
  if (middle == std::string::npos) return SourceLoc{text, 0, 0};
  auto number = [](const std::string& s) {
    int n = 0;
    for (char c : s) {
      if (c < '0' || c > '9' || n > 100000000) return 0;
      n = n * 10 + (c - '0');
    }
    return n;
  };
  return SourceLoc{text.substr(0, middle), number(text.substr(middle + 1, last - middle - 1)),
                   number(text.substr(last + 1))};
}

std::string DescribeRequestJson(const std::vector<TritonDescribeRequest>& requests) {
  json::Array kernels;
  for (const TritonDescribeRequest& r : requests) {
    json::Object assume;
    for (const auto& [name, literal] : r.assume) {
      llvm::Expected<json::Value> value = json::parse(literal);
      if (value) assume[name] = std::move(*value);
      else llvm::consumeError(value.takeError());
    }
    kernels.push_back(json::Object{{"source", r.source},
                                   {"source_name", r.source_name},
                                   {"entry", r.entry},
                                   {"python_path", JsonStrings(r.python_path)},
                                   {"root", r.root},
                                   {"assume", std::move(assume)},
                                   {"load", r.execute ? "execute" : "slice"}});
  }
  return JsonText(json::Object{{"kernels", std::move(kernels)}}, 0);
}

std::optional<std::vector<TritonSourceInfo>> ParseDescribeJson(const std::string& text, size_t expected,
                                                               std::string* error) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    *error = "malformed answer from triton_helper.py describe: " + llvm::toString(value.takeError());
    return std::nullopt;
  }
  const json::Object* o = value->getAsObject();
  const json::Array* kernels = o ? o->getArray("kernels") : nullptr;
  if (!kernels || kernels->size() != expected) {
    *error = "triton_helper.py describe answered for " + std::to_string(kernels ? kernels->size() : 0) +
             " kernels, not " + std::to_string(expected);
    return std::nullopt;
  }
  std::vector<TritonSourceInfo> out;
  for (const json::Value& k : *kernels) {
    const json::Object* ko = k.getAsObject();
    std::optional<TritonSourceInfo> info = ko ? ParseKernel(*ko) : std::nullopt;
    if (!info) {
      *error = "malformed kernel in the answer of triton_helper.py describe";
      return std::nullopt;
    }
    out.push_back(std::move(*info));
  }
  return out;
}

std::optional<std::vector<TritonSourceInfo>> HelperDescriber::Describe(
    const std::vector<TritonDescribeRequest>& requests, std::string* error) {
  std::error_code ec;
  // Python's "can't open file" would otherwise read as a missing Triton
  // (TritonMissingMessage) when it is kpack's own install that is
  // incomplete: a bin/kpack copied without its share/kpack/triton (main.cc's
  // default helper path).
  if (!std::filesystem::is_regular_file(tools_.helper, ec)) {
    *error = "Triton kernels need kpack's Triton helper, which is not at " + tools_.helper +
             "\n  install kpack with its share/kpack/triton (meson install, or the release archive),"
             " or pass --triton-helper PATH";
    return std::nullopt;
  }
  std::string pattern = (std::filesystem::temp_directory_path(ec) / "kpack-describe-XXXXXX").string();
  if (ec || !mkdtemp(pattern.data())) {
    *error = "cannot create a temporary directory for triton_helper.py describe";
    return std::nullopt;
  }
  const std::string dir = pattern, request = dir + "/request.json", answer = dir + "/answer.json";
  std::optional<std::vector<TritonSourceInfo>> out;
  if (std::string e = WriteFileAtomic(request, DescribeRequestJson(requests)); !e.empty()) {
    *error = e;
  } else {
    ToolResult r = runner_.Run({tools_.python, tools_.helper, "describe", request, answer});
    std::optional<std::string> text = r.ok() ? ReadFile(answer) : std::nullopt;
    if (text) {
      out = ParseDescribeJson(*text, requests.size(), error);
    } else {
      *error = TritonMissingMessage(!r.spawn_error.empty() ? r.spawn_error : r.output);
    }
  }
  std::filesystem::remove_all(dir, ec);
  return out;
}

}  // namespace kpack
