// What CUDA launch attributes and __global__ entries change in generated
// code: the launchers', header's and dispatcher's `int pdl` after the stream
// (pdl: per_call), kpack_launch_ex with its flags and cluster for a kernel
// with attributes and kpack_launch for one without, and the translation
// unit and nvcc flags of a __global__ entry found in its source or on the
// include roots.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "plan.h"
#include "test_util.h"

using kpack::testing::ScratchDir;

namespace {

struct Generated {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  kpack::Plan plan;
  std::string header, launcher;
  std::vector<std::string> include_dirs;  // as LoadOptions got them (absolute)

  const kpack::Specialization& Spec(const std::string& name) const {
    for (const kpack::Specialization& s : specs)
      if (s.name == name) return s;
    FAIL("no specialization " << name);
    return specs.front();
  }
  std::vector<std::string> Flags(const std::string& unit) const {
    for (const kpack::Unit& u : plan.units)
      if (u.name == unit) return u.flags;
    FAIL("no unit " << unit);
    return {};
  }
};

// Loads package.yaml (`kernels`, in `files` with their sources) from a
// scratch directory, with `include_dirs` (relative to it) as -I gives them,
// and generates the header and the launcher source.
Generated Generate(const std::string& package, const std::map<std::string, std::string>& files,
                   const std::vector<std::string>& include_dirs = {}) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  for (const auto& [name, text] : files) dir.Write(name, text);
  Generated g;
  kpack::LoadOptions options;
  for (const std::string& d : include_dirs)
    options.include_dirs.push_back(std::filesystem::absolute(d).lexically_normal().generic_string());
  g.include_dirs = options.include_dirs;
  kpack::Diagnostics diag;
  g.pkg = kpack::LoadPackage("package.yaml", options, diag);
  REQUIRE(diag.Text() == "");
  g.specs = kpack::Expand(*g.pkg, diag);
  REQUIRE(diag.Text() == "");
  kpack::CodegenOptions gen{"package.yaml", "dk.h"};
  g.header = kpack::GenerateHeader(*g.pkg, g.specs, gen);
  g.launcher = kpack::GenerateLauncherSource(*g.pkg, g.specs, gen);
  g.plan = kpack::MakePlan(g.specs, kpack::ToolVersions{"nvcc 13.0 (fake)", ""});
  return g;
}

// The text of `text` from the line that starts with `start` through the
// first line after it that is "}" (a function definition).
std::string Function(const std::string& text, const std::string& start) {
  size_t at = text.find("\n" + start);
  if (at == std::string::npos) return "";
  size_t end = text.find("\n}\n", at);
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end + 2 - at);
}

// The launch statement that ends a typed launcher, from "return".
std::string LaunchCall(const std::string& function) {
  size_t at = function.find("  return kpack_launch");
  return at == std::string::npos ? "" : function.substr(at, function.find(";\n", at) + 2 - at);
}

const char* kSource =
    "#pragma once\n"
    "namespace ns {\n"
    "template <typename T, int B> __global__ void k(T* x, uint32_t n) {}\n"
    "template <int B> __global__ void p(float* x) {}\n"
    "template <int B> __device__ void d(float* x) {}\n"
    "}\n";

// One kernel manifest of entry ns::<entry> over B=128, with `launch` keys
// after grid and block.
std::string Manifest(const std::string& kernel, const std::string& entry, const std::string& launch) {
  return "kernel: " + kernel + "\nsource: k.cuh\nentry: ns::" + entry +
         "\nconstexprs:\n  - {name: B, type: int, values: [128]}\nparams:\n  - {name: x, type: f32*}\n"
         "launch:\n  grid: 1\n  block: [B]\n" + launch;
}

const char* kLaunchHead =
    "(&kpack_spec_N, stream, (uint32_t)kpack_grid[0], (uint32_t)kpack_grid[1], (uint32_t)kpack_grid[2],\n"
    "                      (uint32_t)kpack_block[0], (uint32_t)kpack_block[1], (uint32_t)kpack_block[2],\n"
    "                      (uint32_t)kpack_smem, kpack_args";

// kLaunchHead with the descriptor index `n`.
std::string Head(int n) {
  std::string head = kLaunchHead;
  return head.replace(head.find("N,"), 1, std::to_string(n));
}

}  // namespace

