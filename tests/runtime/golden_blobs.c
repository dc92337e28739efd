/*
 * golden_blobs.c - fake fatbins for tests/compiler/golden/gk_launch.c, the
 * launcher source kpack generates for the golden package, so that the
 * runtime tests run generated code (the aligned-variant choice) against the
 * fake driver.  Blob i belongs to descriptor kpack_spec_i, in the order
 * kpack's expand pass gives: scale (3), mask (2), rows f16 and f32, then
 * the variants of rows f16 and of rows f32, each aligned, i32, aligned i32.
 */
#include "golden_blobs.h"

#include "fake_cuda.h"
#include "kpack_internal.h"

/* Each image lists the archs of its descriptor in gk_launch.c, which the
   fake driver checks devices against (fake_cuda.h). */
static const char scale_image[] = FAKE_CUDA_FATBIN_MAGIC "kpack_gk_scale:5|sm_80|sm_90|";
static const char mask_image[] = FAKE_CUDA_FATBIN_MAGIC "kpack_gk_mask:2|sm_90a|compute_90|";
/* The four builds of each rows specialization: the same entry (Triton's
   function name) and 5 + 2 hidden parameters, in different images. */
#define ROWS_IMAGE(tag) FAKE_CUDA_FATBIN_MAGIC "scale_rows:7|" tag "sm_80|sm_90a|"
static const char rows_f16_image[] = ROWS_IMAGE("");
static const char rows_f16_aligned_image[] = ROWS_IMAGE("aligned|");
static const char rows_f16_i32_image[] = ROWS_IMAGE("i32|");
static const char rows_f16_aligned_i32_image[] = ROWS_IMAGE("aligned i32|");
static const char rows_f32_image[] = ROWS_IMAGE("f32|");
static const char rows_f32_aligned_image[] = ROWS_IMAGE("f32 aligned|");
static const char rows_f32_i32_image[] = ROWS_IMAGE("f32 i32|");
static const char rows_f32_aligned_i32_image[] = ROWS_IMAGE("f32 aligned i32|");

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob gk_kpack_blobs[GK_BLOB_COUNT] = {
    BLOB(scale_image),    BLOB(scale_image),    BLOB(scale_image),
    BLOB(mask_image),     BLOB(mask_image),     BLOB(rows_f16_image),
    BLOB(rows_f32_image), BLOB(rows_f16_aligned_image), BLOB(rows_f16_i32_image),
    BLOB(rows_f16_aligned_i32_image), BLOB(rows_f32_aligned_image), BLOB(rows_f32_i32_image),
    BLOB(rows_f32_aligned_i32_image),
};

const void *gk_blob_data(int i) { return gk_kpack_blobs[i].data; }

uint64_t gk_blob_size(int i) { return gk_kpack_blobs[i].size; }
