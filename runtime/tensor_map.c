/*
 * tensor_map.c - kpack_tensor_map_encode: the CUtensorMap of one tensor
 * descriptor argument, encoded on every call of a launcher that has one
 * (kpack_internal.h; docs/design/compute_bound.md).
 *
 * The checks before the driver's are those Triton's TensorDescriptor makes
 * and those of the cuTensorMapEncodeTiled reference that can be named in
 * the caller's terms (torch's outermost-first shape and element strides),
 * so that a bad tensor is reported as "strides[0] = 7 elements of 2 bytes
 * is 14 bytes, not a multiple of 16" rather than as the driver's
 * CUDA_ERROR_INVALID_VALUE.  What is left to the driver (the box within
 * the swizzle span, ...) is reported with every argument of the call.
 *
 * The cache
 * ---------
 * A launcher encodes its maps on every call, and an engine calls it again
 * and again with the same tensors (the same weights, a workspace reused
 * each step), so each thread keeps the KPACK_TENSOR_MAP_CACHE encodings it
 * used last, keyed by everything the map depends on: the spec's values
 * (not its address, so a spec on the stack is safe), the base, the shape
 * and the strides.  A hit copies the 128 bytes, with no driver call; a miss
 * replaces the entry used least recently (an empty one first), so the maps
 * of a launcher called again and again stay while one-off tensors come and
 * go.  Thread-local, so no lock; kpack_unload_all
 * invalidates every thread's entries at once by advancing g_generation,
 * which each entry records (the next driver may encode otherwise).
 */
#include "kpack_internal.h"

#include "driver.h"
#include "errors.h"
#include "runtime_private.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

/* Bytes of a CUtensorMap, what the kernel receives by value. */
#define KPACK_TENSOR_MAP_BYTES 128

/* Encodings each thread keeps: a GEMM has three descriptors, so two
   alternating GEMMs on different tensors still hit. */
#define KPACK_TENSOR_MAP_CACHE 8

/* The limits the checks name. */
#define KPACK_TMA_MAX_RANK 5u
#define KPACK_TMA_MAX_BOX 256u
#define KPACK_TMA_STRIDE_LIMIT ((uint64_t)1 << 40)

_Static_assert(sizeof(CUtensorMap) == KPACK_TENSOR_MAP_BYTES, "CUtensorMap is 128 bytes");
_Static_assert(sizeof(kpack_tensor_map_spec) == 10 * sizeof(uint32_t),
               "kpack_tensor_map_spec has no padding, so memcmp compares its values");

/* What kpack knows of each data type it encodes: 0..12, by value. */
typedef struct data_type_info {
  const char *name;
  uint32_t bytes;
  int floating; /* padding nan is allowed */
} data_type_info;

static const data_type_info k_data_types[] = {
    [CU_TENSOR_MAP_DATA_TYPE_UINT8] = {"UINT8", 1, 0},
    [CU_TENSOR_MAP_DATA_TYPE_UINT16] = {"UINT16", 2, 0},
    [CU_TENSOR_MAP_DATA_TYPE_UINT32] = {"UINT32", 4, 0},
    [CU_TENSOR_MAP_DATA_TYPE_INT32] = {"INT32", 4, 0},
    [CU_TENSOR_MAP_DATA_TYPE_UINT64] = {"UINT64", 8, 0},
    [CU_TENSOR_MAP_DATA_TYPE_INT64] = {"INT64", 8, 0},
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT16] = {"FLOAT16", 2, 1},
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT32] = {"FLOAT32", 4, 1},
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT64] = {"FLOAT64", 8, 1},
    [CU_TENSOR_MAP_DATA_TYPE_BFLOAT16] = {"BFLOAT16", 2, 1},
    [CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ] = {"FLOAT32_FTZ", 4, 1},
    [CU_TENSOR_MAP_DATA_TYPE_TFLOAT32] = {"TFLOAT32", 4, 1},
    [CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ] = {"TFLOAT32_FTZ", 4, 1},
};
#define KPACK_DATA_TYPE_COUNT (sizeof k_data_types / sizeof k_data_types[0])