TEST_CASE("pdl: per_call puts int pdl after the stream in launchers, header and dispatcher") {
  Generated g = Generate(
      "package: demo\nprefix: dk\narchs: [sm_90]\nkernels: [k.yaml]\n",
      {{"k.cuh", kSource},
       {"k.yaml",
        "kernel: k\nsource: k.cuh\nentry: ns::k\nconstexprs:\n  - {name: T, type: dtype, values: [f32, f16]}\n"
        "  - {name: B, type: int, values: [128]}\nparams:\n  - {name: x, type: T*}\n  - {name: n, type: u32}\n"
        "launch:\n  grid: n\n  block: [B]\n  pdl: per_call\n"}});
  // The header: typed launchers and the dispatcher.
  CHECK(g.header.find("kpack_status dk_k(kpack_stream stream, int pdl, kpack_dtype T, int B, void *x, uint32_t n);\n") !=
        std::string::npos);
  CHECK(g.header.find("/* k with T=f32, B=128: the kernel ns::k<float, 128>; SASS for sm_90. */\n"
                      "/* pdl: nonzero launches with programmatic dependent launch (PDL). */\n"
                      "kpack_status dk_k_f32_b128(kpack_stream stream, int pdl, float *x, uint32_t n);\n") !=
        std::string::npos);
  CHECK(g.header.find("/* k with T=f16, B=128: the kernel ns::k<__half, 128>; SASS for sm_90. */\n"
                      "/* pdl: nonzero launches with programmatic dependent launch (PDL). */\n"
                      "kpack_status dk_k_f16_b128(kpack_stream stream, int pdl, kpack_f16 *x, uint32_t n);\n") !=
        std::string::npos);

  // The launchers: their definitions match the header, and the call's pdl
  // picks the flag.
  std::string f32 = Function(g.launcher, "kpack_status dk_k_f32_b128(");
  REQUIRE(f32.rfind("kpack_status dk_k_f32_b128(kpack_stream stream, int pdl, float *x, uint32_t n) {\n", 0) == 0);
  CHECK(LaunchCall(f32) == "  return kpack_launch_ex" + Head(0) + ",\n                      (pdl ? KPACK_LAUNCH_PDL : 0u), 0u, 0u, 0u);\n");
  std::string f16 = Function(g.launcher, "kpack_status dk_k_f16_b128(");
  REQUIRE(f16.rfind("kpack_status dk_k_f16_b128(kpack_stream stream, int pdl, kpack_f16 *x, uint32_t n) {\n", 0) == 0);
  CHECK(LaunchCall(f16) == "  return kpack_launch_ex" + Head(1) + ",\n                      (pdl ? KPACK_LAUNCH_PDL : 0u), 0u, 0u, 0u);\n");

  // The dispatcher passes pdl on, right after the stream.
  std::string dispatcher = Function(g.launcher, "kpack_status dk_k(");
  REQUIRE(dispatcher.rfind("kpack_status dk_k(kpack_stream stream, int pdl, kpack_dtype T, int B, void *x, uint32_t n) {\n",
                           0) == 0);
  CHECK(dispatcher.find("return dk_k_f32_b128(stream, pdl, (float *)x, n);") != std::string::npos);
  CHECK(dispatcher.find("return dk_k_f16_b128(stream, pdl, (kpack_f16 *)x, n);") != std::string::npos);
  CHECK(g.launcher.find("kpack_launch(") == std::string::npos);
}

TEST_CASE("launch attributes become kpack_launch_ex's flags and cluster; no attributes keep kpack_launch") {
  Generated g = Generate(
      "package: demo\nprefix: dk\narchs: [sm_90]\nkernels: [all.yaml, plain.yaml, off.yaml, coop.yaml, cl.yaml, "
      "dev.yaml]\n",
      {{"k.cuh", kSource},
       {"all.yaml", Manifest("all", "p", "  pdl: true\n  cluster: [2]\n  cooperative: true\n")},
       {"plain.yaml", Manifest("plain", "p", "")},
       {"off.yaml", Manifest("off", "p", "  pdl: false\n  cooperative: false\n")},
       {"coop.yaml", Manifest("coop", "p", "  cooperative: true\n")},
       {"cl.yaml", Manifest("cl", "p", "  cluster: [\"B / 64\", 2]\n")},
       {"dev.yaml", Manifest("dev", "d", "  pdl: true\n")}});
  const std::string flags = ",\n                      ";
  CHECK(LaunchCall(Function(g.launcher, "kpack_status dk_all_b128(")) ==
        "  return kpack_launch_ex" + Head(0) + flags + "KPACK_LAUNCH_PDL | KPACK_LAUNCH_COOPERATIVE, 2u, 1u, 1u);\n");
  CHECK(LaunchCall(Function(g.launcher, "kpack_status dk_plain_b128(")) == "  return kpack_launch" + Head(1) + ");\n");
  CHECK(LaunchCall(Function(g.launcher, "kpack_status dk_off_b128(")) == "  return kpack_launch" + Head(2) + ");\n");
  CHECK(LaunchCall(Function(g.launcher, "kpack_status dk_coop_b128(")) ==
        "  return kpack_launch_ex" + Head(3) + flags + "KPACK_LAUNCH_COOPERATIVE, 0u, 0u, 0u);\n");
  CHECK(LaunchCall(Function(g.launcher, "kpack_status dk_cl_b128(")) ==
        "  return kpack_launch_ex" + Head(4) + flags + "0u, 2u, 2u, 1u);\n");
  // A __device__ entry (kpack's own extern "C" wrapper) launches alike.
  CHECK(LaunchCall(Function(g.launcher, "kpack_status dk_dev_b128(")) ==
        "  return kpack_launch_ex" + Head(5) + flags + "KPACK_LAUNCH_PDL, 0u, 0u, 0u);\n");
  // Only per_call adds a parameter.
  CHECK(g.header.find("int pdl") == std::string::npos);
  CHECK(g.header.find("kpack_status dk_all_b128(kpack_stream stream, float *x);\n") != std::string::npos);
}

