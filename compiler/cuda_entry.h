// cuda_entry.h - what a CUDA C++ entry is, read from its source
// (cuda_instance.h then proves which instance of it a cubin holds).
//
// A kernel manifest's `entry` may name a `__device__` function template
// (kpack wraps it in a `__global__` kernel of its own) or, FlashInfer style,
// a `__global__` function template that kpack instantiates directly.  The
// scan is pure: it reads files and never runs a tool.
//
// ScanCudaEntry finds the entry's declaration in the source (following its
// #includes) and says whether it is __global__ or __device__.  It is a
// lexical scan, not a C++ parser: comments and literals are blanked, macros
// are NOT expanded and #if/#ifdef are NOT evaluated (every branch's #include
// is followed; a macro's body is never scanned), and the match is on the
// entry's LAST name component (plus any qualifier the declaration spells
// out, which must be a suffix of the entry's qualifiers): the enclosing
// namespaces are not checked.  A kernel whose __global__ comes from a macro
// (`#define KERNEL __global__`) is not recognised: the form is then
// kUnknown.  What the scan cannot prove (the namespace, the instance)
// FindInstance (cuda_instance.h) proves from the cubin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kpack {

// ---- A) The entry's declaration in the source ----

enum class EntryForm { kUnknown, kDevice, kGlobal };

struct EntryScan {
  // kGlobal / kDevice: the first declaration found.  kUnknown with line 0:
  // no declaration of the entry at all (or the source could not be read:
  // files_read is then empty).  kUnknown with line > 0: a declaration was
  // found (the first one) but neither __global__ nor __device__ is among its
  // tokens, e.g. because a macro supplies it.
  EntryForm form = EntryForm::kUnknown;
  std::string file;            // where the declaration was found (path as opened)
  int line = 0, column = 0;    // 1-based, of the entry's name in that declaration
                               // (column counts bytes; a tab is one)
  bool launch_bounds = false;  // __launch_bounds__ in the declaration
  bool cluster_dims = false;   // __cluster_dims__ in the declaration
  std::vector<std::string> files_read;  // every file opened, in order (at most 4000)
};

// Finds the declaration of function template `entry` (a possibly qualified
// C++ name: "flashinfer::norm::RMSNormKernel", "::k" or "k") in `source_path`
// or the files it #includes, and says whether it is __global__ or __device__.
//
// `#include "x"` is looked up beside the including file, then in
// `include_dirs` in order; `#include <x>` in `include_dirs` only; an include
// that is not found (a system header such as cuda_fp16.h) is skipped.  Files
// are scanned depth-first in source order (an include is scanned where it
// stands), each file once (cycles are harmless), at most 4000 files; the scan
// stops at the first __global__/__device__ declaration.
//
// A declaration is the entry's name followed by `(`, not after `.` or `->`,
// whose tokens back to the previous `;`, `{`, `}`, preprocessor line or file
// start are template headers (`template <...>`, defaults included) and
// declaration specifiers (static, inline, __forceinline__, __host__, a return
// type, __launch_bounds__(...), __cluster_dims__(...), __attribute__((...)),
// [[...]], an unexpanded macro with arguments such as
// `MY_LAUNCH_BOUNDS(256)`, in any order): a call (`x = k(...)`,
// `return k(...)`, `f(k(...))`, `k<T, 8>(...)`, `k<<<g, b>>>(...)`) is never
// one.  launch_bounds and cluster_dims report the keywords as written: a
// macro that expands to them is not seen (the cubin's attributes are the
// facts).
EntryScan ScanCudaEntry(const std::string& source_path, const std::string& entry,
                        const std::vector<std::string>& include_dirs);

const char* EntryFormName(EntryForm form);  // "unknown", "__device__", "__global__"

}  // namespace kpack
