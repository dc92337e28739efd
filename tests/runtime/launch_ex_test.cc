// Tests of kpack_launch_ex (runtime/kpack_runtime.c) against the fake
// driver: launch attributes through cuLaunchKernelEx, the plain
// cuLaunchKernel path it shares with kpack_launch when it has none, its
// argument checks, a driver without cuLaunchKernelEx, launch and load
// failures, shared memory, and racing first launches.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::lean_path;
using kpack_test::race;
using kpack_test::too_old;
using kpack_test::use_lean;

namespace {

constexpr uint32_t kPdl = FX_LAUNCH_PDL;
constexpr uint32_t kCoop = FX_LAUNCH_COOPERATIVE;
constexpr uint32_t kSpread = FX_LAUNCH_CLUSTER_SPREAD;

// Kernel arguments in cuLaunchKernel form: one pointer per parameter.
struct Args {
  float x = 1, y = 2, out = 0;
  void *px = &x, *py = &y, *pout = &out;
  int64_t n = 3;
  void *slots[4] = {&px, &py, &pout, &n};
};

// A kpack_launch_ex's attributes: flags and cluster (0x0x0: none).
struct Attrs {
  uint32_t flags = 0;
  uint32_t cluster[3] = {0, 0, 0};
};

// kpack_launch_ex of `id` with `attrs`, one block of 256 threads and
// `smem` bytes.
kpack_status launch_ex(fx_id id, Args &args, Attrs attrs, uint32_t smem = 0,
                       kpack_stream stream = nullptr) {
  return fx_launch_ex(id, stream, 1, 1, 1, 256, 1, 1, smem, args.slots, attrs.flags,
                      attrs.cluster[0], attrs.cluster[1], attrs.cluster[2]);
}

// The runtime's kpack_get_load_counts() as a pair.
std::pair<uint64_t, uint64_t> load_counts() {
  uint64_t libraries = 0, functions = 0;
  kpack_get_load_counts(&libraries, &functions);
  return {libraries, functions};
}

// Sum of every driver-call counter, to check that a step makes no calls.
unsigned long long all_calls(const fake_cuda_api &fake) {
  unsigned long long sum = 0;
  for (const char *fn : {"cuInit", "cuGetErrorName", "cuCtxGetDevice", "cuDeviceGetAttribute",
                         "cuMemGetInfo_v2", "cuLibraryLoadData", "cuLibraryGetKernel",
                         "cuLibraryUnload", "cuKernelGetFunction", "cuKernelSetAttribute",
                         "cuLaunchKernel", "cuLaunchKernelEx"}) {
    sum += fake.count(fn);
  }
  return sum;
}

// The calling thread's last launch as the fake recorded it.
fake_cuda_launch last_launch(const FakeDriver &fake) {
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return l;
}

} // namespace

// ---- Which entry point --------------------------------------------------------------------

TEST_CASE("kpack_launch launches through cuLaunchKernel", "[launch_ex]") {
  FakeDriver fake;
  Args args;
  REQUIRE(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 1, 1, 0, args.slots) ==
          KPACK_SUCCESS);
  const fake_cuda_launch l = last_launch(fake);
  CHECK(l.via_ex == 0);
  CHECK(l.num_attrs == 0);
  CHECK(l.pdl == 0);
  CHECK(l.cooperative == 0);
  CHECK((l.cluster[0] == 0 && l.cluster[1] == 0 && l.cluster[2] == 0));
  CHECK(fake.count("cuLaunchKernel") == 1);
  CHECK(fake.count("cuLaunchKernelEx") == 0);
}

TEST_CASE("kpack_launch_ex without attributes is kpack_launch, through cuLaunchKernel",
          "[launch_ex]") {
  FakeDriver fake;
  Args args;
  void *stream = fake->stream(1);
  REQUIRE(fx_launch_ex(FX_VECTOR_ADD, static_cast<kpack_stream>(stream), 2, 3, 4, 256, 2, 1, 512,
                       args.slots, 0, 0, 0, 0) == KPACK_SUCCESS);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("lazy_module_load") == 1); // the first launch loaded the module
  CHECK(fake.count("cuLaunchKernel") == 1);
  CHECK(fake.count("cuLaunchKernelEx") == 0);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
  const fake_cuda_launch l = last_launch(fake);
  CHECK(l.via_ex == 0);
  CHECK(l.num_attrs == 0);
  CHECK(l.was_kernel == 1);
  CHECK((l.grid[0] == 2 && l.grid[1] == 3 && l.grid[2] == 4));
  CHECK((l.block[0] == 256 && l.block[1] == 2 && l.block[2] == 1));
  CHECK(l.smem == 512);
  CHECK(l.stream == stream);
  CHECK(l.params == args.slots);

  // After first use: cuCtxGetDevice and cuLaunchKernel, nothing else.
  const unsigned long long before = all_calls(*fake);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(launch_ex(FX_VECTOR_ADD, args, {}) == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuLaunchKernel") == 101);
  CHECK(all_calls(*fake) == before + 200);
}

