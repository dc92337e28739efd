// Tests of scratch workspaces (runtime/workspace.c) against the fake driver:
// kpack_scratch's allocation and growth on the launch's stream, the
// caller's workspaces, stream capture, reserve/release/usage, out of
// memory, the device hint a scratch leaves for its launch, and the race of
// first scratch launches over 4 devices and 2 streams.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <latch>
#include <map>
#include <string>
#include <utility>
#include <vector>

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::lean_path;
using kpack_test::race;
using kpack_test::too_old;
using kpack_test::use_lean;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A fake address for the caller's own workspaces (never dereferenced).
const uintptr_t kCallerMemory = 0x7b0000000000;

// kpack_scratch for "spec", for the launch that follows: the pointer, or
// nullptr with *status set.  Leaves the device hint to that launch.
void *scratch_for_launch(uint64_t bytes, kpack_stream stream = nullptr, uint32_t align = 128,
                         kpack_status *status = nullptr) {
  void *ptr = reinterpret_cast<void *>(uintptr_t{1}); // overwritten
  const kpack_status s = fx_scratch("spec", stream, bytes, align, &ptr);
  if (status != nullptr) {
    *status = s;
  }
  return s == KPACK_SUCCESS ? ptr : nullptr;
}

// scratch_for_launch without a launch: drops the device hint after it, as
// a launcher that does not launch must (kpack_internal.h).
void *scratch(uint64_t bytes, kpack_stream stream = nullptr, uint32_t align = 128,
              kpack_status *status = nullptr) {
  void *ptr = scratch_for_launch(bytes, stream, align, status);
  fx_device_hint_clear();
  return ptr;
}

kpack_stream stream_of(const FakeDriver &fake, int i) {
  return static_cast<kpack_stream>(fake->stream(i));
}

// "0x..." as the runtime prints a stream.
std::string hex(const void *p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return text;
}

// The fake's record of the allocation at `p`.
fake_cuda_allocation allocation_at(const FakeDriver &fake, const void *p) {
  fake_cuda_allocation a{};
  REQUIRE(fake->allocation(reinterpret_cast<uintptr_t>(p), &a) == 1);
  return a;
}

// kpack_workspace_usage as a pair (bytes, workspaces).
std::pair<uint64_t, uint64_t> usage() {
  uint64_t bytes = 0, count = 0;
  REQUIRE(kpack_workspace_usage(&bytes, &count) == KPACK_SUCCESS);
  return {bytes, count};
}

// A launch of FX_VECTOR_ADD on `stream`, which takes the device hint.
kpack_status launch(kpack_stream stream = nullptr, uint32_t block_x = 256) {
  float x = 0;
  void *px = &x;
  int64_t n = 1;
  void *slots[4] = {&px, &px, &px, &n};
  return fx_launch(FX_VECTOR_ADD, stream, 1, 1, 1, block_x, 1, 1, 0, slots);
}

} // namespace

// ---- The runtime's workspace ----------------------------------------------------------------

TEST_CASE("the first scratch on a stream allocates its workspace; later ones reuse it",
          "[workspace]") {
  FakeDriver fake;
  const kpack_stream s1 = stream_of(fake, 1);
  void *p = scratch(1000, s1);
  REQUIRE(p != nullptr);
  CHECK(fake.count("cuMemAllocAsync") == 1);
  CHECK(fake.count("cuStreamIsCapturing") == 1); // asked before it allocated
  const fake_cuda_allocation a = allocation_at(fake, p);
  CHECK(a.size == kMiB); // the smallest workspace
  CHECK(a.async == 1);
  CHECK(a.stream == s1);
  CHECK(a.device == 0);
  CHECK(a.live == 1);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{kMiB, 1});

  // As much as fits: the same memory, no driver call but cuCtxGetDevice.
  const unsigned long long ctx = fake.count("cuCtxGetDevice");
  CHECK(scratch(kMiB, s1) == p);
  CHECK(scratch(1, s1, 4096) == p);
  CHECK(fake.count("cuMemAllocAsync") == 1);
  CHECK(fake.count("cuStreamIsCapturing") == 1);
  CHECK(fake.count("cuCtxGetDevice") == ctx + 2);

  // Another stream has its own.
  void *q = scratch(1000, stream_of(fake, 2));
  REQUIRE(q != nullptr);
  CHECK(q != p);
  CHECK(allocation_at(fake, q).stream == stream_of(fake, 2));
  // So does the legacy default stream.
  void *r = scratch(1000, nullptr);
  REQUIRE(r != nullptr);
  CHECK((r != p && r != q));
  CHECK(allocation_at(fake, r).stream == nullptr);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{3 * kMiB, 3});
  fx_device_hint_clear();
}

