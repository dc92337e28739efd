/*
 * golden_blobs.h - the fake fatbins behind the golden launcher source
 * (tests/compiler/golden/gk_launch.c); see golden_blobs.c.  C and C++.
 */
#ifndef KPACK_GOLDEN_BLOBS_H
#define KPACK_GOLDEN_BLOBS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One blob per descriptor of gk_launch.c. */
#define GK_BLOB_COUNT 13

/* The bytes and size of blob i. */
const void *gk_blob_data(int i);
uint64_t gk_blob_size(int i);

#ifdef __cplusplus
}
#endif

#endif /* KPACK_GOLDEN_BLOBS_H */
