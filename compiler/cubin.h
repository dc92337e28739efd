// cubin.h - reads the facts kpack checks out of a cubin (an NVIDIA CUDA ELF).
//
// The compiler's check pass uses this to confirm that what nvcc produced is
// what the manifest asked for (kernel names, parameter layout, arch), and
// `kpack inspect` prints it.  Only reads; never modifies the image.
//
// Formats, as established from nvcc/ptxas 13.0 output:
//
//  * Arch.  EI_ABIVERSION 8 (CUDA 13, EI_OSABI 0x41): sm = e_flags[15:8]
//    (sm_80: 0x06005004, sm_90: 0x06005a04, sm_100: 0x06006402,
//    sm_120: 0x06007802).  EI_ABIVERSION 7 (CUDA <= 12): sm = e_flags[7:0].
//    The `a` and `f` suffixes are NOT in e_flags under ABI 8 (sm_90 and sm_90a
//    give identical e_flags); `a` shows as attribute 0x09 = 1 in the
//    `.nv.compat` section, and both show in the ptxas command line kept in the
//    `.note.nv.tkinfo` note ("-arch sm_100f -m 64").
//  * Kernels are the defined STT_FUNC symbols (global or weak: template
//    kernels are weak) with st_other bit 0x10 (CUDA entry).  Device functions
//    of -rdc builds are global STT_FUNC without that bit and are not kernels.
//  * `.nv.info` and `.nv.info.<kernel>` are lists of attributes, each a
//    4-byte head (u8 format, u8 attribute, u16 value-or-size) and, for format
//    4 (EIFMT_SVAL), that many payload bytes.
#ifndef KPACK_COMPILER_CUBIN_H_
#define KPACK_COMPILER_CUBIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kpack {

// One kernel parameter as ptxas laid it out in the parameter constant bank.
struct KernelParamInfo {
  uint32_t ordinal;  // position in the C parameter list, from 0
  uint32_t offset;   // byte offset in the parameter buffer
  uint32_t size;     // bytes
};

// Field-wise equality (spelled out: llvm-config's -std=c++17 can end up
// after the project's -std=c++20, so no defaulted comparisons).
inline bool operator==(const KernelParamInfo& a, const KernelParamInfo& b) {
  return a.ordinal == b.ordinal && a.offset == b.offset && a.size == b.size;
}
inline bool operator!=(const KernelParamInfo& a, const KernelParamInfo& b) { return !(a == b); }

struct CubinKernel {
  std::string name;                     // symbol name (mangled unless extern "C")
  std::vector<KernelParamInfo> params;  // EIATTR_KPARAM_INFO, sorted by ordinal.  Empty
                                        // for kernels without parameters, and also when
                                        // the parameter block exceeds 4352 bytes: ptxas
                                        // 13.0 then omits EIATTR_KPARAM_INFO entirely.
  uint32_t param_bytes = 0;             // EIATTR_CBANK_PARAM_SIZE (else EIATTR_PARAM_CBANK size)
  uint32_t registers = 0;               // EIATTR_REGCOUNT
  uint32_t static_shared_bytes = 0;     // the kernel's own static __shared__ bytes, as
                                        // ptxas -v reports them: .nv.shared.<name>'s size
                                        // less reserved_shared_bytes; 0 if absent
  uint32_t reserved_shared_bytes = 0;   // system-reserved shared memory laid out in
                                        // front of the kernel's own inside
                                        // .nv.shared.<name>: 1024 in sm_90+ executable
                                        // cubins (ET_EXEC with the symbol
                                        // .nv.reservedSmem.offset0), else 0
  uint32_t local_bytes = 0;             // EIATTR_FRAME_SIZE (per-thread stack frame)
  uint32_t max_threads = 0;             // EIATTR_MAX_THREADS x*y*z (launch bounds), else 0
  uint32_t cluster_dims[3] = {0, 0, 0}; // EIATTR_CTA_PER_CLUSTER (__cluster_dims__), else 0s
};

struct CubinInfo {
  uint32_t sm = 0;               // 80, 90, 100, 120, ...
  bool arch_specific = false;    // built for sm_XXa
  bool family_specific = false;  // built for sm_XXXf (known only from the ptxas
                                 // command line in .note.nv.tkinfo; false if absent)
  bool has_debug_info = false;   // device debug info (-G): .debug_info or .nv_debug_info_*
                                 // sections.  -lineinfo alone does not count.
  std::string tool_options;      // the ptxas command line in .note.nv.tkinfo
                                 // ("-O 0 -arch sm_80 -m 64"), or empty
  std::vector<CubinKernel> kernels;  // in symbol-table order

  // The kernel with exactly this symbol name, or nullptr.
  const CubinKernel* Find(std::string_view name) const;
};

// Parses `bytes`, a whole cubin file.  On success returns its facts.  On
// failure returns std::nullopt and, when `error` is not null, sets it to one
// line without a trailing newline, for example:
//   "not an ELF file"
//   "truncated ELF header"
//   "not a 64-bit little-endian ELF file"
//   "not a CUDA cubin (e_machine 62)"
//   "unsupported CUDA ELF ABI version 9"
//   "truncated ELF: section header table past end of file"
//   "truncated ELF: section .nv.info.foo past end of file"
//   "truncated .nv.info.foo"
//   "unknown attribute format 0x07 in .nv.info.foo"
//   "malformed EIATTR_KPARAM_INFO in .nv.info.foo"
//   "bad symbol index 99 in .nv.info"
//   "malformed ELF: <detail from LLVM>"
// Never throws (beyond std::bad_alloc), never reads outside `bytes`.
std::optional<CubinInfo> ReadCubin(std::string_view bytes, std::string* error);

}  // namespace kpack

#endif  // KPACK_COMPILER_CUBIN_H_
