// Tests of ReadFatbin/FatbinPayload on real containers that the build makes
// with fatbinary from the reader fixtures' cubins and PTX (see
// readers.meson.inc); $KPACK_READER_FIXTURES names their directory.  Corrupt
// inputs are real containers with single fields patched at the offsets
// documented in fatbin.h.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cubin.h"
#include "fatbin.h"

namespace {

using kpack::FatbinEntry;
using kpack::FatbinEntryKind;
using kpack::FatbinPayload;
using kpack::ReadFatbin;

std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("KPACK_READER_FIXTURES");
  REQUIRE(dir != nullptr);
  std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<FatbinEntry> Entries(std::string_view bytes) {
  std::string error;
  std::optional<std::vector<FatbinEntry>> entries = ReadFatbin(bytes, &error);
  INFO(error);
  REQUIRE(entries.has_value());
  return *entries;
}

std::string ErrorOf(std::string_view bytes) {
  std::string error;
  CHECK_FALSE(ReadFatbin(bytes, &error).has_value());
  return error;
}

void Put(std::string* b, size_t at, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) b->at(at + i) = static_cast<char>(v >> (8 * i));
}

const FatbinEntry* FindEntry(const std::vector<FatbinEntry>& entries, FatbinEntryKind kind,
                             uint32_t sm) {
  for (const FatbinEntry& e : entries) {
    if (e.kind == kind && e.sm == sm) return &e;
  }
  return nullptr;
}

// Offsets in the first container and its first entry (see fatbin.h).
constexpr size_t kVersion = 4;
constexpr size_t kHeaderSize = 6;
constexpr size_t kFirstEntry = 0x10;
constexpr size_t kEntryHeaderSize = kFirstEntry + 0x04;
constexpr size_t kEntryPayloadSize = kFirstEntry + 0x08;
constexpr size_t kEntryCompressedSize = kFirstEntry + 0x10;
constexpr size_t kEntryIdentLength = kFirstEntry + 0x24;

TEST_CASE("ReadFatbin lists one ELF entry per arch and no PTX by default", "[fatbin]") {
  const std::string fatbin = Fixture("readers_sm80_sm90.fatbin");
  const std::vector<FatbinEntry> entries = Entries(fatbin);
  REQUIRE(entries.size() == 2);
  for (uint32_t sm : {80u, 90u}) {
    INFO("sm_" << sm);
    const FatbinEntry* e = FindEntry(entries, FatbinEntryKind::kElf, sm);
    REQUIRE(e != nullptr);
    CHECK_FALSE(e->compressed);
    CHECK_FALSE(e->arch_specific);
    CHECK_FALSE(e->family_specific);
    CHECK(e->identifier_if_any.empty());
    // The payload is the cubin fatbinary was given, byte for byte.
    const std::string cubin = Fixture("readers_sm" + std::to_string(sm) + ".cubin");
    CHECK(FatbinPayload(fatbin, *e) == cubin);
    CHECK(e->payload_size == cubin.size());
    CHECK(e->uncompressed_size == cubin.size());
    const std::optional<kpack::CubinInfo> info = kpack::ReadCubin(FatbinPayload(fatbin, *e), nullptr);
    REQUIRE(info.has_value());
    CHECK(info->sm == sm);
    CHECK(info->Find("mixed_params") != nullptr);
  }
  for (const FatbinEntry& e : entries) CHECK(e.kind != FatbinEntryKind::kPtx);
}

TEST_CASE("ReadFatbin finds PTX when it was added", "[fatbin]") {
  const std::vector<FatbinEntry> entries = Entries(Fixture("readers_ptx.fatbin"));
  REQUIRE(entries.size() == 3);
  CHECK(FindEntry(entries, FatbinEntryKind::kElf, 80) != nullptr);
  CHECK(FindEntry(entries, FatbinEntryKind::kElf, 90) != nullptr);
  const FatbinEntry* ptx = FindEntry(entries, FatbinEntryKind::kPtx, 90);
  REQUIRE(ptx != nullptr);
  // fatbinary keeps the PTX text without comments, NUL-terminated.
  CHECK(ptx->uncompressed_size > 0);
  CHECK(ptx->uncompressed_size < Fixture("readers.ptx").size() + 8);
}

TEST_CASE("ReadFatbin flags compressed entries", "[fatbin]") {
  const std::string fatbin = Fixture("readers_compressed.fatbin");
  const std::vector<FatbinEntry> entries = Entries(fatbin);
  REQUIRE(entries.size() == 2);
  for (const FatbinEntry& e : entries) {
    INFO("sm_" << e.sm);
    CHECK(e.kind == FatbinEntryKind::kElf);
    CHECK(e.compressed);
    CHECK(e.uncompressed_size == Fixture("readers_sm" + std::to_string(e.sm) + ".cubin").size());
    CHECK(e.payload_size < e.uncompressed_size);
    CHECK(FatbinPayload(fatbin, e).size() == e.payload_size);
    std::string error;
    CHECK_FALSE(kpack::ReadCubin(FatbinPayload(fatbin, e), &error).has_value());
    CHECK(error == "not an ELF file");
  }
}

