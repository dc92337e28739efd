// Tests of runtime/kpack_runtime.c against the fake driver: lazy loading,
// device checks, shared-memory limits, launch errors, racing first launches,
// kpack_unload_all and kpack_describe.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::race;

namespace {

constexpr uint32_t kSpecific = FX_ARCH_SPECIFIC;
constexpr uint32_t kFamily = FX_ARCH_FAMILY;

// Kernel arguments in cuLaunchKernel form: one pointer per parameter.
struct Args {
  float x = 1, y = 2, out = 0;
  void *px = &x, *py = &y, *pout = &out;
  int64_t n = 3;
  void *slots[4] = {&px, &py, &pout, &n};
};

// Launches `id` with one block of 256 threads and `smem` bytes.
kpack_status launch(fx_id id, Args &args, uint32_t smem = 0, kpack_stream stream = nullptr) {
  return fx_launch(id, stream, 1, 1, 1, 256, 1, 1, smem, args.slots);
}

// The runtime's kpack_get_load_counts() as a pair.
std::pair<uint64_t, uint64_t> load_counts() {
  uint64_t libraries = 0, functions = 0;
  kpack_get_load_counts(&libraries, &functions);
  return {libraries, functions};
}

// Sum of every driver-call counter, to check that a step makes no calls.
unsigned long long all_calls(const FakeDriver &fake) {
  unsigned long long sum = 0;
  for (const char *fn : {"cuInit", "cuGetErrorName", "cuCtxGetDevice", "cuDeviceGetAttribute",
                         "cuMemGetInfo_v2", "cuLibraryLoadData", "cuLibraryGetKernel",
                         "cuLibraryUnload", "cuKernelGetFunction", "cuKernelSetAttribute",
                         "cuLaunchKernel", "cuLaunchKernelEx"}) {
    sum += fake.count(fn);
  }
  return sum;
}

} // namespace

// ---- Loading and the hot path ------------------------------------------------

TEST_CASE("the first launch loads the fatbin and launches its CUkernel with the args",
          "[launch]") {
  FakeDriver fake;
  Args args;
  void *stream = fake->stream(1);
  REQUIRE(fx_launch(FX_VECTOR_ADD, static_cast<kpack_stream>(stream), 2, 3, 4, 256, 2, 1, 512,
                    args.slots) == KPACK_SUCCESS);

  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake->last_image() == fx_fatbin_data(FX_VECTOR_ADD));
  CHECK(fake->last_load_preserved() == 1); // read in place, not copied
  CHECK(fake.count("cuLibraryGetKernel") == 1);
  CHECK(fake.count("cuKernelGetFunction") == 0);
  CHECK(fake.count("cuKernelSetAttribute") == 0);
  CHECK(fake.count("cuLaunchKernel") == 1);
  CHECK(fake.count("lazy_module_load") == 1); // loaded into the context by the launch
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});

  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(l.was_kernel == 1); // the CUkernel itself, not a per-context CUfunction
  REQUIRE(fake->kernel_entry(l.function) != nullptr);
  CHECK(std::string(fake->kernel_entry(l.function)) == fx_entry(FX_VECTOR_ADD));
  CHECK(l.device == 0);
  CHECK((l.grid[0] == 2 && l.grid[1] == 3 && l.grid[2] == 4));
  CHECK((l.block[0] == 256 && l.block[1] == 2 && l.block[2] == 1));
  CHECK(l.smem == 512);
  CHECK(l.stream == stream);
  CHECK(l.params == args.slots);
  REQUIRE(l.num_params == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(l.param_values[i] == args.slots[i]);
  }
  CHECK(l.extra == nullptr);
  CHECK(l.via_ex == 0); // plain cuLaunchKernel (launch_ex_test.cc has cuLaunchKernelEx)
  CHECK(l.num_attrs == 0);
  CHECK(fake.count("cuLaunchKernelEx") == 0);
}

TEST_CASE("a driver that refuses CU_LIBRARY_BINARY_IS_PRESERVED gets the plain load",
          "[launch]") {
  FakeDriver fake;
  fake->set_reject_library_options(1);
  Args args;
  REQUIRE(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 1, 1, 0, args.slots) ==
          KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 2); // refused with the option, then loaded
  CHECK(fake->last_image() == fx_fatbin_data(FX_VECTOR_ADD));
  CHECK(fake->last_load_preserved() == 0);
  CHECK(fake->live_libraries() == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});

  // Only CUDA_ERROR_INVALID_VALUE is taken for a refused option: any other
  // failure is reported as it came, without a second call.
  REQUIRE(kpack_unload_all() == KPACK_SUCCESS);
  REQUIRE(fake->fail_next("cuLibraryLoadData", 200) == 0); // CUDA_ERROR_INVALID_IMAGE
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 1, 1, 0, args.slots) ==
        KPACK_ERROR_LOAD_FAILED);
  CHECK(kpack_last_cu_result() == 200);
  CHECK(fake.count("cuLibraryLoadData") == 3);
  CHECK(fake->live_libraries() == 0);
}

