// plan.h - the plan pass: one compile unit per (specialization, arch), each
// with the exact translation unit, the nvcc flags and a content key; the
// batches that compile them (several CUDA units of a kernel per nvcc run)
// and the fatbin groups that pack them.
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

// One compile job.  CUDA specializations of one kernel are compiled
// several to a translation unit, one nvcc run per (batch, arch): nvcc's
// fixed cost per run (start-up, parsing the headers, the host side) is
// paid once per batch rather than once per specialization.  A batch of one
// is the unit itself (its name, source and keys), and so is every Triton
// unit.
//
// Which batch a specialization joins depends only on the set of its
// kernel's specialization names: the names' hashes form a binary trie, and
// a batch is a node whose hash prefix is shared by at most `batch:` names
// (and whose parent's by more).  Adding a value changes exactly one batch
// per arch, the new name's, which splits in two when it outgrows `batch:`;
// the other batches are untouched, so they stay up to date.
struct Batch {
  std::vector<size_t> units;      // indices into Plan::units, in plan order
  std::string name;               // "softmax.batch-01.sm_90" (its hash prefix); a batch of one: the unit's name
  std::string label;              // what messages call it
  std::string source;             // the translation unit instantiating every member
  std::vector<std::string> flags;
  std::string key, config_key;    // as a Unit's, over the batch's source
  Arch arch;
  bool ptx = false;
  bool triton = false;
};

// What one fatbin holds: every arch of one batch's specializations.
struct FatbinGroup {
  std::string stem;                        // file stem: the specialization's, or "softmax.batch-01"
  std::vector<const Specialization*> specs;  // plan order
  std::vector<size_t> batches;             // one per arch (PTX last), into Plan::batches
};

struct Plan {
  std::vector<Unit> units;        // grouped by specialization, archs ascending
  std::vector<Batch> batches;     // grouped by fatbin group, archs ascending
  std::vector<FatbinGroup> groups;
  std::vector<size_t> group_of_unit;  // units[i] is packed into groups[group_of_unit[i]]
  std::string triton_version;     // "3.6.0": the Triton its Triton units are keyed by ("" without)
};

// "kernel 'k' specialization s (B=1) for sm_90": what messages call a unit.
std::string UnitLabel(const Unit& u);

// The translation unit that instantiates `s`: includes, a static_assert
// that the instance has the manifest's signature, then an extern "C"
// __global__ wrapper calling a __device__ entry template, or the explicit
// instantiation of a __global__ one.
std::string InstantiationSource(const Specialization& s);

// The translation unit of a batch: the kernel's includes once, then each
// member's part of InstantiationSource.
std::string BatchSource(const std::vector<const Specialization*>& members);

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
