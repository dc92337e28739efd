// A Triton kernel's manifest merged with what its source says
// (triton_merge.cc), through a fake describer (fake_describer.h): every
// message word for word at the manifest's or the Python source's position,
// the Kernel the merge makes, and what Expand() builds of it.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "fake_describer.h"
#include "test_util.h"

using kpack::testing::Config;
using kpack::testing::FakeDescriber;
using kpack::testing::Replace;
using kpack::testing::ScratchDir;
using kpack::testing::Signature;

namespace {

// The kernel manifest the tests vary: k.yaml, entry va of va.py.
const char* kTriton =
    "kernel: va\n"                                                   // 1
    "language: triton\n"                                             // 2
    "source: va.py\n"                                                // 3
    "entry: va\n"                                                    // 4
    "constexprs:\n"                                                  // 5
    "  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n"     // 6
    "params:\n"                                                      // 7
    "  - {name: x, type: const f32*}\n"                              // 8
    "  - {name: y, type: const f32*}\n"                              // 9
    "  - {name: out, type: f32*}\n"                                  // 10
    "  - {name: n, type: i64}\n"                                     // 11
    "launch:\n"                                                      // 12
    "  grid: [\"cdiv(n, BLOCK)\"]\n";                                // 13

// The signature that matches kTriton, on line 5 of va.py.
const char* kDef = "def va(x, y, out, n, BLOCK: tl.constexpr):";

// The facts of `def` at va.py:5.
kpack::TritonSourceInfo Source(const std::string& def = kDef) {
  kpack::TritonSourceInfo info;
  info.line = 5;
  info.params = Signature("va.py", 5, def);
  info.inputs = {"va.py"};
  return info;
}

kpack::SourceLoc Py(int line, int col) { return kpack::SourceLoc{"va.py", line, col}; }

// Loads package.yaml + k.yaml with `source` as va's facts.
struct Loaded {
  std::optional<kpack::Package> pkg;
  std::vector<kpack::Specialization> specs;  // only when it loaded
  std::string errors;                        // load and expand errors

  const kpack::Kernel& kernel() const { return pkg->kernels.at(0); }
  const kpack::Constexpr& constexpr_(const std::string& name) const {
    const kpack::Constexpr* c = kernel().FindConstexpr(name);
    REQUIRE(c != nullptr);
    return *c;
  }
  const kpack::Param& param(const std::string& name) const {
    const kpack::Param* p = kernel().FindParam(name);
    REQUIRE(p != nullptr);
    return *p;
  }
  // The names the API has, one per specialization.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const kpack::Specialization& s : specs)
      if (s.api) out.push_back(s.name);
    return out;
  }
  // Every build: its stem (name, computed values, variant).
  std::vector<std::string> stems() const {
    std::vector<std::string> out;
    for (const kpack::Specialization& s : specs) out.push_back(s.Stem());
    return out;
  }
};

const char* kPackage = "package: demo\narchs: [sm_80]\nkernels: [k.yaml]\n";

Loaded Load(const std::string& manifest, const kpack::TritonSourceInfo& source, const std::string& package = kPackage,
            FakeDescriber* describer = nullptr) {
  ScratchDir dir;
  dir.Write("package.yaml", package);
  dir.Write("k.yaml", manifest);
  dir.Write("va.py", "# the facts come from the fake describer\n");
  FakeDescriber own;
  if (!describer) describer = &own;
  describer->Add("va", source);
  kpack::LoadOptions options;
  options.describer = describer;
  kpack::Diagnostics diag;
  Loaded out;
  out.pkg = kpack::LoadPackage("package.yaml", options, diag);
  if (out.pkg) out.specs = kpack::Expand(*out.pkg, diag);
  out.errors = diag.Text();
  return out;
}

std::string Errors(const std::string& manifest, const kpack::TritonSourceInfo& source) {
  return Load(manifest, source).errors;
}

// kTriton with `line` added to its constexprs.
std::string WithConstexpr(const std::string& line) { return Replace(kTriton, "params:\n", line + "params:\n"); }

// kTriton without BLOCK (the autotune configs give it) and a grid of n.
std::string WithoutBlock() {
  return Replace(Replace(kTriton, "constexprs:\n  - {name: BLOCK, type: int, values: [128, 256], tag: b}\n", ""),
                 "\"cdiv(n, BLOCK)\"", "n");
}

}  // namespace

TEST_CASE("the describer is asked once about every Triton kernel, with where its source is") {
  ScratchDir dir;
  dir.Write("package.yaml", "package: demo\narchs: [sm_80]\nkernels: [k.yaml, c.yaml, w.yaml]\n"
                            "python_path: [lib]\nassume: {pkg.A: 1, pkg.B: 2}\n");
  dir.Write("k.yaml", std::string(kTriton) + "assume: {pkg.B: 3}\nload: execute\n");
  dir.Write("c.yaml", kpack::testing::kKernel);  // CUDA: not described
  dir.Write("w.yaml", Replace(Replace(kTriton, "kernel: va", "kernel: wa"), "entry: va", "entry: wa"));
  dir.Write("va.py", "");
  dir.Write("va.cuh", "");
  FakeDescriber describer;
  describer.Add("va", Source());
  describer.Add("wa", Source("def wa(x, y, out, n, BLOCK: tl.constexpr):"));
  kpack::LoadOptions options;
  options.describer = &describer;
  options.python_path = {"site"};
  kpack::Diagnostics diag;
  std::optional<kpack::Package> pkg = kpack::LoadPackage("package.yaml", options, diag);
  REQUIRE(diag.Text() == "");
  CHECK(describer.calls() == 1);
  REQUIRE(describer.requests().size() == 2);
  const kpack::TritonDescribeRequest& r = describer.requests()[0];
  CHECK(r.source == "va.py");
  CHECK(r.source_name == "va.py");
  CHECK(r.entry == "va");
  CHECK(r.python_path == std::vector<std::string>{"site", "lib"});
  CHECK(r.root == ".");
  CHECK(r.assume == std::vector<std::pair<std::string, std::string>>{{"pkg.A", "1"}, {"pkg.B", "3"}});
  CHECK(r.execute);
  CHECK(describer.requests()[1].entry == "wa");
  CHECK_FALSE(describer.requests()[1].execute);
  // What the source says is kept for the build and the inventory.
  CHECK(pkg->kernels[0].triton.inputs == std::vector<std::string>{"va.py"});
  CHECK(pkg->kernels[0].triton.line == 5);
}

