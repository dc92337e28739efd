// The manifest keys that only CUDA kernels have (cuda_reader.cc, the
// include_dirs: of manifest.cc): qualified entries, `source: <...>` on the
// include roots, `type: cpp` constexprs, the launch attributes pdl, cluster
// and cooperative, and a __global__ entry's launch bounds.  Every key's happy
// path and every rejection word for word at its file:line:col.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "expand.h"
#include "test_util.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;

namespace {

// A Triton kernel manifest (loaded without a describer).
const char* kTriton =
    "kernel: va\n"                                                   // 1
    "language: triton\n"                                             // 2
    "source: va.py\n"                                                // 3
    "entry: va\n"                                                    // 4
    "constexprs:\n"                                                  // 5
    "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n"     // 6
    "params:\n"                                                      // 7
    "  - {name: x, type: const f32*}\n"                              // 8
    "  - {name: out, type: f32*}\n"                                  // 9
    "  - {name: n, type: i64}\n"                                     // 10
    "launch:\n"                                                      // 11
    "  grid: [\"cdiv(n, BLOCK)\"]\n";                                // 12

struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;
  std::string errors;
  const kpack::Kernel& kernel() const { return pkg->kernels.at(0); }
};

// Loads package.yaml + k.yaml from a fresh scratch directory with va.cuh,
// va.py and `files` beside them, with `include_dirs` as `kpack build -I`
// gives them (absolute, or relative to the scratch directory: made
// absolute here as build.cc does).  Expands what loaded.
Loaded Load(const std::string& kernel, const std::string& package = kPackage,
            const std::map<std::string, std::string>& files = {}, const std::vector<std::string>& include_dirs = {}) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", kernel);
  dir.Write("va.cuh", "// template\n");
  dir.Write("va.py", "");
  for (const auto& [name, text] : files) dir.Write(name, text);
  kpack::LoadOptions options;
  for (const std::string& d : include_dirs)
    options.include_dirs.push_back(std::filesystem::absolute(d).lexically_normal().generic_string());
  kpack::Diagnostics diag;
  Loaded out;
  out.pkg = kpack::LoadPackage("package.yaml", options, diag);
  if (out.pkg) out.specs = kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& kernel, const std::map<std::string, std::string>& files = {},
                   const std::vector<std::string>& include_dirs = {}, const std::string& package = kPackage) {
  return Load(kernel, package, files, include_dirs).errors;
}

// A package of sm_90 only: clusters need it.
const std::string kPackage90 = "package: demo\narchs: [sm_90]\nkernels: [k.yaml]\n";

// kKernel with `text` appended to its launch: map (line 15 on).
std::string WithLaunch(const std::string& text) { return std::string(kKernel) + text; }

// kKernel whose T constexpr is `type: cpp` with `values` (line 5).
std::string WithCpp(const std::string& values) {
  return Replace(Replace(Replace(Replace(Replace(kKernel, "{name: T, type: dtype, values: [f32, f16]}",
                                                 "{name: Op, type: cpp, values: " + values + "}"),
                                         "const T*", "const f32*"),
                                 "const T*", "const f32*"),
                         "T*", "f32*"),
                 "entry: va", "entry: ns::va");
}

}  // namespace

// ---- entry ----

TEST_CASE("a CUDA entry is a possibly qualified C++ name; a leading :: is dropped") {
  Loaded l = Load(Replace(kKernel, "entry: va", "entry: \"::flashinfer::norm::RMSNormKernel\""));
  REQUIRE(l.errors == "");
  CHECK(l.kernel().entry == "flashinfer::norm::RMSNormKernel");
  l = Load(Replace(kKernel, "entry: va", "entry: ns::va"));
  REQUIRE(l.errors == "");
  CHECK(l.kernel().entry == "ns::va");
  CHECK_FALSE(l.kernel().global_entry);  // va.cuh declares nothing
}

