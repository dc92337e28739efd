// `kpack tune` (tune_command.cc) against a fake tuner: the check of --list
// against the manifests, the reading of --run's lines, the progress, the
// files written, and every error, word for word, with nothing written.
// tests/e2e/tune.sh runs a real harness against the fake driver.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "expand.h"
#include "fs_util.h"
#include "manifest.h"
#include "test_util.h"
#include "tune_command.h"
#include "tuner_gen.h"
#include "tuning_reader.h"

using kpack::testing::Replace;
using kpack::testing::ScratchDir;

namespace {

const char* kTunePackage = "package: tiny\narchs: [sm_90]\nkernels: [scale.yaml]\n";
const char* kScale =
    "kernel: scale\n"
    "source: scale.cuh\n"
    "entry: scale\n"
    "constexprs:\n"
    "  - {name: T, type: dtype, values: [f32, f16]}\n"
    "  - {name: BLOCK, type: int, values: [64, 256], tag: b, auto: \"n < 4096 ? 64 : 256\"}\n"
    "params:\n"
    "  - {name: x, type: T*}\n"
    "  - {name: n, type: i64}\n"
    "launch:\n"
    "  grid: \"cdiv(n, BLOCK)\"\n"
    "  block: [BLOCK]\n"
    "tune:\n"
    "  key: [n]\n"
    "  shapes: {n: [256, 16384]}\n"
    "  buffers: {x: n}\n";

// What a harness built from these manifests says to --list: the grid
// n: [256, 16384] has one probe shape (n=2064), and scale, a CUDA kernel,
// no unaligned variant.
std::string ListOutput(const std::string& hash, const std::string& package = "tiny",
                       const std::string& probes = "\"probes\":[[2064]],\"probe_shapes\":1,\"unaligned\":false") {
  return "{\"package\":{\"name\":\"" + package +
         "\",\"kpack_version\":\"0.1.0\",\"tune_abi\":1}}\n"
         "{\"kernel\":{\"name\":\"scale\",\"hash\":\"" +
         hash +
         "\",\"key\":[\"n\"],\"grid\":[[256,16384]],\"shapes\":2," + probes +
         ",\"tuned\":[\"BLOCK\"],\"combos\":[\"T=f32\",\"T=f16\"],\"candidates\":[\"BLOCK=64\",\"BLOCK=256\"],"
         "\"work\":12}}\n"
         "{\"done\":{\"kernels\":1,\"work\":12}}\n";
}

// A result line; `variant` -1: without "variant" (as 0).
std::string Result(int combo, int shape, int candidate, double us, int variant = -1,
                   const std::string& kernel = "scale") {
  std::ostringstream out;
  out << "{\"result\":{\"kernel\":\"" << kernel << "\",\"combo\":" << combo << ",\"shape\":" << shape;
  if (variant >= 0) out << ",\"variant\":" << variant;
  out << ",\"candidate\":" << candidate << ",\"us\":" << us << ",\"launches\":40}}\n";
  return out.str();
}

std::string Device(int work) {
  return "{\"device\":{\"name\":\"NVIDIA H100 80GB HBM3\",\"ordinal\":0,\"sm\":90,\"driver\":\"580.159.04 (CUDA "
         "13.0)\",\"l2_bytes\":52428800,\"num_sms\":132,\"free_bytes\":1000000,\"total_bytes\":2000000,\"repeats\":25,"
         "\"work\":" +
         std::to_string(work) + "}}\n";
}

// A whole --run: BLOCK=64 wins at n=256, BLOCK=256 at n=16384 and at the
// probe, n=2064 (shape 2).
std::string RunOutput() {
  std::string out = Device(12);
  for (int m = 0; m < 2; ++m)
    for (int s = 0; s < 3; ++s) {
      out += "{\"progress\":{\"kernel\":\"scale\",\"combo\":" + std::to_string(m) + ",\"shape\":" + std::to_string(s) +
             "}}\n";
      out += Result(m, s, 0, s == 0 ? 2.1 : s == 1 ? 4.6 : 3.0);
      out += Result(m, s, 1, s == 0 ? 2.3 : s == 1 ? 2.9 : 2.7);
    }
  return out + "{\"done\":{\"results\":12}}\n";
}

class FakeTuner : public kpack::TunerRunner {
 public:
  kpack::ToolResult Run(const std::vector<std::string>& argv) override {
    calls.push_back(argv);
    kpack::ToolResult r;
    const bool list = argv.size() > 1 && argv[1] == "--list";
    r.exit_code = list ? list_exit : run_exit;
    r.output = list ? list_output : run_output;
    return r;
  }
  std::string list_output, run_output;
  int list_exit = 0, run_exit = 0;
  std::vector<std::vector<std::string>> calls;
};

// A scratch project with the tiny package; Hash() is its kernel's hash.
class Project {
 public:
  Project() {
    dir_.Write("kpack.yaml", kTunePackage);
    dir_.Write("scale.yaml", kScale);
    dir_.Write("scale.cuh", "// never compiled\n");
    options.package_path = "kpack.yaml";
    options.tuner = "build/tiny-tune";
    options.out_dir = "tuning";
  }
  std::string Hash() {
    kpack::Diagnostics diag;
    std::optional<kpack::Package> pkg = kpack::LoadPackage("kpack.yaml", {}, diag);
    REQUIRE(diag.Text() == "");
    std::vector<kpack::Specialization> specs = kpack::Expand(*pkg, diag);
    return kpack::TuneLayouts(*pkg, specs).at(0).hash;
  }
  // Runs kpack tune with the fake; its stderr.
  std::string Tune(FakeTuner& tuner, int* rc) {
    std::ostringstream err;
    double now = 0;
    *rc = kpack::RunTune(options, tuner, err, [&now]() { return now += 0.75; });
    return err.str();
  }
  bool Written() const {
    return std::filesystem::exists("tuning/nvidia-h100-80gb-hbm3.yaml") ||
           std::filesystem::exists("tuning/nvidia-h100-80gb-hbm3.html") || std::filesystem::exists("tuning");
  }
  kpack::TuneOptions options;