TEST_CASE("after first use a launch is cuCtxGetDevice plus cuLaunchKernel", "[launch]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  fake_cuda_launch first{};
  REQUIRE(fake->last_launch(&first) == 1);
  const unsigned long long before = all_calls(fake);
  const unsigned long long ctx_before = fake.count("cuCtxGetDevice");

  for (int i = 0; i < 100; ++i) {
    REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuCtxGetDevice") == ctx_before + 100);
  CHECK(fake.count("cuLaunchKernel") == 101);
  CHECK(all_calls(fake) == before + 200); // nothing else
  fake_cuda_launch last{};
  REQUIRE(fake->last_launch(&last) == 1);
  CHECK(last.function == first.function);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

TEST_CASE("first launches that succeed never read the compute capability", "[launch]") {
  // The arch check waits for a failure (kpack_runtime.c, "Why the arch
  // check waits for a failure"): on success it would have prevented nothing.
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(1, 9, 0);
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  REQUIRE(launch(FX_SOFTMAX, args) == KPACK_SUCCESS);
  fake->set_current_device(1);
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  REQUIRE(launch(FX_BIG_SMEM, args, 64 * 1024) == KPACK_SUCCESS);
  CHECK(fake.count("lazy_module_load") == 4); // four first launches on a device
  CHECK(fake.count("cuDeviceGetAttribute") == 0);
}

TEST_CASE("a grid with a zero dimension launches nothing and touches no driver", "[launch]") {
  FakeDriver fake;
  fake->set_current_device(-1); // would fail if the driver were asked
  Args args;
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 0, 1, 1, 256, 1, 1, 0, args.slots) == KPACK_SUCCESS);
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 1, 0, 1, 256, 1, 1, 0, args.slots) == KPACK_SUCCESS);
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 0, 256, 1, 1, 0, args.slots) == KPACK_SUCCESS);
  // Even an invalid block is not looked at: there is nothing to launch.
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 0, 1, 1, 0, 0, 0, 0, nullptr) == KPACK_SUCCESS);
  CHECK(all_calls(fake) == 0);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{0, 0});
}

TEST_CASE("a zero block dimension is KPACK_ERROR_INVALID_ARGUMENT", "[launch]") {
  FakeDriver fake;
  Args args;
  CHECK(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 0, 1, 0, args.slots) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "vector_add_f16_b256: block dimensions must be nonzero, got 256x0x1");
  CHECK(fake.count("cuLaunchKernel") == 0);
}

TEST_CASE("a NULL kernel is KPACK_ERROR_INVALID_ARGUMENT", "[launch]") {
  FakeDriver fake;
  CHECK(fx_launch_null() == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_launch: the kernel is NULL");
}

TEST_CASE("a descriptor of another ABI is KPACK_ERROR_ABI_MISMATCH", "[launch]") {
  FakeDriver fake;
  Args args;
  const std::string expected =
      "a kernel descriptor was generated for kpack ABI 2, but the linked runtime implements ABI "
      "1; regenerate the library with the kpack that provides this runtime";
  CHECK(launch(FX_NEWER_ABI, args) == KPACK_ERROR_ABI_MISMATCH);
  CHECK(detail() == expected);
  CHECK(all_calls(fake) == 0);
  kpack_spec_info info{};
  CHECK(fx_describe(FX_NEWER_ABI, &info) == KPACK_ERROR_ABI_MISMATCH);
  CHECK(detail() == expected);
}

// ---- Contexts and devices ------------------------------------------------------

TEST_CASE("no current context is KPACK_ERROR_NO_CONTEXT", "[device]") {
  FakeDriver fake;
  fake->set_current_device(-1);
  Args args;
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_NO_CONTEXT);
  CHECK(kpack_last_cu_result() == 201);
  CHECK(detail() ==
        "vector_add_f16_b256: the calling thread has no current CUDA context (cuCtxGetDevice: "
        "CUDA_ERROR_INVALID_CONTEXT (201)); make one current first, e.g. with cudaSetDevice()");
  CHECK(fake.count("cuLibraryLoadData") == 0); // nothing is loaded without a context

  fake->set_current_device(0);
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
}