TEST_CASE("an entry that is not a C++ name is refused at the value") {
  CHECK(Errors(Replace(kKernel, "entry: va", "entry: \"a::\"")) ==
        "k.yaml:3:8: error: entry 'a::' is not a C++ name (identifiers joined by '::', as in "
        "flashinfer::norm::RMSNormKernel)\n");
  CHECK(Errors(Replace(kKernel, "entry: va", "entry: a b")) ==
        "k.yaml:3:8: error: entry 'a b' is not a C++ name (identifiers joined by '::', as in "
        "flashinfer::norm::RMSNormKernel)\n");
  CHECK(Errors(Replace(kKernel, "entry: va", "entry: ns::int")) ==
        "k.yaml:3:8: error: entry 'ns::int' is not a C++ name (identifiers joined by '::', as in "
        "flashinfer::norm::RMSNormKernel)\n");
  CHECK(Errors(Replace(kKernel, "entry: va", "entry: a:::b")) ==
        "k.yaml:3:8: error: entry 'a:::b' is not a C++ name (identifiers joined by '::', as in "
        "flashinfer::norm::RMSNormKernel)\n");
  // A Triton entry stays a Python (C) identifier.
  CHECK(Errors(Replace(kTriton, "entry: va", "entry: ns::va")) ==
        "k.yaml:4:8: error: entry 'ns::va' is not a valid C identifier\n");
}

// ---- source: <...> on the include roots ----

TEST_CASE("source: <dir/file.cuh> is found on the include roots, -I first, then include_dirs:") {
  Loaded l = Load(Replace(kKernel, "source: va.cuh", "source: <lib/k.cuh>"),
                  "package: demo\narchs: [sm_80, sm_90]\ninclude_dirs: [pkgroot]\nkernels: [k.yaml]\n",
                  {{"cli/lib/k.cuh", "// -I\n"}, {"pkgroot/lib/k.cuh", "// include_dirs\n"}}, {"cli"});
  REQUIRE(l.errors == "");
  const kpack::Kernel& k = l.kernel();
  CHECK(k.source_on_include_path);
  CHECK(k.source_name == "<lib/k.cuh>");
  CHECK(k.source_text == "<lib/k.cuh>");
  REQUIRE(k.include_dirs.size() == 2);
  CHECK(k.include_dirs[0].ends_with("/cli"));
  CHECK(k.include_dirs[1] == "pkgroot");  // beside the package file, as written there
  CHECK(k.source_path == k.include_dirs[0] + "/lib/k.cuh");

  // Without the -I copy, the package file's root has it.
  l = Load(Replace(kKernel, "source: va.cuh", "source: <lib/k.cuh>"),
           "package: demo\narchs: [sm_80, sm_90]\ninclude_dirs: [pkgroot]\nkernels: [k.yaml]\n",
           {{"cli/x", ""}, {"pkgroot/lib/k.cuh", "// include_dirs\n"}}, {"cli"});
  REQUIRE(l.errors == "");
  CHECK(l.kernel().source_path == "pkgroot/lib/k.cuh");
}

TEST_CASE("source: <...> forms kpack refuses") {
  const std::string message = "' must name a relative path below an include directory, without '..'\n";
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: <../x.cuh>"), {{"inc/x", ""}}, {"inc"}) ==
        "k.yaml:2:9: error: source '<../x.cuh>" + message);
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: <lib/../../x.cuh>"), {{"inc/x", ""}}, {"inc"}) ==
        "k.yaml:2:9: error: source '<lib/../../x.cuh>" + message);
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: </abs.cuh>"), {{"inc/x", ""}}, {"inc"}) ==
        "k.yaml:2:9: error: source '</abs.cuh>" + message);
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: \"<>\""), {{"inc/x", ""}}, {"inc"}) ==
        "k.yaml:2:9: error: source '<>" + message);
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: \"<lib/$(x).cuh>\""), {{"inc/x", ""}}, {"inc"}) ==
        "k.yaml:2:9: error: source path 'lib/$(x).cuh' contains '$'; nvcc passes include paths through a shell, "
        "so kpack refuses shell metacharacters\n");
}

TEST_CASE("source: <...> with no include roots, or on none of them") {
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: <lib/k.cuh>")) ==
        "k.yaml:2:9: error: source '<lib/k.cuh>' is looked for on the include directories, but the build gives "
        "none (kpack build -I DIR, or include_dirs: in the package file)\n");
  ScratchDir roots;  // absolute roots, outside the project
  std::string a = roots.path() + "/a", b = roots.path() + "/b";
  std::filesystem::create_directories(a);
  std::filesystem::create_directories(b);
  CHECK(Errors(Replace(kKernel, "source: va.cuh", "source: <lib/k.cuh>"), {}, {a, b}) ==
        "k.yaml:2:9: error: source '<lib/k.cuh>' not found on the include directories (looked in " + a + ", " + b +
            ")\n");
}

TEST_CASE("a Triton kernel's source is never on the include path") {
  CHECK(Errors(Replace(kTriton, "source: va.py", "source: <lib/k.py>"), {{"inc/lib/k.py", ""}}, {"inc"}) ==
        "k.yaml:3:9: error: source '<lib/k.py>': a Triton kernel's source is a file (or a module:), not a header on "
        "the include path\n");
}