 private:
  ScratchDir dir_;
};

}  // namespace

TEST_CASE("kpack tune: checks the tuner, runs it, writes the tuning file and the report") {
  Project p;
  FakeTuner tuner;
  tuner.list_output = ListOutput(p.Hash());
  tuner.run_output = RunOutput();
  int rc = -1;
  const std::string err = p.Tune(tuner, &rc);
  INFO(err);
  REQUIRE(rc == 0);
  REQUIRE(tuner.calls.size() == 2);
  CHECK(tuner.calls[0] == std::vector<std::string>{"build/tiny-tune", "--list"});
  CHECK(tuner.calls[1] == std::vector<std::string>{"build/tiny-tune", "--run", "--repeats", "25", "--device", "0"});
  std::optional<std::string> yaml = kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.yaml");
  REQUIRE(yaml);
  CHECK(*yaml ==
        "# Written by `kpack tune` from kpack.yaml; run it again rather than editing (docs/tuning.md).\n"
        "# us: median microseconds per launch; best: the fastest; margin: the runner-up's time over best's.\n"
        "kpack_tuning: 1\npackage: tiny\ngpu: NVIDIA H100 80GB HBM3\nsm: 90\ndriver: \"580.159.04 (CUDA 13.0)\"\n"
        "kpack_version: 0.1.0\nrepeats: 25\nkernels:\n"
        "  - kernel: scale\n    manifest_hash: " + p.Hash() + "\n    key: [n]\n    shapes: {n: [256, 16384]}\n"
        "    tuned: [BLOCK]\n    tables:\n"
        "      - for: {T: f32}\n        results:\n"
        "          - {n: 256, best: \"BLOCK=64\", margin: 1.095, us: {\"BLOCK=64\": 2.1, \"BLOCK=256\": 2.3}}\n"
        "          - {n: 16384, best: \"BLOCK=256\", margin: 1.586, us: {\"BLOCK=64\": 4.6, \"BLOCK=256\": 2.9}}\n"
        "        probes:\n"
        "          - {n: 2064, best: \"BLOCK=256\", margin: 1.111, us: {\"BLOCK=64\": 3, \"BLOCK=256\": 2.7}}\n"
        "      - for: {T: f16}\n        results:\n"
        "          - {n: 256, best: \"BLOCK=64\", margin: 1.095, us: {\"BLOCK=64\": 2.1, \"BLOCK=256\": 2.3}}\n"
        "          - {n: 16384, best: \"BLOCK=256\", margin: 1.586, us: {\"BLOCK=64\": 4.6, \"BLOCK=256\": 2.9}}\n"
        "        probes:\n"
        "          - {n: 2064, best: \"BLOCK=256\", margin: 1.111, us: {\"BLOCK=64\": 3, \"BLOCK=256\": 2.7}}\n");
  std::optional<std::string> html = kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.html");
  REQUIRE(html);
  CHECK(html->find("<h3>scale T=f16</h3>") != std::string::npos);
  // Not a terminal: a line at the start, then one every 2 s at most (the
  // fake clock advances 0.75 s a reading), the end.
  CHECK(err ==
        "kpack: tune: NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04 (CUDA 13.0)): 12 measurements of 1 kernel\n"
        "kpack: tune: 0/12 (0%)\n"
        "kpack: tune: 2/12 (16%) scale T=f32 at n=256, about 15s left\n"
        "kpack: tune: 4/12 (33%) scale T=f32 at n=16384, about 11s left\n"
        "kpack: tune: 6/12 (50%) scale T=f32 at n=2064, about 8s left\n"
        "kpack: tune: 8/12 (66%) scale T=f16 at n=256, about 5s left\n"
        "kpack: tune: 10/12 (83%) scale T=f16 at n=16384, about 2s left\n"
        "kpack: tune: 12/12 (100%) scale T=f16 at n=2064\n"
        "kpack: tune: 12/12 measured in 15.0s\n"
        "kpack: tune: wrote tuning/nvidia-h100-80gb-hbm3.yaml and tuning/nvidia-h100-80gb-hbm3.html\n");
}