TEST_CASE("kpack_launch_ex without attributes needs no cuLaunchKernelEx", "[launch_ex]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true); // has no cuLaunchKernelEx
  Args args;
  CHECK(launch_ex(FX_VECTOR_ADD, args, {}) == KPACK_SUCCESS);
  CHECK(launch_ex(FX_VECTOR_ADD, args, {}) == KPACK_SUCCESS);
  CHECK(lean.count("cuLaunchKernel") == 2);
}

TEST_CASE("kpack_launch_ex passes cuLaunchKernelEx exactly the attributes asked for",
          "[launch_ex]") {
  struct Row {
    uint32_t flags;
    unsigned cluster[3];
    int num_attrs;
  };
  const Row rows[] = {
      {kPdl, {0, 0, 0}, 1},         {kCoop, {0, 0, 0}, 1},        {0, {2, 1, 1}, 1},
      {0, {1, 1, 1}, 1},            {kPdl | kCoop, {0, 0, 0}, 2}, {kPdl, {2, 2, 1}, 2},
      {kCoop, {4, 1, 2}, 2},        {kPdl | kCoop, {4, 2, 2}, 3},
  };
  for (const Row &row : rows) {
    INFO("flags " << row.flags << ", cluster " << row.cluster[0] << "x" << row.cluster[1] << "x"
                  << row.cluster[2]);
    FakeDriver fake;
    Args args;
    void *stream = fake->stream(2);
    REQUIRE(fx_launch_ex(FX_VECTOR_ADD, static_cast<kpack_stream>(stream), 8, 4, 2, 128, 2, 1,
                         1024, args.slots, row.flags, row.cluster[0], row.cluster[1],
                         row.cluster[2]) == KPACK_SUCCESS);
    // The first launch on the device, through cuLaunchKernelEx, loaded the
    // module into the context.
    CHECK(fake.count("cuLaunchKernelEx") == 1);
    CHECK(fake.count("cuLaunchKernel") == 0);
    CHECK(fake.count("lazy_module_load") == 1);
    CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});

    const fake_cuda_launch l = last_launch(fake);
    CHECK(l.via_ex == 1);
    CHECK(l.num_attrs == row.num_attrs);
    CHECK(l.pdl == ((row.flags & kPdl) != 0 ? 1u : 0u));
    CHECK(l.cooperative == ((row.flags & kCoop) != 0 ? 1u : 0u));
    CHECK((l.cluster[0] == row.cluster[0] && l.cluster[1] == row.cluster[1] &&
           l.cluster[2] == row.cluster[2]));
    // The CUkernel itself, as for cuLaunchKernel.
    CHECK(l.was_kernel == 1);
    REQUIRE(fake->kernel_entry(l.function) != nullptr);
    CHECK(std::string(fake->kernel_entry(l.function)) == fx_entry(FX_VECTOR_ADD));
    CHECK(l.device == 0);
    CHECK((l.grid[0] == 8 && l.grid[1] == 4 && l.grid[2] == 2));
    CHECK((l.block[0] == 128 && l.block[1] == 2 && l.block[2] == 1));
    CHECK(l.smem == 1024);
    CHECK(l.stream == stream);
    CHECK(l.params == args.slots);
    REQUIRE(l.num_params == 4);
    for (int i = 0; i < 4; ++i) {
      CHECK(l.param_values[i] == args.slots[i]);
    }
    CHECK(l.extra == nullptr);
  }
}

