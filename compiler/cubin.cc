// cubin.cc - see cubin.h for what is read and the formats established.
#include "cubin.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

// LLVM 19's headers are not clean at -Wextra (unused parameters, a
// redundant std::move in a template we instantiate); keep the build's
// warnings about kpack's own code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wredundant-move"
#include "llvm/ADT/StringRef.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Error.h"
#pragma GCC diagnostic pop

namespace kpack {
namespace {

using Elf = llvm::object::ELF64LEFile;
using ElfShdr = Elf::Elf_Shdr;
using ElfSym = Elf::Elf_Sym;

// ---- NVIDIA ELF constants (LLVM 19 knows only the ABI 7 ones) -------------

// EI_ABIVERSION: 7 keeps the SM in e_flags[7:0] (CUDA <= 12), 8 in
// e_flags[15:8] (CUDA 13, whatever the SM).
constexpr uint8_t kAbiCudaV1 = 7;
constexpr uint8_t kAbiCudaV2 = 8;
// The `a` (arch-specific) bit of e_flags under each ABI.  nvcc 13.0 leaves the
// ABI 8 one clear even for sm_90a/sm_100a; it is honoured should a producer
// set it.
constexpr uint32_t kEfAcceleratorsV1 = 0x800;
constexpr uint32_t kEfAcceleratorsV2 = 0x8;
// st_other bit that marks a __global__ entry point; device functions of -rdc
// builds are global STT_FUNC symbols without it.
constexpr uint8_t kStoCudaEntry = 0x10;
// Note type, in .note.nv.tkinfo, of the record naming the tool that made the
// image and its command line.
constexpr uint32_t kNoteTypeToolkitInfo = 2000;

// Attribute formats (EIFMT_*) of .nv.info and .nv.compat records.
constexpr uint8_t kEifmtNval = 1;  // no value (the u16 is zero)
constexpr uint8_t kEifmtBval = 2;  // u8 value in the u16
constexpr uint8_t kEifmtHval = 3;  // u16 value
constexpr uint8_t kEifmtSval = 4;  // u16 size, then that many bytes

// Attribute ids (EIATTR_*) read here.
constexpr uint8_t kEiattrMaxThreads = 0x05;      // SVAL: u32 x, y, z
constexpr uint8_t kEiattrParamCbank = 0x0a;      // SVAL: u32 sym, u16 offset, u16 size
constexpr uint8_t kEiattrFrameSize = 0x11;       // SVAL: u32 sym, u32 bytes
constexpr uint8_t kEiattrKparamInfo = 0x17;      // SVAL: u32 index, u16 ordinal, u16 offset, u32 bits
constexpr uint8_t kEiattrCbankParamSize = 0x19;  // HVAL: bytes
constexpr uint8_t kEiattrRegcount = 0x2f;        // SVAL: u32 sym, u32 registers
constexpr uint8_t kEiattrCtaPerCluster = 0x3d;   // SVAL: u32 x, y, z (__cluster_dims__)
// .nv.compat attribute that is 1 in sm_90a/sm_100a/sm_120a images and 0 in
// the plain and `f` ones (observed with ptxas 13.0).
constexpr uint8_t kCompatArchSpecific = 0x09;

constexpr std::string_view kNvInfo = ".nv.info";
constexpr std::string_view kNvInfoPrefix = ".nv.info.";
constexpr std::string_view kNvSharedPrefix = ".nv.shared.";
constexpr std::string_view kReservedSmemSymbol = ".nv.reservedSmem.offset0";
// The system-reserved shared memory in front of a kernel's own in sm_90+
// executable cubins: 1 KB in every one seen (sm_90, sm_100, sm_120; -O3 and
// -G).  See ReadSharedSizes.
constexpr uint64_t kReservedSharedBytes = 1024;

// ---- Small helpers ----------------------------------------------------------

// Little-endian loads; the caller has checked that the bytes exist.
uint16_t LoadLe16(std::string_view s, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) |
                               static_cast<uint8_t>(s[at + 1]) << 8);
}

uint32_t LoadLe32(std::string_view s, size_t at) {
  return static_cast<uint32_t>(LoadLe16(s, at)) |
         static_cast<uint32_t>(LoadLe16(s, at + 2)) << 16;
}

// Records `message` in `*error` (when given) and returns false, so that
// callers can `return Fail(error, ...)`.
bool Fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// Consumes an LLVM error (it must be consumed) and words it as ours.
bool FailLlvm(std::string* error, llvm::Error e) {
  return Fail(error, "malformed ELF: " + llvm::toString(std::move(e)));
}

