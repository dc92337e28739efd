/*
 * ak_blobs.c - fake fatbins for tests/compiler/golden/ak_launch.c, the
 * launcher source kpack generates for the auto package
 * (tests/compiler/manifests/auto).  Blob i belongs to descriptor
 * kpack_spec_i, in the order tests/compiler/auto_codegen_test.cc checks:
 * norm's 16 specializations, then rows' 16.
 */
#include "fake_cuda.h"
#include "kpack_internal.h"

/* norm is a __device__ template kpack wraps: each kernel has its own name
   and takes x, out and d (rows is launch-only). */
#define NORM(name) FAKE_CUDA_FATBIN_MAGIC "kpack_ak_" name ":3|sm_80|sm_90|"
/* Triton names every build after the Python function; each takes x, out,
   n and Triton's two scratch pointers.  The tag makes each image its own. */
#define ROWS(tag) FAKE_CUDA_FATBIN_MAGIC "rows_kernel:5|" tag "|sm_80|sm_90a|"

static const char b0[] = NORM("norm_v8_f16_wide");
static const char b1[] = NORM("norm_v8_f16_nowide");
static const char b2[] = NORM("norm_v8_bf16_wide");
static const char b3[] = NORM("norm_v8_bf16_nowide");
static const char b4[] = NORM("norm_v4_f16_wide");
static const char b5[] = NORM("norm_v4_f16_nowide");
static const char b6[] = NORM("norm_v4_bf16_wide");
static const char b7[] = NORM("norm_v4_bf16_nowide");
static const char b8[] = NORM("norm_v4_f32_wide");
static const char b9[] = NORM("norm_v4_f32_nowide");
static const char b10[] = NORM("norm_v2_f16_wide");
static const char b11[] = NORM("norm_v2_f16_nowide");
static const char b12[] = NORM("norm_v2_bf16_wide");
static const char b13[] = NORM("norm_v2_bf16_nowide");
static const char b14[] = NORM("norm_v2_f32_wide");
static const char b15[] = NORM("norm_v2_f32_nowide");
static const char b16[] = ROWS("f16 w4 b128 s1");
static const char b17[] = ROWS("f16 w4 b128 s2");
static const char b18[] = ROWS("f16 w4 b256 s1");
static const char b19[] = ROWS("f16 w4 b256 s2");
static const char b20[] = ROWS("f16 w4 b512 s1");
static const char b21[] = ROWS("f16 w4 b512 s2");
static const char b22[] = ROWS("f16 w8 b1024 s1");
static const char b23[] = ROWS("f16 w8 b1024 s2");
static const char b24[] = ROWS("f32 w4 b128 s1");
static const char b25[] = ROWS("f32 w4 b128 s2");
static const char b26[] = ROWS("f32 w4 b256 s1");
static const char b27[] = ROWS("f32 w4 b256 s2");
static const char b28[] = ROWS("f32 w4 b512 s1");
static const char b29[] = ROWS("f32 w4 b512 s2");
static const char b30[] = ROWS("f32 w8 b1024 s1");
static const char b31[] = ROWS("f32 w8 b1024 s2");

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob ak_kpack_blobs[32] = {
    BLOB(b0),  BLOB(b1),  BLOB(b2),  BLOB(b3),  BLOB(b4),  BLOB(b5),  BLOB(b6),  BLOB(b7),
    BLOB(b8),  BLOB(b9),  BLOB(b10), BLOB(b11), BLOB(b12), BLOB(b13), BLOB(b14), BLOB(b15),
    BLOB(b16), BLOB(b17), BLOB(b18), BLOB(b19), BLOB(b20), BLOB(b21), BLOB(b22), BLOB(b23),
    BLOB(b24), BLOB(b25), BLOB(b26), BLOB(b27), BLOB(b28), BLOB(b29), BLOB(b30), BLOB(b31),
};
