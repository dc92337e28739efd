// kpack_device_attribute (runtime/kpack_runtime.c) against the fake driver:
// the values of each attribute, one driver read per device and attribute
// until kpack_unload_all, and its failures: a failing cuDeviceGetAttribute,
// no context, a device ordinal beyond KPACK_MAX_DEVICES, no driver, a
// driver without cuDeviceGetAttribute and bad arguments.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <string>
#include <thread>
#include <vector>

using kpack_test::detail;
using kpack_test::FakeDriver;

namespace {

// The attribute `which` of the current device, read as a launcher would;
// REQUIREs success.
int64_t attribute(int which) {
  int64_t value = -1;
  REQUIRE(fx_device_attribute("k_b128", which, &value) == KPACK_SUCCESS);
  return value;
}

} // namespace

TEST_CASE("device attributes are the driver's values for the current device", "[attr]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(1, 9, 0);
  fake->set_device_attribute(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132);
  fake->set_device_attribute(1, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 << 20);
  fake->set_max_smem_optin(232448);

  // Device 0: the fake's defaults, an A100's.
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 108);
  CHECK(attribute(FX_DEVICE_ATTR_SM) == 80);
  CHECK(attribute(FX_DEVICE_ATTR_MAX_SHARED_MEM) == 232448);
  CHECK(attribute(FX_DEVICE_ATTR_L2_BYTES) == 40 << 20);

  fake->set_current_device(1);
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 132);
  CHECK(attribute(FX_DEVICE_ATTR_SM) == 90);
  CHECK(attribute(FX_DEVICE_ATTR_MAX_SHARED_MEM) == 232448);
  CHECK(attribute(FX_DEVICE_ATTR_L2_BYTES) == 50 << 20);
}

TEST_CASE("each attribute of each device is read from the driver once until kpack_unload_all",
          "[attr]") {
  FakeDriver fake;
  fake->set_device_count(2);
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 108);
  CHECK(fake.count("cuDeviceGetAttribute") == 1);
  CHECK(attribute(FX_DEVICE_ATTR_SM) == 80); // major and minor
  CHECK(fake.count("cuDeviceGetAttribute") == 3);
  CHECK(attribute(FX_DEVICE_ATTR_MAX_SHARED_MEM) == 227 * 1024);
  CHECK(attribute(FX_DEVICE_ATTR_L2_BYTES) == 40 << 20);
  CHECK(fake.count("cuDeviceGetAttribute") == 5);

  // Cached: the driver is not asked again, so a changed value is not seen.
  const unsigned long long ctx_calls = fake.count("cuCtxGetDevice");
  fake->set_device_attribute(0, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 7);
  for (int which = 0; which < FX_DEVICE_ATTR_COUNT; ++which) {
    attribute(which);
  }
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 108);
  CHECK(fake.count("cuDeviceGetAttribute") == 5);
  // The device is the thread's, so each call asks which one it is.
  CHECK(fake.count("cuCtxGetDevice") == ctx_calls + 5);

  // Another device is another slot.
  fake->set_current_device(1);
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 108);
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 1) == 1);

  // kpack_unload_all forgets them with the driver.
  REQUIRE(kpack_unload_all() == KPACK_SUCCESS);
  fake->set_current_device(0);
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 7);
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 0) == 6);
}

TEST_CASE("device.sm shares the compute capability the arch check read", "[attr]") {
  FakeDriver fake;
  fake->set_compute_capability(0, 8, 6);
  CHECK(attribute(FX_DEVICE_ATTR_SM) == 86);
  CHECK(fake.count("cuDeviceGetAttribute") == 2);
  // A launch that fails on the device reads no compute capability again.
  REQUIRE(fake->fail_next("cuLibraryLoadData", CUDA_ERROR_INVALID_IMAGE) == 0);
  void *args[4] = {};
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 32, 1, 1, 0, args) == KPACK_ERROR_LOAD_FAILED);
  CHECK(fake.count("cuDeviceGetAttribute") == 2);
}

