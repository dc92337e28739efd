// The auto package's generated auto dispatchers (tests/compiler/golden/
// ak_launch.c) against the fake driver: ak_norm_auto and ak_rows_auto
// compute their auto constexprs from the call (sizeof(T) and d for norm's
// VEC, next_pow2(n) for rows' BLOCK, device.num_sms for SPLIT) and launch
// exactly the specialization those values select; a computed value or a
// dtype that was not built is KPACK_ERROR_NO_SPECIALIZATION naming it; a
// rule that fails, or gives a value its constexpr cannot take, is
// KPACK_ERROR_INVALID_ARGUMENT naming the rule; nothing is launched then.
// 64 threads calling them at once each launch their own specialization.
//
// norm's kernels are named after their specializations; rows' Triton builds
// share one name, and each has 1000 + its index bytes of shared memory
// (auto_codegen_test.cc), so a launch's shared memory names its build.
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ak.h"
#include "test_env.h"

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::race;

namespace {

const void* X() { return reinterpret_cast<const void*>(0x10000); }
void* Out() { return reinterpret_cast<void*>(0x20000); }

fake_cuda_launch Last(const FakeDriver& fake) {
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return l;
}

unsigned long long Launches(const FakeDriver& fake) {
  return fake.count("cuLaunchKernel") + fake.count("cuLaunchKernelEx");
}

// The third param of the last launch (d of norm, a u32; n of rows, an
// i64), read inside the launch while it is alive.
thread_local int64_t seen_third = 0;
thread_local size_t third_width = 4;
void SeeThird(const fake_cuda_launch* l) {
  if (third_width == 4) {
    uint32_t v = 0;
    std::memcpy(&v, l->param_values[2], sizeof v);
    seen_third = v;
  } else {
    std::memcpy(&seen_third, l->param_values[2], sizeof seen_third);
  }
}

// rows' build index for its values (auto_codegen_test.cc lists the order).
unsigned RowsBuild(bool f32, int block, int split) {
  const unsigned tile = block == 128 ? 0 : block == 256 ? 1 : block == 512 ? 2 : 3;
  return 16 + (f32 ? 8 : 0) + tile * 2 + static_cast<unsigned>(split - 1);
}

// The dispatchers' lists of what was built.
std::string NormBuilt() {
  std::string out;
  for (int vec : {8, 4, 2})
    for (const char* t : {"f16", "bf16", "f32"})
      for (const char* wide : {"true", "false"}) {
        if (vec == 8 && std::string(t) == "f32") continue;
        out += std::string(out.empty() ? "" : ", ") + "VEC=" + std::to_string(vec) + " T=" + t + " WIDE=" + wide;
      }
  return out;
}

std::string RowsBuilt() {
  std::string out;
  for (const char* t : {"f16", "f32"})
    for (int block : {128, 256, 512, 1024})
      for (int split : {1, 2})
        out += std::string(out.empty() ? "" : ", ") + "T=" + t + " num_warps=" + (block == 1024 ? "8" : "4") +
               " BLOCK=" + std::to_string(block) + " SPLIT=" + std::to_string(split);
  return out;
}

}  // namespace

TEST_CASE("norm_auto launches the specialization its rules select: VEC from sizeof(T) and d, WIDE from d",
          "[generated]") {
  FakeDriver fake;
  fake->set_launch_hook(SeeThird);
  third_width = 4;
  struct Case {
    kpack_dtype t;
    uint32_t d;
    const char* entry;
    unsigned block;  // min(1024, max(32, d / VEC))
  } cases[] = {
      {KPACK_DTYPE_F16, 4096, "kpack_ak_norm_v8_f16_wide", 512},     // gcd(8, 4096) = 8, log2 12
      {KPACK_DTYPE_F16, 100, "kpack_ak_norm_v4_f16_nowide", 32},     // gcd(8, 100) = 4, log2 6
      {KPACK_DTYPE_BF16, 4098, "kpack_ak_norm_v2_bf16_wide", 1024},  // gcd(8, 4098) = 2
      {KPACK_DTYPE_BF16, 8, "kpack_ak_norm_v8_bf16_nowide", 32},
      {KPACK_DTYPE_F32, 4096, "kpack_ak_norm_v4_f32_wide", 1024},    // gcd(4, 4096) = 4: f32 has no 8
      {KPACK_DTYPE_F32, 6, "kpack_ak_norm_v2_f32_nowide", 32},
  };
  for (const Case& c : cases) {
    INFO(c.entry);
    REQUIRE(ak_norm_auto(nullptr, 0, c.t, X(), Out(), c.d, 7) == KPACK_SUCCESS);
    fake_cuda_launch l = Last(fake);
    CHECK(std::string(l.entry) == c.entry);
    CHECK((l.grid[0] == 7 && l.grid[1] == 1 && l.grid[2] == 1));
    CHECK(l.block[0] == c.block);
    CHECK(seen_third == c.d);
    CHECK(l.via_ex == 0);
  }
  // pdl goes through to the launch.
  REQUIRE(ak_norm_auto(nullptr, 1, KPACK_DTYPE_F16, X(), Out(), 4096, 3) == KPACK_SUCCESS);
  fake_cuda_launch l = Last(fake);
  CHECK(std::string(l.entry) == "kpack_ak_norm_v8_f16_wide");
  CHECK((l.via_ex == 1 && l.pdl == 1));
}

