// Tests of runtime/driver.c: finding libcuda.so.1, resolving its entry
// points and initializing CUDA, with the fake driver standing in.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <string>

using kpack_test::detail;
using kpack_test::FakeDriver;

namespace {

// A launch of vector_add (4 parameters) with one block.
kpack_status launch_vector_add() {
  static float x, y, out;
  static long long n = 1;
  static void *px = &x, *py = &y, *pout = &out;
  static void *args[] = {&px, &py, &pout, &n};
  return fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 1, 1, 0, args);
}

} // namespace

TEST_CASE("a missing driver library is KPACK_ERROR_DRIVER_NOT_FOUND", "[driver]") {
  FakeDriver fake;
  fx_set_driver_path("/nonexistent/libcuda.so.1");
  CHECK(launch_vector_add() == KPACK_ERROR_DRIVER_NOT_FOUND);
  CHECK(detail() ==
        "/nonexistent/libcuda.so.1 could not be loaded (/nonexistent/libcuda.so.1: cannot open "
        "shared object file: No such file or directory); an NVIDIA driver is needed to launch "
        "kernels");
  CHECK(kpack_last_cu_result() == 0);

  SECTION("the failure is not latched: later calls try again") {
    CHECK(launch_vector_add() == KPACK_ERROR_DRIVER_NOT_FOUND);
    fx_set_driver_path(kpack_test::fake_path().c_str());
    CHECK(launch_vector_add() == KPACK_SUCCESS);
    CHECK(fake.count("cuInit") == 1);
    CHECK(fake.count("cuLaunchKernel") == 1);
  }
}

TEST_CASE("without a test path the runtime loads libcuda.so.1", "[driver]") {
  FakeDriver fake;
  fx_set_driver_path(nullptr);
  const kpack_status status = launch_vector_add();
  if (status == KPACK_ERROR_DRIVER_NOT_FOUND) {
    // No NVIDIA driver on this machine (the usual case for this test).
    CHECK(detail().rfind("libcuda.so.1 could not be loaded (", 0) == 0);
  } else {
    // A real driver was found; this thread has no context, or no device.
    CHECK((status == KPACK_ERROR_NO_CONTEXT || status == KPACK_ERROR_NO_DEVICE));
  }
  CHECK(fake.count("cuInit") == 0); // the fake was not used
}

TEST_CASE("a driver without the CUDA 12 library API is KPACK_ERROR_DRIVER_TOO_OLD", "[driver]") {
  FakeDriver fake;
  const std::string old_path = kpack_test::env_path("FAKE_CUDA_OLD_PATH");
  REQUIRE_FALSE(old_path.empty());
  fx_set_driver_path(old_path.c_str());
  CHECK(launch_vector_add() == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(detail() == old_path +
                        " has no cuLibraryLoadData: the NVIDIA driver is too old; kpack needs a "
                        "driver for CUDA 12.0 or newer");
}

TEST_CASE("a failing cuInit is KPACK_ERROR_NO_DEVICE, and is retried", "[driver]") {
  FakeDriver fake;
  REQUIRE(fake->fail_next("cuInit", 100) == 0); // CUDA_ERROR_NO_DEVICE
  CHECK(launch_vector_add() == KPACK_ERROR_NO_DEVICE);
  CHECK(kpack_last_cu_result() == 100);
  CHECK(detail() == "cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)");
  CHECK(fake.count("cuLibraryLoadData") == 0);

  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 2);
}

TEST_CASE("the driver is opened and initialized once for many launches", "[driver]") {
  FakeDriver fake;
  for (int i = 0; i < 10; ++i) {
    REQUIRE(launch_vector_add() == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuInit") == 1);
  CHECK(fake.count("cuLaunchKernel") == 10);
}