TEST_CASE("kpack tune: --kernel, --repeats, --device, --driver and --report reach the tuner and the files") {
  Project p;
  FakeTuner tuner;
  tuner.list_output = ListOutput(p.Hash());
  tuner.run_output = RunOutput();
  p.options.kernels = {"scale"};
  p.options.repeats = 3;
  p.options.device = 1;
  p.options.driver = "fake/libcuda.so";
  p.options.report_path = "report/tune.html";
  p.options.tty = true;
  int rc = -1;
  const std::string err = p.Tune(tuner, &rc);
  INFO(err);
  REQUIRE(rc == 0);
  CHECK(tuner.calls[1] == std::vector<std::string>{"build/tiny-tune", "--run", "--repeats", "3", "--device", "1",
                                                   "--kernel", "scale", "--driver", "fake/libcuda.so"});
  CHECK(std::filesystem::exists("report/tune.html"));
  CHECK(kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.yaml")->find("repeats: 3\n") != std::string::npos);
  // A terminal: one line, redrawn.
  CHECK(err.find("\r\x1b[Kkpack: tune: 0/12 (0%)") != std::string::npos);
  CHECK(err.find("\r\x1b[Kkpack: tune: 12/12 measured in ") != std::string::npos);
}

TEST_CASE("kpack tune --kernel: merges into the GPU's tuning file, keeping its other kernels byte for byte") {
  Project p;
  FakeTuner tuner;
  tuner.list_output = ListOutput(p.Hash());
  tuner.run_output = RunOutput();
  int rc = -1;
  REQUIRE(p.Tune(tuner, &rc).find("kpack: tune: wrote tuning/nvidia-h100-80gb-hbm3.yaml and ") != std::string::npos);
  const std::string whole = *kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.yaml");
  // Another kernel's entry (say from a package that had it), after scale's.
  const std::string other = "  - kernel: gather\n    manifest_hash: 0123456789abcdef\n    key: [n]\n"
                            "    shapes: {n: [8]}\n    tuned: [TILE]\n    tables:\n";
  REQUIRE(kpack::WriteFileAtomic("tuning/nvidia-h100-80gb-hbm3.yaml", whole + other) == "");
  p.options.kernels = {"scale"};
  tuner.run_output = Replace(RunOutput(), "\"us\":2.9,", "\"us\":2.5,");
  const std::string err = p.Tune(tuner, &rc);
  INFO(err);
  REQUIRE(rc == 0);
  CHECK(err.find("kpack: tune: wrote tuning/nvidia-h100-80gb-hbm3.yaml (its other kernels kept: gather) and "
                 "tuning/nvidia-h100-80gb-hbm3.html\n") != std::string::npos);
  const std::string merged = *kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.yaml");
  CHECK(merged == Replace(Replace(whole, "\"BLOCK=256\": 2.9}", "\"BLOCK=256\": 2.5}"), "margin: 1.586",
                          "margin: 1.840") + other);
  // A file of another package is not merged into, and stays.
  REQUIRE(kpack::WriteFileAtomic("tuning/nvidia-h100-80gb-hbm3.yaml", Replace(merged, "package: tiny", "package: big")) ==
          "");
  CHECK(p.Tune(tuner, &rc).find("tuning/nvidia-h100-80gb-hbm3.yaml:4:1: error: this tuning file is for package 'big', "
                                "and this run tuned package 'tiny'; tune every kernel (without --kernel) to write it "
                                "anew, or write elsewhere (-o)\n") != std::string::npos);
  CHECK(rc == 1);
  CHECK(*kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.yaml") == Replace(merged, "package: tiny", "package: big"));
}

TEST_CASE("kpack tune: a tuner built from other manifests is refused") {
  Project p;
  FakeTuner tuner;
  tuner.list_output = ListOutput("0123456789abcdef");
  int rc = -1;
  std::string err = p.Tune(tuner, &rc);
  CHECK(rc == 1);
  CHECK(err ==
        "kpack: error: the tuner build/tiny-tune was built from other manifests than kpack.yaml: scale's manifest "
        "hash is 0123456789abcdef in the tuner and " +
            p.Hash() +
            " in scale.yaml; rebuild the tuner (e.g. "
            "meson compile -C build tiny-tune) and run kpack tune again\n");
  CHECK(tuner.calls.size() == 1);  // never --run
  CHECK(!p.Written());

  tuner.list_output = ListOutput(p.Hash(), "other");
  err = p.Tune(tuner, &rc);
  CHECK(err ==
        "kpack: error: the tuner build/tiny-tune was built for package other, not tiny (kpack.yaml); rebuild the "
        "tuner (e.g. meson compile -C build tiny-tune) and run kpack tune again\n");

  // Other probes, or an unaligned variant the manifests do not have; a
  // tuner from before probes (no probe_shapes).
  const std::string differ =
      "kpack: error: the tuner build/tiny-tune was built from other manifests than kpack.yaml: scale's combinations, "
      "candidates or shapes differ; rebuild the tuner (e.g. meson compile -C build tiny-tune) and run kpack tune "
      "again\n";
  tuner.list_output = ListOutput(p.Hash(), "tiny", "\"probes\":[[2064, 4096]],\"probe_shapes\":2,\"unaligned\":false");
  CHECK(p.Tune(tuner, &rc) == differ);
  tuner.list_output = ListOutput(p.Hash(), "tiny", "\"probes\":[[2064]],\"probe_shapes\":1,\"unaligned\":true");
  CHECK(p.Tune(tuner, &rc) == differ);
  tuner.list_output = ListOutput(p.Hash(), "tiny", "\"probe_count\":1");
  CHECK(p.Tune(tuner, &rc) == differ);

  tuner.list_output =
      "{\"package\":{\"name\":\"tiny\"}}\n{\"kernel\":{\"name\":\"other\",\"hash\":\"x\"}}\n{\"done\":{}}\n";
  err = p.Tune(tuner, &rc);
  CHECK(
      err ==
      "kpack: error: the tuner build/tiny-tune was built from other manifests than kpack.yaml: it has no kernel "
      "scale; it tunes other, which kpack.yaml does not; rebuild the tuner (e.g. meson compile -C build tiny-tune) and "
      "run kpack tune again\n");
  CHECK(!p.Written());
}

TEST_CASE("kpack tune: the tuner's errors, and output it should not print, write nothing") {
  Project p;
  FakeTuner tuner;
  tuner.list_output = ListOutput(p.Hash());
  const std::string device = RunOutput().substr(0, RunOutput().find('\n') + 1);
  int rc = -1;

  SECTION("an error line, such as no SASS for the device, is passed on") {
    tuner.run_output = device +
                       "{\"error\":\"scale T=f32 BLOCK=64 at n=256: tiny_scale() returned "
                       "KPACK_ERROR_NO_BINARY_FOR_DEVICE: scale_f32_b64: device 0 is sm_80; this library has SASS "
                       "for sm_90 and no PTX\",\"status\":\"KPACK_ERROR_NO_BINARY_FOR_DEVICE\"}\n";
    tuner.run_exit = 1;
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: scale T=f32 BLOCK=64 at n=256: tiny_scale() returned KPACK_ERROR_NO_BINARY_FOR_DEVICE: "
          "scale_f32_b64: device 0 is sm_80; this library has SASS for sm_90 and no PTX\n");
  }
  SECTION("a line that is not the protocol") {
    tuner.run_output = device + "Segmentation fault (core dumped)\n";
    tuner.run_exit = 139;
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune printed a line kpack tune does not understand: Segmentation fault "
          "(core dumped)\n");
  }
  SECTION("an exit without an error line") {
    tuner.run_output = device;
    tuner.run_exit = 3;
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune stopped before it finished (exit code 3)\n");
  }
  SECTION("a signal") {
    tuner.run_output = device;
    tuner.run_exit = 130;
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) == "kpack: error: the tuner build/tiny-tune was killed by signal 2\n");
  }
  SECTION("fewer measurements than it announced") {
    std::string run = RunOutput();
    size_t last = run.rfind("{\"result\"");
    tuner.run_output = run.substr(0, last) + "{\"done\":{\"results\":11}}\n";
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune reported 11 measurements of the 12 it announced\n");
  }
  SECTION("a result of a candidate that was not built, and one twice") {
    tuner.run_output = device + Result(0, 0, 2, 1.0);
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune reported a result of scale for a combination, shape or candidate it "
          "does not have\n");
    tuner.run_output = device + Result(0, 0, 1, 1.0) + Result(0, 0, 1, 1.0);
    err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune reported a second result of scale BLOCK=256 at one shape\n");
    // Shapes 0 and 1 are the grid's, 2 the probe; 3 is none.
    tuner.run_output = device + Result(0, 2, 1, 1.0) + Result(0, 3, 1, 1.0);
    err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune reported a result of scale for a combination, shape or candidate it "
          "does not have\n");
  }
  SECTION("a result of a variant the kernel does not have") {
    // scale has no unaligned variant: variant 0 is fine, 1 is not.
    tuner.run_output = device + Result(0, 0, 1, 1.0, 0) + Result(0, 1, 1, 1.0, 1);
    std::string err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune reported a result of scale for the unaligned variant (variant 1), "
          "which it does not have\n");
    tuner.run_output = device + Result(0, 0, 1, 1.0, 2);
    err = p.Tune(tuner, &rc);
    CHECK(err.substr(err.find("kpack: error:")) ==
          "kpack: error: the tuner build/tiny-tune reported a result of scale for a variant other than 0 (as is) and 1 "
          "(unaligned)\n");
  }
  SECTION("a tuner that cannot run") {
    struct Unstartable : FakeTuner {
      kpack::ToolResult Run(const std::vector<std::string>& argv) override {
        kpack::ToolResult r;
        r.spawn_error = "cannot run " + argv[0] + ": No such file or directory";
        return r;
      }
    } unstartable;
    std::string err = p.Tune(unstartable, &rc);
    CHECK(err == "kpack: error: cannot run the tuner build/tiny-tune: cannot run build/tiny-tune: No such file or "
                 "directory\n");
  }
  CHECK(rc == 1);
  CHECK(!p.Written());
}