TEST_CASE("zero bytes of scratch is NULL, with no driver call and no hint", "[workspace]") {
  FakeDriver fake;
  void *ptr = &ptr;
  CHECK(fx_scratch("spec", nullptr, 0, 128, &ptr) == KPACK_SUCCESS);
  CHECK(ptr == nullptr);
  CHECK(fake.count("cuCtxGetDevice") == 0);
  CHECK(fake.count("cuInit") == 0);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  // Even an alignment that is no power of two: nothing is allocated.
  CHECK(fx_scratch("spec", nullptr, 0, 3, &ptr) == KPACK_SUCCESS);
}

TEST_CASE("a bigger scratch grows the workspace, keeping the old one until the stream's is released",
          "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 3);
  void *small = scratch(1000, s);
  REQUIRE(small != nullptr);
  void *big = scratch(3 * kMiB, s);
  REQUIRE(big != nullptr);
  CHECK(big != small);
  CHECK(fake.count("cuMemAllocAsync") == 2);
  // A graph captured on the stream before the growth launches with the old
  // buffer at every replay: it stays allocated, and counted.
  CHECK(fake.count("cuMemFreeAsync") == 0);
  CHECK(allocation_at(fake, small).live == 1);
  const fake_cuda_allocation grown = allocation_at(fake, big);
  CHECK(grown.size == 4 * kMiB); // rounded up to a power of two
  CHECK(grown.stream == s);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{5 * kMiB, 1});
  // A smaller one reuses it.
  CHECK(scratch(2 * kMiB, s) == big);
  CHECK(scratch(1000, s) == big);
  CHECK(fake.count("cuMemAllocAsync") == 2);
  CHECK(fake->live_allocations() == 2);
  fx_device_hint_clear();
  // Released: both freed on the stream, after the work queued there.
  REQUIRE(kpack_workspace_release(s) == KPACK_SUCCESS);
  for (void *p : {small, big}) {
    const fake_cuda_allocation a = allocation_at(fake, p);
    CHECK((a.live == 0 && a.freed_async == 1 && a.freed_stream == s));
  }
  CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  // kpack_unload_all frees what a growth retired, too.
  REQUIRE(scratch(1000, s) != nullptr);
  REQUIRE(scratch(3 * kMiB, s) != nullptr);
  fx_device_hint_clear();
  REQUIRE(kpack_unload_all() == KPACK_SUCCESS);
  CHECK(fake->live_allocations() == 0);
}

TEST_CASE("the per-thread default stream cannot have a scratch workspace", "[workspace]") {
  FakeDriver fake;
  const kpack_stream per_thread = reinterpret_cast<kpack_stream>(uintptr_t{2});
  void *ptr = &ptr;
  const std::string why = ": the per-thread default stream (CU_STREAM_PER_THREAD, cudaStreamPerThread) is another "
                          "stream on every thread, so it cannot have a scratch workspace; launch kernels that need "
                          "scratch on a stream of your own";
  CHECK(fx_scratch("spec", per_thread, 1000, 128, &ptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(ptr == nullptr);
  CHECK(detail() == "spec" + why);
  CHECK(kpack_workspace_reserve(per_thread, 1000) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_workspace_reserve" + why);
  CHECK(kpack_workspace_set(per_thread, &ptr, 64) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_workspace_set" + why);
  CHECK(fake.count("cuMemAllocAsync") == 0);
}

TEST_CASE("an alignment beyond the driver's makes room for itself", "[workspace]") {
  FakeDriver fake;
  // 1 MiB of scratch aligned to 1 MiB needs up to 2 MiB - 1: a 2 MiB
  // workspace, even though the fake's addresses happen to be aligned.
  void *p = scratch(kMiB, nullptr, 1u << 20);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p) % kMiB == 0);
  CHECK(allocation_at(fake, p).size == 2 * kMiB);
  fx_device_hint_clear();
}

// ---- The caller's workspace -----------------------------------------------------------------

TEST_CASE("the caller's workspace is used as given, and never grown", "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 0);
  void *mine = reinterpret_cast<void *>(kCallerMemory);
  REQUIRE(kpack_workspace_set(s, mine, kMiB) == KPACK_SUCCESS);
  CHECK(scratch(1000, s) == mine);
  CHECK(scratch(kMiB, s) == mine);
  CHECK(fake.count("cuMemAllocAsync") == 0);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0}); // the caller's is not counted

  kpack_status status = KPACK_SUCCESS;
  CHECK(scratch(kMiB + 1, s, 128, &status) == nullptr);
  CHECK(status == KPACK_ERROR_WORKSPACE_TOO_SMALL);
  CHECK(kpack_last_cu_result() == 0);
  CHECK(detail() == "spec: needs 1048577 bytes of scratch; the caller's workspace for stream " +
                        hex(s) + " on device 0 has 1048576 (kpack_workspace_set)");
  CHECK(fake.count("cuMemAllocAsync") == 0);

  // Other streams still get the runtime's.
  void *other = scratch(1000, stream_of(fake, 1));
  REQUIRE(other != nullptr);
  CHECK(other != mine);

  // Reverted: the runtime allocates one for the stream.
  REQUIRE(kpack_workspace_set(s, nullptr, 0) == KPACK_SUCCESS);
  void *runtime = scratch(kMiB + 1, s);
  REQUIRE(runtime != nullptr);
  CHECK(runtime != mine);
  CHECK(allocation_at(fake, runtime).stream == s);
  fx_device_hint_clear();
}

