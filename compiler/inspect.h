// inspect.h - `kpack inspect`: what a libkernels.a, a fatbin or a cubin
// holds, as a table of kernels x archs (or JSON).
//
// A static library is read with LLVM Object: each member's
// .lrodata.kpack_<prefix> section (codegen's GenerateEmbedAsm) holds the
// package's fatbins back to back, which fatbin.h's reader lists; each fatbin
// entry carries kpack's identifier (pack.h FatbinIdent) naming the
// specialization and its recorded build mode, and its uncompressed cubin is
// read with cubin.h for registers and shared memory.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kpack {

// One image: a cubin (SASS for one arch) or PTX.
struct InspectRow {
  std::string package;         // from the identifier; "" if none
  std::string kernel;          // manifest kernel; for a bare cubin, the symbol
  std::string specialization;  // "" for a bare cubin or a foreign fatbin
  std::string arch;            // "sm_90a", or "compute_90" for PTX
  bool ptx = false;            // this image is PTX
  bool fatbin_has_ptx = false; // its fatbin also embeds PTX (JIT possible)
  uint64_t size = 0;           // bytes stored (compressed size if compressed)
  bool compressed = false;     // registers and shared memory then unknown
  std::optional<uint32_t> registers, static_shared_bytes, local_bytes;
  std::string build_mode;      // recorded by kpack, else read from the cubin
  std::string triton_version;  // a Triton kernel's Triton, as kpack recorded it; "" if none
  bool debug_code = false;     // the cubin itself shows debug code
  std::string entry;           // the kernel function, demangled
                               // ("ns::k<8u, __half>(__half*, int)"); "" if unread
};

struct InspectReport {
  std::string file_kind;       // "static library", "fatbin", "cubin"
  uint64_t fatbins = 0;        // containers found
  uint64_t fatbin_bytes = 0;   // their total size
  std::vector<InspectRow> rows;
};

// Inspects the bytes of a file.  nullopt with *error (one line) when the
// bytes are none of the three kinds or are malformed.  `path` is where the
// bytes came from: a thin archive's members are read relative to it.
std::optional<InspectReport> Inspect(std::string_view bytes, std::string* error, const std::string& path = "");

// The table printed by `kpack inspect`, and its --json form.
std::string FormatInspectTable(const InspectReport& report);
std::string FormatInspectJson(const InspectReport& report);

// The decision tables (kpack tune) of a package's inventory JSON (`kpack
// build --inventory`), as `kpack inspect kernels.json` prints them: per
// tuned kernel, its grid, then per tuning file and combination the GPU, its
// sm and the combination, and one line per shape with the best candidate
// and its margin (the runner-up's time over the best's); stale tunings
// say so.  With `as_json`, the tables as JSON (per kernel its inventory
// "tuning" object, with each result's margin added).  nullopt with
// *error when the text is not a kpack inventory.
std::optional<std::string> FormatInventoryTables(std::string_view inventory, bool as_json, std::string* error);

// `kpack inspect FILE [--json]`: 0, 1 for an unreadable or unknown file,
// 2 for bad usage.  FILE is a static library, fatbin or cubin, or an
// inventory (FormatInventoryTables).
int RunInspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace kpack
