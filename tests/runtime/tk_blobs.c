/*
 * tk_blobs.c - fake fatbins for tests/compiler/golden/tk_launch.c, the
 * launcher source kpack generates for the tuned package
 * (tests/compiler/manifests/tuned).  Blob i belongs to descriptor
 * kpack_spec_i, in expansion order: scale's 10 specializations (T, BLOCK,
 * WIDE; f32 has no BLOCK 512), pick's 3, rows's 2 (BLOCK 1024, 4096), then
 * rows's aligned variants of those 2.
 */
#include "fake_cuda.h"
#include "kpack_internal.h"

/* Each kernel is named after its specialization: scale takes x, out and n
   (rows is launch-only), pick out and len. */
#define SCALE(name) FAKE_CUDA_FATBIN_MAGIC "kpack_tk_" name ":3|sm_80|sm_90|"
#define PICK(name) FAKE_CUDA_FATBIN_MAGIC "kpack_tk_" name ":2|sm_80|sm_90|"
/* A Triton kernel: one entry name for every build; x, out, n and the two
   scratch pointers Triton 3.6 appends. */
#define ROWS FAKE_CUDA_FATBIN_MAGIC "scale_rows:5|sm_80|sm_90a|"

static const char b0[] = SCALE("scale_f16_b128_wide");
static const char b1[] = SCALE("scale_f16_b128_nowide");
static const char b2[] = SCALE("scale_f16_b256_wide");
static const char b3[] = SCALE("scale_f16_b256_nowide");
static const char b4[] = SCALE("scale_f16_b512_wide");
static const char b5[] = SCALE("scale_f16_b512_nowide");
static const char b6[] = SCALE("scale_f32_b128_wide");
static const char b7[] = SCALE("scale_f32_b128_nowide");
static const char b8[] = SCALE("scale_f32_b256_wide");
static const char b9[] = SCALE("scale_f32_b256_nowide");
static const char b10[] = PICK("pick_t16");
static const char b11[] = PICK("pick_t32");
static const char b12[] = PICK("pick_t64");
static const char b13[] = ROWS;
static const char b14[] = ROWS;
static const char b15[] = ROWS;
static const char b16[] = ROWS;

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob tk_kpack_blobs[17] = {
    BLOB(b0),  BLOB(b1),  BLOB(b2),  BLOB(b3),  BLOB(b4),  BLOB(b5),  BLOB(b6),  BLOB(b7),  BLOB(b8),
    BLOB(b9),  BLOB(b10), BLOB(b11), BLOB(b12), BLOB(b13), BLOB(b14), BLOB(b15), BLOB(b16),
};

/* For tuned_launch_test.cc (C++ cannot include kpack_internal.h): calls
   kpack_tuning_select with no set. */
kpack_status tk_select_without_set(int *index);
kpack_status tk_select_without_set(int *index) { return kpack_tuning_select(NULL, NULL, index); }
