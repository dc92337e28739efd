// Hostile manifests (issue 7): every one is refused with a located error or
// handled safely.  Most load from memory (LoadOptions::files), as the fuzzer
// does; the path tests use real files, because symlinks and `..` are about
// the disk.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "test_util.h"
#include "toolchain.h"
#include "yaml_input.h"

using kpack::testing::kKernel;
using kpack::testing::kPackage;
using kpack::testing::ScratchDir;
using namespace std::string_literals;

namespace {

// Loads package.yaml + k.yaml (+ va.cuh) from memory; the diagnostics text.
std::string MemoryErrors(const std::string& kernel, const std::string& package = kPackage) {
  std::map<std::string, std::string> files = {
      {"package.yaml", package}, {"k.yaml", kernel}, {"va.cuh", "// template\n"}};
  kpack::LoadOptions options;
  options.files = &files;
  kpack::Diagnostics diag;
  kpack::LoadPackage("package.yaml", options, diag);
  return diag.Text();
}

std::string DiskErrors(const kpack::LoadOptions& options = {}) {
  kpack::Diagnostics diag;
  kpack::LoadPackage("project/package.yaml", options, diag);
  return diag.Text();
}

std::string WithSource(const std::string& source) {
  std::string k = kKernel;
  return k.replace(k.find("va.cuh"), 6, source);
}

}  // namespace

TEST_CASE("in memory, a valid package loads and nothing is read from disk") {
  ScratchDir dir;  // empty: a disk read would fail
  CHECK(MemoryErrors(kKernel) == "");
}

TEST_CASE("a source path that leaves the project is refused unless allowed") {
  ScratchDir dir;
  dir.Write("project/package.yaml", kPackage);
  dir.Write("project/va.cuh", "");
  dir.Write("secret.cuh", "");
  const std::string outside =
      " is outside the project root 'project' (kpack reads only files inside the project; pass "
      "--allow-outside-root to lift this)\n";
  dir.Write("project/k.yaml", WithSource("../secret.cuh"));
  CHECK(DiskErrors() == "project/k.yaml:2:9: error: source file '../secret.cuh'" + outside);
  kpack::LoadOptions allow;
  allow.allow_outside_root = true;
  CHECK(DiskErrors(allow) == "");

  dir.Write("project/k.yaml", WithSource("/etc/hostname"));
  CHECK(DiskErrors() == "project/k.yaml:2:9: error: source file '/etc/hostname'" + outside);

  // A symlink inside the project that points out of it is outside.
  std::filesystem::create_symlink("../secret.cuh", "project/link.cuh");
  dir.Write("project/k.yaml", WithSource("link.cuh"));
  CHECK(DiskErrors() == "project/k.yaml:2:9: error: source file 'link.cuh'" + outside);

  // `..` that stays inside is fine.
  dir.Write("project/k.yaml", WithSource("sub/../va.cuh"));
  CHECK(DiskErrors() == "");

  // Kernel manifests too; an explicit root widens the project.
  dir.Write("k2.yaml", kKernel);
  dir.Write("project/package.yaml", "package: demo\narchs: [sm_80]\nkernels: [../k2.yaml]\n");
  CHECK(DiskErrors() == "project/package.yaml:3:11: error: kernel manifest '../k2.yaml'" + outside);
  kpack::LoadOptions wider;
  wider.project_root = ".";
  CHECK(DiskErrors(wider) == "k2.yaml:2:9: error: source file 'va.cuh' not found (looked for va.cuh)\n");
}

TEST_CASE("shell metacharacters in text that reaches no tool are accepted") {
  // Doc strings reach only a C comment (their comment-closing is tested
  // below), so they may hold anything a shell would interpret.
  std::string kernel = std::string(kKernel) + "doc: \"$(touch pwned); `touch pwned` | rm -rf . &\"\n";
  CHECK(MemoryErrors(kernel) == "");
}