TEST_CASE("kpack tune: --kernel and packages without tune: sections") {
  Project p;
  FakeTuner tuner;
  tuner.list_output = ListOutput(p.Hash());
  int rc = -1;
  p.options.kernels = {"nope"};
  CHECK(p.Tune(tuner, &rc) == "kpack: error: --kernel nope: kpack.yaml has no kernel nope\n");
  CHECK(rc == 1);
  CHECK(tuner.calls.empty());

  ScratchDir dir;
  dir.Write("kpack.yaml", kTunePackage);
  std::string scale = kScale;
  dir.Write("scale.yaml", scale.substr(0, scale.find("tune:")));
  dir.Write("scale.cuh", "// never compiled\n");
  kpack::TuneOptions o;
  o.package_path = "kpack.yaml";
  o.tuner = "t";
  o.out_dir = "out";
  std::ostringstream err;
  CHECK(kpack::RunTune(o, tuner, err) == 1);
  CHECK(err.str() == "kpack: error: kpack.yaml has no kernel with a tune: section: nothing to tune\n");
}

TEST_CASE("kpack tune: manifest errors are located") {
  ScratchDir dir;
  dir.Write("kpack.yaml", kTunePackage);
  dir.Write("scale.yaml", kpack::testing::Replace(kScale, "shapes: {n: [256, 16384]}", "shapes: {n: [16384, 256]}"));
  dir.Write("scale.cuh", "// never compiled\n");
  kpack::TuneOptions o;
  o.package_path = "kpack.yaml";
  o.tuner = "t";
  o.out_dir = "out";
  FakeTuner tuner;
  std::ostringstream err;
  CHECK(kpack::RunTune(o, tuner, err) == 1);
  CHECK(err.str().rfind("scale.yaml:15:", 0) == 0);
  CHECK(err.str().find(": error: ") != std::string::npos);
  CHECK(tuner.calls.empty());
}