TEST_CASE("after first use a launch with attributes is cuCtxGetDevice plus cuLaunchKernelEx",
          "[launch_ex]") {
  FakeDriver fake;
  Args args;
  REQUIRE(fx_launch_ex(FX_VECTOR_ADD, nullptr, 2, 1, 1, 256, 1, 1, 0, args.slots, kPdl, 2, 1, 1) ==
          KPACK_SUCCESS);
  const unsigned long long before = all_calls(*fake);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(fx_launch_ex(FX_VECTOR_ADD, nullptr, 2, 1, 1, 256, 1, 1, 0, args.slots, kPdl, 2, 1,
                         1) == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuLaunchKernelEx") == 101);
  CHECK(all_calls(*fake) == before + 200); // cuLaunchKernelEx is not looked up again
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

TEST_CASE("kpack_launch and kpack_launch_ex share a kernel's state", "[launch_ex]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
  REQUIRE(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 1, 1, 0, args.slots) == KPACK_SUCCESS);
  CHECK(last_launch(fake).via_ex == 0);
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kCoop}) == KPACK_SUCCESS);
  CHECK(last_launch(fake).cooperative == 1);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("lazy_module_load") == 1); // the device was prepared once, by the first
  CHECK(fake.count("cuLaunchKernelEx") == 2);
  CHECK(fake.count("cuLaunchKernel") == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

// ---- Arguments ---------------------------------------------------------------------------

TEST_CASE("unknown flags and malformed clusters are KPACK_ERROR_INVALID_ARGUMENT", "[launch_ex]") {
  const std::string spec = "vector_add_f16_b256: kpack_launch_ex: ";
  const std::string known = " (known: KPACK_LAUNCH_PDL 0x1, KPACK_LAUNCH_COOPERATIVE 0x2, "
                            "KPACK_LAUNCH_CLUSTER_SPREAD 0x4)";
  const std::string spread_alone =
      "KPACK_LAUNCH_CLUSTER_SPREAD needs a cluster (cluster_x 0 means none)";
  const std::string no_cluster =
      ": cluster_x 0 means no cluster, so cluster_y and cluster_z must be 0 too";
  const std::string at_least_1 = ": every cluster dimension must be at least 1";
  struct Row {
    uint32_t flags, x, y, z;
    std::string detail;
  };
  const Row rows[] = {
      {0x8, 0, 0, 0, spec + "flags 0x8 has unknown bits 0x8" + known},
      {0xf, 2, 1, 1, spec + "flags 0xf has unknown bits 0x8" + known},
      {0x80000001u, 2, 1, 1, spec + "flags 0x80000001 has unknown bits 0x80000000" + known},
      {0x10, 0, 1, 0, spec + "flags 0x10 has unknown bits 0x10" + known}, // flags first
      {0, 0, 1, 0, spec + "cluster 0x1x0" + no_cluster},
      {kPdl, 0, 0, 1, spec + "cluster 0x0x1" + no_cluster},
      {0, 0, 2, 2, spec + "cluster 0x2x2" + no_cluster},
      {0, 2, 0, 1, spec + "cluster 2x0x1" + at_least_1},
      {kCoop, 2, 1, 0, spec + "cluster 2x1x0" + at_least_1},
      {kPdl | kCoop, 1, 0, 0, spec + "cluster 1x0x0" + at_least_1},
      {kSpread, 0, 0, 0, spec + spread_alone},
      {kPdl | kSpread, 0, 0, 0, spec + spread_alone},
      {kSpread, 0, 1, 0, spec + "cluster 0x1x0" + no_cluster}, // the cluster first
  };
  for (const Row &row : rows) {
    INFO("flags " << row.flags << ", cluster " << row.x << "x" << row.y << "x" << row.z);
    FakeDriver fake;
    Args args;
    CHECK(fx_launch_ex(FX_VECTOR_ADD, nullptr, 2, 1, 1, 256, 1, 1, 0, args.slots, row.flags, row.x,
                       row.y, row.z) == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == row.detail);
    CHECK(all_calls(*fake) == 0); // refused before the driver is even asked
    CHECK(load_counts() == std::pair<uint64_t, uint64_t>{0, 0});
    // Nothing latched: a valid launch goes through.
    CHECK(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
  }
}

TEST_CASE("kpack_launch_ex checks its other arguments as kpack_launch does", "[launch_ex]") {
  FakeDriver fake;
  Args args;
  SECTION("a NULL kernel") {
    CHECK(fx_launch_ex_null() == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(detail() == "kpack_launch_ex: the kernel is NULL");
  }
  SECTION("a zero block dimension, before the attributes") {
    CHECK(fx_launch_ex(FX_VECTOR_ADD, nullptr, 1, 1, 1, 256, 0, 1, 0, args.slots, 0x8, 0, 0, 0) ==
          KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(detail() == "vector_add_f16_b256: block dimensions must be nonzero, got 256x0x1");
  }
  SECTION("a descriptor of another ABI") {
    CHECK(launch_ex(FX_NEWER_ABI, args, {kPdl}) == KPACK_ERROR_ABI_MISMATCH);
    CHECK(detail() ==
          "a kernel descriptor was generated for kpack ABI 2, but the linked runtime implements "
          "ABI 1; regenerate the library with the kpack that provides this runtime");
  }
  SECTION("an empty grid launches nothing, whatever the attributes") {
    fake->set_current_device(-1); // would fail if the driver were asked
    CHECK(fx_launch_ex(FX_VECTOR_ADD, nullptr, 0, 1, 1, 256, 1, 1, 0, args.slots, kPdl, 2, 1,
                       1) == KPACK_SUCCESS);
    CHECK(fx_launch_ex(FX_VECTOR_ADD, nullptr, 1, 1, 0, 256, 1, 1, 0, args.slots, 0x8, 0, 1,
                       0) == KPACK_SUCCESS);
  }
  CHECK(all_calls(*fake) == 0);
}

// ---- A driver without cuLaunchKernelEx --------------------------------------------------------

TEST_CASE("without cuLaunchKernelEx a launch with attributes is KPACK_ERROR_DRIVER_TOO_OLD",
          "[launch_ex][driver]") {
  FakeDriver fake;
  const fake_cuda_api &lean = use_lean(true);
  Args args;
  for (const Attrs &attrs : {Attrs{kPdl}, Attrs{kCoop}, Attrs{0, {2, 1, 1}}}) {
    INFO("flags " << attrs.flags << ", cluster_x " << attrs.cluster[0]);
    // Not latched: looked up again, refused again.
    CHECK(launch_ex(FX_VECTOR_ADD, args, attrs) == KPACK_ERROR_DRIVER_TOO_OLD);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == too_old(lean_path(), "cuLaunchKernelEx"));
  }
  // Refused before the load: nothing is loaded for a launch that cannot be made.
  CHECK(lean.count("cuLibraryLoadData") == 0);
  CHECK(lean.count("cuLaunchKernel") == 0);

  // Without attributes the launch is cuLaunchKernel's, which the driver has.
  CHECK(launch_ex(FX_VECTOR_ADD, args, {}) == KPACK_SUCCESS);
  CHECK(lean.count("cuLaunchKernel") == 1);
  // Once the kernel is loaded, as before.
  CHECK(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(detail() == too_old(lean_path(), "cuLaunchKernelEx"));
  CHECK(lean.count("cuLaunchKernel") == 1);
}

TEST_CASE("cuLaunchKernelEx looked up on first use is forgotten with the driver",
          "[launch_ex][driver]") {
  // The full fake stays loaded (the tests hold it), so a stale pointer to
  // its cuLaunchKernelEx would still launch, and be counted there.
  FakeDriver fake;
  Args args;
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
  REQUIRE(fake.count("cuLaunchKernelEx") == 1);
  kpack_unload_all();
  use_lean(true);
  CHECK(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_ERROR_DRIVER_TOO_OLD);
  CHECK(detail() == too_old(lean_path(), "cuLaunchKernelEx"));
  CHECK(fake.count("cuLaunchKernelEx") == 1);
}

// ---- Launch and load failures ------------------------------------------------------------

TEST_CASE("a launch cuLaunchKernelEx rejects is KPACK_ERROR_LAUNCH_FAILED naming its attributes",
          "[launch_ex]") {
  FakeDriver fake;
  Args args;
  // Prepared on the device first, so that what follows is the hot path.
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
  auto launch = [&](uint32_t grid_x, uint32_t flags, uint32_t cluster_x,
                    kpack_stream stream = nullptr) {
    return fx_launch_ex(FX_VECTOR_ADD, stream, grid_x, 2, 1, 128, 1, 1, 1024, args.slots, flags,
                        cluster_x, cluster_x != 0 ? 2 : 0, cluster_x != 0 ? 1 : 0);
  };

  SECTION("every attribute, named in order") {
    REQUIRE(fake->fail_next("cuLaunchKernelEx", 701) == 0);
    CHECK(launch(4, kPdl | kCoop, 2) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 701);
    CHECK(detail() == "vector_add_f16_b256: cuLaunchKernelEx(grid 4x2x1, block 128x1x1, smem "
                      "1024, pdl, cooperative, cluster 2x2x1) failed: "
                      "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)");
  }
  SECTION("only the attributes that are set") {
    REQUIRE(fake->fail_next("cuLaunchKernelEx", 720) == 0);
    CHECK(launch(4, kCoop, 0) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 720);
    CHECK(detail() == "vector_add_f16_b256: cuLaunchKernelEx(grid 4x2x1, block 128x1x1, smem "
                      "1024, cooperative) failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (720)");
  }
  SECTION("an invalid stream") {
    auto bad_stream = reinterpret_cast<kpack_stream>(uintptr_t{0x1234});
    CHECK(launch(4, kPdl, 0, bad_stream) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 400);
    CHECK(detail() == "vector_add_f16_b256: cuLaunchKernelEx(grid 4x2x1, block 128x1x1, smem "
                      "1024, pdl) failed: CUDA_ERROR_INVALID_HANDLE (400)");
  }
  SECTION("a cluster that does not divide the grid") {
    CHECK(launch(3, 0, 2) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(kpack_last_cu_result() == 912);
    CHECK(detail() == "vector_add_f16_b256: cuLaunchKernelEx(grid 3x2x1, block 128x1x1, smem "
                      "1024, cluster 2x2x1) failed: CUDA_ERROR_INVALID_CLUSTER_SIZE (912)");
  }
  SECTION("without attributes the failure is cuLaunchKernel's, as for kpack_launch") {
    REQUIRE(fake->fail_next("cuLaunchKernel", 701) == 0);
    CHECK(launch(4, 0, 0) == KPACK_ERROR_LAUNCH_FAILED);
    CHECK(detail() == "vector_add_f16_b256: cuLaunchKernel(grid 4x2x1, block 128x1x1, smem "
                      "1024) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)");
  }
  // A failed launch changes nothing: the next one goes through.
  CHECK(launch(4, kPdl, 2) == KPACK_SUCCESS);
  CHECK(fake.count("lazy_module_load") == 1);
}

TEST_CASE("a first launch through cuLaunchKernelEx that cannot load its code maps to kpack "
          "statuses",
          "[launch_ex]") {
  // As for kpack_launch (kpack_runtime_test.cc): the driver loads the module
  // into the context inside the first launch on a device.
  const std::string call = "cuLaunchKernelEx(grid 1x1x1, block 256x1x1, smem 0, pdl) failed: ";
  const std::string first =
      "vector_add_f16_b256: first launch on device 0 (sm_80), which loads its code: ";
  struct Row {
    const char *where; // "lazy_module_load" or "cuLaunchKernelEx"
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
      {"cuLaunchKernelEx", 400, KPACK_ERROR_LAUNCH_FAILED,
       "vector_add_f16_b256: " + call + "CUDA_ERROR_INVALID_HANDLE (400)"},
  };
  for (const Row &row : rows) {
    INFO(row.where << " fails with CUresult " << row.cu);
    FakeDriver fake;
    REQUIRE(fake->fail_next(row.where, row.cu) == 0);
    Args args;
    CHECK(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == row.status);
    CHECK(kpack_last_cu_result() == row.cu);
    CHECK(detail() == row.detail);
    CHECK(fake.count("cuLaunchKernelEx") == 1);
    CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 0});
    // The device was not marked ready: the next launch loads the module.
    CHECK(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
    CHECK(fake.count("lazy_module_load") ==
          (std::string(row.where) == "lazy_module_load" ? 2u : 1u));
    CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
  }
}

TEST_CASE("a device without code refused at the first launch through cuLaunchKernelEx",
          "[launch_ex]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(1, 7, 5);
  Args args;
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kCoop}) == KPACK_SUCCESS);
  fake->set_current_device(1);
  CHECK(launch_ex(FX_VECTOR_ADD, args, {kCoop}) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(kpack_last_cu_result() == 209);
  CHECK(detail() ==
        "vector_add_f16_b256: device 1 is sm_75; this library has SASS for sm_80,sm_90 and no PTX");
  CHECK(fake->count_on_device("cuLaunchKernelEx", 1) == 1);
  CHECK(fake->count_on_device("lazy_module_load", 1) == 1); // where the driver refused it
  fake->set_current_device(0);
  CHECK(launch_ex(FX_VECTOR_ADD, args, {kCoop}) == KPACK_SUCCESS);
}

// ---- Dynamic shared memory ----------------------------------------------------------------

TEST_CASE("kpack_launch_ex raises the shared-memory limit once per device", "[launch_ex]") {
  FakeDriver fake;
  fake->set_device_count(2);
  Args args;
  const Attrs attrs{kPdl, {1, 1, 1}};
  for (int i = 0; i < 3; ++i) {
    REQUIRE(launch_ex(FX_BIG_SMEM, args, attrs, 100 * 1024) == KPACK_SUCCESS);
  }
  CHECK(fake->count_on_device("cuKernelSetAttribute", 0) == 1);
  CHECK(fake->last_smem_attribute() == 100 * 1024);
  CHECK(fake->count_on_device("lazy_module_load", 0) == 1);
  CHECK(fake.count("cuLaunchKernelEx") == 3);
  fake_cuda_launch l = last_launch(fake);
  CHECK(l.smem == 100 * 1024);
  CHECK((l.via_ex == 1 && l.pdl == 1 && l.cluster[0] == 1));

  // The first launch on device 1 raises the limit there and loads the module.
  fake->set_current_device(1);
  REQUIRE(launch_ex(FX_BIG_SMEM, args, attrs, 100 * 1024) == KPACK_SUCCESS);
  CHECK(fake->count_on_device("cuKernelSetAttribute", 1) == 1);
  CHECK(fake->count_on_device("lazy_module_load", 1) == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 2});

  // More raises it again; kpack_launch then finds it raised.
  REQUIRE(launch_ex(FX_BIG_SMEM, args, attrs, 150 * 1024) == KPACK_SUCCESS);
  CHECK(fake->count_on_device("cuKernelSetAttribute", 1) == 2);
  REQUIRE(fx_launch(FX_BIG_SMEM, nullptr, 1, 1, 1, 256, 1, 1, 120 * 1024, args.slots) ==
          KPACK_SUCCESS);
  CHECK(fake.count("cuKernelSetAttribute") == 3);
  l = last_launch(fake);
  CHECK((l.via_ex == 0 && l.smem == 120 * 1024));
}

TEST_CASE("kpack_launch_ex with more shared memory than the device allows is "
          "KPACK_ERROR_INVALID_ARGUMENT",
          "[launch_ex]") {
  FakeDriver fake;
  Args args;
  CHECK(launch_ex(FX_BIG_SMEM, args, {kPdl}, 300 * 1024) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(kpack_last_cu_result() == 1);
  CHECK(detail() ==
        "attention_tile64: cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 307200) on device "
        "0 failed: CUDA_ERROR_INVALID_VALUE (1)");
  CHECK(fake.count("cuLaunchKernelEx") == 0);
}

// ---- Clusters ------------------------------------------------------------------------------

namespace {

// CUfunction_attribute and CUclusterSchedulingPolicy values (cuda.h).
constexpr int kNonPortableClusterSizeAllowed = 14;
constexpr unsigned kSpreadPolicy = 1; // CU_CLUSTER_SCHEDULING_POLICY_SPREAD

// kpack_launch_ex of `id` with a cluster of `blocks` x 1 x 1 over a grid of
// `grid_x` blocks of 256 threads.
kpack_status launch_cluster(fx_id id, uint32_t grid_x, uint32_t blocks, uint32_t flags = 0,
                            uint32_t smem = 0) {
  Args args;
  return fx_launch_ex(id, nullptr, grid_x, 1, 1, 256, 1, 1, smem, args.slots, flags, blocks, 1, 1);
}

} // namespace

TEST_CASE("KPACK_LAUNCH_CLUSTER_SPREAD asks cuLaunchKernelEx to spread the cluster",
          "[launch_ex][cluster]") {
  FakeDriver fake;
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 4, 2, kSpread) == KPACK_SUCCESS);
  fake_cuda_launch l = last_launch(fake);
  CHECK(l.num_attrs == 2);
  CHECK((l.cluster[0] == 2 && l.cluster[1] == 1 && l.cluster[2] == 1));
  CHECK(l.cluster_policy == kSpreadPolicy);
  // After the other attributes, as Triton orders them.
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 4, 2, kPdl | kCoop | kSpread) == KPACK_SUCCESS);
  l = last_launch(fake);
  CHECK(l.num_attrs == 4);
  CHECK((l.pdl == 1 && l.cooperative == 1 && l.cluster[0] == 2 && l.cluster_policy == 1));
  // Without the flag, no policy.
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 4, 2) == KPACK_SUCCESS);
  CHECK(last_launch(fake).cluster_policy == 0);
  CHECK(last_launch(fake).num_attrs == 1);
  // A failure names it.
  REQUIRE(fake->fail_next("cuLaunchKernelEx", 701) == 0);
  CHECK(launch_cluster(FX_VECTOR_ADD, 4, 2, kPdl | kSpread) == KPACK_ERROR_LAUNCH_FAILED);
  CHECK(detail() == "vector_add_f16_b256: cuLaunchKernelEx(grid 4x1x1, block 256x1x1, smem 0, "
                    "pdl, cluster 2x1x1, spread) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES "
                    "(701)");
}

