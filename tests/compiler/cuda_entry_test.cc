// The entry's declaration in CUDA source (ScanCudaEntry, on the fixtures in
// fixtures/cuda_entry/) and the instance in a cubin's symbols (FindInstance,
// on mangled names that nvcc 13.0 emitted for -arch=sm_90 probes written for
// these tests).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_entry.h"
#include "cuda_instance.h"
#include "test_util.h"

using kpack::EntryForm;
using kpack::EntryScan;
using kpack::ExpectedArg;
using kpack::FindInstance;
using kpack::ScanCudaEntry;

namespace {

std::string FixtureDir() {
  const char* data = std::getenv("KPACK_TEST_DATA");
  REQUIRE(data != nullptr);
  return std::string(data) + "/fixtures/cuda_entry";
}

EntryScan Scan(const std::string& file, const std::string& entry, std::vector<std::string> include_dirs = {}) {
  return ScanCudaEntry(FixtureDir() + "/" + file, entry, include_dirs);
}

// A scan of one file written into a scratch directory.
EntryScan ScanText(const std::string& text, const std::string& entry) {
  kpack::testing::ScratchDir dir;
  dir.Write("k.cuh", text);
  return ScanCudaEntry("k.cuh", entry, {});
}

// "__global__ 3:7" / "__device__ ..." / "unknown 0:0": form and position.
std::string Where(const EntryScan& s) {
  return std::string(kpack::EntryFormName(s.form)) + " " + std::to_string(s.line) + ":" + std::to_string(s.column);
}

ExpectedArg Int(int64_t v) { return {ExpectedArg::kInteger, v, ""}; }
ExpectedArg Bool(bool b) { return {ExpectedArg::kBool, b ? 1 : 0, ""}; }
ExpectedArg Type(const std::string& t) { return {ExpectedArg::kType, 0, t}; }
ExpectedArg Name(const std::string& n) { return {ExpectedArg::kName, 0, n}; }

// "ok <demangled>" or the error.
std::string Find(const std::vector<std::string>& symbols, const std::string& entry,
                 const std::vector<ExpectedArg>& args) {
  std::string demangled, error;
  std::optional<std::string> found = FindInstance(symbols, entry, args, &demangled, &error);
  if (!found) return error;
  return "ok " + demangled;
}

std::string Find1(const std::string& symbol, const std::string& entry, const std::vector<ExpectedArg>& args) {
  return Find({symbol}, entry, args);
}

// ---- Symbols from nvcc 13.0 -cubin -arch=sm_90 -std=c++17 probes ----

// template <uint32_t N, typename T> __global__ void ns::k(T*, int)
const char* kK8 = "_ZN2ns1kILj8EfEEvPT0_i";  // ns::k<8u, float>
const char* kK4 = "_ZN2ns1kILj4EfEEvPT0_i";  // ns::k<4u, float>
const char* kK9 = "_ZN2ns1kILj9EfEEvPT0_i";  // ns::k<9u, float>
// flashinfer-style kernels written for the probe (not FlashInfer's code).
const char* kRms8Half = "_ZN10flashinfer4norm13RMSNormKernelILj8E6__halfEEvPT0_S4_S4_jjjff";
const char* kRms4Bf16 = "_ZN10flashinfer4norm13RMSNormKernelILj4E13__nv_bfloat16EEvPT0_S4_S4_jjjff";
const char* kActSilu =
    "_ZN10flashinfer10activation18act_and_mul_kernelI6__halfXadL_ZNS0_4siluERKfEELj8EEEvPT_PKS5_i";
const char* kPlainC = "plain_c_kernel";  // extern "C"

// template <typename T> __global__ void ns::t(int), one per type.
struct TypeCase {
  const char* written;  // as kpack writes it
  const char* symbol;
  const char* demangled_arg;
};
const TypeCase kTypeCases[] = {
    {"half", "_ZN2ns1tI6__halfEEvi", "__half"},
    {"__half", "_ZN2ns1tI6__halfEEvi", "__half"},
    {"half2", "_ZN2ns1tI7__half2EEvi", "__half2"},
    {"nv_bfloat16", "_ZN2ns1tI13__nv_bfloat16EEvi", "__nv_bfloat16"},
    {"__nv_bfloat16", "_ZN2ns1tI13__nv_bfloat16EEvi", "__nv_bfloat16"},
    {"nv_bfloat162", "_ZN2ns1tI14__nv_bfloat162EEvi", "__nv_bfloat162"},
    {"__nv_fp8_e4m3", "_ZN2ns1tI13__nv_fp8_e4m3EEvi", "__nv_fp8_e4m3"},
    {"float", "_ZN2ns1tIfEEvi", "float"},
    {"double", "_ZN2ns1tIdEEvi", "double"},
    {"long double", "_ZN2ns1tIeEEvi", "long double"},
    {"bool", "_ZN2ns1tIbEEvi", "bool"},
    {"char", "_ZN2ns1tIcEEvi", "char"},
    {"int8_t", "_ZN2ns1tIaEEvi", "signed char"},
    {"uint8_t", "_ZN2ns1tIhEEvi", "unsigned char"},
    {"int16_t", "_ZN2ns1tIsEEvi", "short"},
    {"uint16_t", "_ZN2ns1tItEEvi", "unsigned short"},
    {"int32_t", "_ZN2ns1tIiEEvi", "int"},
    {"int", "_ZN2ns1tIiEEvi", "int"},
    {"uint32_t", "_ZN2ns1tIjEEvi", "unsigned int"},
    {"unsigned", "_ZN2ns1tIjEEvi", "unsigned int"},
    {"std::uint32_t", "_ZN2ns1tIjEEvi", "unsigned int"},
    {"int64_t", "_ZN2ns1tIlEEvi", "long"},
    {"long int", "_ZN2ns1tIlEEvi", "long"},
    {"uint64_t", "_ZN2ns1tImEEvi", "unsigned long"},
    {"size_t", "_ZN2ns1tImEEvi", "unsigned long"},
    {"long long", "_ZN2ns1tIxEEvi", "long long"},
    {"unsigned long long", "_ZN2ns1tIyEEvi", "unsigned long long"},
    {"Traits", "_ZN2ns1tINS_6TraitsEEEvi", "ns::Traits"},
    {"ns::Traits", "_ZN2ns1tINS_6TraitsEEEvi", "ns::Traits"},
    {"::ns::Traits", "_ZN2ns1tINS_6TraitsEEEvi", "ns::Traits"},
    {"ns::Vec<float>", "_ZN2ns1tINS_3VecIfEEEEvi", "ns::Vec<float>"},
    {"Vec<Vec<int32_t> >", "_ZN2ns1tINS_3VecINS1_IiEEEEEEvi", "ns::Vec<ns::Vec<int>>"},
    {"const float*", "_ZN2ns1tIPKfEEvi", "float const*"},
    {"const ns::Arr<half, 4>*", "_ZN2ns1tIPKNS_3ArrI6__halfLi4EEEEEvi", "ns::Arr<__half, 4> const*"},
    // A struct in an anonymous namespace of the probe's .cu file.
    {"Local", "_ZN2ns1tIN36_GLOBAL__N__91a953f2_4_p_cu_128c78b95LocalEEEvi", "(anonymous namespace)::Local"},
};

}  // namespace