// ---- include_dirs: in the package file ----

TEST_CASE("include_dirs: must be a list of directories that exist") {
  const std::string head = "package: demo\narchs: [sm_80, sm_90]\n";
  CHECK(Errors(kKernel, {}, {}, head + "include_dirs: inc\nkernels: [k.yaml]\n") ==
        "package.yaml:3:15: error: include_dirs must be a list of directories\n");
  CHECK(Errors(kKernel, {{"inc/x", ""}}, {}, head + "include_dirs: [inc, gone]\nkernels: [k.yaml]\n") ==
        "package.yaml:3:21: error: include directory 'gone' not found (looked for gone)\n");
  CHECK(Errors(kKernel, {{"m/x", ""}}, {}, "package: demo\narchs: [sm_80]\ninclude_dirs: [../nowhere]\n"
                                           "kernels: [k.yaml]\n") ==
        "package.yaml:3:16: error: include directory '../nowhere' not found (looked for ../nowhere)\n");
  CHECK(Errors(kKernel, {{"inc/x", ""}}, {}, head + "include_dirs: [[inc]]\nkernels: [k.yaml]\n") ==
        "package.yaml:3:16: error: each entry of include_dirs must be a string\n");
  CHECK(Errors(kKernel, {{"a b/x", ""}}, {}, head + "include_dirs: [\"a;b\"]\nkernels: [k.yaml]\n") ==
        "package.yaml:3:16: error: include directory 'a;b' contains ';'; nvcc passes include paths through a "
        "shell, so kpack refuses shell metacharacters\n");
  // A file is not a directory.
  CHECK(Errors(kKernel, {{"afile", "x"}}, {}, head + "include_dirs: [afile]\nkernels: [k.yaml]\n") ==
        "package.yaml:3:16: error: include directory 'afile' not found (looked for afile)\n");
}

TEST_CASE("include_dirs: outside the project root are the build owner's to choose") {
  ScratchDir outside;
  std::filesystem::create_directories(outside.path() + "/lib");
  { std::ofstream(outside.path() + "/lib/k.cuh") << "// outside\n"; }
  Loaded l = Load(Replace(kKernel, "source: va.cuh", "source: <lib/k.cuh>"),
                  "package: demo\narchs: [sm_80]\ninclude_dirs: [" + outside.path() + "]\nkernels: [k.yaml]\n");
  REQUIRE(l.errors == "");
  CHECK(l.kernel().source_path == outside.path() + "/lib/k.cuh");
}

// ---- type: cpp ----

TEST_CASE("type: cpp values are C++ names; their last component names the specialization") {
  Loaded l = Load(WithCpp("[kpack_fi::silu, \"::gelu\", ns::Mode::kFast]"));
  REQUIRE(l.errors == "");
  const kpack::Constexpr& c = l.kernel().constexprs[0];
  CHECK(c.cpp_name);
  CHECK(c.kind == kpack::ConstexprKind::kStr);
  REQUIRE(c.values.size() == 3);
  CHECK(c.values[0].text == "kpack_fi::silu");
  CHECK(c.values[1].text == "::gelu");
  CHECK(c.values[2].text == "ns::Mode::kFast");
  std::vector<std::string> names;
  for (const kpack::Specialization& s : l.specs)
    if (s.api) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"vector_add_silu_b128", "vector_add_silu_b256", "vector_add_gelu_b128",
                                          "vector_add_gelu_b256", "vector_add_kFast_b128", "vector_add_kFast_b256"});
}

TEST_CASE("type: cpp values kpack refuses") {
  CHECK(Errors(WithCpp("[silu, 1abc]")) ==
        "k.yaml:5:42: error: value '1abc' of 'Op' is not a C++ name (identifiers joined by '::', naming a type, a "
        "function or an enumerator)\n");
  CHECK(Errors(WithCpp("[\"a::\"]")) ==
        "k.yaml:5:36: error: value 'a::' of 'Op' is not a C++ name (identifiers joined by '::', naming a type, a "
        "function or an enumerator)\n");
  CHECK(Errors(WithCpp("[int]")) ==
        "k.yaml:5:36: error: value 'int' of 'Op' is not a C++ name (identifiers joined by '::', naming a type, a "
        "function or an enumerator)\n");
  CHECK(Errors(WithCpp("[a::silu, b::silu]")) ==
        "k.yaml:5:45: error: values 'a::silu' and 'b::silu' of 'Op' end in the same name 'silu', which names the "
        "specialization; give one a distinct last name\n");
  CHECK(Errors(WithCpp("[a::silu, a::silu]")) == "k.yaml:5:45: error: duplicate value in 'Op'\n");
  CHECK(Errors(WithCpp("[silu, [x]]")) == "k.yaml:5:42: error: a value of cpp constexpr 'Op' must be a string\n");
  CHECK(Errors(WithCpp("[]")) == "k.yaml:5:35: error: values of 'Op' must not be empty\n");
}