TEST_CASE("the first launch with a cluster on a device checks that it fits, once",
          "[launch_ex][cluster]") {
  FakeDriver fake;
  fake->set_device_count(2);
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 8, 4, kSpread) == KPACK_SUCCESS);
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 1);
  fake_cuda_launch q{};
  REQUIRE(fake->last_occupancy_query(&q) == 1);
  CHECK((q.grid[0] == 8 && q.block[0] == 256 && q.smem == 0));
  CHECK((q.cluster[0] == 4 && q.cluster[1] == 1 && q.cluster[2] == 1));
  CHECK(q.num_attrs == 1); // only the cluster
  CHECK(q.function == last_launch(fake).function); // the CUkernel, as launched
  CHECK(fake.count("cuKernelSetAttribute") == 0);   // 4 blocks are portable
  for (int i = 0; i < 5; ++i) {
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 8, 4, kSpread) == KPACK_SUCCESS);
  }
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
  // Another device checks again.
  fake->set_current_device(1);
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 8, 4, kSpread) == KPACK_SUCCESS);
  CHECK(fake->count_on_device("cuOccupancyMaxActiveClusters", 1) == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 2});
}

TEST_CASE("a kernel launched without a cluster checks at its first cluster launch",
          "[launch_ex][cluster]") {
  FakeDriver fake;
  Args args;
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 0);
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 2, 2) == KPACK_SUCCESS);
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 1);
  CHECK(fake.count("lazy_module_load") == 1);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1}); // prepared once
  REQUIRE(launch_cluster(FX_VECTOR_ADD, 2, 2) == KPACK_SUCCESS);
  REQUIRE(launch_ex(FX_VECTOR_ADD, args, {kPdl}) == KPACK_SUCCESS);
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 1);
}