TEST_CASE("a describer that cannot run is an error at the first Triton kernel; the source's errors stand alone") {
  ScratchDir dir;
  dir.Write("package.yaml", kPackage);
  dir.Write("k.yaml", kTriton);
  dir.Write("va.py", "");
  FakeDescriber describer;
  describer.Fail("Triton kernels need Python 3 with Triton 3.6.0 at build time");
  kpack::LoadOptions options;
  options.describer = &describer;
  kpack::Diagnostics diag;
  CHECK_FALSE(kpack::LoadPackage("package.yaml", options, diag));
  CHECK(diag.Text() == "k.yaml:1:9: error: Triton kernels need Python 3 with Triton 3.6.0 at build time\n");

  // What the slice could not resolve, at its Python positions; the merge
  // does not go on to report what follows from it (these params differ).
  kpack::TritonSourceInfo source = Source("def va(a, BLOCK: tl.constexpr):");
  source.errors = {{Py(9, 12), "'rsqrt' (used by 'va') cannot be resolved without running code"},
                   {Py(2, 1), "'helper' cannot be resolved"}};
  CHECK(Errors(kTriton, source) ==
        "va.py:9:12: error: 'rsqrt' (used by 'va') cannot be resolved without running code\n"
        "va.py:2:1: error: 'helper' cannot be resolved\n");
}

TEST_CASE("the manifest's params are the kernel's runtime parameters, in order") {
  const std::string hint = "; mark params the kernel does not take launch_only: true\n";
  CHECK(Errors(kTriton, Source("def va(x, out, y, n, BLOCK: tl.constexpr):")) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out, n) are not va's runtime parameters in order (x, out, y, "
        "n)" + hint);
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, m, BLOCK: tl.constexpr):")) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out, n) are not va's runtime parameters in order (x, y, out, "
        "n, m)" + hint);
  // A default other than None must be passed.
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, scale=2, BLOCK: tl.constexpr):")) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out, n) are not va's runtime parameters in order (x, y, out, "
        "n, scale)" + hint);
  CHECK(Errors(kTriton, Source("def va(BLOCK: tl.constexpr):")) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out, n) are not va's runtime parameters in order (none)" +
            hint);
  // A param whose default is None may be left out: it is passed as None.
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, bias=None, BLOCK: tl.constexpr):")) == "");
  // ... or listed, in its place.
  const std::string with_bias = Replace(kTriton, "  - {name: n,", "  - {name: bias, type: const f32*}\n  - {name: n,");
  CHECK(Errors(with_bias, Source("def va(x, y, out, bias=None, n=None, BLOCK: tl.constexpr):")) == "");
  CHECK(Errors(with_bias, Source("def va(x, y, out, n, bias=None, BLOCK: tl.constexpr):")) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out, bias, n) are not va's runtime parameters in order (x, "
        "y, out, n, bias)" + hint);
  // Launch-only params are the caller's, not the kernel's.
  CHECK(Errors(Replace(kTriton, "  - {name: n, type: i64}\n",
                       "  - {name: rows, type: i64, launch_only: true}\n  - {name: n, type: i64}\n"),
               Source()) == "");
  CHECK(Errors(Replace(kTriton, "{name: n, type: i64}", "{name: n, type: i64, launch_only: true}"), Source()) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out) are not va's runtime parameters in order (x, y, out, "
        "n)" + hint);
}

TEST_CASE("the manifest's constexprs are the kernel's tl.constexpr parameters") {
  CHECK(Errors(WithConstexpr("  - {name: EXTRA, type: int, values: [1]}\n"), Source()) ==
        "k.yaml:7:5: error: constexpr 'EXTRA' is not a tl.constexpr parameter of va (its tl.constexpr parameters: "
        "BLOCK)\n");
  // A runtime parameter is not one either (and the params then differ).
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, BLOCK):")) ==
        "k.yaml:7:1: error: the manifest's params (x, y, out, n) are not va's runtime parameters in order (x, y, out, "
        "n, BLOCK); mark params the kernel does not take launch_only: true\n"
        "k.yaml:6:5: error: constexpr 'BLOCK' is not a tl.constexpr parameter of va (its tl.constexpr parameters: "
        "none)\n");
  // A dtype constexpr types pointers; Triton never sees it.
  CHECK(Errors(Replace(WithConstexpr("  - {name: T, type: dtype, values: [f16]}\n"), "{name: x, type: const f32*}",
                       "{name: x, type: const T*}"),
               Source()) == "");
}

TEST_CASE("num_warps among the constexprs is the option unless the kernel has a constexpr of that name") {
  const std::string manifest = WithConstexpr("  - {name: num_warps, type: int, values: [2, 8]}\n");
  Loaded option = Load(manifest, Source());
  REQUIRE(option.errors == "");
  CHECK(option.constexpr_("num_warps").option);
  CHECK(option.kernel().NumWarps(option.specs[1].values) == 8);

  Loaded own = Load(manifest, Source("def va(x, y, out, n, BLOCK: tl.constexpr, num_warps: tl.constexpr):"));
  REQUIRE(own.errors == "");
  CHECK_FALSE(own.constexpr_("num_warps").option);
  CHECK(own.names()[1] == "va_b128_num_warps8");
  // Its value is Triton's num_warps as well, as when a JIT caller passes it.
  CHECK(own.kernel().NumWarps(own.specs[1].values) == 8);
  CHECK(own.kernel().NumWarps(own.specs[0].values) == 2);
  // An option of the same name as well would be a second argument of that
  // name in the API (docs/manifest.md): refused.
  CHECK(Errors(manifest + "options: {num_warps: [8]}\n",
               Source("def va(x, y, out, n, BLOCK: tl.constexpr, num_warps: tl.constexpr):")) ==
        "k.yaml:15:11: error: name 'num_warps' is used twice among constexprs and params (or is 'stream')\n");
}