/* The swizzles of kpack_tensor_map_spec, as the failure detail names them. */
static const char *const k_swizzles[] = {"none", "32B", "64B", "128B"};
#define KPACK_SWIZZLE_COUNT (sizeof k_swizzles / sizeof k_swizzles[0])

/* One cached encoding; `generation` 0 (never equal to g_generation) is an
   empty entry.  The map is kept as bytes: only copied, never passed to the
   driver, so it needs no CUtensorMap alignment. */
typedef struct cache_entry {
  uint64_t generation;
  uint64_t used; /* tl_cache_clock when last hit or stored */
  kpack_tensor_map_spec spec;
  uintptr_t base;
  int64_t shape[KPACK_TMA_MAX_RANK];
  int64_t strides[KPACK_TMA_MAX_RANK];
  unsigned char map[KPACK_TENSOR_MAP_BYTES];
} cache_entry;

static _Thread_local cache_entry tl_cache[KPACK_TENSOR_MAP_CACHE];
static _Thread_local uint64_t tl_cache_clock; /* counts the thread's hits and stores */

/* Advanced by kpack_unload_all; relaxed: it runs with no other thread in the
   runtime, and a thread's later calls are ordered after it by whatever
   ordered them after that call. */
static _Atomic(uint64_t) g_generation = 1;

/* kpack_set_tensor_map_cache_for_testing. */
static _Atomic(int) g_cache_enabled = 1;

/* See kpack_internal.h. */
void kpack_set_tensor_map_cache_for_testing(int enabled) {
  atomic_store_explicit(&g_cache_enabled, enabled != 0, memory_order_relaxed);
}

/* See runtime_private.h. */
void kpack_rt_tensor_maps_forget(void) {
  atomic_fetch_add_explicit(&g_generation, 1, memory_order_relaxed);
}

/* ---- Checks ------------------------------------------------------------------- */

/* Fails with KPACK_ERROR_INVALID_ARGUMENT for the first NULL argument, a
   rank outside 1..5 or a map not 64-byte aligned: what the cache lookup
   needs to be safe. */
static kpack_status check_arguments(const char *who, const char *param,
                                    const kpack_tensor_map_spec *spec, const void *base,
                                    const int64_t *shape, const int64_t *strides,
                                    const void *map) {
  const struct {
    const void *value;
    const char *name;
  } required[] = {{spec, "spec"},           {base, "base address"}, {shape, "shape"},
                  {strides, "stride array"}, {map, "map"}};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; ++i) {
    if (required[i].value == NULL) {
      return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0, "%s: %s: the %s is NULL", who, param,
                           required[i].name);
    }
  }
  if (spec->rank < 1 || spec->rank > KPACK_TMA_MAX_RANK) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: rank %u is outside 1..5 (TMA tensors have 1 to 5 dimensions)",
                         who, param, spec->rank);
  }
  if ((uintptr_t)map % 64u != 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: map 0x%" PRIxPTR " is not 64-byte aligned (CUtensorMap needs 64)",
                         who, param, (uintptr_t)map);
  }
  return KPACK_SUCCESS;
}

/* Fails with KPACK_ERROR_INVALID_ARGUMENT for a spec the launcher should
   never have: an unknown data type, a size that is not the type's, an
   unknown swizzle or padding, padding nan on a type that is no float. */
static kpack_status check_spec(const char *who, const char *param,
                               const kpack_tensor_map_spec *spec) {
  if (spec->data_type >= KPACK_DATA_TYPE_COUNT) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: data type %u is not one kpack encodes (0 UINT8 .. 12 "
                         "TFLOAT32_FTZ)",
                         who, param, spec->data_type);
  }
  const data_type_info *type = &k_data_types[spec->data_type];
  if (spec->elem_bytes != type->bytes) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: element size %u bytes does not match data type %u (%s, %u "
                         "bytes)",
                         who, param, spec->elem_bytes, spec->data_type, type->name, type->bytes);
  }
  if (spec->swizzle >= KPACK_SWIZZLE_COUNT) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: swizzle %u is not 0 (none), 1 (32B), 2 (64B) or 3 (128B)", who,
                         param, spec->swizzle);
  }
  if (spec->oob_nan > 1) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: oob_nan %u is not 0 (zero padding) or 1 (nan padding)", who,
                         param, spec->oob_nan);
  }
  if (spec->oob_nan && !type->floating) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: padding nan needs a floating-point data type; %s is not one",
                         who, param, type->name);
  }
  return KPACK_SUCCESS;
}

