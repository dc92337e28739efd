// How failed CUDA units are reported (compile.cc ReportUnitErrors): a
// failure every unit of a kernel shares is shown once, compared with what is
// each unit's own left out (its file, arch, instance and nvcc's [with ...]),
// and kpack's explanation of a __global__ entry taken for a __device__ one,
// or of an explicit instantiation that fits no instance, comes before
// nvcc's text.  The outputs are nvcc 13.0's, as it printed them for these
// translation units.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "compile.h"
#include "expand.h"
#include "plan.h"
#include "test_util.h"

using kpack::testing::ScratchDir;

namespace {

struct Planned {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  kpack::Plan plan;
};

// A kernel ns::k over B=1,2 for sm_80 and sm_90, declared in k.cuh as `decl`.
void PlanKernel(Planned& p, const std::string& decl, const std::string& constexpr_line) {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80, sm_90]\nkernels: [k.yaml]\n");
  dir.Write("k.yaml", "kernel: k\nsource: k.cuh\nentry: ns::k\nconstexprs:\n" + constexpr_line +
                          "params:\n  - {name: out, type: f32*}\n  - {name: n, type: u32}\n"
                          "launch: {grid: 1, block: [32]}\n");
  dir.Write("k.cuh", "#pragma once\nnamespace ns {\n" + decl + "\n}\n");
  kpack::Diagnostics diag;
  p.pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  p.specs = kpack::Expand(*p.pkg, diag);
  REQUIRE(diag.Text() == "");
  p.plan = kpack::MakePlan(p.specs, kpack::ToolVersions{"nvcc 13.0 (fake)", ""});
}

// The error CompileOne returns for unit `u` with nvcc's `output`.
std::string UnitError(const kpack::Unit& u, const std::string& output) {
  return "nvcc failed (exit code 1) for kernel 'k' specialization " + u.spec->name + " (" + u.spec->Describe() +
         ") for " + u.arch.Name() + "\n  command: nvcc -o work/units/" + u.name + ".cubin work/units/" + u.name +
         ".cu\n" + output;
}

std::string Report(const kpack::Plan& plan, const std::vector<std::string>& errors) {
  kpack::Diagnostics diag;
  CHECK_FALSE(kpack::ReportUnitErrors(plan, errors, diag));
  return diag.Text();
}

const char* kMacroKernel =
    "#define KERNEL __global__\n"
    "template <int B>\n"
    "KERNEL void k(float* out, uint32_t n) {}";

// nvcc's output for unit `u` of kMacroKernel: kpack called it from a kernel of its own.
std::string ConfiguredOutput(const kpack::Unit& u) {
  std::string b = std::to_string(u.spec->values[0].integer);
  return "work/units/" + u.name + ".cu(13): error: a __global__ function call must be configured\n"
         "    ns::k<" + b + ">(out, n);\n    ^\n\n"
         "1 error detected in the compilation of \"work/units/" + u.name + ".cu\".\n";
}

}  // namespace

TEST_CASE("a __global__ entry hidden behind a macro: kpack's note first, then nvcc's text, once") {
  Planned p;
  PlanKernel(p, kMacroKernel, "  - {name: B, type: int, values: [1, 2], tag: b}\n");
  REQUIRE_FALSE(p.pkg->kernels[0].global_entry);
  REQUIRE(p.plan.units.size() == 4);
  std::vector<std::string> errors;
  for (const kpack::Unit& u : p.plan.units) errors.push_back(UnitError(u, ConfiguredOutput(u)));
  CHECK(Report(p.plan, errors) ==
        "k.yaml:1:9: error: nvcc failed (exit code 1) for kernel 'k' specialization k_b1 (B=1) for sm_80\n"
        "note: kpack: 'ns::k' is a __global__ function, but kpack found no __global__ declaration of it in k.cuh or "
        "the files it includes (macros are not expanded), so it called it as a __device__ function from a kernel of "
        "its own; declare it with __global__ spelled out\n"
        "  command: nvcc -o work/units/k_b1.sm_80.cubin work/units/k_b1.sm_80.cu\n"
        "work/units/k_b1.sm_80.cu(13): error: a __global__ function call must be configured\n"
        "    ns::k<1>(out, n);\n    ^\n\n"
        "1 error detected in the compilation of \"work/units/k_b1.sm_80.cu\".\n"
        "\n"
        "note: 3 more unit(s) of kernel 'k' failed with the same output: k_b1.sm_90, k_b2.sm_80, k_b2.sm_90\n");
}