TEST_CASE("a misaligned caller workspace is aligned inside, the bytes skipped counted",
          "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 2);
  void *mine = reinterpret_cast<void *>(kCallerMemory + 8);
  REQUIRE(kpack_workspace_set(s, mine, 4096) == KPACK_SUCCESS);
  CHECK(scratch(100, s, 128) == reinterpret_cast<void *>(kCallerMemory + 128));
  CHECK(scratch(100, s, 8) == mine);
  CHECK(scratch(4096 - 120, s, 128) == reinterpret_cast<void *>(kCallerMemory + 128));
  kpack_status status = KPACK_SUCCESS;
  CHECK(scratch(4000, s, 128, &status) == nullptr);
  CHECK(status == KPACK_ERROR_WORKSPACE_TOO_SMALL);
  CHECK(detail() == "spec: needs 4000 bytes of scratch aligned to 128; the caller's workspace for "
                    "stream " +
                        hex(s) +
                        " on device 0 has 4096, of which the first 120 are skipped to align it "
                        "(kpack_workspace_set)");
  fx_device_hint_clear();
}

TEST_CASE("giving a stream the caller's memory frees the runtime's workspace there",
          "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 1);
  void *runtime = scratch(1000, s);
  REQUIRE(runtime != nullptr);
  REQUIRE(kpack_workspace_set(s, reinterpret_cast<void *>(kCallerMemory), 2 * kMiB) ==
          KPACK_SUCCESS);
  const fake_cuda_allocation a = allocation_at(fake, runtime);
  CHECK((a.live == 0 && a.freed_async == 1 && a.freed_stream == s));
  CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  // Replaced by other memory of the caller's.
  REQUIRE(kpack_workspace_set(s, reinterpret_cast<void *>(kCallerMemory + kMiB), 64) ==
          KPACK_SUCCESS);
  CHECK(scratch(64, s, 1) == reinterpret_cast<void *>(kCallerMemory + kMiB));
  // Released: forgotten, never freed (it is the caller's).
  const unsigned long long frees = fake.count("cuMemFreeAsync");
  REQUIRE(kpack_workspace_release(s) == KPACK_SUCCESS);
  CHECK(fake.count("cuMemFreeAsync") == frees);
  void *again = scratch(64, s, 1);
  REQUIRE(again != nullptr);
  CHECK(allocation_at(fake, again).stream == s); // the runtime's again
  fx_device_hint_clear();
}

// ---- Stream capture -------------------------------------------------------------------------

