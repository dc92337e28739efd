// The tuned package's generated auto dispatchers (tests/compiler/golden/
// tk_launch.c) against the fake driver: tk_scale_auto and tk_pick_auto
// choose their auto constexprs from the decision tables of the package's
// two tuning files (tests/compiler/manifests/tuned/tuning: an H100's, sm
// 90, and an A100's, sm 80, with a table for scale's f16 only), by the
// device's model, else its sm, else by the rules; per key the call's
// region of the grid (a grid value, or strictly between two); the first
// candidate, valid for the call, of the region's minimax ranking (the
// candidates timed at every enclosing grid shape, by their worst ratio to
// each shape's fastest; no common candidate: the lower shape's ranking).
// 64 threads on 4 devices of different models each launch their own
// device's choice.
//
// scale's rules: BLOCK = 256, WIDE = n >= 256.  Its valid: not WIDE with
// BLOCK 128, and n >= 1024 for BLOCK * sizeof(T) > 512 (f16 512, f32 256).
// Grid: rows [1, 64, 4096] (5 regions), n [128, 1024, 8192, 65536] (7).
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "test_env.h"
#include "tk.h"

// tk_blobs.c: kpack_tuning_select(NULL, NULL, index), from C.
extern "C" kpack_status tk_select_without_set(int* index);

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::race;

namespace {

const void* X() { return reinterpret_cast<const void*>(0x10000); }
void* Out() { return reinterpret_cast<void*>(0x20000); }

const char* kH100 = "NVIDIA H100 80GB HBM3";
const char* kA100 = "NVIDIA A100-SXM4-80GB";

// The kernel scale_auto launched for T, BLOCK and WIDE.
std::string Scale(kpack_dtype t, int block, bool wide) {
  return std::string("kpack_tk_scale_") + (t == KPACK_DTYPE_F16 ? "f16" : "f32") + "_b" + std::to_string(block) +
         (wide ? "_wide" : "_nowide");
}

// What the rules choose: BLOCK 256, WIDE from n.
std::string Rules(kpack_dtype t, uint32_t n) { return Scale(t, 256, n >= 256); }

// The entry of the calling thread's last launch; "" when it made none.
std::string LastEntry(const FakeDriver& fake) {
  fake_cuda_launch l{};
  return fake->last_launch(&l) == 1 ? std::string(l.entry) : std::string();
}

// Calls tk_scale_auto and returns the entry it launched.
std::string RunScale(const FakeDriver& fake, kpack_dtype t, int64_t rows, uint32_t n) {
  REQUIRE(tk_scale_auto(nullptr, t, X(), Out(), rows, n) == KPACK_SUCCESS);
  return LastEntry(fake);
}

// One device (0) of this model and sm, current on every thread.
void OneDevice(const FakeDriver& fake, const char* name, int major, int minor) {
  fake->set_device_name(0, name);
  fake->set_compute_capability(0, major, minor);
}

}  // namespace