std::string Hex2(unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", value & 0xffu);
  return text;
}

// ---- Attribute lists (.nv.info*, .nv.compat) --------------------------------

struct Attribute {
  uint8_t format = 0;
  uint8_t id = 0;
  uint16_t value = 0;        // NVAL/BVAL/HVAL: the value; SVAL: payload size
  std::string_view payload;  // SVAL only
};

// Splits an attribute section into records.  Every record is a 4-byte head;
// an SVAL one is followed by its payload, padded to 4 bytes (nvdisasm aligns
// each record to 4; all payloads seen are multiples of 4 anyway).
bool SplitAttributes(std::string_view data, std::string_view section,
                     std::vector<Attribute>* out, std::string* error) {
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 4) return Fail(error, "truncated " + std::string(section));
    Attribute a;
    a.format = static_cast<uint8_t>(data[pos]);
    a.id = static_cast<uint8_t>(data[pos + 1]);
    a.value = LoadLe16(data, pos + 2);
    pos += 4;
    switch (a.format) {
      case kEifmtNval:
      case kEifmtBval:
      case kEifmtHval:
        break;
      case kEifmtSval:
        if (a.value > data.size() - pos) return Fail(error, "truncated " + std::string(section));
        a.payload = data.substr(pos, a.value);
        pos = std::min(data.size(), (pos + a.value + 3) & ~size_t{3});
        break;
      default:
        return Fail(error, "unknown attribute format " + Hex2(a.format) + " in " +
                               std::string(section));
    }
    out->push_back(a);
  }
  return true;
}

// Checks that `a` is an SVAL record with at least `bytes` of payload.
bool NeedPayload(const Attribute& a, size_t bytes, const char* attr_name,
                 std::string_view section, std::string* error) {
  if (a.format == kEifmtSval && a.payload.size() >= bytes) return true;
  return Fail(error, std::string("malformed ") + attr_name + " in " + std::string(section));
}

// ---- Arch -------------------------------------------------------------------

struct ArchFacts {
  uint32_t sm = 0;
  bool arch_specific = false;
  bool family_specific = false;
};

// The SM and `a` bit from the ELF header; false for an ABI we do not know,
// whose e_flags layout we cannot trust.
bool DecodeEFlags(uint8_t abi_version, uint32_t e_flags, ArchFacts* arch, std::string* error) {
  if (abi_version == kAbiCudaV1) {
    arch->sm = e_flags & 0xff;
    arch->arch_specific = (e_flags & kEfAcceleratorsV1) != 0;
    return true;
  }
  if (abi_version == kAbiCudaV2) {
    arch->sm = (e_flags >> 8) & 0xff;
    arch->arch_specific = (e_flags & kEfAcceleratorsV2) != 0;
    return true;
  }
  return Fail(error, "unsupported CUDA ELF ABI version " + std::to_string(abi_version));
}

// The suffix letter of the last "-arch sm_NN<x>" (or "-arch=sm_NN<x>") in a
// ptxas command line: 'a', 'f', or 0 when plain or absent.
char ArchSuffixFromOptions(std::string_view options) {
  const size_t at = options.rfind("-arch");
  if (at == std::string_view::npos) return 0;
  std::string_view rest = options.substr(at + 5);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '=')) rest.remove_prefix(1);
  if (rest.substr(0, 3) != "sm_") return 0;
  rest.remove_prefix(3);
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || digits == rest.size()) return 0;
  const char suffix = rest[digits];
  return (suffix == 'a' || suffix == 'f') ? suffix : 0;
}

// The ptxas command line kept in .note.nv.tkinfo, or empty.  Each note's
// descriptor is u32 version (2), five u32 offsets into the string blob that
// follows them (object name, tool name, tool version, build id, tool
// options), then the blob.  The note is informational, so a malformed one is
// skipped rather than failing the whole cubin.
std::string_view ToolOptionsFromNote(std::string_view note) {
  size_t pos = 0;
  while (note.size() - pos >= 12) {
    const uint32_t name_size = LoadLe32(note, pos);
    const uint32_t desc_size = LoadLe32(note, pos + 4);
    const uint32_t type = LoadLe32(note, pos + 8);
    pos += 12;
    const size_t name_padded = (size_t{name_size} + 3) & ~size_t{3};
    if (name_padded > note.size() - pos) return {};
    const std::string_view name = note.substr(pos, name_size);
    pos += name_padded;
    if (desc_size > note.size() - pos) return {};
    const std::string_view desc = note.substr(pos, desc_size);
    pos = std::min(note.size(), pos + ((size_t{desc_size} + 3) & ~size_t{3}));
    if (type != kNoteTypeToolkitInfo || name.substr(0, 11) != "NVIDIA Corp" ||
        desc.size() < 24) {
      continue;
    }
    const std::string_view blob = desc.substr(24);
    const uint32_t options_offset = LoadLe32(desc, 20);
    if (options_offset >= blob.size()) return {};
    const std::string_view options = blob.substr(options_offset);
    return options.substr(0, options.find('\0'));
  }
  return {};
}