// ============================== A) Source scan ==============================

TEST_CASE("scan: a __global__ template in nested namespaces, launch bounds after __global__") {
  EntryScan s = Scan("global_ns.cuh", "demo::act::gated_kernel");
  CHECK(Where(s) == "__global__ 18:40");
  CHECK(s.file == FixtureDir() + "/global_ns.cuh");
  CHECK(s.launch_bounds);
  CHECK_FALSE(s.cluster_dims);
  CHECK(s.files_read == std::vector<std::string>{FixtureDir() + "/global_ns.cuh"});  // cuda_fp16.h: not found
  // A leading "::" and no qualifier at all find the same declaration.
  CHECK(Where(Scan("global_ns.cuh", "::demo::act::gated_kernel")) == "__global__ 18:40");
  CHECK(Where(Scan("global_ns.cuh", "gated_kernel")) == "__global__ 18:40");
  // The namespaces are not verified (the cubin's symbol proves them).
  CHECK(Where(Scan("global_ns.cuh", "elsewhere::gated_kernel")) == "__global__ 18:40");
  // The device function before it.
  CHECK(Where(Scan("global_ns.cuh", "demo::act::relu")) == "__device__ 14:34");
}

TEST_CASE("scan: __device__ templates") {
  EntryScan s = Scan("device_template.cuh", "demo::scale_elem");
  CHECK(Where(s) == "__device__ 11:30");
  CHECK_FALSE(s.launch_bounds);
  CHECK(Where(Scan("device_template.cuh", "demo::twice")) == "__device__ 16:30");
}

TEST_CASE("scan: static, inline, extern \"C\", __cluster_dims__ and attributes") {
  CHECK(Where(Scan("static_inline.cuh", "static_kernel")) == "__global__ 6:24");
  EntryScan clustered = Scan("static_inline.cuh", "clustered_kernel");
  CHECK(Where(clustered) == "__global__ 9:50");
  CHECK(clustered.cluster_dims);
  CHECK_FALSE(clustered.launch_bounds);
  CHECK(Where(Scan("static_inline.cuh", "helper")) == "__device__ 12:28");
  CHECK(Where(Scan("static_inline.cuh", "c_kernel")) == "__global__ 14:28");
  EntryScan late = Scan("static_inline.cuh", "late_bounds_kernel");
  CHECK(Where(late) == "__global__ 17:43");
  CHECK(late.launch_bounds);
  CHECK(Where(Scan("static_inline.cuh", "attributed")) == "__device__ 20:28");
  // 1'000 is a number, not the start of a character literal.
  CHECK(Where(Scan("static_inline.cuh", "sep_kernel")) == "__global__ 22:51");
}

