#include "step.h"

#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "fs_util.h"
#include "json_util.h"

namespace kpack {
namespace {

namespace json = llvm::json;

std::string Print(json::Value value) { return JsonText(std::move(value), 1); }

// The JSON object `text` holds; nullopt when it is not one.
std::optional<json::Object> ParseObject(const std::string& text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  json::Object* o = value->getAsObject();
  if (!o) return std::nullopt;
  return std::move(*o);
}

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

json::Object JobJson(const UnitJob& job) {
  return json::Object{{"name", job.name},
                      {"key", job.key},
                      {"config_key", job.config_key},
                      {"source", job.source},
                      {"flags", JsonStrings(job.flags)},
                      {"ptx", job.ptx},
                      {"triton", job.triton},
                      {"label", job.label},
                      {"inputs", JsonStrings(job.inputs)}};
}

UnitJob ParseJob(const json::Object& j) {
  return UnitJob{JsonGetString(j, "name"),  JsonGetString(j, "key"),   JsonGetString(j, "config_key"),
                 JsonGetString(j, "source"), JsonGetStrings(j, "flags"), j.getBoolean("ptx").value_or(false),
                 j.getBoolean("triton").value_or(false), JsonGetString(j, "label"), JsonGetStrings(j, "inputs")};
}

int RunUnitStep(const json::Object& request, const std::string& path, ToolRunner& runner) {
  const json::Object* j = request.getObject("job");
  const json::Object* e = request.getObject("env");
  if (!j || !e) return Fail(path + ".error", "error: malformed step request " + path);
  BatchJob batch;
  batch.job = ParseJob(*j);
  if (const json::Array* members = request.getArray("members"))
    for (const json::Value& m : *members)
      if (const json::Object* o = m.getAsObject()) batch.members.push_back(ParseJob(*o));
  const UnitJob& job = batch.job;
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
  for (const UnitJob& member : batch.members)
    std::filesystem::remove(UnitFilesFor(env.work_dir, member.name).member_error, ec);
  CompiledUnit unit;
  std::vector<std::string> member_errors;
  if (std::string err = CompileBatch(batch, env, runner, unit, member_errors); !err.empty()) {
    // The members' own errors first: the build reads the batch's .error
    // as the sign that the step failed.
    for (size_t i = 0; i < member_errors.size(); ++i)
      if (!member_errors[i].empty())
        WriteFileAtomic(UnitFilesFor(env.work_dir, batch.members[i].name).member_error, member_errors[i]);
    return Fail(files.error, err);
  }
  unit.cost.step_cpu = SelfCpuSeconds();
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
  FatbinJob job{JsonGetString(request, "label"), JsonGetStrings(request, "argv"), JsonGetString(request, "output"),
                {}, JsonGetString(request, "cubin")};
  if (const json::Array* instances = request.getArray("instances"))
    for (const json::Value& v : *instances) {
      const json::Object* o = v.getAsObject();
      if (!o) continue;
      FatbinInstance m{JsonGetString(*o, "spec"), JsonGetString(*o, "entry"), {}};
      if (const json::Array* args = o->getArray("args"))
        for (const json::Value& a : *args)
          if (const json::Object* ao = a.getAsObject())
            m.args.push_back(ExpectedArg{static_cast<ExpectedArg::Kind>(ao->getInteger("kind").value_or(0)),
                                         ao->getInteger("integer").value_or(0), JsonGetString(*ao, "text")});
      job.instances.push_back(std::move(m));
    }
  std::string stem = job.output.substr(0, job.output.size() - std::string(".fatbin").size());
  std::error_code ec;
  std::filesystem::remove(stem + ".error", ec);
  double cpu = 0;
  if (std::string err = RunFatbinJob(job, runner, nullptr, &cpu); !err.empty()) return Fail(stem + ".error", err);
  const char* run = std::getenv(kRunIdVariable);
  // Written after the fatbin: a result without its fatbin is never read.
  if (std::string err = WriteFileAtomic(stem + ".result", Print(json::Object{{"run", run ? run : ""}, {"cpu", cpu}}));
      !err.empty())
    return Fail(stem + ".error", "error: " + err);
  return 0;
}

}  // namespace

UnitFiles UnitFilesFor(const std::string& work_dir, const std::string& name) {
  std::string stem = work_dir + "/units/" + name;
  return UnitFiles{stem + ".unit", stem + ".result", stem + ".bin.d", stem + ".bin", stem + ".error",
                   stem + ".member-error"};
}

std::string UnitRequestJson(const BatchJob& batch, const CompileEnv& env) {
  json::Object request{
      {"kind", "unit"},
      {"job", JobJson(batch.job)},
      {"env", json::Object{{"work_dir", env.work_dir},
                           {"cache_dir", env.cache_dir},
                           {"nvcc", env.toolchain.nvcc},
                           {"python", env.triton.python},
                           {"triton_helper", env.triton.helper},
                           {"launcher", env.launcher}}}};
  // A batch of one has no members: its request is a plain unit's.
  if (!batch.members.empty()) {
    json::Array members;
    for (const UnitJob& m : batch.members) members.push_back(JobJson(m));
    request["members"] = std::move(members);
  }
  return Print(std::move(request));
}

std::string FatbinRequestJson(const FatbinJob& job) {
  json::Object request{{"kind", "fatbin"}, {"label", job.label}, {"argv", JsonStrings(job.argv)},
                       {"output", job.output}};
  if (!job.instances.empty()) {
    json::Array instances;
    for (const FatbinInstance& m : job.instances) {
      json::Array args;
      for (const ExpectedArg& a : m.args)
        args.push_back(json::Object{{"kind", static_cast<int64_t>(a.kind)}, {"integer", a.integer}, {"text", a.text}});
      instances.push_back(json::Object{{"spec", m.spec}, {"entry", m.entry}, {"args", std::move(args)}});
    }
    request["instances"] = std::move(instances);
    request["cubin"] = job.cubin;
  }
  return Print(std::move(request));
}

std::string UnitResultJson(const std::string& run, const CompiledUnit& unit) {
  const UnitCost& c = unit.cost;
  return Print(json::Object{{"run", run},
                            {"how", HowName(unit.how)},
                            {"seconds", unit.seconds},
                            {"cost", json::Object{{"tool_cpu", c.tool_cpu},
                                                  {"compile_cpu", c.compile_cpu},
                                                  {"startup_cpu", c.startup_cpu},
                                                  {"step_cpu", c.step_cpu},
                                                  {"processes", c.processes}}},
                            {"meta", unit.meta},
                            {"deps", JsonStrings(unit.deps)}});
}

std::optional<FatbinResult> ParseFatbinResult(const std::string& text) {
  std::optional<json::Object> o = ParseObject(text);
  if (!o) return std::nullopt;
  return FatbinResult{JsonGetString(*o, "run"), o->getNumber("cpu").value_or(0)};
}

double SelfCpuSeconds() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

std::optional<UnitResult> ParseUnitResult(const std::string& text) {
  std::optional<json::Object> o = ParseObject(text);
  if (!o) return std::nullopt;
  UnitResult r;
  r.run = JsonGetString(*o, "run");
  std::string how = JsonGetString(*o, "how");
  r.unit.how = how == "compiled"  ? CompiledUnit::How::kCompiled
               : how == "cache"   ? CompiledUnit::How::kDirectHit
                                  : CompiledUnit::How::kPreprocessedHit;
  r.unit.seconds = o->getNumber("seconds").value_or(0);
  if (const json::Object* c = o->getObject("cost")) {
    r.unit.cost.tool_cpu = c->getNumber("tool_cpu").value_or(0);
    r.unit.cost.compile_cpu = c->getNumber("compile_cpu").value_or(0);
    r.unit.cost.startup_cpu = c->getNumber("startup_cpu").value_or(0);
    r.unit.cost.step_cpu = c->getNumber("step_cpu").value_or(0);
    r.unit.cost.processes = static_cast<int>(c->getInteger("processes").value_or(0));
  }
  r.unit.meta = JsonGetString(*o, "meta");
  r.unit.deps = JsonGetStrings(*o, "deps");
  return r;
}

int RunStep(const std::string& path, ToolRunner& runner) {
  std::optional<std::string> text = ReadFile(path);
  std::optional<json::Object> request = text ? ParseObject(*text) : std::nullopt;
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
