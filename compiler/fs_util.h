// fs_util.h - file I/O that never leaves a torn file behind, and hashing.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kpack {

// Reads a whole file; nullopt when it cannot be opened or read.
std::optional<std::string> ReadFile(const std::string& path);

// Writes `content` to a temporary file beside `path`, flushes it, and
// renames it over `path`, so readers see the old file or the new one, never
// a partial one.  Creates missing parent directories.  Returns an empty
// string on success, else a one-line reason.
//
// It fsyncs before the rename, so that after a power loss the name never
// points at data that did not reach the disk.
std::string WriteFileAtomic(const std::string& path, std::string_view content);

// Files that kpack regenerates and compares on every run (Ninja's request
// files) need no atomicity: a torn one differs from what the next run
// writes, so it is rewritten before Ninja reads it.
enum class Durability { kDurable, kRegenerated };

// Unless the file already holds exactly `content` (then it is left alone,
// mtime included, so Ninja sees it as up to date): WriteFileAtomic, or for
// kRegenerated a plain write in place.
std::string WriteFileIfChanged(const std::string& path, std::string_view content,
                               Durability durability = Durability::kDurable);

// A path as a Make-style depfile spells it for Ninja: spaces and # escaped
// with a backslash, $ doubled.
std::string EscapeDepfilePath(const std::string& path);

// BLAKE3 of `data`, as 64 lowercase hex digits.
std::string HashHex(std::string_view data);

// Incremental hashing of several fields: each field is length-prefixed, so
// ("ab","c") and ("a","bc") hash differently.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& Add(std::string_view field);
  std::string HexDigest();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace kpack
