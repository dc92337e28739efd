// kpack - an ahead-of-time GPU kernel packager.  main() only parses the
// command line and dispatches to a subcommand; the work is in build.cc.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "build.h"
#include "model.h"
#include "inspect.h"
#include "step.h"
#include "toolchain.h"
#include "tune_command.h"
#include "version.h"

namespace {

constexpr const char* kVersion = kpack::kKpackVersion;

int Usage(std::ostream& out, int code);

// triton_helper.py beside the kpack executable (the build tree copies it
// there), else where `meson install` and the release archive put it:
// ../share/kpack/triton from the executable's directory, found through
// /proc/self/exe, so a symlinked or moved prefix works and Make and CMake
// need no --triton-helper.  The installed path is returned even when it is
// missing: a Triton package then names it (build.cc), a CUDA one never
// needs it.
std::string DefaultTritonHelper() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "triton_helper.py";
  std::filesystem::path beside = exe.parent_path() / "triton_helper.py";
  if (std::filesystem::exists(beside, ec)) return beside.string();
  return (exe.parent_path().parent_path() / "share" / "kpack" / "triton" / "triton_helper.py").string();
}

// Parses `--name value` / `--name=value` options of build and header.
bool ParseBuildArgs(const std::vector<std::string>& args, kpack::BuildOptions& o, std::string& error) {
  struct Flag {
    const char* name;
    std::string* value;
  };
  std::string jobs, job_memory, triton_timeout, batch;
  std::vector<Flag> flags = {
      {"--header", &o.header_out},     {"--launcher", &o.launcher_out}, {"--asm", &o.asm_out},
      {"--work-dir", &o.work_dir},     {"--cache-dir", &o.cache_dir},   {"--depfile", &o.depfile_out},
      {"--root", &o.root},             {"--cuda-root", &o.cuda_root},   {"--archs", &o.archs},
      {"--compress-mode", &o.compress_mode}, {"--python", &o.python},
      {"--triton-helper", &o.triton_helper}, {"--inventory", &o.inventory_out}, {"--tuner", &o.tuner_out},
      {"-j", &jobs},
      {"--ninja", &o.ninja},           {"--nvcc-launcher", &o.nvcc_launcher}, {"--job-memory", &job_memory},
      {"--triton-timeout", &triton_timeout}, {"--batch", &batch}};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--perf") { o.perf = true; continue; }
    if (a == "-v" || a == "--verbose") { o.verbose = true; continue; }
    if (a == "--quiet") { o.quiet = true; continue; }
    if (a == "--allow-debug-kernels") { o.allow_debug_kernels = true; continue; }
    if (a == "--allow-outside-root") { o.allow_outside_root = true; continue; }
    if (a == "--allow-stale-tuning") { o.allow_stale_tuning = true; continue; }
    // Repeatable: each adds a directory.
    if (a == "--python-path" || a.rfind("--python-path=", 0) == 0) {
      if (a == "--python-path" && i + 1 >= args.size()) { error = "--python-path needs a value"; return false; }
      o.python_path.push_back(a == "--python-path" ? args[++i] : a.substr(std::string("--python-path=").size()));
      continue;
    }
    // Repeatable: an include root of header-only libraries, -I DIR or -IDIR.
    if (a.rfind("-I", 0) == 0) {
      if (a == "-I" && i + 1 >= args.size()) { error = "-I needs a directory"; return false; }
      o.include_dirs.push_back(a == "-I" ? args[++i] : a.substr(2));
      continue;
    }
    bool matched = false;
    for (Flag& f : flags) {
      std::string name = f.name;
      if (a == name) {
        if (i + 1 >= args.size()) { error = name + " needs a value"; return false; }
        *f.value = args[++i];
        matched = true;
      } else if (a.rfind(name + "=", 0) == 0) {
        *f.value = a.substr(name.size() + 1);
        matched = true;
      }
      if (matched) break;
    }
    if (matched) continue;
    if (!a.empty() && a[0] == '-') { error = "unknown option " + a; return false; }
    if (!o.package_path.empty()) { error = "more than one package file given"; return false; }
    o.package_path = a;
  }
  if (!jobs.empty()) {
    char* end = nullptr;
    long n = std::strtol(jobs.c_str(), &end, 10);
    if (*end != '\0' || n < 0 || n > 4096) { error = "-j takes a number of jobs"; return false; }
    o.jobs = static_cast<int>(n);
  }
  if (!job_memory.empty()) {
    char* end = nullptr;
    long long mib = std::strtoll(job_memory.c_str(), &end, 10);
    if (*end != '\0' || mib < 1) { error = "--job-memory takes MiB per unit job, e.g. 2048"; return false; }
    o.job_memory_mib = mib;
  }
  if (!batch.empty()) {
    char* end = nullptr;
    long n = std::strtol(batch.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > kpack::kMaxBatch) {
      error = "--batch takes specializations per nvcc run, from 1 to " + std::to_string(kpack::kMaxBatch);
      return false;
    }
    o.batch = static_cast<int>(n);
  }
  if (!triton_timeout.empty()) {
    char* end = nullptr;
    long seconds = std::strtol(triton_timeout.c_str(), &end, 10);
    if (*end != '\0' || seconds < 1 || seconds > 86400) {
      error = "--triton-timeout takes seconds per Triton compile, from 1 to 86400";
      return false;
    }
    o.triton_timeout_s = static_cast<int>(seconds);
  }
  if (o.package_path.empty()) { error = "no package file given"; return false; }
  if (o.triton_helper.empty()) o.triton_helper = DefaultTritonHelper();
  if (o.header_out.empty()) { error = "--header is required"; return false; }
  if (!o.header_only && (o.launcher_out.empty() || o.asm_out.empty() || o.work_dir.empty())) {
    error = "--launcher, --asm and --work-dir are required";
    return false;
  }
  const std::vector<std::string> modes = {"", "none", "speed", "balance", "size", "default"};
  if (std::find(modes.begin(), modes.end(), o.compress_mode) == modes.end()) {
    error = "--compress-mode takes none, speed, balance, size or default";
    return false;
  }
  return true;
}

