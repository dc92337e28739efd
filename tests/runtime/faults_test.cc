// Runtime faults (issue 7) that the other runtime tests leave out: a current
// context that is destroyed, or belongs to another device than the stream,
// or changes between launches.  Each ends in a status and a message, never
// a crash, and the next good launch goes through.  (No libcuda, no device,
// no SASS for the device, out of memory while loading and an invalid stream
// are in driver_test.cc and kpack_runtime_test.cc.)
#include <cstdint>

#include "test_env.h"

using kpack_test::detail;
using kpack_test::FakeDriver;

namespace {

struct Launch {
  float x = 1, y = 2, out = 0;
  void *px = &x, *py = &y, *pout = &out;
  int64_t n = 3;
  void *slots[4] = {&px, &py, &pout, &n};
  kpack_status operator()(kpack_stream stream = nullptr) {
    return fx_launch(FX_VECTOR_ADD, stream, 1, 1, 1, 256, 1, 1, 0, slots);
  }
};

}  // namespace

TEST_CASE("a destroyed current context is KPACK_ERROR_DRIVER with its CUresult", "[faults]") {
  FakeDriver fake;
  Launch launch;
  REQUIRE(launch() == KPACK_SUCCESS);
  REQUIRE(fake->fail_next("cuCtxGetDevice", 709) == 0);  // CUDA_ERROR_CONTEXT_IS_DESTROYED
  CHECK(launch() == KPACK_ERROR_DRIVER);
  CHECK(kpack_last_cu_result() == 709);
  CHECK(detail() == "vector_add_f16_b256: cuCtxGetDevice failed: CUDA_ERROR_CONTEXT_IS_DESTROYED (709)");
  CHECK(fake.count("cuLaunchKernel") == 1);  // nothing launched in a dead context
  CHECK(launch() == KPACK_SUCCESS);
}

TEST_CASE("a stream of another context than the current one is KPACK_ERROR_LAUNCH_FAILED", "[faults]") {
  FakeDriver fake;
  Launch launch;
  REQUIRE(launch() == KPACK_SUCCESS);
  // The driver answers a stream created in another context so.
  REQUIRE(fake->fail_next("cuLaunchKernel", 201) == 0);
  CHECK(launch(static_cast<kpack_stream>(fake->stream(1))) == KPACK_ERROR_LAUNCH_FAILED);
  CHECK(kpack_last_cu_result() == 201);
  CHECK(detail() ==
        "vector_add_f16_b256: cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: "
        "CUDA_ERROR_INVALID_CONTEXT (201)");
  CHECK(launch(static_cast<kpack_stream>(fake->stream(1))) == KPACK_SUCCESS);
}

TEST_CASE("a thread whose current context moves to another device launches that device's function",
          "[faults]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(1, 9, 0);
  Launch launch;
  REQUIRE(launch() == KPACK_SUCCESS);
  fake_cuda_launch on0{};
  REQUIRE(fake->last_launch(&on0));
  fake->set_current_device(1);
  REQUIRE(launch() == KPACK_SUCCESS);
  fake_cuda_launch on1{};
  REQUIRE(fake->last_launch(&on1));
  CHECK(on0.device == 0);
  CHECK(on1.device == 1);
  // The first launch on device 1 loaded the module into its context, once.
  CHECK(fake->count_on_device("lazy_module_load", 1) == 1);
  CHECK(fake->count_on_device("lazy_module_load", 0) == 1);
  CHECK(fake.count("cuLibraryLoadData") == 1);  // one library for both

  // On an sm_75 device the driver refuses to load sm_80 code into the
  // context at the first launch there, and kpack says why.
  fake->set_device_count(3);
  fake->set_compute_capability(2, 7, 5);
  fake->set_current_device(2);
  CHECK(launch() == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() ==
        "vector_add_f16_b256: device 2 is sm_75; this library has SASS for sm_80,sm_90 and no PTX");
  CHECK(kpack_last_cu_result() == 209);
  CHECK(fake->count_on_device("lazy_module_load", 2) == 1);  // the load that failed
  fake->set_current_device(0);
  CHECK(launch() == KPACK_SUCCESS);
}