namespace {

// va with an autotune decorator at va.py:3:2 over `configs`, key n.
kpack::TritonSourceInfo Autotuned(
    std::vector<kpack::TritonConfigFacts> configs,
    const std::string& def = "def va(x, y, out, n, BLOCK: tl.constexpr, GROUP: tl.constexpr = 8):") {
  kpack::TritonSourceInfo s = Source(def);
  kpack::TritonAutotuneFacts a;
  a.loc = Py(3, 2);
  a.key = {"n"};
  a.configs = std::move(configs);
  s.autotunes = {a};
  return s;
}

std::vector<kpack::TritonConfigFacts> TwoConfigs() {
  return {Config({{"BLOCK", "64"}}, 4), Config({{"BLOCK", "128"}}, 8)};
}

}  // namespace

TEST_CASE("autotune configs become axes restricted to the listed combinations") {
  Loaded l = Load(WithoutBlock(), Autotuned(TwoConfigs()));
  REQUIRE(l.errors == "");
  const kpack::Kernel& k = l.kernel();
  // Each field the configs set, kwargs first, then the options.
  REQUIRE(k.constexprs.size() == 3);
  const char* names[] = {"BLOCK", "num_warps", "num_stages"};
  const char* tags[] = {"block", "w", "stages"};
  for (size_t i = 0; i < 3; ++i) {
    INFO(names[i]);
    CHECK(k.constexprs[i].name == names[i]);
    CHECK(k.constexprs[i].tag == tags[i]);
    CHECK(k.constexprs[i].origin == kpack::ConstexprOrigin::kAutotune);
    CHECK(k.constexprs[i].option == (i > 0));
    CHECK(k.constexprs[i].loc.ToString() == "va.py:3:2");
  }
  // num_stages is 3 in both: built, but no part of the API.
  CHECK(k.constexprs[0].InApi());
  CHECK(k.constexprs[1].InApi());
  CHECK_FALSE(k.constexprs[2].InApi());
  REQUIRE(k.configs);
  CHECK(k.configs->axes == std::vector<size_t>{0, 1, 2});
  REQUIRE(k.configs->tuples.size() == 2);
  CHECK(k.configs->tuples[1][0].integer == 128);
  CHECK(k.configs->tuples[1][1].integer == 8);
  CHECK(k.configs->key == std::vector<std::string>{"n"});
  CHECK(k.configs->loc.ToString() == "va.py:3:2");
  CHECK(k.triton.autotune_key == std::vector<std::string>{"n"});
  // 2 configs, not the 2 x 2 product.
  CHECK(l.names() == std::vector<std::string>{"va_block64_w4", "va_block128_w8"});
  CHECK(l.specs[1].Describe() == "BLOCK=128, num_warps=8");
  CHECK(k.NumWarps(l.specs[1].values) == 8);

  // A field every config sets alike is built and passed, but not named;
  // one a config leaves out takes the kernel's default (GROUP = 8).
  Loaded group =
      Load(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}, {"GROUP", "8"}}), Config({{"BLOCK", "128"}})}));
  REQUIRE(group.errors == "");
  CHECK_FALSE(group.constexpr_("GROUP").InApi());
  CHECK(group.constexpr_("GROUP").values.size() == 1);
  CHECK(group.names() == std::vector<std::string>{"va_block64", "va_block128"});
}

TEST_CASE("the manifest's values restrict the autotune configs") {
  const std::vector<kpack::TritonConfigFacts> four = {Config({{"BLOCK", "64"}}, 4), Config({{"BLOCK", "64"}}, 8),
                                                      Config({{"BLOCK", "128"}}, 4), Config({{"BLOCK", "128"}}, 8)};
  Loaded l = Load(Replace(kTriton, "values: [128, 256]", "values: [64, 128]") + "options: {num_warps: [8]}\n",
                  Autotuned(four));
  REQUIRE(l.errors == "");
  // BLOCK keeps the manifest's tag; num_warps the options' key.
  CHECK(l.constexpr_("BLOCK").origin == kpack::ConstexprOrigin::kManifest);
  CHECK(l.names() == std::vector<std::string>{"va_b64_w8", "va_b128_w8"});
  CHECK(l.kernel().configs->tuples.size() == 2);
  Loaded block = Load(Replace(kTriton, "values: [128, 256]", "values: [64]"), Autotuned(four));
  REQUIRE(block.errors == "");
  CHECK(block.names() == std::vector<std::string>{"va_b64_w4", "va_b64_w8"});

  // A value no config has.
  CHECK(Errors(kTriton, Autotuned(TwoConfigs())) ==
        "k.yaml:6:44: error: BLOCK value 256 is in none of va's autotune configs (va.py:3:2); add one with autotune: "
        "add:\n");
  // Values that each exist, but in no config together.
  CHECK(Errors(Replace(kTriton, "values: [128, 256]", "values: [128]") + "options: {num_warps: [4]}\n",
               Autotuned(TwoConfigs())) ==
        "va.py:3:2: error: the manifest's values leave none of va's autotune configs\n");
}

