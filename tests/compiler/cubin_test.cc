// Tests of ReadCubin on real cubins that the build makes with nvcc from
// fixtures/readers_kernels.cu (see readers.meson.inc); $KPACK_READER_FIXTURES
// names the directory holding them.  Corrupt inputs are real cubins with
// single fields patched, found with a small ELF walker of the test's own, so
// that the reader is not checked against itself.
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

namespace Catch {
template <>
struct StringMaker<kpack::KernelParamInfo> {
  static std::string convert(const kpack::KernelParamInfo& p) {
    return "{ordinal " + std::to_string(p.ordinal) + ", offset " + std::to_string(p.offset) +
           ", size " + std::to_string(p.size) + "}";
  }
};
}  // namespace Catch

namespace {

using kpack::CubinInfo;
using kpack::CubinKernel;
using kpack::KernelParamInfo;
using kpack::ReadCubin;

// The bytes of a fixture the build made.
std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("KPACK_READER_FIXTURES");
  REQUIRE(dir != nullptr);
  std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Parses a fixture that must parse.
CubinInfo ReadFixture(const std::string& name) {
  std::string error;
  std::optional<CubinInfo> info = ReadCubin(Fixture(name), &error);
  INFO(name << ": " << error);
  REQUIRE(info.has_value());
  return *info;
}

const CubinKernel& Kernel(const CubinInfo& info, std::string_view name) {
  const CubinKernel* kernel = info.Find(name);
  INFO("kernel " << name);
  REQUIRE(kernel != nullptr);
  return *kernel;
}

// What ReadCubin says about bytes that must not parse.
std::string ErrorOf(std::string_view bytes) {
  std::string error;
  CHECK_FALSE(ReadCubin(bytes, &error).has_value());
  return error;
}

// ---- A minimal ELF64 walker and patcher, independent of the reader -------

uint64_t Get(const std::string& b, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = width; i-- > 0;) v = v << 8 | static_cast<uint8_t>(b.at(at + i));
  return v;
}

void Put(std::string* b, size_t at, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) b->at(at + i) = static_cast<char>(v >> (8 * i));
}

struct SectionSpot {
  size_t header = 0;    // file offset of the section header
  size_t contents = 0;  // sh_offset
  size_t size = 0;      // sh_size
};

SectionSpot FindSection(const std::string& elf, std::string_view name) {
  const size_t shoff = Get(elf, 0x28, 8);
  const size_t shentsize = Get(elf, 0x3a, 2);
  const size_t shnum = Get(elf, 0x3c, 2);
  const size_t strtab = Get(elf, shoff + Get(elf, 0x3e, 2) * shentsize + 0x18, 8);
  for (size_t i = 0; i < shnum; ++i) {
    const size_t header = shoff + i * shentsize;
    const size_t name_at = strtab + Get(elf, header, 4);
    if (std::string_view(elf.c_str() + name_at) == name) {
      return SectionSpot{header, Get(elf, header + 0x18, 8), Get(elf, header + 0x20, 8)};
    }
  }
  FAIL("no section " << name);
  return {};
}

struct AttributeSpot {
  size_t at = 0;  // file offset of the 4-byte head
  uint8_t format = 0;
  uint8_t id = 0;
  uint16_t size = 0;  // SVAL payload size
};

std::vector<AttributeSpot> Attributes(const std::string& elf, const SectionSpot& s) {
  std::vector<AttributeSpot> out;
  for (size_t at = s.contents; at < s.contents + s.size;) {
    AttributeSpot a{at, static_cast<uint8_t>(elf[at]), static_cast<uint8_t>(elf[at + 1]),
                    static_cast<uint16_t>(Get(elf, at + 2, 2))};
    out.push_back(a);
    at += 4 + (a.format == 4 ? a.size : 0);
  }
  return out;
}

AttributeSpot FirstAttribute(const std::string& elf, const SectionSpot& s, uint8_t id) {
  for (const AttributeSpot& a : Attributes(elf, s)) {
    if (a.id == id) return a;
  }
  FAIL("no attribute " << int{id});
  return {};
}

const std::vector<KernelParamInfo> kMixedParams = {
    {0, 0, 8},   // __half* out
    {1, 8, 4},   // int32_t n
    {2, 16, 8},  // int64_t big: 12 rounded up to its alignment
    {3, 24, 2},  // __half scale
    {4, 26, 1},  // bool flag
    {5, 28, 4},  // float alpha
    {6, 32, 8},  // const float* in
};

// ---- Facts ------------------------------------------------------------------

TEST_CASE("ReadCubin lists exactly the kernels", "[cubin]") {
  const CubinInfo info = ReadFixture("readers_sm90.cubin");
  std::set<std::string> names;
  for (const CubinKernel& k : info.kernels) names.insert(k.name);
  CHECK(names == std::set<std::string>{"mixed_params", "bounded_shared", "stack_frame",
                                       "no_params", "_Z9templatedIdEvPT_", "calls_helper"});
  CHECK(info.Find("not_a_kernel") == nullptr);
  CHECK(info.Find("mixed") == nullptr);
}

