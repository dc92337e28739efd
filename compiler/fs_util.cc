#include "fs_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "llvm/Support/BLAKE3.h"

namespace kpack {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

namespace {

// Writes `content` to `path` in place: for kRegenerated files, whose torn
// copy the next run finds different and rewrites.  Half the directory
// operations of a temporary and a rename, which is what thousands of
// request files cost.
std::string WriteInPlace(const std::string& path, std::string_view content) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
  for (size_t done = 0; done < content.size();) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      close(fd);
      return "cannot write " + path + ": " + why;
    }
    done += static_cast<size_t>(n);
  }
  return close(fd) == 0 ? "" : "cannot write " + path + ": " + std::strerror(errno);
}

}  // namespace

std::string WriteFileAtomic(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return "cannot write " + tmp + ": " + why;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // fsync before rename: after a crash the new name never points at a file
  // whose data did not reach the disk.
  if (fsync(fd) != 0 || close(fd) != 0) {
    std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return "cannot flush " + tmp + ": " + why;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + path + ": " + why;
  }
  return "";
}

std::string WriteFileIfChanged(const std::string& path, std::string_view content, Durability durability) {
  std::optional<std::string> old = ReadFile(path);
  if (old && *old == content) return "";
  return durability == Durability::kRegenerated ? WriteInPlace(path, content) : WriteFileAtomic(path, content);
}

std::string EscapeDepfilePath(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

std::string HashHex(std::string_view data) {
  return Hasher().Add(data).HexDigest();
}

struct Hasher::Impl {
  llvm::BLAKE3 blake3;
};

Hasher::Hasher() : impl_(new Impl) {}
Hasher::~Hasher() { delete impl_; }

Hasher& Hasher::Add(std::string_view field) {
  uint64_t size = field.size();
  impl_->blake3.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(&size), sizeof size));
  impl_->blake3.update(llvm::StringRef(field.data(), field.size()));
  return *this;
}

std::string Hasher::HexDigest() {
  llvm::BLAKE3Result<32> digest = impl_->blake3.final();
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

}  // namespace kpack