TEST_CASE("type: cpp applies to CUDA kernels only") {
  CHECK(Errors(Replace(kTriton, "type: int", "type: cpp")) ==
        "k.yaml:6:25: error: constexpr type 'cpp' applies to CUDA kernels only (a C++ name as a template "
        "argument)\n");
}

// ---- launch: pdl, cluster, cooperative ----

TEST_CASE("launch attributes load") {
  Loaded l = Load(WithLaunch("  pdl: per_call\n  cluster: [\"BLOCK / 64\", 1]\n  cooperative: true\n"), kPackage90);
  REQUIRE(l.errors == "");
  const kpack::Launch& launch = l.kernel().launch;
  CHECK(launch.pdl == kpack::Pdl::kPerCall);
  REQUIRE(launch.cluster.size() == 2);
  CHECK(kpack::FormatExpr(launch.cluster[0]) == "BLOCK / 64");
  CHECK(launch.cooperative);
  CHECK(launch.HasAttributes());
  CHECK(Load(WithLaunch("  pdl: true\n")).kernel().launch.pdl == kpack::Pdl::kOn);
  CHECK(Load(WithLaunch("  pdl: true\n")).kernel().launch.HasAttributes());
  CHECK(Load(WithLaunch("  pdl: false\n")).kernel().launch.pdl == kpack::Pdl::kOff);
  CHECK_FALSE(Load(WithLaunch("  pdl: false\n  cooperative: false\n")).kernel().launch.HasAttributes());
  CHECK_FALSE(Load(kKernel).kernel().launch.HasAttributes());
  // Triton kernels may ask for PDL.
  Loaded t = Load(std::string(kTriton) + "  pdl: true\n");
  REQUIRE(t.errors == "");
  CHECK(t.kernel().launch.pdl == kpack::Pdl::kOn);
}

TEST_CASE("pdl values kpack refuses") {
  CHECK(Errors(WithLaunch("  pdl: maybe\n")) == "k.yaml:15:8: error: pdl must be true, false or per_call\n");
  CHECK(Errors(WithLaunch("  pdl: \"true\"\n")) == "k.yaml:15:8: error: pdl must be true, false or per_call\n");
  CHECK(Errors(WithLaunch("  pdl: [true]\n")) == "k.yaml:15:8: error: pdl must be true, false or per_call\n");
  CHECK(Errors(WithLaunch("  pdl: 1\n")) == "k.yaml:15:8: error: pdl must be true, false or per_call\n");
}

TEST_CASE("cooperative must be a bool") {
  CHECK(Errors(WithLaunch("  cooperative: yes\n")) == "k.yaml:15:16: error: cooperative must be true or false\n");
}

TEST_CASE("cluster is constexpr expressions, 1 to 3") {
  CHECK(Errors(WithLaunch("  cluster: [n]\n"), {}, {}, kPackage90) ==
        "k.yaml:15:13: error: 'n' is a runtime parameter; only constexprs are allowed here\n");
  CHECK(Errors(WithLaunch("  cluster: [2, 1, 1, 1]\n"), {}, {}, kPackage90) ==
        "k.yaml:15:12: error: cluster must be an expression or a list of 1 to 3 expressions\n");
  CHECK(Errors(WithLaunch("  cluster: []\n"), {}, {}, kPackage90) ==
        "k.yaml:15:12: error: cluster must be an expression or a list of 1 to 3 expressions\n");
  CHECK(Errors(WithLaunch("  cluster: [GONE]\n"), {}, {}, kPackage90) == "k.yaml:15:13: error: unknown name 'GONE' in expression\n");
  CHECK(Errors(WithLaunch("  cluster: [device.num_sms]\n"), {}, {}, kPackage90).starts_with("k.yaml:15:13: error: 'device.num_sms'"));
  // Clusters exist from sm_90 on.
  CHECK(Errors(WithLaunch("  cluster: [2]\n")) ==
        "k.yaml:15:3: error: cluster needs sm_90 or newer, but the kernel is built for sm_80\n");
}