TEST_CASE("autotune: in the manifest replaces (configs:) or extends (add:) the decorator's configs") {
  Loaded replaced = Load(WithoutBlock() +
                             "autotune:\n  configs:\n    - {BLOCK: 32, num_warps: 2}\n    - {BLOCK: 64, num_ctas: 1}\n",
                         Autotuned(TwoConfigs()));
  REQUIRE(replaced.errors == "");
  CHECK(replaced.names() == std::vector<std::string>{"va_block32_w2", "va_block64_w4"});
  CHECK(replaced.kernel().configs->loc.ToString() == "va.py:3:2");
  CHECK(replaced.constexpr_("BLOCK").loc.ToString() == "k.yaml:14:7");

  Loaded added = Load(WithoutBlock() + "autotune: {add: [{BLOCK: 256, num_warps: 8, num_stages: 2}]}\n",
                      Autotuned(TwoConfigs()));
  REQUIRE(added.errors == "");
  CHECK(added.names() == std::vector<std::string>{"va_block64_w4_stages3", "va_block128_w8_stages3",
                                                  "va_block256_w8_stages2"});

  // Configs the helper could not evaluate need the manifest's.
  kpack::TritonSourceInfo unreadable = Autotuned({});
  unreadable.autotunes[0].configs_error =
      "its configs cannot be evaluated without running code (va.py:2:12: it calls check_shared_mem()); list them in "
      "the manifest's autotune: configs:";
  // (BLOCK then has no values either: it is named at its parameter.)
  const std::string no_block =
      "va.py:5:22: error: va's tl.constexpr parameter 'BLOCK' has no values in the manifest's constexprs and no "
      "default (k.yaml lists the values to build)\n";
  CHECK(Errors(WithoutBlock(), unreadable) ==
        "va.py:3:2: error: the autotune decorator of va: its configs cannot be evaluated without running code "
        "(va.py:2:12: it calls check_shared_mem()); list them in the manifest's autotune: configs:\n" + no_block);
  CHECK(Load(WithoutBlock() + "autotune: {configs: [{BLOCK: 32}]}\n", unreadable).names() ==
        std::vector<std::string>{"va"});
  // add: alone does not make up for them.
  CHECK(Errors(WithoutBlock() + "autotune: {add: [{BLOCK: 32}]}\n", unreadable) ==
        "va.py:3:2: error: the autotune decorator of va: its configs cannot be evaluated without running code "
        "(va.py:2:12: it calls check_shared_mem()); list them in the manifest's autotune: configs:\n");
}

TEST_CASE("autotune decorators and configs kpack cannot build are refused with the reason") {
  kpack::TritonSourceInfo clusters = Autotuned({Config({{"BLOCK", "64"}})});
  clusters.autotunes[0].configs[0].num_ctas = 2;
  // A config's num_ctas is a cluster option, built on sm_90 and later only.
  CHECK(Errors(WithoutBlock(), clusters) ==
        "va.py:3:2: error: num_ctas above 1 launches thread-block clusters, which need sm_90 or later; the kernel is "
        "built for sm_80\n");
  kpack::TritonSourceInfo hooked = Autotuned(TwoConfigs());
  hooked.autotunes[0].error = "autotune's pre_hook runs Python around every launch (va.py:3:40), which a C launcher "
                              "cannot do";
  CHECK(Errors(kTriton, hooked) ==
        "va.py:3:2: error: the autotune decorator of va cannot be packaged: autotune's pre_hook runs Python around "
        "every launch (va.py:3:40), which a C launcher cannot do\n");
  kpack::TritonSourceInfo twice = Autotuned(TwoConfigs());
  twice.autotunes.push_back(twice.autotunes[0]);
  twice.autotunes[1].loc = Py(4, 2);
  CHECK(Errors(kTriton, twice) == "va.py:4:2: error: va has two autotune decorators; kpack reads one\n");
  CHECK(Errors(std::string(kTriton) + "autotune: {add: [{BLOCK: 512}]}\n", Source()) ==
        "k.yaml:14:11: error: autotune: in the manifest, but va has no autotune decorator\n");
  CHECK(Errors(Replace(kTriton, "values: [128, 256]", "values: [64, 128]") + "autotune: {config: []}\n",
               Autotuned(TwoConfigs())) ==
        "k.yaml:14:12: error: unknown key 'config' in autotune (expected one of: configs, add)\n");
}

TEST_CASE("autotune config fields must be constexprs or options of one type, with values kpack can build") {
  CHECK(Errors(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}}), Config({{"BLOCK", "64"}, {"SPLIT", "2"}})})) ==
        "va.py:3:2: error: autotune config field 'SPLIT' is neither a tl.constexpr parameter of va nor a Triton "
        "option\n"
        "va.py:5:22: error: va's tl.constexpr parameter 'BLOCK' has no values in the manifest's constexprs and no "
        "default (k.yaml lists the values to build)\n");
  // The config that sets a field the others leave out, where the kernel
  // has no default for it.
  CHECK(Errors(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}}), Config({})})) ==
        "va.py:3:2: error: an autotune config of va does not set 'BLOCK', which has no default in the kernel\n"
        "va.py:5:22: error: va's tl.constexpr parameter 'BLOCK' has no values in the manifest's constexprs and no "
        "default (k.yaml lists the values to build)\n");
  CHECK(Errors(WithoutBlock() + "autotune:\n  configs: [{BLOCK: 64}, {BLOCK: 64.0}]\n", Autotuned({})) ==
        "k.yaml:13:26: error: autotune config field 'BLOCK' has values of different types\n"
        "va.py:5:22: error: va's tl.constexpr parameter 'BLOCK' has no values in the manifest's constexprs and no "
        "default (k.yaml lists the values to build)\n");
  CHECK(Errors(kTriton, Autotuned({Config({{"BLOCK", "[64]"}})})) ==
        "va.py:3:2: error: autotune config field 'BLOCK' has the value [64], which is not a C int, a bool, a float "
        "or a string\n");
  // An int past a C int (the dispatcher's type) is no int axis either.
  CHECK(Errors(kTriton, Autotuned({Config({{"BLOCK", "4294967296"}})})) ==
        "va.py:3:2: error: autotune config field 'BLOCK' has the value 4294967296, which is not a C int, a bool, a "
        "float or a string\n");
  // Options from a decorator are checked as the manifest's, at the decorator.
  CHECK(Errors(kTriton, Autotuned({Config({{"BLOCK", "128"}}, 3), Config({{"BLOCK", "256"}}, 4)})) ==
        "va.py:3:2: error: num_warps must be a power of two from 1 to 32\n");
  CHECK(Errors(Replace(kTriton, "values: [128, 256]", "values: [128]"),
               Autotuned({Config({{"BLOCK", "128"}}, 4, 3, 300)})) ==
        "va.py:3:2: error: maxnreg must be from 16 to 255 registers\n");
  // A str the configs vary is part of the names.
  CHECK(Errors(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}, {"MODE", "\"a-b\""}}),
                                          Config({{"BLOCK", "64"}, {"MODE", "\"sum\""}})},
                                         "def va(x, y, out, n, BLOCK: tl.constexpr, MODE: tl.constexpr):")) ==
        "va.py:3:2: error: str value 'a-b' of 'MODE' must hold only letters, digits and '_' (it is part of the "
        "specialization's name)\n");
  // ... but one all configs share is not.
  Loaded shared = Load(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}, {"MODE", "\"a-b\""}}),
                                                  Config({{"BLOCK", "128"}, {"MODE", "\"a-b\""}})},
                                                 "def va(x, y, out, n, BLOCK: tl.constexpr, MODE: tl.constexpr):"));
  REQUIRE(shared.errors == "");
  CHECK(shared.constexpr_("MODE").kind == kpack::ConstexprKind::kStr);
  CHECK(shared.names() == std::vector<std::string>{"va_block64", "va_block128"});
}