TEST_CASE("norm_auto: values and dtypes that were not built, and rules that fail, launch nothing", "[generated]") {
  FakeDriver fake;
  // An odd d makes VEC 1, which was not built: the dispatcher's failure,
  // naming the computed values.
  CHECK(ak_norm_auto(nullptr, 0, KPACK_DTYPE_F16, X(), Out(), 101, 1) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm: no specialization VEC=1 T=f16 WIDE=false; built: " + NormBuilt());
  // A dtype that was not built: its size is unknown, so no rule runs.
  CHECK(ak_norm_auto(nullptr, 0, KPACK_DTYPE_F64, X(), Out(), 4096, 1) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "norm_auto: no specialization T=f64; built: T=f16, T=bf16, T=f32");
  // log2(0) fails; log2(2^24) / 12 is 2, which no bool is.
  CHECK(ak_norm_auto(nullptr, 0, KPACK_DTYPE_F16, X(), Out(), 0, 1) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() ==
        "norm_auto: the rule of WIDE, log2(d) / 12, failed (division by zero, overflow or log2 of a value <= 0)");
  CHECK(ak_norm_auto(nullptr, 0, KPACK_DTYPE_BF16, X(), Out(), 1u << 24, 1) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "norm_auto: the rule of WIDE, log2(d) / 12, gave 2; a bool constexpr must be 0 or 1");
  CHECK(Launches(fake) == 0);
  uint64_t libraries = 0;
  kpack_get_load_counts(&libraries, nullptr);
  CHECK(libraries == 0);
}

TEST_CASE("rows_auto: BLOCK from next_pow2(n), num_warps from BLOCK, SPLIT from the device's multiprocessors",
          "[generated]") {
  FakeDriver fake;
  fake->set_launch_hook(SeeThird);
  third_width = 8;
  fake->set_device_count(2);
  fake->set_device_attribute(0, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 108);
  fake->set_device_attribute(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132);
  struct Case {
    const char* what;
    kpack_dtype t;
    int64_t n, rows;
    unsigned build, warps, split;
  } cases[] = {
      {"n 100: BLOCK 128, the least built", KPACK_DTYPE_F16, 100, 50, RowsBuild(false, 128, 1), 4, 1},
      {"n 300: BLOCK 512; 200 rows on 108 SMs: SPLIT 2", KPACK_DTYPE_F32, 300, 200, RowsBuild(true, 512, 2), 4, 2},
      {"n 1000: BLOCK 1024, 8 warps", KPACK_DTYPE_F16, 1000, 1000, RowsBuild(false, 1024, 2), 8, 2},
      {"n 129: BLOCK 256", KPACK_DTYPE_F32, 129, 108, RowsBuild(true, 256, 1), 4, 1},
      {"120 rows on 108 SMs: SPLIT 2", KPACK_DTYPE_F16, 4, 120, RowsBuild(false, 128, 2), 4, 2},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    REQUIRE(ak_rows_auto(nullptr, c.t, X(), Out(), c.n, c.rows) == KPACK_SUCCESS);
    fake_cuda_launch l = Last(fake);
    CHECK(std::string(l.entry) == "rows_kernel");
    CHECK(l.smem == 1000 + c.build);
    CHECK(l.block[0] == 32 * c.warps);
    CHECK((l.grid[0] == c.rows && l.grid[1] == c.split && l.grid[2] == 1));
    CHECK(seen_third == c.n);
  }
  // Device 1 has 132 multiprocessors: 120 rows are one SPLIT there.
  fake->set_current_device(1);
  REQUIRE(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 4, 120) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1000 + RowsBuild(false, 128, 1));
  // Each device's count is read from the driver once.
  CHECK(fake.count("cuDeviceGetAttribute") == 2);
}