TEST_CASE("scale_auto on an H100 launches its table's minimax pick for the call's region", "[generated]") {
  FakeDriver fake;
  OneDevice(fake, kH100, 9, 0);
  struct Case {
    const char* what;
    kpack_dtype t;
    int64_t rows;
    uint32_t n;
    std::string entry;
  } cases[] = {
      {"rows 1, n 128: the best (128 WIDE) is never valid; the runner-up", KPACK_DTYPE_F16, 1, 128,
       Scale(KPACK_DTYPE_F16, 128, false)},
      // Between n 128 and 1024 (rows 1), 128 is 1.2x off at both; 256 (the
      // winner at 1024, nearest in log space) is 1.5x off at 128.
      {"n 1000, between 128 and 1024: 128, at worst 1.2x", KPACK_DTYPE_F16, 1, 1000,
       Scale(KPACK_DTYPE_F16, 128, false)},
      // Between rows 1 and 64 at n 8192 no candidate ran at both shapes:
      // rows 1's ranking (512, then 256), and 512 is valid.
      {"rows 7, n 8192: nothing in common with rows 64, rows 1's", KPACK_DTYPE_F16, 7, 8192,
       Scale(KPACK_DTYPE_F16, 512, false)},
      {"n above the last value: 65536's", KPACK_DTYPE_F16, 1, 4000000000u, Scale(KPACK_DTYPE_F16, 512, true)},
      {"rows 64, n 1024: the best, 512, is valid", KPACK_DTYPE_F16, 64, 1024, Scale(KPACK_DTYPE_F16, 512, false)},
      // rows 64, n 128 ran nothing: between n 128 and 1024 the ranking is
      // n 1024's.
      {"rows 64, n 1000: n 1024's ranking; 512 needs n >= 1024, the runner-up runs", KPACK_DTYPE_F16, 64, 1000,
       Scale(KPACK_DTYPE_F16, 256, true)},
      {"rows 64, n 200: likewise", KPACK_DTYPE_F16, 64, 200, Scale(KPACK_DTYPE_F16, 256, true)},
      {"rows beyond the last, n 65536", KPACK_DTYPE_F16, 100000, 65536, Scale(KPACK_DTYPE_F16, 512, true)},
      {"f32, rows 1, n 1024", KPACK_DTYPE_F32, 1, 1024, Scale(KPACK_DTYPE_F32, 256, false)},
      // rows 4096 between n 1024 and 8192: only 256 ran at both; valid.
      {"f32, rows 4096, n 2000: 256, the one common candidate", KPACK_DTYPE_F32, 4096, 2000,
       Scale(KPACK_DTYPE_F32, 256, false)},
      // rows 4096 between n 128 (128 only) and 1024 (128 WIDE, 256): none in
      // common, n 128's 128, valid for f32 at any n.  (The nearest shape,
      // 1024, had only 256, invalid below 1024: the rules ran.)
      {"f32, rows 4096, n 1000: n 128's ranking", KPACK_DTYPE_F32, 4096, 1000, Scale(KPACK_DTYPE_F32, 128, false)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(RunScale(fake, c.t, c.rows, c.n) == c.entry);
  }
  // The name is read once for the device; it matched, so no sm was needed.
  CHECK(fake.count("cuDeviceGetName") == 1);
  CHECK(fake.count("cuDeviceGetAttribute") == 0);
}

// Calls tk_rows_auto with x at `x` and returns the launch's grid width:
// cdiv(n, BLOCK) tells the BLOCK it chose.
unsigned RunRows(const FakeDriver& fake, uintptr_t x, int64_t n) {
  REQUIRE(tk_rows_auto(nullptr, KPACK_DTYPE_F16, reinterpret_cast<const void*>(x), Out(), n) == KPACK_SUCCESS);
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return l.grid[0];
}

TEST_CASE("rows_auto reads the table of the variant its launcher runs, and the probes decide between grid values",
          "[generated]") {
  FakeDriver fake;
  OneDevice(fake, kH100, 9, 0);
  // The aligned table (x, out and n multiples of 16): BLOCK 1024 at n 1024,
  // 4096 at 16384, and between them 1024, which the probe at 4112 (where
  // 4096 is 1.5x) chose over 4096 (1.2x at the grid's shapes alone).
  const uintptr_t aligned = 0x10000, off = 0x10002;
  CHECK(RunRows(fake, aligned, 1024) == 1);
  CHECK(RunRows(fake, aligned, 2048) == 2);     // BLOCK 1024
  CHECK(RunRows(fake, aligned, 5008) == 5);     // BLOCK 1024
  CHECK(RunRows(fake, aligned, 16368) == 16);   // BLOCK 1024, just below the grid's end
  CHECK(RunRows(fake, aligned, 16384) == 4);    // BLOCK 4096
  CHECK(RunRows(fake, aligned, 100000) == 25);  // beyond: 16384's
  // Unaligned (x off by one element, or n not a multiple of 16): BLOCK
  // 4096 everywhere.
  CHECK(RunRows(fake, off, 2048) == 1);
  CHECK(RunRows(fake, off, 5008) == 2);
  CHECK(RunRows(fake, aligned, 5000) == 2);
  CHECK(RunRows(fake, aligned, 2049) == 1);
  CHECK(RunRows(fake, off, 16384) == 4);
  // The A100 has no table for rows: the rules (4096), either variant.
  fake->set_device_name(0, kA100);
  fake->set_compute_capability(0, 8, 0);
  kpack_unload_all();
  CHECK(RunRows(fake, aligned, 5008) == 2);
  CHECK(RunRows(fake, off, 5008) == 2);
}

TEST_CASE("a tuned auto dispatcher's launch asks cuCtxGetDevice once, and leaves no device behind", "[generated]") {
  FakeDriver fake;
  fake->set_device_count(2);
  for (int d = 0; d < 2; ++d) {
    fake->set_device_name(d, kH100);
    fake->set_compute_capability(d, 9, 0);
  }
  // The first calls load the driver, the module and the tuning's choice.
  RunScale(fake, KPACK_DTYPE_F16, 1, 1024);
  REQUIRE(tk_scale(nullptr, KPACK_DTYPE_F16, 256, 0, X(), Out(), 1, 1024) == KPACK_SUCCESS);
  unsigned long long before = fake.count("cuCtxGetDevice");
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 1024) == Scale(KPACK_DTYPE_F16, 256, false));
  CHECK(fake.count("cuCtxGetDevice") - before == 1);  // the typed launcher's own: 1 too
  before = fake.count("cuCtxGetDevice");
  REQUIRE(tk_scale(nullptr, KPACK_DTYPE_F16, 256, 0, X(), Out(), 1, 1024) == KPACK_SUCCESS);
  CHECK(fake.count("cuCtxGetDevice") - before == 1);
  // Calls that launch nothing (no rows; a dtype not built) drop the
  // device they found: the next launch, from device 1, asks and runs there.
  REQUIRE(tk_scale_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 0, 1024) == KPACK_SUCCESS);
  fake->set_current_device(1);
  REQUIRE(tk_scale(nullptr, KPACK_DTYPE_F16, 256, 0, X(), Out(), 1, 1024) == KPACK_SUCCESS);
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(l.device == 1);
  fake->set_current_device(0);
  CHECK(tk_scale_auto(nullptr, KPACK_DTYPE_BF16, X(), Out(), 1, 1024) == KPACK_ERROR_NO_SPECIALIZATION);
  fake->set_current_device(1);
  REQUIRE(tk_scale(nullptr, KPACK_DTYPE_F16, 256, 0, X(), Out(), 1, 1024) == KPACK_SUCCESS);
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(l.device == 1);
}