namespace {

// A Triton kernel whose launcher picks an aligned variant (x is
// `divisibility: auto`): the tuner times each shape twice, as is (variant
// 0) and with x off 16-byte alignment (variant 1).
const char* kTwinPackage = "package: tiny\narchs: [sm_90]\nkernels: [tadd.yaml]\n";
const char* kTwin =
    "kernel: tadd\n"
    "language: triton\n"
    "source: tadd.py\n"
    "entry: tadd\n"
    "constexprs:\n"
    "  - {name: BLOCK, type: int, values: [128, 256], auto: \"n <= 2048 ? 128 : 256\"}\n"
    "params:\n"
    "  - {name: x, type: const f32*, divisibility: auto}\n"
    "  - {name: n, type: i64}\n"
    "launch:\n"
    "  grid: [\"cdiv(n, BLOCK)\"]\n"
    "tune:\n"
    "  key: [n]\n"
    "  shapes: {n: [1024, 65536]}\n"
    "  buffers: {x: n}\n";

// The Triton kernel loaded without its source (nothing here needs it).
struct TwinProject {
  TwinProject() {
    dir.Write("kpack.yaml", kTwinPackage);
    dir.Write("tadd.yaml", kTwin);
    dir.Write("tadd.py", "# never read\n");
    kpack::Diagnostics diag;
    pkg = kpack::LoadPackage("kpack.yaml", {}, diag);
    REQUIRE(pkg);
    specs = kpack::Expand(*pkg, diag);
    REQUIRE(diag.Text() == "");
    options.package_path = "kpack.yaml";
    options.tuner = "build/tiny-tune";
    options.out_dir = "tuning";
  }
  std::string Hash() { return kpack::TuneLayouts(*pkg, specs).at(0).hash; }
  std::string List() {
    return "{\"package\":{\"name\":\"tiny\"}}\n{\"kernel\":{\"name\":\"tadd\",\"hash\":\"" + Hash() +
           "\",\"key\":[\"n\"],\"grid\":[[1024,65536]],\"shapes\":2,\"probes\":[[8208]],\"probe_shapes\":1,"
           "\"unaligned\":true,\"tuned\":[\"BLOCK\"],\"combos\":[\"\"],\"candidates\":[\"BLOCK=128\",\"BLOCK=256\"],"
           "\"work\":12}}\n{\"done\":{\"kernels\":1,\"work\":12}}\n";
  }
  int Tune(FakeTuner& tuner, std::string* err) {
    std::ostringstream out;
    double now = 0;
    const int rc = kpack::TunePackage(*pkg, specs, options, tuner, out, [&now]() { return now += 0.75; });
    *err = out.str();
    return rc;
  }
  ScratchDir dir;
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  kpack::TuneOptions options;
};

}  // namespace