TEST_CASE("an explicit instantiation that fits no instance of the template is explained") {
  Planned p;
  PlanKernel(p, "template <typename T>\n__global__ void k(float* out, uint32_t n) {}",
             "  - {name: B, type: int, values: [1, 2], tag: b}\n");
  REQUIRE(p.pkg->kernels[0].global_entry);
  std::vector<std::string> errors;
  for (const kpack::Unit& u : p.plan.units) {
    std::string b = std::to_string(u.spec->values[0].integer);
    errors.push_back(UnitError(
        u, "work/units/" + u.name + ".cu(8): error: cannot determine which instance of function template \"ns::k\" "
           "is intended\n"
           "work/units/" + u.name + ".cu(12): error: no instance of function template \"ns::k\" matches the "
           "specified type\n  template __attribute__((global)) void ns::k<" + b + ">(float*, uint32_t);\n\n"
           "2 errors detected in the compilation of \"work/units/" + u.name + ".cu\".\n"));
  }
  std::string report = Report(p.plan, errors);
  CHECK(report.rfind(
            "k.yaml:1:9: error: nvcc failed (exit code 1) for kernel 'k' specialization k_b1 (B=1) for sm_80\n"
            "note: kpack: the explicit instantiation of the __global__ template 'ns::k' (k.cuh:4:17) failed: its "
            "template parameters must take the manifest's constexprs, in the manifest's order, and its parameters "
            "the manifest's params\n"
            "  command: nvcc -o work/units/k_b1.sm_80.cubin work/units/k_b1.sm_80.cu\n",
            0) == 0);
  CHECK(report.ends_with("\nnote: 3 more unit(s) of kernel 'k' failed with the same output: k_b1.sm_90, k_b2.sm_80, "
                         "k_b2.sm_90\n"));
  CHECK(std::count(report.begin(), report.end(), '\n') == 10);
}

TEST_CASE("the [with ...] of an error inside the template is each unit's own") {
  Planned p;
  PlanKernel(p, "template <typename T>\n__global__ void k(T* out, uint32_t n) {}",
             "  - {name: T, type: dtype, values: [f32, f16]}\n");
  std::vector<std::string> errors;
  for (const kpack::Unit& u : p.plan.units) {
    std::string t = u.spec->name == "k_f32" ? "float" : "__half";
    errors.push_back(UnitError(
        u, "k.cuh(4): error: static assertion failed with \"two bytes\"\n"
           "          detected during instantiation of \"void ns::k(T *, uint32_t) [with T=" + t + "]\" at line 12 "
           "of work/units/" + u.name + ".cu\n\n1 error detected in the compilation of \"work/units/" + u.name +
           ".cu\".\n"));
  }
  std::string report = Report(p.plan, errors);
  CHECK(report.find("note: kpack:") == std::string::npos);  // nothing kpack can explain
  CHECK(report.ends_with(
      "note: 3 more unit(s) of kernel 'k' failed with the same output: k_f32.sm_90, k_f16.sm_80, k_f16.sm_90\n"));
}

TEST_CASE("units that fail differently are each shown, and no note explains what kpack cannot") {
  Planned p;
  PlanKernel(p, "template <int B>\n__global__ void k(float* out, uint32_t n) {}",
             "  - {name: B, type: int, values: [1, 2], tag: b}\n");
  std::vector<std::string> errors(p.plan.units.size());
  errors[0] = UnitError(p.plan.units[0], "k.cuh(4): error: identifier \"a\" is undefined\n");
  errors[3] = UnitError(p.plan.units[3], "k.cuh(4): error: identifier \"b\" is undefined\n");
  // Each at its own value: the units of the other value built.
  CHECK(Report(p.plan, errors) ==
        "k.yaml:5:35: error: nvcc failed (exit code 1) for kernel 'k' specialization k_b1 (B=1) for sm_80\n"
        "  command: nvcc -o work/units/k_b1.sm_80.cubin work/units/k_b1.sm_80.cu\n"
        "k.cuh(4): error: identifier \"a\" is undefined\n\n"
        "k.yaml:5:38: error: nvcc failed (exit code 1) for kernel 'k' specialization k_b2 (B=2) for sm_90\n"
        "  command: nvcc -o work/units/k_b2.sm_90.cubin work/units/k_b2.sm_90.cu\n"
        "k.cuh(4): error: identifier \"b\" is undefined\n\n");
  // A __device__ entry's failed call is not the macro case unless nvcc says so.
  Planned d;
  PlanKernel(d, "template <int B>\n__device__ void k(float* out, uint32_t n) {}",
             "  - {name: B, type: int, values: [1]}\n");
  std::vector<std::string> one(d.plan.units.size());
  one[0] = UnitError(d.plan.units[0], "k.cuh(4): error: no instance of function template \"ns::k\" matches the "
                                      "specified type\n");
  CHECK(Report(d.plan, one).find("note: kpack:") == std::string::npos);
}