TEST_CASE("a cluster of more than 8 blocks sets the non-portable attribute once per device",
          "[launch_ex][cluster]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_compute_capability(0, 9, 0);
  fake->set_compute_capability(1, 9, 0);
  SECTION("16 blocks from the first launch") {
    for (int i = 0; i < 3; ++i) {
      REQUIRE(launch_cluster(FX_VECTOR_ADD, 32, 16, kSpread) == KPACK_SUCCESS);
    }
    const fake_cuda_launch l = last_launch(fake);
    CHECK(l.cluster[0] == 16);
    CHECK(fake->kernel_attribute(l.function, kNonPortableClusterSizeAllowed, 0) == 1);
    CHECK(fake->kernel_attribute(l.function, kNonPortableClusterSizeAllowed, 1) == 0);
    CHECK(fake->count_on_device("cuKernelSetAttribute", 0) == 1);
    CHECK(fake.count("cuOccupancyMaxActiveClusters") == 1);
    fake->set_current_device(1);
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 16, 16) == KPACK_SUCCESS);
    CHECK(fake->kernel_attribute(l.function, kNonPortableClusterSizeAllowed, 1) == 1);
    CHECK(fake->count_on_device("cuKernelSetAttribute", 1) == 1);
  }
  SECTION("8 blocks are portable: no attribute") {
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 16, 8) == KPACK_SUCCESS);
    CHECK(fake.count("cuKernelSetAttribute") == 0);
    CHECK(fake->kernel_attribute(last_launch(fake).function, kNonPortableClusterSizeAllowed, 0) ==
          0);
  }
  SECTION("2 blocks first, 16 later: set at the first launch that needs it") {
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 16, 2) == KPACK_SUCCESS);
    CHECK(fake.count("cuKernelSetAttribute") == 0);
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 16, 16) == KPACK_SUCCESS);
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 16, 16) == KPACK_SUCCESS);
    CHECK(fake.count("cuKernelSetAttribute") == 1);
    CHECK(fake.count("cuOccupancyMaxActiveClusters") == 2);
  }
}

