/* The plain-Make engine's program: its own package (vec), through the
 * generated header.  Needs no GPU: it lists what the library holds and
 * shows the dispatcher refusing a type that was not built. */
#include <stdio.h>

#include "vec.h"

int main(void) {
  kpack_build_info build;
  kpack_spec_info info;
  kpack_status st = vec_build_info(&build);
  if (st != KPACK_SUCCESS) {
    printf("vec_build_info: %s: %s\n", kpack_status_name(st), kpack_last_error_detail());
    return 1;
  }
  printf("package %s, kpack %s, ABI %d, %s, %zu specializations\n", build.package, build.kpack_version,
         build.abi_version, build.build_mode, build.num_specializations);
  for (size_t i = 0; i < vec_num_specializations(); ++i) {
    if (vec_specialization_info(i, &info) != KPACK_SUCCESS) return 1;
    printf("%s: %s, %s, %llu bytes\n", info.name, info.archs, info.build_mode,
           (unsigned long long)info.fatbin_size);
  }
  st = vec_clamp(NULL, KPACK_DTYPE_BF16, NULL, NULL, -1.0f, 1.0f, 16);
  printf("%s: %s\n", kpack_status_name(st), kpack_last_error_detail());
  return st == KPACK_ERROR_NO_SPECIALIZATION ? 0 : 1;
}