TEST_CASE("autotune config fields of every kind, and maxnreg set by some configs only") {
  Loaded kinds = Load(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}, {"EPS", "1e-06"}, {"MODE", "\"mean\""},
                                                         {"EVEN", "true"}}),
                                                 Config({{"BLOCK", "64"}, {"EPS", "0.5"}, {"MODE", "\"sum\""},
                                                         {"EVEN", "false"}})},
                                                "def va(x, y, out, n, BLOCK: tl.constexpr, EPS: tl.constexpr, MODE: "
                                                "tl.constexpr, EVEN: tl.constexpr):"));
  REQUIRE(kinds.errors == "");
  CHECK(kinds.constexpr_("EPS").kind == kpack::ConstexprKind::kFloat);
  CHECK(kinds.constexpr_("EPS").values[0].text == "1e-06");
  CHECK(kinds.constexpr_("MODE").kind == kpack::ConstexprKind::kStr);
  CHECK(kinds.constexpr_("MODE").tag == "");
  CHECK(kinds.constexpr_("EVEN").kind == kpack::ConstexprKind::kBool);
  CHECK(kinds.names() == std::vector<std::string>{"va_eps1em06_mean_even", "va_eps0p5_sum_noeven"});

  // Triton's "no limit" where a config sets no maxnreg: maxnreg 0, which
  // the build leaves out of Triton's options.  Every config is built.
  Loaded some = Load(WithoutBlock(), Autotuned({Config({{"BLOCK", "64"}}, 4, 3, 128), Config({{"BLOCK", "128"}})}));
  REQUIRE(some.errors == "");
  CHECK(some.constexpr_("maxnreg").option);
  CHECK(some.names() == std::vector<std::string>{"va_block64_maxnreg128", "va_block128_maxnreg0"});
  // The manifest may pick the limited configs only.
  Loaded limited = Load(WithoutBlock() + "options: {maxnreg: 128}\n",
                        Autotuned({Config({{"BLOCK", "64"}}, 4, 3, 128), Config({{"BLOCK", "128"}})}));
  REQUIRE(limited.errors == "");
  // (BLOCK then has one value: no part of the names; maxnreg is the manifest's.)
  CHECK(limited.names() == std::vector<std::string>{"va_maxnreg128"});
}

TEST_CASE("autotune configs in the manifest: mappings of values kpack can build") {
  auto configs = [](const std::string& list) {
    return Errors(WithoutBlock() + "autotune:\n  configs: " + list + "\n", Autotuned(TwoConfigs()));
  };
  const std::string no_block =
      "va.py:5:22: error: va's tl.constexpr parameter 'BLOCK' has no values in the manifest's constexprs and no "
      "default (k.yaml lists the values to build)\n";
  CHECK(configs("[{BLOCK: 64, num_ctas: 2}]") ==
        "k.yaml:13:13: error: num_ctas above 1 launches thread-block clusters, which need sm_90 or later; the kernel "
        "is built for sm_80\n");
  CHECK(configs("[{BLOCK: 64, BLOCK: 128}]") == "k.yaml:13:25: error: duplicate key 'BLOCK' in an autotune config\n" +
                                                    no_block);
  CHECK(configs("[{BLOCK: [64]}]") ==
        "k.yaml:13:21: error: an autotune config value must be true, false, a number, a string or null\n" + no_block);
  CHECK(configs("[{BLOCK: null}]") ==
        "k.yaml:13:21: error: an autotune config value must be a C int, a bool, a float or a string\n" + no_block);
  CHECK(configs("[64]") ==
        "k.yaml:13:13: error: an autotune config must be a mapping of constexprs and options to values\n" + no_block);
  CHECK(configs("[{}]") ==
        "k.yaml:13:13: error: an autotune config must be a mapping of constexprs and options to values\n" + no_block);
  CHECK(configs("[]") == "k.yaml:13:12: error: autotune configs must not be empty\n" + no_block);
  CHECK(configs("[{BLOK: 64}]") ==
        "k.yaml:13:13: error: autotune config field 'BLOK' is neither a tl.constexpr parameter of va nor a Triton "
        "option\n" + no_block);
}

namespace {

// va with EVEN and SPLIT constexprs and `heuristics` (at va.py:2).
kpack::TritonSourceInfo Heuristics(std::vector<kpack::TritonHeuristicFacts> heuristics,
                                   const std::string& def = "def va(x, y, out, n, BLOCK: tl.constexpr, EVEN: "
                                                            "tl.constexpr, SPLIT: tl.constexpr = 1):") {
  kpack::TritonSourceInfo s = Source(def);
  s.heuristics = std::move(heuristics);
  return s;
}

// What the helper translates `args['n'] % args['BLOCK'] == 0` into.
kpack::TritonHeuristicFacts EvenHeuristic() {
  return {"EVEN", "(floormod(n, BLOCK) == 0)", "", "lambda args: args['n'] % args['BLOCK'] == 0", Py(2, 30)};
}

}  // namespace

