#include "step.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "fs_util.h"
#include "json_util.h"

namespace kpack {
namespace {

namespace json = llvm::json;

std::string Print(json::Value value) { return JsonText(std::move(value), 1); }

const char* HowName(CompiledUnit::How how) {
  switch (how) {
    case CompiledUnit::How::kCompiled: return "compiled";
    case CompiledUnit::How::kDirectHit: return "cache";
    case CompiledUnit::How::kPreprocessedHit: return "cache-preprocessed";
    case CompiledUnit::How::kUpToDate: return "up-to-date";
  }
  return "compiled";
}

int Fail(const std::string& error_path, const std::string& error) {
  WriteFileAtomic(error_path, error);
  std::cerr << "kpack: step failed; the build reports why (" << error_path << ")\n";
  return 1;
}

int RunUnitStep(const json::Object& request, const std::string& path, ToolRunner& runner) {
  const json::Object* j = request.getObject("job");
  const json::Object* e = request.getObject("env");
  if (!j || !e) return Fail(path + ".error", "error: malformed step request " + path);
  UnitJob job{JsonGetString(*j, "name"),  JsonGetString(*j, "key"),   JsonGetString(*j, "config_key"),
              JsonGetString(*j, "source"), JsonGetStrings(*j, "flags"), j->getBoolean("ptx").value_or(false),
              j->getBoolean("triton").value_or(false), JsonGetString(*j, "label"), JsonGetStrings(*j, "inputs")};
  CompileEnv env;
  env.work_dir = JsonGetString(*e, "work_dir");
  env.cache_dir = JsonGetString(*e, "cache_dir");
  env.toolchain.nvcc = JsonGetString(*e, "nvcc");
  env.triton.python = JsonGetString(*e, "python");
  env.triton.helper = JsonGetString(*e, "triton_helper");
  env.launcher = JsonGetString(*e, "launcher");
  UnitFiles files = UnitFilesFor(env.work_dir, job.name);
  std::error_code ec;
  std::filesystem::remove(files.error, ec);
  CompiledUnit unit;
  if (std::string err = CompileOne(job, env, runner, unit); !err.empty()) return Fail(files.error, err);
  const char* run = std::getenv(kRunIdVariable);
  std::string depfile = EscapeDepfilePath(files.binary) + ":";
  for (const std::string& dep : unit.deps) depfile += " \\\n  " + EscapeDepfilePath(dep);
  for (const auto& [file, content] : {std::pair{files.result, UnitResultJson(run ? run : "", unit)},
                                      std::pair{files.depfile, depfile + "\n"},
                                      std::pair{files.binary, unit.binary}})
    if (std::string err = WriteFileAtomic(file, content); !err.empty()) return Fail(files.error, "error: " + err);
  return 0;
}

int RunFatbinStep(const json::Object& request, ToolRunner& runner) {
  FatbinJob job{JsonGetString(request, "label"), JsonGetStrings(request, "argv"), JsonGetString(request, "output")};
  std::string error_path = job.output.substr(0, job.output.size() - std::string(".fatbin").size()) + ".error";
  std::error_code ec;
  std::filesystem::remove(error_path, ec);
  if (std::string err = RunFatbinJob(job, runner); !err.empty()) return Fail(error_path, err);
  return 0;
}

}  // namespace

UnitFiles UnitFilesFor(const std::string& work_dir, const std::string& name) {
  std::string stem = work_dir + "/units/" + name;
  return UnitFiles{stem + ".unit", stem + ".result", stem + ".bin.d", stem + ".bin", stem + ".error"};
}

std::string UnitRequestJson(const UnitJob& job, const CompileEnv& env) {
  return Print(json::Object{
      {"kind", "unit"},
      {"job", json::Object{{"name", job.name},
                           {"key", job.key},
                           {"config_key", job.config_key},
                           {"source", job.source},
                           {"flags", JsonStrings(job.flags)},
                           {"ptx", job.ptx},
                           {"triton", job.triton},
                           {"label", job.label},
                           {"inputs", JsonStrings(job.inputs)}}},
      {"env", json::Object{{"work_dir", env.work_dir},
                           {"cache_dir", env.cache_dir},
                           {"nvcc", env.toolchain.nvcc},
                           {"python", env.triton.python},
                           {"triton_helper", env.triton.helper},
                           {"launcher", env.launcher}}}});
}

std::string FatbinRequestJson(const FatbinJob& job) {
  return Print(json::Object{{"kind", "fatbin"}, {"label", job.label}, {"argv", JsonStrings(job.argv)},
                            {"output", job.output}});
}

std::string UnitResultJson(const std::string& run, const CompiledUnit& unit) {
  return Print(json::Object{{"run", run},
                            {"how", HowName(unit.how)},
                            {"seconds", unit.seconds},
                            {"meta", unit.meta},
                            {"deps", JsonStrings(unit.deps)}});
}

std::optional<UnitResult> ParseUnitResult(const std::string& text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  const json::Object* o = value->getAsObject();
  if (!o) return std::nullopt;
  UnitResult r;
  r.run = JsonGetString(*o, "run");
  std::string how = JsonGetString(*o, "how");
  r.unit.how = how == "compiled"  ? CompiledUnit::How::kCompiled
               : how == "cache"   ? CompiledUnit::How::kDirectHit
                                  : CompiledUnit::How::kPreprocessedHit;
  r.unit.seconds = o->getNumber("seconds").value_or(0);
  r.unit.meta = JsonGetString(*o, "meta");
  r.unit.deps = JsonGetStrings(*o, "deps");
  return r;
}

int RunStep(const std::string& path, ToolRunner& runner) {
  std::optional<std::string> text = ReadFile(path);
  llvm::Expected<json::Value> value = text ? json::parse(*text) : llvm::Expected<json::Value>(nullptr);
  if (!value) llvm::consumeError(value.takeError());
  const json::Object* request = value ? value->getAsObject() : nullptr;
  if (!request) {
    std::cerr << "kpack: error: cannot read step request " << path << "\n";
    return 2;
  }
  std::string kind = JsonGetString(*request, "kind");
  if (kind == "unit") return RunUnitStep(*request, path, runner);
  if (kind == "fatbin") return RunFatbinStep(*request, runner);
  std::cerr << "kpack: error: unknown step kind '" << kind << "' in " << path << "\n";
  return 2;
}

}  // namespace kpack
