/*
 * fixtures.c - the kernel descriptors behind fixtures.h, written the way
 * kpack's generated launchers lay them out.
 */
#include "fixtures.h"

#include "fake_cuda.h"
#include "kpack_internal.h"

#include <stddef.h>
#include <string.h>

_Static_assert(FX_ARCH_SPECIFIC == KPACK_ARCH_SPECIFIC, "arch flag");
_Static_assert(FX_ARCH_FAMILY == KPACK_ARCH_FAMILY, "arch flag");
_Static_assert(FX_CONSTEXPR_INT == KPACK_CONSTEXPR_INT, "constexpr kind");
_Static_assert(FX_CONSTEXPR_BOOL == KPACK_CONSTEXPR_BOOL, "constexpr kind");
_Static_assert(FX_CONSTEXPR_DTYPE == KPACK_CONSTEXPR_DTYPE, "constexpr kind");
_Static_assert(FX_DEVICE_ATTR_NUM_SMS == KPACK_DEVICE_ATTR_NUM_SMS, "device attribute");
_Static_assert(FX_DEVICE_ATTR_SM == KPACK_DEVICE_ATTR_SM, "device attribute");
_Static_assert(FX_DEVICE_ATTR_MAX_SHARED_MEM == KPACK_DEVICE_ATTR_MAX_SHARED_MEM, "device attribute");
_Static_assert(FX_DEVICE_ATTR_L2_BYTES == KPACK_DEVICE_ATTR_L2_BYTES, "device attribute");
_Static_assert(FX_DEVICE_ATTR_COUNT == KPACK_DEVICE_ATTR_COUNT, "device attribute");
_Static_assert(FX_LAUNCH_PDL == KPACK_LAUNCH_PDL, "launch flag");
_Static_assert(FX_LAUNCH_COOPERATIVE == KPACK_LAUNCH_COOPERATIVE, "launch flag");
_Static_assert(FX_LAUNCH_CLUSTER_SPREAD == KPACK_LAUNCH_CLUSTER_SPREAD, "launch flag");
#define FX_SAME_FIELD(field)                                                                   \
  _Static_assert(offsetof(fx_tensor_map_spec, field) == offsetof(kpack_tensor_map_spec, field), \
                 "tensor map spec field " #field)
FX_SAME_FIELD(data_type);
FX_SAME_FIELD(elem_bytes);
FX_SAME_FIELD(rank);
FX_SAME_FIELD(box);
FX_SAME_FIELD(swizzle);
FX_SAME_FIELD(oob_nan);
_Static_assert(sizeof(fx_tensor_map_spec) == sizeof(kpack_tensor_map_spec), "tensor map spec");

/* Fake fatbins: the magic, then "<entry>:<parameter count>" items and the
   archs the image has code for, which the fake driver checks devices
   against (fake_cuda.h); they match the descriptors' below. */
#define SM80_SM90 "sm_80|sm_90|"
static const char vector_add_image[] =
    FAKE_CUDA_FATBIN_MAGIC "kpack_vector_add_f16_b256:4|" SM80_SM90;
static const char softmax_image[] = FAKE_CUDA_FATBIN_MAGIC "kpack_softmax_f32_b128:3|" SM80_SM90;
static const char cross_entropy_image[] =
    FAKE_CUDA_FATBIN_MAGIC "kpack_cross_entropy_f32_b256:4|" SM80_SM90;
static const char attention_image[] = FAKE_CUDA_FATBIN_MAGIC "kpack_attention_tile64:2|" SM80_SM90;
static const char newer_abi_image[] = FAKE_CUDA_FATBIN_MAGIC "kpack_newer_abi:1|" SM80_SM90;
static const char missing_entry_image[] =
    FAKE_CUDA_FATBIN_MAGIC "kpack_some_other_kernel:1|" SM80_SM90;
static const char bad_image[] = "this is not a fatbin";
/* One fatbin holding two specializations' kernels, as a batch's does. */
static const char batch_image[] = FAKE_CUDA_FATBIN_MAGIC "kpack_batch_a:1|kpack_batch_b:1|" SM80_SM90;
/* Rewritten by fx_set_probe_archs(), with the archs given there. */
static char probe_image[256] = FAKE_CUDA_FATBIN_MAGIC "kpack_probe:1|";

/* A kpack_blob for a string image (the NUL is part of the blob). */
#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

static const kpack_blob blobs[FX_COUNT] = {
    [FX_VECTOR_ADD] = BLOB(vector_add_image),     [FX_SOFTMAX] = BLOB(softmax_image),
    [FX_CROSS_ENTROPY] = BLOB(cross_entropy_image), [FX_BIG_SMEM] = BLOB(attention_image),
    [FX_NEWER_ABI] = BLOB(newer_abi_image),       [FX_MISSING_ENTRY] = BLOB(missing_entry_image),
    [FX_BAD_IMAGE] = BLOB(bad_image),             [FX_PROBE] = BLOB(probe_image),
    [FX_BATCH_A] = BLOB(batch_image),
};

static const uint32_t sm80_sm90[] = {80, 90};

/* Zero-initialized runtime state, one per specialization, as generated. */
static kpack_kernel_state states[FX_COUNT];

/* FX_PROBE's archs, replaced by fx_set_probe_archs(). */
static uint32_t probe_sass[8];
static uint32_t probe_ptx[8];
static char probe_sass_text[128];
static char probe_ptx_text[128];

/* A descriptor built for this runtime's ABI with SASS for sm_80,sm_90. */
#define SPEC(id, kernel_name, spec_name, entry_name)                                            \
  [id] = {KPACK_ABI_VERSION, "kernels", kernel_name, spec_name, entry_name, &blobs[id],        \
          sm80_sm90, 2, NULL, 0, "sm_80,sm_90", "", "release", &states[id]}

static kpack_kernel kernels[FX_COUNT] = {
    SPEC(FX_VECTOR_ADD, "vector_add", "vector_add_f16_b256", "kpack_vector_add_f16_b256"),
    SPEC(FX_SOFTMAX, "softmax", "softmax_f32_b128", "kpack_softmax_f32_b128"),
    SPEC(FX_CROSS_ENTROPY, "cross_entropy", "cross_entropy_f32_b256",
         "kpack_cross_entropy_f32_b256"),
    SPEC(FX_BIG_SMEM, "attention", "attention_tile64", "kpack_attention_tile64"),
    [FX_NEWER_ABI] = {KPACK_ABI_VERSION + 1, "kernels", "newer_abi", "newer_abi_spec",
                      "kpack_newer_abi", &blobs[FX_NEWER_ABI], sm80_sm90, 2, NULL, 0,
                      "sm_80,sm_90", "", "release", &states[FX_NEWER_ABI]},
    SPEC(FX_MISSING_ENTRY, "missing_entry", "missing_entry_spec", "kpack_missing_entry"),
    SPEC(FX_BAD_IMAGE, "bad_image", "bad_image_spec", "kpack_bad_image"),
    [FX_PROBE] = {KPACK_ABI_VERSION, "kernels", "probe", "probe_spec", "kpack_probe",
                  &blobs[FX_PROBE], probe_sass, 0, probe_ptx, 0, probe_sass_text, probe_ptx_text,
                  "debug", &states[FX_PROBE]},
    SPEC(FX_BATCH_A, "batch", "batch_a", "kpack_batch_a"),
    /* The same blob as batch_a's: one fatbin for the batch. */
    [FX_BATCH_B] = {KPACK_ABI_VERSION, "kernels", "batch", "batch_b", "kpack_batch_b", &blobs[FX_BATCH_A],
                    sm80_sm90, 2, NULL, 0, "sm_80,sm_90", "", "release", &states[FX_BATCH_B]},
};

kpack_status fx_launch(fx_id id, kpack_stream stream, uint32_t grid_x, uint32_t grid_y,
                       uint32_t grid_z, uint32_t block_x, uint32_t block_y, uint32_t block_z,
                       uint32_t smem_bytes, void **args) {
  return kpack_launch(&kernels[id], stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                      smem_bytes, args);
}

kpack_status fx_launch_null(void) {
  return kpack_launch(NULL, NULL, 1, 1, 1, 1, 1, 1, 0, NULL);
}

kpack_status fx_launch_ex(fx_id id, kpack_stream stream, uint32_t grid_x, uint32_t grid_y,
                          uint32_t grid_z, uint32_t block_x, uint32_t block_y, uint32_t block_z,
                          uint32_t smem_bytes, void **args, uint32_t flags, uint32_t cluster_x,
                          uint32_t cluster_y, uint32_t cluster_z) {
  return kpack_launch_ex(&kernels[id], stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                         smem_bytes, args, flags, cluster_x, cluster_y, cluster_z);
}

kpack_status fx_launch_ex_null(void) {
  return kpack_launch_ex(NULL, NULL, 1, 1, 1, 1, 1, 1, 0, NULL, KPACK_LAUNCH_PDL, 0, 0, 0);
}

kpack_status fx_describe(fx_id id, kpack_spec_info *info) {
  return kpack_describe(&kernels[id], info);
}

const void *fx_fatbin_data(fx_id id) { return blobs[id].data; }

const char *fx_entry(fx_id id) { return kernels[id].entry; }

/* Copies up to 8 codes into `to`; returns how many. */
static uint32_t copy_codes(uint32_t *to, const uint32_t *from, uint32_t count) {
  if (count > 8) {
    count = 8;
  }
  if (count > 0) {
    memcpy(to, from, count * sizeof *to);
  }
  return count;
}

/* Copies `from` (NULL: "") into a fixed text buffer of 128 bytes. */
static void copy_text(char *to, const char *from) {
  size_t n = from != NULL ? strlen(from) : 0;
  if (n > 127) {
    n = 127;
  }
  memcpy(to, from != NULL ? from : "", n);
  to[n] = '\0';
}

/* Appends the comma-separated names of `text` to the image at `end` as '|'
   items ("sm_80,sm_90a" -> "sm_80|sm_90a|"); returns the new end.  The
   texts are at most 127 bytes each, so the image's 256 bytes hold both. */
static char *append_archs(char *end, const char *text) {
  for (; *text != '\0'; ++text) {
    *end++ = *text == ',' ? '|' : *text;
  }
  *end++ = '|';
  *end = '\0';
  return end;
}

void fx_set_probe_archs(const uint32_t *sass, uint32_t num_sass, const char *sass_text,
                        const uint32_t *ptx, uint32_t num_ptx, const char *ptx_text) {
  kernels[FX_PROBE].num_sass_archs = copy_codes(probe_sass, sass, num_sass);
  kernels[FX_PROBE].num_ptx_archs = copy_codes(probe_ptx, ptx, num_ptx);
  copy_text(probe_sass_text, sass_text);
  copy_text(probe_ptx_text, ptx_text);
  /* The image has the code the descriptor says, for the fake to check. */
  char *end = probe_image + strlen(FAKE_CUDA_FATBIN_MAGIC "kpack_probe:1|");
  end = append_archs(end, probe_sass_text);
  append_archs(end, probe_ptx_text);
}

kpack_status fx_fail_no_specialization(const char *kernel, const char *built, int count,
                                       const char *const *names, const int *kinds,
                                       const int64_t *values) {
  return kpack_fail_no_specialization(kernel, built, count, names, kinds, values);
}

kpack_status fx_fail_grid(kpack_status status, unsigned value, unsigned limit) {
  return kpack_fail(status, "grid.y %u exceeds the device limit %u", value, limit);
}

void fx_set_driver_path(const char *path) { kpack_set_driver_path_for_testing(path); }

kpack_status fx_device_attribute(const char *who, int which, int64_t *value) {
  return kpack_device_attribute(who, which, value);
}

const char *fx_status_name(int value) { return kpack_status_name((kpack_status)value); }
const char *fx_status_message(int value) { return kpack_status_message((kpack_status)value); }

kpack_status fx_tensor_map_encode(const char *who, const char *param,
                                  const fx_tensor_map_spec *spec, const void *base,
                                  const int64_t *shape, const int64_t *strides, void *map,
                                  int32_t *shape32) {
  /* The same layout (checked above), so the pointer is passed as is. */
  return kpack_tensor_map_encode(who, param, (const kpack_tensor_map_spec *)(const void *)spec,
                                 base, shape, strides, map, shape32);
}

void fx_set_tensor_map_cache(int enabled) { kpack_set_tensor_map_cache_for_testing(enabled); }

kpack_status fx_scratch(const char *who, kpack_stream stream, uint64_t bytes, uint32_t align,
                        void **ptr) {
  return kpack_scratch(who, stream, bytes, align, ptr);
}

void fx_device_hint_clear(void) { kpack_device_hint_clear(); }