TEST_CASE("a translated bool heuristic becomes a computed constexpr built for false and true") {
  Loaded l = Load(kTriton, Heuristics({EvenHeuristic()}));
  REQUIRE(l.errors == "");
  const kpack::Constexpr& even = l.constexpr_("EVEN");
  CHECK(even.kind == kpack::ConstexprKind::kBool);
  CHECK(even.origin == kpack::ConstexprOrigin::kHeuristic);
  CHECK(even.Computed());
  CHECK_FALSE(even.InApi());
  CHECK(even.tag == "even");
  CHECK(even.loc.ToString() == "va.py:2:30");
  CHECK(kpack::FormatExpr(*even.rule) == "floormod(n, BLOCK) == 0");
  CHECK(even.rule_source == "heuristic at va.py:2:30 (lambda args: args['n'] % args['BLOCK'] == 0)");
  REQUIRE(even.values.size() == 2);
  CHECK((even.values[0].integer == 0 && even.values[1].integer == 1));
  // Callers never pass it: the API's names and values leave it out.
  CHECK(l.names() == std::vector<std::string>{"va_b128", "va_b256"});
  CHECK(l.specs[0].Describe() == "BLOCK=128, EVEN=false");

  // The manifest may build fewer values (the launcher then refuses the rest).
  Loaded only_even =
      Load(WithConstexpr("  - {name: EVEN, type: bool, values: [true]}\n"), Heuristics({EvenHeuristic()}));
  REQUIRE(only_even.errors == "");
  CHECK(only_even.constexpr_("EVEN").Computed());
  CHECK(only_even.constexpr_("EVEN").values.size() == 1);
  CHECK(only_even.constexpr_("EVEN").origin == kpack::ConstexprOrigin::kHeuristic);
  // Listed without values: both, as when it is not listed.
  Loaded listed = Load(WithConstexpr("  - {name: EVEN, type: bool}\n"), Heuristics({EvenHeuristic()}));
  REQUIRE(listed.errors == "");
  CHECK(listed.constexpr_("EVEN").values.size() == 2);
}

TEST_CASE("an integer heuristic is built for the values the manifest lists") {
  const kpack::TritonHeuristicFacts split = {"SPLIT", "min(cdiv(n, 4096), 4)", "",
                                             "lambda args: min(triton.cdiv(args['n'], 4096), 4)", Py(2, 60)};
  CHECK(Errors(kTriton, Heuristics({EvenHeuristic(), split})) ==
        "va.py:2:60: error: heuristic 'SPLIT' (lambda args: min(triton.cdiv(args['n'], 4096), 4)) computes an integer; "
        "list SPLIT in the manifest's constexprs with the values to build\n");
  Loaded l = Load(WithConstexpr("  - {name: SPLIT, type: int, values: [1, 2], tag: s}\n"),
                  Heuristics({EvenHeuristic(), split}));
  REQUIRE(l.errors == "");
  const kpack::Constexpr& s = l.constexpr_("SPLIT");
  CHECK(s.Computed());
  CHECK(s.origin == kpack::ConstexprOrigin::kHeuristic);
  CHECK(kpack::FormatExpr(*s.rule) == "min(cdiv(n, 4096), 4)");
  CHECK(s.values.size() == 2);
  CHECK(l.names() == std::vector<std::string>{"va_b128", "va_b256"});
}

TEST_CASE("a heuristic the launcher cannot compute is an error naming the manifest's way out") {
  const std::string fix = "; give HAS_SCALE a rule in the manifest's constexprs (rule: EXPR), or rule: none to let "
                          "the caller choose it\n";
  const std::string def = "def va(x, y, out, n, scale, BLOCK: tl.constexpr, HAS_SCALE: tl.constexpr):";
  const std::string manifest = Replace(kTriton, "  - {name: n, type: i64}\n",
                                       "  - {name: n, type: i64}\n  - {name: scale, type: f32}\n");
  const kpack::TritonHeuristicFacts untranslatable = {
      "HAS_SCALE", "", "va.py:2:43: it calls isinstance(), which has no kpack equivalent",
      "lambda args: isinstance(args['scale'], float)", Py(2, 30)};
  CHECK(Errors(manifest, Heuristics({untranslatable}, def)) ==
        "va.py:2:30: error: heuristic 'HAS_SCALE' (lambda args: isinstance(args['scale'], float)) has no "
        "launch-expression equivalent: va.py:2:43: it calls isinstance(), which has no kpack equivalent" + fix +
        "va.py:5:50: error: va's tl.constexpr parameter 'HAS_SCALE' has no values in the manifest's constexprs and "
        "no default (k.yaml lists the values to build)\n");
  // Translated, but a C caller cannot pass None for a float.
  const kpack::TritonHeuristicFacts null_float = {"HAS_SCALE", "scale != NULL", "",
                                                  "lambda args: args['scale'] is not None", Py(2, 30)};
  CHECK(Errors(manifest, Heuristics({null_float}, def)) ==
        "va.py:2:30: error: heuristic 'HAS_SCALE' (lambda args: args['scale'] is not None) cannot be computed by the "
        "launcher (scale != NULL: 'scale' is not an integer parameter)" + fix +
        "va.py:5:50: error: va's tl.constexpr parameter 'HAS_SCALE' has no values in the manifest's constexprs and "
        "no default (k.yaml lists the values to build)\n");

  // The manifest's rule wins over the source's heuristic ...
  Loaded ruled = Load(Replace(manifest, "params:\n", "  - {name: HAS_SCALE, type: bool, rule: \"n > 0\"}\nparams:\n"),
                      Heuristics({null_float}, def));
  REQUIRE(ruled.errors == "");
  CHECK(kpack::FormatExpr(*ruled.constexpr_("HAS_SCALE").rule) == "n > 0");
  CHECK(ruled.constexpr_("HAS_SCALE").rule_source == "rule at k.yaml:7:41");
  CHECK(ruled.constexpr_("HAS_SCALE").origin == kpack::ConstexprOrigin::kManifest);
  // ... and rule: none makes it the caller's axis.
  Loaded chosen = Load(Replace(manifest, "params:\n",
                               "  - {name: HAS_SCALE, type: bool, values: [true, false], rule: none}\nparams:\n"),
                       Heuristics({untranslatable}, def));
  REQUIRE(chosen.errors == "");
  CHECK_FALSE(chosen.constexpr_("HAS_SCALE").Computed());
  CHECK(chosen.constexpr_("HAS_SCALE").InApi());
  CHECK(chosen.names() == std::vector<std::string>{"va_b128_has_scale", "va_b128_nohas_scale", "va_b256_has_scale",
                                                   "va_b256_nohas_scale"});
}