TEST_CASE("a __global__ entry's translation unit is an explicit instantiation") {
  Generated g = Generate("package: demo\nprefix: dk\narchs: [sm_80, sm_90]\nkernels: [k.yaml]\n",
                         {{"src/k.cuh", kSource},
                          {"k.yaml",
                           "kernel: k\nsource: src/k.cuh\nentry: ns::k\nconstexprs:\n"
                           "  - {name: T, type: dtype, values: [bf16]}\n  - {name: B, type: int, values: [256]}\n"
                           "params:\n  - {name: x, type: T*}\n  - {name: n, type: u32}\n"
                           "launch:\n  grid: n\n  block: [B]\n"}});
  const kpack::Specialization& s = g.Spec("k_bf16_b256");
  CHECK(s.kernel->global_entry);
  CHECK(kpack::InstanceName(s) == "ns::k<__nv_bfloat16, 256>");
  CHECK(kpack::InstantiationSource(s) ==
        "// Generated by kpack: k with T=bf16, B=256.\n"
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n#include <type_traits>\n"
        "#include \"k.cuh\"\n\n"
        "static_assert(std::is_same<decltype(&ns::k<__nv_bfloat16, 256>), void (*)(__nv_bfloat16*, uint32_t)>::value,\n"
        "              \"kpack: ns::k<__nv_bfloat16, 256> must be a __global__ function taking exactly "
        "(__nv_bfloat16* x, uint32_t n), as the manifest's params say\");\n\n"
        "// kpack: the __global__ template found at src/k.cuh:3:46.\n"
        "template __global__ void ns::k<__nv_bfloat16, 256>(__nv_bfloat16*, uint32_t);\n");
  // The source's directory is the include path, as for a __device__ entry.
  CHECK(g.Flags("k_bf16_b256.sm_90") ==
        std::vector<std::string>{"-cubin", "-arch=sm_90", "-O3", "-std=c++17", "-Isrc"});
}

TEST_CASE("a source on the include roots is included as <...>, and the roots, not its directory, are -I") {
  Generated g = Generate(
      "package: demo\nprefix: dk\narchs: [sm_90]\ninclude_dirs: [vendor]\nkernels: [k.yaml, q.yaml]\n",
      {{"roots/a/lib/x.cuh", std::string(kSource) + "namespace ns { inline float silu(const float& v) { return v; } }\n"
                             "namespace ns { template <float (*F)(const float&), int V> __global__ void act(float*) {} }\n"},
       {"vendor/keep", ""},
       {"q.cuh", kSource},
       {"k.yaml",
        "kernel: k\nsource: <lib/x.cuh>\nentry: ns::act\nconstexprs:\n"
        "  - {name: F, type: cpp, values: [ns::silu]}\n  - {name: V, type: int, values: [8]}\n"
        "params:\n  - {name: x, type: f32*}\nlaunch:\n  grid: 1\n  block: [128]\n"},
       {"q.yaml",
        "kernel: q\nsource: q.cuh\nentry: ns::p\nconstexprs:\n  - {name: B, type: int, values: [64]}\n"
        "params:\n  - {name: x, type: f32*}\nlaunch:\n  grid: 1\n  block: [B]\n"}},
      {"roots/a", "roots/b"});
  REQUIRE(g.include_dirs.size() == 2);
  const std::string a = g.include_dirs[0], b = g.include_dirs[1];
  const kpack::Specialization& s = g.Spec("k_silu_v8");
  CHECK(s.kernel->global_entry);
  CHECK(kpack::InstantiationSource(s) ==
        "// Generated by kpack: k with F=ns::silu, V=8.\n"
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n#include <type_traits>\n"
        "#include <lib/x.cuh>\n\n"
        "static_assert(std::is_same<decltype(&ns::act<ns::silu, 8>), void (*)(float*)>::value,\n"
        "              \"kpack: ns::act<ns::silu, 8> must be a __global__ function taking exactly (float* x), as the "
        "manifest's params say\");\n\n"
        "// kpack: the __global__ template found at " + a + "/lib/x.cuh:8:75.\n"
        "template __global__ void ns::act<ns::silu, 8>(float*);\n");
  // -I roots in order (-I, then include_dirs:), and not lib/'s directory.
  CHECK(g.Flags("k_silu_v8.sm_90") ==
        std::vector<std::string>{"-cubin", "-arch=sm_90", "-O3", "-std=c++17", "-I" + a, "-I" + b, "-Ivendor"});
  // A source beside its manifest: its directory first, then the roots.
  CHECK(g.Flags("q_b64.sm_90") ==
        std::vector<std::string>{"-cubin", "-arch=sm_90", "-O3", "-std=c++17", "-I.", "-I" + a, "-I" + b, "-Ivendor"});
  CHECK(kpack::InstantiationSource(g.Spec("q_b64")).find("#include \"q.cuh\"\n") != std::string::npos);
}
