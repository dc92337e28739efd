/*
 * tma_blobs.c - fake fatbins for tests/compiler/golden/tma_launch.c, the
 * launcher source kpack generates for the tma package
 * (tests/compiler/manifests/tma).  Blob i belongs to descriptor
 * kpack_spec_i, in the order tests/compiler/tma_golden_test.cc checks: the
 * four copy_triton builds (bf16 and f32, num_ctas 1 and 2), scratch_triton,
 * copy_cuda.
 */
#include "fake_cuda.h"
#include "kpack_internal.h"

/* Triton's copies take two descriptors of five params each (map, two i32
   shapes, two i64 strides), M, N and the two scratch pointers; add_one its
   four params and the scratch pointers; the CUDA copy the map, dst, M, N. */
#define COPY(tag) FAKE_CUDA_FATBIN_MAGIC "copy_tiles:14|" tag "|sm_90a|"
static const char b0[] = COPY("bf16 ctas1");
static const char b1[] = COPY("bf16 ctas2");
static const char b2[] = COPY("f32 ctas1");
static const char b3[] = COPY("f32 ctas2");
static const char b4[] = FAKE_CUDA_FATBIN_MAGIC "add_one:6|sm_90a|";
static const char b5[] = FAKE_CUDA_FATBIN_MAGIC "_Z8copy_boxIfLi32ELi64EEv14CUtensorMap_stPT_ii:4|sm_90|";

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob tma_kpack_blobs[6] = {BLOB(b0), BLOB(b1), BLOB(b2), BLOB(b3), BLOB(b4), BLOB(b5)};