/* Fails with KPACK_ERROR_INVALID_ARGUMENT for stride i of a rank-`rank`
   tensor of `elem` bytes that TMA cannot use (see kpack_internal.h). */
static kpack_status check_stride(const char *who, const char *param, uint32_t i, uint32_t rank,
                                 int64_t stride, uint32_t elem) {
  if (i == rank - 1) {
    return stride == 1 ? KPACK_SUCCESS
                       : kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                                       "%s: %s: strides[%u] = %" PRId64 ", but the last stride "
                                       "must be 1 (the innermost dimension contiguous)",
                                       who, param, i, stride);
  }
  if (stride < 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: strides[%u] = %" PRId64 " is negative (TMA needs positive "
                         "strides)",
                         who, param, i, stride);
  }
  /* Compared by division: the product may not fit 64 bits. */
  if ((uint64_t)stride >= KPACK_TMA_STRIDE_LIMIT / elem) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: strides[%u] = %" PRId64 " elements of %u bytes is not below "
                         "2^40 bytes (TMA's limit)",
                         who, param, i, stride, elem);
  }
  const uint64_t bytes = (uint64_t)stride * elem;
  if (bytes % 16u != 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: strides[%u] = %" PRId64 " elements of %u bytes is %" PRIu64
                         " bytes, not a multiple of 16 (TMA needs 16)",
                         who, param, i, stride, elem, bytes);
  }
  return KPACK_SUCCESS;
}

/* Fails with KPACK_ERROR_INVALID_ARGUMENT for a call's tensor that TMA
   cannot describe, or a box it cannot move; after check_spec. */
static kpack_status check_tensor(const char *who, const char *param,
                                 const kpack_tensor_map_spec *spec, const void *base,
                                 const int64_t *shape, const int64_t *strides) {
  const uint32_t rank = spec->rank;
  const uint32_t elem = spec->elem_bytes;
  if ((uintptr_t)base % 16u != 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: base 0x%" PRIxPTR " is not 16-byte aligned (TMA needs 16)", who,
                         param, (uintptr_t)base);
  }
  for (uint32_t i = 0; i < rank; ++i) {
    if (shape[i] < 1 || shape[i] > INT32_MAX) {
      return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                           "%s: %s: shape[%u] = %" PRId64 " is outside 1..2147483647 (the kernel "
                           "receives i32 shapes)",
                           who, param, i, shape[i]);
    }
  }
  for (uint32_t i = 0; i < rank; ++i) {
    kpack_status s = check_stride(who, param, i, rank, strides[i], elem);
    if (s != KPACK_SUCCESS) {
      return s;
    }
  }
  for (uint32_t i = 0; i < rank; ++i) {
    if (spec->box[i] < 1 || spec->box[i] > KPACK_TMA_MAX_BOX) {
      return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                           "%s: %s: box[%u] = %u is outside 1..256 (TMA's box limit)", who, param,
                           i, spec->box[i]);
    }
  }
  const uint32_t inner = spec->box[rank - 1];
  if (inner * elem % 16u != 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %s: box[%u] = %u elements of %u bytes is %u bytes, not a multiple "
                         "of 16 (TMA needs 16)",
                         who, param, rank - 1, inner, elem, inner * elem);
  }
  return KPACK_SUCCESS;
}

/* ---- The encode --------------------------------------------------------------- */

