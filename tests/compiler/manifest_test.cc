// The load pass: a valid manifest loads, and every rejection names the node
// with the exact message users will see.
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>

#include "test_util.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::LoadErrors;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;

TEST_CASE("a valid package loads with every field") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\nprefix: dk\narchs: [sm_90, sm_80]\nkernels: [k.yaml]\n");
  dir.Write("k.yaml", std::string(kKernel) + "exclude:\n  - {T: f16, BLOCK: 128}\ndoc: hi\n");
  dir.Write("va.cuh", "");
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  REQUIRE(pkg);
  CHECK(pkg->prefix == "dk");
  REQUIRE(pkg->kernels.size() == 1);
  const kpack::Kernel& k = pkg->kernels[0];
  CHECK(k.name == "vector_add");
  CHECK(k.source_path == "va.cuh");
  CHECK(k.archs.size() == 2);
  CHECK(k.archs[0].Name() == "sm_80");  // sorted
  CHECK(k.constexprs[1].tag == "b");
  CHECK(k.constexprs[0].tag == "");
  CHECK(k.params[0].type.is_const);
  CHECK(k.params[0].type.dtype_constexpr == "T");
  CHECK(k.params[3].type.scalar == kpack::Scalar::kI64);
  CHECK(k.exclusions.size() == 1);
  CHECK(k.doc == "hi");
  CHECK(k.launch.grid.size() == 1);
  CHECK(kpack::FormatExpr(k.launch.grid[0]) == "cdiv(n, BLOCK)");
}

TEST_CASE("unknown key") {
  CHECK(LoadErrors(std::string(kKernel) + "blok: 3\n") ==
        "k.yaml:15:1: error: unknown key 'blok' in a kernel manifest (expected one of: kernel, language, "
        "source, module, entry, doc, constexprs, options, params, exclude, launch, archs, ptx, nvcc_flags, debug, "
        "allow_debug, autotune, variants, load, assume, tune, batch)\n");
}

TEST_CASE("duplicate key, which YAML itself accepts") {
  CHECK(LoadErrors(std::string(kKernel) + "entry: other\n") ==
        "k.yaml:15:1: error: duplicate key 'entry' in a kernel manifest\n");
}

TEST_CASE("wrong type") {
  CHECK(LoadErrors(Replace(kKernel, "values: [128, 256]", "values: [128, big]")) ==
        "k.yaml:6:44: error: a value of int constexpr 'BLOCK' must be an integer\n");
  CHECK(LoadErrors(Replace(kKernel, "entry: va", "entry: [va]")) == "k.yaml:3:8: error: entry must be a string\n");
  CHECK(LoadErrors(Replace(kKernel, "type: int", "type: integer")) ==
        "k.yaml:6:25: error: unknown constexpr type 'integer' (expected int, bool, dtype or cpp)\n");
  CHECK(LoadErrors(Replace(kKernel, "type: i64", "type: long")) ==
        "k.yaml:11:21: error: unknown type 'long' (expected a dtype constexpr or one of: f32, f16, bf16, f64, "
        "i8, i16, i32, i64, u8, u16, u32, u64, bool)\n");
  CHECK(LoadErrors(Replace(kKernel, "values: [f32, f16]", "values: [f32, f8]")) ==
        "k.yaml:5:42: error: unknown dtype 'f8' (expected one of: f32, f16, bf16, f64, i8, i16, i32, i64, u8, "
        "u16, u32, u64)\n");
}

TEST_CASE("empty value list") {
  CHECK(LoadErrors(Replace(kKernel, "values: [f32, f16]", "values: []")) ==
        "k.yaml:5:36: error: values of 'T' must not be empty\n");
}

TEST_CASE("duplicate value") {
  CHECK(LoadErrors(Replace(kKernel, "values: [128, 256]", "values: [128, 128]")) ==
        "k.yaml:6:44: error: duplicate value in 'BLOCK'\n");
}

