/*
 * dk_blobs.c - fake fatbins for tests/compiler/golden/dk_launch.c, the
 * launcher source kpack generates for the device package
 * (tests/compiler/manifests/device), whose launch expressions read device
 * attributes and call every function.  Blob i belongs to descriptor
 * kpack_spec_i: persistent_b128, persistent_b256, check_v1.
 */
#include "fake_cuda.h"
#include "kpack_internal.h"

#define IMAGE(entry) FAKE_CUDA_FATBIN_MAGIC entry "|sm_80|sm_90|"
static const char persistent_b128_image[] = IMAGE("kpack_dk_persistent_b128:2");
static const char persistent_b256_image[] = IMAGE("kpack_dk_persistent_b256:2");
static const char check_image[] = IMAGE("kpack_dk_check_v1:5");

#define BLOB(image) {(const unsigned char *)(image), sizeof(image)}

const kpack_blob dk_kpack_blobs[3] = {
    BLOB(persistent_b128_image),
    BLOB(persistent_b256_image),
    BLOB(check_image),
};
