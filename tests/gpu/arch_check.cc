// On a real GPU: a library whose archs include the device's runs, and one
// built without them (meson -Darchs=sm_80, run on an sm_90 device) fails
// with KPACK_ERROR_NO_BINARY_FOR_DEVICE naming the device's sm and the archs
// that were built, and never JIT-compiles.  Exit 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "kernels.h"

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("arch_check: no CUDA device, skipped\n");
    return 77;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  cudaSetDevice(0);
  cudaFree(nullptr);  // makes the primary context current
  int sm = prop.major * 10 + prop.minor;

  kpack_spec_info info;
  kernels_specialization_info(0, &info);
  // Plain SASS runs on the same major at an equal or higher minor.
  bool compatible = false;
  for (const char* p = std::strstr(info.archs, "sm_"); p; p = std::strstr(p + 3, "sm_")) {
    int built = std::atoi(p + 3);
    const char* end = p + 3;
    while (*end >= '0' && *end <= '9') ++end;
    bool exact_only = *end == 'a' || *end == 'f';
    if (exact_only ? built == sm : (built / 10 == sm / 10 && built <= sm)) compatible = true;
  }

  float* buf = nullptr;
  cudaMalloc(&buf, 3 * 1024 * sizeof(float));
  kpack_status st = kernels_vector_add(nullptr, KPACK_DTYPE_F32, kernels_vector_add_configs[0].BLOCK, buf,
                                       buf + 1024, buf + 2048, 1024);
  cudaError_t sync = cudaDeviceSynchronize();
  std::printf("device sm_%d, library %s: %s, detail \"%s\", sync %s\n", sm, info.archs, kpack_status_name(st),
              kpack_last_error_detail(), cudaGetErrorName(sync));
  bool ok;
  if (compatible) {
    ok = st == KPACK_SUCCESS && sync == cudaSuccess;
  } else {
    std::string expected = "device 0 is sm_" + std::to_string(sm) + "; this library has SASS for " + info.archs +
                           " and no PTX";
    ok = st == KPACK_ERROR_NO_BINARY_FOR_DEVICE && std::strstr(kpack_last_error_detail(), expected.c_str());
  }
  cudaFree(buf);
  std::printf("%s\n%d passed, %d failed\n", ok ? "PASS arch_check" : "FAIL arch_check", ok ? 1 : 0, ok ? 0 : 1);
  return ok ? 0 : 1;
}