TEST_CASE("duplicate kernel") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nkernels: [k.yaml, k2.yaml]\n");
  dir.Write("k.yaml", kKernel);
  dir.Write("k2.yaml", kKernel);
  dir.Write("va.cuh", "");
  kpack::Diagnostics diag;
  CHECK_FALSE(kpack::LoadPackage("package.yaml", {}, diag));
  CHECK(diag.Text() == "k2.yaml:1:9: error: duplicate kernel 'vector_add' (first defined at k.yaml:1:9)\n");
}

TEST_CASE("unknown arch") {
  CHECK(LoadErrors(kKernel, "package: demo\narchs: [sm_80, sm_91]\nkernels: [k.yaml]\n") ==
        "package.yaml:2:16: error: unknown arch 'sm_91' (CUDA 13 supports: sm_75, sm_80, sm_86, sm_87, sm_89, "
        "sm_90, sm_90a, sm_100, sm_100a, sm_100f, sm_103, sm_103a, sm_110, sm_120, sm_120a, sm_121)\n");
  CHECK(LoadErrors(std::string(kKernel) + "archs: [sm_52]\n") ==
        "k.yaml:15:9: error: unknown arch 'sm_52' (CUDA 13 supports: sm_75, sm_80, sm_86, sm_87, sm_89, "
        "sm_90, sm_90a, sm_100, sm_100a, sm_100f, sm_103, sm_103a, sm_110, sm_120, sm_120a, sm_121)\n");
}

TEST_CASE("missing source") {
  CHECK(LoadErrors(Replace(kKernel, "source: va.cuh", "source: nowhere/../gone/va.cuh")) ==
        "k.yaml:2:9: error: source file 'nowhere/../gone/va.cuh' not found (looked for gone/va.cuh)\n");
}

TEST_CASE("missing kernel manifest") {
  CHECK(LoadErrors(kKernel, "package: demo\narchs: [sm_80]\nkernels: [k.yaml, gone.yaml]\n") ==
        "package.yaml:3:19: error: kernel manifest 'gone.yaml' not found (looked for gone.yaml)\n");
}

TEST_CASE("identifiers that are not C identifiers") {
  CHECK(LoadErrors(Replace(kKernel, "kernel: vector_add", "kernel: vector-add")) ==
        "k.yaml:1:9: error: kernel name 'vector-add' is not a valid C identifier\n");
  CHECK(LoadErrors(Replace(kKernel, "{name: n,", "{name: int,")) ==
        "k.yaml:11:12: error: param name 'int' is not a valid C identifier\n");
  CHECK(LoadErrors(Replace(kKernel, "kernel: vector_add", "kernel: \"x); system(1); (\"")) ==
        "k.yaml:1:9: error: kernel name 'x); system(1); (' is not a valid C identifier\n");
  CHECK(LoadErrors(Replace(kKernel, "{name: T,", "{name: __T,")) ==
        "k.yaml:5:12: error: constexpr name '__T' is not a valid C identifier\n"
        "k.yaml:8:21: error: unknown type 'T' (expected a dtype constexpr or one of: f32, f16, bf16, f64, i8, "
        "i16, i32, i64, u8, u16, u32, u64, bool)\n"
        "k.yaml:9:21: error: unknown type 'T' (expected a dtype constexpr or one of: f32, f16, bf16, f64, i8, "
        "i16, i32, i64, u8, u16, u32, u64, bool)\n"
        "k.yaml:10:23: error: unknown type 'T' (expected a dtype constexpr or one of: f32, f16, bf16, f64, i8, "
        "i16, i32, i64, u8, u16, u32, u64, bool)\n");
  CHECK(LoadErrors(kKernel, "package: my-lib\narchs: [sm_80]\nkernels: [k.yaml]\n") ==
        "package.yaml:1:10: error: package name 'my-lib' is not a valid C identifier\n");
}

