// On a real GPU: launches that need more than the default 48 KiB of dynamic
// shared memory.  The kpack runtime raises the kernel's limit on the device
// (cuKernelSetAttribute) before such a launch; this checks, with the
// driver itself, that
//   - launches at 16 KiB, 64 KiB, 192 KiB and the device's opt-in maximum
//     compute the right result (the smem_reverse kernel stages a whole tile
//     in shared memory, so a launch without that much would fail or be
//     wrong), the larger ones raising the limit again, the first of them
//     before the module is loaded into the context;
//   - a request above the device's maximum is refused with
//     KPACK_ERROR_INVALID_ARGUMENT and the driver's CUDA_ERROR_INVALID_VALUE
//     kept, writing nothing, and a smaller launch afterwards still works;
//   - a smaller launch after a larger one needs no new raise and is right.
// Every output is poisoned before its launch and compared element by
// element with the CPU's reverse of fresh random input.  Exit 77 without a
// GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gsmem.h"

namespace {

int g_passed = 0, g_failed = 0;

void report(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  (ok ? g_passed : g_failed)++;
}

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("FAIL %s: %s\n", what, cudaGetErrorString(e));
  g_failed++;
  return false;
}

// Launches smem_reverse over n floats with `tile` per block and checks the
// result against the CPU, or (expect != KPACK_SUCCESS) that the launch is
// refused with `expect` and leaves the output untouched.
void check(const char* label, int64_t n, int32_t tile, kpack_status expect, int expect_cu = 0) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (float& v : in) v = dist(rng);
  float *d_in = nullptr, *d_out = nullptr;
  if (!cuda_ok(cudaMalloc(&d_in, n * sizeof(float)), "cudaMalloc") ||
      !cuda_ok(cudaMalloc(&d_out, n * sizeof(float)), "cudaMalloc")) {
    return;
  }
  cuda_ok(cudaMemcpy(d_in, in.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy in");
  cuda_ok(cudaMemset(d_out, 0xff, n * sizeof(float)), "cudaMemset poison");  // NaN everywhere
  const kpack_status st = gsmem_smem_reverse_f32(nullptr, d_in, d_out, n, tile);
  const int cu = kpack_last_cu_result();
  const std::string detail = st == KPACK_SUCCESS ? "" : kpack_last_error_detail();
  const cudaError_t sync = cudaDeviceSynchronize();
  cuda_ok(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy out");
  const std::string what = std::string(label) + " (tile " + std::to_string(tile) + " floats, " +
                           std::to_string(tile * sizeof(float)) + " bytes of dynamic shared memory)";
  if (expect == KPACK_SUCCESS) {
    int64_t bad = 0;
    for (int64_t base = 0; base < n; base += tile) {
      const int64_t len = n - base < tile ? n - base : tile;
      for (int64_t i = 0; i < len; ++i) {
        uint32_t want, got;
        std::memcpy(&want, &in[static_cast<size_t>(base + len - 1 - i)], 4);
        std::memcpy(&got, &out[static_cast<size_t>(base + i)], 4);
        bad += want != got;
      }
    }
    report(st == KPACK_SUCCESS && sync == cudaSuccess && bad == 0,
           what + ": " + kpack_status_name(st) + ", sync " + cudaGetErrorName(sync) + ", " +
               std::to_string(bad) + " of " + std::to_string(n) + " elements wrong");
  } else {
    uint32_t poison = 0xffffffffu;
    int64_t touched = 0;
    for (const float& v : out) touched += std::memcmp(&v, &poison, 4) != 0;
    report(st == expect && cu == expect_cu && sync == cudaSuccess && touched == 0 &&
               detail.find("cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES") != std::string::npos,
           what + ": " + kpack_status_name(st) + " (want " + kpack_status_name(expect) + "), CUresult " +
               std::to_string(cu) + " (want " + std::to_string(expect_cu) + "), " + std::to_string(touched) +
               " elements written, detail \"" + detail + "\"");
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("smem_check: no CUDA device, skipped\n");
    return 77;
  }
  cudaDeviceProp prop;
  if (!cuda_ok(cudaSetDevice(0), "cudaSetDevice") || !cuda_ok(cudaFree(nullptr), "cudaFree(0)") ||
      !cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) {
    return 1;
  }
  int optin = 0;
  cuda_ok(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "opt-in attribute");
  std::printf("device sm_%d%d: %s, %d bytes of shared memory per block opt-in\n", prop.major, prop.minor,
              prop.name, optin);
  const int32_t max_tile = optin / 4;
  // 64 KiB first: the limit is raised before the module is in the context.
  check("above 48 KiB, the kernel's first launch", 1000003, 16384, KPACK_SUCCESS);
  check("at 48 KiB and below, no raise needed", 1000003, 4096, KPACK_SUCCESS);
  check("192 KiB, the limit raised again", 3000017, 49152, KPACK_SUCCESS);
  check("the device's opt-in maximum", 3000017, max_tile, KPACK_SUCCESS);
  check("one float more than the maximum", 3000017, max_tile + 1, KPACK_ERROR_INVALID_ARGUMENT,
        /*CUDA_ERROR_INVALID_VALUE*/ 1);
  check("64 KiB again after the refusal", 1000003, 16384, KPACK_SUCCESS);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
