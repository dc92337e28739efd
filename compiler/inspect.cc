#include "inspect.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "codegen_text.h"
#include "cubin.h"
#include "cuda_instance.h"
#include "debug_guard.h"
#include "fatbin.h"
#include "fs_util.h"
#include "json_util.h"
#include "model.h"
#include "pack.h"
#include "tensordesc.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#pragma GCC diagnostic pop

namespace kpack {
namespace {

constexpr std::string_view kArchiveMagic = "!<arch>\n";
constexpr std::string_view kThinArchiveMagic = "!<thin>\n";  // Meson's uninstalled libraries
constexpr std::string_view kElfMagic = "\x7f" "ELF";
constexpr std::string_view kFatbinMagic = "\x50\xed\x55\xba";
constexpr uint16_t kEmCuda = 190;
// Where GenerateEmbedAsm puts a package's fatbins.
constexpr std::string_view kBlobSectionPrefix = ".lrodata.kpack_";

std::string ArchName(uint32_t sm, bool specific, bool family) {
  return Arch{static_cast<int>(sm), specific ? Arch::Variant::kSpecific
                                    : family ? Arch::Variant::kFamily
                                             : Arch::Variant::kPlain}
      .Name();
}

void AddCubinFacts(const CubinInfo& info, const CubinKernel* k, InspectRow& row) {
  row.debug_code = CubinIsDebug(info);
  if (row.build_mode.empty()) row.build_mode = row.debug_code ? "debug" : "release";
  if (!k) return;
  row.entry = Demangle(k->name);
  row.registers = k->registers;
  row.static_shared_bytes = k->static_shared_bytes;
  row.local_bytes = k->local_bytes;
}

// The specializations a fatbin identifier names, each with its kernel's
// symbol in a batch ("a=sym_a+b=sym_b", pack.h FatbinIdent).
std::vector<std::pair<std::string, std::string>> SplitBatch(const std::string& names) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t start = 0;;) {
    size_t plus = names.find('+', start);
    std::string item = names.substr(start, plus - start);
    size_t equals = item.find('=');
    out.emplace_back(item.substr(0, equals), equals == std::string::npos ? "" : item.substr(equals + 1));
    if (plus == std::string::npos) return out;
    start = plus + 1;
  }
}

// The kernel of a specialization in a cubin: the only one, or in a batch's
// cubin the one its identifier names; null when neither.
const CubinKernel* KernelOf(const CubinInfo& info, const std::string& symbol, size_t specs) {
  if (specs <= 1) return info.kernels.size() == 1 ? &info.kernels[0] : nullptr;
  for (const CubinKernel& k : info.kernels)
    if (k.name == symbol) return &k;
  return nullptr;
}

// The rows of one or more concatenated fatbin containers.
bool InspectFatbins(std::string_view bytes, InspectReport& report, std::string* error) {
  std::optional<std::vector<FatbinEntry>> entries = ReadFatbin(bytes, error);
  if (!entries) return false;
  // Containers: an entry whose identifier changes starts a new fatbin, as
  // does every entry of a foreign fatbin without identifiers.
  std::vector<InspectRow> rows;
  for (const FatbinEntry& e : *entries) {
    InspectRow row;
    row.ptx = e.kind == FatbinEntryKind::kPtx;
    row.arch = row.ptx ? "compute_" + std::to_string(e.sm) : ArchName(e.sm, e.arch_specific, e.family_specific);
    row.size = e.payload_size;
    row.compressed = e.compressed;
    std::vector<std::pair<std::string, std::string>> specs = {{"", ""}};
    if (std::optional<FatbinIdentParts> id = ParseFatbinIdent(e.identifier_if_any)) {
      row.package = id->package;
      row.kernel = id->kernel;
      row.build_mode = id->build_mode;
      row.triton_version = id->triton_version;
      specs = SplitBatch(id->specialization);
    }
    std::optional<CubinInfo> info;
    if (e.kind == FatbinEntryKind::kElf && !e.compressed) {
      std::string cubin_error;
      info = ReadCubin(FatbinPayload(bytes, e), &cubin_error);
    }
    // A batch's fatbin (plan.h) holds several specializations: a row each.
    for (const auto& [spec, symbol] : specs) {
      InspectRow one = row;
      one.specialization = spec;
      if (info) {
        const CubinKernel* k = KernelOf(*info, symbol, specs.size());
        if (one.kernel.empty() && k) one.kernel = k->name;
        AddCubinFacts(*info, k, one);
      }
      if (one.build_mode.empty()) one.build_mode = e.debug ? "debug" : "?";
      rows.push_back(std::move(one));
    }
  }
  // A fatbin (rows with the same specialization, or the whole input when
  // there are no identifiers) has PTX if any of its rows is PTX.
  for (InspectRow& row : rows)
    row.fatbin_has_ptx = std::any_of(rows.begin(), rows.end(), [&](const InspectRow& other) {
      return other.ptx && other.specialization == row.specialization && other.package == row.package;
    });
  // Count containers: each starts with the magic at a known offset.
  for (size_t at = 0; at + 16 <= bytes.size();) {
    if (bytes.substr(at, 4) != kFatbinMagic) {
      ++at;
      continue;
    }
    uint64_t size = 0;
    for (int i = 7; i >= 0; --i) size = size << 8 | static_cast<uint8_t>(bytes[at + 8 + i]);
    report.fatbins += 1;
    report.fatbin_bytes += 16 + size;
    at += 16 + size;
  }
  report.rows.insert(report.rows.end(), rows.begin(), rows.end());
  return true;
}