TEST_CASE("kpack tune: a kernel with an unaligned variant gets a table per variant, each with its probes") {
  TwinProject p;
  const std::vector<kpack::TuneLayout> layouts = kpack::TuneLayouts(*p.pkg, p.specs);
  REQUIRE(layouts.size() == 1);
  REQUIRE(layouts[0].unaligned_twin);
  REQUIRE(layouts[0].AllShapes() == 3);
  REQUIRE(layouts[0].ShapeKey(2) == std::vector<int64_t>{8208});
  FakeTuner tuner;
  tuner.list_output = p.List();
  // As is: BLOCK=128 at n=1024 and at the probe, 256 at 65536; unaligned:
  // BLOCK=256 everywhere.
  const double us[2][3][2] = {{{1.0, 1.2}, {5.0, 4.0}, {2.0, 2.5}}, {{1.5, 1.4}, {6.0, 5.0}, {3.0, 2.5}}};
  std::string run = Device(12);
  for (int s = 0; s < 3; ++s)
    for (int v = 0; v < 2; ++v) {
      run += "{\"progress\":{\"kernel\":\"tadd\",\"combo\":0,\"shape\":" + std::to_string(s) +
             ",\"variant\":" + std::to_string(v) + "}}\n";
      for (int c = 0; c < 2; ++c) run += Result(0, s, c, us[v][s][c], v, "tadd");
    }
  tuner.run_output = run + "{\"done\":{\"results\":12}}\n";
  std::string err;
  REQUIRE(p.Tune(tuner, &err) == 0);
  INFO(err);
  // The probe (n=8208) comes after the grid's shapes; each shape as is, then unaligned.
  CHECK(err ==
        "kpack: tune: NVIDIA H100 80GB HBM3 (sm_90, driver 580.159.04 (CUDA 13.0)): 12 measurements of 1 kernel\n"
        "kpack: tune: 0/12 (0%)\n"
        "kpack: tune: 2/12 (16%) tadd at n=1024, about 15s left\n"
        "kpack: tune: 4/12 (33%) tadd at n=1024 (unaligned), about 11s left\n"
        "kpack: tune: 6/12 (50%) tadd at n=65536, about 8s left\n"
        "kpack: tune: 8/12 (66%) tadd at n=65536 (unaligned), about 5s left\n"
        "kpack: tune: 10/12 (83%) tadd at n=8208, about 2s left\n"
        "kpack: tune: 12/12 (100%) tadd at n=8208 (unaligned)\n"
        "kpack: tune: 12/12 measured in 15.0s\n"
        "kpack: tune: wrote tuning/nvidia-h100-80gb-hbm3.yaml and tuning/nvidia-h100-80gb-hbm3.html\n");
  std::optional<std::string> yaml = kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.yaml");
  REQUIRE(yaml);
  CHECK(yaml->substr(yaml->find("kernels:\n")) ==
        "kernels:\n  - kernel: tadd\n    manifest_hash: " + p.Hash() +
            "\n    key: [n]\n    shapes: {n: [1024, 65536]}\n    tuned: [BLOCK]\n    tables:\n"
            "      - for: {}\n        results:\n"
            "          - {n: 1024, best: \"BLOCK=128\", margin: 1.200, us: {\"BLOCK=128\": 1, \"BLOCK=256\": 1.2}}\n"
            "          - {n: 65536, best: \"BLOCK=256\", margin: 1.250, us: {\"BLOCK=128\": 5, \"BLOCK=256\": 4}}\n"
            "        probes:\n"
            "          - {n: 8208, best: \"BLOCK=128\", margin: 1.250, us: {\"BLOCK=128\": 2, \"BLOCK=256\": 2.5}}\n"
            "      - for: {}\n        variant: unaligned\n        results:\n"
            "          - {n: 1024, best: \"BLOCK=256\", margin: 1.071, us: {\"BLOCK=128\": 1.5, \"BLOCK=256\": 1.4}}\n"
            "          - {n: 65536, best: \"BLOCK=256\", margin: 1.200, us: {\"BLOCK=128\": 6, \"BLOCK=256\": 5}}\n"
            "        probes:\n"
            "          - {n: 8208, best: \"BLOCK=256\", margin: 1.200, us: {\"BLOCK=128\": 3, \"BLOCK=256\": 2.5}}\n");
  std::optional<std::string> html = kpack::ReadFile("tuning/nvidia-h100-80gb-hbm3.html");
  REQUIRE(html);
  CHECK(html->find("<h3>tadd (unaligned variant)</h3>") != std::string::npos);
  CHECK(html->find("<caption>Probes: shapes between the grid's values</caption>") != std::string::npos);

  // The build reads the file back: two tables, the second unaligned, each
  // with its probe.
  p.dir.Write("kpack.yaml", std::string(kTwinPackage) + "tuning: [tuning/nvidia-h100-80gb-hbm3.yaml]\n");
  kpack::Diagnostics diag;
  std::optional<kpack::Package> built = kpack::LoadPackage("kpack.yaml", {}, diag);
  REQUIRE(built);
  std::vector<kpack::Specialization> specs = kpack::Expand(*built, diag);
  kpack::CheckTunings(*built, specs, false, diag);
  CHECK(diag.Text() == "");
  const kpack::TunedKernel& tk = built->tunings.at(0).kernels.at(0);
  REQUIRE(tk.tables.size() == 2);
  CHECK(!tk.tables[0].unaligned);
  CHECK(tk.tables[1].unaligned);
  REQUIRE(tk.tables[1].probes.size() == 1);
  CHECK(tk.tables[1].probes[0].at == std::vector<int64_t>{8208});
  CHECK(tk.tables[1].probes[0].ranking == std::vector<std::pair<size_t, double>>{{1, 2.5}, {0, 3.0}});
}

TEST_CASE("kpack tune: results of the unaligned variant are checked as the others") {
  TwinProject p;
  FakeTuner tuner;
  tuner.list_output = p.List();
  tuner.run_output = Device(12) + Result(0, 2, 0, 1.0, 1, "tadd") + Result(0, 2, 0, 1.0, 0, "tadd") +
                     Result(0, 2, 0, 1.0, 1, "tadd");
  std::string err;
  CHECK(p.Tune(tuner, &err) == 1);
  CHECK(err.substr(err.find("kpack: error:")) ==
        "kpack: error: the tuner build/tiny-tune reported a second result of tadd BLOCK=128 at one shape "
        "(unaligned)\n");
  // A tuner built before the unaligned variant was timed.
  tuner.list_output = Replace(p.List(), "\"unaligned\":true", "\"unaligned\":false");
  CHECK(p.Tune(tuner, &err) == 1);
  CHECK(err ==
        "kpack: error: the tuner build/tiny-tune was built from other manifests than kpack.yaml: tadd's combinations, "
        "candidates or shapes differ; rebuild the tuner (e.g. meson compile -C build tiny-tune) and run kpack tune "
        "again\n");
  CHECK(!std::filesystem::exists("tuning"));
}
