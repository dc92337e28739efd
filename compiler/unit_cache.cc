#include "unit_cache.h"

#include <sstream>

#include "fs_util.h"

namespace kpack {
namespace {

// Line 1: this header; line 2: hash of the .bin; line 3: "meta" and the
// Triton metadata (empty for nvcc units); then "<hash> <path>" per input.
constexpr std::string_view kDepsHeader = "kpack-deps-v2";

}  // namespace

std::string UnitCache::EntryPath(const std::string& key, const char* suffix) const {
  return dir_ + "/" + key.substr(0, 2) + "/" + key + suffix;
}

std::string UnitCache::FileHash(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = file_hashes_.find(path);
    if (it != file_hashes_.end()) return it->second;
  }
  std::optional<std::string> text = ReadFile(path);
  std::string hash = text ? HashHex(*text) : "";
  std::lock_guard<std::mutex> lock(mu_);
  file_hashes_[path] = hash;
  return hash;
}

bool UnitCache::LookUp(const std::string& key, CompiledUnit& out) {
  std::optional<std::string> deps = ReadFile(EntryPath(key, ".deps"));
  if (!deps) return false;
  std::istringstream lines(*deps);
  std::string header, binary_hash, meta;
  if (!std::getline(lines, header) || header != kDepsHeader || !std::getline(lines, binary_hash) ||
      !std::getline(lines, meta) || meta.rfind("meta", 0) != 0)
    return false;
  std::vector<std::string> paths;
  for (std::string line; std::getline(lines, line);) {
    size_t space = line.find(' ');
    if (space == std::string::npos) return false;
    std::string path = line.substr(space + 1);
    if (FileHash(path) != line.substr(0, space)) return false;
    paths.push_back(path);
  }
  std::optional<std::string> binary = ReadFile(EntryPath(key, ".bin"));
  if (!binary || HashHex(*binary) != binary_hash) return false;
  out.binary = std::move(*binary);
  out.meta = meta.size() > 5 ? meta.substr(5) : "";
  out.deps = std::move(paths);
  return true;
}

// The binary goes first: a crash in between leaves a .bin whose .deps is
// missing or stale, which LookUp rejects.
void UnitCache::Store(const std::string& key, const CompiledUnit& unit) {
  std::string deps = std::string(kDepsHeader) + "\n" + HashHex(unit.binary) + "\nmeta " + unit.meta + "\n";
  for (const std::string& path : unit.deps) deps += FileHash(path) + " " + path + "\n";
  if (WriteFileAtomic(EntryPath(key, ".bin"), unit.binary).empty()) WriteFileAtomic(EntryPath(key, ".deps"), deps);
}

std::string PreprocessedKey(const std::string& config_key, const std::string& preprocessed) {
  Hasher h;
  h.Add("kpack-preprocessed-v1").Add(config_key);
  std::string kept;
  kept.reserve(preprocessed.size());
  size_t start = 0;
  while (start < preprocessed.size()) {
    size_t end = preprocessed.find('\n', start);
    if (end == std::string::npos) end = preprocessed.size();
    std::string_view line(preprocessed.data() + start, end - start);
    bool marker = line.size() > 2 && line[0] == '#' &&
                  (line[1] == ' ' ? line.size() > 2 && line[2] >= '0' && line[2] <= '9' : line.rfind("#line", 0) == 0);
    if (!marker) kept.append(line).push_back('\n');
    start = end + 1;
  }
  return h.Add(kept).HexDigest();
}

}  // namespace kpack
