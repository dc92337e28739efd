// cuda_instance.h - which instance of a CUDA entry a cubin holds, read
// from the kernels' mangled symbols (the check pass of a __global__ entry;
// cuda_entry.h finds the entry's form in the source).
//
// FindInstance picks, among a cubin's kernel symbols, the one that is
// `entry<args>`, by demangling each (LLVM's Itanium demangler) and comparing
// the qualified name and every template argument with what kpack wrote in
// its explicit instantiation.
//
// Demangled spellings, as established from nvcc 13.0 (sm_90) cubins and
// LLVM 19's demangler:
//   * types: float, double, bool, char, signed char (int8_t), unsigned char
//     (uint8_t), short (int16_t), unsigned short (uint16_t), int (int32_t),
//     unsigned int (uint32_t, unsigned), long (int64_t, ptrdiff_t),
//     unsigned long (uint64_t, size_t), long long, unsigned long long,
//     __half (half), __half2 (half2), __nv_bfloat16 (nv_bfloat16),
//     __nv_bfloat162 (nv_bfloat162), __nv_fp8_e4m3, __nv_fp8_e5m2, float2,
//     user types fully qualified (ns::Traits, ns::Vec<ns::Vec<int>>), `const
//     T*` as `T const*`, anonymous namespaces as `(anonymous namespace)`.
//   * integers: 8 (int), 8u (unsigned int), -1l (long), 7ul (unsigned long),
//     -5ll, 18446744073709551615ull, (unsigned char)200, (signed char)-5,
//     (short)-3, (unsigned short)60000, (char)97, true/false (bool),
//     (ns::Mode)1 (enumerators, scoped or not).
//   * function pointers: &silu(float const&), &ns::gelu(float const&),
//     &float ns::act<float>(float const&) (a function template's instance
//     carries its return type), a null one (float (*)(float const&))0.
//   * parameter packs are flattened: k<float, int>; an empty one is k<>.
//   * internal linkage: an anonymous namespace is mangled as
//     `_GLOBAL__N__<hex>_<n>_<file>_<hex>` (demangled "(anonymous
//     namespace)"); older nvcc put `_INTERNAL_<...>` namespaces in front of
//     static functions; with -rdc=true nvcc 13 prefixes the whole symbol of
//     an internal-linkage kernel with `__nv_static_<n>_<n chars>_`.  All three
//     are ignored when names are compared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kpack {

// One template argument as kpack wrote it in the explicit instantiation.
struct ExpectedArg {
  enum Kind {
    kInteger,  // `integer`: the value of a non-type parameter of any integral
               // or enumeration type (an enumerator compares by its value)
    kBool,     // `integer`: 1 for true, 0 for false
    kType,     // `text`: a C++ type as kpack writes it: float, half, __half,
               // nv_bfloat16, int32_t, uint64_t, ..., or a user's (qualified)
               // type name, "ns::Traits", "Vec<float>", "const float*"
    kName,     // `text`: a qualified function name ("silu", "ns::gelu",
               // "ns::act<float>"), an enumerator ("ns::Mode::kB", "Mode::kB",
               // "ns::P2") or "nullptr" (a null function pointer)
  } kind;
  int64_t integer = 0;
  std::string text;
};

// How one symbol compares with entry<args>.
struct InstanceMatch {
  bool ok = false;        // the name and every argument match
  std::string demangled;  // Demangle(symbol)
  std::string detail;     // why not (one line), when !ok
};

// The readable name of a kernel symbol: its qualified name with template
// arguments and parameters, without the return type
// ("ns::k<float, 8u>(float*, int)"), the -rdc `__nv_static_` prefix left out;
// the symbol itself if it is not a mangled C++ name (extern "C" kernels).
std::string Demangle(const std::string& symbol);

// Compares one symbol with `entry`<`args`>.  The qualified names must be
// equal (a leading "::" of entry ignored; "(anonymous namespace)",
// "_INTERNAL_..." and "_GLOBAL__N_..." components of the symbol ignored), the
// symbol has at least as many template arguments (those after kpack's are
// the template's defaults, not compared), and each argument match:
//   kInteger: an integer literal of any suffix or cast, compared by value
//     (an enumerator `(ns::Mode)1` by its value, `true`/`false` as 1/0; a
//     negative expected value also matches the same 64-bit pattern printed
//     unsigned, 18446744073709551615ull for -1);
//   kBool: true/false, or an integer 1/0;
//   kType: kpack's spelling mapped to the demangler's (half -> __half,
//     int32_t -> int, ...; see the file comment), then qualified-suffix-wise:
//     "Traits" and "ns::Traits" match ns::Traits; a leading "::" asks for the
//     whole qualified name;
//   kName: a type as kType (a `type: cpp` value may name one), a function
//     `&ns::gelu(float const&)` by its qualified name,
//     suffix-wise; "nullptr" by a null pointer `(T)0`; an enumerator only by
//     its TYPE: the demangled `(ns::Mode)1` has no enumerator name, so the
//     expected name's qualifier must be a qualified suffix of the enum type
//     (ns::Mode::kB, Mode::kB) or of its scope (ns::P2 for an unscoped
//     enum); the value itself is not proven.
InstanceMatch MatchInstance(const std::string& symbol, const std::string& entry,
                            const std::vector<ExpectedArg>& args);

// Among `symbols` (the cubin's kernel symbols), finds the one that is
// `entry`<`args`>.  When one symbol has entry's name, its arguments must
// all match; when several do (a batch's cubin holds one instance per
// member, plan.h), exactly one of them must match.  Returns that
// symbol and sets *demangled to its Demangle(); else nullopt and *error to
// one line (either pointer may be null):
//   "the cubin has no kernel named ns::k; its kernels: a(int*), b(int*)"
//     (or "...; its kernels: (none)")
//   "the cubin has 2 instances of ns::k: ns::k<8u, float>, ns::k<4u, float>;
//     kpack asked for one" (none of them, or several, match)
//   "the cubin's kernel is ns::k<9u, float>(float*, int), not the instance
//     kpack asked for: template argument 1 is 9u, expected 8"
//   "the cubin's kernel is ns::k<float, 8u>(float*, int), not the instance
//     kpack asked for: it has 2 template arguments, expected 3"
// Arguments after those kpack wrote are the template's defaults and are
// not compared (kpack instantiated entry<args>, nothing else of its name).
std::optional<std::string> FindInstance(const std::vector<std::string>& symbols, const std::string& entry,
                                        const std::vector<ExpectedArg>& args, std::string* demangled,
                                        std::string* error);

}  // namespace kpack
