// The heur package's generated launchers (tests/compiler/golden/hk_launch.c)
// against the fake driver: the typed launcher of rows computes its
// heuristics (SPLIT, EVEN_N, HAS_BIAS) per call and runs the build of those
// values, its JIT variant when the call's values allow; a value that was
// not built fails and launches nothing; the launch-only n_rows sizes the
// grid and is never passed; norm's dispatcher picks by str and float
// values and says which it was given when none matches.
//
// Each build's Triton metadata (heur_golden_test.cc) gives it 1000 + its
// index bytes of shared memory: a launch's shared memory names its build.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "hk.h"
#include "test_env.h"

using kpack_test::detail;
using kpack_test::FakeDriver;

extern "C" uint64_t hk_blob_size(int i);  // hk_blobs.c

namespace {

uint64_t libraries_loaded() {
  uint64_t libraries = 0;
  kpack_get_load_counts(&libraries, nullptr);
  return libraries;
}

// Addresses the fake never dereferences: 16-byte aligned unless offset.
const float* X(uintptr_t offset = 0) { return reinterpret_cast<const float*>(0x10000 + offset); }
const float* Bias() { return reinterpret_cast<const float*>(0x30000); }
float* Out() { return reinterpret_cast<float*>(0x20000); }

// The index of rows' build for computed values (split, even, bias): its
// API build is 0, its other computed values 5 to 11 (in the launcher's
// table order) and the aligned i32 variant of each 12 to 19.
unsigned RowsBuild(int split, bool even, bool bias, bool variant) {
  const unsigned row = static_cast<unsigned>((split - 1) * 4 + (even ? 2 : 0) + (bias ? 1 : 0));
  if (variant) return 12 + row;
  return row == 0 ? 0 : 4 + row;
}

fake_cuda_launch Last(const FakeDriver& fake) {
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return l;
}

// What a launch passed as n (param 3) and stride (param 4), read 4 bytes
// wide where the launch ran a narrow build and 8 otherwise, and whether the
// two scratch pointers (params 5 and 6) were NULL: n_rows must not be
// among the params.
thread_local size_t width = 8;
thread_local int64_t seen_n = 0, seen_stride = 0;
thread_local bool scratch_null = false;
thread_local int seen_params = 0;

int64_t Read(const void* p) {
  if (width == 4) {
    int32_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  int64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void SeeParams(const fake_cuda_launch* l) {
  seen_params = l->num_params;
  seen_n = Read(l->param_values[3]);
  seen_stride = Read(l->param_values[4]);
  void* scratch[2] = {reinterpret_cast<void*>(1), reinterpret_cast<void*>(1)};
  std::memcpy(&scratch[0], l->param_values[5], sizeof(void*));
  std::memcpy(&scratch[1], l->param_values[6], sizeof(void*));
  scratch_null = scratch[0] == nullptr && scratch[1] == nullptr;
}

}  // namespace

TEST_CASE("a launcher runs the build of the values its heuristics compute, and the JIT's when it may",
          "[generated]") {
  FakeDriver fake;
  fake->set_launch_hook(SeeParams);
  struct Case {
    const char* what;
    const float* x;
    const float* bias;
    int64_t n, stride;
    unsigned build;
    unsigned grid_y;  // cdiv(n, 256 * SPLIT)
  } cases[] = {
      {"n 4096: SPLIT 1, even, bias; aligned, 32-bit", X(), Bias(), 4096, 4096, RowsBuild(1, true, true, true), 16},
      {"no bias", X(), nullptr, 4096, 4096, RowsBuild(1, true, false, true), 16},
      {"n 4097: SPLIT 2, odd", X(), Bias(), 4097, 4097, RowsBuild(2, false, true, false), 9},
      {"n 8192: SPLIT 2, even", X(), Bias(), 8192, 8192, RowsBuild(2, true, true, true), 16},
      {"n 100: the API's build", X(), nullptr, 100, 100, RowsBuild(1, false, false, false), 1},
      {"n 4000: a multiple of 16 but not of 256", X(), nullptr, 4000, 4000, RowsBuild(1, false, false, true), 16},
      {"x 4 bytes off: unaligned", X(4), Bias(), 4096, 4096, RowsBuild(1, true, true, false), 16},
      {"a stride beyond 32 bits: i64", X(), Bias(), 4096, int64_t{1} << 33, RowsBuild(1, true, true, false), 16},
      {"an odd stride is no hint (divisibility: none)", X(), Bias(), 4096, 4097, RowsBuild(1, true, true, true), 16},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const bool narrow = c.build >= 12;
    width = narrow ? 4 : 8;
    REQUIRE(hk_rows_b256(nullptr, c.x, c.bias, Out(), c.n, c.stride, 3) == KPACK_SUCCESS);
    fake_cuda_launch l = Last(fake);
    CHECK(l.smem == 1000 + c.build);
    CHECK(std::string(l.entry) == "rows_kernel");
    CHECK(l.block[0] == 128);
    CHECK((l.grid[0] == 3 && l.grid[1] == c.grid_y && l.grid[2] == 1));
    // n and stride as the build takes them (32-bit copies in the i32
    // build); the launch-only n_rows is not passed: the scratch pointers
    // follow stride.
    CHECK(seen_params == 7);
    CHECK(seen_n == c.n);
    CHECK(seen_stride == c.stride);
    CHECK(scratch_null);
  }
  // The dispatcher reaches the same launcher.
  width = 4;
  REQUIRE(hk_rows(nullptr, 256, X(), Bias(), Out(), 4096, 64, 5) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1000 + RowsBuild(1, true, true, true));
  CHECK(Last(fake).grid[0] == 5);
}

TEST_CASE("a computed value that was not built fails, naming it, and launches nothing", "[generated]") {
  FakeDriver fake;
  const std::string built =
      "; built: SPLIT=1 EVEN_N=false HAS_BIAS=false, SPLIT=1 EVEN_N=false HAS_BIAS=true, SPLIT=1 EVEN_N=true "
      "HAS_BIAS=false, SPLIT=1 EVEN_N=true HAS_BIAS=true, SPLIT=2 EVEN_N=false HAS_BIAS=false, SPLIT=2 EVEN_N=false "
      "HAS_BIAS=true, SPLIT=2 EVEN_N=true HAS_BIAS=false, SPLIT=2 EVEN_N=true HAS_BIAS=true";
  // SPLIT = min(cdiv(20000, 4096), 4) = 4; only 1 and 2 were built.
  CHECK(hk_rows_b256(nullptr, X(), Bias(), Out(), 20000, 20000, 3) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "rows_b256 (computed constexprs): no specialization SPLIT=4 EVEN_N=false HAS_BIAS=true" + built);
  CHECK(hk_rows_b256(nullptr, X(), nullptr, Out(), 12288, 0, 3) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "rows_b256 (computed constexprs): no specialization SPLIT=3 EVEN_N=true HAS_BIAS=false" + built);
  CHECK(fake.count("cuLaunchKernel") == 0);
  CHECK(libraries_loaded() == 0);

  // norm built HAS_W = true only: a call without w must not run that build
  // (it would read w), whatever else it passes.
  CHECK(hk_norm_mean_eps1em06_b128(nullptr, X(), nullptr, Out(), 100, 1e-5f) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm_mean_eps1em06_b128 (computed constexprs): no specialization HAS_W=false; built: HAS_W=true");
  CHECK(hk_norm(nullptr, "sum", 0.5, 128, X(), nullptr, Out(), 100, 1e-5f) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm_sum_eps0p5_b128 (computed constexprs): no specialization HAS_W=false; built: HAS_W=true");
  CHECK(fake.count("cuLaunchKernel") == 0);
  REQUIRE(hk_norm_mean_eps1em06_b128(nullptr, X(), X(), Out(), 100, 1e-5f) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1001);
}

TEST_CASE("a launch-only param sizes the grid and the launch checks it like any grid value", "[generated]") {
  FakeDriver fake;
  // An empty grid launches nothing and succeeds, as for any launch.
  REQUIRE(hk_rows_b256(nullptr, X(), Bias(), Out(), 4096, 4096, 0) == KPACK_SUCCESS);
  CHECK(fake.count("cuLaunchKernel") == 0);
  CHECK(hk_rows_b256(nullptr, X(), Bias(), Out(), 4096, 4096, int64_t{1} << 31) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "rows_b256: grid (2147483648, 16, 1), block (128, 1, 1) or shared memory 1015 is outside the "
                    "CUDA launch limits");
  REQUIRE(hk_rows_b256(nullptr, X(), Bias(), Out(), 4096, 4096, 65536) == KPACK_SUCCESS);
  CHECK(Last(fake).grid[0] == 65536);
}

TEST_CASE("a dispatcher picks by str and float values and prints them when none was built", "[generated]") {
  FakeDriver fake;
  // The str is compared by content, not address.
  const std::string sum = "sum", mean = "mean";
  REQUIRE(hk_norm(nullptr, sum.c_str(), 0.5, 128, X(), X(), Out(), 100, 1e-5f) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1004);
  REQUIRE(hk_norm(nullptr, mean.c_str(), 1e-6, 128, X(), X(), Out(), 100, 1e-5f) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1001);
  REQUIRE(hk_norm(nullptr, "sum", 1e-6, 128, X(), X(), Out(), 100, 1e-5f) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1003);
  REQUIRE(hk_norm(nullptr, "mean", 0.5, 128, X(), X(), Out(), 300, 1e-5f) == KPACK_SUCCESS);
  fake_cuda_launch l = Last(fake);
  CHECK(l.smem == 1002);
  CHECK(l.grid[0] == 3);  // cdiv(300, 128)
  CHECK(std::string(l.entry) == "norm_kernel");

  const std::string built =
      "; built: REDUCTION=mean EPS=1e-06 BLOCK=128, REDUCTION=mean EPS=0.5 BLOCK=128, REDUCTION=sum EPS=1e-06 "
      "BLOCK=128, REDUCTION=sum EPS=0.5 BLOCK=128";
  const unsigned long long launches = fake.count("cuLaunchKernel");
  CHECK(hk_norm(nullptr, "max", 0.5, 128, X(), X(), Out(), 100, 0) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm: no specialization REDUCTION=max EPS=0.5 BLOCK=128" + built);
  CHECK(hk_norm(nullptr, "sum", 1e-5, 128, X(), X(), Out(), 100, 0) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm: no specialization REDUCTION=sum EPS=1.0000000000000001e-05 BLOCK=128" + built);
  // Only the exact double: the next one after 1e-6 is another value.
  CHECK(hk_norm(nullptr, "sum", std::nextafter(1e-6, 1.0), 128, X(), X(), Out(), 100, 0) ==
        KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm: no specialization REDUCTION=sum EPS=1.0000000000000002e-06 BLOCK=128" + built);
  CHECK(hk_norm(nullptr, nullptr, 0.5, 128, X(), X(), Out(), 100, 0) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm: no specialization REDUCTION=(null) EPS=0.5 BLOCK=128" + built);
  CHECK(hk_norm(nullptr, "mean", 0.5, 256, X(), X(), Out(), 100, 0) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm: no specialization REDUCTION=mean EPS=0.5 BLOCK=256" + built);
  CHECK(fake.count("cuLaunchKernel") == launches);
  CHECK(hk_rows(nullptr, 128, X(), Bias(), Out(), 4096, 4096, 3) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "rows: no specialization BLOCK=128; built: BLOCK=256");
}

TEST_CASE("the heur package enumerates its specializations; each size counts every build", "[generated]") {
  REQUIRE(hk_num_specializations() == 5);
  kpack_spec_info info{};
  REQUIRE(hk_specialization_info(0, &info) == KPACK_SUCCESS);
  CHECK(std::string(info.name) == "rows_b256");
  CHECK(std::string(info.archs) == "sm_80,sm_90a");
  uint64_t all_rows = 0;
  for (int i : {0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}) all_rows += hk_blob_size(i);
  CHECK(info.fatbin_size == all_rows);
  REQUIRE(hk_specialization_info(4, &info) == KPACK_SUCCESS);
  CHECK(std::string(info.name) == "norm_sum_eps0p5_b128");
  CHECK(info.fatbin_size == hk_blob_size(4));
  const hk_norm_config& c = hk_norm_configs[2];
  CHECK(std::string(c.REDUCTION) == "sum");
  CHECK(c.EPS == 1e-6);
  CHECK(c.BLOCK == 128);
}
