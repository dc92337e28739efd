/*
 * tk_blobs.c - fake fatbins for tests/compiler/golden/tk_launch.c, the
 * launcher source kpack generates for the tuned package
 * (tests/compiler/manifests/tuned).  Blob i belongs to descriptor
 * kpack_spec_i, in expansion order: scale's 10 specializations (T, BLOCK,
 * WIDE; f32 has no BLOCK 512), then pick's 3.
 */
#include "fake_cuda.h"
#include "kpack_internal.h"

/* Each kernel is named after its specialization: scale takes x, out and n
   (rows is launch-only), pick out and len. */
#define SCALE(name) FAKE_CUDA_FATBIN_MAGIC "kpack_tk_" name ":3|sm_80|sm_90|"
#define PICK(name) FAKE_CUDA_FATBIN_MAGIC "kpack_tk_" name ":2|sm_80|sm_90|"

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

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob tk_kpack_blobs[13] = {
    BLOB(b0), BLOB(b1), BLOB(b2), BLOB(b3), BLOB(b4),  BLOB(b5),  BLOB(b6),
    BLOB(b7), BLOB(b8), BLOB(b9), BLOB(b10), BLOB(b11), BLOB(b12),
};

/* For tuned_launch_test.cc (C++ cannot include kpack_internal.h): calls
   kpack_tuning_select with no set. */
kpack_status tk_select_without_set(int *index);
kpack_status tk_select_without_set(int *index) { return kpack_tuning_select(NULL, NULL, index); }