// ---- The reader ---------------------------------------------------------------

// The two statements of a kernel's parameter block size found in its
// .nv.info.<kernel>; CBANK_PARAM_SIZE wins, PARAM_CBANK is the fallback.
struct ParamBlockSizes {
  std::optional<uint32_t> cbank_param_size;
  std::optional<uint32_t> param_cbank_size;
};

// x * y * z, clamped to UINT32_MAX: a forged EIATTR_MAX_THREADS must not wrap.
uint32_t SaturatingProduct(uint32_t x, uint32_t y, uint32_t z) {
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  const uint64_t xy = uint64_t{x} * y;  // < 2^64
  if (xy > kMax) return static_cast<uint32_t>(kMax);
  const uint64_t xyz = xy * z;  // both factors < 2^32
  return static_cast<uint32_t>(std::min(xyz, kMax));
}

struct Section {
  const ElfShdr* header = nullptr;
  std::string_view name;
  bool in_file = false;       // has file data, and all of it lies inside the file
  std::string_view contents;  // when in_file
};

// NVIDIA's own section types (SHT_LOPROC..SHT_HIPROC) include both kinds:
// .nv.info (0x70000000) has file data, while the .nv.shared.* sections of
// sm_100+ relocatable cubins (0x7000000a) are NOBITS-like, with an sh_offset
// + sh_size past the end of the file.
bool IsProcessorSpecific(uint32_t sh_type) {
  return sh_type >= llvm::ELF::SHT_LOPROC && sh_type <= llvm::ELF::SHT_HIPROC;
}

// Reads one cubin into a CubinInfo.  One instance per ReadCubin call; every
// step returns false with `error_` set on malformed input.
class CubinReader {
 public:
  CubinReader(std::string_view bytes, const Elf& elf) : bytes_(bytes), elf_(elf) {}

  bool Read(CubinInfo* info, std::string* error) {
    error_ = error;
    info_ = info;
    return LoadSections() && ReadArch() && CollectKernels() && ApplyAllAttributes() &&
           ReadSharedSizes() && ReadDebugFlag();
  }

 private:
  bool LoadSections();
  bool ReadArch();
  bool CollectKernels();
  bool ApplyAllAttributes();
  bool ApplyAttribute(const Attribute& a, std::string_view section, CubinKernel* owner,
                      ParamBlockSizes* sizes);
  bool ApplyKeyedAttribute(const Attribute& a, std::string_view section, const char* attr_name);
  bool ReadSharedSizes();
  bool ReadDebugFlag();
  bool ReadContents(const Section& s, std::string_view* contents);
  const Section* FindSection(std::string_view name) const;
  CubinKernel* KernelNamed(std::string_view name);

  std::string_view bytes_;
  const Elf& elf_;
  std::string* error_ = nullptr;
  CubinInfo* info_ = nullptr;
  std::vector<Section> sections_;
  std::unordered_map<uint32_t, size_t> kernel_by_symbol_;  // symbol index -> kernels[i]
  size_t symbol_count_ = 0;
  bool has_reserved_smem_symbol_ = false;  // see ReadSharedSizes
};

