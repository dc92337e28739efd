// The generated header is valid C++ too (-std=c++17 -pedantic -Werror).
#include <cstdio>

#include "kernels.h"

int main() {
  kpack_status st = kernels_vector_add(nullptr, KPACK_DTYPE_F64, 1, nullptr, nullptr, nullptr, 1);
  std::printf("%s\n", kpack_status_name(st));
  return st == KPACK_ERROR_NO_SPECIALIZATION ? 0 : 1;
}
