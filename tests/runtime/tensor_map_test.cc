// Tests of kpack_tensor_map_encode (runtime/tensor_map.c) against the fake
// driver: what cuTensorMapEncodeTiled receives (innermost first, byte
// strides), every check's detail, the driver's own refusal, the
// per-thread cache (hits make no driver call, any changed value misses),
// and a driver without the entry point.
#include "fixtures.h"
#include "kpack.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using kpack_test::detail;
using kpack_test::FakeDriver;
using kpack_test::lean_path;
using kpack_test::race;
using kpack_test::too_old;
using kpack_test::use_lean;

namespace {

// CUtensorMapDataType values (cuda.h), spelled out: the tests do not
// include cuda.h.
constexpr uint32_t kUint16 = 1;
constexpr uint32_t kFloat16 = 6;
constexpr uint32_t kFloat32 = 7;
constexpr uint32_t kBfloat16 = 9;

// A device address for the fake (never dereferenced).
const uintptr_t kBase = 0x7f0000000000;

// One call's arguments: a bf16 matrix of 128 x 256 (row stride 256
// elements, 512 bytes), box 64 x 64, swizzle 128B.
struct Call {
  fx_tensor_map_spec spec{kBfloat16, 2, 2, {64, 64, 0, 0, 0}, 3, 0};
  uintptr_t base = kBase;
  int64_t shape[5] = {128, 256, 0, 0, 0};
  int64_t strides[5] = {256, 1, 0, 0, 0};
  alignas(128) unsigned char map[128 + 64] = {};
  int32_t shape32[5] = {-1, -1, -1, -1, -1};