TEST_CASE("an sm_75 device against SASS for sm_80,sm_90 is KPACK_ERROR_NO_BINARY_FOR_DEVICE",
          "[device]") {
  FakeDriver fake;
  fake->set_compute_capability(0, 7, 5);
  Args args;
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() ==
        "vector_add_f16_b256: device 0 is sm_75; this library has SASS for sm_80,sm_90 and no PTX");
  // The check runs once the driver has refused the device, as the real one
  // does inside cuLibraryGetKernel (seen on an H200), and its CUresult stays.
  CHECK(kpack_last_cu_result() == 209); // CUDA_ERROR_NO_BINARY_FOR_GPU
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("cuLibraryGetKernel") == 1);
  CHECK(fake->live_libraries() == 0); // unloaded again after the failed lookup
  CHECK(fake.count("cuDeviceGetAttribute") == 2);
  CHECK(fake.count("cuKernelGetFunction") == 0);
  CHECK(fake.count("cuLaunchKernel") == 0);

  SECTION("the failure is not latched, and the compute capability is not read again") {
    CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
    CHECK(detail() == "vector_add_f16_b256: device 0 is sm_75; this library has SASS for "
                      "sm_80,sm_90 and no PTX");
    CHECK(fake.count("cuDeviceGetAttribute") == 2);
    fake->set_compute_capability(0, 9, 0);
    CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
    CHECK(fake.count("cuLibraryLoadData") == 3);
  }
}

TEST_CASE("a second specialization failing on a device does not ask for its compute capability",
          "[device]") {
  FakeDriver fake;
  fake->set_compute_capability(0, 7, 5);
  Args args;
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(fake.count("cuDeviceGetAttribute") == 2);
  CHECK(launch(FX_SOFTMAX, args) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() ==
        "softmax_f32_b128: device 0 is sm_75; this library has SASS for sm_80,sm_90 and no PTX");
  CHECK(kpack_last_cu_result() == 209);
  CHECK(fake.count("cuDeviceGetAttribute") == 2); // kept per device for the process

  // kpack_unload_all forgets it with the driver it came from.
  kpack_unload_all();
  CHECK(launch(FX_SOFTMAX, args) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(fake.count("cuDeviceGetAttribute") == 4);
}

TEST_CASE("a compute capability the driver cannot give leaves the failure as the driver said",
          "[device]") {
  const std::string call = "cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: ";
  FakeDriver fake;
  fake->set_mem_info(size_t{12} << 20, size_t{16384} << 20);
  Args args;
  REQUIRE(fake->fail_next("cuLibraryLoadData", 2) == 0);      // CUDA_ERROR_OUT_OF_MEMORY
  REQUIRE(fake->fail_next("cuDeviceGetAttribute", 101) == 0); // CUDA_ERROR_INVALID_DEVICE
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_OUT_OF_MEMORY);
  CHECK(kpack_last_cu_result() == 2);
  CHECK(detail() ==
        "vector_add_f16_b256: cuLibraryLoadData failed: CUDA_ERROR_OUT_OF_MEMORY (2); device 0 "
        "has 12 MiB free of 16384 MiB");

  // At a first launch the detail then names no sm; nothing unknown was kept,
  // so the next failure asks again.
  REQUIRE(fake->fail_next("lazy_module_load", 2) == 0);
  REQUIRE(fake->fail_next("cuDeviceGetAttribute", 101) == 0);
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_OUT_OF_MEMORY);
  CHECK(kpack_last_cu_result() == 2);
  CHECK(detail() == "vector_add_f16_b256: first launch on device 0, which loads its code: " + call +
                        "CUDA_ERROR_OUT_OF_MEMORY (2); device 0 has 12 MiB free of 16384 MiB");
  CHECK(fake.count("cuDeviceGetAttribute") == 2); // each failed at the major version
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
}