/* Appends "[a, b, c]" of `count` values to the thread's detail. */
static void append_list64(const cuuint64_t *values, uint32_t count) {
  kpack_rt_append_detail("[");
  for (uint32_t i = 0; i < count; ++i) {
    kpack_rt_append_detail(i == 0 ? "%" PRIu64 : ", %" PRIu64, (uint64_t)values[i]);
  }
  kpack_rt_append_detail("]");
}

/* As append_list64, for 32-bit values. */
static void append_list32(const cuuint32_t *values, uint32_t count) {
  kpack_rt_append_detail("[");
  for (uint32_t i = 0; i < count; ++i) {
    kpack_rt_append_detail(i == 0 ? "%u" : ", %u", (unsigned)values[i]);
  }
  kpack_rt_append_detail("]");
}

/*
 * Encodes the map of a checked call into `out` with cuTensorMapEncodeTiled
 * (kpack_internal.h has the arguments).  A failure is
 * KPACK_ERROR_INVALID_ARGUMENT with the driver's CUresult and every
 * argument of the call.
 */
static kpack_status encode(const kpack_driver *d, const char *who, const char *param,
                           const kpack_tensor_map_spec *spec, const void *base,
                           const int64_t *shape, const int64_t *strides, CUtensorMap *out) {
  kpack_pfn_tensor_map_encode_tiled encode_tiled = kpack_rt_tensor_map_encode_tiled(d);
  if (encode_tiled == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_TENSOR_MAP_ENCODE_TILED);
  }
  const uint32_t rank = spec->rank;
  cuuint64_t dims[KPACK_TMA_MAX_RANK] = {0};
  cuuint64_t byte_strides[KPACK_TMA_MAX_RANK] = {0};
  cuuint32_t box[KPACK_TMA_MAX_RANK] = {0};
  cuuint32_t element_strides[KPACK_TMA_MAX_RANK] = {0};
  /* The driver's order is innermost first, the caller's outermost first. */
  for (uint32_t i = 0; i < rank; ++i) {
    dims[i] = (cuuint64_t)shape[rank - 1 - i];
    box[i] = spec->box[rank - 1 - i];
    element_strides[i] = 1;
  }
  for (uint32_t i = 0; i + 1 < rank; ++i) {
    byte_strides[i] = (cuuint64_t)strides[rank - 2 - i] * spec->elem_bytes;
  }
  const CUtensorMapFloatOOBfill oob = spec->oob_nan
                                          ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                          : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  CUresult r = encode_tiled(out, (CUtensorMapDataType)spec->data_type, rank, (void *)base, dims,
                            byte_strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            (CUtensorMapSwizzle)spec->swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                            oob);
  if (r == CUDA_SUCCESS) {
    return KPACK_SUCCESS;
  }
  kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, (int)r,
                "%s: %s: cuTensorMapEncodeTiled(type %u (%s), rank %u, address 0x%" PRIxPTR
                ", dims ",
                who, param, spec->data_type, k_data_types[spec->data_type].name, rank,
                (uintptr_t)base);
  append_list64(dims, rank);
  kpack_rt_append_detail(", byte strides ");
  append_list64(byte_strides, rank - 1);
  kpack_rt_append_detail(", box ");
  append_list32(box, rank);
  kpack_rt_append_detail(", element strides ");
  append_list32(element_strides, rank);
  kpack_rt_append_detail(", interleave none, swizzle %s, L2 promotion 128B, oob fill %s) failed: "
                         "%s (%d)",
                         k_swizzles[spec->swizzle], spec->oob_nan ? "nan" : "none",
                         kpack_rt_cu_name(d, r), (int)r);
  return KPACK_ERROR_INVALID_ARGUMENT;
}

/* The thread's entry for exactly these values in generation `generation`,
   or NULL; a hit is marked used now. */