TEST_CASE("a cluster that cannot run on the device is refused, naming it", "[launch_ex][cluster]") {
  FakeDriver fake;
  fake->set_compute_capability(0, 9, 0);
  fake->set_max_active_clusters(0);
  for (int i = 0; i < 2; ++i) { // not latched: checked again, refused again
    CHECK(launch_cluster(FX_BIG_SMEM, 16, 16, kSpread, 200000) == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == "attention_tile64: cluster 16x1x1 of 256-thread blocks with 200000 bytes of "
                      "shared memory cannot run on device 0 (sm_90): cuOccupancyMaxActiveClusters "
                      "gives 0");
  }
  CHECK(fake.count("cuLaunchKernelEx") == 0); // nothing launched
  CHECK(fake.count("lazy_module_load") == 0);
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 2);
  fake_cuda_launch q{};
  REQUIRE(fake->last_occupancy_query(&q) == 1);
  CHECK(q.smem == 200000); // after the shared-memory limit was raised
  CHECK(fake->last_smem_attribute() == 200000);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 0});
  // Where it fits, it launches.
  fake->set_max_active_clusters(3);
  CHECK(launch_cluster(FX_BIG_SMEM, 16, 16, kSpread, 200000) == KPACK_SUCCESS);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

TEST_CASE("a cluster the driver refuses to size is KPACK_ERROR_INVALID_ARGUMENT naming the call",
          "[launch_ex][cluster]") {
  FakeDriver fake;
  SECTION("more than 16 blocks") {
    CHECK(fx_launch_ex(FX_VECTOR_ADD, nullptr, 32, 1, 1, 128, 1, 1, 0, Args().slots, 0, 32, 1, 1) ==
          KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 912);
    CHECK(detail() == "vector_add_f16_b256: cuOccupancyMaxActiveClusters(cluster 32x1x1, block "
                      "128x1x1, smem 0) on device 0 failed: CUDA_ERROR_INVALID_CLUSTER_SIZE (912)");
    CHECK(fake.count("cuLaunchKernelEx") == 0);
  }
  SECTION("the non-portable attribute refused") {
    REQUIRE(fake->fail_next("cuKernelSetAttribute", 1) == 0);
    CHECK(launch_cluster(FX_VECTOR_ADD, 16, 16) == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 1);
    CHECK(detail() == "vector_add_f16_b256: "
                      "cuKernelSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) on device 0 "
                      "failed: CUDA_ERROR_INVALID_VALUE (1)");
    CHECK(fake.count("cuLaunchKernelEx") == 0);
  }
  SECTION("another failure of the occupancy query") {
    REQUIRE(fake->fail_next("cuOccupancyMaxActiveClusters", 999) == 0);
    CHECK(launch_cluster(FX_VECTOR_ADD, 2, 2) == KPACK_ERROR_DRIVER);
    CHECK(detail() == "vector_add_f16_b256: cuOccupancyMaxActiveClusters(cluster 2x1x1, block "
                      "256x1x1, smem 0) on device 0 failed: CUDA_ERROR_UNKNOWN (999)");
    CHECK(fake.count("cuLaunchKernelEx") == 0);
  }
  SECTION("a device without code for the kernel") {
    fake->set_device_count(2);
    fake->set_compute_capability(1, 7, 5);
    REQUIRE(launch_cluster(FX_VECTOR_ADD, 2, 2) == KPACK_SUCCESS);
    fake->set_current_device(1);
    REQUIRE(fake->fail_next("cuOccupancyMaxActiveClusters", 209) == 0);
    CHECK(launch_cluster(FX_VECTOR_ADD, 2, 2) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
    CHECK(detail() == "vector_add_f16_b256: device 1 is sm_75; this library has SASS for "
                      "sm_80,sm_90 and no PTX");
  }
  CHECK(fake->count_on_device("cuLaunchKernelEx", 1) == 0); // nothing launched where refused
}

TEST_CASE("16 racing first launches with a 16-block cluster set the attribute and check once",
          "[race]") {
  FakeDriver fake;
  fake->set_load_delay_us(5000); // cuKernelSetAttribute sleeps while others arrive
  constexpr int kThreads = 16;
  std::vector<kpack_status> statuses(kThreads, KPACK_ERROR_INTERNAL);
  std::vector<unsigned> policies(kThreads, 0);
  race(kThreads, [&](int t) {
    statuses[t] = launch_cluster(FX_VECTOR_ADD, 32, 16, kSpread);
    fake_cuda_launch l{};
    if (fake->last_launch(&l) == 1 && l.cluster[0] == 16) {
      policies[t] = l.cluster_policy;
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(statuses[t] == KPACK_SUCCESS);
    CHECK(policies[t] == kSpreadPolicy);
  }
  CHECK(fake.count("cuKernelSetAttribute") == 1);
  CHECK(fake.count("cuOccupancyMaxActiveClusters") == 1);
  CHECK(fake.count("lazy_module_load") == 1);
  CHECK(fake.count("cuLaunchKernelEx") == kThreads);
}

// ---- Races ---------------------------------------------------------------------------------

TEST_CASE("32 racing first launches through kpack_launch_ex load exactly once and all launch",
          "[race]") {
  // kpack_runtime_test.cc's race, with attributes: every thread also looks
  // cuLaunchKernelEx up for the first time (run under ThreadSanitizer too).
  FakeDriver fake;
  fake->set_load_delay_us(20000); // hold the loader inside the driver while others arrive
  constexpr int kThreads = 32;
  std::vector<kpack_status> statuses(kThreads, KPACK_ERROR_INTERNAL);
  std::vector<const void *> handles(kThreads, nullptr);
  race(kThreads, [&](int t) {
    Args args;
    statuses[t] = fx_launch_ex(FX_VECTOR_ADD, nullptr, 2, 1, 1, 256, 1, 1, 64 * 1024, args.slots,
                               kPdl, 2, 1, 1);
    fake_cuda_launch l{};
    if (fake->last_launch(&l) == 1 && l.was_kernel && l.via_ex && l.pdl == 1 &&
        l.cluster[0] == 2 && l.params == args.slots) {
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
  CHECK(fake.count("cuKernelSetAttribute") == 1);
  CHECK(fake.count("cuLaunchKernelEx") == kThreads);
  CHECK(fake.count("cuLaunchKernel") == 0);
  CHECK(fake.count("lazy_module_load") == 1); // one first launch, under the lock
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 1});
}

TEST_CASE("threads mixing kpack_launch and kpack_launch_ex over two devices prepare each once",
          "[race]") {
  FakeDriver fake;
  fake->set_device_count(2);
  fake->set_load_delay_us(5000);
  constexpr int kThreads = 16;
  std::atomic<int> failures{0};
  race(kThreads, [&](int t) {
    fake->set_current_device(t % 2);
    Args args;
    // Threads 0, 1, 4, 5, ... use kpack_launch; the others PDL.
    const kpack_status s =
        (t / 2) % 2 == 0
            ? fx_launch(FX_BIG_SMEM, nullptr, 1, 1, 1, 256, 1, 1, 64 * 1024, args.slots)
            : launch_ex(FX_BIG_SMEM, args, {kPdl}, 64 * 1024);
    if (s != KPACK_SUCCESS) {
      failures.fetch_add(1);
    }
  });
  CHECK(failures.load() == 0);
  CHECK(fake.count("cuLibraryLoadData") == 1);
  CHECK(fake.count("cuKernelSetAttribute") == 2); // once per device
  CHECK(fake.count("lazy_module_load") == 2);     // once per device
  CHECK(fake.count("cuLaunchKernel") == kThreads / 2);
  CHECK(fake.count("cuLaunchKernelEx") == kThreads / 2);
  CHECK(load_counts() == std::pair<uint64_t, uint64_t>{1, 2});
}
