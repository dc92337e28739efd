// fatbin.h - lists the images in a fatbin container, the raw file that
// `fatbinary --create` writes (not the ELF/host wrapper around it).
//
// Layout, as established from CUDA 13.0 `fatbinary` output (little-endian):
//
//   container header, 16 bytes:
//     0x00 u32 magic 0xBA55ED50
//     0x04 u16 version (1)
//     0x06 u16 header size (16): the first entry starts here
//     0x08 u64 size of all entries that follow the header
//   entry, one after another until the container's end:
//     0x00 u16 kind: 1 PTX, 2 ELF (cubin)
//     0x02 u16 0x0101
//     0x04 u32 header size: 64, or more when an identifier (--ident) or an
//              extension (PTX: 16 bytes; sm_100+ ELF: 48 bytes carrying the
//              cubin's .nv.compat) follows the first 64 bytes
//     0x08 u64 payload size: the bytes stored after the header, padded to 8
//     0x10 u32 compressed size (exact, without padding; 0 if not compressed)
//     0x14 u32 offset of the extension inside the header, or 0
//     0x18 u16 minor, 0x1a u16 major: PTX ISA version (9.0) or ELF code
//              version (1.8)
//     0x1c u32 SM (80, 90, 100, ...; no a/f suffix, see flags)
//     0x20 u32 identifier offset from the entry start (0 if none)
//     0x24 u32 identifier length, without NUL
//     0x28 u64 flags: 0x1 64-bit, 0x2 debug (-g), 0x10 Linux host,
//              0x2000 compressed (pre-CUDA-13 LZ), 0x8000 compressed (zstd),
//              0x100000 arch-specific (sm_90a), 0x200000 family (sm_100f),
//              0x1000000 set on sm_100+ ELF entries
//     0x30 u64 0
//     0x38 u64 uncompressed size (0 if not compressed)
//   The payload follows the entry header; the next entry follows the payload.
//   Uncompressed ELF payloads are the cubin byte for byte; PTX payloads are
//   the text (comments stripped), NUL-terminated and padded.  By default
//   `fatbinary` compresses PTX and debug images but not plain cubins.
#ifndef KPACK_COMPILER_FATBIN_H_
#define KPACK_COMPILER_FATBIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kpack {

enum class FatbinEntryKind { kPtx, kElf, kOther };

struct FatbinEntry {
  FatbinEntryKind kind = FatbinEntryKind::kOther;
  uint32_t sm = 0;                  // 80, 90, 100, ...
  bool compressed = false;
  uint64_t payload_offset = 0;      // from the start of the bytes given to ReadFatbin
  uint64_t payload_size = 0;        // bytes stored (compressed size when compressed)
  uint64_t uncompressed_size = 0;   // == payload_size when not compressed
  std::string identifier_if_any;    // --ident, else empty
  // From the entry's flags (see the layout above):
  bool arch_specific = false;       // built for sm_XXa
  bool family_specific = false;     // built for sm_XXXf
  bool debug = false;               // made with fatbinary -g (device debug)
  uint64_t flags = 0;               // all of them, raw
};

// Lists every entry of every fatbin container in `bytes`.  Containers may be
// concatenated, with zero padding between and after them (as in a linked
// .nv_fatbin section).  On failure returns std::nullopt and, when `error` is
// not null, sets it to one line, for example:
//   "empty fatbin"
//   "not a fatbin (bad magic 0x464c457f at offset 0x0)"
//   "truncated fatbin header at offset 0x20"
//   "unsupported fatbin version 2 at offset 0x0"
//   "bad fatbin header size 8 at offset 0x0"
//   "truncated fatbin at offset 0x0 (container needs 11096 bytes, 4000 present)"
//   "truncated fatbin entry header at offset 0x10"
//   "bad fatbin entry header size 12 at offset 0x10"
//   "fatbin entry at offset 0x10 overruns its container"
//   "fatbin entry at offset 0x10 has a bad compressed size"
//   "fatbin entry at offset 0x10 has its identifier outside its header"
// Never throws (beyond std::bad_alloc), never reads outside `bytes`.
std::optional<std::vector<FatbinEntry>> ReadFatbin(std::string_view bytes, std::string* error);

// The bytes stored for `e` inside `bytes` (the same bytes given to
// ReadFatbin).  For an uncompressed ELF entry that is the cubin, ready for
// ReadCubin; for a compressed entry it is the compressed stream (which
// ReadCubin rejects as "not an ELF file").  Empty if `e` does not lie inside
// `bytes`.
std::string_view FatbinPayload(std::string_view bytes, const FatbinEntry& e);

}  // namespace kpack

#endif  // KPACK_COMPILER_FATBIN_H_
