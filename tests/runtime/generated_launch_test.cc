// The golden package's generated launchers (tests/compiler/golden/gk_launch.c)
// against the fake driver: a kernel with `divisibility: auto` params runs its
// aligned variant exactly when every auto value is a multiple of 16, one
// with `width: auto` params its i32 variant exactly when every such value
// fits in 32 bits (and passes it 32-bit copies), each variant's fatbin is
// loaded on first use only, and enumeration shows specializations, not
// variants.
#include <cstdint>
#include <cstring>
#include <string>

#include "gk.h"
#include "golden_blobs.h"
#include "test_env.h"

using kpack_test::detail;
using kpack_test::FakeDriver;

namespace {

uint64_t libraries_loaded() {
  uint64_t libraries = 0;
  kpack_get_load_counts(&libraries, nullptr);
  return libraries;
}

// Addresses the fake never dereferences: 16-byte aligned unless offset.
const float* X(uintptr_t offset = 0) { return reinterpret_cast<const float*>(0x10000 + offset); }
float* Out(uintptr_t offset = 0) { return reinterpret_cast<float*>(0x20000 + offset); }
const float* Bias(uintptr_t offset = 0) { return reinterpret_cast<const float*>(0x30000 + offset); }

struct Launched {
  const void* image;  // the fatbin loaded last
  unsigned smem;
  unsigned block;
};

Launched Last(const FakeDriver& fake) {
  fake_cuda_launch l{};
  REQUIRE(fake->last_launch(&l) == 1);
  return {fake->last_image(), l.smem, l.block[0]};
}

}  // namespace

TEST_CASE("a generated launcher runs the aligned variant only when every auto value is a multiple of 16",
          "[generated]") {
  FakeDriver fake;
  // Aligned pointers and stride (which fits in 32 bits): the aligned i32
  // variant (blob 12, 1024 bytes of shared memory in the golden's Triton
  // metadata), loaded on this launch.
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, 64) == KPACK_SUCCESS);
  Launched a = Last(fake);
  CHECK(a.image == gk_blob_data(12));
  CHECK(a.smem == 1024);
  CHECK(a.block == 128);
  CHECK(libraries_loaded() == 1);

  // An odd stride (a vocab of 50257): the unhinted i32 build, loaded now.
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, 50257) == KPACK_SUCCESS);
  CHECK(Last(fake).image == gk_blob_data(11));
  CHECK(Last(fake).smem == 512);
  CHECK(libraries_loaded() == 2);

  // Each auto param alone decides: a pointer 4 bytes off, or a stride of 8.
  fake_cuda_launch aligned_launch{}, l{};
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, 16) == KPACK_SUCCESS);
  REQUIRE(fake->last_launch(&aligned_launch) == 1);
  CHECK(aligned_launch.smem == 1024);
  REQUIRE(gk_rows_f32_b1024(nullptr, X(4), Out(), Bias(), 4, 64) == KPACK_SUCCESS);
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(l.smem == 512);
  CHECK(l.function != aligned_launch.function);
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(8), Bias(), 4, 64) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 512);
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, 8) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 512);
  // Zero and negative multiples of 16 are multiples of 16.
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, 0) == KPACK_SUCCESS);
  REQUIRE(fake->last_launch(&l) == 1);
  CHECK(l.function == aligned_launch.function);
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, -32) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1024);
  REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 4, -33) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 512);
  // Both variants are loaded once each, whatever the number of launches.
  CHECK(libraries_loaded() == 2);
  CHECK(fake.count("cuLibraryLoadData") == 2);

  // The dispatcher reaches the same typed launcher.
  REQUIRE(gk_rows(nullptr, KPACK_DTYPE_F32, 1024, X(), Out(), Bias(), 4, 4096) == KPACK_SUCCESS);
  CHECK(Last(fake).smem == 1024);
}

namespace {

// What the i32 test's launch hook saw of the stride (param 4) and rows
// (param 3), read as `stride_bytes` wide: the launcher must pass a 32-bit
// copy to an i32 build and the 64-bit value to the others.
thread_local size_t stride_bytes = 8;
thread_local int64_t seen_stride = 0;
thread_local int32_t seen_rows = 0;

void SeeStride(const fake_cuda_launch* l) {
  REQUIRE(l->num_params == 7);
  if (stride_bytes == 4) {
    int32_t v = 0;
    std::memcpy(&v, l->param_values[4], sizeof v);
    seen_stride = v;
  } else {
    std::memcpy(&seen_stride, l->param_values[4], sizeof seen_stride);
  }
  std::memcpy(&seen_rows, l->param_values[3], sizeof seen_rows);
}

}  // namespace