static const cache_entry *cache_find(uint64_t generation, const kpack_tensor_map_spec *spec,
                                     const void *base, const int64_t *shape,
                                     const int64_t *strides) {
  const size_t dims_bytes = spec->rank * sizeof(int64_t);
  for (int i = 0; i < KPACK_TENSOR_MAP_CACHE; ++i) {
    cache_entry *e = &tl_cache[i];
    if (e->generation == generation && e->base == (uintptr_t)base &&
        memcmp(&e->spec, spec, sizeof *spec) == 0 && memcmp(e->shape, shape, dims_bytes) == 0 &&
        memcmp(e->strides, strides, dims_bytes) == 0) {
      e->used = ++tl_cache_clock;
      return e;
    }
  }
  return NULL;
}

/* Keeps the encoding of these values in place of the thread's entry used
   least recently, or an empty (or outdated) one. */
static void cache_store(uint64_t generation, const kpack_tensor_map_spec *spec, const void *base,
                        const int64_t *shape, const int64_t *strides, const void *map) {
  cache_entry *e = &tl_cache[0];
  for (int i = 0; i < KPACK_TENSOR_MAP_CACHE && e->generation == generation; ++i) {
    cache_entry *candidate = &tl_cache[i];
    if (candidate->generation != generation || candidate->used < e->used) {
      e = candidate;
    }
  }
  memset(e, 0, sizeof *e);
  e->generation = generation;
  e->used = ++tl_cache_clock;
  e->spec = *spec;
  e->base = (uintptr_t)base;
  memcpy(e->shape, shape, spec->rank * sizeof(int64_t));
  memcpy(e->strides, strides, spec->rank * sizeof(int64_t));
  memcpy(e->map, map, KPACK_TENSOR_MAP_BYTES);
}

/* Writes the shape as int32 (checked to fit) into shape32, if given. */
static void fill_shape32(const kpack_tensor_map_spec *spec, const int64_t *shape,
                         int32_t *shape32) {
  for (uint32_t i = 0; shape32 != NULL && i < spec->rank; ++i) {
    shape32[i] = (int32_t)shape[i];
  }
}

/*
 * See kpack_internal.h.  A hit is the argument checks, one relaxed load of
 * the generation, the comparison with at most 8 entries, a store of the
 * clock and two copies.
 */
kpack_status kpack_tensor_map_encode(const char *who, const char *param,
                                     const kpack_tensor_map_spec *spec, const void *base,
                                     const int64_t *shape, const int64_t *strides, void *map,
                                     int32_t *shape32) {
  if (who == NULL) {
    who = "kpack_tensor_map_encode";
  }
  if (param == NULL) {
    param = "?";
  }
  kpack_status s = check_arguments(who, param, spec, base, shape, strides, map);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  const uint64_t generation = atomic_load_explicit(&g_generation, memory_order_relaxed);
  const int cached = atomic_load_explicit(&g_cache_enabled, memory_order_relaxed);
  const cache_entry *hit = cached ? cache_find(generation, spec, base, shape, strides) : NULL;
  if (hit != NULL) {
    memcpy(map, hit->map, KPACK_TENSOR_MAP_BYTES);
    fill_shape32(spec, shape, shape32);
    return KPACK_SUCCESS;
  }
  if ((s = check_spec(who, param, spec)) != KPACK_SUCCESS ||
      (s = check_tensor(who, param, spec, base, shape, strides)) != KPACK_SUCCESS) {
    return s;
  }
  /* The driver as a launch finds it; no device or context needed. */
  const kpack_driver *d = kpack_rt_driver();
  CUdevice probed = -1;
  if (d == NULL && (s = kpack_rt_driver_load(&d, &probed)) != KPACK_SUCCESS) {
    return s;
  }
  /* The driver writes an aligned CUtensorMap; `map` need only be 64-byte
     aligned. */
  CUtensorMap encoded;
  if ((s = encode(d, who, param, spec, base, shape, strides, &encoded)) != KPACK_SUCCESS) {
    return s;
  }
  memcpy(map, &encoded, KPACK_TENSOR_MAP_BYTES);
  if (cached) {
    cache_store(generation, spec, base, shape, strides, &encoded);
  }
  fill_shape32(spec, shape, shape32);
  return KPACK_SUCCESS;
}