bool InspectCubin(std::string_view bytes, InspectReport& report, std::string* error) {
  std::optional<CubinInfo> info = ReadCubin(bytes, error);
  if (!info) return false;
  for (const CubinKernel& k : info->kernels) {
    InspectRow row;
    row.kernel = k.name;
    row.arch = ArchName(info->sm, info->arch_specific, info->family_specific);
    row.size = bytes.size();
    AddCubinFacts(*info, &k, row);
    report.rows.push_back(std::move(row));
  }
  return true;
}

bool InspectObject(llvm::MemoryBufferRef buffer, InspectReport& report, std::string* error) {
  llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> object =
      llvm::object::ObjectFile::createObjectFile(buffer);
  if (!object) {
    llvm::consumeError(object.takeError());
    return true;  // not an object (e.g. a symbol table member): nothing of kpack's
  }
  for (const llvm::object::SectionRef& section : (*object)->sections()) {
    llvm::Expected<llvm::StringRef> name = section.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (!name->starts_with(kBlobSectionPrefix)) continue;
    llvm::Expected<llvm::StringRef> contents = section.getContents();
    if (!contents) {
      *error = buffer.getBufferIdentifier().str() + ": " + llvm::toString(contents.takeError());
      return false;
    }
    std::string fatbin_error;
    if (!InspectFatbins(std::string_view(contents->data(), contents->size()), report, &fatbin_error)) {
      *error = buffer.getBufferIdentifier().str() + ": section " + name->str() + ": " + fatbin_error;
      return false;
    }
  }
  return true;
}

bool InspectArchive(std::string_view bytes, const std::string& path, InspectReport& report, std::string* error) {
  // A thin archive's members are files named relative to the archive's path.
  llvm::MemoryBufferRef buffer(llvm::StringRef(bytes.data(), bytes.size()), path.empty() ? "archive" : path);
  llvm::Expected<std::unique_ptr<llvm::object::Archive>> archive = llvm::object::Archive::create(buffer);
  if (!archive) {
    *error = "malformed static library: " + llvm::toString(archive.takeError());
    return false;
  }
  llvm::Error err = llvm::Error::success();
  for (const llvm::object::Archive::Child& child : (*archive)->children(err)) {
    if ((*archive)->isThin()) {
      // LLVM 19 opens thin members relative to the working directory, not
      // to the archive: read them here.
      llvm::Expected<llvm::StringRef> name = child.getName();
      if (!name) {
        *error = "malformed static library: " + llvm::toString(name.takeError());
        llvm::consumeError(std::move(err));
        return false;
      }
      std::filesystem::path file = std::filesystem::path(path).parent_path() / name->str();
      std::optional<std::string> bytes_of_member = ReadFile(file.string());
      if (!bytes_of_member) {
        *error = "cannot read " + file.string() + ", a member of the thin archive";
        llvm::consumeError(std::move(err));
        return false;
      }
      if (!InspectObject(llvm::MemoryBufferRef(*bytes_of_member, file.string()), report, error)) {
        llvm::consumeError(std::move(err));
        return false;
      }
      continue;
    }
    llvm::Expected<llvm::MemoryBufferRef> member = child.getMemoryBufferRef();
    if (!member) {
      *error = "malformed static library member: " + llvm::toString(member.takeError());
      llvm::consumeError(std::move(err));
      return false;
    }
    if (!InspectObject(*member, report, error)) {
      llvm::consumeError(std::move(err));
      return false;
    }
  }
  if (err) {
    *error = "malformed static library: " + llvm::toString(std::move(err));
    return false;
  }
  return true;
}