TEST_CASE("a generated launcher runs the i32 variant only when every width: auto value fits in 32 bits",
          "[generated]") {
  FakeDriver fake;
  fake->set_launch_hook(SeeStride);
  struct {
    int64_t stride;
    int blob;  // the build that must run: 6 unhinted, 10 aligned, 11 i32, 12 aligned i32
  } cases[] = {
      {INT32_MAX, 11},                           // odd, fits: the i32 build
      {int64_t{INT32_MAX} + 1, 10},              // 2^31, a multiple of 16: aligned, 64-bit
      {INT32_MIN, 12},                           // -2^31 fits and is a multiple of 16
      {int64_t{INT32_MIN} - 16, 10},             // one step further: 64-bit again
      {(int64_t{1} << 32) + 50257, 6},           // odd and wide: the unhinted 64-bit build
      {int64_t{1} << 40, 10},
  };
  uint64_t loaded = 0;
  for (const auto& c : cases) {
    INFO("stride " << c.stride);
    const bool narrow = c.blob == 11 || c.blob == 12;
    stride_bytes = narrow ? 4 : 8;
    seen_stride = 0;
    REQUIRE(gk_rows_f32_b1024(nullptr, X(), Out(), Bias(), 9, c.stride) == KPACK_SUCCESS);
    CHECK(seen_stride == c.stride);
    CHECK(seen_rows == 9);
    fake_cuda_launch l{};
    REQUIRE(fake->last_launch(&l) == 1);
    CHECK(l.smem == (c.blob == 10 ? 2048u : c.blob == 12 ? 1024u : 512u));
    // Each build is its own library, loaded on its first launch.
    if (libraries_loaded() != loaded) CHECK(fake->last_image() == gk_blob_data(c.blob));
    loaded = libraries_loaded();
  }
  CHECK(loaded == 4);
  CHECK(fake.count("cuLibraryLoadData") == 4);
}

TEST_CASE("a divisibility: 16 param stays a precondition beside the auto ones", "[generated]") {
  FakeDriver fake;
  CHECK(gk_rows_f16_b1024(nullptr, nullptr, nullptr, reinterpret_cast<const float*>(0x30004), 4, 64) ==
        KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "rows_f16_b1024: bias must be 16-byte aligned (divisibility: 16 in the manifest)");
  CHECK(libraries_loaded() == 0);
}

TEST_CASE("only the variant launched is loaded, and its errors name it", "[generated]") {
  FakeDriver fake;
  fake->set_compute_capability(0, 7, 5);
  CHECK(gk_rows_f16_b1024(nullptr, nullptr, nullptr, nullptr, 4, 64) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() ==
        "rows_f16_b1024 (aligned i32 variant): device 0 is sm_75; this library has SASS for sm_80,sm_90a and no PTX");
  CHECK(gk_rows_f16_b1024(nullptr, nullptr, nullptr, nullptr, 4, 63) == KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() == "rows_f16_b1024 (i32 variant): device 0 is sm_75; this library has SASS for sm_80,sm_90a and no PTX");
  CHECK(gk_rows_f16_b1024(nullptr, nullptr, nullptr, nullptr, 4, int64_t{1} << 33) ==
        KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() == "rows_f16_b1024 (aligned variant): device 0 is sm_75; this library has SASS for sm_80,sm_90a and no PTX");
  CHECK(gk_rows_f16_b1024(nullptr, nullptr, nullptr, nullptr, 4, (int64_t{1} << 33) + 1) ==
        KPACK_ERROR_NO_BINARY_FOR_DEVICE);
  CHECK(detail() == "rows_f16_b1024: device 0 is sm_75; this library has SASS for sm_80,sm_90a and no PTX");
}

TEST_CASE("enumeration lists specializations, not variants; the size is every build's", "[generated]") {
  REQUIRE(gk_num_specializations() == 7);
  kpack_spec_info info{};
  REQUIRE(gk_specialization_info(0, &info) == KPACK_SUCCESS);
  CHECK(info.fatbin_size == gk_blob_size(0));
  for (size_t i = 5; i < 7; ++i) {
    INFO("index " << i);
    REQUIRE(gk_specialization_info(i, &info) == KPACK_SUCCESS);
    CHECK(std::string(info.kernel) == "rows");
    CHECK(std::string(info.name) == (i == 5 ? "rows_f16_b1024" : "rows_f32_b1024"));
    CHECK(std::string(info.archs) == "sm_80,sm_90a");
    // Specialization i keeps blob i; the variants' blobs follow them all,
    // three per specialization (aligned, i32, aligned i32).
    const int first = 7 + 3 * static_cast<int>(i - 5);
    CHECK(info.fatbin_size == gk_blob_size(static_cast<int>(i)) + gk_blob_size(first) + gk_blob_size(first + 1) +
                                  gk_blob_size(first + 2));
  }
  CHECK(gk_specialization_info(7, &info) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "gk_specialization_info: index 7 >= 7");
}