TEST_CASE("missing required keys") {
  CHECK(LoadErrors(Replace(kKernel, "entry: va\n", "")) ==
        "k.yaml:1:1: error: a kernel manifest is missing required key 'entry'\n");
  CHECK(LoadErrors(kKernel, "package: demo\nkernels: [k.yaml]\n") ==
        "package.yaml:1:1: error: the package file is missing required key 'archs'\n");
}

TEST_CASE("not YAML at all") {
  CHECK(LoadErrors("kernel: [unclosed\n") == "k.yaml:2:1: error: end of sequence flow not found\n");
}

TEST_CASE("exclusions name real constexprs and values") {
  CHECK(LoadErrors(std::string(kKernel) + "exclude:\n  - {T: f64}\n") ==
        "k.yaml:16:9: error: 'f64' is not one of the values of 'T'\n");
  CHECK(LoadErrors(std::string(kKernel) + "exclude:\n  - {U: f32}\n") ==
        "k.yaml:16:6: error: exclude names unknown constexpr 'U'\n");
}

TEST_CASE("launch expressions are parsed and checked") {
  CHECK(LoadErrors(Replace(kKernel, "\"cdiv(n, BLOCK)\"", "\"cdiv(n, BLOCK\"")) ==
        "k.yaml:13:23: error: expected ')' or ',' in call of cdiv()\n");
  CHECK(LoadErrors(Replace(kKernel, "\"cdiv(n, BLOCK)\"", "\"cdiv(m, BLOCK)\"")) ==
        "k.yaml:13:15: error: unknown name 'm' in expression\n");
  CHECK(LoadErrors(Replace(kKernel, "\"cdiv(n, BLOCK)\"", "\"cdiv(x, BLOCK)\"")) ==
        "k.yaml:13:15: error: 'x' is a pointer parameter; it can only be compared with NULL: p == NULL or p != NULL\n");
  CHECK(LoadErrors(Replace(kKernel, "\"cdiv(n, BLOCK)\"", "\"n; exit(0)\"")) ==
        "k.yaml:13:11: error: unexpected ';' in expression\n");
  CHECK(LoadErrors(std::string(kKernel) + "  launch_bounds: n\n") ==
        "k.yaml:15:18: error: 'n' is a runtime parameter; only constexprs are allowed here\n");
  CHECK(LoadErrors(Replace(kKernel, "\"cdiv(n, BLOCK)\"", "\"pow(n, 2)\"")) ==
        "k.yaml:13:10: error: unknown function 'pow' (expected min, max, cdiv, floordiv, floormod, gcd, log2, next_pow2 or sizeof)\n");
}

TEST_CASE("names are unique across constexprs and params") {
  CHECK(LoadErrors(Replace(kKernel, "{name: n,", "{name: BLOCK,")) ==
        "k.yaml:11:5: error: name 'BLOCK' is used twice among constexprs and params (or is 'stream')\n"
        "k.yaml:13:15: error: unknown name 'n' in expression\n");
  CHECK(LoadErrors(Replace(kKernel, "{name: n,", "{name: kpack_n,")) ==
        "k.yaml:11:5: error: name 'kpack_n' is reserved (kpack_ prefix)\n"
        "k.yaml:13:15: error: unknown name 'n' in expression\n");
}

TEST_CASE("param types") {
  CHECK(LoadErrors(Replace(kKernel, "type: i64}", "type: const i64}")) ==
        "k.yaml:11:21: error: type 'const i64': const applies only to pointers\n");
  CHECK(LoadErrors(Replace(kKernel, "type: i64}", "type: T}")) ==
        "k.yaml:11:21: error: type 'T': a dtype constexpr can only be used behind a pointer\n");
  CHECK(LoadErrors(Replace(kKernel, "type: i64}", "type: i64**}")) ==
        "k.yaml:11:21: error: malformed type 'i64**' (expected [const] TYPE[*])\n");
}

