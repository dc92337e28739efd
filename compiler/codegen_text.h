// codegen_text.h - C text helpers shared by the header writer (codegen.cc)
// and the launcher writer (launcher_gen.cc): literals, comments, types and
// the specializations the API names.
#pragma once

#include <string>
#include <vector>

#include "expand.h"
#include "model.h"
#include "version.h"

namespace kpack::codegen {

inline constexpr const char* kVersion = kKpackVersion;  // version.h; kAbiVersion too

// ASCII upper case, for macro names.
std::string Upper(std::string s);

// A C string literal.  Manifest text (doc strings) may hold anything, so
// escape everything outside printable ASCII.
std::string CString(const std::string& s);

// Text for a C comment: no "*/" can end it early, no control characters.
std::string CommentText(const std::string& s);

// The runtime's arch code as C: "90", "90 | KPACK_ARCH_SPECIFIC".
std::string ArchCode(const Arch& a);

// "sm_80,sm_90a".
std::string ArchList(const std::vector<Arch>& archs);

// A param's scalar in `s`: a dtype constexpr resolved to its value.
Scalar ElementScalar(const Specialization& s, const ParamType& t);

// "const kpack_f16 *x" in a typed launcher.
std::string TypedParam(const Specialization& s, const Param& p);

// "const void *x" in a dispatcher, where the element type varies.
std::string DispatchParam(const Param& p);

// "kpack_dtype", "int", "double" or "const char *": a constexpr's type as
// a dispatcher argument.
std::string ConstexprCType(const Constexpr& c);

// `items` with `sep` between them.
std::string Join(const std::vector<std::string>& items, const std::string& sep);

// `text` split at its newlines (a last line without one counts; no empty
// last line after a final newline).
std::vector<std::string> SplitLines(const std::string& text);

// The specializations of `k` that the API names (the other builds are
// chosen inside their typed launcher).
std::vector<const Specialization*> SpecsOf(const Kernel& k, const std::vector<Specialization>& specs);

// How many specializations the API names (variants not counted).
size_t CountApiSpecs(const std::vector<Specialization>& specs);

// "x, n and stride": the params that are `divisibility: auto`.
std::string AutoParams(const Kernel& k);

// "n and stride": the params that are `width: auto`.
std::string NarrowParams(const Kernel& k);

// "stride_d": the params that are `equal_to_1: auto`.
std::string OneParams(const Kernel& k);

// The C test under which a launcher of `k` runs its aligned variant (Triton's
// JIT specializes exactly so): every `divisibility: auto` value a multiple
// of 16 (an address: 16-byte aligned), in one OR of the values and one
// test, and every `equal_to_1: auto` param 1.  It reads the params by
// name.  `what` gets the sentence after "The aligned variant when ".  ""
// when the kernel has no aligned variant.
std::string AlignedVariantTest(const Kernel& k, std::string* what = nullptr);

// What every launcher of `k` takes first: the stream, then `int pdl` when
// the kernel's PDL is chosen per call (launch.pdl: per_call).
std::vector<std::string> LeadingParams(const Kernel& k);

// "kpack_stream stream, kpack_dtype T, int BLOCK, const void *x, ...".
std::string DispatcherParams(const Kernel& k);

// A constexpr value as a C literal: a dtype's kpack_dtype enumerator, a
// string, a float that stays a double literal ("1.0", "1e-06"), an int
// (bool: 0 or 1).  What config structs and the tuner's tables hold.
std::string ConstexprCLiteral(const Constexpr& c, const ConstexprValue& v);

// The checked 64-bit arithmetic that EmitExprC's C calls (kpack_add_,
// kpack_sub_, kpack_mul_, kpack_div_, kpack_mod_, kpack_cdiv_, kpack_min_,
// kpack_max_): static inline C functions, no comment.  The launcher source
// and the tuning harness's tables both start with it.
extern const char* const kCheckedArithmeticC;

// The C helper (with its comment) of a function that launch expressions
// may call and that translates Python (floordiv, floormod, gcd, log2,
// next_pow2; expr.cc folds with the same semantics); "" for another name.
std::string FunctionHelperC(const std::string& function);
// Their names, in the order generated code defines them.
const std::vector<std::string>& FunctionHelperNames();

}  // namespace kpack::codegen