TEST_CASE("scan: entries in included headers, quoted and angled") {
  std::string dir = FixtureDir();
  std::vector<std::string> includes = {dir + "/incdir"};
  EntryScan quoted = Scan("includes_main.cuh", "demo::quoted_kernel", includes);
  CHECK(Where(quoted) == "__global__ 8:17");
  CHECK(quoted.file == dir + "/sub/quoted.cuh");
  // It stops at the first match: angled.cuh is never opened.
  CHECK(quoted.files_read == std::vector<std::string>{dir + "/includes_main.cuh", dir + "/sub/quoted.cuh"});

  EntryScan angled = Scan("includes_main.cuh", "demo::angled_fn", includes);
  CHECK(Where(angled) == "__device__ 8:14");
  CHECK(angled.file == dir + "/incdir/angled.cuh");
  CHECK(angled.files_read ==
        std::vector<std::string>{dir + "/includes_main.cuh", dir + "/sub/quoted.cuh", dir + "/incdir/angled.cuh"});

  // Quoted, not beside its includer: found through the include directories.
  EntryScan dirs = Scan("includes_main.cuh", "demo::dirs_kernel", includes);
  CHECK(Where(dirs) == "__global__ 9:17");
  CHECK(dirs.file == dir + "/incdir/from_dirs.cuh");

  // Without the include directories, the angled and the far quoted header
  // are skipped like a system header.
  EntryScan none = Scan("includes_main.cuh", "demo::angled_fn");
  CHECK(Where(none) == "unknown 0:0");
  CHECK(none.files_read == std::vector<std::string>{dir + "/includes_main.cuh", dir + "/sub/quoted.cuh"});

  // Depth-first in source order: the declaration in the header included
  // first wins over the one later in the including file.
  EntryScan shadow = Scan("includes_main.cuh", "demo::shadow_kernel", includes);
  CHECK(shadow.file == dir + "/sub/quoted.cuh");
  CHECK(Where(shadow) == "__global__ 11:17");
}

TEST_CASE("scan: calls before the declaration are not it") {
  EntryScan s = Scan("call_before.cuh", "late_kernel");
  CHECK(Where(s) == "__global__ 36:17");
}

TEST_CASE("scan: comments and literals that spell a declaration are blanked") {
  EntryScan s = Scan("comments_strings.cuh", "masked_fn");
  CHECK(Where(s) == "__device__ 16:47");
}

TEST_CASE("scan: qualified definitions outside their namespace") {
  // other:: and Outer<T>:: are not the entry's qualifiers; inner:: is.
  CHECK(Where(Scan("qualified.cuh", "demo::inner::split_kernel")) == "__device__ 13:24");
  CHECK(Where(Scan("qualified.cuh", "inner::split_kernel")) == "__device__ 13:24");
  CHECK(Where(Scan("qualified.cuh", "demo::split_kernel")) == "unknown 0:0");
  CHECK(Where(Scan("qualified.cuh", "other::split_kernel")) == "__global__ 7:24");
}

TEST_CASE("scan: not found, unreadable, and a macro's execution space") {
  EntryScan absent = Scan("global_ns.cuh", "demo::act::absent_kernel");
  CHECK(absent.form == EntryForm::kUnknown);
  CHECK(absent.line == 0);
  CHECK(absent.file.empty());
  CHECK(absent.files_read.size() == 1);

  EntryScan missing = Scan("no_such_file.cuh", "k");
  CHECK(Where(missing) == "unknown 0:0");
  CHECK(missing.files_read.empty());

  // Macros are not expanded: the declaration is found, its form is not.
  EntryScan macro = Scan("macro_form.cuh", "macro_kernel");
  CHECK(Where(macro) == "unknown 8:18");
  CHECK(macro.file == FixtureDir() + "/macro_form.cuh");

  // Not a name kpack can look for.
  CHECK(Where(Scan("global_ns.cuh", "demo::act::gated_kernel<float>")) == "unknown 0:0");
  CHECK(Where(Scan("global_ns.cuh", "")) == "unknown 0:0");
}

TEST_CASE("scan: an include cycle reads each file once") {
  std::string dir = FixtureDir();
  EntryScan s = Scan("cycle_a.cuh", "cycle_kernel");
  CHECK(Where(s) == "__global__ 8:17");
  CHECK(s.files_read == std::vector<std::string>{dir + "/cycle_a.cuh", dir + "/cycle_b.cuh"});
  EntryScan absent = Scan("cycle_a.cuh", "nothing_here");
  CHECK(absent.files_read == std::vector<std::string>{dir + "/cycle_a.cuh", dir + "/cycle_b.cuh"});
  CHECK(Where(Scan("cycle_a.cuh", "cycle_helper")) == "__device__ 7:23");
}

