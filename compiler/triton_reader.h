// triton_reader.h - the keys only Triton kernels have, and the checks of a
// whole Triton kernel.
//
//   module: liger_kernel.ops.rms_norm   # instead of source:, found on the python path
//   load: slice | execute               # read the source (default) or run the module
//   assume: {pkg.mod.NAME: VALUE}       # values of module-level names the source cannot tell
//   variants: jit | each | none         # how params specialize (docs/manifest.md)
//   options: {num_warps: [4, 8], num_stages: [3], maxnreg: [128], enable_fp_fusion: [true]}
#pragma once

#include <string>

#include "kernel_reader.h"
#include "model.h"
#include "yaml_reader.h"

namespace kpack {

// Reads module, load, variants and assume (and refuses them for CUDA).
void ReadTritonKey(FileReader& r, const std::string& key, const YAML::Node& key_node, const YAML::Node& v, Kernel& k);

// Reads an `assume:` mapping into `assume`, replacing entries of the same name.
void ReadAssume(FileReader& r, const YAML::Node& v, std::vector<std::pair<std::string, std::string>>& assume);

// Finds `module:` on the kernel's python path and sets its source.
void ResolveTritonModule(FileReader& r, Kernel& k);

// Reads `options:` into option constexprs of `k`.
void ReadTritonOptions(FileReader& r, const PendingTritonKeys& keys, Kernel& k);

// What Triton decides (block, shared memory) is not for the manifest to say;
// options are in range; rules are valid expressions; no PTX, no family archs.
void CheckTritonKernel(FileReader& r, const Kernel& k);

}  // namespace kpack
