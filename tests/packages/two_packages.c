/*
 * Two kpack packages with different prefixes (alpha, beta), both with a
 * kernel named `scale` and each archive carrying its own copy of the
 * runtime, link into one program and work there: each launch reaches its
 * own package's fatbin and symbol, and each reports its own build mode.
 * The driver is the fake (argv[1]), which accepts kpack's real fatbins.
 */
#include <stdio.h>
#include <string.h>

#include "alpha.h"
#include "beta.h"
#include "fake_cuda.h"
#include "kpack_internal.h" /* kpack_set_driver_path_for_testing */

static int failures;

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("FAILED: %s (last detail: %s)\n", what, kpack_last_error_detail());
    ++failures;
  }
}

int main(int argc, char **argv) {
  fake_cuda_api fake;
  fake_cuda_launch launch;
  kpack_build_info a, b;
  kpack_spec_info info;
  void *handle;
  float xf[4] = {0}, of[4];
  kpack_f16 xh[4] = {{0}}, oh[4];

  if (argc != 2 || (handle = dlopen(argv[1], RTLD_NOW)) == NULL || fake_cuda_bind(&fake, handle) != 0) {
    printf("usage: two_packages LIBFAKECUDA.so\n");
    return 1;
  }
  kpack_set_driver_path_for_testing(argv[1]);
  fake.reset();

  expect(alpha_build_info(&a) == KPACK_SUCCESS, "alpha_build_info");
  expect(beta_build_info(&b) == KPACK_SUCCESS, "beta_build_info");
  expect(strcmp(a.package, "alpha") == 0 && strcmp(b.package, "beta") == 0, "each names its package");
  expect(strcmp(a.build_mode, "release") == 0 && a.num_debug_specializations == 0, "alpha is a release build");
  expect(strcmp(b.build_mode, "debug") == 0 && b.num_debug_specializations == 1, "beta is a debug build");
  expect(a.abi_version == kpack_abi_version() && b.abi_version == kpack_abi_version(), "both match the runtime ABI");
  expect(alpha_num_specializations() == 2 && beta_num_specializations() == 1, "specialization counts");
  expect(beta_specialization_info(0, &info) == KPACK_SUCCESS && strcmp(info.name, "scale_f16") == 0 &&
             strcmp(info.build_mode, "debug") == 0, "beta's scale_f16 records its debug mode");
  expect(alpha_specialization_info(1, &info) == KPACK_SUCCESS && strcmp(info.name, "scale_f16") == 0 &&
             strcmp(info.build_mode, "release") == 0, "alpha's scale_f16 is a release build");

  expect(alpha_scale(NULL, KPACK_DTYPE_F32, xf, of, 2.0f, 1000) == KPACK_SUCCESS, "alpha_scale f32 launches");
  expect(fake.last_launch(&launch) && strcmp(launch.entry, "kpack_alpha_scale_f32") == 0 &&
             launch.grid[0] == 4 && launch.block[0] == 256, "alpha's launch reaches alpha's kernel");
  expect(beta_scale(NULL, KPACK_DTYPE_F16, xh, oh, 2.0f, 1000) == KPACK_SUCCESS, "beta_scale f16 launches");
  expect(fake.last_launch(&launch) && strcmp(launch.entry, "kpack_beta_scale_f16") == 0 &&
             launch.grid[0] == 8 && launch.block[0] == 128, "beta's launch reaches beta's kernel");
  expect(alpha_scale_f16(NULL, xh, oh, 2.0f, 1000) == KPACK_SUCCESS, "alpha_scale_f16 launches");
  expect(fake.last_launch(&launch) && strcmp(launch.entry, "kpack_alpha_scale_f16") == 0,
         "same kernel name, same dtype, other package: its own symbol");
  /* alpha's two specializations were compiled in one batch and share its
     fatbin's library: one for alpha, one for beta. */
  expect(fake.count("cuLibraryLoadData") == 2, "one library per launched fatbin");
  expect(beta_scale(NULL, KPACK_DTYPE_F32, xf, of, 2.0f, 16) == KPACK_ERROR_NO_SPECIALIZATION,
         "beta did not build f32, whatever alpha has");
  expect(kpack_unload_all() == KPACK_SUCCESS && fake.live_libraries() == 0, "both packages unload");

  printf("%s\n", failures ? "two packages: FAILED" : "two packages: ok");
  return failures ? 1 : 0;
}
