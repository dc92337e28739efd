// `kpack inspect` on real fatbins and cubins made by this build's nvcc and
// fatbinary (tests/compiler/meson.build); the static-library path runs in
// tests/e2e/inspect.sh on the bundled libkernels.a.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "fs_util.h"
#include "inspect.h"
#include "pack.h"

namespace {

std::string FixturePath(const std::string& name) {
  const char* dir = std::getenv("KPACK_READER_FIXTURES");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/" + name;
}

kpack::InspectReport InspectFixture(const std::string& name) {
  std::optional<std::string> bytes = kpack::ReadFile(FixturePath(name));
  REQUIRE(bytes);
  std::string error;
  std::optional<kpack::InspectReport> r = kpack::Inspect(*bytes, &error);
  INFO(error);
  REQUIRE(r);
  return *r;
}

}  // namespace

TEST_CASE("inspect a cubin: one row per kernel, with its registers") {
  kpack::InspectReport r = InspectFixture("readers_sm80.cubin");
  CHECK(r.file_kind == "cubin");
  REQUIRE(r.rows.size() == 6);
  const kpack::InspectRow* bounded = nullptr;
  for (const kpack::InspectRow& row : r.rows)
    if (row.kernel == "bounded_shared") bounded = &row;
  REQUIRE(bounded);
  CHECK(bounded->arch == "sm_80");
  CHECK(bounded->registers.has_value());
  CHECK(*bounded->static_shared_bytes == 1024);  // float[256] in the fixture
  CHECK(bounded->build_mode == "release");
  CHECK_FALSE(bounded->debug_code);
}

TEST_CASE("inspect reads the build mode out of a cubin") {
  for (const char* name : {"readers_sm90_debug.cubin", "readers_sm80_ptxas_o0.cubin"}) {
    INFO(name);
    kpack::InspectReport r = InspectFixture(name);
    REQUIRE_FALSE(r.rows.empty());
    for (const kpack::InspectRow& row : r.rows) {
      CHECK(row.build_mode == "debug");
      CHECK(row.debug_code);
    }
  }
}

TEST_CASE("inspect a fatbin: archs, PTX and compression") {
  kpack::InspectReport plain = InspectFixture("readers_sm80_sm90.fatbin");
  CHECK(plain.file_kind == "fatbin");
  CHECK(plain.fatbins == 1);
  REQUIRE(plain.rows.size() == 2);
  CHECK(plain.rows[0].arch == "sm_80");
  CHECK(plain.rows[1].arch == "sm_90");
  CHECK_FALSE(plain.rows[0].fatbin_has_ptx);
  CHECK(plain.rows[0].build_mode == "release");

  kpack::InspectReport ptx = InspectFixture("readers_ptx.fatbin");
  REQUIRE(ptx.rows.size() == 3);
  CHECK(ptx.rows[2].ptx);
  CHECK(ptx.rows[2].arch == "compute_90");
  CHECK(ptx.rows[0].fatbin_has_ptx);

  kpack::InspectReport z = InspectFixture("readers_compressed.fatbin");
  REQUIRE(z.rows.size() == 2);
  CHECK(z.rows[0].compressed);
  CHECK_FALSE(z.rows[0].registers.has_value());
  CHECK(kpack::FormatInspectTable(z).find("z: compressed image; its registers and shared memory are not read\n") !=
        std::string::npos);
}

TEST_CASE("inspect names kpack's fatbins and shows the recorded mode beside the cubin's") {
  kpack::InspectReport r = InspectFixture("readers_kpack_ident.fatbin");
  REQUIRE(r.rows.size() == 2);
  for (const kpack::InspectRow& row : r.rows) {
    CHECK(row.package == "pkg");
    CHECK(row.kernel == "kern");
    CHECK(row.specialization == "kern_x");
    CHECK(row.build_mode == "release");  // as recorded
  }
  CHECK_FALSE(r.rows[0].debug_code);
  CHECK(r.rows[1].debug_code);  // the -G cubin gives itself away
  std::string json = kpack::FormatInspectJson(r);
  CHECK(json.find("\"specialization\": \"kern_x\"") != std::string::npos);
  CHECK(json.find("\"debug_code\": true") != std::string::npos);
}

