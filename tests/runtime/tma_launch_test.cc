// The tma package's generated launchers (tests/compiler/golden/tma_launch.c)
// against the fake driver: each tensordesc param becomes a CUtensorMap the
// runtime encodes with the layout Triton chose (or the manifest gave, for
// CUDA), passed by value and, for Triton, followed by the shape as i32 and
// the strides as i64; num_ctas launches clusters of that many CTAs, spread;
// a kernel with Triton's global scratch gets it from the workspace of
// (device, stream), right before its launch; a call TMA cannot take fails
// with the value named and launches nothing.
#include <cstdint>
#include <cstring>
#include <string>

#include "test_env.h"
#include "tma.h"

using kpack_test::detail;
using kpack_test::FakeDriver;

namespace {

// Addresses the fake never dereferences: 16-byte aligned unless offset.
template <typename T>
T* At(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

fake_cuda_launch Last(const FakeDriver& fake) {
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return l;
}

// What each launch passed, copied while its parameters are alive: the
// leading bytes and address of each map, the i32 shapes and i64 strides.
struct Seen {
  char map_tag[2][8];
  uint64_t map_address[2];
  int32_t shape[2][2];
  int64_t strides[2][2];
  void* scratch[2];
  int params;
};
thread_local Seen seen;

void SeeCopy(const fake_cuda_launch* l) {
  seen.params = l->num_params;
  if (l->num_params != 14) return;
  for (int d = 0; d < 2; ++d) {
    const unsigned char* map = static_cast<const unsigned char*>(l->param_values[5 * d]);
    std::memcpy(seen.map_tag[d], map, 8);
    std::memcpy(&seen.map_address[d], map + 8, 8);
    for (int i = 0; i < 2; ++i) {
      std::memcpy(&seen.shape[d][i], l->param_values[5 * d + 1 + i], 4);
      std::memcpy(&seen.strides[d][i], l->param_values[5 * d + 3 + i], 8);
    }
  }
  std::memcpy(&seen.scratch[0], l->param_values[12], sizeof(void*));
  std::memcpy(&seen.scratch[1], l->param_values[13], sizeof(void*));
}

void SeeScratch(const fake_cuda_launch* l) {
  seen.params = l->num_params;
  std::memcpy(&seen.scratch[0], l->param_values[4], sizeof(void*));
  std::memcpy(&seen.scratch[1], l->param_values[5], sizeof(void*));
}

// One sm_90 device, as TMA needs.
void Hopper(const FakeDriver& fake) { fake->set_compute_capability(0, 9, 0); }

}  // namespace

TEST_CASE("a Triton launcher encodes each descriptor with Triton's layout and passes map, shapes, strides",
          "[generated]") {
  FakeDriver fake;
  Hopper(fake);
  fake->set_launch_hook(SeeCopy);
  const int64_t shape[2] = {100, 300}, src_strides[2] = {320, 1}, dst_strides[2] = {304, 1};
  REQUIRE(tma_copy_triton_bf16_m64_n128_add_one_w4_ctas1(nullptr, At<const kpack_bf16>(0x100000), shape, src_strides,
                                                          At<kpack_bf16>(0x200000), shape, dst_strides, 100,
                                                          300) == KPACK_SUCCESS);
  // The last encode is dst's: dims and byte strides innermost first, the
  // box Triton chose (the 128-wide block cut to the 128-byte swizzle).
  fake_cuda_tensor_map_call tm{};
  REQUIRE(fake->last_tensor_map(&tm) == 1);
  CHECK(tm.data_type == 9);  // BFLOAT16
  CHECK(tm.rank == 2);
  CHECK(tm.address == At<void>(0x200000));
  CHECK((tm.dims[0] == 300 && tm.dims[1] == 100));
  CHECK(tm.strides[0] == 304 * 2);
  CHECK((tm.box[0] == 64 && tm.box[1] == 64));
  CHECK((tm.element_strides[0] == 1 && tm.element_strides[1] == 1));
  CHECK(tm.swizzle == 3);
  CHECK(tm.interleave == 0);
  CHECK(tm.l2_promotion == 2);  // L2_128B, as Triton's launcher asks
  CHECK(tm.oob_fill == 0);
  fake_cuda_launch l = Last(fake);
  CHECK(std::string(l.entry) == "copy_tiles");
  CHECK(l.via_ex == 0);
  CHECK((l.grid[0] == 2 && l.grid[1] == 3 && l.grid[2] == 1));
  CHECK(l.block[0] == 128);
  CHECK(l.smem == 32768);
  REQUIRE(seen.params == 14);
  for (int d = 0; d < 2; ++d) {
    CHECK(std::string(seen.map_tag[d], 8) == "FAKETMAP");
    CHECK(seen.map_address[d] == (d == 0 ? 0x100000u : 0x200000u));
    CHECK((seen.shape[d][0] == 100 && seen.shape[d][1] == 300));
    CHECK(seen.strides[d][0] == (d == 0 ? 320 : 304));
    CHECK(seen.strides[d][1] == 1);
  }
  CHECK((seen.scratch[0] == nullptr && seen.scratch[1] == nullptr));  // it needs none

  // The same call again copies the cached maps: no encode.
  const unsigned long long encodes = fake.count("cuTensorMapEncodeTiled");
  REQUIRE(tma_copy_triton_bf16_m64_n128_add_one_w4_ctas1(nullptr, At<const kpack_bf16>(0x100000), shape, src_strides,
                                                          At<kpack_bf16>(0x200000), shape, dst_strides, 100,
                                                          300) == KPACK_SUCCESS);
  CHECK(fake.count("cuTensorMapEncodeTiled") == encodes);
  CHECK(std::string(seen.map_tag[1], 8) == "FAKETMAP");
}

TEST_CASE("num_ctas launches a cluster of that many CTAs per program, spread", "[generated]") {
  FakeDriver fake;
  Hopper(fake);
  const int64_t shape[2] = {100, 300}, strides[2] = {320, 1};
  REQUIRE(tma_copy_triton(nullptr, KPACK_DTYPE_F32, 64, 128, 1, 4, 2, At<const void>(0x100000), shape, strides,
                          At<void>(0x200000), shape, strides, 100, 300) == KPACK_SUCCESS);
  fake_cuda_launch l = Last(fake);
  CHECK(l.via_ex == 1);
  CHECK((l.grid[0] == 4 && l.grid[1] == 3 && l.grid[2] == 1));  // 2 programs x 2 CTAs along x
  CHECK((l.cluster[0] == 2 && l.cluster[1] == 1 && l.cluster[2] == 1));
  CHECK(l.cluster_policy == 1);  // CU_CLUSTER_SCHEDULING_POLICY_SPREAD
  CHECK(l.smem == 16384);
  fake_cuda_tensor_map_call tm{};
  REQUIRE(fake->last_tensor_map(&tm) == 1);
  CHECK((tm.box[0] == 32 && tm.box[1] == 32));  // each CTA's share
  // A cluster the device cannot run fails, naming it, and launches nothing.
  kpack_unload_all();
  fake->set_max_active_clusters(0);
  const unsigned long long launches = fake.count("cuLaunchKernelEx");
  CHECK(tma_copy_triton(nullptr, KPACK_DTYPE_F32, 64, 128, 1, 4, 2, At<const void>(0x100000), shape, strides,
                        At<void>(0x200000), shape, strides, 100, 300) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "copy_triton_f32_m64_n128_add_one_w4_ctas2: cluster 2x1x1 of 128-thread blocks with 16384 bytes "
                    "of shared memory cannot run on device 0 (sm_90): cuOccupancyMaxActiveClusters gives 0");
  CHECK(fake.count("cuLaunchKernelEx") == launches);
}

TEST_CASE("Triton's global scratch comes from the stream's workspace, right before the launch", "[generated]") {
  FakeDriver fake;
  Hopper(fake);
  fake->set_launch_hook(SeeScratch);
  // 130 x 200 in 64 x 64 tiles: 12 programs x 128 bytes.
  REQUIRE(tma_scratch_triton_f16_m64_n64(nullptr, At<kpack_f16>(0x100000), 130, 200, 208) == KPACK_SUCCESS);
  REQUIRE(seen.params == 6);
  REQUIRE(seen.scratch[0] != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(seen.scratch[0]) % 128 == 0);
  CHECK(seen.scratch[1] == nullptr);  // no profile scratch
  fake_cuda_allocation a{};
  REQUIRE(fake->allocation(reinterpret_cast<uintptr_t>(seen.scratch[0]), &a) == 1);
  CHECK(a.async == 1);
  CHECK(a.stream == nullptr);
  CHECK(a.size >= 12 * 128);
  uint64_t bytes = 0, workspaces = 0;
  REQUIRE(kpack_workspace_usage(&bytes, &workspaces) == KPACK_SUCCESS);
  CHECK(workspaces == 1);
  CHECK(bytes == a.size);
  // The next launch reuses it; one cuCtxGetDevice a launch (the scratch
  // lookup hands its device to the launch).
  const unsigned long long allocs = fake.count("cuMemAllocAsync"), lookups = fake.count("cuCtxGetDevice");
  void* const first = seen.scratch[0];
  REQUIRE(tma_scratch_triton_f16_m64_n64(nullptr, At<kpack_f16>(0x100000), 130, 200, 208) == KPACK_SUCCESS);
  CHECK(seen.scratch[0] == first);
  CHECK(fake.count("cuMemAllocAsync") == allocs);
  CHECK(fake.count("cuCtxGetDevice") == lookups + 1);
  // An empty grid asks for no scratch and launches nothing.
  REQUIRE(tma_scratch_triton_f16_m64_n64(nullptr, At<kpack_f16>(0x100000), 0, 200, 208) == KPACK_SUCCESS);
  CHECK(fake.count("cuMemAllocAsync") == allocs);
  // A caller's workspace that is too small: the status, nothing launched.
  void* const stream = fake->stream(1);
  REQUIRE(kpack_workspace_set(static_cast<kpack_stream>(stream), At<void>(0x7000000), 1024) == KPACK_SUCCESS);
  const unsigned long long launches = fake.count("cuLaunchKernel");
  CHECK(tma_scratch_triton_f16_m64_n64(static_cast<kpack_stream>(stream), At<kpack_f16>(0x100000), 130, 200, 208) ==
        KPACK_ERROR_WORKSPACE_TOO_SMALL);
  CHECK(detail().find("scratch_triton_f16_m64_n64: needs 1536 bytes of scratch; the caller's workspace for stream ") ==
        0);
  CHECK(fake.count("cuLaunchKernel") == launches);
}

TEST_CASE("a call TMA cannot take fails with the value named and launches nothing", "[generated]") {
  FakeDriver fake;
  Hopper(fake);
  const int64_t shape[2] = {100, 300}, strides[2] = {320, 1}, odd[2] = {321, 1};
  CHECK(tma_copy_triton_bf16_m64_n128_add_one_w4_ctas1(nullptr, At<const kpack_bf16>(0x100008), shape, strides,
                                                        At<kpack_bf16>(0x200000), shape, strides, 100,
                                                        300) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "copy_triton_bf16_m64_n128_add_one_w4_ctas1: src: base 0x100008 is not 16-byte aligned (TMA "
                    "needs 16)");
  CHECK(tma_copy_triton_bf16_m64_n128_add_one_w4_ctas1(nullptr, At<const kpack_bf16>(0x100000), shape, strides,
                                                        At<kpack_bf16>(0x200000), shape, odd, 100,
                                                        300) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "copy_triton_bf16_m64_n128_add_one_w4_ctas1: dst: strides[0] = 321 elements of 2 bytes is 642 "
                    "bytes, not a multiple of 16 (TMA needs 16)");
  CHECK(fake.count("cuLaunchKernel") == 0);
  CHECK(fake.count("cuLaunchKernelEx") == 0);
}

TEST_CASE("a CUDA launcher encodes the manifest's box and swizzle and passes the map alone", "[generated]") {
  FakeDriver fake;
  Hopper(fake);
  const int64_t shape[2] = {100, 304}, strides[2] = {304, 1};
  REQUIRE(tma_copy_cuda_f32_m32_n64(nullptr, At<const float>(0x100000), shape, strides, At<float>(0x200000), 100,
                                    304) == KPACK_SUCCESS);
  fake_cuda_tensor_map_call tm{};
  REQUIRE(fake->last_tensor_map(&tm) == 1);
  CHECK(tm.data_type == 7);  // FLOAT32
  CHECK((tm.dims[0] == 304 && tm.dims[1] == 100));
  CHECK((tm.box[0] == 64 && tm.box[1] == 32));
  CHECK(tm.swizzle == 0);
  fake_cuda_launch l = Last(fake);
  CHECK(l.num_params == 4);
  CHECK((l.grid[0] == 4 && l.grid[1] == 5));  // cdiv(100, 32), cdiv(304, 64)
  CHECK(l.block[0] == 128);
}