TEST_CASE("tl.constexpr parameters the manifest leaves out take the source's defaults") {
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, BLOCK: tl.constexpr, SCALE: tl.constexpr = 2):")) == "");
  // The default is passed by the helper, not built as an axis.
  CHECK(Load(kTriton, Source("def va(x, y, out, n, BLOCK: tl.constexpr, SCALE: tl.constexpr = 2):"))
            .kernel()
            .FindConstexpr("SCALE") == nullptr);
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):")) ==
        "va.py:5:43: error: va's tl.constexpr parameter 'SCALE' has no values in the manifest's constexprs and no "
        "default (k.yaml lists the values to build)\n");
  CHECK(Errors(kTriton, Source("def va(x, y, out, n, BLOCK: tl.constexpr, SCALE: tl.constexpr = get_scale()):")) ==
        "va.py:5:43: error: va's tl.constexpr parameter 'SCALE' is not in the manifest's constexprs, and its default "
        "get_scale() is not a literal; list its values in the manifest\n");
  // Listed, it needs no default.
  CHECK(Errors(WithConstexpr("  - {name: SCALE, type: int, values: [4]}\n"),
               Source("def va(x, y, out, n, BLOCK: tl.constexpr, SCALE: tl.constexpr = get_scale()):")) == "");
}

namespace {

// Params of every kind, and the source's view of them.
const char* kParams =
    "  - {name: x, type: const f32*}\n"
    "  - {name: y, type: const f32*}\n"
    "  - {name: out, type: f32*}\n"
    "  - {name: n, type: i64}\n"
    "  - {name: stride, type: i32}\n"
    "  - {name: scale, type: f32}\n"
    "  - {name: flag, type: bool}\n"
    "  - {name: m, type: i64, divisibility: none}\n"
    "  - {name: k, type: i64, width: fixed}\n"
    "  - {name: rows, type: i64, launch_only: true}\n";
const char* kParamsDef = "def va(x, y, out, n, stride, scale, flag, m, k, BLOCK: tl.constexpr):";

std::string ManyParams() {
  return Replace(kTriton,
                 "  - {name: x, type: const f32*}\n  - {name: y, type: const f32*}\n  - {name: out, type: f32*}\n"
                 "  - {name: n, type: i64}\n",
                 kParams);
}

// "x y out": the params that are divisibility: auto, or width: auto.
std::string AutoParams(const Loaded& l, bool width) {
  std::string out;
  for (const kpack::Param& p : l.kernel().params)
    if (width ? p.width_auto : p.divisibility_auto) out += (out.empty() ? "" : " ") + p.name;
  return out;
}

}  // namespace

TEST_CASE("params the manifest does not mark get the JIT's specialization") {
  Loaded l = Load(ManyParams(), Source(kParamsDef));
  REQUIRE(l.errors == "");
  // Pointers and integers hinted, i64 narrowed; not floats, bools,
  // launch-only params or what the manifest says.
  CHECK(AutoParams(l, false) == "x y out n stride k");
  CHECK(AutoParams(l, true) == "n m");
  CHECK(l.param("x").divisibility == 16);
  CHECK(l.param("m").divisibility == 0);
  CHECK(l.param("m").divisibility_loc.line == 15);

  // do_not_specialize and do_not_specialize_on_alignment exempt a param
  // from the hint (the JIT still passes a small int as i32).
  kpack::TritonSourceInfo exempt = Source(kParamsDef);
  exempt.params[0].do_not_specialize_on_alignment = true;  // x
  exempt.params[3].do_not_specialize = true;               // n
  Loaded e = Load(ManyParams(), exempt);
  REQUIRE(e.errors == "");
  CHECK(AutoParams(e, false) == "y out stride k");
  CHECK(AutoParams(e, true) == "n m");

  // An i64 annotation: the JIT passes it as i64 whatever its value.
  Loaded wide = Load(ManyParams(), Source("def va(x, y, out, n: tl.int64, stride, scale, flag, m, k, BLOCK: "
                                          "tl.constexpr):"));
  REQUIRE(wide.errors == "");
  CHECK(AutoParams(wide, false) == "x y out n stride k");
  CHECK(AutoParams(wide, true) == "m");

  // variants: none builds the params as typed.
  Loaded none = Load(ManyParams() + "variants: none\n", Source(kParamsDef));
  REQUIRE(none.errors == "");
  CHECK(AutoParams(none, false) == "");
  CHECK(AutoParams(none, true) == "");
  CHECK(none.specs.size() == 2);
}

TEST_CASE("variants: jit builds one more build per base, each up to three") {
  Loaded jit = Load(kTriton, Source());
  REQUIRE(jit.errors == "");
  REQUIRE(jit.specs.size() == 4);
  for (size_t i = 2; i < 4; ++i) {
    const kpack::Specialization& v = jit.specs[i];
    INFO(i);
    CHECK(v.VariantIndex() == 3);
    CHECK(v.base == i - 2);
    CHECK_FALSE(v.api);
  }
  CHECK(jit.stems() == std::vector<std::string>{"va_b128", "va_b256", "va_b128.aligned.i32", "va_b256.aligned.i32"});
  const kpack::Param& n = jit.param("n");
  CHECK(jit.specs[0].Divisibility(n) == 0);
  CHECK(jit.specs[2].Divisibility(n) == 16);
  CHECK(jit.specs[0].TypeOf(n).scalar == kpack::Scalar::kI64);
  CHECK(jit.specs[2].TypeOf(n).scalar == kpack::Scalar::kI32);

  // Only hints to make (n is i32): the aligned variant alone.
  Loaded aligned = Load(Replace(kTriton, "{name: n, type: i64}", "{name: n, type: i32}"), Source());
  REQUIRE(aligned.errors == "");
  CHECK(aligned.stems() == std::vector<std::string>{"va_b128", "va_b256", "va_b128.aligned", "va_b256.aligned"});
  // Only i32 to pass: the i32 variant alone.
  kpack::TritonSourceInfo unaligned = Source();
  for (kpack::TritonParamFacts& p : unaligned.params) p.do_not_specialize = true;
  Loaded narrow = Load(kTriton, unaligned);
  REQUIRE(narrow.errors == "");
  CHECK(narrow.stems() == std::vector<std::string>{"va_b128", "va_b256", "va_b128.i32", "va_b256.i32"});

  Loaded each = Load(std::string(kTriton) + "variants: each\n", Source());
  REQUIRE(each.errors == "");
  CHECK(each.stems() == std::vector<std::string>{"va_b128", "va_b256", "va_b128.aligned", "va_b128.i32",
                                                 "va_b128.aligned.i32", "va_b256.aligned", "va_b256.i32",
                                                 "va_b256.aligned.i32"});
}