TEST_CASE("ReadFatbin reads the identifier and the a/f flags", "[fatbin]") {
  const std::string fatbin = Fixture("readers_ident.fatbin");
  const std::vector<FatbinEntry> entries = Entries(fatbin);
  REQUIRE(entries.size() == 2);
  const FatbinEntry* sm90a = FindEntry(entries, FatbinEntryKind::kElf, 90);
  const FatbinEntry* sm100f = FindEntry(entries, FatbinEntryKind::kElf, 100);
  REQUIRE(sm90a != nullptr);
  REQUIRE(sm100f != nullptr);
  CHECK(sm90a->identifier_if_any == "kpack_readers");
  CHECK(sm100f->identifier_if_any == "kpack_readers");
  CHECK(sm90a->arch_specific);
  CHECK_FALSE(sm90a->family_specific);
  CHECK_FALSE(sm100f->arch_specific);
  CHECK(sm100f->family_specific);
  // The container and the cubin inside agree.
  CHECK(FatbinPayload(fatbin, *sm90a) == Fixture("readers_sm90a.cubin"));
  CHECK(FatbinPayload(fatbin, *sm100f) == Fixture("readers_sm100f.cubin"));
}

TEST_CASE("ReadFatbin reads concatenated containers with zero padding", "[fatbin]") {
  const std::string first = Fixture("readers_sm80_sm90.fatbin");
  const std::string second = Fixture("readers_ident.fatbin");
  const std::string both = first + std::string(8, '\0') + second + std::string(16, '\0');
  const std::vector<FatbinEntry> entries = Entries(both);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].sm == 80);
  CHECK(entries[1].sm == 90);
  CHECK(entries[2].sm == 90);
  CHECK(entries[3].sm == 100);
  CHECK(entries[2].payload_offset > first.size() + 8);
  CHECK(FatbinPayload(both, entries[1]) == Fixture("readers_sm90.cubin"));
  CHECK(FatbinPayload(both, entries[3]) == Fixture("readers_sm100f.cubin"));
}

TEST_CASE("ReadFatbin rejects what is not a fatbin", "[fatbin]") {
  const std::string fatbin = Fixture("readers_sm80_sm90.fatbin");
  CHECK(ErrorOf("") == "empty fatbin");
  CHECK(ErrorOf(Fixture("readers_sm90.cubin")) ==
        "not a fatbin (bad magic 0x464c457f at offset 0x0)");
  CHECK(ErrorOf(std::string(64, '\0')) == "not a fatbin (bad magic 0x0 at offset 0x0)");
  CHECK(ErrorOf(std::string_view(fatbin).substr(0, 10)) == "truncated fatbin header at offset 0x0");

  std::string patched = fatbin;
  Put(&patched, kVersion, 2, 2);
  CHECK(ErrorOf(patched) == "unsupported fatbin version 2 at offset 0x0");

  patched = fatbin;
  Put(&patched, kHeaderSize, 8, 2);
  CHECK(ErrorOf(patched) == "bad fatbin header size 8 at offset 0x0");

  std::ostringstream hex;
  hex << std::hex << fatbin.size();
  CHECK(ErrorOf(fatbin + "xyz") == "truncated fatbin header at offset 0x" + hex.str());
  CHECK(ErrorOf(fatbin + std::string(16, 'x')) ==
        "not a fatbin (bad magic 0x78787878 at offset 0x" + hex.str() + ")");
}

TEST_CASE("ReadFatbin rejects truncated and inconsistent containers", "[fatbin]") {
  const std::string fatbin = Fixture("readers_sm80_sm90.fatbin");
  CHECK(ErrorOf(std::string_view(fatbin).substr(0, 100)) ==
        "truncated fatbin at offset 0x0 (container needs " + std::to_string(fatbin.size()) +
            " bytes, 100 present)");

  std::string patched = fatbin;
  Put(&patched, kEntryHeaderSize, 12, 4);
  CHECK(ErrorOf(patched) == "bad fatbin entry header size 12 at offset 0x10");

  patched = fatbin;
  Put(&patched, kEntryHeaderSize, 0x100000, 4);
  CHECK(ErrorOf(patched) == "truncated fatbin entry header at offset 0x10");

  patched = fatbin;
  Put(&patched, kEntryPayloadSize, ~uint64_t{0}, 8);
  CHECK(ErrorOf(patched) == "fatbin entry at offset 0x10 overruns its container");

  patched = fatbin;
  Put(&patched, kEntryIdentLength, 1000, 4);
  CHECK(ErrorOf(patched) == "fatbin entry at offset 0x10 has its identifier outside its header");

  patched = Fixture("readers_compressed.fatbin");
  Put(&patched, kEntryCompressedSize, 0, 4);
  CHECK(ErrorOf(patched) == "fatbin entry at offset 0x10 has a bad compressed size");
}

TEST_CASE("FatbinPayload stays inside the bytes", "[fatbin]") {
  const std::string fatbin = Fixture("readers_sm80_sm90.fatbin");
  FatbinEntry e = Entries(fatbin).at(0);
  e.payload_offset = fatbin.size() - 4;
  CHECK(FatbinPayload(fatbin, e).empty());
  e.payload_offset = ~uint64_t{0};
  CHECK(FatbinPayload(fatbin, e).empty());
}

TEST_CASE("ReadFatbin accepts a null error pointer", "[fatbin]") {
  CHECK_FALSE(ReadFatbin("nope", nullptr).has_value());
}

}  // namespace