TEST_CASE("scale_auto: at, just off and between the grid values", "[generated]") {
  FakeDriver fake;
  OneDevice(fake, kH100, 9, 0);
  // rows, with n 8192: rows 1 and 4096 run 512 (no WIDE), rows 64 256 WIDE.
  // Strictly between 1 and 64, and between 64 and 4096, no candidate ran
  // at both shapes: the lower's ranking.
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 8192) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 2, 8192) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 63, 8192) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 64, 8192) == Scale(KPACK_DTYPE_F16, 256, true));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 65, 8192) == Scale(KPACK_DTYPE_F16, 256, true));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 4095, 8192) == Scale(KPACK_DTYPE_F16, 256, true));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 4096, 8192) == Scale(KPACK_DTYPE_F16, 512, false));
  // n, with rows 1: the grid's winners 128F, 256F, 512F, 512T.  Between 128
  // and 1024: 128 (1.2x at both; 256 is 1.5x at 128).  Between 1024 and
  // 8192: 256 (1.0x and 1.1x; 512 did not run at 1024).  Between 8192 and
  // 65536: 512 without WIDE, the one candidate timed at both, up to 65535
  // (the nearest-shape lookup ran 512 WIDE from 23171 on, a candidate
  // never timed at 8192).
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 0) == Scale(KPACK_DTYPE_F16, 128, false));  // below the first
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 128) == Scale(KPACK_DTYPE_F16, 128, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 129) == Scale(KPACK_DTYPE_F16, 128, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 1023) == Scale(KPACK_DTYPE_F16, 128, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 1024) == Scale(KPACK_DTYPE_F16, 256, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 1025) == Scale(KPACK_DTYPE_F16, 256, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 8191) == Scale(KPACK_DTYPE_F16, 256, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 8192) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 8193) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 23171) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 65535) == Scale(KPACK_DTYPE_F16, 512, false));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 65536) == Scale(KPACK_DTYPE_F16, 512, true));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, UINT32_MAX) == Scale(KPACK_DTYPE_F16, 512, true));  // above the last
}

