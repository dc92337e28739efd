// plan.h - the plan pass: one compile unit per (specialization, arch), each
// with the exact translation unit, the nvcc flags and a content key.
#pragma once

#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack {

struct Unit {
  const Specialization* spec = nullptr;
  Arch arch;
  bool ptx = false;               // a PTX unit (only when a manifest asks)
  std::string source;             // the generated translation unit
  std::vector<std::string> flags; // nvcc flags, without input/output paths
  std::string key;                // content key, see MakePlan
  std::string name;               // "vector_add_f16_b256.sm_90" (".ptx90")
};

struct Plan {
  std::vector<Unit> units;        // grouped by specialization, archs ascending
};

// The translation unit that instantiates `s`: includes, then an
// extern "C" __global__ wrapper calling the entry template.
std::string InstantiationSource(const Specialization& s);

// "release", or "debug" when the flags build device debug code (-G, or
// device optimization turned off), which runs many times slower.
std::string BuildMode(const std::vector<std::string>& nvcc_flags);

// Makes the units.  A unit's key hashes the translation unit, the flags,
// the arch and `toolkit_version`; the compile pass adds the contents of
// every file the unit includes before trusting a cached result.
Plan MakePlan(const std::vector<Specialization>& specs, const std::string& toolkit_version);

}  // namespace kpack
