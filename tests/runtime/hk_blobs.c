/*
 * hk_blobs.c - fake fatbins for tests/compiler/golden/hk_launch.c, the
 * launcher source kpack generates for the heur package
 * (tests/compiler/manifests/heur).  Blob i belongs to descriptor
 * kpack_spec_i, in the order tests/compiler/heur_golden_test.cc checks:
 * rows' API build, norm's four, rows' seven other computed values, then the
 * aligned i32 variant of each of rows' eight builds.
 */
#include "fake_cuda.h"
#include "kpack_internal.h"

/* Triton names every build after the Python function; each takes its five
   params (n_rows is launch-only) and Triton's two scratch pointers.  The
   tag makes each image its own. */
#define ROWS(tag) FAKE_CUDA_FATBIN_MAGIC "rows_kernel:7|" tag "|sm_80|sm_90a|"
#define NORM(tag) FAKE_CUDA_FATBIN_MAGIC "norm_kernel:7|" tag "|sm_80|sm_90a|"

static const char b0[] = ROWS("split1 noeven nobias");
static const char b1[] = NORM("mean 1e-06");
static const char b2[] = NORM("mean 0.5");
static const char b3[] = NORM("sum 1e-06");
static const char b4[] = NORM("sum 0.5");
static const char b5[] = ROWS("split1 noeven bias");
static const char b6[] = ROWS("split1 even nobias");
static const char b7[] = ROWS("split1 even bias");
static const char b8[] = ROWS("split2 noeven nobias");
static const char b9[] = ROWS("split2 noeven bias");
static const char b10[] = ROWS("split2 even nobias");
static const char b11[] = ROWS("split2 even bias");
static const char b12[] = ROWS("split1 noeven nobias aligned i32");
static const char b13[] = ROWS("split1 noeven bias aligned i32");
static const char b14[] = ROWS("split1 even nobias aligned i32");
static const char b15[] = ROWS("split1 even bias aligned i32");
static const char b16[] = ROWS("split2 noeven nobias aligned i32");
static const char b17[] = ROWS("split2 noeven bias aligned i32");
static const char b18[] = ROWS("split2 even nobias aligned i32");
static const char b19[] = ROWS("split2 even bias aligned i32");

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob hk_kpack_blobs[20] = {
    BLOB(b0),  BLOB(b1),  BLOB(b2),  BLOB(b3),  BLOB(b4),  BLOB(b5),  BLOB(b6),  BLOB(b7),  BLOB(b8),  BLOB(b9),
    BLOB(b10), BLOB(b11), BLOB(b12), BLOB(b13), BLOB(b14), BLOB(b15), BLOB(b16), BLOB(b17), BLOB(b18), BLOB(b19),
};

/* The size of blob i, for enumeration tests (C++ cannot include
   kpack_internal.h). */
uint64_t hk_blob_size(int i);
uint64_t hk_blob_size(int i) { return hk_kpack_blobs[i].size; }