TEST_CASE("scan: declarations and look-alikes in one file") {
  // FlashInfer's layout: attributes before the return type, a template
  // header over two lines with defaults.
  CHECK(Where(ScanText("namespace a { namespace b {\n"
                       "template <typename T, float (*Act)(const float&), uint32_t V>\n"
                       "__global__ __launch_bounds__(256) void act_kernel(T* out, const T* in, const int d) {}\n"
                       "}}\n",
                       "a::b::act_kernel")) == "__global__ 3:40");
  // An attribute macro with arguments, not expanded: the keyword it hides is
  // not seen.
  EntryScan bounded = ScanText("template <uint32_t B>\n__global__ DEMO_BOUNDS(B) void mb(float* x) {}\n", "mb");
  CHECK(Where(bounded) == "__global__ 2:32");
  CHECK_FALSE(bounded.launch_bounds);
  // ... but a macro call without `;` before a call is still no declaration.
  CHECK(Where(ScanText("__device__ void f() {\n  DEMO_CHECK(x) mc(1);\n}\n", "mc")) == "unknown 0:0");
  // A requires-clause, an access label, a macro call without `;` before the
  // template, a return type with template arguments.
  CHECK(Where(ScanText("template <typename T> requires (sizeof(T) >= 2)\n__global__ void rk(T* x) {}\n", "rk")) ==
        "__global__ 2:17");
  CHECK(Where(ScanText("struct S {\n public: __device__ static void mk(int);\n};\n", "mk")) == "__device__ 2:33");
  CHECK(Where(ScanText("DEFINE_THING(x)\ntemplate <int N>\n__global__ void after_macro(int* p) {}\n", "after_macro")) ==
        "__global__ 3:17");
  CHECK(Where(ScanText("template <typename T>\n__device__ Pair<T, int> pk(T x);\n", "pk")) == "__device__ 2:25");
  // `void ::k(`: anchored at the global namespace.
  CHECK(Where(ScanText("__global__ void ::gk(int* x) {}\n", "gk")) == "__global__ 1:19");
  CHECK(Where(ScanText("__global__ void ::gk(int* x) {}\n", "ns::gk")) == "unknown 0:0");
  // A directive between statements ends the prefix.
  CHECK(Where(ScanText("#define X 1\n__device__ int dk(int x);\n", "dk")) == "__device__ 2:16");
  // Look-alikes: a variable initialised by a call, a function pointer, a
  // call inside a device lambda, a comparison in a template argument.
  CHECK(Where(ScanText("__device__ int v = k1(3);\n"
                       "__device__ int (*p)(int) = k1;\n"
                       "__global__ void (*q)(int*);\n"
                       "auto l = [] __device__ (int i) { return k1(i); };\n"
                       "__device__ Foo<(3 > 2)> w = k1(1);\n"
                       "__device__ int a1, k1(4);\n",
                       "k1")) == "unknown 0:0");
  // A raw string that spans lines keeps the line count.
  CHECK(Where(ScanText("const char* s = R\"x(\n__global__ void rs(int*);\n)x\";\n__device__ void rs(int*);\n",
                       "rs")) == "__device__ 4:17");
  // A byte order mark before a directive; CRLF line ends.
  CHECK(Where(ScanText("\xEF\xBB\xBF#include \"x.h\"\r\n__global__ void bom(int*);\r\n", "bom")) ==
        "__global__ 2:17");
  // A `//` comment continued by a backslash.
  CHECK(Where(ScanText("// hidden \\\n__global__ void cont(int*);\n__device__ void cont(int*);\n", "cont")) ==
        "__device__ 3:17");
}

TEST_CASE("scan: at most 4000 files") {
  kpack::testing::ScratchDir dir;
  // Appended piece by piece: GCC 12 warns about `"literal" + std::string&&`
  // (a false -Wrestrict, GCC bug 105329).
  auto file = [](int i) {
    std::string name = "f";
    name += std::to_string(i);
    name += ".cuh";
    return name;
  };
  for (int i = 0; i <= 4001; ++i) {
    std::string text = "#include \"";
    text += file(i + 1);
    text += "\"\n";
    dir.Write(file(i), text);
  }
  EntryScan s = ScanCudaEntry("f0.cuh", "k", {});
  CHECK(s.form == EntryForm::kUnknown);
  CHECK(s.files_read.size() == 4000);
  CHECK(s.files_read.back() == "f3999.cuh");
}

// ============================ B) Instance proof ============================