// Section headers, names and contents.  Every section of a standard type
// with file data must lie inside the file even when we do not read it, so
// that a cut-off cubin is reported as such, not half-read; NVIDIA-specific
// types are checked when read (see IsProcessorSpecific).
bool CubinReader::LoadSections() {
  auto headers = elf_.sections();
  if (!headers) {
    const auto& eh = elf_.getHeader();
    const uint64_t table_end = uint64_t{eh.e_shoff} + uint64_t{eh.e_shnum} * sizeof(ElfShdr);
    if (eh.e_shoff >= bytes_.size() || table_end > bytes_.size()) {
      llvm::consumeError(headers.takeError());
      return Fail(error_, "truncated ELF: section header table past end of file");
    }
    return FailLlvm(error_, headers.takeError());
  }
  for (const ElfShdr& header : *headers) {
    auto name = elf_.getSectionName(header);
    if (!name) return FailLlvm(error_, name.takeError());
    Section section{&header, std::string_view(*name), false, {}};
    const uint32_t type = header.sh_type;
    if (type != llvm::ELF::SHT_NOBITS && type != llvm::ELF::SHT_NULL) {
      const uint64_t offset = header.sh_offset;
      const uint64_t size = header.sh_size;
      if (offset <= bytes_.size() && size <= bytes_.size() - offset) {
        section.in_file = true;
        section.contents = bytes_.substr(offset, size);
      } else if (!IsProcessorSpecific(type)) {
        return Fail(error_, "truncated ELF: section " + std::string(section.name) +
                                " past end of file");
      }
    }
    sections_.push_back(section);
  }
  return true;
}

// The contents of a section we are about to parse.
bool CubinReader::ReadContents(const Section& s, std::string_view* contents) {
  if (s.header->sh_type == llvm::ELF::SHT_NOBITS) {
    *contents = {};
    return true;
  }
  if (!s.in_file) {
    return Fail(error_, "truncated ELF: section " + std::string(s.name) + " past end of file");
  }
  *contents = s.contents;
  return true;
}