std::string Optional(const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : "-"; }

}  // namespace

std::optional<InspectReport> Inspect(std::string_view bytes, std::string* error, const std::string& path) {
  InspectReport report;
  bool ok = false;
  if (bytes.substr(0, kArchiveMagic.size()) == kArchiveMagic ||
      bytes.substr(0, kThinArchiveMagic.size()) == kThinArchiveMagic) {
    report.file_kind = "static library";
    ok = InspectArchive(bytes, path, report, error);
  } else if (bytes.substr(0, kFatbinMagic.size()) == kFatbinMagic) {
    report.file_kind = "fatbin";
    ok = InspectFatbins(bytes, report, error);
  } else if (bytes.substr(0, 4) == kElfMagic && bytes.size() >= 20 &&
             (static_cast<uint8_t>(bytes[18]) | static_cast<uint8_t>(bytes[19]) << 8) == kEmCuda) {
    report.file_kind = "cubin";
    ok = InspectCubin(bytes, report, error);
  } else if (bytes.substr(0, 4) == kElfMagic) {
    report.file_kind = "object";
    ok = InspectObject(llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), "object"), report, error);
  } else {
    *error = "not a static library, fatbin or cubin";
  }
  if (!ok) return std::nullopt;
  return report;
}

std::string FormatInspectTable(const InspectReport& r) {
  // The Triton column only where some image has a recorded Triton: a CUDA
  // package's table stays as it was.
  const bool triton = std::any_of(r.rows.begin(), r.rows.end(), [](const InspectRow& x) {
    return !x.triton_version.empty();
  });
  std::vector<std::vector<std::string>> cells = {
      {"kernel", "specialization", "arch", "bytes", "regs", "smem", "local", "ptx", "mode", "entry"}};
  if (triton) cells[0].insert(cells[0].end() - 1, "triton");
  for (const InspectRow& row : r.rows) {
    cells.push_back({row.kernel, row.specialization.empty() ? "-" : row.specialization, row.arch,
                     std::to_string(row.size) + (row.compressed ? "z" : ""), Optional(row.registers),
                     Optional(row.static_shared_bytes), Optional(row.local_bytes),
                     row.ptx ? "image" : row.fatbin_has_ptx ? "yes" : "no", row.build_mode,
                     row.entry.empty() ? "-" : row.entry});
    if (triton) cells.back().insert(cells.back().end() - 1, row.triton_version.empty() ? "-" : row.triton_version);
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      bool numeric = c >= 3 && c <= 6;  // right-aligned
      std::string pad(width[c] - line[c].size(), ' ');
      text += (c ? "  " : "") + (numeric ? pad + line[c] : line[c] + (c + 1 < line.size() ? pad : ""));
    }
    out += text + "\n";
  }
  size_t debug = std::count_if(r.rows.begin(), r.rows.end(), [](const InspectRow& x) { return x.build_mode == "debug"; });
  out += r.file_kind + ": " + std::to_string(r.rows.size()) + " images";
  if (r.fatbins) out += " in " + std::to_string(r.fatbins) + " fatbins (" + std::to_string(r.fatbin_bytes) + " bytes)";
  out += debug ? "; " + std::to_string(debug) + " DEBUG images (slow)\n" : "; all release builds\n";
  if (std::any_of(r.rows.begin(), r.rows.end(), [](const InspectRow& x) { return x.compressed; }))
    out += "z: compressed image; its registers and shared memory are not read\n";
  return out;
}