int RunBuildCommand(const std::vector<std::string>& args, bool header_only) {
  kpack::BuildOptions o;
  o.header_only = header_only;
  std::string error;
  if (!ParseBuildArgs(args, o, error)) {
    std::cerr << "kpack: error: " << error << "\n";
    return 2;
  }
  kpack::ProcessRunner runner;
  return kpack::RunBuild(o, runner, std::cerr);
}

// Parses the options of `kpack tune` (docs/tuning.md).
bool ParseTuneArgs(const std::vector<std::string>& args, kpack::TuneOptions& o, std::string& error) {
  std::string repeats, device;
  std::vector<std::pair<const char*, std::string*>> flags = {
      {"--tuner", &o.tuner},   {"-o", &o.out_dir},           {"--report", &o.report_path},
      {"--repeats", &repeats}, {"--device", &device},         {"--driver", &o.driver},
      {"--root", &o.root},     {"--python", &o.python},       {"--triton-helper", &o.triton_helper}};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--perf") { o.perf = true; continue; }
    if (a == "--allow-outside-root") { o.allow_outside_root = true; continue; }
    // Repeatable.
    std::vector<std::string>* list = a == "--kernel" ? &o.kernels : a == "--python-path" ? &o.python_path
                                   : a == "-I" ? &o.include_dirs : nullptr;
    if (list) {
      if (i + 1 >= args.size()) { error = a + " needs a value"; return false; }
      list->push_back(args[++i]);
      continue;
    }
    auto flag = std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return a == f.first; });
    if (flag != flags.end()) {
      if (i + 1 >= args.size()) { error = a + " needs a value"; return false; }
      *flag->second = args[++i];
      continue;
    }
    if (!a.empty() && a[0] == '-') { error = "unknown option " + a; return false; }
    if (!o.package_path.empty()) { error = "more than one package file given"; return false; }
    o.package_path = a;
  }
  auto number = [](const std::string& text, long lo, long hi, int* out) {
    char* end = nullptr;
    long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || n < lo || n > hi) return false;
    *out = static_cast<int>(n);
    return true;
  };
  if (!repeats.empty() && !number(repeats, 1, 100000, &o.repeats))
    error = "--repeats takes a number from 1 to 100000";
  else if (!device.empty() && !number(device, 0, 1023, &o.device))
    error = "--device takes a CUDA device ordinal";
  else if (o.package_path.empty())
    error = "no package file given";
  else if (o.tuner.empty())
    error = "--tuner is required: the package's tuning harness (Meson builds it as <prefix>-tune)";
  else if (o.out_dir.empty())
    error = "-o is required: the directory of the tuning file";
  if (!error.empty()) return false;
  if (o.triton_helper.empty()) o.triton_helper = DefaultTritonHelper();
  return true;
}

int Tune(const std::vector<std::string>& args) {
  kpack::TuneOptions o;
  std::string error;
  if (!ParseTuneArgs(args, o, error)) {
    std::cerr << "kpack: error: " << error << "\n";
    return 2;
  }
  o.tty = isatty(STDERR_FILENO) == 1;
  kpack::ProcessTunerRunner runner;
  return kpack::RunTune(o, runner, std::cerr);
}

// One Ninja edge of a build (step.h); not for people to call.
int Step(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "kpack: error: step takes one request file\n";
    return 2;
  }
  kpack::ProcessRunner runner;
  return kpack::RunStep(args[0], runner);
}

int Build(const std::vector<std::string>& args) { return RunBuildCommand(args, false); }
int InspectCommand(const std::vector<std::string>& args) { return kpack::RunInspect(args, std::cout, std::cerr); }
int Header(const std::vector<std::string>& args) { return RunBuildCommand(args, true); }
int Version(const std::vector<std::string>&) {
  std::cout << "kpack " << kVersion << "\n";
  return 0;
}
int Help(const std::vector<std::string>&) { return Usage(std::cout, 0); }