TEST_CASE("SASS and PTX compatibility rules", "[device]") {
  struct Row {
    int major, minor;
    std::vector<uint32_t> sass;
    const char *sass_text;
    std::vector<uint32_t> ptx;
    const char *ptx_text;
    const char *error; // expected detail, or nullptr when the launch runs
  };
  const Row rows[] = {
      // Plain SASS runs on its major version from its minor up.
      {8, 6, {80}, "sm_80", {}, "", nullptr},
      {8, 9, {86}, "sm_86", {}, "", nullptr},
      {10, 3, {100}, "sm_100", {}, "", nullptr},
      {8, 0, {86}, "sm_86", {}, "", "probe_spec: device 0 is sm_80; this library has SASS for sm_86 and no PTX"},
      {9, 0, {80}, "sm_80", {}, "", "probe_spec: device 0 is sm_90; this library has SASS for sm_80 and no PTX"},
      {7, 5, {80, 90}, "sm_80,sm_90", {}, "", "probe_spec: device 0 is sm_75; this library has SASS for sm_80,sm_90 and no PTX"},
      // Arch-specific SASS runs only on its exact version.
      {9, 0, {90 | kSpecific}, "sm_90a", {}, "", nullptr},
      {10, 0, {90 | kSpecific}, "sm_90a", {}, "", "probe_spec: device 0 is sm_100; this library has SASS for sm_90a and no PTX"},
      {10, 3, {100 | kSpecific}, "sm_100a", {}, "", "probe_spec: device 0 is sm_103; this library has SASS for sm_100a and no PTX"},
      // Family SASS runs on its family from its minor up.
      {10, 3, {100 | kFamily}, "sm_100f", {}, "", nullptr},
      {10, 0, {103 | kFamily}, "sm_103f", {}, "", "probe_spec: device 0 is sm_100; this library has SASS for sm_103f and no PTX"},
      {12, 0, {100 | kFamily}, "sm_100f", {}, "", "probe_spec: device 0 is sm_120; this library has SASS for sm_100f and no PTX"},
      // PTX (only when the manifest asked) is JIT-compiled for newer devices.
      {9, 0, {80}, "sm_80", {80}, "compute_80", nullptr},
      {12, 0, {80, 90}, "sm_80,sm_90", {90}, "compute_90", nullptr},
      {8, 6, {90}, "sm_90", {90}, "compute_90", "probe_spec: device 0 is sm_86; this library has SASS for sm_90 and PTX for compute_90"},
      {9, 0, {}, "", {90 | kSpecific}, "compute_90a", nullptr},
      {10, 0, {}, "", {90 | kSpecific}, "compute_90a", "probe_spec: device 0 is sm_100; this library has SASS for  and PTX for compute_90a"},
  };
  for (const Row &row : rows) {
    INFO("device " << row.major << "." << row.minor << ", SASS " << row.sass_text << ", PTX "
                   << row.ptx_text);
    FakeDriver fake;
    fake->set_compute_capability(0, row.major, row.minor);
    fx_set_probe_archs(row.sass.data(), static_cast<uint32_t>(row.sass.size()), row.sass_text,
                       row.ptx.data(), static_cast<uint32_t>(row.ptx.size()), row.ptx_text);
    Args args;
    const kpack_status status = launch(FX_PROBE, args);
    if (row.error == nullptr) {
      CHECK(status == KPACK_SUCCESS);
      CHECK(fake.count("lazy_module_load") == 1);
      CHECK(fake.count("cuLaunchKernel") == 1);
      CHECK(fake.count("cuDeviceGetAttribute") == 0);
    } else {
      // The fake driver, by the same rules, refused the device in
      // cuLibraryGetKernel; kpack's check then explains why.
      CHECK(status == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
      CHECK(detail() == row.error);
      CHECK(kpack_last_cu_result() == 209);
      CHECK(fake.count("lazy_module_load") == 0);
      CHECK(fake.count("cuLaunchKernel") == 0);
    }
  }
}

TEST_CASE("each device is checked against its own compute capability", "[device]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(0, 9, 0);
  fake->set_compute_capability(1, 7, 5);
  Args args;
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  fake->set_current_device(1);
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() ==
        "vector_add_f16_b256: device 1 is sm_75; this library has SASS for sm_80,sm_90 and no PTX");
  CHECK(kpack_last_cu_result() == 209);
  CHECK(fake.count("cuLibraryLoadData") == 1); // loaded for device 0, and stays
  CHECK(fake->count_on_device("lazy_module_load", 0) == 1);
  // The first launch on device 1 is where the driver refused to load the
  // module into its context; nothing ran there.
  CHECK(fake->count_on_device("cuLaunchKernel", 1) == 1);
  CHECK(fake->count_on_device("lazy_module_load", 1) == 1);
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 1) == 2);
  CHECK(fake->count_on_device("cuDeviceGetAttribute", 0) == 0);
  fake->set_current_device(0);
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
}

TEST_CASE("a device refused while raising its shared-memory limit gets the arch check too",
          "[device]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(1, 7, 5);
  Args args;
  CHECK(launch(FX_BIG_SMEM, args, 64 * 1024) == KPACK_SUCCESS);
  fake->set_current_device(1);
  REQUIRE(fake->fail_next("cuKernelSetAttribute", 209) == 0);
  CHECK(launch(FX_BIG_SMEM, args, 64 * 1024) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() ==
        "attention_tile64: device 1 is sm_75; this library has SASS for sm_80,sm_90 and no PTX");
  CHECK(kpack_last_cu_result() == 209);
  CHECK(fake->count_on_device("cuLaunchKernel", 1) == 0);
}

TEST_CASE("a device ordinal beyond KPACK_MAX_DEVICES is refused", "[device]") {
  FakeDriver fake;
  fake->set_device_count(80);
  fake->set_current_device(70);
  Args args;
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_INTERNAL);
  CHECK(detail() ==
        "vector_add_f16_b256: device 70 is beyond the 64 devices kpack tracks (KPACK_MAX_DEVICES)");
  CHECK(fake.count("cuLaunchKernel") == 0);
}

// ---- Load failures -------------------------------------------------------------------