TEST_CASE("demangle: readable names without the return type") {
  CHECK(kpack::Demangle(kK8) == "ns::k<8u, float>(float*, int)");
  CHECK(kpack::Demangle(kRms8Half) ==
        "flashinfer::norm::RMSNormKernel<8u, __half>(__half*, __half*, __half*, unsigned int, unsigned int, "
        "unsigned int, float, float)");
  CHECK(kpack::Demangle(kPlainC) == "plain_c_kernel");
  CHECK(kpack::Demangle("_Z4statPi") == "stat(int*)");
  CHECK(kpack::Demangle("__nv_static_25__831cfc1c_4_s_cu_34ed719f__ZN2ns2stIfEEvPT_") == "ns::st<float>(float*)");
  CHECK(kpack::Demangle("_ZN2ns1fILj8EfXadL_Z4siluRKfEEEEvPT0_") == "ns::f<8u, float, &silu(float const&)>(float*)");
}

TEST_CASE("instance: FlashInfer-style kernels") {
  std::vector<std::string> cubin = {kRms8Half};
  CHECK(Find(cubin, "flashinfer::norm::RMSNormKernel", {Int(8), Type("half")}) ==
        "ok flashinfer::norm::RMSNormKernel<8u, __half>(__half*, __half*, __half*, unsigned int, unsigned int, "
        "unsigned int, float, float)");
  CHECK(Find(cubin, "::flashinfer::norm::RMSNormKernel", {Int(8), Type("__half")}).substr(0, 3) == "ok ");
  CHECK(Find1(kRms4Bf16, "flashinfer::norm::RMSNormKernel", {Int(4), Type("nv_bfloat16")}).substr(0, 3) == "ok ");
  CHECK(Find1(kActSilu, "flashinfer::activation::act_and_mul_kernel",
              {Type("half"), Name("flashinfer::activation::silu"), Int(8)})
            .substr(0, 3) == "ok ");
  CHECK(Find1(kActSilu, "flashinfer::activation::act_and_mul_kernel", {Type("half"), Name("silu"), Int(8)})
            .substr(0, 3) == "ok ");
  CHECK(Find1(kActSilu, "flashinfer::activation::act_and_mul_kernel", {Type("half"), Name("gelu"), Int(8)}) ==
        "the cubin's kernel is flashinfer::activation::act_and_mul_kernel<__half, "
        "&flashinfer::activation::silu(float const&), 8u>(__half*, __half const*, int), not the instance kpack "
        "asked for: template argument 2 is &flashinfer::activation::silu(float const&), expected gelu");
  // The returned symbol is the mangled one, among others.
  std::string demangled, error;
  std::optional<std::string> found =
      FindInstance({kPlainC, kRms8Half, kActSilu}, "flashinfer::norm::RMSNormKernel", {Int(8), Type("half")},
                   &demangled, &error);
  REQUIRE(found);
  CHECK(*found == kRms8Half);
  CHECK(error.empty());
}

TEST_CASE("instance: every kpack type spelling against nvcc's") {
  for (const TypeCase& c : kTypeCases) {
    INFO(c.written);
    CHECK(Find1(c.symbol, "ns::t", {Type(c.written)}) ==
          "ok ns::t<" + std::string(c.demangled_arg) + ">(int)");
  }
  // Mismatches: the spelling maps, so a different width is a different type.
  CHECK(Find1("_ZN2ns1tIjEEvi", "ns::t", {Type("int32_t")}) ==
        "the cubin's kernel is ns::t<unsigned int>(int), not the instance kpack asked for: template argument 1 "
        "is unsigned int, expected int32_t");
  CHECK(Find1("_ZN2ns1tIlEEvi", "ns::t", {Type("long long")}).substr(0, 3) != "ok ");
  CHECK(Find1("_ZN2ns1tI6__halfEEvi", "ns::t", {Type("mylib::half")}).substr(0, 3) != "ok ");
  CHECK(Find1("_ZN2ns1tINS_6TraitsEEEvi", "ns::t", {Type("other::Traits")}).substr(0, 3) != "ok ");
  CHECK(Find1("_ZN2ns1tINS_6TraitsEEEvi", "ns::t", {Type("::Traits")}).substr(0, 3) != "ok ");
  CHECK(Find1("_ZN2ns1tIPKfEEvi", "ns::t", {Type("float*")}).substr(0, 3) != "ok ");
  CHECK(Find1("_ZN2ns1tIfEEvi", "ns::t", {Int(0)}) ==
        "the cubin's kernel is ns::t<float>(int), not the instance kpack asked for: template argument 1 is float, "
        "expected 0");
}