TEST_CASE("Expand: the builds of a specialization with computed constexprs and JIT variants") {
  Loaded l = Load(kTriton, Heuristics({EvenHeuristic()}));
  REQUIRE(l.errors == "");
  // API builds first (specialization i is build i), then the other
  // computed values, then the variant of each of those.
  CHECK(l.stems() == std::vector<std::string>{"va_b128.noeven", "va_b256.noeven", "va_b128.even", "va_b256.even",
                                              "va_b128.noeven.aligned.i32", "va_b256.noeven.aligned.i32",
                                              "va_b128.even.aligned.i32", "va_b256.even.aligned.i32"});
  const std::vector<kpack::Specialization>& s = l.specs;
  const bool api[] = {true, true, false, false, false, false, false, false};
  const size_t group[] = {0, 1, 0, 1, 0, 1, 0, 1};
  const size_t base[] = {0, 1, 2, 3, 0, 1, 2, 3};
  for (size_t i = 0; i < s.size(); ++i) {
    INFO(s[i].Stem());
    CHECK(s[i].api == api[i]);
    CHECK(s[i].group == group[i]);
    CHECK(s[i].base == base[i]);
    CHECK(s[i].name == (i % 2 ? "va_b256" : "va_b128"));
    CHECK(s[i].launcher == "demo_" + s[i].name);
    CHECK(s[i].symbol == "va");  // Triton names the kernel after the function
  }
  CHECK(s[2].computed == "even");
  CHECK(s[0].BuildLabel() == "");
  CHECK(s[2].BuildLabel() == "EVEN=true");
  CHECK(s[4].BuildLabel() == "EVEN=false, aligned i32 variant");
  CHECK(s[6].NameWithVariant() == "va_b128 (EVEN=true, aligned i32 variant)");
  CHECK(s[6].Describe() == "BLOCK=128, EVEN=true; aligned i32 variant");
  CHECK(s[0].NameWithVariant() == "va_b128");
}

TEST_CASE("the describe answer's JSON: what it holds, and answers kpack cannot use") {
  std::string error;
  const std::string answer = R"json({"kernels": [{"line": 7, "inputs": ["a.py", "b.py"],
      "params": [{"name": "x", "loc": "C:/src/a.py:7:9", "constexpr": false, "has_default": true, "default": "null"},
                 {"name": "B", "loc": "a.py:7:12", "constexpr": true, "annotation_type": "i64",
                  "do_not_specialize": true, "default_error": "its default f() is not a literal (a call)"}],
      "decorators": [{"kind": "autotune", "loc": "a.py:3:2", "key": ["n"],
                      "configs": [{"kwargs": {"B": "64"}, "num_warps": 8, "num_stages": 2, "num_ctas": 1,
                                   "maxnreg": null}]},
                     {"kind": "heuristics", "values": [{"name": "E", "expr": "n > 0", "source": "lambda a: a['n'] > 0",
                                                        "loc": "a.py:4:20"}]}],
      "errors": [{"loc": "a.py:9:1", "message": "no"}]}]})json";
  std::optional<std::vector<kpack::TritonSourceInfo>> infos = kpack::ParseDescribeJson(answer, 1, &error);
  REQUIRE(infos);
  const kpack::TritonSourceInfo& info = infos->at(0);
  CHECK(info.line == 7);
  CHECK(info.inputs == std::vector<std::string>{"a.py", "b.py"});
  REQUIRE(info.params.size() == 2);
  CHECK(info.params[0].loc.ToString() == "C:/src/a.py:7:9");  // a file name may hold colons
  CHECK(info.params[0].default_json == "null");
  CHECK(info.params[1].is_constexpr);
  CHECK(info.params[1].annotation_type == "i64");
  CHECK(info.params[1].do_not_specialize);
  CHECK_FALSE(info.params[1].default_json);
  CHECK(info.params[1].default_error == "its default f() is not a literal (a call)");
  REQUIRE(info.autotunes.size() == 1);
  CHECK(info.autotunes[0].configs[0].kwargs == std::vector<std::pair<std::string, std::string>>{{"B", "64"}});
  CHECK(info.autotunes[0].configs[0].num_warps == 8);
  CHECK_FALSE(info.autotunes[0].configs[0].maxnreg);
  REQUIRE(info.heuristics.size() == 1);
  CHECK(info.heuristics[0].loc.ToString() == "a.py:4:20");
  CHECK(info.errors.at(0).second == "no");

  CHECK_FALSE(kpack::ParseDescribeJson(R"({"kernels": []})", 1, &error));
  CHECK(error == "triton_helper.py describe answered for 0 kernels, not 1");
  CHECK_FALSE(kpack::ParseDescribeJson(R"({"kernels": [3]})", 1, &error));
  CHECK(error == "malformed kernel in the answer of triton_helper.py describe");
  CHECK_FALSE(kpack::ParseDescribeJson("{", 1, &error));
  CHECK(error.rfind("malformed answer from triton_helper.py describe: ", 0) == 0);
  CHECK(kpack::ParsePythonLoc("a.py").ToString() == "a.py");
}