std::string FormatInspectJson(const InspectReport& r) {
  namespace json = llvm::json;
  json::Array rows;
  for (const InspectRow& row : r.rows) {
    json::Object o{{"package", row.package},       {"kernel", row.kernel}, {"specialization", row.specialization},
                   {"arch", row.arch},             {"kind", row.ptx ? "ptx" : "sass"},
                   {"fatbin_has_ptx", row.fatbin_has_ptx}, {"size", static_cast<int64_t>(row.size)},
                   {"compressed", row.compressed}, {"build_mode", row.build_mode}, {"debug_code", row.debug_code},
                   {"entry", row.entry}};
    if (row.registers) o["registers"] = static_cast<int64_t>(*row.registers);
    if (row.static_shared_bytes) o["static_shared_bytes"] = static_cast<int64_t>(*row.static_shared_bytes);
    if (row.local_bytes) o["local_bytes"] = static_cast<int64_t>(*row.local_bytes);
    if (!row.triton_version.empty()) o["triton_version"] = row.triton_version;
    rows.push_back(std::move(o));
  }
  json::Object root{{"file_kind", r.file_kind},
                    {"fatbins", static_cast<int64_t>(r.fatbins)},
                    {"fatbin_bytes", static_cast<int64_t>(r.fatbin_bytes)},
                    {"images", std::move(rows)}};
  return JsonText(std::move(root), 2);
}

namespace {

namespace json = llvm::json;

// "1.200": a margin as people read it (runner-up over best); "-" with
// fewer than two candidates.
std::string MarginText(const json::Object* ns) {
  std::vector<int64_t> times;
  if (ns)
    for (const auto& entry : *ns)
      if (std::optional<int64_t> t = entry.second.getAsInteger()) times.push_back(*t);
  if (times.size() < 2) return times.empty() ? "-" : "1.000";
  std::sort(times.begin(), times.end());
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", times[0] > 0 ? static_cast<double>(times[1]) / static_cast<double>(times[0]) : 1.0);
  return text;
}

std::string Right(const std::string& s, size_t width) { return std::string(width > s.size() ? width - s.size() : 0, ' ') + s; }

std::string IntegerText(const json::Value& v) {
  std::optional<int64_t> i = v.getAsInteger();
  return i ? std::to_string(*i) : "?";
}

// "NVIDIA H100 80GB HBM3 (sm_90)" of a table or a stale tuning.
std::string GpuText(const json::Object& o) {
  std::optional<int64_t> sm = o.getInteger("sm");
  return JsonGetString(o, "gpu") + " (sm_" + (sm ? std::to_string(*sm) : std::string("?")) + ")";
}

// One table: a line per shape with its best and margin, columns aligned;
// then its probes (shapes between the grid's values) under a line of
// their own.
void FormatTable(const json::Object& table, const std::vector<std::string>& key, std::string& out) {
  std::vector<std::vector<std::string>> lines = {key};
  lines[0].push_back("best");
  lines[0].push_back("margin");
  size_t grid_lines = 0;
  for (const char* list : {"results", "probes"}) {
    if (const json::Array* results = table.getArray(list))
      for (const json::Value& r : *results) {
        const json::Object* o = r.getAsObject();
        if (!o) continue;
        std::vector<std::string> line;
        if (const json::Array* shape = o->getArray("shape"))
          for (const json::Value& v : *shape) line.push_back(IntegerText(v));
        line.resize(key.size(), "?");
        std::optional<llvm::StringRef> best = o->getString("best");
        line.push_back(best ? best->str() : "- (no candidate ran: the rules)");
        line.push_back(best ? MarginText(o->getObject("ns")) : "-");
        lines.push_back(std::move(line));
      }
    if (grid_lines == 0) grid_lines = lines.size();
  }
  std::vector<size_t> width(key.size() + 2, 0);
  for (const auto& line : lines)
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    if (i == grid_lines) out += "    probes, between the grid's values:\n";
    std::string text = "   ";
    for (size_t c = 0; c < key.size(); ++c) text += " " + Right(line[c], width[c]);
    text += "  " + line[key.size()] + std::string(width[key.size()] - line[key.size()].size(), ' ');
    text += "  " + Right(line[key.size() + 1], width[key.size() + 1]);
    out += text + "\n";
  }
}