TEST_CASE("rows_auto: values that were not built, rules that fail and an unreadable device launch nothing",
          "[generated]") {
  FakeDriver fake;
  // The driver cannot say how many multiprocessors there are: its status,
  // naming the auto dispatcher (before the device's count is cached).
  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE) == 0);
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 100, 10) == KPACK_ERROR_DRIVER);
  CHECK(detail() == "rows_auto: device.num_sms: cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) on device 0 failed: "
                    "CUDA_ERROR_INVALID_VALUE (1)");
  // n 2000: BLOCK 2048, 8 warps, not built.
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 2000, 10) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "rows: no specialization T=f16 num_warps=8 BLOCK=2048 SPLIT=1; built: " + RowsBuilt());
  // No rule reads T's size: the dispatcher says T was not built.
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_BF16, X(), Out(), 100, 10) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "rows: no specialization T=bf16 num_warps=4 BLOCK=128 SPLIT=1; built: " + RowsBuilt());
  // next_pow2 beyond a C int, and beyond 2^62.
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), (int64_t{1} << 31) - 5, 10) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "rows_auto: the rule of BLOCK, max(next_pow2(n), 128), gave 2147483648, which does not fit in a "
                    "C int");
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), (int64_t{1} << 62) + 1, 10) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "rows_auto: the rule of BLOCK, max(next_pow2(n), 128), failed (division by zero, overflow or "
                    "log2 of a value <= 0)");
  // Negative rows make SPLIT a value that fits a C int but was not built.
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 100, -1000) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail() == "rows: no specialization T=f16 num_warps=4 BLOCK=128 SPLIT=-9; built: " + RowsBuilt());
  // A rows beyond what SPLIT's C int can hold: cdiv(-2^40, 108) is below INT32_MIN.
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 100, -(int64_t{1} << 40)) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "rows_auto: the rule of SPLIT, min(cdiv(rows, device.num_sms), 2), gave -10180663220, which does "
                    "not fit in a C int");
  CHECK(Launches(fake) == 0);

  // A device whose multiprocessor count reads 0: cdiv divides by zero.
  fake->set_device_count(2);
  fake->set_device_attribute(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  fake->set_current_device(1);
  CHECK(ak_rows_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 100, 10) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "rows_auto: the rule of SPLIT, min(cdiv(rows, device.num_sms), 2), failed (division by zero, "
                    "overflow or log2 of a value <= 0)");
  CHECK(Launches(fake) == 0);
}

TEST_CASE("64 threads calling the auto dispatchers at once each launch the specialization of their own arguments",
          "[race]") {
  FakeDriver fake;
  struct Call {
    bool rows;
    kpack_dtype t;
    int64_t size, count;  // norm: d, rows; rows: n, rows
    std::string entry;    // norm's kernel
    unsigned smem;        // rows' build (1000 + index)
  };
  const Call kinds[] = {
      {false, KPACK_DTYPE_F16, 4096, 3, "kpack_ak_norm_v8_f16_wide", 0},
      {false, KPACK_DTYPE_BF16, 100, 5, "kpack_ak_norm_v4_bf16_nowide", 0},
      {false, KPACK_DTYPE_F32, 4098, 9, "kpack_ak_norm_v2_f32_wide", 0},
      {false, KPACK_DTYPE_F16, 12, 2, "kpack_ak_norm_v4_f16_nowide", 0},
      {true, KPACK_DTYPE_F16, 100, 50, "rows_kernel", 1000 + RowsBuild(false, 128, 1)},
      {true, KPACK_DTYPE_F32, 300, 200, "rows_kernel", 1000 + RowsBuild(true, 512, 2)},
      {true, KPACK_DTYPE_F16, 1000, 1000, "rows_kernel", 1000 + RowsBuild(false, 1024, 2)},
      {true, KPACK_DTYPE_F32, 200, 20, "rows_kernel", 1000 + RowsBuild(true, 256, 1)},
  };
  constexpr int kThreads = 64;
  struct Seen {
    kpack_status status = KPACK_ERROR_INTERNAL;
    std::string entry;
    unsigned smem = 0, grid0 = 0;
  };
  std::vector<Seen> seen(kThreads);
  race(kThreads, [&](int t) {
    const Call& c = kinds[t % 8];
    Seen& s = seen[static_cast<size_t>(t)];
    for (int i = 0; i < 8; ++i) {  // many calls each, interleaved with the others
      s.status = c.rows ? ak_rows_auto(nullptr, c.t, X(), Out(), c.size, c.count)
                        : ak_norm_auto(nullptr, 0, c.t, X(), Out(), static_cast<uint32_t>(c.size),
                                       static_cast<uint32_t>(c.count));
      fake_cuda_launch l{};
      if (s.status != KPACK_SUCCESS || fake->last_launch(&l) != 1) return;
      s.entry = l.entry;
      s.smem = l.smem;
      s.grid0 = l.grid[0];
      if (s.entry != c.entry || (c.rows && s.smem != c.smem) || s.grid0 != c.count) return;
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    const Call& c = kinds[t % 8];
    INFO("thread " << t);
    CHECK(seen[static_cast<size_t>(t)].status == KPACK_SUCCESS);
    CHECK(seen[static_cast<size_t>(t)].entry == c.entry);
    if (c.rows) CHECK(seen[static_cast<size_t>(t)].smem == c.smem);
    CHECK(seen[static_cast<size_t>(t)].grid0 == c.count);
  }
  CHECK(Launches(fake) == 8 * kThreads);
  // Each of the 8 specializations was loaded once, whoever raced for it.
  uint64_t libraries = 0;
  kpack_get_load_counts(&libraries, nullptr);
  CHECK(libraries == 8);
}