TEST_CASE("IsCIdentifier") {
  CHECK(kpack::IsCIdentifier("vector_add"));
  CHECK(kpack::IsCIdentifier("_x1"));
  CHECK_FALSE(kpack::IsCIdentifier(""));
  CHECK_FALSE(kpack::IsCIdentifier("1x"));
  CHECK_FALSE(kpack::IsCIdentifier("a b"));
  CHECK_FALSE(kpack::IsCIdentifier("while"));
  CHECK_FALSE(kpack::IsCIdentifier("class"));
  CHECK_FALSE(kpack::IsCIdentifier("_Upper"));
  CHECK_FALSE(kpack::IsCIdentifier("a\xc3\xa9"));
}

TEST_CASE("shell metacharacters in flags and source paths are refused") {
  // nvcc runs its sub-steps through /bin/sh: these would execute.
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [\"-DX=$(reboot)\"]\n") ==
        "k.yaml:15:14: error: nvcc flag '-DX=$(reboot)' contains '$'; nvcc passes flags through a shell, so kpack "
        "refuses shell metacharacters (give each option and value as its own list entry)\n");
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [\"-Xptxas -v\"]\n") ==
        "k.yaml:15:14: error: nvcc flag '-Xptxas -v' contains a space; nvcc passes flags through a shell, so kpack "
        "refuses shell metacharacters (give each option and value as its own list entry)\n");
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-Xptxas, -v, -lineinfo, -DN=4]\n") == "");
  CHECK(LoadErrors(Replace(kKernel, "source: va.cuh", "source: \"a;b/va.cuh\"")) ==
        "k.yaml:2:9: error: source path 'a;b/va.cuh' contains ';'; nvcc passes include paths through a shell, so "
        "kpack refuses shell metacharacters\n");
}

TEST_CASE("nvcc flags may not choose the host compiler or make it run other programs") {
  const std::string host =
      " chooses the host compiler, which would let the manifest run any program during the build; kpack refuses "
      "-ccbin and --compiler-bindir in manifests\n";
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-ccbin, ./tool]\n") ==
        "k.yaml:15:14: error: nvcc flag '-ccbin'" + host);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-lineinfo, --compiler-bindir=/opt/gcc]\n") ==
        "k.yaml:15:25: error: nvcc flag '--compiler-bindir=/opt/gcc'" + host);
  // The package's flags reach every kernel: located in the package file.
  CHECK(LoadErrors(kKernel, std::string(kPackage) + "nvcc_flags: [-ccbin=/tmp/cc]\n") ==
        "package.yaml:4:14: error: nvcc flag '-ccbin=/tmp/cc'" + host);

  const std::string runs =
      " makes the host compiler run other programs; kpack refuses -B, -wrapper and -fplugin in manifests\n";
  // nvcc splits -Xcompiler values at commas: the bad piece is found inside.
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-Xcompiler, \"-O2,-B/tmp/evil\"]\n") ==
        "k.yaml:15:26: error: host compiler option '-B/tmp/evil' (after -Xcompiler)" + runs);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [\"--compiler-options=-wrapper,/tmp/w\"]\n") ==
        "k.yaml:15:14: error: host compiler option '-wrapper' (after --compiler-options)" + runs);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-Xcompiler=-fplugin=/tmp/p.so]\n") ==
        "k.yaml:15:14: error: host compiler option '-fplugin=/tmp/p.so' (after -Xcompiler)" + runs);
  // Harmless host options pass.
  CHECK(LoadErrors(std::string(kKernel) +
                   "nvcc_flags: [-Xcompiler, \"-O2,-Wall\", -Xcompiler=-fno-strict-aliasing]\n") == "");
}