// "NVIDIA H100 80GB HBM3 (sm_90), T=f16 (tuning/h100.yaml)", with
// ", unaligned variant" after the combination for such a table.
std::string TableTitle(const json::Object& table) {
  std::string title = GpuText(table);
  if (const json::Object* combo = table.getObject("for")) {
    std::vector<std::string> parts;
    for (const auto& entry : *combo)
      if (std::optional<llvm::StringRef> v = entry.second.getAsString()) parts.push_back(entry.first.str() + "=" + v->str());
    std::sort(parts.begin(), parts.end());
    if (!parts.empty()) {
      title += ",";
      for (const std::string& p : parts) title += " " + p;
    }
  }
  if (JsonGetString(table, "variant") == "unaligned") title += ", unaligned variant";
  return title + " (" + JsonGetString(table, "file") + ")";
}

void FormatKernelTables(const std::string& name, const json::Object& tuning, std::string& out) {
  const std::vector<std::string> key = JsonGetStrings(tuning, "key");
  const std::vector<std::string> tuned = JsonGetStrings(tuning, "tuned");
  std::string sizes;
  if (const json::Object* shapes = tuning.getObject("shapes"))
    for (const std::string& k : key)
      if (const json::Array* values = shapes->getArray(k))
        sizes += (sizes.empty() ? "" : " x ") + std::to_string(values->size());
  auto joined = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
    return text;
  };
  out += name + ": " + joined(tuned) + " by " + joined(key) + " (a grid of " + sizes + " shapes)\n";
  const json::Array* tables = tuning.getArray("tables");
  const json::Array* stale = tuning.getArray("stale");
  if ((!tables || tables->empty()) && (!stale || stale->empty()))
    out += "  no tuning file has a table for it: the rules decide\n";
  if (tables)
    for (const json::Value& t : *tables)
      if (const json::Object* table = t.getAsObject()) {
        out += "  " + TableTitle(*table) + ":\n";
        FormatTable(*table, key, out);
      }
  if (stale)
    for (const json::Value& t : *stale)
      if (const json::Object* table = t.getAsObject())
        out += "  " + GpuText(*table) + " (" + JsonGetString(*table, "file") +
               "): stale (its manifest changed); the rules decide there\n";
}

// Adds "margin" to each result of each table of a kernel's "tuning".
void AddMargins(json::Object& tuning) {
  if (json::Array* tables = tuning.getArray("tables"))
    for (json::Value& t : *tables)
      if (json::Object* table = t.getAsObject())
        for (const char* list : {"results", "probes"})
          if (json::Array* results = table->getArray(list))
            for (json::Value& r : *results)
              if (json::Object* o = r.getAsObject()) (*o)["margin"] = MarginText(o->getObject("ns"));
}

// "scratch_f16 sm_90a: cluster of 2 CTAs; global scratch 128 bytes per CTA
// (align 128); tensordesc box [64, 64] swizzle 128B": what the Triton
// units of an inventory need at launch besides their arguments, one line
// each that needs something.
std::string LaunchNeeds(const json::Object& root) {
  std::string out;
  if (const json::Array* kernels = root.getArray("kernels"))
    for (const json::Value& kv : *kernels)
      for (const json::Value& sv : JsonArrayOf(kv.getAsObject(), "specializations"))
        for (const json::Value& uv : JsonArrayOf(sv.getAsObject(), "units")) {
          const json::Object* u = uv.getAsObject();
          const json::Object* global = u ? u->getObject("global_scratch") : nullptr;
          const json::Object* profile = u ? u->getObject("profile_scratch") : nullptr;
          std::vector<std::string> needs;
          if (int64_t ctas = u ? u->getInteger("num_ctas").value_or(1) : 1; ctas > 1)
            needs.push_back("cluster of " + std::to_string(ctas) + " CTAs");
          for (auto [what, s] : {std::pair{"global", global}, std::pair{"profile", profile}})
            if (int64_t bytes = s ? s->getInteger("bytes_per_cta").value_or(0) : 0; bytes > 0)
              needs.push_back(std::string(what) + " scratch " + std::to_string(bytes) + " bytes per CTA (align " +
                              std::to_string(s->getInteger("align").value_or(1)) + ")");
          for (const json::Value& dv : JsonArrayOf(u, "tensordesc")) {
            const json::Object* d = dv.getAsObject();
            std::string box;
            for (const json::Value& b : JsonArrayOf(d, "box")) box += (box.empty() ? "" : ", ") + IntegerText(b);
            int64_t swizzle = d ? d->getInteger("swizzle").value_or(0) : 0;
            needs.push_back("tensordesc box [" + box + "] swizzle " +
                            (swizzle >= 0 ? SwizzleName(static_cast<uint32_t>(swizzle)) : "?"));
          }
          if (!needs.empty())
            out += "  " + JsonGetString(*sv.getAsObject(), "name") + " " + JsonGetString(*u, "arch") + ": " +
                   codegen::Join(needs, "; ") + "\n";
        }
  return out;
}

}  // namespace

