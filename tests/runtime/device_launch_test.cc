// The device package's generated launchers (tests/compiler/golden/dk_launch.c)
// against the fake driver: launch expressions that read device attributes
// (fetched once per launch, before the geometry, and from the driver once
// per device), the C helpers of floordiv, floormod, gcd, log2 and next_pow2
// against Python's values, and short-circuiting &&, || and ?: in C.
#include <cuda.h>

#include <cstdint>
#include <string>

#include "../compiler/expr_python_values.h"
#include "dk.h"
#include "test_env.h"

using kpack_test::detail;
using kpack_test::FakeDriver;

namespace {

const float* X() { return reinterpret_cast<const float*>(0x10000); }

// The calling thread's last launch; REQUIREs one.
fake_cuda_launch Last(const FakeDriver& fake) {
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return l;
}

// The op code of the check kernel's grid.x for a function.
int32_t Op(const std::string& function) {
  if (function == "floordiv") return 0;
  if (function == "floormod") return 1;
  if (function == "gcd") return 2;
  if (function == "log2") return 3;
  return 4;  // next_pow2
}

}  // namespace

TEST_CASE("a launcher sizes its grid, block and shared memory from the device's attributes",
          "[generated]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(1, 9, 0);
  fake->set_device_attribute(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132);
  fake->set_device_attribute(1, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 << 20);

  // Device 0, an A100 by default: grid.x = min(cdiv(n, 128), 108 * 2).
  REQUIRE(dk_persistent_b128(nullptr, X(), 1000) == KPACK_SUCCESS);
  fake_cuda_launch l = Last(fake);
  CHECK((l.grid[0] == 8 && l.grid[1] == 1 && l.grid[2] == 1));
  CHECK(l.block[0] == 128);
  CHECK(l.smem == 1024);
  // device.num_sms once, device.sm (major, minor) once: 3 reads.
  CHECK(fake.count("cuDeviceGetAttribute") == 3);
  REQUIRE(dk_persistent_b128(nullptr, X(), 1000000) == KPACK_SUCCESS);
  CHECK(Last(fake).grid[0] == 216);
  CHECK(fake.count("cuDeviceGetAttribute") == 3);

  // b256 also reads the L2 size (40 MiB: grid.z 2) and the opt-in shared
  // memory, which it asks for whole (above 48 KiB: the limit is raised).
  REQUIRE(dk_persistent(nullptr, 256, X(), 1000000) == KPACK_SUCCESS);
  l = Last(fake);
  CHECK((l.grid[0] == 216 && l.grid[1] == 1 && l.grid[2] == 2));
  CHECK(l.smem == 227 * 1024);
  CHECK(fake.count("cuDeviceGetAttribute") == 5);
  CHECK(fake.count("cuKernelSetAttribute") == 1);

  // Device 1, an H100-like one: 132 SMs, sm_90 (grid.y 2), 50 MiB of L2 (3).
  fake->set_current_device(1);
  REQUIRE(dk_persistent_b256(nullptr, X(), 1000000) == KPACK_SUCCESS);
  l = Last(fake);
  CHECK((l.grid[0] == 264 && l.grid[1] == 2 && l.grid[2] == 3));
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 1) == 5);
}

TEST_CASE("a launcher returns the status of a device attribute it cannot read, launching nothing",
          "[generated]") {
  FakeDriver fake;
  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE) == 0);
  CHECK(dk_persistent_b128(nullptr, X(), 1000) == KPACK_ERROR_DRIVER);
  CHECK(kpack_last_cu_result() == CUDA_ERROR_INVALID_VALUE);
  CHECK(detail() ==
        "persistent_b128: device.num_sms: cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) on device 0 "
        "failed: CUDA_ERROR_INVALID_VALUE (1)");
  CHECK(fake.count("cuLaunchKernel") == 0);

  fake->set_current_device(-1);
  CHECK(dk_persistent_b128(nullptr, X(), 1000) == KPACK_ERROR_NO_CONTEXT);
  CHECK(fake.count("cuLaunchKernel") == 0);

  // An empty problem still reads the attributes its geometry needs, then
  // launches nothing.
  fake->set_current_device(0);
  CHECK(dk_persistent_b128(nullptr, X(), 0) == KPACK_SUCCESS);
  CHECK(fake.count("cuLaunchKernel") == 0);
  CHECK(fake.count("cuDeviceGetAttribute") == 4);  // the failed read and 3
}

TEST_CASE("the generated floordiv, floormod, gcd, log2 and next_pow2 give Python's values",
          "[generated]") {
  FakeDriver fake;
  for (const kpack_test::PythonCase& c : kpack_test::kPythonCases) {
    INFO(c.function << "(" << c.a << ", " << c.b << ")");
    if (!c.expected) {
      // Division by zero, log2 of x <= 0 or a result beyond int64.
      CHECK(dk_check_v1(nullptr, Op(c.function), c.a, c.b, 0, false) ==
            KPACK_ERROR_INVALID_ARGUMENT);
      CHECK(detail() == "check_v1: the launch geometry overflows 64 bits or divides by zero");
      continue;
    }
    REQUIRE(dk_check_v1(nullptr, Op(c.function), c.a, c.b, *c.expected, false) == KPACK_SUCCESS);
    CHECK(Last(fake).grid[0] == 1);
    REQUIRE(dk_check_v1(nullptr, Op(c.function), c.a, c.b, *c.expected ^ 1, false) ==
            KPACK_SUCCESS);
    CHECK(Last(fake).grid[0] == 2);
  }
}

TEST_CASE("generated &&, || and ?: evaluate only the operands they need", "[generated]") {
  FakeDriver fake;
  // grid.y = b > 0 && a / b > 0 || flag ? 3 : 4; grid.z = !flag + min(a > 0, b > 0, 1) + 1.
  // b == 0: a / b is never evaluated, so it sets no error.
  REQUIRE(dk_check_v1(nullptr, 4, 5, 0, 8, false) == KPACK_SUCCESS);
  fake_cuda_launch l = Last(fake);
  CHECK((l.grid[0] == 1 && l.grid[1] == 4 && l.grid[2] == 2));
  REQUIRE(dk_check_v1(nullptr, 4, 5, 0, 8, true) == KPACK_SUCCESS);
  l = Last(fake);
  CHECK((l.grid[1] == 3 && l.grid[2] == 1));
  REQUIRE(dk_check_v1(nullptr, 4, 5, 2, 8, false) == KPACK_SUCCESS);
  l = Last(fake);
  CHECK((l.grid[1] == 3 && l.grid[2] == 3));
  REQUIRE(dk_check_v1(nullptr, 4, -5, 2, 0, false) == KPACK_SUCCESS);
  l = Last(fake);
  CHECK((l.grid[0] == 1 && l.grid[1] == 4 && l.grid[2] == 2));
  // op 4 evaluates next_pow2(a) only: floordiv(a, 0) of op 0 sets nothing.
  REQUIRE(dk_check_v1(nullptr, 4, 3, 0, 4, false) == KPACK_SUCCESS);
  CHECK(Last(fake).grid[0] == 1);
  CHECK(dk_check_v1(nullptr, 0, 3, 0, 4, false) == KPACK_ERROR_INVALID_ARGUMENT);
}
