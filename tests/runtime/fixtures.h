/*
 * fixtures.h - hand-written kernel descriptors for the runtime tests, behind
 * a C interface that C++ can call (kpack_internal.h is C11 only).  The
 * descriptors mimic what kpack generates; their "fatbins" are images for the
 * fake driver (tests/fake_cuda/fake_cuda.h).
 */
#ifndef KPACK_TEST_FIXTURES_H
#define KPACK_TEST_FIXTURES_H

#include "kpack.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fx_id {
  FX_VECTOR_ADD,     /* vector_add_f16_b256: SASS sm_80,sm_90; 4 parameters */
  FX_SOFTMAX,        /* softmax_f32_b128: SASS sm_80,sm_90; 3 parameters */
  FX_CROSS_ENTROPY,  /* cross_entropy_f32_b256: SASS sm_80,sm_90; 4 parameters */
  FX_BIG_SMEM,       /* attention_tile64: SASS sm_80,sm_90; 2 parameters */
  FX_NEWER_ABI,      /* newer_abi_spec: abi_version KPACK_ABI_VERSION + 1 */
  FX_MISSING_ENTRY,  /* missing_entry_spec: its entry is not in its fatbin */
  FX_BAD_IMAGE,      /* bad_image_spec: its fatbin is not one */
  FX_PROBE,          /* probe_spec: archs set by fx_set_probe_archs(); 1 parameter */
  FX_BATCH_A,        /* batch_a, batch_b: two specializations compiled in one */
  FX_BATCH_B,        /* batch, sharing one fatbin; 1 parameter each */
  FX_COUNT
} fx_id;

/* Arch code flags and constexpr kinds, as in kpack_internal.h (fixtures.c
   checks that they agree). */
#define FX_ARCH_SPECIFIC 0x10000u
#define FX_ARCH_FAMILY 0x20000u
#define FX_CONSTEXPR_INT 0
#define FX_CONSTEXPR_BOOL 1
#define FX_CONSTEXPR_DTYPE 2

/* kpack_launch of fixture `id`. */
kpack_status fx_launch(fx_id id, kpack_stream stream, uint32_t grid_x, uint32_t grid_y,
                       uint32_t grid_z, uint32_t block_x, uint32_t block_y, uint32_t block_z,
                       uint32_t smem_bytes, void **args);

/* kpack_launch with a NULL kernel. */
kpack_status fx_launch_null(void);

/* The KPACK_LAUNCH_* flags (fixtures.c checks that they agree), and
   kpack_launch_ex of fixture `id`. */
#define FX_LAUNCH_PDL 0x1u
#define FX_LAUNCH_COOPERATIVE 0x2u
#define FX_LAUNCH_CLUSTER_SPREAD 0x4u
kpack_status fx_launch_ex(fx_id id, kpack_stream stream, uint32_t grid_x, uint32_t grid_y,
                          uint32_t grid_z, uint32_t block_x, uint32_t block_y, uint32_t block_z,
                          uint32_t smem_bytes, void **args, uint32_t flags, uint32_t cluster_x,
                          uint32_t cluster_y, uint32_t cluster_z);

/* kpack_launch_ex with a NULL kernel and PDL. */
kpack_status fx_launch_ex_null(void);

/* kpack_describe of fixture `id`, or with a NULL info when `info` is NULL. */
kpack_status fx_describe(fx_id id, kpack_spec_info *info);

/* The fatbin bytes and entry name of fixture `id`. */
const void *fx_fatbin_data(fx_id id);
const char *fx_entry(fx_id id);

/*
 * Replaces FX_PROBE's archs (copied; up to 8 of each).  Call only while
 * FX_PROBE is not loaded (after kpack_unload_all).
 */
void fx_set_probe_archs(const uint32_t *sass, uint32_t num_sass, const char *sass_text,
                        const uint32_t *ptx, uint32_t num_ptx, const char *ptx_text);

/* Pass-throughs to the kpack_internal.h functions. */
kpack_status fx_fail_no_specialization(const char *kernel, const char *built, int count,
                                       const char *const *names, const int *kinds,
                                       const int64_t *values);
/* kpack_fail(status, "grid.y %u exceeds the device limit %u", value, limit). */
kpack_status fx_fail_grid(kpack_status status, unsigned value, unsigned limit);
void fx_set_driver_path(const char *path);

/* The KPACK_DEVICE_ATTR_* codes (fixtures.c checks that they agree), and
   kpack_device_attribute. */
#define FX_DEVICE_ATTR_NUM_SMS 0
#define FX_DEVICE_ATTR_SM 1
#define FX_DEVICE_ATTR_MAX_SHARED_MEM 2
#define FX_DEVICE_ATTR_L2_BYTES 3
#define FX_DEVICE_ATTR_COUNT 4
kpack_status fx_device_attribute(const char *who, int which, int64_t *value);

/* kpack_tensor_map_spec, field for field (fixtures.c checks that the
   layouts agree), and kpack_tensor_map_encode. */
typedef struct fx_tensor_map_spec {
  uint32_t data_type;
  uint32_t elem_bytes;
  uint32_t rank;
  uint32_t box[5];
  uint32_t swizzle;
  uint32_t oob_nan;
} fx_tensor_map_spec;
kpack_status fx_tensor_map_encode(const char *who, const char *param,
                                  const fx_tensor_map_spec *spec, const void *base,
                                  const int64_t *shape, const int64_t *strides, void *map,
                                  int32_t *shape32);
/* kpack_set_tensor_map_cache_for_testing. */
void fx_set_tensor_map_cache(int enabled);

/* kpack_scratch and kpack_device_hint_clear. */
kpack_status fx_scratch(const char *who, kpack_stream stream, uint64_t bytes, uint32_t align,
                        void **ptr);
void fx_device_hint_clear(void);

/* kpack_status_name/message of any int.  In C every int converts to the
   enum; C++ code must not cast values outside its range (0..15) to it,
   which UBSan reports, so the tests of unknown values go through C. */
const char *fx_status_name(int value);
const char *fx_status_message(int value);

#ifdef __cplusplus
}
#endif

#endif /* KPACK_TEST_FIXTURES_H */