TEST_CASE("scale_auto: no table for the cell, the combination or the device, or no valid candidate: the rules",
          "[generated]") {
  FakeDriver fake;
  OneDevice(fake, kH100, 9, 0);
  // rows 64, n 128 (and below): no candidate ran there (us: {}), and that
  // region has no other corner.
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 64, 128) == Rules(KPACK_DTYPE_F16, 128));
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 64, 100) == Rules(KPACK_DTYPE_F16, 100));
  // f32, rows 64, n 200: between n 128 (256 WIDE, 256) and 1024 (256, 128)
  // only 256 without WIDE ran at both, which f32 runs only from n 1024.
  // rows 100, n 1000: no candidate ran at all four enclosing shapes (rows
  // 4096, n 128 ran only 128), so rows 64, n 128's ranking: 256 WIDE, then
  // 256, both invalid below n 1024.
  CHECK(RunScale(fake, KPACK_DTYPE_F32, 64, 200) == Rules(KPACK_DTYPE_F32, 200));
  CHECK(RunScale(fake, KPACK_DTYPE_F32, 100, 1000) == Rules(KPACK_DTYPE_F32, 1000));
  // A dtype no table has, and that was not built: the rules, whose
  // dispatcher says so.
  CHECK(tk_scale_auto(nullptr, KPACK_DTYPE_BF16, X(), Out(), 1, 1024) == KPACK_ERROR_NO_SPECIALIZATION);
  CHECK(detail().rfind("scale: no specialization T=bf16 BLOCK=256 WIDE=true; built: ", 0) == 0);
}

TEST_CASE("scale_auto picks the tuning by the device's name, then by its sm, else the rules", "[generated]") {
  FakeDriver fake;
  fake->set_device_count(5);
  const struct Device {
    const char* name;
    int major, minor;
    const char* what;
    std::string f16_8192, f16_128, f32_1024;  // launched at rows 1 and those n
  } devices[] = {
      {kH100, 9, 0, "an H100: its table", Scale(KPACK_DTYPE_F16, 512, false), Scale(KPACK_DTYPE_F16, 128, false),
       Scale(KPACK_DTYPE_F32, 256, false)},
      {"NVIDIA H100 NVL", 9, 0, "another sm_90 model: the H100's table", Scale(KPACK_DTYPE_F16, 512, false),
       Scale(KPACK_DTYPE_F16, 128, false), Scale(KPACK_DTYPE_F32, 256, false)},
      {"NVIDIA A10", 8, 0, "another sm_80 model: the A100's table, which has no f32", Scale(KPACK_DTYPE_F16, 512, true),
       Scale(KPACK_DTYPE_F16, 128, false), Rules(KPACK_DTYPE_F32, 1024)},
      {kA100, 9, 0, "an A100 by name (the name wins over the sm)", Scale(KPACK_DTYPE_F16, 512, true),
       Scale(KPACK_DTYPE_F16, 128, false), Rules(KPACK_DTYPE_F32, 1024)},
      {"NVIDIA RTX 6000 Ada Generation", 8, 9, "no tuning for the model or sm_89: the rules",
       Rules(KPACK_DTYPE_F16, 8192), Rules(KPACK_DTYPE_F16, 128), Rules(KPACK_DTYPE_F32, 1024)},
  };
  for (int d = 0; d < 5; ++d) {
    fake->set_device_name(d, devices[d].name);
    fake->set_compute_capability(d, devices[d].major, devices[d].minor);
  }
  for (int d = 0; d < 5; ++d) {
    INFO(devices[d].what);
    fake->set_current_device(d);
    CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 8192) == devices[d].f16_8192);
    CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 128) == devices[d].f16_128);
    CHECK(RunScale(fake, KPACK_DTYPE_F32, 1, 1024) == devices[d].f32_1024);
  }
  // Each device's name read once; the sm of those no name matched, once.
  CHECK(fake.count("cuDeviceGetName") == 5);
  for (int d = 0; d < 5; ++d) CHECK(fake->count_on_device("cuDeviceGetName", d) == 1);
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 0) == 0);
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 1) == 2);  // major and minor
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 3) == 0);

  // kpack_unload_all forgets names and choices: device 0 becomes an A100.
  kpack_unload_all();
  fake->set_device_name(0, kA100);
  fake->set_current_device(0);
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 8192) == Scale(KPACK_DTYPE_F16, 512, true));
  CHECK(fake->count_on_device("cuDeviceGetName", 0) == 2);
}