TEST_CASE("instance: integers of every width, bool, by value") {
  // ns::ints<true, -3, 5000000000l, 7ul, (unsigned char)200, (short)-3,
  //          (signed char)-5, (unsigned short)60000, (char)97>
  const char* ints = "_ZN2ns4intsILb1ELin3ELl5000000000ELm7ELh200ELsn3ELan5ELt60000ELc97EEEvPi";
  CHECK(Find1(ints, "ns::ints",
              {Bool(true), Int(-3), Int(5000000000), Int(7), Int(200), Int(-3), Int(-5), Int(60000), Int(97)}) ==
        "ok ns::ints<true, -3, 5000000000l, 7ul, (unsigned char)200, (short)-3, (signed char)-5, "
        "(unsigned short)60000, (char)97>(int*)");
  // A bool given as an integer compares by value too.
  CHECK(Find1(ints, "ns::ints",
              {Int(1), Int(-3), Int(5000000000), Int(7), Int(200), Int(-3), Int(-5), Int(60000), Int(97)})
            .substr(0, 3) == "ok ");
  CHECK(Find1(ints, "ns::ints",
              {Bool(false), Int(-3), Int(5000000000), Int(7), Int(200), Int(-3), Int(-5), Int(60000), Int(97)}) ==
        "the cubin's kernel is ns::ints<true, -3, 5000000000l, 7ul, (unsigned char)200, (short)-3, (signed char)-5, "
        "(unsigned short)60000, (char)97>(int*), not the instance kpack asked for: template argument 1 is true, "
        "expected false");
  CHECK(Find1(ints, "ns::ints",
              {Bool(true), Int(3), Int(5000000000), Int(7), Int(200), Int(-3), Int(-5), Int(60000), Int(97)})
            .find("template argument 2 is -3, expected 3") != std::string::npos);
  CHECK(Find1(ints, "ns::ints",
              {Bool(true), Int(-3), Int(5000000000), Int(7), Int(200), Int(-3), Int(-5), Int(60000), Int(98)})
            .find("template argument 9 is (char)97, expected 98") != std::string::npos);
  // ns::ints<false, 0, -1l, 0ul, (unsigned char)0, ...>
  const char* zeros = "_ZN2ns4intsILb0ELi0ELln1ELm0ELh0ELs0ELa0ELt0ELc0EEEvPi";
  CHECK(Find1(zeros, "ns::ints", {Bool(false), Int(0), Int(-1), Int(0), Int(0), Int(0), Int(0), Int(0), Int(0)})
            .substr(0, 3) == "ok ");
  // ns::big<-5000000000ll, 18446744073709551615ull, -9223372036854775808l,
  //         18446744073709551615ul, 7ul, (ns::Small)200>: 64-bit limits; an
  // unsigned maximum is given as its int64 pattern, -1.
  const char* big = "_ZN2ns3bigILxn5000000000ELy18446744073709551615ELln9223372036854775808ELm18446744073709551615ELm7"
                    "ELNS_5SmallE200EEEvi";
  CHECK(Find1(big, "ns::big", {Int(-5000000000), Int(-1), Int(INT64_MIN), Int(-1), Int(7), Int(200)}) ==
        "ok ns::big<-5000000000ll, 18446744073709551615ull, -9223372036854775808l, 18446744073709551615ul, 7ul, "
        "(ns::Small)200>(int)");
  // A u32 parameter and a negative int one.
  CHECK(Find1("_ZN2ns5inner4deepIfLin3EEEvPT_", "ns::inner::deep", {Type("float"), Int(-3)}) ==
        "ok ns::inner::deep<float, -3>(float*)");
  CHECK(Find1("_ZN2ns5inner4deepIfLin3EEEvPT_", "ns::inner::deep", {Type("float"), Int(3)})
            .find("template argument 2 is -3, expected 3") != std::string::npos);
}

