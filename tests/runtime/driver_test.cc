// Tests of runtime/driver.c: finding libcuda.so.1, resolving its entry
// points (those of a first launch when it loads, the others on first use)
// and initializing CUDA only when no context is current, with the fake
// driver standing in.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::lean_path;
using kpack_test::too_old;
using kpack_test::use_lean;

namespace {

// A launch of vector_add (4 parameters) with one block.
kpack_status launch_vector_add() {
  static float x, y, out;
  static long long n = 1;
  static void *px = &x, *py = &y, *pout = &out;
  static void *args[] = {&px, &py, &pout, &n};
  return fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 1, 1, 0, args);
}

// The message of a launch from a thread without a current context.
const char kNoContext[] =
    "vector_add_f16_b256: the calling thread has no current CUDA context (cuCtxGetDevice: "
    "CUDA_ERROR_INVALID_CONTEXT (201)); make one current first, e.g. with cudaSetDevice()";

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
    CHECK(fake.count("cuInit") == 1); // CUDA was not initialized (the fake's reset state)
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
  // Not loaded in this process (the other fakes are, by the tests): the
  // runtime's RTLD_NOLOAD lookup finds nothing and it loads the library.
  REQUIRE(dlopen(old_path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD) == nullptr);
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
  // The probe at load, then one per launch.
  CHECK(fake.count("cuCtxGetDevice") == 11);
  CHECK(fake.count("cuLaunchKernel") == 10);
}

TEST_CASE("kpack_init finds the driver once, ahead of the first launch", "[driver]") {
  FakeDriver fake;
  fake->set_initialized(1); // the application's cudaSetDevice(0)
  CHECK(kpack_init() == KPACK_SUCCESS);
  CHECK(fake.count("cuCtxGetDevice") == 1); // the probe: a context is current
  CHECK(fake.count("cuInit") == 0);
  CHECK(fake.count("cuLibraryLoadData") == 0); // no kernel loaded
  CHECK(kpack_init() == KPACK_SUCCESS);     // found already: no driver call
  CHECK(fake.count("cuCtxGetDevice") == 1);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuCtxGetDevice") == 2); // the launch's own
  CHECK(fake.count("cuLaunchKernel") == 1);
}

TEST_CASE("kpack_init reports a missing driver or device, and a later call tries again", "[driver]") {
  FakeDriver fake;
  fx_set_driver_path("/nonexistent/libcuda.so.1");
  CHECK(kpack_init() == KPACK_ERROR_DRIVER_NOT_FOUND);
  CHECK(detail() ==
        "/nonexistent/libcuda.so.1 could not be loaded (/nonexistent/libcuda.so.1: cannot open "
        "shared object file: No such file or directory); an NVIDIA driver is needed to launch "
        "kernels");
  fx_set_driver_path(kpack_test::fake_path().c_str());
  REQUIRE(fake->fail_next("cuInit", 100) == 0); // CUDA_ERROR_NO_DEVICE; no context is current
  CHECK(kpack_init() == KPACK_ERROR_NO_DEVICE);
  CHECK(kpack_last_cu_result() == 100);
  CHECK(detail() == "cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)");
  CHECK(kpack_init() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 2);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
}

// ---- cuInit only when no context is current ------------------------------------------------

TEST_CASE("with a context current the driver is loaded without cuInit", "[driver]") {
  FakeDriver fake;
  fake->set_initialized(1); // the application's cudaSetDevice(0)
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 0);
  CHECK(fake.count("cuCtxGetDevice") == 1); // the probe at load, whose device the launch uses
  CHECK(fake.count("cuLaunchKernel") == 1);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 0);
  CHECK(fake.count("cuCtxGetDevice") == 2);
}

TEST_CASE("the device the probe at load finds is the first launch's", "[driver]") {
  FakeDriver fake;
  fake->set_initialized(1);
  fake->set_device_count(80);
  SECTION("device 1") {
    fake->set_current_device(1);
    CHECK(launch_vector_add() == KPACK_SUCCESS);
    fake_cuda_launch l{};
    REQUIRE(fake->last_launch(&l) == 1);
    CHECK(l.device == 1);
    CHECK(fake->count_on_device("lazy_module_load", 1) == 1);
  }
  SECTION("a device beyond KPACK_MAX_DEVICES is refused as when the launch asks") {
    fake->set_current_device(70);
    CHECK(launch_vector_add() == KPACK_ERROR_INTERNAL);
    CHECK(detail() == "vector_add_f16_b256: device 70 is beyond the 64 devices kpack tracks "
                      "(KPACK_MAX_DEVICES)");
    CHECK(fake.count("cuLibraryLoadData") == 0);
  }
  CHECK(fake.count("cuCtxGetDevice") == 1);
}

TEST_CASE("CUDA not yet initialized: cuInit(0) is called once, after the probe", "[driver]") {
  FakeDriver fake;
  // The fake's reset state: nothing initialized CUDA, so cuCtxGetDevice
  // answers CUDA_ERROR_NOT_INITIALIZED and nothing would launch without
  // cuInit.
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 1);
  CHECK(fake.count("cuCtxGetDevice") == 2);
  CHECK(fake.count("cuLaunchKernel") == 1);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 1);
}

