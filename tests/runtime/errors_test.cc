// Tests of runtime/errors.c and the name/version functions: status names and
// messages, the thread's last error, kpack_fail and
// kpack_fail_no_specialization.  None of these touch the driver.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <iterator>
#include <string>
#include <thread>

using kpack_test::detail;

TEST_CASE("every status has its pinned value, name and message", "[errors]") {
  struct Row {
    kpack_status status;
    int value;
    const char *name;
    const char *message;
  };
  const Row rows[] = {
      {KPACK_SUCCESS, 0, "KPACK_SUCCESS", "Success."},
      {KPACK_ERROR_INVALID_ARGUMENT, 1, "KPACK_ERROR_INVALID_ARGUMENT", "An argument was invalid."},
      {KPACK_ERROR_DRIVER_NOT_FOUND, 2, "KPACK_ERROR_DRIVER_NOT_FOUND",
       "The NVIDIA driver (libcuda.so.1) could not be loaded."},
      {KPACK_ERROR_DRIVER_TOO_OLD, 3, "KPACK_ERROR_DRIVER_TOO_OLD",
       "The NVIDIA driver is too old: kpack needs a driver for CUDA 12.0 or newer."},
      {KPACK_ERROR_NO_DEVICE, 4, "KPACK_ERROR_NO_DEVICE",
       "CUDA could not be initialized or found no device."},
      {KPACK_ERROR_NO_CONTEXT, 5, "KPACK_ERROR_NO_CONTEXT",
       "The calling thread has no current CUDA context."},
      {KPACK_ERROR_NO_BINARY_FOR_DEVICE, 6, "KPACK_ERROR_NO_BINARY_FOR_DEVICE",
       "The library has no machine code that runs on the current device."},
      {KPACK_ERROR_NO_SPECIALIZATION, 7, "KPACK_ERROR_NO_SPECIALIZATION",
       "No specialization was built for the requested constexpr values."},
      {KPACK_ERROR_OUT_OF_MEMORY, 8, "KPACK_ERROR_OUT_OF_MEMORY",
       "The device ran out of memory while loading a kernel or allocating scratch memory."},
      {KPACK_ERROR_LOAD_FAILED, 9, "KPACK_ERROR_LOAD_FAILED", "The driver could not load a kernel."},
      {KPACK_ERROR_LAUNCH_FAILED, 10, "KPACK_ERROR_LAUNCH_FAILED",
       "The driver rejected the kernel launch."},
      {KPACK_ERROR_ABI_MISMATCH, 11, "KPACK_ERROR_ABI_MISMATCH",
       "The generated launchers were built for a different kpack runtime ABI."},
      {KPACK_ERROR_DRIVER, 12, "KPACK_ERROR_DRIVER", "A CUDA driver call failed."},
      {KPACK_ERROR_INTERNAL, 13, "KPACK_ERROR_INTERNAL", "Internal error in the kpack runtime."},
      {KPACK_ERROR_WORKSPACE_TOO_SMALL, 14, "KPACK_ERROR_WORKSPACE_TOO_SMALL",
       "The scratch workspace of the stream is too small for the launch and cannot grow."},
  };
  REQUIRE(std::size(rows) == KPACK_STATUS_COUNT);
  for (const Row &row : rows) {
    INFO("status " << row.value);
    CHECK(static_cast<int>(row.status) == row.value);
    CHECK(std::string(kpack_status_name(row.status)) == row.name);
    CHECK(std::string(kpack_status_message(row.status)) == row.message);
  }
}

TEST_CASE("unknown status values get a name and a message, never NULL", "[errors]") {
  for (int value : {-1, KPACK_STATUS_COUNT, 1000}) {
    INFO("value " << value);
    CHECK(std::string(fx_status_name(value)) == "KPACK_STATUS_UNKNOWN");
    CHECK(std::string(fx_status_message(value)) == "Unknown kpack status code.");
  }
}

TEST_CASE("dtype names are the manifest spellings", "[errors]") {
  const std::pair<kpack_dtype, const char *> rows[] = {
      {KPACK_DTYPE_F32, "f32"}, {KPACK_DTYPE_F16, "f16"}, {KPACK_DTYPE_BF16, "bf16"},
      {KPACK_DTYPE_F64, "f64"}, {KPACK_DTYPE_I8, "i8"},   {KPACK_DTYPE_I16, "i16"},
      {KPACK_DTYPE_I32, "i32"}, {KPACK_DTYPE_I64, "i64"}, {KPACK_DTYPE_U8, "u8"},
      {KPACK_DTYPE_U16, "u16"}, {KPACK_DTYPE_U32, "u32"}, {KPACK_DTYPE_U64, "u64"},
  };
  for (const auto &[dtype, name] : rows) {
    CHECK(std::string(kpack_dtype_name(dtype)) == name);
  }
  CHECK(std::string(kpack_dtype_name(static_cast<kpack_dtype>(0))) == "?");
  CHECK(std::string(kpack_dtype_name(static_cast<kpack_dtype>(99))) == "?");
}

