// fatbin.cc - see fatbin.h for the container layout.
#include "fatbin.h"

#include <cstdio>
#include <utility>

namespace kpack {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint16_t kFatbinVersion = 1;
constexpr size_t kContainerHeaderSize = 16;
constexpr size_t kEntryHeaderMinSize = 64;

constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindElf = 2;

constexpr uint64_t kFlagDebug = 0x2;
constexpr uint64_t kFlagCompressedLz = 0x2000;    // CUDA 11/12 fatbinary's own LZ format
constexpr uint64_t kFlagCompressedZstd = 0x8000;  // CUDA 13 fatbinary
constexpr uint64_t kFlagArchSpecific = 0x100000;
constexpr uint64_t kFlagFamilySpecific = 0x200000;

// Field offsets inside an entry header.
constexpr size_t kEntryKind = 0x00;
constexpr size_t kEntryHeaderSize = 0x04;
constexpr size_t kEntryPayloadSize = 0x08;
constexpr size_t kEntryCompressedSize = 0x10;
constexpr size_t kEntrySm = 0x1c;
constexpr size_t kEntryIdentOffset = 0x20;
constexpr size_t kEntryIdentLength = 0x24;
constexpr size_t kEntryFlags = 0x28;
constexpr size_t kEntryUncompressedSize = 0x38;

// Little-endian loads; the caller has checked that the bytes exist.
uint64_t LoadLe(std::string_view s, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = width; i-- > 0;) value = value << 8 | static_cast<uint8_t>(s[at + i]);
  return value;
}
uint16_t LoadLe16(std::string_view s, size_t at) { return static_cast<uint16_t>(LoadLe(s, at, 2)); }
uint32_t LoadLe32(std::string_view s, size_t at) { return static_cast<uint32_t>(LoadLe(s, at, 4)); }
uint64_t LoadLe64(std::string_view s, size_t at) { return LoadLe(s, at, 8); }

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

bool Fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

FatbinEntryKind KindOf(uint16_t raw) {
  switch (raw) {
    case kKindPtx: return FatbinEntryKind::kPtx;
    case kKindElf: return FatbinEntryKind::kElf;
    default: return FatbinEntryKind::kOther;
  }
}

// Fills `e` from the entry header at `at`, whose `header_size` bytes and
// `stored` payload bytes are known to lie inside `bytes`.
bool DecodeEntry(std::string_view bytes, size_t at, size_t header_size, uint64_t stored,
                 FatbinEntry* e, std::string* error) {
  const std::string_view header = bytes.substr(at, header_size);
  e->kind = KindOf(LoadLe16(header, kEntryKind));
  e->sm = LoadLe32(header, kEntrySm);
  e->flags = LoadLe64(header, kEntryFlags);
  e->compressed = (e->flags & (kFlagCompressedLz | kFlagCompressedZstd)) != 0;
  e->arch_specific = (e->flags & kFlagArchSpecific) != 0;
  e->family_specific = (e->flags & kFlagFamilySpecific) != 0;
  e->debug = (e->flags & kFlagDebug) != 0;
  e->payload_offset = at + header_size;
  e->payload_size = stored;
  e->uncompressed_size = stored;
  if (e->compressed) {
    // The stored size field includes padding; the exact stream length is
    // the compressed size, which must fit inside it.
    const uint32_t compressed_size = LoadLe32(header, kEntryCompressedSize);
    if (compressed_size == 0 || compressed_size > stored) {
      return Fail(error, "fatbin entry at offset " + Hex(at) + " has a bad compressed size");
    }
    e->payload_size = compressed_size;
    e->uncompressed_size = LoadLe64(header, kEntryUncompressedSize);
  }
  const uint32_t ident_offset = LoadLe32(header, kEntryIdentOffset);
  const uint32_t ident_length = LoadLe32(header, kEntryIdentLength);
  if (ident_length != 0) {
    if (ident_offset > header.size() || ident_length > header.size() - ident_offset) {
      return Fail(error, "fatbin entry at offset " + Hex(at) +
                             " has its identifier outside its header");
    }
    std::string_view ident = header.substr(ident_offset, ident_length);
    while (!ident.empty() && ident.back() == '\0') ident.remove_suffix(1);
    e->identifier_if_any = std::string(ident);
  }
  return true;
}