const Section* CubinReader::FindSection(std::string_view name) const {
  for (const Section& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

CubinKernel* CubinReader::KernelNamed(std::string_view name) {
  for (CubinKernel& k : info_->kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// sm from e_flags; `a` from e_flags, .nv.compat or the ptxas command line;
// `f` from the command line only (nothing else differs in sm_100f images).
bool CubinReader::ReadArch() {
  const auto& eh = elf_.getHeader();
  ArchFacts arch;
  if (!DecodeEFlags(eh.e_ident[llvm::ELF::EI_ABIVERSION], eh.e_flags, &arch, error_)) {
    return false;
  }
  if (const Section* compat = FindSection(".nv.compat")) {
    std::string_view contents;
    std::vector<Attribute> attrs;
    if (!ReadContents(*compat, &contents) ||
        !SplitAttributes(contents, compat->name, &attrs, error_)) {
      return false;
    }
    for (const Attribute& a : attrs) {
      if (a.id == kCompatArchSpecific && a.format == kEifmtBval && a.value != 0) {
        arch.arch_specific = true;
      }
    }
  }
  if (const Section* note = FindSection(".note.nv.tkinfo")) {
    info_->tool_options = std::string(ToolOptionsFromNote(note->contents));
    const char suffix = ArchSuffixFromOptions(info_->tool_options);
    if (suffix == 'a') arch.arch_specific = true;
    if (suffix == 'f') arch.family_specific = true;
  }
  info_->sm = arch.sm;
  info_->arch_specific = arch.arch_specific;
  info_->family_specific = arch.family_specific;
  return true;
}

// Kernels are defined, global-or-weak STT_FUNC symbols marked as CUDA
// entries.  Also notes the reserved-shared-memory symbol on the way.
bool CubinReader::CollectKernels() {
  const Section* symtab = nullptr;
  for (const Section& s : sections_) {
    if (s.header->sh_type == llvm::ELF::SHT_SYMTAB) {
      symtab = &s;
      break;
    }
  }
  if (symtab == nullptr) return true;  // no symbols, so no kernels
  auto symbols = elf_.symbols(symtab->header);
  if (!symbols) return FailLlvm(error_, symbols.takeError());
  auto strtab = elf_.getStringTableForSymtab(*symtab->header);
  if (!strtab) return FailLlvm(error_, strtab.takeError());
  symbol_count_ = symbols->size();
  for (size_t i = 0; i < symbols->size(); ++i) {
    const ElfSym& sym = (*symbols)[i];
    auto name = sym.getName(*strtab);
    if (!name) return FailLlvm(error_, name.takeError());
    if (std::string_view(*name) == kReservedSmemSymbol) has_reserved_smem_symbol_ = true;
    const uint8_t binding = sym.getBinding();
    if (sym.getType() != llvm::ELF::STT_FUNC || sym.st_shndx == llvm::ELF::SHN_UNDEF ||
        (binding != llvm::ELF::STB_GLOBAL && binding != llvm::ELF::STB_WEAK) ||
        (sym.st_other & kStoCudaEntry) == 0) {
      continue;
    }
    CubinKernel kernel;
    kernel.name = name->str();
    kernel_by_symbol_[static_cast<uint32_t>(i)] = info_->kernels.size();
    info_->kernels.push_back(std::move(kernel));
  }
  return true;
}

// Walks .nv.info (attributes keyed by symbol index) and every
// .nv.info.<function> (attributes of that function).  Sections of functions
// that are not kernels are still parsed, so that corruption is reported.
bool CubinReader::ApplyAllAttributes() {
  for (const Section& s : sections_) {
    CubinKernel* owner = nullptr;
    if (s.name.substr(0, kNvInfoPrefix.size()) == kNvInfoPrefix) {
      owner = KernelNamed(s.name.substr(kNvInfoPrefix.size()));
    } else if (s.name != kNvInfo) {
      continue;
    }
    std::string_view contents;
    std::vector<Attribute> attrs;
    if (!ReadContents(s, &contents) || !SplitAttributes(contents, s.name, &attrs, error_)) {
      return false;
    }
    ParamBlockSizes sizes;
    for (const Attribute& a : attrs) {
      if (!ApplyAttribute(a, s.name, owner, &sizes)) return false;
    }
    if (owner != nullptr) {
      owner->param_bytes = sizes.cbank_param_size.value_or(sizes.param_cbank_size.value_or(0));
    }
  }
  for (CubinKernel& k : info_->kernels) {
    std::stable_sort(k.params.begin(), k.params.end(),
                     [](const KernelParamInfo& x, const KernelParamInfo& y) {
                       return x.ordinal < y.ordinal;
                     });
  }
  return true;
}

bool CubinReader::ApplyAttribute(const Attribute& a, std::string_view section,
                                 CubinKernel* owner, ParamBlockSizes* sizes) {
  switch (a.id) {
    case kEiattrRegcount:
      return ApplyKeyedAttribute(a, section, "EIATTR_REGCOUNT");
    case kEiattrFrameSize:
      return ApplyKeyedAttribute(a, section, "EIATTR_FRAME_SIZE");
    case kEiattrKparamInfo: {
      if (!NeedPayload(a, 12, "EIATTR_KPARAM_INFO", section, error_)) return false;
      if (owner == nullptr) return true;
      // Bits 31..18 of the last word are the size in bytes; the low bits say
      // how the parameter reaches the kernel (constant bank etc.).
      const uint32_t bits = LoadLe32(a.payload, 8);
      owner->params.push_back(KernelParamInfo{LoadLe16(a.payload, 4), LoadLe16(a.payload, 6),
                                              (bits >> 18) & 0x3fff});
      return true;
    }
    case kEiattrCbankParamSize:
      if (a.format != kEifmtHval) {
        return Fail(error_, "malformed EIATTR_CBANK_PARAM_SIZE in " + std::string(section));
      }
      sizes->cbank_param_size = a.value;
      return true;
    case kEiattrParamCbank:
      if (!NeedPayload(a, 8, "EIATTR_PARAM_CBANK", section, error_)) return false;
      sizes->param_cbank_size = LoadLe16(a.payload, 6);
      return true;
    case kEiattrMaxThreads:
      if (!NeedPayload(a, 12, "EIATTR_MAX_THREADS", section, error_)) return false;
      if (owner != nullptr) {
        owner->max_threads = SaturatingProduct(LoadLe32(a.payload, 0), LoadLe32(a.payload, 4),
                                               LoadLe32(a.payload, 8));
      }
      return true;
    case kEiattrCtaPerCluster:
      if (!NeedPayload(a, 12, "EIATTR_CTA_PER_CLUSTER", section, error_)) return false;
      if (owner != nullptr) {
        for (int i = 0; i < 3; ++i) owner->cluster_dims[i] = LoadLe32(a.payload, 4 * i);
      }
      return true;
    default:
      return true;  // an attribute kpack does not need
  }
}

// REGCOUNT and FRAME_SIZE: payload u32 symbol index, u32 value.  They sit in
// the global .nv.info and name their function by symbol index.
bool CubinReader::ApplyKeyedAttribute(const Attribute& a, std::string_view section,
                                      const char* attr_name) {
  if (!NeedPayload(a, 8, attr_name, section, error_)) return false;
  const uint32_t symbol = LoadLe32(a.payload, 0);
  if (symbol >= symbol_count_) {
    return Fail(error_, "bad symbol index " + std::to_string(symbol) + " in " +
                            std::string(section));
  }
  const auto it = kernel_by_symbol_.find(symbol);
  if (it == kernel_by_symbol_.end()) return true;  // a device function
  CubinKernel& kernel = info_->kernels[it->second];
  const uint32_t value = LoadLe32(a.payload, 4);
  if (a.id == kEiattrRegcount) {
    kernel.registers = value;
  } else {
    kernel.local_bytes = value;
  }
  return true;
}

// Static __shared__ of a kernel is the NOBITS section .nv.shared.<kernel>.
// In sm_90+ executable cubins (ET_EXEC, what nvcc -cubin writes) the 1 KB of
// system-reserved shared memory is laid out at the start of the window of
// every kernel that touches shared memory: a kernel with only extern
// __shared__ gets a 1024-byte section.  Such images, -G ones included, have
// the symbol .nv.reservedSmem.offset0; sm_80 images lack it, and relocatable
// (-rdc) ones have it but no layout yet.  The prefix is split off so that
// static_shared_bytes matches ptxas -v's "N bytes smem".
bool CubinReader::ReadSharedSizes() {
  const bool reserved_prefix =
      elf_.getHeader().e_type == llvm::ELF::ET_EXEC && has_reserved_smem_symbol_;
  for (const Section& s : sections_) {
    if (s.name.substr(0, kNvSharedPrefix.size()) != kNvSharedPrefix) continue;
    CubinKernel* kernel = KernelNamed(s.name.substr(kNvSharedPrefix.size()));
    if (kernel == nullptr) continue;
    const uint64_t size = std::min<uint64_t>(s.header->sh_size,
                                             std::numeric_limits<uint32_t>::max());
    const uint64_t reserved = reserved_prefix ? std::min<uint64_t>(size, kReservedSharedBytes) : 0;
    kernel->reserved_shared_bytes = static_cast<uint32_t>(reserved);
    kernel->static_shared_bytes = static_cast<uint32_t>(size - reserved);
  }
  return true;
}

// -G emits DWARF .debug_info plus NVIDIA's .nv_debug_info_reg_* sections;
// -lineinfo and plain builds have only .debug_frame/.debug_line, which do
// not count as device debug info.
bool CubinReader::ReadDebugFlag() {
  for (const Section& s : sections_) {
    if (s.name == ".debug_info" || s.name.substr(0, 14) == ".nv_debug_info") {
      info_->has_debug_info = true;
    }
  }
  return true;
}

// Header checks done before LLVM sees the bytes, so that the common
// mistakes (wrong file, wrong machine) get plain messages.
bool CheckElfHeader(std::string_view bytes, std::string* error) {
  if (bytes.size() < 4 || bytes.substr(0, 4) != "\x7f" "ELF") {
    return Fail(error, "not an ELF file");
  }
  if (bytes.size() < sizeof(Elf::Elf_Ehdr)) return Fail(error, "truncated ELF header");
  if (bytes[llvm::ELF::EI_CLASS] != llvm::ELF::ELFCLASS64 ||
      bytes[llvm::ELF::EI_DATA] != llvm::ELF::ELFDATA2LSB) {
    return Fail(error, "not a 64-bit little-endian ELF file");
  }
  const uint16_t machine = LoadLe16(bytes, 18);
  if (machine != llvm::ELF::EM_CUDA) {
    return Fail(error, "not a CUDA cubin (e_machine " + std::to_string(machine) + ")");
  }
  return true;
}

}  // namespace

const CubinKernel* CubinInfo::Find(std::string_view name) const {
  for (const CubinKernel& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::optional<CubinInfo> ReadCubin(std::string_view bytes, std::string* error) {
  if (!CheckElfHeader(bytes, error)) return std::nullopt;
  // LLVM reads the headers in place and assumes the buffer is as aligned as
  // an Elf64_Shdr; a view into a fatbin or a fuzzer's buffer may not be.
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    aligned.resize((bytes.size() + 7) / 8);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    bytes = std::string_view(reinterpret_cast<const char*>(aligned.data()), bytes.size());
  }
  auto elf = Elf::create(llvm::StringRef(bytes.data(), bytes.size()));
  if (!elf) {
    FailLlvm(error, elf.takeError());
    return std::nullopt;
  }
  CubinInfo info;
  if (!CubinReader(bytes, *elf).Read(&info, error)) return std::nullopt;
  return info;
}

}  // namespace kpack