TEST_CASE("nvcc include and library paths must lie inside the project unless allowed") {
  const std::string outside =
      " is outside the project root '.' (kpack reads only files inside the project; pass --allow-outside-root to "
      "lift this)\n";
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-I, /elsewhere]\n") ==
        "k.yaml:15:18: error: nvcc flag '-I' path '/elsewhere'" + outside);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-I/elsewhere]\n") ==
        "k.yaml:15:14: error: nvcc flag '-I' path '/elsewhere'" + outside);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-include, /etc/passwd]\n") ==
        "k.yaml:15:24: error: nvcc flag '-include' path '/etc/passwd'" + outside);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-isystem, ../sys]\n") ==
        "k.yaml:15:24: error: nvcc flag '-isystem' path '../sys'" + outside);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [--include-path=../inc, --pre-include=/x.h]\n") ==
        "k.yaml:15:14: error: nvcc flag '--include-path' path '../inc'" + outside +
            "k.yaml:15:37: error: nvcc flag '--pre-include' path '/x.h'" + outside);
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-L/usr/lib, --library-path, /lib, --system-include=/s]\n") ==
        "k.yaml:15:14: error: nvcc flag '-L' path '/usr/lib'" + outside +
            "k.yaml:15:42: error: nvcc flag '--library-path' path '/lib'" + outside +
            "k.yaml:15:48: error: nvcc flag '--system-include' path '/s'" + outside);
  // Inside the project: the root itself, a subdirectory, a file.
  CHECK(LoadErrors(std::string(kKernel) + "nvcc_flags: [-I., -Iinc, -I, sub/../inc, -include, va.cuh, -L=lib]\n") ==
        "");

  // A symlink inside the project that points out of it is outside; the
  // explicit allow lifts every one of these.
  ScratchDir dir;
  dir.Write("package.yaml", kPackage);
  dir.Write("va.cuh", "");
  dir.Write("k.yaml", std::string(kKernel) + "nvcc_flags: [-Ilink, -include, /etc/passwd]\n");
  std::filesystem::create_symlink("/", "link");
  kpack::Diagnostics diag;
  kpack::LoadPackage("package.yaml", kpack::LoadOptions{}, diag);
  CHECK(diag.Text() == "k.yaml:15:14: error: nvcc flag '-I' path 'link'" + outside +
                           "k.yaml:15:32: error: nvcc flag '-include' path '/etc/passwd'" + outside);
  kpack::LoadOptions allow;
  allow.allow_outside_root = true;
  kpack::Diagnostics allowed;
  kpack::LoadPackage("package.yaml", allow, allowed);
  CHECK(allowed.Text() == "");
}

TEST_CASE("Triton kernels: Triton decides block and shared memory; .py sources; int options") {
  ScratchDir dir;
  dir.Write("package.yaml", kPackage);
  dir.Write("va.py", "");
  dir.Write("va.cuh", "");
  auto errors = [&](const std::string& kernel) {
    dir.Write("k.yaml", kernel);
    kpack::Diagnostics diag;
    kpack::LoadPackage("package.yaml", {}, diag);
    return diag.Text();
  };
  std::string triton = Replace(Replace(kKernel, "source: va.cuh", "language: triton\nsource: va.py"),
                               "  block: [BLOCK]\n", "");
  CHECK(errors(triton) == "");
  CHECK(errors(triton + "  block: [128]\n") ==
        "k.yaml:15:3: error: a Triton kernel's block comes from Triton (32 x num_warps threads, its shared "
        "memory); remove it\n");
  CHECK(errors(Replace(triton, "source: va.py", "source: va.cuh")) ==
        "k.yaml:3:9: error: a Triton kernel's source must be a .py file\n");
  CHECK(errors(Replace(triton, "type: i64}", "type: i64, divisibility: 16}")) == "");
  CHECK(errors(Replace(triton, "type: i64}", "type: i64, divisibility: 8}")) ==
        "k.yaml:12:40: error: divisibility must be 16, auto or none (16 is Triton's only divisibility hint)\n");
  CHECK(errors(Replace(kKernel, "type: i64}", "type: i64, divisibility: 16}")) ==
        "k.yaml:11:40: error: divisibility hints apply to Triton kernels only\n");
  CHECK(errors(Replace(kKernel, "type: i64}", "type: i64, divisibility: auto}")) ==
        "k.yaml:11:40: error: divisibility hints apply to Triton kernels only\n");
  CHECK(errors(Replace(triton, "{name: BLOCK, type: int, values: [128, 256], tag: b}",
                       "{name: num_warps, type: int, values: [4, 6]}")) ==
        "k.yaml:7:46: error: num_warps must be a power of two from 1 to 32\n"
        "k.yaml:14:18: error: unknown name 'BLOCK' in expression\n");
  CHECK(errors(Replace(kKernel, "  block: [BLOCK]\n", "")) == "k.yaml:13:3: error: launch is missing required key 'block'\n");
}

