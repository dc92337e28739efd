// The heur package (tests/compiler/manifests/heur): Triton kernels with
// heuristics computed by the launcher, JIT variants, a launch-only param,
// autotune configs and float and str constexprs, loaded with the facts
// triton_helper.py's describe gave for heur.py (describe.json, replayed:
// no Python runs here), and the header and launcher kpack generates for
// them against golden files.  tests/runtime/heur_launch_test.cc runs that
// launcher against the fake driver.
//
// After an intended change, rerun with KPACK_UPDATE_GOLDEN=1 and review the
// diff of tests/compiler/golden/hk*.  After a change of heur.py, record
// describe.json again: write a request {"kernels": [{"source": "heur.py",
// "source_name": "heur.py", "entry": E, "python_path": [], "root": ".",
// "assume": {}, "load": "slice"} for E in rows_kernel, norm_kernel]}, run
// `python3 compiler/triton_helper.py describe REQUEST ANSWER` in
// manifests/heur, and write "heur.py" as each kernel's inputs.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "codegen.h"
#include "expand.h"
#include "golden_util.h"

namespace {

using kpack::testing::CompareGolden;
using kpack::testing::DataDir;

using Heur = kpack::testing::RecordedPackage;

Heur LoadHeur() {
  return kpack::testing::LoadRecordedPackage("manifests/heur/kpack.yaml", "manifests/heur/describe.json", {"rows_kernel", "norm_kernel"});
}

}  // namespace

// tests/runtime/hk_blobs.c and heur_launch_test.cc rely on this order.
TEST_CASE("the heur package's builds, in the order of their fatbins") {
  Heur h = LoadHeur();
  const std::vector<std::string> stems = {
      // The API's builds: rows, then norm's four.
      "rows_b256.split1_noeven_n_nohas_bias",
      "norm_mean_eps1em06_b128.has_w", "norm_mean_eps0p5_b128.has_w", "norm_sum_eps1em06_b128.has_w",
      "norm_sum_eps0p5_b128.has_w",
      // rows' other computed values.
      "rows_b256.split1_noeven_n_has_bias", "rows_b256.split1_even_n_nohas_bias", "rows_b256.split1_even_n_has_bias",
      "rows_b256.split2_noeven_n_nohas_bias", "rows_b256.split2_noeven_n_has_bias",
      "rows_b256.split2_even_n_nohas_bias", "rows_b256.split2_even_n_has_bias",
      // The JIT variant of each rows build (norm says variants: none).
      "rows_b256.split1_noeven_n_nohas_bias.aligned.i32", "rows_b256.split1_noeven_n_has_bias.aligned.i32",
      "rows_b256.split1_even_n_nohas_bias.aligned.i32", "rows_b256.split1_even_n_has_bias.aligned.i32",
      "rows_b256.split2_noeven_n_nohas_bias.aligned.i32", "rows_b256.split2_noeven_n_has_bias.aligned.i32",
      "rows_b256.split2_even_n_nohas_bias.aligned.i32", "rows_b256.split2_even_n_has_bias.aligned.i32"};
  std::vector<std::string> actual;
  for (const kpack::Specialization& s : h.specs) actual.push_back(s.Stem());
  CHECK(actual == stems);

  // What the source and the manifest made of the two kernels.
  const kpack::Kernel& rows = h.pkg->kernels[0];
  std::vector<std::string> auto_params, narrow_params;
  for (const kpack::Param& p : rows.params) {
    if (p.divisibility_auto) auto_params.push_back(p.name);
    if (p.width_auto) narrow_params.push_back(p.name);
  }
  CHECK(auto_params == std::vector<std::string>{"x", "bias", "out", "n"});
  CHECK(narrow_params == std::vector<std::string>{"n", "stride"});
  CHECK(rows.FindConstexpr("HAS_BIAS")->rule_source ==
        "heuristic at heur.py:11:17 (lambda args: args['bias'] is not None)");
  const kpack::Kernel& norm = h.pkg->kernels[1];
  CHECK(norm.triton.autotune_key == std::vector<std::string>{"n"});
  CHECK(norm.triton.line == 31);
  CHECK_FALSE(norm.FindConstexpr("num_warps")->InApi());  // BLOCK 128 leaves one config
  CHECK(norm.FindConstexpr("HAS_W")->Computed());
}

TEST_CASE("the heur package's header and launchers match the golden files") {
  Heur h = LoadHeur();
  kpack::CodegenOptions options{"manifests/heur/kpack.yaml", "hk.h"};
  CompareGolden("hk.h", kpack::GenerateHeader(*h.pkg, h.specs, options));
  // Each build gets shared memory of its own, 1000 + its index, so the
  // runtime test sees which build a launch ran.
  std::map<const kpack::Specialization*, kpack::TritonLaunch> triton;
  for (size_t i = 0; i < h.specs.size(); ++i)
    triton[&h.specs[i]] = kpack::testing::TritonLaunchWith(
        static_cast<uint32_t>(1000 + i), static_cast<uint32_t>(h.specs[i].kernel->NumWarps(h.specs[i].values)));
  CompareGolden("hk_launch.c", kpack::GenerateLauncherSource(*h.pkg, h.specs, options, triton));
}