std::optional<std::string> FormatInventoryTables(std::string_view inventory, bool as_json, std::string* error) {
  llvm::Expected<json::Value> parsed = json::parse(llvm::StringRef(inventory.data(), inventory.size()));
  if (!parsed) {
    *error = "not a kpack inventory: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  json::Object* root = parsed->getAsObject();
  if (!root || JsonGetString(*root, "format").rfind("kpack-inventory/", 0) != 0) {
    *error = "not a kpack inventory (no \"format\": \"kpack-inventory/...\")";
    return std::nullopt;
  }
  json::Array kernels_json;
  std::string text;
  if (json::Array* kernels = root->getArray("kernels"))
    for (json::Value& kv : *kernels) {
      json::Object* k = kv.getAsObject();
      json::Object* tuning = k ? k->getObject("tuning") : nullptr;
      if (!tuning) continue;
      const std::string name = JsonGetString(*k, "name");
      FormatKernelTables(name, *tuning, text);
      AddMargins(*tuning);
      kernels_json.push_back(json::Object{{"name", name}, {"tuning", std::move(*tuning)}});
    }
  const std::string package = JsonGetString(*root, "package");
  const std::string needs = LaunchNeeds(*root);
  if (as_json)
    return JsonText(json::Object{{"file_kind", "inventory"}, {"package", package}, {"kernels", std::move(kernels_json)}}, 2);
  const std::string launch = needs.empty() ? "" : "package " + package + ": what launches need (clusters, Triton's "
                                                  "scratch, TMA descriptors)\n" + needs;
  if (kernels_json.empty())
    return launch + "package " + package + ": no kernel has a tune: section, so there are no decision tables\n";
  return launch + "package " + package + ": decision tables (kpack tune)\n" + text;
}

int RunInspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool as_json = false;
  std::string path;
  for (const std::string& a : args) {
    if (a == "--json") {
      as_json = true;
    } else if (!a.empty() && a[0] == '-') {
      err << "kpack: error: unknown option " << a << " (usage: kpack inspect FILE [--json])\n";
      return 2;
    } else if (!path.empty()) {
      err << "kpack: error: more than one file given (usage: kpack inspect FILE [--json])\n";
      return 2;
    } else {
      path = a;
    }
  }
  if (path.empty()) {
    err << "kpack: error: no file given (usage: kpack inspect FILE [--json])\n";
    return 2;
  }
  std::optional<std::string> bytes = ReadFile(path);
  if (!bytes) {
    err << path << ": error: cannot read the file\n";
    return 1;
  }
  std::string error;
  // An inventory (JSON, kpack build --inventory): its decision tables.
  if (size_t first = bytes->find_first_not_of(" \t\r\n"); first != std::string::npos && (*bytes)[first] == '{') {
    std::optional<std::string> tables = FormatInventoryTables(*bytes, as_json, &error);
    if (!tables) {
      err << path << ": error: " << error << "\n";
      return 1;
    }
    out << *tables;
    return 0;
  }
  std::optional<InspectReport> report = Inspect(*bytes, &error, path);
  if (!report) {
    err << path << ": error: " << error << "\n";
    return 1;
  }
  out << (as_json ? FormatInspectJson(*report) : FormatInspectTable(*report));
  return 0;
}

}  // namespace kpack