struct Subcommand {
  const char* name;
  int (*run)(const std::vector<std::string>&);
  const char* help;
};

constexpr Subcommand kSubcommands[] = {
    {"build", Build, "compile a package into header, launchers and embedded fatbins"},
    {"header", Header, "generate only the C header (no CUDA toolkit needed)"},
    {"step", Step, "run one unit or fatbin of a build (Ninja runs this)"},
    {"inspect", InspectCommand, "list what a libkernels.a, .fatbin or .cubin holds, or the decision\n"
                                "            tables of an inventory (kernels.json) (--json)"},
    {"tune", Tune, "time every tuned kernel's builds on this GPU; write a tuning file"},
    {"version", Version, "print the version"},
    {"help", Help, "print this help"},
};

int Usage(std::ostream& out, int code) {
  out << "usage: kpack <command> [options]\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands) out << "  " << c.name << std::string(10 - std::strlen(c.name), ' ') << c.help << "\n";
  out << "\nbuild options:\n"
         "  PACKAGE.yaml            the package file\n"
         "  --header FILE           the generated C header\n"
         "  --launcher FILE         the generated launcher source (build)\n"
         "  --asm FILE              the generated .S embedding the fatbins (build)\n"
         "  --work-dir DIR          translation units, cubins and fatbins (build)\n"
         "  --cache-dir DIR         unit cache, shareable (default WORK/cache)\n"
         "  --depfile FILE          write a Make depfile for Ninja\n"
         "  --inventory FILE        write the JSON inventory of the package (build)\n"
         "  --tuner FILE.c          write the tables of the package's tuning harness\n"
         "                          (kpack tune; docs/tuning.md)\n"
         "  --allow-debug-kernels   a development build: accept debug kernels that no\n"
         "                          manifest allows (release builds refuse them)\n"
         "  --root DIR              project root (default .): manifests and sources must\n"
         "                          lie inside it; the header banner names paths from it\n"
         "  --allow-outside-root    let manifests name files outside the project root\n"
         "  --allow-stale-tuning    a tuning file whose kernel's manifest changed since\n"
         "                          kpack tune is a warning, and the rules decide there\n"
         "  --cuda-root DIR         CUDA Toolkit (default /usr/local/cuda)\n"
         "  --archs LIST            override archs, e.g. sm_80,sm_90\n"
         "  --compress-mode MODE    fatbinary compression: none|speed|balance|size\n"
         "  --python PATH           Python with Triton, for Triton kernels (default python3)\n"
         "  --triton-helper PATH    triton_helper.py (default: beside kpack, else\n"
         "                          ../share/kpack/triton/ from kpack's directory)\n"
         "  --triton-timeout SEC    kill a Triton compile after SEC seconds and retry it\n"
         "                          once (default 600; KPACK_TRITON_TIMEOUT)\n"
         "  --python-path DIR       where Triton kernels' packages are (module: in a\n"
         "                          manifest); repeatable, searched first\n"
         "  -I DIR                  include root of header-only libraries (FlashInfer,\n"
         "                          CUTLASS): source: <x.cuh> and #include find them;\n"
         "                          repeatable, searched before include_dirs:\n"
         "  -j N                    units compiled at once (default: cores, within memory)\n"
         "  --job-memory MIB        memory per unit job, for the default -j (2048)\n"
         "  --batch N               specializations of a CUDA kernel per nvcc run, for every kernel\n"
         "                          (default: the manifests' batch:, else 8; 1 compiles each alone)\n"
         "  --ninja PATH            Ninja, which runs the units (default ninja; none: threads)\n"
         "  --nvcc-launcher PROG    run nvcc through ccache or sccache\n"
         "  --quiet                 no progress line\n"
         "  -v                      print unit counts\n"
         "  --perf                  print the time of each pass\n"
         "\ntune options (kpack tune PACKAGE.yaml --tuner TUNER -o DIR; docs/tuning.md):\n"
         "  --tuner PATH            the package's tuning harness (Meson: <prefix>-tune)\n"
         "  -o DIR                  write DIR/<gpu>.yaml (the tuning file) and DIR/<gpu>.html\n"
         "  --kernel NAME           tune only this kernel; repeatable (default: every kernel\n"
         "                          with a tune: section)\n"
         "  --repeats N             timed batches per measurement, whose median counts (25)\n"
         "  --device N              the CUDA device to tune on (0)\n"
         "  --report FILE.html      the report elsewhere (default DIR/<gpu>.html)\n"
         "  --root, --allow-outside-root, --python, --triton-helper, --python-path, -I:\n"
         "                          load the package as kpack build does\n"
         "  --perf                  print the time of each step\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(std::cerr, 2);
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Subcommand& c : kSubcommands)
    if (std::strcmp(argv[1], c.name) == 0) return c.run(args);
  if (std::strcmp(argv[1], "--version") == 0) return Version(args);
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) return Help(args);
  std::cerr << "kpack: error: unknown command '" << argv[1] << "'\n";
  return Usage(std::cerr, 2);
}