TEST_CASE("ReadCubin does not take -rdc device functions for kernels", "[cubin]") {
  const std::string bytes = Fixture("readers_sm90_rdc.cubin");
  REQUIRE(bytes.find("not_a_kernel") != std::string::npos);  // the symbol is there
  std::string error;
  const std::optional<CubinInfo> info = ReadCubin(bytes, &error);
  REQUIRE(info.has_value());
  CHECK(info->Find("not_a_kernel") == nullptr);
  CHECK(info->kernels.size() == 6);
  CHECK(Kernel(*info, "mixed_params").params == kMixedParams);
  // A relocatable cubin has no reserved shared memory laid out yet.
  CHECK(Kernel(*info, "bounded_shared").static_shared_bytes == 1024);
  CHECK(Kernel(*info, "bounded_shared").reserved_shared_bytes == 0);
}

TEST_CASE("ReadCubin reads the parameter layout ptxas chose", "[cubin]") {
  for (const char* name : {"readers_sm80.cubin", "readers_sm90.cubin", "readers_sm90a.cubin",
                           "readers_sm100a.cubin", "readers_sm120.cubin"}) {
    INFO(name);
    const CubinInfo info = ReadFixture(name);
    const CubinKernel& mixed = Kernel(info, "mixed_params");
    CHECK(mixed.params == kMixedParams);
    CHECK(mixed.param_bytes == 40);

    const CubinKernel& none = Kernel(info, "no_params");
    CHECK(none.params.empty());
    CHECK(none.param_bytes == 0);

    const CubinKernel& templated = Kernel(info, "_Z9templatedIdEvPT_");
    CHECK(templated.params == std::vector<KernelParamInfo>{{0, 0, 8}});
    CHECK(templated.param_bytes == 8);

    CHECK(Kernel(info, "stack_frame").params == std::vector<KernelParamInfo>{{0, 0, 8}, {1, 8, 4}});
  }
}

TEST_CASE("ReadCubin reads registers, launch bounds, shared memory and stack", "[cubin]") {
  for (const char* name : {"readers_sm80.cubin", "readers_sm90.cubin", "readers_sm100f.cubin",
                           "readers_sm120.cubin"}) {
    INFO(name);
    const CubinInfo info = ReadFixture(name);
    for (const CubinKernel& k : info.kernels) {
      INFO(k.name);
      CHECK(k.registers > 0);
    }
    const CubinKernel& bounded = Kernel(info, "bounded_shared");
    CHECK(bounded.max_threads == 128);
    CHECK(bounded.static_shared_bytes == 1024);
    CHECK(bounded.local_bytes == 0);

    const CubinKernel& mixed = Kernel(info, "mixed_params");
    CHECK(mixed.max_threads == 0);
    CHECK(mixed.static_shared_bytes == 0);
    CHECK(mixed.reserved_shared_bytes == 0);

    CHECK(Kernel(info, "stack_frame").local_bytes == 1024);
  }
  // sm_90+ executables lay the 1 KB of reserved shared memory in front.
  CHECK(Kernel(ReadFixture("readers_sm80.cubin"), "bounded_shared").reserved_shared_bytes == 0);
  CHECK(Kernel(ReadFixture("readers_sm90.cubin"), "bounded_shared").reserved_shared_bytes == 1024);
  CHECK(Kernel(ReadFixture("readers_sm90_debug.cubin"), "bounded_shared").static_shared_bytes ==
        1024);
}

TEST_CASE("ReadCubin reads the arch and its a/f variant", "[cubin]") {
  struct Case {
    const char* file;
    uint32_t sm;
    bool arch_specific;
    bool family_specific;
  };
  for (const Case& c : {Case{"readers_sm80.cubin", 80, false, false},
                        Case{"readers_sm90.cubin", 90, false, false},
                        Case{"readers_sm90a.cubin", 90, true, false},
                        Case{"readers_sm100a.cubin", 100, true, false},
                        Case{"readers_sm100f.cubin", 100, false, true},
                        Case{"readers_sm120.cubin", 120, false, false}}) {
    INFO(c.file);
    const CubinInfo info = ReadFixture(c.file);
    CHECK(info.sm == c.sm);
    CHECK(info.arch_specific == c.arch_specific);
    CHECK(info.family_specific == c.family_specific);
  }
}

TEST_CASE("ReadCubin tells -G builds from optimized ones", "[cubin]") {
  CHECK(ReadFixture("readers_sm90_debug.cubin").has_debug_info);
  CHECK_FALSE(ReadFixture("readers_sm90.cubin").has_debug_info);
  CHECK_FALSE(ReadFixture("readers_sm80.cubin").has_debug_info);
  CHECK(Kernel(ReadFixture("readers_sm90_debug.cubin"), "mixed_params").params == kMixedParams);
}