// Reads the entries of the container whose entries span [begin, end) of
// `bytes`, appending them to `out`.
bool ReadEntries(std::string_view bytes, size_t begin, size_t end,
                 std::vector<FatbinEntry>* out, std::string* error) {
  size_t at = begin;
  while (at < end) {
    if (end - at < kEntryHeaderMinSize) {
      return Fail(error, "truncated fatbin entry header at offset " + Hex(at));
    }
    const uint32_t header_size = LoadLe32(bytes, at + kEntryHeaderSize);
    if (header_size < kEntryHeaderMinSize) {
      return Fail(error, "bad fatbin entry header size " + std::to_string(header_size) +
                             " at offset " + Hex(at));
    }
    if (header_size > end - at) {
      return Fail(error, "truncated fatbin entry header at offset " + Hex(at));
    }
    const uint64_t stored = LoadLe64(bytes, at + kEntryPayloadSize);
    if (stored > end - at - header_size) {
      return Fail(error, "fatbin entry at offset " + Hex(at) + " overruns its container");
    }
    FatbinEntry entry;
    if (!DecodeEntry(bytes, at, header_size, stored, &entry, error)) return false;
    out->push_back(std::move(entry));
    at += header_size + static_cast<size_t>(stored);
  }
  return true;
}

// Reads the container at `at`; sets `*next` to the byte after it.
bool ReadContainer(std::string_view bytes, size_t at, size_t* next,
                   std::vector<FatbinEntry>* out, std::string* error) {
  if (bytes.size() - at < kContainerHeaderSize) {
    return Fail(error, "truncated fatbin header at offset " + Hex(at));
  }
  const uint32_t magic = LoadLe32(bytes, at);
  if (magic != kFatbinMagic) {
    return Fail(error, "not a fatbin (bad magic " + Hex(magic) + " at offset " + Hex(at) + ")");
  }
  const uint16_t version = LoadLe16(bytes, at + 4);
  if (version != kFatbinVersion) {
    return Fail(error, "unsupported fatbin version " + std::to_string(version) +
                           " at offset " + Hex(at));
  }
  const uint16_t header_size = LoadLe16(bytes, at + 6);
  const uint64_t entries_size = LoadLe64(bytes, at + 8);
  const size_t available = bytes.size() - at;
  if (header_size < kContainerHeaderSize) {
    return Fail(error, "bad fatbin header size " + std::to_string(header_size) +
                           " at offset " + Hex(at));
  }
  if (header_size > available || entries_size > available - header_size) {
    return Fail(error, "truncated fatbin at offset " + Hex(at) + " (container needs " +
                           std::to_string(uint64_t{header_size} + entries_size) + " bytes, " +
                           std::to_string(available) + " present)");
  }
  const size_t end = at + header_size + static_cast<size_t>(entries_size);
  if (!ReadEntries(bytes, at + header_size, end, out, error)) return false;
  *next = end;
  return true;
}

}  // namespace

std::optional<std::vector<FatbinEntry>> ReadFatbin(std::string_view bytes, std::string* error) {
  if (bytes.empty()) {
    Fail(error, "empty fatbin");
    return std::nullopt;
  }
  std::vector<FatbinEntry> entries;
  size_t at = 0;
  while (at < bytes.size()) {
    if (!ReadContainer(bytes, at, &at, &entries, error)) return std::nullopt;
    // Linkers align each container; the gap and any tail are zeros.
    while (at < bytes.size() && bytes[at] == '\0') ++at;
  }
  return entries;
}

std::string_view FatbinPayload(std::string_view bytes, const FatbinEntry& e) {
  if (e.payload_offset > bytes.size() || e.payload_size > bytes.size() - e.payload_offset) {
    return {};
  }
  return bytes.substr(static_cast<size_t>(e.payload_offset), static_cast<size_t>(e.payload_size));
}

}  // namespace kpack