TEST_CASE("running out of memory in cuLibraryLoadData is KPACK_ERROR_OUT_OF_MEMORY",
          "[load]") {
  FakeDriver fake;
  fake->set_mem_info(size_t{12} << 20, size_t{16384} << 20);
  REQUIRE(fake->fail_next("cuLibraryLoadData", 2) == 0);
  Args args;
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_OUT_OF_MEMORY);
  CHECK(kpack_last_cu_result() == 2);
  CHECK(detail() ==
        "vector_add_f16_b256: cuLibraryLoadData failed: CUDA_ERROR_OUT_OF_MEMORY (2); device 0 "
        "has 12 MiB free of 16384 MiB");
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{0, 0});

  // Nothing was latched: the next launch loads.
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 2);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

TEST_CASE("a first launch that cannot load its code into the context maps to kpack statuses",
          "[load]") {
  // The driver loads the module into the context inside the first
  // cuLaunchKernel on a device (lazy loading); what that load fails with gets
  // the status a failed cuLibraryLoadData would, and any other failure of
  // that launch is a launch failure as on the hot path.
  const std::string call = "cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: ";
  const std::string first = "vector_add_f16_b256: first launch on device 0 (sm_80), which loads its code: ";
  struct Row {
    const char *where;  // "lazy_module_load" or "cuLaunchKernel"
    int cu;
    kpack_status status;
    std::string detail;
  };
  const Row rows[] = {
      {"lazy_module_load", 2, KPACK_ERROR_OUT_OF_MEMORY,
       first + call + "CUDA_ERROR_OUT_OF_MEMORY (2); device 0 has 1024 MiB free of 16384 MiB"},
      {"lazy_module_load", 209, KPACK_ERROR_NO_BINARY_FOR_DEVICE,
       first + call + "CUDA_ERROR_NO_BINARY_FOR_GPU (209)"},
      {"lazy_module_load", 200, KPACK_ERROR_LOAD_FAILED,
       first + call + "CUDA_ERROR_INVALID_IMAGE (200)"},
      {"cuLaunchKernel", 400, KPACK_ERROR_LAUNCH_FAILED,
       "vector_add_f16_b256: " + call + "CUDA_ERROR_INVALID_HANDLE (400)"},
  };
  for (const Row &row : rows) {
    INFO(row.where << " fails with CUresult " << row.cu);
    FakeDriver fake;
    REQUIRE(fake->fail_next(row.where, row.cu) == 0);
    Args args;
    CHECK(launch(FX_VECTOR_ADD, args) == row.status);
    CHECK(kpack_last_cu_result() == row.cu);
    CHECK(detail() == row.detail);
    CHECK(fake.count("cuLaunchKernel") == 1);
    CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 0});
    // The device was not marked ready: the next launch loads the module.
    CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
    CHECK(fake.count("lazy_module_load") == (std::string(row.where) == "lazy_module_load" ? 2u : 1u));
    CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
    CHECK(fake.count("cuKernelGetFunction") == 0);
  }
}

TEST_CASE("an entry missing from the fatbin is KPACK_ERROR_LOAD_FAILED and unloads it",
          "[load]") {
  FakeDriver fake;
  Args args;
  CHECK(launch(FX_MISSING_ENTRY, args) == KPACK_ERROR_LOAD_FAILED);
  CHECK(kpack_last_cu_result() == 500);
  CHECK(detail() ==
        "missing_entry_spec: cuLibraryGetKernel(\"kpack_missing_entry\") failed: "
        "CUDA_ERROR_NOT_FOUND (500)");
  CHECK(fake.count("cuLibraryUnload") == 1);
  CHECK(fake->live_libraries() == 0);
}

TEST_CASE("an image the driver rejects is KPACK_ERROR_LOAD_FAILED", "[load]") {
  FakeDriver fake;
  Args args;
  CHECK(launch(FX_BAD_IMAGE, args) == KPACK_ERROR_LOAD_FAILED);
  CHECK(kpack_last_cu_result() == 200);
  CHECK(detail() == "bad_image_spec: cuLibraryLoadData failed: CUDA_ERROR_INVALID_IMAGE (200)");
  CHECK(fake->last_image() == fx_fatbin_data(FX_BAD_IMAGE));
}

// ---- Launch failures ----------------------------------------------------------------------

TEST_CASE("a launch the driver rejects is KPACK_ERROR_LAUNCH_FAILED with its CUresult",
          "[launch]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);

  SECTION("an invalid stream") {
    auto bad_stream = reinterpret_cast<kpack_stream>(uintptr_t{0x1234});
    CHECK(launch(FX_VECTOR_ADD, args, 0, bad_stream) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 400);
    CHECK(detail() ==
          "vector_add_f16_b256: cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: "
          "CUDA_ERROR_INVALID_HANDLE (400)");
  }
  SECTION("too many resources") {
    REQUIRE(fake->fail_next("cuLaunchKernel", 701) == 0);
    CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 701);
    CHECK(detail() ==
          "vector_add_f16_b256: cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: "
          "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)");
  }
  SECTION("a CUresult the driver cannot name") {
    REQUIRE(fake->fail_next("cuLaunchKernel", 12345) == 0);
    CHECK(launch(FX_VECTOR_ADD, args) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 12345);
    CHECK(detail() ==
          "vector_add_f16_b256: cuLaunchKernel(grid 1x1x1, block 256x1x1, smem 0) failed: "
          "unrecognized CUresult (12345)");
  }
  // A failed launch changes nothing: the next one goes through.
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
}

