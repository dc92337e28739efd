// plan.h - the plan pass: one compile unit per (specialization, arch), each
// with the exact translation unit, the nvcc flags and a content key.
#pragma once

#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack {

struct Unit {
  const Specialization* spec = nullptr;  // a variant is a Specialization of its own
  Arch arch;                      // what the cubin is for (see Kernel::BuildArchs)
  bool ptx = false;               // a PTX unit (only when a manifest asks)
  bool triton = false;            // compiled by Triton, not nvcc
  std::string source;             // the generated translation unit (CUDA) or
                                  // the JSON request to triton_helper.py
  std::vector<std::string> flags; // nvcc flags, without input/output paths
  std::string key;                // content key, see MakePlan
  std::string config_key;         // the key without the source: flags, arch, toolkit
  std::string name;               // "vector_add_f16_b256.sm_90" (".compute_90"; a variant's
                                  // "softmax_f16.aligned.i32.sm_90a")
};

struct Plan {
  std::vector<Unit> units;        // grouped by specialization, archs ascending
};

// The translation unit that instantiates `s`: includes, a static_assert
// that the instance has the manifest's signature, then an extern "C"
// __global__ wrapper calling a __device__ entry template, or the explicit
// instantiation of a __global__ one.
std::string InstantiationSource(const Specialization& s);

// The instance as C++ spells it: "flashinfer::norm::RMSNormKernel<8, __nv_bfloat16>".
std::string InstanceName(const Specialization& s);

// The arch whose PTX a `ptx: true` kernel embeds: the newest plain one, so
// that it JIT-compiles on every later device.
Arch PtxArch(const Kernel& k);

// "release", or "debug" when the flags build device debug code (-G, or
// optimization turned off: FindDebugFlag in debug_guard.h), which runs many
// times slower.  A kernel's own mode is Kernel::BuildMode().
std::string BuildMode(const std::vector<std::string>& nvcc_flags);

// The compiler versions that go into every cache key.
struct ToolVersions {
  std::string nvcc;    // `nvcc --version`
  std::string triton;  // triton_helper.py version ("" without Triton kernels)
};

// Makes the units.  A unit's key hashes the translation unit (or Triton
// request), the flags, the arch and the compiler's version; the compile pass
// adds the contents of every file the unit reads before trusting a cached
// result.  `config_key` leaves the source out: with the preprocessed source
// it forms the cache's second key (unit_cache.h).
Plan MakePlan(const std::vector<Specialization>& specs, const ToolVersions& versions);

// "12 units", or "12 units (6 of aligned variants)" ("i32 variants", "aligned
// and i32 variants"), for --perf and -v.
std::string CountUnits(const Plan& plan);

}  // namespace kpack