TEST_CASE("pick_auto binary-searches its 20-value key; for: {} has one table", "[generated]") {
  FakeDriver fake;
  OneDevice(fake, kH100, 9, 0);
  // The winner of the i-th power of two is TILE 16, 32, 64, 16, ... (i % 3);
  // at each power of two the others are 1.25x off.  Strictly between two
  // powers, the two winners tie (1.25x at worst, the same sum) ahead of the
  // third (1.25x at both): the first candidate of the two (16 < 32 < 64).
  auto tile = [](int i) { return std::string("kpack_tk_pick_t") + (i % 3 == 0 ? "16" : i % 3 == 1 ? "32" : "64"); };
  auto run = [&](int32_t len) {
    REQUIRE(tk_pick_auto(nullptr, static_cast<float*>(Out()), len) == KPACK_SUCCESS);
    return LastEntry(fake);
  };
  CHECK(run(1) == tile(0));
  CHECK(run(2) == tile(1));
  CHECK(run(3) == tile(1));   // between 2 (32) and 4 (64): 32
  CHECK(run(4) == tile(2));
  CHECK(run(5) == tile(0));   // between 4 (64) and 8 (16): 16
  CHECK(run(7) == tile(0));
  for (int i = 1; i < 20; ++i) {
    const int32_t a = int32_t{1} << (i - 1), b = int32_t{1} << i;
    INFO("between " << a << " and " << b);
    CHECK(run(a) == tile(i - 1));
    CHECK(run(b) == tile(i));
    if (b - a < 2) continue;
    const int between = std::min((i - 1) % 3, i % 3);
    CHECK(run(a + 1) == tile(between));
    CHECK(run(b - 1) == tile(between));
  }
  CHECK(run(INT32_MAX) == tile(19));  // above the last
  // Elsewhere, the rules: TILE 16.
  kpack_unload_all();
  fake->set_compute_capability(0, 8, 6);
  fake->set_device_name(0, "NVIDIA GeForce RTX 3090");
  CHECK(run(2) == "kpack_tk_pick_t16");
}

TEST_CASE("the tuning selection's failures are the auto dispatcher's, and are not cached", "[generated]") {
  FakeDriver fake;
  OneDevice(fake, "NVIDIA L40S", 8, 9);
  REQUIRE(fake->fail_next("cuDeviceGetName", CUDA_ERROR_INVALID_VALUE) == 0);
  CHECK(tk_scale_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 1, 128) == KPACK_ERROR_DRIVER);
  CHECK(detail() == "scale_auto: cuDeviceGetName on device 0 failed: CUDA_ERROR_INVALID_VALUE (1)");
  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE) == 0);
  CHECK(tk_scale_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 1, 128) == KPACK_ERROR_DRIVER);
  CHECK(detail() == "scale_auto: device.sm: cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR/MINOR) on device 0 "
                    "failed: CUDA_ERROR_INVALID_VALUE (1)");
  CHECK(fake.count("cuLaunchKernel") == 0);
  // The next call asks again, and succeeds: sm_89 has no tuning.
  CHECK(RunScale(fake, KPACK_DTYPE_F16, 1, 128) == Rules(KPACK_DTYPE_F16, 128));
  // No context: the status a launch would get.
  fake->set_current_device(-1);
  CHECK(tk_scale_auto(nullptr, KPACK_DTYPE_F16, X(), Out(), 1, 128) == KPACK_ERROR_NO_CONTEXT);
  CHECK(detail().rfind("scale_auto: the calling thread has no current CUDA context", 0) == 0);
}