TEST_CASE("a failing cuDeviceGetAttribute is KPACK_ERROR_DRIVER naming the attribute", "[attr]") {
  FakeDriver fake;
  int64_t value = -1;
  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE) == 0);
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_NUM_SMS, &value) == KPACK_ERROR_DRIVER);
  CHECK(kpack_last_cu_result() == CUDA_ERROR_INVALID_VALUE);
  CHECK(detail() ==
        "k_b128: device.num_sms: cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) on device 0 "
        "failed: CUDA_ERROR_INVALID_VALUE (1)");
  CHECK(value == -1);

  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_UNKNOWN) == 0);
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_SM, &value) == KPACK_ERROR_DRIVER);
  CHECK(kpack_last_cu_result() == CUDA_ERROR_UNKNOWN);
  CHECK(detail() == "k_b128: device.sm: cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR/MINOR) on "
                    "device 0 failed: CUDA_ERROR_UNKNOWN (999)");

  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_INVALID_DEVICE) == 0);
  CHECK(fx_device_attribute(nullptr, FX_DEVICE_ATTR_L2_BYTES, &value) == KPACK_ERROR_DRIVER);
  CHECK(detail() ==
        "kpack_device_attribute: device.l2_bytes: cuDeviceGetAttribute(L2_CACHE_SIZE) on "
        "device 0 failed: CUDA_ERROR_INVALID_DEVICE (101)");

  REQUIRE(fake->fail_next("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE) == 0);
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_MAX_SHARED_MEM, &value) == KPACK_ERROR_DRIVER);
  CHECK(detail() ==
        "k_b128: device.max_shared_mem: cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) "
        "on device 0 failed: CUDA_ERROR_INVALID_VALUE (1)");

  // A failure is not cached: the next call asks again.
  CHECK(attribute(FX_DEVICE_ATTR_NUM_SMS) == 108);
  CHECK(attribute(FX_DEVICE_ATTR_SM) == 80);
}

TEST_CASE("device attributes fail like a launch without a context or beyond 64 devices", "[attr]") {
  FakeDriver fake;
  int64_t value = -1;
  fake->set_current_device(-1);
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_NUM_SMS, &value) == KPACK_ERROR_NO_CONTEXT);
  CHECK(kpack_last_cu_result() == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(detail() ==
        "k_b128: the calling thread has no current CUDA context (cuCtxGetDevice: "
        "CUDA_ERROR_INVALID_CONTEXT (201)); make one current first, e.g. with cudaSetDevice()");

  fake->set_device_count(80);
  fake->set_current_device(70);
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_NUM_SMS, &value) == KPACK_ERROR_INTERNAL);
  CHECK(detail() == "k_b128: device 70 is beyond the 64 devices kpack tracks (KPACK_MAX_DEVICES)");
  CHECK(fake.count("cuDeviceGetAttribute") == 0);
  CHECK(value == -1);
}

TEST_CASE("device attributes need a driver with cuDeviceGetAttribute", "[attr]") {
  FakeDriver fake;
  int64_t value = -1;
  fx_set_driver_path("/nonexistent/libcuda.so.1");
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_NUM_SMS, &value) ==
        KPACK_ERROR_DRIVER_NOT_FOUND);

  // The lean fake has only what loading the driver resolves.
  const std::string lean = kpack_test::env_path("FAKE_CUDA_LEAN_PATH");
  REQUIRE_FALSE(lean.empty());
  const fake_cuda_api *api = kpack_test::fake_api_at(lean);
  REQUIRE(api != nullptr);
  api->reset();
  api->set_initialized(1);
  fx_set_driver_path(lean.c_str());
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_SM, &value) == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(detail() == lean +
                        " has no cuDeviceGetAttribute: the NVIDIA driver is too old; kpack needs a "
                        "driver for CUDA 12.0 or newer");
  CHECK(value == -1);
}

TEST_CASE("an unknown attribute code or no place for the value is KPACK_ERROR_INVALID_ARGUMENT",
          "[attr]") {
  FakeDriver fake;
  int64_t value = -1;
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_COUNT, &value) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() ==
        "k_b128: kpack_device_attribute(4) needs a KPACK_DEVICE_ATTR_* code and a place "
        "for the value");
  CHECK(kpack_last_cu_result() == 0);
  CHECK(fx_device_attribute(nullptr, -1, &value) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() ==
        "kpack_device_attribute: kpack_device_attribute(-1) needs a KPACK_DEVICE_ATTR_* "
        "code and a place for the value");
  CHECK(fx_device_attribute("k_b128", FX_DEVICE_ATTR_SM, nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(value == -1);
  CHECK(fake.count("cuCtxGetDevice") == 0);
}

TEST_CASE("racing first reads of device attributes all see the driver's value", "[race]") {
  FakeDriver fake;
  fake->set_device_count(4);
  for (int dev = 0; dev < 4; ++dev) {
    fake->set_device_attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 100 + dev);
    fake->set_compute_capability(dev, 9, dev);
  }
  fake->set_initialized(1);
  constexpr int kThreads = 32;
  std::atomic<int> wrong{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      fake->set_current_device(t % 4);
      start.arrive_and_wait();
      for (int i = 0; i < 50; ++i) {
        int64_t sms = 0, sm = 0;
        if (fx_device_attribute("k", FX_DEVICE_ATTR_NUM_SMS, &sms) != KPACK_SUCCESS ||
            sms != 100 + t % 4 ||
            fx_device_attribute("k", FX_DEVICE_ATTR_SM, &sm) != KPACK_SUCCESS || sm != 90 + t % 4) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  CHECK(wrong == 0);
  // At most one read per thread that raced the first; usually one per device.
  CHECK(fake.count("cuDeviceGetAttribute") <= 3 * kThreads);
}
