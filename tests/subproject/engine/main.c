/* The engine's program: its own package, through the generated header. */
#include <stdio.h>
#include <string.h>

#include "engine.h"

int main(void) {
  kpack_build_info build;
  kpack_spec_info info;
  kpack_status st = engine_build_info(&build);
  if (st != KPACK_SUCCESS) {
    printf("engine_build_info: %s: %s\n", kpack_status_name(st), kpack_last_error_detail());
    return 1;
  }
  printf("package %s, kpack %s, ABI %d, %s, %zu specializations\n", build.package, build.kpack_version,
         build.abi_version, build.build_mode, build.num_specializations);
  for (size_t i = 0; i < engine_num_specializations(); ++i) {
    if (engine_specialization_info(i, &info) != KPACK_SUCCESS) return 1;
    printf("%s: %s, %s, %llu bytes\n", info.name, info.archs, info.build_mode,
           (unsigned long long)info.fatbin_size);
  }
  /* No GPU needed to see the dispatcher refuse what was not built. */
  st = engine_scale(NULL, KPACK_DTYPE_BF16, NULL, NULL, 2.0f, 16);
  printf("%s: %s\n", kpack_status_name(st), kpack_last_error_detail());
  return st == KPACK_ERROR_NO_SPECIALIZATION ? 0 : 1;
}
