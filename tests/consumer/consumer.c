/*
 * A C99 consumer of libkernels.a, built with -std=c99 -Wall -Wextra -Werror
 * -pedantic and linked without libcuda.  On a machine without a driver every
 * launch must fail cleanly with KPACK_ERROR_DRIVER_NOT_FOUND; everything that
 * needs no driver (dispatch misses, enumeration, argument checks, status
 * names) must work exactly.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

int main(void) {
  size_t i, n = kernels_num_specializations();
  kpack_spec_info info;
  kpack_status st;

  expect(n >= 10, "the bundled package has specializations");
  for (i = 0; i < n; ++i) {
    st = kernels_specialization_info(i, &info);
    expect(st == KPACK_SUCCESS, "specialization_info succeeds");
    expect(info.fatbin_size > 0, "every fatbin is embedded");
    /* Triton builds Hopper as arch-specific SASS, as its own JIT does. */
    expect(strcmp(info.archs, strstr(info.kernel, "_triton") ? "sm_80,sm_90a" : "sm_80,sm_90") == 0,
           "bundled kernels are built for sm_80 and sm_90");
    expect(strcmp(info.ptx_archs, "") == 0, "no PTX by default");
    expect(strcmp(info.build_mode, "release") == 0, "release build");
  }
  st = kernels_specialization_info(n, &info);
  expect(st == KPACK_ERROR_INVALID_ARGUMENT, "index out of range is rejected");

  /* A specialization that was not built: no driver is touched. */
  st = kernels_vector_add(NULL, KPACK_DTYPE_F64, 256, NULL, NULL, NULL, 16);
  expect(st == KPACK_ERROR_NO_SPECIALIZATION, "f64 vector_add was not built");
  expect(strstr(kpack_last_error_detail(), "vector_add: no specialization T=f64 BLOCK=256; built: ") != NULL,
         "the detail names the request and lists what was built");
  printf("dispatch miss: %s: %s\n", kpack_status_name(st), kpack_last_error_detail());

  /* An empty launch succeeds without touching the driver. */
  st = kernels_vector_add(NULL, kernels_vector_add_configs[0].T, kernels_vector_add_configs[0].BLOCK, NULL, NULL,
                          NULL, 0);
  expect(st == KPACK_SUCCESS, "n = 0 launches nothing");

  /* divisibility: auto is no promise: a misaligned pointer picks the
     unhinted build instead of being refused, so the call reaches the driver
     (and, without one, says so).  tests/runtime/generated_launch_test.cc
     covers divisibility: 16, which is refused. */
  st = kernels_vector_add_triton_f32_b2048_w4(NULL, (const float *)16, (const float *)20, (float *)32, 1024);
  expect(st != KPACK_ERROR_INVALID_ARGUMENT, "a misaligned pointer is not refused (divisibility: auto)");
  expect(strstr(kpack_last_error_detail(), "must be 16-byte aligned") == NULL,
         "no divisibility promise in the detail");

  /* A real launch: without a driver it must say so, never crash. */
  st = kernels_vector_add(NULL, kernels_vector_add_configs[0].T, kernels_vector_add_configs[0].BLOCK, NULL, NULL,
                          NULL, 1024);
  printf("launch without a GPU: %s (%s): %s\n", kpack_status_name(st), kpack_status_message(st),
         kpack_last_error_detail());
  expect(st == KPACK_ERROR_DRIVER_NOT_FOUND || st == KPACK_ERROR_NO_DEVICE || st == KPACK_ERROR_NO_CONTEXT,
         "a launch without a usable driver fails with a clear status");

  expect(kpack_version_number() == KPACK_VERSION_NUMBER, "runtime and header versions agree");
  expect(KERNELS_KPACK_ABI_VERSION == KPACK_ABI_VERSION, "generated ABI matches the runtime header");
  printf("%s\n", failures ? "consumer: FAILED" : "consumer: ok");
  return failures ? 1 : 0;
}