TEST_CASE("a workspace that would grow during capture is refused; one reserved before is used",
          "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 0);
  SECTION("no workspace yet") {
    fake->set_capturing(s, 1);
    kpack_status status = KPACK_SUCCESS;
    CHECK(scratch(1000, s, 128, &status) == nullptr);
    CHECK(status == KPACK_ERROR_WORKSPACE_TOO_SMALL);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == "spec: 1000 bytes of scratch do not fit the workspace of stream " + hex(s) +
                          " on device 0 (0 bytes), and the stream is capturing a graph, where "
                          "the workspace cannot grow; call kpack_workspace_reserve(stream, 1000) "
                          "before the capture");
    CHECK(fake.count("cuMemAllocAsync") == 0);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  }
  SECTION("a workspace too small, and a capture that was invalidated") {
    REQUIRE(scratch(1000, s) != nullptr);
    fake->set_capturing(s, 2); // CU_STREAM_CAPTURE_STATUS_INVALIDATED
    kpack_status status = KPACK_SUCCESS;
    CHECK(scratch(3 * kMiB, s, 4096, &status) == nullptr);
    CHECK(status == KPACK_ERROR_WORKSPACE_TOO_SMALL);
    CHECK(detail() == "spec: 3145728 bytes of scratch do not fit the workspace of stream " +
                          hex(s) +
                          " on device 0 (1048576 bytes), and the stream is capturing a graph, "
                          "where the workspace cannot grow; call kpack_workspace_reserve(stream, "
                          "3149823) before the capture");
    CHECK(fake.count("cuMemAllocAsync") == 1);
    CHECK(fake.count("cuMemFreeAsync") == 0);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{kMiB, 1}); // the old one stays
    // What fits still works.
    CHECK(scratch(1000, s) != nullptr);
  }
  SECTION("reserved before the capture") {
    REQUIRE(kpack_workspace_reserve(s, 8 * kMiB) == KPACK_SUCCESS);
    REQUIRE(launch(s) == KPACK_SUCCESS); // prepared before the capture
    fake->set_capturing(s, 1);
    const unsigned long long asked = fake.count("cuStreamIsCapturing");
    const unsigned long long ctx = fake.count("cuCtxGetDevice");
    for (uint64_t bytes : {uint64_t{1000}, 5 * kMiB, 8 * kMiB}) {
      void *p = scratch_for_launch(bytes, s);
      REQUIRE(p != nullptr);
      CHECK(launch(s) == KPACK_SUCCESS);
    }
    // One cuCtxGetDevice per scratch and launch together, nothing else.
    CHECK(fake.count("cuCtxGetDevice") == ctx + 3);
    CHECK(fake.count("cuStreamIsCapturing") == asked);
    CHECK(fake.count("cuMemAllocAsync") == 1);
  }
  SECTION("reserve and release during capture") {
    REQUIRE(scratch(1000, s) != nullptr);
    fake->set_capturing(s, 1);
    CHECK(kpack_workspace_reserve(s, 2 * kMiB) == KPACK_ERROR_WORKSPACE_TOO_SMALL);
    CHECK(detail() == "kpack_workspace_reserve: 2097152 bytes of scratch do not fit the "
                      "workspace of stream " +
                          hex(s) +
                          " on device 0 (1048576 bytes), and the stream is capturing a graph, "
                          "where the workspace cannot grow; call kpack_workspace_reserve(stream, "
                          "2097152) before the capture");
    CHECK(kpack_workspace_release(s) == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(detail() == "kpack_workspace_release: stream " + hex(s) +
                          " on device 0 is capturing a graph; free its scratch workspace after "
                          "the capture");
    CHECK(kpack_workspace_set(s, reinterpret_cast<void *>(kCallerMemory), kMiB) ==
          KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(detail() == "kpack_workspace_set: stream " + hex(s) +
                          " on device 0 is capturing a graph; free its scratch workspace after "
                          "the capture");
    CHECK(usage() == std::pair<uint64_t, uint64_t>{kMiB, 1});
    fake->set_capturing(s, 0);
    CHECK(kpack_workspace_release(s) == KPACK_SUCCESS);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  }
  fx_device_hint_clear();
}

// ---- Reserve, release, usage --------------------------------------------------------------

TEST_CASE("kpack_workspace_reserve, release and usage", "[workspace]") {
  FakeDriver fake;
  fake->set_device_count(2);
  const kpack_stream s1 = stream_of(fake, 1);
  const kpack_stream s2 = stream_of(fake, 2);
  REQUIRE(kpack_workspace_reserve(s1, 3 * kMiB) == KPACK_SUCCESS);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{4 * kMiB, 1});
  REQUIRE(kpack_workspace_reserve(s2, 1) == KPACK_SUCCESS);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{5 * kMiB, 2});
  REQUIRE(kpack_workspace_reserve(s1, 1000) == KPACK_SUCCESS); // big enough already
  REQUIRE(kpack_workspace_reserve(s1, 0) == KPACK_SUCCESS);
  CHECK(fake.count("cuMemAllocAsync") == 2);
  // Reserved memory is what scratch gets.
  void *p = scratch(4 * kMiB, s1);
  REQUIRE(p != nullptr);
  CHECK(allocation_at(fake, p).size == 4 * kMiB);
  fx_device_hint_clear();

  // Another device: its own workspaces, counted together.
  fake->set_current_device(1);
  REQUIRE(kpack_workspace_reserve(s1, 2 * kMiB) == KPACK_SUCCESS);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{7 * kMiB, 3});
  void *on1 = scratch(1000, s1);
  REQUIRE(on1 != nullptr);
  CHECK(on1 != p);
  CHECK(allocation_at(fake, on1).device == 1);
  fx_device_hint_clear();
  REQUIRE(kpack_workspace_release(s1) == KPACK_SUCCESS);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{5 * kMiB, 2});
  CHECK(allocation_at(fake, on1).freed_stream == s1);

  fake->set_current_device(0);
  REQUIRE(kpack_workspace_release(s1) == KPACK_SUCCESS);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{kMiB, 1});
  const fake_cuda_allocation a = allocation_at(fake, p);
  CHECK((a.live == 0 && a.freed_async == 1 && a.freed_stream == s1));
  REQUIRE(kpack_workspace_release(s1) == KPACK_SUCCESS); // nothing left: success
  REQUIRE(kpack_workspace_release(s2) == KPACK_SUCCESS);
  CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  CHECK(fake->live_allocations() == 0);
  // NULL pointers are skipped.
  CHECK(kpack_workspace_usage(nullptr, nullptr) == KPACK_SUCCESS);
}