TEST_CASE("instance: enumerators and function pointers") {
  // ns::en<(ns::Mode)1, (ns::Plain)2>: Mode is scoped, Plain is not.
  const char* en = "_ZN2ns2enILNS_4ModeE1ELNS_5PlainE2EEEvPi";
  CHECK(Find1(en, "ns::en", {Int(1), Int(2)}) == "ok ns::en<(ns::Mode)1, (ns::Plain)2>(int*)");
  CHECK(Find1(en, "ns::en", {Name("ns::Mode::kB"), Name("ns::P2")}).substr(0, 3) == "ok ");
  CHECK(Find1(en, "ns::en", {Name("Mode::kB"), Name("Plain::P2")}).substr(0, 3) == "ok ");
  CHECK(Find1(en, "ns::en", {Name("::ns::Mode::kB"), Name("::ns::P2")}).substr(0, 3) == "ok ");
  // Only the type is proven: another enumerator of Mode passes.
  CHECK(Find1(en, "ns::en", {Name("ns::Mode::kA"), Name("ns::P2")}).substr(0, 3) == "ok ");
  CHECK(Find1(en, "ns::en", {Name("ns::Other::kB"), Name("ns::P2")}) ==
        "the cubin's kernel is ns::en<(ns::Mode)1, (ns::Plain)2>(int*), not the instance kpack asked for: "
        "template argument 1 is (ns::Mode)1, expected ns::Other::kB");
  CHECK(Find1(en, "ns::en", {Int(2), Int(2)}).find("template argument 1 is (ns::Mode)1, expected 2") !=
        std::string::npos);
  // An enum with an unsigned char underlying type: (ns::Small)200.
  const char* big = "_ZN2ns3bigILxn5000000000ELy18446744073709551615ELln9223372036854775808ELm18446744073709551615ELm7"
                    "ELNS_5SmallE200EEEvi";
  CHECK(Find1(big, "ns::big", {Int(-5000000000), Int(-1), Int(INT64_MIN), Int(-1), Int(7), Name("ns::Small::b")})
            .substr(0, 3) == "ok ");
  // An integer is not an enumerator.
  CHECK(Find1(big, "ns::big", {Name("ns::A"), Int(-1), Int(INT64_MIN), Int(-1), Int(7), Int(200)})
            .find("template argument 1 is -5000000000ll, expected ns::A") != std::string::npos);

  // ns::f<8u, float, &silu(float const&)>, ns::f<4u, float, &ns::gelu(...)>,
  // ns::f<2u, float, (float (*)(float const&))0>.
  CHECK(Find1("_ZN2ns1fILj8EfXadL_Z4siluRKfEEEEvPT0_", "ns::f", {Int(8), Type("float"), Name("silu")}) ==
        "ok ns::f<8u, float, &silu(float const&)>(float*)");
  CHECK(Find1("_ZN2ns1fILj8EfXadL_Z4siluRKfEEEEvPT0_", "ns::f", {Int(8), Type("float"), Name("::silu")})
            .substr(0, 3) == "ok ");
  CHECK(Find1("_ZN2ns1fILj8EfXadL_Z4siluRKfEEEEvPT0_", "ns::f", {Int(8), Type("float"), Name("ns::silu")}) ==
        "the cubin's kernel is ns::f<8u, float, &silu(float const&)>(float*), not the instance kpack asked for: "
        "template argument 3 is &silu(float const&), expected ns::silu");
  const char* gelu = "_ZN2ns1fILj4EfXadL_ZNS_4geluERKfEEEEvPT0_";
  CHECK(Find1(gelu, "ns::f", {Int(4), Type("float"), Name("ns::gelu")}).substr(0, 3) == "ok ");
  CHECK(Find1(gelu, "ns::f", {Int(4), Type("float"), Name("gelu")}).substr(0, 3) == "ok ");
  CHECK(Find1(gelu, "ns::f", {Int(4), Type("float"), Name("silu")}).substr(0, 3) != "ok ");
  const char* null_fn = "_ZN2ns1fILj2EfLPFfRKfE0EEEvPT0_";
  CHECK(Find1(null_fn, "ns::f", {Int(2), Type("float"), Name("nullptr")}) ==
        "ok ns::f<2u, float, (float (*)(float const&))0>(float*)");
  CHECK(Find1(null_fn, "ns::f", {Int(2), Type("float"), Int(0)}).substr(0, 3) != "ok ");
  CHECK(Find1(null_fn, "ns::f", {Int(2), Type("float"), Name("silu")}).substr(0, 3) != "ok ");
  // An instance of a function template carries its return type:
  // ns::fp<&float ns::act<float>(float const&)>.
  const char* act = "_ZN2ns2fpIXadL_ZNS_3actIfEET_RKS2_EEEEvPf";
  CHECK(Find1(act, "ns::fp", {Name("ns::act<float>")}) == "ok ns::fp<&float ns::act<float>(float const&)>(float*)");
  CHECK(Find1(act, "ns::fp", {Name("act<double>")}).substr(0, 3) != "ok ");
}

TEST_CASE("instance: parameter packs are flattened") {
  CHECK(Find1("_ZN2ns4packIJfiNS_3ArrIfLi3EEEEEEvi", "ns::pack",
              {Type("float"), Type("int32_t"), Type("ns::Arr<float, 3>")}) ==
        "ok ns::pack<float, int, ns::Arr<float, 3>>(int)");
  CHECK(Find1("_ZN2ns4packIJEEEvi", "ns::pack", {}) == "ok ns::pack<>(int)");
  CHECK(Find1("_ZN2ns5ipackIJLi1ELin2ELi3EEEEvi", "ns::ipack", {Int(1), Int(-2), Int(3)}) ==
        "ok ns::ipack<1, -2, 3>(int)");
}