TEST_CASE("version functions report the linked runtime", "[errors]") {
  CHECK(kpack_version_number() == KPACK_VERSION_NUMBER);
  CHECK(kpack_version_number() == 100);
  CHECK(std::string(kpack_version_string()) == KPACK_VERSION_STRING);
  CHECK(std::string(kpack_version_string()) == "0.1.0");
  CHECK(kpack_abi_version() == KPACK_ABI_VERSION);
  CHECK(kpack_abi_version() == 1);
}

TEST_CASE("a fresh thread has no error", "[errors]") {
  std::string seen = "unset";
  int cu = -1;
  std::thread([&] {
    seen = kpack_last_error_detail();
    cu = kpack_last_cu_result();
  }).join();
  CHECK(seen.empty());
  CHECK(cu == 0);
}

TEST_CASE("no-specialization detail names the requested and the built values", "[errors]") {
  const char *const names[] = {"T", "BLOCK", "CAUSAL"};
  const int kinds[] = {FX_CONSTEXPR_DTYPE, FX_CONSTEXPR_INT, FX_CONSTEXPR_BOOL};

  SECTION("dtype, int and true") {
    const int64_t values[] = {KPACK_DTYPE_F16, 1024, 1};
    CHECK(fx_fail_no_specialization("vector_add", "T=f32 BLOCK=256, T=f16 BLOCK=256", 3, names,
                                    kinds, values) == KPACK_ERROR_NO_SPECIALIZATION);
    CHECK(detail() ==
          "vector_add: no specialization T=f16 BLOCK=1024 CAUSAL=true; built: T=f32 BLOCK=256, "
          "T=f16 BLOCK=256");
    CHECK(kpack_last_cu_result() == 0);
  }
  SECTION("false, negative ints and unknown dtypes") {
    const int64_t values[] = {99, -3, 0};
    fx_fail_no_specialization("mask_fill", "T=f32 BLOCK=64 CAUSAL=true", 3, names, kinds, values);
    CHECK(detail() ==
          "mask_fill: no specialization T=? BLOCK=-3 CAUSAL=false; built: T=f32 BLOCK=64 "
          "CAUSAL=true");
  }
  SECTION("the first values only, when count says so") {
    const int64_t values[] = {KPACK_DTYPE_BF16, 128, 1};
    fx_fail_no_specialization("softmax", "T=f32", 1, names, kinds, values);
    CHECK(detail() == "softmax: no specialization T=bf16; built: T=f32");
  }
}

TEST_CASE("a failure clears the CUresult of an earlier driver failure", "[errors]") {
  kpack_test::FakeDriver fake;
  fake->set_current_device(-1);
  REQUIRE(fx_launch(FX_VECTOR_ADD, nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr) ==
          KPACK_ERROR_NO_CONTEXT);
  REQUIRE(kpack_last_cu_result() == 201);
  fx_fail_no_specialization("k", "", 0, nullptr, nullptr, nullptr);
  CHECK(kpack_last_cu_result() == 0);
  CHECK(detail() == "k: no specialization; built: ");
}

TEST_CASE("a detail longer than the buffer is truncated and marked", "[errors]") {
  const std::string built(5000, 'x');
  fx_fail_no_specialization("vector_add", built.c_str(), 0, nullptr, nullptr, nullptr);
  const std::string text = detail();
  CHECK(text.size() == 1023);
  CHECK(text.rfind("vector_add: no specialization; built: xxx", 0) == 0);
  CHECK(text.substr(text.size() - 4) == "x...");
}

TEST_CASE("kpack_fail formats the detail and returns the status", "[errors]") {
  CHECK(fx_fail_grid(KPACK_ERROR_INVALID_ARGUMENT, 70000, 65535) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "grid.y 70000 exceeds the device limit 65535");
  CHECK(kpack_last_cu_result() == 0);
}

TEST_CASE("the last error is per thread", "[errors]") {
  fx_fail_grid(KPACK_ERROR_INVALID_ARGUMENT, 1, 2);
  std::string other;
  std::thread([&] {
    fx_fail_no_specialization("other_thread", "none", 0, nullptr, nullptr, nullptr);
    other = kpack_last_error_detail();
  }).join();
  CHECK(other == "other_thread: no specialization; built: none");
  CHECK(detail() == "grid.y 1 exceeds the device limit 2");
}