TEST_CASE("reserving on a stream with the caller's workspace is refused", "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 3);
  REQUIRE(kpack_workspace_set(s, reinterpret_cast<void *>(kCallerMemory), 4096) == KPACK_SUCCESS);
  CHECK(kpack_workspace_reserve(s, kMiB) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_workspace_reserve: stream " + hex(s) +
                        " on device 0 has the caller's workspace (kpack_workspace_set); revert "
                        "it with kpack_workspace_set(stream, NULL, 0) first");
  CHECK(fake.count("cuMemAllocAsync") == 0);
}

TEST_CASE("kpack_unload_all frees every workspace with cuMemFree", "[workspace]") {
  FakeDriver fake;
  void *a = scratch(1000, stream_of(fake, 0));
  void *b = scratch(3 * kMiB, stream_of(fake, 1));
  REQUIRE(kpack_workspace_set(stream_of(fake, 2), reinterpret_cast<void *>(kCallerMemory), 64) ==
          KPACK_SUCCESS);
  fx_device_hint_clear();
  REQUIRE((a != nullptr && b != nullptr));
  SECTION("freed") {
    CHECK(kpack_unload_all() == KPACK_SUCCESS);
    CHECK(fake.count("cuMemFree_v2") == 2); // not the caller's
    CHECK(fake->live_allocations() == 0);
    CHECK(allocation_at(fake, a).freed_async == 0);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  }
  SECTION("a failed free is reported, and everything forgotten all the same") {
    REQUIRE(fake->fail_next("cuMemFree_v2", 999) == 0);
    CHECK(kpack_unload_all() == KPACK_ERROR_DRIVER);
    CHECK(kpack_last_cu_result() == 999);
    CHECK(detail() == "kpack_unload_all: cuMemFree of the 1048576-byte scratch workspace of "
                      "stream " +
                          hex(fake->stream(0)) + " on device 0 failed: CUDA_ERROR_UNKNOWN (999)");
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  }
  // Nothing is remembered: the next scratch allocates anew.
  fake->reset();
  fx_set_driver_path(kpack_test::fake_path().c_str());
  REQUIRE(scratch(1000, stream_of(fake, 0)) != nullptr);
  CHECK(fake.count("cuMemAllocAsync") == 1);
  fx_device_hint_clear();
}

// ---- Failures -----------------------------------------------------------------------------