  kpack_status encode(const char *who = "k", const char *param = "a") {
    return fx_tensor_map_encode(who, param, &spec, reinterpret_cast<const void *>(base), shape,
                                strides, map, shape32);
  }
};

// The fake's serial number in an encoded map (bytes 16..23).
unsigned long long serial_of(const unsigned char *map) {
  unsigned long long serial = 0;
  std::memcpy(&serial, map + 16, sizeof serial);
  return serial;
}

// The calling thread's last cuTensorMapEncodeTiled call.
fake_cuda_tensor_map_call last_call(const FakeDriver &fake) {
  fake_cuda_tensor_map_call c{};
  REQUIRE(fake->last_tensor_map(&c) == 1);
  return c;
}

std::string hex(uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

} // namespace

// ---- The driver's arguments -----------------------------------------------------------------

TEST_CASE("kpack_tensor_map_encode passes cuTensorMapEncodeTiled innermost first, in bytes",
          "[tensor_map]") {
  FakeDriver fake;
  SECTION("rank 2, bf16, swizzle 128B, zero padding") {
    Call call;
    REQUIRE(call.encode() == KPACK_SUCCESS);
    const fake_cuda_tensor_map_call c = last_call(fake);
    CHECK(c.data_type == int(kBfloat16));
    CHECK(c.rank == 2);
    CHECK(c.address == reinterpret_cast<const void *>(kBase));
    CHECK((c.dims[0] == 256 && c.dims[1] == 128));
    CHECK(c.strides[0] == 512); // 256 elements of 2 bytes; the last stride is implied
    CHECK((c.box[0] == 64 && c.box[1] == 64));
    CHECK((c.element_strides[0] == 1 && c.element_strides[1] == 1));
    CHECK(c.interleave == 0); // CU_TENSOR_MAP_INTERLEAVE_NONE
    CHECK(c.swizzle == 3);    // CU_TENSOR_MAP_SWIZZLE_128B
    CHECK(c.l2_promotion == 2); // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
    CHECK(c.oob_fill == 0);   // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    // The caller's map is the driver's, byte for byte.
    CHECK(std::memcmp(call.map, "FAKETMAP", 8) == 0);
    CHECK(serial_of(call.map) == c.serial);
    CHECK((call.shape32[0] == 128 && call.shape32[1] == 256 && call.shape32[2] == -1));
  }
  SECTION("rank 3, f32, a box cut per CTA, nan padding, swizzle 64B") {
    Call call;
    call.spec = {kFloat32, 4, 3, {1, 32, 16, 0, 0}, 2, 1};
    call.shape[0] = 4, call.shape[1] = 100, call.shape[2] = 48;
    call.strides[0] = 100 * 52, call.strides[1] = 52, call.strides[2] = 1; // padded rows
    REQUIRE(call.encode() == KPACK_SUCCESS);
    const fake_cuda_tensor_map_call c = last_call(fake);
    CHECK(c.data_type == int(kFloat32));
    CHECK(c.rank == 3);
    CHECK((c.dims[0] == 48 && c.dims[1] == 100 && c.dims[2] == 4));
    CHECK((c.strides[0] == 52 * 4 && c.strides[1] == 100 * 52 * 4));
    CHECK((c.box[0] == 16 && c.box[1] == 32 && c.box[2] == 1));
    CHECK((c.element_strides[0] == 1 && c.element_strides[1] == 1 && c.element_strides[2] == 1));
    CHECK(c.swizzle == 2);
    CHECK(c.oob_fill == 1); // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    CHECK((call.shape32[0] == 4 && call.shape32[1] == 100 && call.shape32[2] == 48));
  }
  SECTION("rank 1, u16, no swizzle, no shape32 wanted") {
    Call call;
    call.spec = {kUint16, 2, 1, {256, 0, 0, 0, 0}, 0, 0};
    call.shape[0] = 1000;
    call.strides[0] = 1;
    REQUIRE(fx_tensor_map_encode("k", "a", &call.spec, reinterpret_cast<const void *>(kBase),
                                 call.shape, call.strides, call.map, nullptr) == KPACK_SUCCESS);
    const fake_cuda_tensor_map_call c = last_call(fake);
    CHECK((c.rank == 1 && c.dims[0] == 1000 && c.box[0] == 256 && c.swizzle == 0));
  }
  SECTION("a map 64-byte aligned but not 128: the runtime copies the driver's map there") {
    Call call;
    unsigned char *map = call.map + 64;
    REQUIRE(fx_tensor_map_encode("k", "a", &call.spec, reinterpret_cast<const void *>(kBase),
                                 call.shape, call.strides, map, nullptr) == KPACK_SUCCESS);
    CHECK(std::memcmp(map, "FAKETMAP", 8) == 0);
  }
  CHECK(fake.count("cuTensorMapEncodeTiled") == 1);
}

TEST_CASE("kpack_tensor_map_encode needs the driver but no context", "[tensor_map]") {
  FakeDriver fake;
  fake->set_current_device(-1); // no context on this thread
  Call call;
  CHECK(call.encode() == KPACK_SUCCESS);
  CHECK(fake.count("cuInit") == 1); // the driver was loaded for it
  CHECK(fake.count("cuTensorMapEncodeTiled") == 1);
}

// ---- The runtime's checks -------------------------------------------------------------------

TEST_CASE("every check of kpack_tensor_map_encode names the value, before the driver",
          "[tensor_map]") {
  struct Row {
    const char *what;
    void (*change)(Call &);
    std::string detail;
  };
  const std::string p = "k: a: ";
  const Row rows[] = {
      {"rank 0", [](Call &c) { c.spec.rank = 0; },
       p + "rank 0 is outside 1..5 (TMA tensors have 1 to 5 dimensions)"},
      {"rank 6", [](Call &c) { c.spec.rank = 6; },
       p + "rank 6 is outside 1..5 (TMA tensors have 1 to 5 dimensions)"},
      {"a packed data type", [](Call &c) { c.spec.data_type = 13; },
       p + "data type 13 is not one kpack encodes (0 UINT8 .. 12 TFLOAT32_FTZ)"},
      {"a size not the type's", [](Call &c) { c.spec.elem_bytes = 4; },
       p + "element size 4 bytes does not match data type 9 (BFLOAT16, 2 bytes)"},
      {"swizzle 4", [](Call &c) { c.spec.swizzle = 4; },
       p + "swizzle 4 is not 0 (none), 1 (32B), 2 (64B) or 3 (128B)"},
      {"oob_nan 2", [](Call &c) { c.spec.oob_nan = 2; },
       p + "oob_nan 2 is not 0 (zero padding) or 1 (nan padding)"},
      {"nan padding of integers",
       [](Call &c) {
         c.spec.data_type = kUint16;
         c.spec.oob_nan = 1;
       },
       p + "padding nan needs a floating-point data type; UINT16 is not one"},
      {"a base 8 bytes off", [](Call &c) { c.base = 0x7f0000000008; },
       p + "base 0x7f0000000008 is not 16-byte aligned (TMA needs 16)"},
      {"an empty dimension", [](Call &c) { c.shape[1] = 0; },
       p + "shape[1] = 0 is outside 1..2147483647 (the kernel receives i32 shapes)"},
      {"a negative dimension", [](Call &c) { c.shape[0] = -5; },
       p + "shape[0] = -5 is outside 1..2147483647 (the kernel receives i32 shapes)"},
      {"a dimension past i32", [](Call &c) { c.shape[0] = int64_t{1} << 31; },
       p + "shape[0] = 2147483648 is outside 1..2147483647 (the kernel receives i32 shapes)"},
      {"a negative stride", [](Call &c) { c.strides[0] = -256; },
       p + "strides[0] = -256 is negative (TMA needs positive strides)"},
      {"a stride of 2^40 bytes", [](Call &c) { c.strides[0] = int64_t{1} << 39; },
       p + "strides[0] = 549755813888 elements of 2 bytes is not below 2^40 bytes (TMA's "
           "limit)"},
      {"a stride whose bytes overflow", [](Call &c) { c.strides[0] = int64_t{1} << 62; },
       p + "strides[0] = 4611686018427387904 elements of 2 bytes is not below 2^40 bytes (TMA's "
           "limit)"},
      {"a stride of 14 bytes", [](Call &c) { c.strides[0] = 7; },
       p + "strides[0] = 7 elements of 2 bytes is 14 bytes, not a multiple of 16 (TMA needs 16)"},
      {"a last stride of 2", [](Call &c) { c.strides[1] = 2; },
       p + "strides[1] = 2, but the last stride must be 1 (the innermost dimension contiguous)"},
      {"a box of 0", [](Call &c) { c.spec.box[0] = 0; },
       p + "box[0] = 0 is outside 1..256 (TMA's box limit)"},
      {"a box of 257", [](Call &c) { c.spec.box[1] = 257; },
       p + "box[1] = 257 is outside 1..256 (TMA's box limit)"},
      {"an inner box of 8 bytes", [](Call &c) { c.spec.box[1] = 4; },
       p + "box[1] = 4 elements of 2 bytes is 8 bytes, not a multiple of 16 (TMA needs 16)"},
  };
  for (const Row &row : rows) {
    INFO(row.what);
    FakeDriver fake;
    Call call;
    row.change(call);
    CHECK(call.encode() == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == row.detail);
    CHECK(fake.count("cuTensorMapEncodeTiled") == 0);
    CHECK(call.shape32[0] == -1); // nothing written
  }
}

TEST_CASE("kpack_tensor_map_encode refuses NULL arguments and a misaligned map", "[tensor_map]") {
  FakeDriver fake;
  Call call;
  const void *base = reinterpret_cast<const void *>(kBase);
  CHECK(fx_tensor_map_encode("k", "a", nullptr, base, call.shape, call.strides, call.map,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "k: a: the spec is NULL");
  CHECK(fx_tensor_map_encode("k", "a", &call.spec, nullptr, call.shape, call.strides, call.map,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "k: a: the base address is NULL");
  CHECK(fx_tensor_map_encode("k", "a", &call.spec, base, nullptr, call.strides, call.map,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "k: a: the shape is NULL");
  CHECK(fx_tensor_map_encode("k", "a", &call.spec, base, call.shape, nullptr, call.map,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "k: a: the stride array is NULL");
  CHECK(fx_tensor_map_encode("k", "a", &call.spec, base, call.shape, call.strides, nullptr,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "k: a: the map is NULL");
  unsigned char *misaligned = call.map + 32;
  CHECK(fx_tensor_map_encode("k", "a", &call.spec, base, call.shape, call.strides, misaligned,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "k: a: map " + hex(reinterpret_cast<uintptr_t>(misaligned)) +
                        " is not 64-byte aligned (CUtensorMap needs 64)");
  // Without names.
  CHECK(fx_tensor_map_encode(nullptr, nullptr, nullptr, base, call.shape, call.strides, call.map,
                             nullptr) == KPACK_ERROR_INVALID_ARGUMENT);
  CHECK(detail() == "kpack_tensor_map_encode: ?: the spec is NULL");
  CHECK(kpack_last_cu_result() == 0);
  CHECK(fake.count("cuTensorMapEncodeTiled") == 0);
  CHECK(fake.count("cuInit") == 0); // refused before the driver is even loaded
}

// ---- The driver's refusal ---------------------------------------------------------------------

TEST_CASE("a map the driver refuses is KPACK_ERROR_INVALID_ARGUMENT listing the call",
          "[tensor_map]") {
  FakeDriver fake;
  SECTION("an inner box wider than the swizzle span") {
    Call call;
    call.spec.swizzle = 1; // 32B, but the box is 64 bf16: 128 bytes
    CHECK(call.encode() == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 1);
    CHECK(detail() == "k: a: cuTensorMapEncodeTiled(type 9 (BFLOAT16), rank 2, address "
                      "0x7f0000000000, dims [256, 128], byte strides [512], box [64, 64], "
                      "element strides [1, 1], interleave none, swizzle 32B, L2 promotion 128B, "
                      "oob fill none) failed: CUDA_ERROR_INVALID_VALUE (1)");
  }
  SECTION("a failure of the driver's own, rank 3 with nan padding") {
    Call call;
    call.spec = {kFloat16, 2, 3, {2, 8, 64, 0, 0}, 3, 1};
    call.shape[0] = 3, call.shape[1] = 40, call.shape[2] = 64;
    call.strides[0] = 40 * 64, call.strides[1] = 64, call.strides[2] = 1;
    REQUIRE(fake->fail_next("cuTensorMapEncodeTiled", 999) == 0);
    CHECK(call.encode("spec", "x") == KPACK_ERROR_INVALID_ARGUMENT);
    CHECK(kpack_last_cu_result() == 999);
    CHECK(detail() == "spec: x: cuTensorMapEncodeTiled(type 6 (FLOAT16), rank 3, address "
                      "0x7f0000000000, dims [64, 40, 3], byte strides [128, 5120], box [64, 8, "
                      "2], element strides [1, 1, 1], interleave none, swizzle 128B, L2 "
                      "promotion 128B, oob fill nan) failed: CUDA_ERROR_UNKNOWN (999)");
    // A failure is not cached: the same call asks the driver again.
    CHECK(call.encode() == KPACK_SUCCESS);
    CHECK(fake.count("cuTensorMapEncodeTiled") == 2);
  }
}

TEST_CASE("without cuTensorMapEncodeTiled kpack_tensor_map_encode is KPACK_ERROR_DRIVER_TOO_OLD",
          "[tensor_map][driver]") {
  FakeDriver fake;
  use_lean(true);
  Call call;
  for (int i = 0; i < 2; ++i) { // not latched: looked up again, refused again
    CHECK(call.encode() == KPACK_ERROR_DRIVER_TOO_OLD);
    CHECK(kpack_last_cu_result() == 0);
    CHECK(detail() == too_old(lean_path(), "cuTensorMapEncodeTiled"));
  }
}

// ---- The cache ------------------------------------------------------------------------------

TEST_CASE("a repeated encoding is copied from the thread's cache, with no driver call",
          "[tensor_map]") {
  FakeDriver fake;
  Call first;
  REQUIRE(first.encode() == KPACK_SUCCESS);
  const unsigned long long serial = serial_of(first.map);
  for (int i = 0; i < 10; ++i) {
    Call again; // another map, another spec object: the same values
    REQUIRE(again.encode() == KPACK_SUCCESS);
    CHECK(std::memcmp(again.map, first.map, 128) == 0);
    CHECK((again.shape32[0] == 128 && again.shape32[1] == 256));
  }
  CHECK(serial_of(first.map) == serial);
  CHECK(fake.count("cuTensorMapEncodeTiled") == 1);
}

TEST_CASE("any changed value misses the cache and encodes anew", "[tensor_map]") {
  struct Row {
    const char *what;
    void (*change)(Call &);
  };
  const Row rows[] = {
      {"base", [](Call &c) { c.base += 16; }},
      {"shape[0]", [](Call &c) { c.shape[0] = 127; }},
      {"shape[1]", [](Call &c) { c.shape[1] = 248; }},
      {"strides[0]", [](Call &c) { c.strides[0] = 264; }},
      {"box[0]", [](Call &c) { c.spec.box[0] = 32; }},
      {"box[1]", [](Call &c) { c.spec.box[1] = 32; }},
      {"swizzle", [](Call &c) { c.spec.swizzle = 0; }},
      {"padding", [](Call &c) { c.spec.oob_nan = 1; }},
      {"data type", [](Call &c) { c.spec.data_type = kFloat16; }},
      {"rank",
       [](Call &c) { // the same leading values, one dimension more
         c.spec.rank = 3;
         c.spec.box[2] = 8;
         c.shape[2] = 8;
         c.strides[0] = 256 * 8, c.strides[1] = 8, c.strides[2] = 1;
       }},
  };
  FakeDriver fake;
  Call base_call;
  REQUIRE(base_call.encode() == KPACK_SUCCESS);
  unsigned long long calls = 1;
  for (const Row &row : rows) {
    INFO(row.what);
    Call changed;
    row.change(changed);
    REQUIRE(changed.encode() == KPACK_SUCCESS);
    ++calls;
    CHECK(fake.count("cuTensorMapEncodeTiled") == calls);
    // Its own map, never the other one's.
    CHECK(serial_of(changed.map) == last_call(fake).serial);
    CHECK(serial_of(changed.map) != serial_of(base_call.map));
    // And the original still hits (8 entries hold both).
    Call again;
    REQUIRE(again.encode() == KPACK_SUCCESS);
    CHECK(serial_of(again.map) == serial_of(base_call.map));
    // Both are cached now: the changed one hits too.
    Call changed_again;
    row.change(changed_again);
    REQUIRE(changed_again.encode() == KPACK_SUCCESS);
    CHECK(serial_of(changed_again.map) == serial_of(changed.map));
    CHECK(fake.count("cuTensorMapEncodeTiled") == calls);
  }
}

TEST_CASE("the cache keeps the last 8 encodings of the thread", "[tensor_map]") {
  FakeDriver fake;
  auto encode_at = [](uintptr_t offset) {
    Call call;
    call.base = kBase + offset;
    REQUIRE(call.encode() == KPACK_SUCCESS);
    return serial_of(call.map);
  };
  std::vector<unsigned long long> serials;
  for (uintptr_t i = 0; i < 8; ++i) {
    serials.push_back(encode_at(i * 256));
  }
  for (uintptr_t i = 0; i < 8; ++i) { // all eight hit
    CHECK(encode_at(i * 256) == serials[i]);
  }
  CHECK(fake.count("cuTensorMapEncodeTiled") == 8);
  encode_at(8 * 256); // the ninth replaces the oldest
  CHECK(fake.count("cuTensorMapEncodeTiled") == 9);
  CHECK(encode_at(0) != serials[0]);
  CHECK(fake.count("cuTensorMapEncodeTiled") == 10);
}

TEST_CASE("the cache can be switched off, and kpack_unload_all empties it", "[tensor_map]") {
  FakeDriver fake;
  Call call;
  REQUIRE(call.encode() == KPACK_SUCCESS);
  fx_set_tensor_map_cache(0);
  REQUIRE(call.encode() == KPACK_SUCCESS);
  REQUIRE(call.encode() == KPACK_SUCCESS);
  CHECK(fake.count("cuTensorMapEncodeTiled") == 3);
  fx_set_tensor_map_cache(1);
  REQUIRE(call.encode() == KPACK_SUCCESS); // the first encoding, still cached
  CHECK(fake.count("cuTensorMapEncodeTiled") == 3);

  // A new driver may encode otherwise: nothing cached survives the unload.
  kpack_unload_all();
  fake->reset();
  fx_set_driver_path(kpack_test::fake_path().c_str());
  REQUIRE(call.encode() == KPACK_SUCCESS);
  CHECK(fake.count("cuTensorMapEncodeTiled") == 1);
}

TEST_CASE("threads encoding at once keep their own caches", "[race]") {
  FakeDriver fake;
  constexpr int kThreads = 16;
  std::vector<int> failures(kThreads, 0);
  race(kThreads, [&](int t) {
    for (int round = 0; round < 50; ++round) {
      Call call;
      call.base = kBase + static_cast<uintptr_t>(t % 4) * 4096; // threads share tensors
      call.shape[0] = 64 + round % 3;
      if (call.encode() != KPACK_SUCCESS ||
          std::memcmp(call.map + 8, &call.base, sizeof call.base) != 0 ||
          call.shape32[0] != 64 + round % 3) {
        ++failures[t];
      }
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(failures[t] == 0);
  }
  // Three encodings per thread, then hits.
  CHECK(fake.count("cuTensorMapEncodeTiled") == 3 * kThreads);
}