TEST_CASE("instance: internal linkage prefixes are ignored") {
  // static __global__ void stat(int*): no prefix without -rdc, the
  // __nv_static_ prefix with -rdc=true.
  CHECK(Find1("_Z4statPi", "stat", {}) == "ok stat(int*)");
  CHECK(Find1("__nv_static_25__831cfc1c_4_s_cu_34ed719f__Z4statPi", "::stat", {}) == "ok stat(int*)");
  CHECK(Find1("__nv_static_25__831cfc1c_4_s_cu_34ed719f__ZN2ns2stIfEEvPT_", "ns::st", {Type("float")}) ==
        "ok ns::st<float>(float*)");
  // A template in an anonymous namespace: nvcc's _GLOBAL__N__<hex>... name.
  CHECK(Find1("_ZN36_GLOBAL__N__91a953f2_4_p_cu_128c78b94anonIfEEvPT_", "anon", {Type("float")}) ==
        "ok (anonymous namespace)::anon<float>(float*)");
  CHECK(Find1("__nv_static_25__831cfc1c_4_s_cu_34ed719f__ZN36_GLOBAL__N__831cfc1c_4_s_cu_34ed719f4anonIiEEvPT_",
              "anon", {Type("int")}) == "ok (anonymous namespace)::anon<int>(int*)");
  // Built by hand in the format of older nvcc, which put an _INTERNAL_
  // namespace in front of internal-linkage functions.
  CHECK(Find1("_ZN38_INTERNAL_8c1cfa1e_9_probe_cu_f19ce4f35sweepIfEEvPT_i", "sweep", {Type("float")}) ==
        "ok _INTERNAL_8c1cfa1e_9_probe_cu_f19ce4f3::sweep<float>(float*, int)");
  // extern "C": the symbol is the name.
  CHECK(Find1(kPlainC, "plain_c_kernel", {}) == "ok plain_c_kernel");
}

TEST_CASE("instance: the error texts") {
  CHECK(Find({kK8, kPlainC}, "flashinfer::norm::RMSNormKernel", {Int(8), Type("half")}) ==
        "the cubin has no kernel named flashinfer::norm::RMSNormKernel; its kernels: ns::k<8u, float>(float*, "
        "int), plain_c_kernel");
  CHECK(Find({}, "::ns::k", {Int(8), Type("float")}) == "the cubin has no kernel named ns::k; its kernels: (none)");
  // The qualified name must be whole: k is not ns::k.
  CHECK(Find({kK8}, "k", {Int(8), Type("float")}) ==
        "the cubin has no kernel named k; its kernels: ns::k<8u, float>(float*, int)");
  // A batch's cubin holds every member's instance: the one asked for is found...
  CHECK(Find({kK8, kK4}, "ns::k", {Int(8), Type("float")}) == "ok ns::k<8u, float>(float*, int)");
  // ...and when none matches, all are listed.
  CHECK(Find({kK8, kK4}, "ns::k", {Int(16), Type("float")}) ==
        "the cubin has 2 instances of ns::k: ns::k<8u, float>, ns::k<4u, float>; kpack asked for one");
  CHECK(Find({kK9}, "ns::k", {Int(8), Type("float")}) ==
        "the cubin's kernel is ns::k<9u, float>(float*, int), not the instance kpack asked for: template "
        "argument 1 is 9u, expected 8");
  CHECK(Find({kK8}, "ns::k", {Int(8), Type("float"), Bool(true)}) ==
        "the cubin's kernel is ns::k<8u, float>(float*, int), not the instance kpack asked for: it has 2 "
        "template arguments, expected 3");
  // A `type: cpp` value may name a type.
  CHECK(FindInstance({kK8}, "ns::k", {Int(8), Name("float")}, nullptr, nullptr) == std::string(kK8));
  // Trailing arguments kpack did not write are the template's defaults.
  CHECK(FindInstance({kK8}, "ns::k", {Int(8)}, nullptr, nullptr) == std::string(kK8));
  CHECK(Find({kK9}, "ns::k", {Int(8)}) ==
        "the cubin's kernel is ns::k<9u, float>(float*, int), not the instance kpack asked for: template "
        "argument 1 is 9u, expected 8");
  CHECK(Find({"_Z4statPi"}, "stat", {Int(1)}) ==
        "the cubin's kernel is stat(int*), not the instance kpack asked for: it has 0 template arguments, "
        "expected 1");
  // Null pointers for the outputs are allowed.
  CHECK_FALSE(FindInstance({kK9}, "ns::k", {Int(8), Type("float")}, nullptr, nullptr));
  CHECK(FindInstance({kK8}, "ns::k", {Int(8), Type("float")}, nullptr, nullptr) == std::string(kK8));
}

TEST_CASE("instance: MatchInstance compares one symbol") {
  kpack::InstanceMatch m = kpack::MatchInstance(kK8, "ns::k", {Int(8), Type("uint32_t")});
  CHECK_FALSE(m.ok);
  CHECK(m.demangled == "ns::k<8u, float>(float*, int)");
  CHECK(m.detail == "template argument 2 is float, expected uint32_t");
  CHECK(kpack::MatchInstance(kK8, "ns::j", {}).detail == "it is not ns::j");
  CHECK(kpack::MatchInstance(kK8, "ns::k", {Int(8), Type("float")}).ok);
}