TEST_CASE("out of device memory for a workspace is KPACK_ERROR_OUT_OF_MEMORY", "[workspace]") {
  FakeDriver fake;
  const kpack_stream s = stream_of(fake, 1);
  SECTION("the first allocation") {
    fake->set_mem_info(kMiB / 2, size_t{16} << 30);
    kpack_status status = KPACK_SUCCESS;
    CHECK(scratch(1000, s, 128, &status) == nullptr);
    CHECK(status == KPACK_ERROR_OUT_OF_MEMORY);
    CHECK(kpack_last_cu_result() == 2);
    CHECK(detail() == "spec: cuMemAllocAsync(1048576 bytes) for the scratch workspace of stream " +
                          hex(s) +
                          " on device 0 failed: CUDA_ERROR_OUT_OF_MEMORY (2); device 0 has 0 MiB "
                          "free of 16384 MiB");
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
    // Nothing latched.
    fake->set_mem_info(size_t{1} << 30, size_t{16} << 30);
    CHECK(scratch(1000, s) != nullptr);
  }
  SECTION("a growth: the old workspace is retired, the stream has none") {
    void *old = scratch(1000, s);
    REQUIRE(old != nullptr);
    REQUIRE(fake->fail_next("cuMemAllocAsync", 2) == 0);
    kpack_status status = KPACK_SUCCESS;
    CHECK(scratch(2 * kMiB, s, 128, &status) == nullptr);
    CHECK(status == KPACK_ERROR_OUT_OF_MEMORY);
    CHECK(kpack_last_cu_result() == 2);
    CHECK(allocation_at(fake, old).live == 1);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{kMiB, 0});
    CHECK(scratch(2 * kMiB, s) != nullptr);
    fx_device_hint_clear();
    REQUIRE(kpack_workspace_release(s) == KPACK_SUCCESS);
    CHECK(allocation_at(fake, old).live == 0);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  }
  SECTION("kpack_workspace_reserve") {
    REQUIRE(fake->fail_next("cuMemAllocAsync", 2) == 0);
    CHECK(kpack_workspace_reserve(s, 5 * kMiB) == KPACK_ERROR_OUT_OF_MEMORY);
    CHECK(detail().rfind("kpack_workspace_reserve: cuMemAllocAsync(8388608 bytes) for the scratch "
                         "workspace of stream " +
                             hex(s) + " on device 0 failed: CUDA_ERROR_OUT_OF_MEMORY (2)",
                         0) == 0);
  }
  fx_device_hint_clear();
}

