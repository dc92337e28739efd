// unit_cache.h - the content-addressed cache of compiled units.
//
// An entry is <key>.bin (the cubin or PTX) plus <key>.deps, which records
// the hash of the .bin, the Triton metadata, and the hash of every file the
// compile read.  An entry is used only if every recorded hash still matches,
// so editing a header invalidates exactly the units that include it, and a
// truncated or corrupted entry (a killed build, a bad disk, a bad copy into
// a shared cache) is rebuilt rather than trusted.
//
// Two kinds of key find an entry (as in ccache):
//  - direct: the unit's translation unit, flags, arch and toolkit (plan.h),
//    with the files it read checked by hash;
//  - preprocessed: the device-side preprocessed source (line markers, and so
//    every path, removed), flags, arch and toolkit.  This one still hits when
//    the project sits in another directory or on another machine.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "compile.h"

namespace kpack {

class UnitCache {
 public:
  explicit UnitCache(std::string dir) : dir_(std::move(dir)) {}

  // True when the entry under `key` is intact and its recorded inputs are
  // unchanged; fills out.binary, out.meta and out.deps.  Thread-safe.
  bool LookUp(const std::string& key, CompiledUnit& out);

  // Writes the entry for `key` (its deps as given; none for a preprocessed
  // key).  Best effort: a cache that cannot be written is only slower.
  void Store(const std::string& key, const CompiledUnit& unit);

 private:
  std::string EntryPath(const std::string& key, const char* suffix) const;
  // Hash of a file's content, once per process; "" when unreadable.
  std::string FileHash(const std::string& path);

  std::string dir_;
  std::mutex mu_;
  std::map<std::string, std::string> file_hashes_;
};

// The preprocessed key: `config_key` plus the preprocessed text without its
// line markers ('# 12 "/abs/path.cuh"'), which name absolute paths.
std::string PreprocessedKey(const std::string& config_key, const std::string& preprocessed);

}  // namespace kpack