TEST_CASE("no current context: cuInit is called and the launch is KPACK_ERROR_NO_CONTEXT as before",
          "[driver]") {
  FakeDriver fake;
  const bool initialized = GENERATE(false, true);
  INFO("CUDA initialized by the application: " << initialized);
  fake->set_initialized(initialized ? 1 : 0);
  fake->set_current_device(-1);
  CHECK(launch_vector_add() == KPACK_ERROR_NO_CONTEXT);
  CHECK(kpack_last_cu_result() == 201);
  CHECK(detail() == kNoContext);
  CHECK(fake.count("cuInit") == 1);
  CHECK(fake.count("cuLibraryLoadData") == 0);

  // The driver stays loaded: a context made current later just works.
  fake->set_current_device(0);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 1);
}

TEST_CASE("a probe that fails otherwise also falls back to cuInit", "[driver]") {
  FakeDriver fake;
  fake->set_initialized(1);
  REQUIRE(fake->fail_next("cuCtxGetDevice", 709) == 0); // CUDA_ERROR_CONTEXT_IS_DESTROYED
  CHECK(launch_vector_add() == KPACK_SUCCESS);          // the launch's own call succeeds
  CHECK(fake.count("cuInit") == 1);
}

TEST_CASE("racing first launches with a context current load the driver once, without cuInit",
          "[race]") {
  FakeDriver fake;
  fake->set_initialized(1);
  constexpr int kThreads = 16;
  std::latch start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      if (launch_vector_add() != KPACK_SUCCESS) {
        failures.fetch_add(1);
      }
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  CHECK(failures.load() == 0);
  CHECK(fake.count("cuInit") == 0);
  // One thread loads the driver, and its probe gives it its device; each
  // other thread asks for its own.
  CHECK(fake.count("cuCtxGetDevice") == kThreads);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("cuLaunchKernel") == kThreads);
}

// ---- Entry points resolved on first use ------------------------------------------------------

TEST_CASE("a driver with only the first launch's entry points loads and launches", "[driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(lean.count("cuLaunchKernel") == 1);
  CHECK(lean.count("lazy_module_load") == 1); // the module loaded inside the launch
  CHECK(lean.count("cuKernelGetFunction") == 0);
  CHECK(fake.count("cuLaunchKernel") == 0); // the full fake was not used
}

