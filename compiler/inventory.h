// inventory.h - the JSON inventory of a built package: every kernel,
// specialization and arch, with fatbin and cubin sizes, registers, shared
// memory, build mode, build flags and content hashes.  `kpack build
// --inventory FILE` writes it beside the header, and `meson install` puts it
// in share/<package>/.
//
// Deterministic like the other outputs: no timestamps, no absolute paths
// (the -I flag naming the kernel's directory, which depends on where the
// build runs, is left out of a unit's flags), keys sorted, so two builds of
// the same manifests with the same toolkit give the same bytes.
#pragma once

#include <string>
#include <vector>

#include "check.h"
#include "compile.h"
#include "model.h"
#include "pack.h"
#include "plan.h"

namespace kpack {

// Bumped when a field changes meaning or disappears (fields may be added).
inline constexpr const char* kInventoryFormat = "kpack-inventory/1";

struct InventoryInput {
  const Package* package = nullptr;
  std::string manifest_label;   // package file, relative to the project root
  std::string kpack_version;    // "0.1.0"
  int abi_version = 0;          // KPACK_ABI_VERSION the code was generated for
  std::string nvcc_version;     // `nvcc --version` output
  std::string triton_version;   // "" without Triton kernels
  std::string compress_mode;    // "" for fatbinary's default
  const Plan* plan = nullptr;
  const std::vector<CompiledUnit>* compiled = nullptr;  // one per plan unit
  const std::vector<UnitFacts>* facts = nullptr;        // one per plan unit
  const std::vector<PackedSpec>* packed = nullptr;      // one per specialization
  const std::vector<PackedBlob>* blobs = nullptr;       // the fatbins they point into
};

// The inventory as pretty-printed JSON ending in a newline.
std::string GenerateInventory(const InventoryInput& in);

}  // namespace kpack