TEST_CASE("ReadCubin decodes the CUDA 12 (ABI 7) e_flags layout", "[cubin]") {
  // Real sm_90 cubin, re-labelled: ABI 7 keeps the SM in e_flags[7:0] and
  // the `a` bit at 0x800.
  std::string cubin = Fixture("readers_sm90.cubin");
  cubin[8] = 7;  // EI_ABIVERSION
  Put(&cubin, 0x30, 0x00500050, 4);
  std::optional<CubinInfo> info = ReadCubin(cubin, nullptr);
  REQUIRE(info.has_value());
  CHECK(info->sm == 80);
  CHECK_FALSE(info->arch_specific);

  Put(&cubin, 0x30, 0x005a0a5a, 4);
  info = ReadCubin(cubin, nullptr);
  REQUIRE(info.has_value());
  CHECK(info->sm == 90);
  CHECK(info->arch_specific);
}

TEST_CASE("ReadCubin reads a cubin at any address", "[cubin]") {
  const std::string cubin = Fixture("readers_sm90.cubin");
  std::string shifted = " " + cubin;
  const std::optional<CubinInfo> info = ReadCubin(std::string_view(shifted).substr(1), nullptr);
  REQUIRE(info.has_value());
  CHECK(Kernel(*info, "mixed_params").params == kMixedParams);
}

// ---- Errors, word for word ------------------------------------------------------

TEST_CASE("ReadCubin rejects what is not a cubin", "[cubin]") {
  const std::string cubin = Fixture("readers_sm90.cubin");
  CHECK(ErrorOf("") == "not an ELF file");
  CHECK(ErrorOf("garbage that is no ELF at all") == "not an ELF file");
  CHECK(ErrorOf(Fixture("readers.ptx")) == "not an ELF file");
  CHECK(ErrorOf(std::string_view(cubin).substr(0, 40)) == "truncated ELF header");

  std::string patched = cubin;
  patched[4] = 1;  // ELFCLASS32
  CHECK(ErrorOf(patched) == "not a 64-bit little-endian ELF file");

  patched = cubin;
  Put(&patched, 18, 62, 2);  // EM_X86_64
  CHECK(ErrorOf(patched) == "not a CUDA cubin (e_machine 62)");

  patched = cubin;
  patched[8] = 9;
  CHECK(ErrorOf(patched) == "unsupported CUDA ELF ABI version 9");
}

TEST_CASE("ReadCubin rejects truncated cubins", "[cubin]") {
  const std::string cubin = Fixture("readers_sm90.cubin");
  CHECK(ErrorOf(std::string_view(cubin).substr(0, 200)) ==
        "truncated ELF: section header table past end of file");

  // A section whose data would lie past the end of the file.
  std::string patched = cubin;
  const SectionSpot info = FindSection(patched, ".nv.info.mixed_params");
  Put(&patched, info.header + 0x18, cubin.size() - 4, 8);
  CHECK(ErrorOf(patched) == "truncated ELF: section .nv.info.mixed_params past end of file");

  // The same section 2 bytes shorter: its last record runs past its end.
  patched = cubin;
  Put(&patched, info.header + 0x20, info.size - 2, 8);
  CHECK(ErrorOf(patched) == "truncated .nv.info.mixed_params");
}

TEST_CASE("ReadCubin rejects malformed .nv.info attributes", "[cubin]") {
  const std::string cubin = Fixture("readers_sm90.cubin");
  const SectionSpot kernel_info = FindSection(cubin, ".nv.info.mixed_params");

  std::string patched = cubin;
  patched[kernel_info.contents] = 7;  // no such EIFMT
  CHECK(ErrorOf(patched) == "unknown attribute format 0x07 in .nv.info.mixed_params");

  // An SVAL record of 4 bytes relabelled EIATTR_KPARAM_INFO (needs 12).
  patched = cubin;
  AttributeSpot small{};
  for (const AttributeSpot& a : Attributes(cubin, kernel_info)) {
    if (a.format == 4 && a.size == 4) {
      small = a;
      break;
    }
  }
  REQUIRE(small.at != 0);
  patched[small.at + 1] = 0x17;
  CHECK(ErrorOf(patched) == "malformed EIATTR_KPARAM_INFO in .nv.info.mixed_params");

  // EIATTR_CBANK_PARAM_SIZE must be an HVAL.
  patched = cubin;
  patched[FirstAttribute(cubin, kernel_info, 0x19).at] = 1;
  CHECK(ErrorOf(patched) == "malformed EIATTR_CBANK_PARAM_SIZE in .nv.info.mixed_params");

  // EIATTR_REGCOUNT naming a symbol that does not exist.
  patched = cubin;
  const AttributeSpot regcount = FirstAttribute(cubin, FindSection(cubin, ".nv.info"), 0x2f);
  Put(&patched, regcount.at + 4, 65535, 4);
  CHECK(ErrorOf(patched) == "bad symbol index 65535 in .nv.info");
}

TEST_CASE("ReadCubin accepts a null error pointer", "[cubin]") {
  CHECK_FALSE(ReadCubin("nope", nullptr).has_value());
}

}  // namespace