TEST_CASE("cluster and cooperative apply to CUDA kernels only") {
  CHECK(Errors(std::string(kTriton) + "  cluster: [2]\n") ==
        "k.yaml:13:3: error: cluster applies to CUDA kernels only (Triton sets its own with num_ctas)\n");
  CHECK(Errors(std::string(kTriton) + "  cooperative: true\n") ==
        "k.yaml:13:3: error: cooperative applies to CUDA kernels only\n");
  CHECK(Errors(std::string(kTriton) + "  cluster: [2]\n  cooperative: false\n") ==
        "k.yaml:13:3: error: cluster applies to CUDA kernels only (Triton sets its own with num_ctas)\n"
        "k.yaml:14:3: error: cooperative applies to CUDA kernels only\n");
}

TEST_CASE("pdl is a reserved name with pdl: per_call, and only then") {
  // The launchers take `int pdl` after the stream (codegen_text.cc LeadingParams).
  const std::string pdl_param = "{name: n, type: i64}\n  - {name: pdl, type: i32}";
  CHECK(Errors(Replace(WithLaunch("  pdl: per_call\n"), "{name: n, type: i64}", pdl_param)) ==
        "k.yaml:12:5: error: name 'pdl' is reserved: the launchers of a kernel with pdl: per_call take 'int pdl'\n");
  CHECK(Errors(Replace(WithLaunch("  pdl: per_call\n"), "  - {name: BLOCK,",
                       "  - {name: pdl, type: int, values: [1]}\n  - {name: BLOCK,")) ==
        "k.yaml:6:5: error: name 'pdl' is reserved: the launchers of a kernel with pdl: per_call take 'int pdl'\n");
  CHECK(Errors(Replace(WithLaunch("  pdl: true\n"), "{name: n, type: i64}", pdl_param)) == "");
  CHECK(Errors(Replace(WithLaunch("  pdl: false\n"), "{name: n, type: i64}", pdl_param)) == "");
  CHECK(Errors(Replace(kKernel, "{name: n, type: i64}", pdl_param)) == "");
}

// ---- a __global__ entry, found in its source ----

TEST_CASE("a __global__ template is found in the source, and launch_bounds is refused for it") {
  const std::string global =
      "#pragma once\n"
      "namespace ns {\n"
      "template <typename T, int BLOCK>\n"
      "__global__ void __launch_bounds__(BLOCK) va(const T* x, const T* y, T* out, int64_t n) {}\n"
      "}\n";
  Loaded l = Load(Replace(kKernel, "entry: va", "entry: ns::va"), kPackage, {{"va.cuh", global}});
  REQUIRE(l.errors == "");
  CHECK(l.kernel().global_entry);
  CHECK(l.kernel().global_entry_at == "va.cuh:4:42");
  CHECK(l.specs[0].symbol == "");  // the check pass reads it from the cubin

  CHECK(Errors(WithLaunch("  launch_bounds: BLOCK\n"), {{"va.cuh", global}}) ==
        "k.yaml:15:3: error: launch_bounds applies to __device__ entries; 'va' is a __global__ template "
        "(va.cuh:4:42), whose own __launch_bounds__, if any, nvcc applies\n");

  // A __device__ template keeps launch_bounds and its extern "C" symbol.
  Loaded d = Load(WithLaunch("  launch_bounds: BLOCK\n"), kPackage,
                  {{"va.cuh", "template <typename T, int B> __device__ void va(const T*, const T*, T*, int64_t) {}\n"}});
  REQUIRE(d.errors == "");
  CHECK_FALSE(d.kernel().global_entry);
  CHECK(d.specs[0].symbol == "kpack_demo_vector_add_f32_b128");
}

TEST_CASE("a __global__ entry on the include roots is found through them") {
  Loaded l = Load(Replace(Replace(kKernel, "source: va.cuh", "source: <lib/va.cuh>"), "entry: va", "entry: lib::va"),
                  kPackage,
                  {{"inc/lib/va.cuh", "#include <lib/detail.cuh>\n"},
                   {"inc/lib/detail.cuh",
                    "namespace lib {\ntemplate <typename T, int B>\n__global__ void va(const T*, const T*, T*, "
                    "int64_t) {}\n}\n"}},
                  {"inc"});
  REQUIRE(l.errors == "");
  CHECK(l.kernel().global_entry);
  CHECK(l.kernel().global_entry_at == l.kernel().include_dirs[0] + "/lib/detail.cuh:3:17");
}