TEST_CASE("without cuDeviceGetAttribute a device without code gets the driver's failure, naming no sm",
          "[driver]") {
  // The compute capability is only read after a first use fails, so the
  // first launch never needs cuDeviceGetAttribute; without it the failure
  // is reported as the driver gave it.
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  lean.set_compute_capability(0, 7, 5);
  CHECK(launch_vector_add() == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(kpack_last_cu_result() == 209);
  CHECK(detail() == "vector_add_f16_b256: cuLibraryGetKernel(\"kpack_vector_add_f16_b256\") failed: "
                    "unrecognized CUresult (209)");
}

TEST_CASE("a driver without cuInit is KPACK_ERROR_DRIVER_TOO_OLD when CUDA must be initialized",
          "[driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(false);
  CHECK(launch_vector_add() == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(kpack_last_cu_result() == 0);
  CHECK(detail() == too_old(lean_path(), "cuInit"));
  CHECK(lean.count("cuCtxGetDevice") == 1); // the probe, which found CUDA uninitialized
  CHECK(lean.count("cuLibraryLoadData") == 0);

  // Not latched: once the application has initialized CUDA, it loads.
  lean.set_initialized(1);
  CHECK(launch_vector_add() == KPACK_SUCCESS);
}

TEST_CASE("without cuGetErrorName and cuMemGetInfo_v2 a failure still has its status and CUresult",
          "[driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  REQUIRE(lean.fail_next("cuLibraryLoadData", 2) == 0); // CUDA_ERROR_OUT_OF_MEMORY
  CHECK(launch_vector_add() == KPACK_ERROR_OUT_OF_MEMORY);
  CHECK(kpack_last_cu_result() == 2);
  // No name for the code and no memory figures (the full fake's message is
  // in kpack_runtime_test.cc).
  CHECK(detail() == "vector_add_f16_b256: cuLibraryLoadData failed: unrecognized CUresult (2)");
  CHECK(launch_vector_add() == KPACK_SUCCESS);
}

TEST_CASE("without cuLibraryUnload a failed lookup keeps its library and reports the lookup",
          "[driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  static float x;
  static void *px = &x;
  static void *args[] = {&px};
  CHECK(fx_launch(FX_MISSING_ENTRY, nullptr, 1, 1, 1, 32, 1, 1, 0, args) ==
        KPACK_ERROR_LOAD_FAILED);
  CHECK(kpack_last_cu_result() == 500);
  CHECK(detail() ==
        "missing_entry_spec: cuLibraryGetKernel(\"kpack_missing_entry\") failed: "
        "unrecognized CUresult (500)");
  CHECK(lean.live_libraries() == 1); // nothing could unload it
}

TEST_CASE("without cuKernelSetAttribute more than 48 KiB of shared memory is "
          "KPACK_ERROR_DRIVER_TOO_OLD",
          "[driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  static float x;
  static void *px = &x;
  static void *args[] = {&px, &px};
  for (int i = 0; i < 2; ++i) { // not latched: asked again, refused again
    CHECK(fx_launch(FX_BIG_SMEM, nullptr, 1, 1, 1, 64, 1, 1, 64 * 1024, args) ==
          KPACK_ERROR_DRIVER_TOO_OLD);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == too_old(lean_path(), "cuKernelSetAttribute"));
  }
  CHECK(lean.count("cuLaunchKernel") == 0);
  // 48 KiB or less needs no attribute.
  CHECK(fx_launch(FX_BIG_SMEM, nullptr, 1, 1, 1, 64, 1, 1, 48 * 1024, args) == KPACK_SUCCESS);
  CHECK(lean.count("cuLaunchKernel") == 1);
}

TEST_CASE("without cuLibraryUnload kpack_unload_all is KPACK_ERROR_DRIVER_TOO_OLD and still resets",
          "[driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  CHECK(kpack_unload_all() == KPACK_SUCCESS); // nothing loaded: nothing to look up
  REQUIRE(launch_vector_add() == KPACK_SUCCESS);
  CHECK(kpack_unload_all() == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(kpack_last_cu_result() == 0);
  CHECK(detail() == too_old(lean_path(), "cuLibraryUnload"));
  uint64_t libraries = 1, functions = 1;
  kpack_get_load_counts(&libraries, &functions);
  CHECK(libraries == 0);
  CHECK(functions == 0);
  CHECK(lean.live_libraries() == 1); // left to the driver

  // The runtime starts over: the next launch loads again.
  CHECK(launch_vector_add() == KPACK_SUCCESS);
  CHECK(lean.count("cuLibraryLoadData") == 2);
}

TEST_CASE("entry points resolved on first use are forgotten with the driver", "[driver]") {
  FakeDriver fake;
  SECTION("after kpack_unload_all") {
    // Name an error through the full fake, which stays loaded (the tests
    // hold it), so a stale pointer to its cuGetErrorName would still work.
    fake->set_initialized(1);
    REQUIRE(launch_vector_add() == KPACK_SUCCESS);
    REQUIRE(fake->fail_next("cuLaunchKernel", 2) == 0);
    REQUIRE(launch_vector_add() == KPACK_ERROR_LAUNCH_FAILED);
    REQUIRE(detail().find("CUDA_ERROR_OUT_OF_MEMORY (2)") != std::string::npos);
    kpack_unload_all();
  }
  SECTION("after a load that failed in cuInit") {
    // Naming cuInit's error looked cuGetErrorName up in the library that
    // the failed load then closed.
    REQUIRE(fake->fail_next("cuInit", 100) == 0);
    REQUIRE(launch_vector_add() == KPACK_ERROR_NO_DEVICE);
    REQUIRE(detail() == "cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)");
  }
  const fake_cuda_api &lean = use_lean(true);
  REQUIRE(lean.fail_next("cuLaunchKernel", 1) == 0); // CUDA_ERROR_INVALID_VALUE
  CHECK(launch_vector_add() == KPACK_ERROR_LAUNCH_FAILED);
  CHECK(detail() ==
        "vector_add_f16_b256: cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: "
        "unrecognized CUresult (1)");
}

TEST_CASE("racing first failures look cuGetErrorName up safely", "[race]") {
  // Every thread's first use of cuGetErrorName races the others' (run this
  // under ThreadSanitizer too); each names its own error.
  FakeDriver fake;
  fake->set_initialized(1);
  REQUIRE(launch_vector_add() == KPACK_SUCCESS);
  REQUIRE(fake.count("cuGetErrorName") == 0); // not looked up or called yet
  constexpr int kThreads = 16;
  std::latch start(kThreads);
  std::vector<std::string> details(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // An invalid stream: the fake's cuLaunchKernel answers
      // CUDA_ERROR_INVALID_HANDLE.
      static float x, y, out;
      static long long n = 1;
      static void *px = &x, *py = &y, *pout = &out;
      static void *args[] = {&px, &py, &pout, &n};
      start.arrive_and_wait();
      int bogus = 0;
      if (fx_launch(FX_VECTOR_ADD, static_cast<kpack_stream>(static_cast<void *>(&bogus)), 1, 1,
                    1, 256, 1, 1, 0, args) == KPACK_ERROR_LAUNCH_FAILED) {
        details[t] = kpack_last_error_detail();
      }
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(details[t] ==
          "vector_add_f16_b256: cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: "
          "CUDA_ERROR_INVALID_HANDLE (400)");
  }
  CHECK(fake.count("cuGetErrorName") == kThreads);
}