namespace {

// A package of one kernel manifest, `k.yaml`, reloaded per text.
class KernelLoader {
 public:
  KernelLoader() {
    dir_.Write("package.yaml", kPackage);
    dir_.Write("va.py", "");
    dir_.Write("va.cuh", "");
  }
  // The diagnostics of loading `kernel`; the package in *pkg if given.
  std::string operator()(const std::string& kernel, std::optional<kpack::Package>* pkg = nullptr) {
    dir_.Write("k.yaml", kernel);
    kpack::Diagnostics diag;
    auto loaded = kpack::LoadPackage("package.yaml", {}, diag);
    if (pkg) *pkg = std::move(loaded);
    return diag.Text();
  }

 private:
  ScratchDir dir_;
};

// kKernel as a Triton kernel (a function: Replace checks with Catch).
std::string TritonKernel() {
  return Replace(Replace(kKernel, "source: va.cuh", "language: triton\nsource: va.py"), "  block: [BLOCK]\n", "");
}

}  // namespace

TEST_CASE("divisibility: auto marks params for the aligned variant; bad values are errors") {
  KernelLoader load;
  const std::string triton = TritonKernel();
  std::optional<kpack::Package> pkg;
  CHECK(load(Replace(Replace(triton, "type: i64}", "type: i64, divisibility: auto}"), "{name: x, type: const T*}",
                     "{name: x, type: const T*, divisibility: auto}"),
             &pkg) == "");
  REQUIRE(pkg);
  const kpack::Kernel& k = pkg->kernels[0];
  CHECK(k.HasAlignedVariant());
  CHECK(k.params[0].divisibility == 16);
  CHECK(k.params[0].divisibility_auto);
  CHECK(k.params[1].divisibility == 0);
  CHECK_FALSE(k.params[1].divisibility_auto);
  CHECK(k.params[3].divisibility_auto);
  CHECK(load(Replace(triton, "type: i64}", "type: i64, divisibility: 16}"), &pkg) == "");
  CHECK_FALSE(pkg->kernels[0].HasAlignedVariant());
  CHECK_FALSE(pkg->kernels[0].params[3].divisibility_auto);
  CHECK(load(Replace(triton, "type: i64}", "type: i64, divisibility: automatic}")) ==
        "k.yaml:12:40: error: divisibility must be 16, auto or none (16 is Triton's only divisibility hint)\n");
  CHECK(load(Replace(triton, "type: i64}", "type: i64, divisibility: \"16\"}")) ==
        "k.yaml:12:40: error: divisibility must be 16, auto or none (16 is Triton's only divisibility hint)\n");
  CHECK(load(Replace(triton, "type: i64}", "type: i64, divisibility: [auto]}")) ==
        "k.yaml:12:40: error: divisibility must be 16, auto or none (16 is Triton's only divisibility hint)\n");
  CHECK(load(Replace(triton, "{name: n, type: i64}", "{name: n, type: f32, divisibility: auto}")) ==
        "k.yaml:12:40: error: divisibility applies only to pointer and integer params ('n' is f32)\n");
  CHECK(load(Replace(triton, "{name: n, type: i64}", "{name: n, type: bool, divisibility: 16}")) ==
        "k.yaml:12:41: error: divisibility applies only to pointer and integer params ('n' is bool)\n");
}