TEST_CASE("kpack_scratch's argument checks and driver failures", "[workspace]") {
  FakeDriver fake;
  CHECK(fx_scratch("spec", nullptr, 1000, 128, nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "spec: kpack_scratch needs a place for the pointer");
  void *ptr = &ptr;
  CHECK(fx_scratch("spec", nullptr, 1000, 3, &ptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(ptr == nullptr);
  CHECK(detail() == "spec: scratch alignment 3 is not a power of two");
  CHECK(fx_scratch(nullptr, nullptr, 1000, 0, &ptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_scratch: scratch alignment 0 is not a power of two");
  CHECK(fx_scratch("spec", nullptr, (uint64_t{1} << 48) + 1, 1, &ptr) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "spec: 281474976710657 bytes of scratch is more than any device has (the "
                    "runtime's limit is 2^48)");
  CHECK(kpack_workspace_reserve(nullptr, (size_t{1} << 48) + 1) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_workspace_reserve: 281474976710657 bytes of scratch is more than any "
                    "device has (the runtime's limit is 2^48)");
  CHECK(kpack_last_cu_result() == 0);
  CHECK(fake.count("cuCtxGetDevice") == 0);

  SECTION("cuStreamIsCapturing fails") {
    REQUIRE(fake->fail_next("cuStreamIsCapturing", 999) == 0);
    CHECK(fx_scratch("spec", nullptr, 1000, 128, &ptr) == KPACK_ERROR_DRIVER);
    CHECK(kpack_last_cu_result() == 999);
    CHECK(detail() ==
          "spec: cuStreamIsCapturing(stream 0x0) on device 0 failed: CUDA_ERROR_UNKNOWN (999)");
  }
  SECTION("cuMemFreeAsync fails at a release: what is left stays") {
    void *old = scratch(1000);
    REQUIRE(old != nullptr);
    REQUIRE(scratch(2 * kMiB) != nullptr);  // retires `old`
    fx_device_hint_clear();
    REQUIRE(fake->fail_next("cuMemFreeAsync", 999) == 0);
    CHECK(kpack_workspace_release(nullptr) == KPACK_ERROR_DRIVER);
    CHECK(detail() == "kpack_workspace_release: cuMemFreeAsync of the 1048576-byte scratch workspace that "
                      "stream 0x0 on device 0 outgrew failed: CUDA_ERROR_UNKNOWN (999)");
    CHECK(usage() == std::pair<uint64_t, uint64_t>{3 * kMiB, 1});
    REQUIRE(kpack_workspace_release(nullptr) == KPACK_SUCCESS);
    CHECK(usage() == std::pair<uint64_t, uint64_t>{0, 0});
  }
  SECTION("no current context") {
    REQUIRE(scratch(1) != nullptr); // the driver is loaded
    fx_device_hint_clear();
    fake->set_current_device(-1);
    CHECK(fx_scratch("spec", nullptr, 1000, 128, &ptr) == KPACK_ERROR_NO_CONTEXT);
    CHECK(kpack_workspace_release(nullptr) == KPACK_ERROR_NO_CONTEXT);
    CHECK(detail().rfind("kpack_workspace_release: the calling thread has no current CUDA "
                         "context",
                         0) == 0);
  }
  fx_device_hint_clear();
}

TEST_CASE("without the stream-ordered allocator scratch is KPACK_ERROR_DRIVER_TOO_OLD",
          "[workspace][driver]") {
  FakeDriver fake;
  use_lean(true);
  void *ptr = nullptr;
  for (int i = 0; i < 2; ++i) {
    CHECK(fx_scratch("spec", nullptr, 1000, 128, &ptr) == KPACK_ERROR_DRIVER_TOO_OLD);
    CHECK(detail() == too_old(lean_path(), "cuMemAllocAsync"));
  }
  CHECK(kpack_workspace_reserve(nullptr, 1) == KPACK_ERROR_DRIVER_TOO_OLD);
  // The caller's memory needs no allocator.
  REQUIRE(kpack_workspace_set(nullptr, reinterpret_cast<void *>(kCallerMemory), 4096) ==
          KPACK_SUCCESS);
  CHECK(fx_scratch("spec", nullptr, 1000, 128, &ptr) == KPACK_SUCCESS);
  CHECK(ptr == reinterpret_cast<void *>(kCallerMemory));
  fx_device_hint_clear();
}

TEST_CASE("a device has workspaces for at most KPACK_WORKSPACE_STREAMS streams", "[workspace]") {
  FakeDriver fake;
  // Streams the runtime only keys on (the caller's memory needs no driver
  // call with them).
  auto stream = [](int i) { return reinterpret_cast<kpack_stream>(uintptr_t{0x1000} * (i + 1)); };
  for (int i = 0; i < KPACK_WORKSPACE_STREAMS; ++i) {
    REQUIRE(kpack_workspace_set(stream(i), reinterpret_cast<void *>(kCallerMemory), 64) ==
            KPACK_SUCCESS);
  }
  CHECK(kpack_workspace_set(stream(64), reinterpret_cast<void *>(kCallerMemory), 64) ==
        KPACK_ERROR_INTERNAL);
  CHECK(detail() == "kpack_workspace_set: device 0 has scratch workspaces for 64 streams already "
                    "(KPACK_WORKSPACE_STREAMS); release those of streams no longer used with "
                    "kpack_workspace_release");
  kpack_status status = KPACK_SUCCESS;
  CHECK(scratch(1000, nullptr, 128, &status) == nullptr);
  CHECK(status == KPACK_ERROR_INTERNAL);
  CHECK(detail().rfind("spec: device 0 has scratch workspaces for 64 streams already", 0) == 0);
  // A released slot is reused.
  REQUIRE(kpack_workspace_release(stream(10)) == KPACK_SUCCESS);
  REQUIRE(kpack_workspace_set(stream(64), reinterpret_cast<void *>(kCallerMemory + 64), 64) ==
          KPACK_SUCCESS);
  CHECK(scratch(64, stream(64), 1) == reinterpret_cast<void *>(kCallerMemory + 64));
  CHECK(scratch(64, stream(63), 1) == reinterpret_cast<void *>(kCallerMemory));
  fx_device_hint_clear();
}

// ---- The device hint ------------------------------------------------------------------------

TEST_CASE("a launch after kpack_scratch takes its device: one cuCtxGetDevice for both",
          "[workspace]") {
  FakeDriver fake;
  REQUIRE(scratch_for_launch(1000) != nullptr);
  REQUIRE(launch() == KPACK_SUCCESS); // first use of everything
  unsigned long long ctx = fake.count("cuCtxGetDevice");
  for (int i = 0; i < 10; ++i) {
    REQUIRE(scratch_for_launch(1000) != nullptr);
    REQUIRE(launch() == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuCtxGetDevice") == ctx + 10);

  // Any launch takes the hint, even one that is refused ...
  ctx = fake.count("cuCtxGetDevice");
  REQUIRE(scratch_for_launch(1000) != nullptr);
  CHECK(launch(nullptr, 0) == KPACK_ERROR_INVALID_ARGUMENT); // a zero block
  REQUIRE(launch() == KPACK_SUCCESS);                       // asks again
  CHECK(fake.count("cuCtxGetDevice") == ctx + 2);

  // ... and a failed scratch leaves none.
  fake->set_capturing(nullptr, 1);
  ctx = fake.count("cuCtxGetDevice");
  kpack_status status = KPACK_SUCCESS;
  REQUIRE(scratch_for_launch(8 * kMiB, nullptr, 128, &status) == nullptr);
  REQUIRE(status == KPACK_ERROR_WORKSPACE_TOO_SMALL);
  REQUIRE(launch() == KPACK_SUCCESS);
  CHECK(fake.count("cuCtxGetDevice") == ctx + 2);

  // kpack_device_hint_clear drops it.
  fake->set_capturing(nullptr, 0);
  ctx = fake.count("cuCtxGetDevice");
  REQUIRE(scratch_for_launch(1000) != nullptr);
  fx_device_hint_clear();
  REQUIRE(launch() == KPACK_SUCCESS);
  CHECK(fake.count("cuCtxGetDevice") == ctx + 2);
}

// ---- Races --------------------------------------------------------------------------------

TEST_CASE("64 threads over 4 devices and 2 streams: one workspace per (device, stream)",
          "[race]") {
  FakeDriver fake;
  constexpr int kDevices = 4;
  constexpr int kStreams = 2;
  constexpr int kThreads = 64;
  fake->set_device_count(kDevices);
  fake->set_load_delay_us(2000); // hold each allocation while others arrive
  struct Seen {
    kpack_status scratch = KPACK_ERROR_INTERNAL, launch = KPACK_ERROR_INTERNAL;
    kpack_status grown = KPACK_ERROR_INTERNAL;
    void *ptr = nullptr, *grown_ptr = nullptr;
    int launched_on = -1;
  };
  std::vector<Seen> seen(kThreads);
  std::latch first_round(kThreads);
  race(kThreads, [&](int t) {
    const int device = t % kDevices;
    fake->set_current_device(device);
    const kpack_stream stream = stream_of(fake, (t / kDevices) % kStreams);
    Seen &mine = seen[t];
    mine.scratch = fx_scratch("race_spec", stream, 1000 + t, 128, &mine.ptr);
    mine.launch = launch(stream);
    fake_cuda_launch l{};
    if (fake->last_launch(&l) == 1) {
      mine.launched_on = l.device;
    }
    // Everyone at once again, once all have their first workspace, each
    // needing more than that.
    first_round.arrive_and_wait();
    mine.grown = fx_scratch("race_spec", stream, 3 * kMiB + t, 256, &mine.grown_ptr);
    fx_device_hint_clear();
  });
  std::map<std::pair<int, int>, void *> first, grown;
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    const std::pair<int, int> key{t % kDevices, (t / kDevices) % kStreams};
    CHECK(seen[t].scratch == KPACK_SUCCESS);
    CHECK(seen[t].launch == KPACK_SUCCESS);
    CHECK(seen[t].grown == KPACK_SUCCESS);
    CHECK(seen[t].launched_on == key.first);
    REQUIRE(seen[t].ptr != nullptr);
    REQUIRE(seen[t].grown_ptr != nullptr);
    // Every thread of a (device, stream) got the same memory.
    CHECK(first.emplace(key, seen[t].ptr).first->second == seen[t].ptr);
    CHECK(grown.emplace(key, seen[t].grown_ptr).first->second == seen[t].grown_ptr);
  }
  REQUIRE(first.size() == kDevices * kStreams);
  for (const auto &[key, ptr] : first) {
    INFO("device " << key.first << ", stream " << key.second);
    const fake_cuda_allocation a = allocation_at(fake, ptr);
    CHECK(a.device == key.first);
    CHECK(a.stream == fake->stream(key.second));
    CHECK(a.size == kMiB);
    CHECK(a.live == 1); // grown since: retired, kept for graphs captured before
    const fake_cuda_allocation g = allocation_at(fake, grown.at(key));
    CHECK((g.device == key.first && g.stream == fake->stream(key.second)));
    CHECK((g.size == 4 * kMiB && g.live == 1));
  }
  // Exactly one allocation per (device, stream), then one growth each.
  CHECK(fake.count("cuMemAllocAsync") == 2 * kDevices * kStreams);
  CHECK(fake.count("cuMemFreeAsync") == 0);
  for (int d = 0; d < kDevices; ++d) {
    CHECK(fake->count_on_device("cuMemAllocAsync", d) == 2 * kStreams);
  }
  CHECK(usage() == std::pair<uint64_t, uint64_t>{kDevices * kStreams * 5 * kMiB,
                                                 kDevices * kStreams});
}