TEST_CASE("inspect shows the Triton a Triton kernel's fatbin records") {
  kpack::InspectReport r = InspectFixture("readers_triton_ident.fatbin");
  REQUIRE(r.rows.size() == 1);
  CHECK(r.rows[0].kernel == "tk");
  CHECK(r.rows[0].triton_version == "3.9.0");
  std::string table = kpack::FormatInspectTable(r);
  INFO(table);
  // The column is there only when an image records a Triton.
  CHECK(table.rfind("kernel  specialization  arch  ", 0) == 0);
  CHECK(table.find("  ptx  mode     triton  entry\n") != std::string::npos);
  CHECK(table.find("  no   release  3.9.0   ") != std::string::npos);
  CHECK(kpack::FormatInspectJson(r).find("\"triton_version\": \"3.9.0\"") != std::string::npos);
  kpack::InspectReport cuda = InspectFixture("readers_kpack_ident.fatbin");
  CHECK(cuda.rows[0].triton_version.empty());
  CHECK(kpack::FormatInspectTable(cuda).find("triton") == std::string::npos);
  CHECK(kpack::FormatInspectJson(cuda).find("triton_version") == std::string::npos);
}

TEST_CASE("fatbin identifiers") {
  std::optional<kpack::FatbinIdentParts> id = kpack::ParseFatbinIdent("kpack:kernels:vector_add:vector_add_f16:debug");
  REQUIRE(id);
  CHECK(id->package == "kernels");
  CHECK(id->kernel == "vector_add");
  CHECK(id->specialization == "vector_add_f16");
  CHECK(id->build_mode == "debug");
  CHECK(id->triton_version.empty());
  id = kpack::ParseFatbinIdent("kpack:kernels:add_triton:add_triton_f16:release:triton-3.6.0");
  REQUIRE(id);
  CHECK(id->build_mode == "release");
  CHECK(id->triton_version == "3.6.0");
  CHECK_FALSE(kpack::ParseFatbinIdent("kpack_readers"));
  CHECK_FALSE(kpack::ParseFatbinIdent("kpack:a:b:c"));
  CHECK_FALSE(kpack::ParseFatbinIdent("kpack:a:b:c:release:nvcc-13.0"));  // a sixth part only names a Triton
  CHECK_FALSE(kpack::ParseFatbinIdent("kpack:a:b:c:release:triton-"));
  CHECK_FALSE(kpack::ParseFatbinIdent("kpack:a:b:c:release:triton-3.6.0:x"));
}

TEST_CASE("inspect refuses what it cannot read, with the reason") {
  std::string error;
  CHECK_FALSE(kpack::Inspect("hello", &error));
  CHECK(error == "not a static library, fatbin or cubin");
  std::ostringstream out, err;
  CHECK(kpack::RunInspect({}, out, err) == 2);
  CHECK(err.str() == "kpack: error: no file given (usage: kpack inspect FILE [--json])\n");
  std::ostringstream err2;
  CHECK(kpack::RunInspect({"/nonexistent/libkernels.a"}, out, err2) == 1);
  CHECK(err2.str() == "/nonexistent/libkernels.a: error: cannot read the file\n");
  std::optional<std::string> fatbin = kpack::ReadFile(FixturePath("readers_sm80_sm90.fatbin"));
  REQUIRE(fatbin);
  CHECK_FALSE(kpack::Inspect(fatbin->substr(0, 100), &error));
  CHECK(error == "truncated fatbin at offset 0x0 (container needs " + std::to_string(fatbin->size()) +
                     " bytes, 100 present)");
}