TEST_CASE("width: auto marks i64 params of Triton kernels for the i32 variant; misuse is an error") {
  KernelLoader load;
  const std::string triton = TritonKernel();
  std::optional<kpack::Package> pkg;
  CHECK(load(Replace(triton, "type: i64}", "type: i64, width: auto}"), &pkg) == "");
  REQUIRE(pkg);
  CHECK(pkg->kernels[0].HasNarrowVariant());
  CHECK_FALSE(pkg->kernels[0].HasAlignedVariant());
  CHECK(pkg->kernels[0].params[3].width_auto);
  CHECK_FALSE(pkg->kernels[0].params[0].width_auto);
  CHECK(load(Replace(triton, "type: i64}", "type: i64, divisibility: auto, width: auto}"), &pkg) == "");
  CHECK(pkg->kernels[0].HasNarrowVariant());
  CHECK(pkg->kernels[0].HasAlignedVariant());
  CHECK(load(triton, &pkg) == "");
  CHECK_FALSE(pkg->kernels[0].HasNarrowVariant());
  CHECK(load(Replace(triton, "type: i64}", "type: i64, width: 32}")) ==
        "k.yaml:12:33: error: width must be auto (an i32 variant, run when the value fits in 32 bits, as Triton's "
        "JIT does) or fixed\n");
  CHECK(load(Replace(triton, "type: i64}", "type: i64, width: [auto]}")) ==
        "k.yaml:12:33: error: width must be auto (an i32 variant, run when the value fits in 32 bits, as Triton's "
        "JIT does) or fixed\n");
  CHECK(load(Replace(triton, "{name: n, type: i64}", "{name: n, type: i32, width: auto}")) ==
        "k.yaml:12:33: error: width: auto applies only to i64 params ('n' is i32)\n");
  CHECK(load(Replace(triton, "{name: n, type: i64}", "{name: n, type: const i64*, width: auto}")) ==
        "k.yaml:12:40: error: width: auto applies only to i64 params ('n' is const i64*)\n");
  CHECK(load(Replace(kKernel, "type: i64}", "type: i64, width: auto}")) ==
        "k.yaml:11:33: error: width: auto applies to Triton kernels only (a CUDA kernel's C++ signature fixes its "
        "types)\n");
}

TEST_CASE("batch: how many specializations one nvcc run compiles, 1 to 64, from the package or the kernel") {
  CHECK(LoadErrors(std::string(kKernel) + "batch: 0\n") == "k.yaml:15:8: error: batch must be between 1 and 64\n");
  CHECK(LoadErrors(std::string(kKernel) + "batch: 65\n") == "k.yaml:15:8: error: batch must be between 1 and 64\n");
  CHECK(LoadErrors(std::string(kKernel) + "batch: all\n") == "k.yaml:15:8: error: batch must be an integer\n");
  CHECK(LoadErrors(kKernel, "package: demo\narchs: [sm_80]\nbatch: -2\nkernels: [k.yaml]\n") ==
        "package.yaml:3:8: error: batch must be between 1 and 64\n");
  // The kernel's own wins over the package's, which kernels inherit.
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nbatch: 3\nkernels: [k.yaml, j.yaml]\n");
  dir.Write("k.yaml", std::string(kKernel) + "batch: 1\n");
  dir.Write("j.yaml", Replace(kKernel, "kernel: vector_add", "kernel: other"));
  dir.Write("va.cuh", "");
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("package.yaml", {}, diag);
  REQUIRE(diag.Text() == "");
  CHECK(pkg->kernels[0].batch == 1);
  CHECK(pkg->kernels[1].batch == 3);
}