// ---- Dynamic shared memory ----------------------------------------------------------------

TEST_CASE("more than 48 KiB of dynamic shared memory raises the limit once per device",
          "[smem]") {
  FakeDriver fake;
  fake->set_device_count(2);
  Args args;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(launch(FX_BIG_SMEM, args, 100 * 1024) == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuKernelSetAttribute") == 1);
  CHECK(fake->count_on_device("cuKernelSetAttribute", 0) == 1);
  CHECK(fake->last_smem_attribute() == 100 * 1024);
  CHECK(fake.count("cuLaunchKernel") == 3);

  fake->set_current_device(1);
  REQUIRE(launch(FX_BIG_SMEM, args, 100 * 1024) == KPACK_SUCCESS);
  CHECK(fake->count_on_device("cuKernelSetAttribute", 1) == 1);

  fake->set_current_device(0);
  REQUIRE(launch(FX_BIG_SMEM, args, 150 * 1024) == KPACK_SUCCESS); // more: raised again
  CHECK(fake->count_on_device("cuKernelSetAttribute", 0) == 2);
  CHECK(fake->last_smem_attribute() == 150 * 1024);
  REQUIRE(launch(FX_BIG_SMEM, args, 120 * 1024) == KPACK_SUCCESS); // less: nothing to do
  CHECK(fake.count("cuKernelSetAttribute") == 3);
}

TEST_CASE("48 KiB or less of dynamic shared memory never sets the attribute", "[smem]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args, 48 * 1024) == KPACK_SUCCESS);
  REQUIRE(launch(FX_VECTOR_ADD, args, 1024) == KPACK_SUCCESS);
  CHECK(fake.count("cuKernelSetAttribute") == 0);
}

TEST_CASE("more shared memory than the device allows is KPACK_ERROR_INVALID_ARGUMENT",
          "[smem]") {
  FakeDriver fake;
  Args args;
  CHECK(launch(FX_BIG_SMEM, args, 300 * 1024) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(kpack_last_cu_result() == 1);
  CHECK(detail() ==
        "attention_tile64: cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 307200) on device "
        "0 failed: CUDA_ERROR_INVALID_VALUE (1)");
  CHECK(fake.count("cuLaunchKernel") == 0);
  // The limit was not recorded as raised.
  CHECK(launch(FX_BIG_SMEM, args, 100 * 1024) == KPACK_SUCCESS);
  CHECK(fake->last_smem_attribute() == 100 * 1024);
}

// ---- Races ---------------------------------------------------------------------------------

TEST_CASE("32 racing first launches load exactly once and all launch", "[race]") {
  FakeDriver fake;
  fake->set_load_delay_us(20000); // hold the loader inside the driver while others arrive
  constexpr int kThreads = 32;
  std::vector<kpack_status> statuses(kThreads, KPACK_ERROR_INTERNAL);
  std::vector<const void *> handles(kThreads, nullptr);
  race(kThreads, [&](int t) {
    Args args;
    statuses[t] = launch(FX_VECTOR_ADD, args, 64 * 1024);
    fake_cuda_launch l{};
    if (fake->last_launch(&l) == 1 && l.was_kernel && l.params == args.slots) {
      handles[t] = l.function;
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(statuses[t] == KPACK_SUCCESS);
    CHECK(handles[t] != nullptr);
    CHECK(handles[t] == handles[0]);
  }
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("cuLibraryGetKernel") == 1);
  CHECK(fake.count("cuKernelGetFunction") == 0);
  CHECK(fake.count("cuKernelSetAttribute") == 1);
  CHECK(fake.count("cuLaunchKernel") == kThreads);
  CHECK(fake.count("lazy_module_load") == 1); // one first launch, under the lock
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

TEST_CASE("64 threads over 4 devices: one load per kernel, one resolve per kernel and device",
          "[race]") {
  FakeDriver fake;
  constexpr int kDevices = 4;
  constexpr int kThreads = 64;
  const fx_id kernels[] = {FX_VECTOR_ADD, FX_SOFTMAX, FX_CROSS_ENTROPY, FX_BIG_SMEM};
  constexpr int kKernels = 4;
  fake->set_device_count(kDevices);
  const int cc[kDevices][2] = {{8, 0}, {8, 6}, {9, 0}, {8, 9}};
  for (int d = 0; d < kDevices; ++d) {
    fake->set_compute_capability(d, cc[d][0], cc[d][1]);
  }
  fake->set_load_delay_us(5000);
  std::atomic<int> failures{0};
  race(kThreads, [&](int t) {
    fake->set_current_device(t % kDevices);
    Args args;
    // Each thread starts with a different kernel so that loads of several
    // kernels and devices overlap.
    for (int i = 0; i < kKernels; ++i) {
      const fx_id id = kernels[(t + i) % kKernels];
      const uint32_t smem = id == FX_BIG_SMEM ? 64 * 1024 : 0;
      if (launch(id, args, smem) != KPACK_SUCCESS) {
        failures.fetch_add(1);
      }
    }
  });
  CHECK(failures.load() == 0);
  CHECK(fake.count("cuLibraryLoadData") == kKernels);
  CHECK(fake.count("cuLibraryGetKernel") == kKernels);
  CHECK(fake.count("lazy_module_load") == kKernels * kDevices);
  CHECK(fake.count("cuKernelSetAttribute") == kDevices); // FX_BIG_SMEM, once per device
  for (int d = 0; d < kDevices; ++d) {
    INFO("device " << d);
    CHECK(fake->count_on_device("lazy_module_load", d) == kKernels);
    CHECK(fake->count_on_device("cuKernelSetAttribute", d) == 1);
    CHECK(fake->count_on_device("cuLaunchKernel", d) == kThreads / kDevices * kKernels);
  }
  CHECK(fake.count("cuKernelGetFunction") == 0);
  CHECK(load_counts() ==
        std::pair<uint64_t, uint64_t>{kKernels, kKernels * kDevices});
}

TEST_CASE("launches after another thread's first launch see its state without the lock",
          "[race]") {
  // Threads that arrive after the first launch take the lock-free path, so
  // nothing but the runtime's release/acquire pairs orders them after the
  // first use.  The fake reads what a device's first launch (its lazy module
  // load) and cuKernelSetAttribute wrote without a lock, so under ThreadSanitizer a
  // missing acquire or release in the runtime shows up as a data race here.
  // The waiting below is deliberately relaxed: it must not order anything.
  // Each section leaves one published field as the only ordering: with
  // smem > 48 KiB the limit is published last and would cover device_ready.
  FakeDriver fake;
  fake->set_device_count(2);
  const bool big = GENERATE(false, true);
  const fx_id id = big ? FX_BIG_SMEM : FX_VECTOR_ADD;
  const uint32_t smem = big ? 64 * 1024 : 0;
  INFO((big ? "smem_limit" : "device_ready") << " orders the late launches");
  constexpr int kThreads = 16;
  std::atomic<int> first_done{0};
  std::atomic<int> failures{0};
  race(kThreads, [&](int t) {
    Args args;
    fake->set_current_device(t % 2);
    if (t >= 2) { // the first two threads launch first, one per device
      while (first_done.load(std::memory_order_relaxed) < 2) {
        std::this_thread::yield();
      }
    }
    if (launch(id, args, smem) != KPACK_SUCCESS) {
      failures.fetch_add(1, std::memory_order_relaxed);
    }
    if (t < 2) {
      first_done.fetch_add(1, std::memory_order_relaxed);
    }
  });
  CHECK(failures.load() == 0);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("lazy_module_load") == 2);
  CHECK(fake.count("cuKernelSetAttribute") == (big ? 2 : 0));
  CHECK(fake.count("cuLaunchKernel") == kThreads);
}

TEST_CASE("a launch after first use does not wait for another kernel's first load", "[race]") {
  // The hot path takes no lock: while one thread holds the load lock inside
  // a slow cuLibraryLoadData, a launch of a kernel already prepared goes
  // through at once.  Had it waited for the lock, the loader would have
  // looked its kernel up (cuLibraryGetKernel, after the load) by then.
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  fake->set_load_delay_us(300000);
  kpack_status loaded = KPACK_ERROR_INTERNAL; // checked after the join: Catch2 is not thread-safe
  std::thread loader([&loaded] {
    Args loader_args;
    loaded = launch(FX_SOFTMAX, loader_args);
  });
  while (fake.count("cuLibraryLoadData") < 2) { // the loader is inside it, holding the lock
    std::this_thread::yield();
  }
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryGetKernel") == 1); // the loader still sleeps in its load
  loader.join();
  CHECK(loaded == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryGetKernel") == 2);
}

// ---- kpack_unload_all and introspection ----------------------------------------------------

TEST_CASE("kpack_unload_all unloads every library and the next launch loads again",
          "[unload]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  REQUIRE(launch(FX_SOFTMAX, args) == KPACK_SUCCESS);
  REQUIRE(fake->live_libraries() == 2);

  CHECK(kpack_unload_all() == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryUnload") == 2);
  CHECK(fake->live_libraries() == 0);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{0, 0});

  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  // The driver was closed and is opened again; CUDA stays initialized in the
  // process and a context is current, so cuInit is not called again.
  CHECK(fake.count("cuInit") == 1);
  // First the probe, which found CUDA uninitialized, and the launch's own;
  // the second launch's; then only the probe, which found the context and
  // gave the launch its device.
  CHECK(fake.count("cuCtxGetDevice") == 2 + 1 + 1);
  CHECK(fake.count("cuLibraryLoadData") == 3);
  CHECK(fake->live_libraries() == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(fake->kernel_entry(l.function) != nullptr); // a handle of the new library
}

TEST_CASE("specializations compiled in one batch share one fatbin: it is loaded once, unloaded once",
          "[launch][unload]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_BATCH_A, args) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake->last_image() == fx_fatbin_data(FX_BATCH_A));
  // The second specialization takes its kernel from the same library.
  REQUIRE(launch(FX_BATCH_B, args) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("cuLibraryGetKernel") == 2);
  CHECK(fake->live_libraries() == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 2});
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(std::string(fake->kernel_entry(l.function)) == "kpack_batch_b");
  // A specialization with a fatbin of its own still loads its own.
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  CHECK(fake->live_libraries() == 2);

  CHECK(kpack_unload_all() == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryUnload") == 2);
  CHECK(fake->live_libraries() == 0);
  // Loaded again after the unload, once.
  REQUIRE(launch(FX_BATCH_B, args) == KPACK_SUCCESS);
  REQUIRE(launch(FX_BATCH_A, args) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 3);
  CHECK(fake->live_libraries() == 1);
}

TEST_CASE("racing first launches of a batch's specializations load its fatbin once", "[launch][race]") {
  FakeDriver fake;
  std::vector<kpack_status> statuses(16, KPACK_ERROR_INTERNAL);
  race(16, [&](int i) {
    Args args;
    statuses[i] = launch(i % 2 ? FX_BATCH_A : FX_BATCH_B, args);
  });
  for (kpack_status st : statuses) CHECK(st == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake->live_libraries() == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 2});
}

TEST_CASE("kpack_unload_all reports a failed unload and still resets", "[unload]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  REQUIRE(fake->fail_next("cuLibraryUnload", 400) == 0);
  CHECK(kpack_unload_all() == KPACK_ERROR_DRIVER);
  CHECK(kpack_last_cu_result() == 400);
  CHECK(detail() == "kpack_unload_all: cuLibraryUnload failed: CUDA_ERROR_INVALID_HANDLE (400)");
  CHECK(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 2);
}

TEST_CASE("kpack_unload_all with nothing loaded succeeds", "[unload]") {
  FakeDriver fake;
  CHECK(kpack_unload_all() == KPACK_SUCCESS);
  CHECK(kpack_unload_all() == KPACK_SUCCESS);
  CHECK(all_calls(fake) == 0);
}

TEST_CASE("kpack_get_load_counts skips NULL pointers", "[unload]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch(FX_VECTOR_ADD, args) == KPACK_SUCCESS);
  uint64_t functions = 0;
  kpack_get_load_counts(nullptr, &functions);
  CHECK(functions == 1);
  uint64_t libraries = 0;
  kpack_get_load_counts(&libraries, nullptr);
  CHECK(libraries == 1);
  kpack_get_load_counts(nullptr, nullptr);
}

TEST_CASE("kpack_describe fills kpack_spec_info from the descriptor", "[describe]") {
  FakeDriver fake;
  kpack_spec_info info{};
  REQUIRE(fx_describe(FX_VECTOR_ADD, &info) == KPACK_SUCCESS);
  CHECK(std::string(info.kernel) == "vector_add");
  CHECK(std::string(info.name) == "vector_add_f16_b256");
  CHECK(std::string(info.archs) == "sm_80,sm_90");
  CHECK(std::string(info.ptx_archs).empty());
  CHECK(std::string(info.build_mode) == "release");
  CHECK(info.fatbin_size == std::string(static_cast<const char *>(
                                            fx_fatbin_data(FX_VECTOR_ADD))).size() + 1);

  const uint32_t sass[] = {80};
  const uint32_t ptx[] = {80};
  fx_set_probe_archs(sass, 1, "sm_80", ptx, 1, "compute_80");
  REQUIRE(fx_describe(FX_PROBE, &info) == KPACK_SUCCESS);
  CHECK(std::string(info.archs) == "sm_80");
  CHECK(std::string(info.ptx_archs) == "compute_80");
  CHECK(std::string(info.build_mode) == "debug");

  CHECK(fx_describe(FX_VECTOR_ADD, nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_describe: the kernel and the info must not be NULL");
  CHECK(all_calls(fake) == 0); // describing needs no driver
}