TEST_CASE("kpack_tuning_select refuses what is not a tuning set", "[generated]") {
  FakeDriver fake;
  int index = 7;
  CHECK(tk_select_without_set(&index) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(index == -1);
  CHECK(detail() == "kpack_tuning_select: kpack_tuning_select needs a tuning set (with its gpus and sms) and a place "
                    "for the index");
}

TEST_CASE("a driver without cuDeviceGetName: the tuned auto dispatcher says the driver is too old", "[generated]") {
  FakeDriver fake;
  const fake_cuda_api& lean = kpack_test::use_lean(true);
  (void)lean;
  CHECK(tk_pick_auto(nullptr, static_cast<float*>(Out()), 8) == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(detail() == kpack_test::too_old(kpack_test::lean_path(), "cuDeviceGetName"));
}

TEST_CASE("64 threads on 4 devices of different models each launch their device's choice", "[race]") {
  FakeDriver fake;
  fake->set_device_count(4);
  const struct Device {
    const char* name;
    int major, minor;
    std::string f16, f32;  // at rows 1, n 8192 and rows 1, n 1024
  } devices[] = {
      {kH100, 9, 0, Scale(KPACK_DTYPE_F16, 512, false), Scale(KPACK_DTYPE_F32, 256, false)},
      {kA100, 8, 0, Scale(KPACK_DTYPE_F16, 512, true), Rules(KPACK_DTYPE_F32, 1024)},
      {"NVIDIA H100 NVL", 9, 0, Scale(KPACK_DTYPE_F16, 512, false), Scale(KPACK_DTYPE_F32, 256, false)},
      {"NVIDIA L40S", 8, 9, Rules(KPACK_DTYPE_F16, 8192), Rules(KPACK_DTYPE_F32, 1024)},
  };
  for (int d = 0; d < 4; ++d) {
    fake->set_device_name(d, devices[d].name);
    fake->set_compute_capability(d, devices[d].major, devices[d].minor);
  }
  constexpr int kThreads = 64;
  struct Seen {
    kpack_status status = KPACK_ERROR_INTERNAL;
    std::string f16, f32;
    int device = -1;
  };
  std::vector<Seen> seen(kThreads);
  race(kThreads, [&](int t) {
    Seen& s = seen[static_cast<size_t>(t)];
    fake->set_current_device(t % 4);
    for (int i = 0; i < 8; ++i) {  // many calls each, interleaved with the others
      const bool f32 = (t + i) % 2 == 1;
      s.status = tk_scale_auto(nullptr, f32 ? KPACK_DTYPE_F32 : KPACK_DTYPE_F16, X(), Out(), 1, f32 ? 1024 : 8192);
      fake_cuda_launch l{};
      if (s.status != KPACK_SUCCESS || fake->last_launch(&l) != 1) return;
      (f32 ? s.f32 : s.f16) = l.entry;
      s.device = l.device;
      if ((f32 ? s.f32 : s.f16) != (f32 ? devices[t % 4].f32 : devices[t % 4].f16)) return;
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    const Seen& s = seen[static_cast<size_t>(t)];
    INFO("thread " << t << " on device " << t % 4);
    CHECK(s.status == KPACK_SUCCESS);
    CHECK(s.device == t % 4);
    CHECK(s.f16 == devices[t % 4].f16);
    CHECK(s.f32 == devices[t % 4].f32);
  }
  CHECK(fake.count("cuLaunchKernel") == 8 * kThreads);
  // Each device's name was read once, however the threads raced.
  for (int d = 0; d < 4; ++d) CHECK(fake->count_on_device("cuDeviceGetName", d) == 1);
}