TEST_CASE("the tool runner passes shell metacharacters to the tool verbatim and runs nothing else") {
  // The real runner (the one nvcc and fatbinary go through): were argv
  // joined into a command line for a shell, these would create `pwned` and
  // the tool would see other arguments.  printf echoes each one back.
  ScratchDir dir;
  const std::vector<std::string> hostile = {"$(touch pwned)", "; touch pwned", "`touch pwned`", "| touch pwned",
                                            "&& touch pwned", "> pwned"};
  std::vector<std::string> argv = {"printf", "[%s]"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  kpack::ProcessRunner runner;
  kpack::ToolResult r = runner.Run(argv);
  REQUIRE(r.ok());
  CHECK(r.output == "[$(touch pwned)][; touch pwned][`touch pwned`][| touch pwned][&& touch pwned][> pwned]");
  CHECK_FALSE(std::filesystem::exists("pwned"));
  // The same check fails when a shell is involved: this is what it catches.
  REQUIRE(runner.Run({"sh", "-c", "printf '[%s]' " + hostile[1]}).ok());
  CHECK(std::filesystem::exists("pwned"));
}

TEST_CASE("text that would inject C into the header is refused or neutralized") {
  // Names are C identifiers or refused (see manifest_test.cc for kernel,
  // param and package names); tags and the prefix too.
  CHECK(MemoryErrors(kKernel, "package: demo\nprefix: \"x; int evil\"\narchs: [sm_80]\nkernels: [k.yaml]\n") ==
        "package.yaml:2:9: error: prefix 'x; int evil' is not a valid C identifier\n");
  std::string k = kKernel;
  k.replace(k.find("tag: b"), 6, "tag: \"b*/evil\"");
  CHECK(MemoryErrors(k) == "k.yaml:6:55: error: tag 'b*/evil' may only hold letters, digits and '_'\n");
  // Each C punctuator alone is enough to refuse a name (the mutation pass
  // found no test for ';' on its own).
  for (const char* name : {"a;b", "a(b", "a)b", "a{b", "a}b", "a=b", "a,b", "a/b", "a*b", "a#b"}) {
    k = kKernel;
    k.replace(k.find("kernel: vector_add"), 18, std::string("kernel: \"") + name + "\"");
    CHECK(MemoryErrors(k) == "k.yaml:1:9: error: kernel name '" + std::string(name) + "' is not a valid C identifier\n");
  }
  k = kKernel;
  k.replace(k.find("entry: va"), 9, "entry: \"va(){}int evil;void f\"");
  CHECK(MemoryErrors(k) == "k.yaml:3:8: error: entry 'va(){}int evil;void f' is not a C++ name (identifiers joined by '::', as in "
        "flashinfer::norm::RMSNormKernel)\n");

  // A doc string cannot end the comment it lands in.
  std::map<std::string, std::string> files = {
      {"package.yaml", kPackage},
      {"k.yaml", std::string(kKernel) + "doc: \"x */ int evil; /* y\\n#define z\"\n"},
      {"va.cuh", ""}};
  kpack::LoadOptions options;
  options.files = &files;
  kpack::Diagnostics diag;
  auto pkg = kpack::LoadPackage("package.yaml", options, diag);
  REQUIRE(pkg);
  auto specs = kpack::Expand(*pkg, diag);
  std::string header = kpack::GenerateHeader(*pkg, specs, kpack::CodegenOptions{"package.yaml", "k.h"});
  CHECK(header.find("x * / int evil; /* y\n * #define z") != std::string::npos);
  CHECK(header.find("*/ int evil") == std::string::npos);
}

TEST_CASE("NUL bytes and bytes that are not UTF-8 are refused where they are") {
  CHECK(MemoryErrors(std::string(kKernel) + "doc: a\0b\n"s) ==
        "k.yaml:15:7: error: NUL byte; a manifest is UTF-8 text\n");
  CHECK(MemoryErrors(std::string(kKernel) + "doc: caf\xe9\n") ==
        "k.yaml:15:9: error: byte 0xe9 is not UTF-8; a manifest is UTF-8 text\n");
  // Overlong encodings and surrogates are not UTF-8 either.
  CHECK(MemoryErrors("kernel: \xc0\xafx\n") == "k.yaml:1:9: error: byte 0xc0 is not UTF-8; a manifest is UTF-8 text\n");
  CHECK(MemoryErrors("kernel: \xed\xa0\x80\n") == "k.yaml:1:9: error: byte 0xed is not UTF-8; a manifest is UTF-8 text\n");
  // Real UTF-8 in a doc string is fine.
  CHECK(MemoryErrors(std::string(kKernel) + "doc: caf\xc3\xa9 \xf0\x9f\x9a\x80\n") == "");
}

TEST_CASE("a YAML alias bomb is refused before anything walks it") {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" +
            prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  // 10^10 nodes once expanded; the check stops at the alias on line 5
  // (10^5 nodes each) that takes the total past 100000.
  CHECK(MemoryErrors(bomb) ==
        "k.yaml:5:36: error: the document expands to more than 100000 nodes once aliases are followed (an alias "
        "bomb?)\n");
  // Plain anchors and aliases still work.
  std::string k = kKernel;
  k.replace(k.find("values: [f32, f16]"), 18, "values: &types [f32, f16]");
  CHECK(MemoryErrors(k + "exclude:\n  - {T: f16, BLOCK: 128}\n") == "");
}

TEST_CASE("deep nesting is refused at the level that passes the limit") {
  std::string deep = "kernel: " + std::string(100, '[') + std::string(100, ']') + "\n";
  CHECK(MemoryErrors(deep) ==
        "k.yaml:1:72: error: nesting deeper than 64 levels; a manifest is a few levels deep\n");
  std::string blocks = "a:\n";
  for (int i = 1; i < 80; ++i) blocks += std::string(2 * i, ' ') + "a:\n";
  CHECK(MemoryErrors(blocks).rfind("k.yaml:65:", 0) == 0);
}

TEST_CASE("duplicate keys, which YAML accepts silently, are refused at every level") {
  CHECK(MemoryErrors(kKernel, "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\npackage: other\n") ==
        "package.yaml:4:1: error: duplicate key 'package' in the package file\n");
  std::string k = kKernel;
  k.replace(k.find("type: int,"), 10, "type: int, type: bool,");
  CHECK(MemoryErrors(k) == "k.yaml:6:30: error: duplicate key 'type' in a constexpr\n");
  CHECK(MemoryErrors(std::string(kKernel) + "  grid: 1\n") == "k.yaml:15:3: error: duplicate key 'grid' in launch\n");
  CHECK(MemoryErrors(std::string(kKernel) + "exclude:\n  - {T: f16, T: f32}\n") ==
        "k.yaml:16:14: error: duplicate key 'T' in exclude entry\n");
}

TEST_CASE("a second document and an empty file are refused, located") {
  CHECK(MemoryErrors(std::string(kKernel) + "---\nkernel: other\n") ==
        "k.yaml:15:1: error: a second YAML document; a manifest holds exactly one\n");
  CHECK(MemoryErrors("") == "k.yaml:1:1: error: a kernel manifest must be a mapping\n");
}

TEST_CASE("ParseManifestText takes its limits from the caller") {
  kpack::Diagnostics diag;
  CHECK(kpack::ParseManifestText("f.yaml", "[[1]]", diag, kpack::YamlLimits{2, 100}));
  CHECK_FALSE(kpack::ParseManifestText("f.yaml", "[[[1]]]", diag, kpack::YamlLimits{2, 100}));
  CHECK_FALSE(kpack::ParseManifestText("f.yaml", "[1, 2, 3]", diag, kpack::YamlLimits{8, 3}));
  CHECK(diag.Text() ==
        "f.yaml:1:3: error: nesting deeper than 2 levels; a manifest is a few levels deep\n"
        "f.yaml:1:8: error: the document expands to more than 3 nodes once aliases are followed (an alias bomb?)\n");
}
