// The CMake engine's program: its two packages, linalg (CUDA) and activ
// (Triton), each a library that kpack_add_package made with its own copy of
// the runtime, launch through the fake driver (argv[1]; tests/fake_cuda),
// which accepts the real fatbins kpack built and records each launch: the
// kernel, the grid and block, and (in the launch hook, while they are alive)
// the arguments.  Prints each package's specializations for the script.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "activations.h"  // HEADER activations.h in CMakeLists.txt
#include "fake_cuda.h"
#include "linalg.h"

// The runtime's seam for tests (kpack_internal.h, which is not public).
extern "C" void kpack_set_driver_path_for_testing(const char *path);

namespace {

int failures = 0;

void expect(bool ok, const char *what) {
  if (!ok) {
    std::printf("FAILED: %s (last detail: %s)\n", what, kpack_last_error_detail());
    ++failures;
  }
}

// The arguments of the last launch, read through the kernelParams array the
// launcher built (a real fatbin's parameter count is not modelled, so the
// fake records only the array).  axpy: a, x, y, n; leaky_relu: x, out, n,
// slope, and Triton's two scratch pointers.
struct Args {
  float f32;
  const void *p0, *p1;
  int64_t i64;
  int32_t i32;
  float slope;
  const void *scratch0, *scratch1;
} args;
bool linalg_args = true;

void record(const fake_cuda_launch *launch) {
  std::memset(&args, 0, sizeof args);
  if (linalg_args) {
    std::memcpy(&args.f32, launch->params[0], sizeof(float));
    std::memcpy(&args.p0, launch->params[1], sizeof(void *));
    std::memcpy(&args.p1, launch->params[2], sizeof(void *));
    std::memcpy(&args.i64, launch->params[3], sizeof(int64_t));
  } else {
    std::memcpy(&args.p0, launch->params[0], sizeof(void *));
    std::memcpy(&args.p1, launch->params[1], sizeof(void *));
    std::memcpy(&args.i32, launch->params[2], sizeof(int32_t));
    std::memcpy(&args.slope, launch->params[3], sizeof(float));
    std::memcpy(&args.scratch0, launch->params[4], sizeof(void *));
    std::memcpy(&args.scratch1, launch->params[5], sizeof(void *));
  }
}

bool launched(const fake_cuda_api &fake, const char *entry, unsigned grid, unsigned block) {
  fake_cuda_launch launch;
  return fake.last_launch(&launch) && std::strcmp(launch.entry, entry) == 0 && launch.grid[0] == grid &&
         launch.grid[1] == 1 && launch.grid[2] == 1 && launch.block[0] == block && launch.block[1] == 1 &&
         launch.block[2] == 1 && launch.smem == 0;
}

}  // namespace

int main(int argc, char **argv) {
  fake_cuda_api fake;
  void *handle;
  if (argc != 2 || (handle = dlopen(argv[1], RTLD_NOW)) == nullptr || fake_cuda_bind(&fake, handle) != 0) {
    std::printf("usage: engine_test LIBFAKECUDA.so\n");
    return 1;
  }
  kpack_set_driver_path_for_testing(argv[1]);
  fake.reset();
  fake.set_launch_hook(record);

  // Device memory is never touched: the fake only records the pointers.
  const void *x = reinterpret_cast<const void *>(uintptr_t{0x10000});
  void *y = reinterpret_cast<void *>(uintptr_t{0x20000});

  kpack_build_info info;
  expect(linalg_build_info(&info) == KPACK_SUCCESS && std::strcmp(info.package, "linalg") == 0 &&
             std::strcmp(info.build_mode, "release") == 0, "linalg_build_info");
  std::printf("linalg: %zu specializations\n", linalg_num_specializations());
  expect(activ_build_info(&info) == KPACK_SUCCESS && std::strcmp(info.package, "activ") == 0,
         "activ_build_info");
  std::printf("activ: %zu specializations\n", activ_num_specializations());

  // CUDA: the dispatcher and a typed launcher, grid cdiv(n, 128 * ITEMS).
  expect(linalg_axpy(nullptr, KPACK_DTYPE_F16, 4, 0.5f, x, y, 1000) == KPACK_SUCCESS, "linalg_axpy f16 4");
  expect(launched(fake, "kpack_linalg_axpy_f16_items4", 2, 128), "axpy f16 x4: kernel, grid 2, block 128");
  expect(args.f32 == 0.5f && args.p0 == x && args.p1 == y && args.i64 == 1000, "axpy f16 x4: a, x, y, n");
  expect(linalg_axpy_f32_items1(nullptr, -2.0f, static_cast<const float *>(x), static_cast<float *>(y),
                                int64_t{1} << 33) == KPACK_SUCCESS, "linalg_axpy_f32_items1");
  expect(launched(fake, "kpack_linalg_axpy_f32_items1", 1u << 26, 128), "axpy f32 x1: kernel, grid 2^26");
  expect(args.f32 == -2.0f && args.p0 == x && args.p1 == y && args.i64 == int64_t{1} << 33, "axpy f32 x1: args");
  expect(linalg_axpy(nullptr, KPACK_DTYPE_BF16, 1, 1.0f, x, y, 1) == KPACK_ERROR_NO_SPECIALIZATION,
         "bf16 was not built");
  std::printf("%s\n", kpack_last_error_detail());

  // Triton: block 32 x num_warps (4), grid cdiv(n, BLOCK).
  linalg_args = false;
  expect(activ_leaky_relu(nullptr, KPACK_DTYPE_F32, 1024, x, y, 5000, 0.125f) == KPACK_SUCCESS,
         "activ_leaky_relu 1024");
  expect(launched(fake, "leaky_relu", 5, 128), "leaky_relu b1024: kernel, grid 5, block 128");
  expect(args.p0 == x && args.p1 == y && args.i32 == 5000 && args.slope == 0.125f && args.scratch0 == nullptr &&
             args.scratch1 == nullptr, "leaky_relu b1024: x, out, n, slope, no scratch");
  expect(activ_leaky_relu_f32_b256(nullptr, static_cast<const float *>(x), static_cast<float *>(y), 257, 0.0f) ==
             KPACK_SUCCESS, "activ_leaky_relu_f32_b256");
  expect(launched(fake, "leaky_relu", 2, 128), "leaky_relu b256: grid 2");
  expect(args.i32 == 257 && args.slope == 0.0f, "leaky_relu b256: n, slope");

  // axpy's specializations share their batch's fatbin (one library);
  // each Triton specialization has its own.
  expect(fake.count("cuLibraryLoadData") == 3, "three libraries: axpy's batch and two leaky_relu builds");
  expect(kpack_unload_all() == KPACK_SUCCESS && fake.live_libraries() == 0, "both packages unload");

  std::printf("%s\n", failures ? "cmake engine: FAILED" : "cmake engine: ok");
  return failures ? 1 : 0;
}
