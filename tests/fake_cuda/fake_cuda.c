/*
 * fake_cuda.c - a fake CUDA driver for the runtime tests.  See fake_cuda.h
 * for what it models and how tests control it.
 *
 * Built three times: libfakecuda.so with every entry point the runtime uses;
 * (with FAKE_CUDA_OLD_DRIVER) libfakecuda_old.so without the library/kernel
 * API of CUDA 12, to stand in for a driver that is too old; and (with
 * FAKE_CUDA_LEAN_DRIVER) libfakecuda_lean.so with only the entry points the
 * runtime resolves when it loads the driver (no cuInit, cuGetErrorName,
 * cuDeviceGetAttribute, cuDeviceGetName, cuMemGetInfo_v2, cuLibraryUnload,
 * cuKernelSetAttribute or cuLaunchKernelEx), to show which
 * those are and what the runtime does when it finds one of the others
 * missing on first use.
 *
 * Synchronization is chosen so that ThreadSanitizer can still see races in
 * the runtime:
 *   - counters and settings are relaxed atomics, which create no
 *     happens-before edges between threads;
 *   - cuCtxGetDevice takes no lock, and cuLaunchKernel (and
 *     cuLaunchKernelEx) only to load a module into a context (the driver's
 *     lazy loading);
 *   - cuLaunchKernel reads the plain fields that cuLibraryGetKernel,
 *     cuKernelGetFunction, cuKernelSetAttribute and a launch's lazy module
 *     load wrote (under g_lock) without a lock, so a launch that the runtime
 *     did not order after them (release/acquire on its state) is reported as
 *     a data race.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include "fake_cuda.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- Call counters ------------------------------------------------------ */

/* Counted functions; index into g_counts and g_fail_next. */
enum {
  FN_INIT,
  FN_GET_ERROR_NAME,
  FN_CTX_GET_DEVICE,
  FN_DEVICE_GET_ATTRIBUTE,
  FN_DEVICE_GET_NAME,
  FN_MEM_GET_INFO,
  FN_LIBRARY_LOAD_DATA,
  FN_LIBRARY_GET_KERNEL,
  FN_LIBRARY_UNLOAD,
  FN_KERNEL_GET_FUNCTION,
  FN_KERNEL_SET_ATTRIBUTE,
  FN_LAUNCH_KERNEL,
  FN_LAUNCH_KERNEL_EX,
  FN_LAZY_MODULE_LOAD,
  FN_TENSOR_MAP_ENCODE_TILED,
  FN_MEM_ALLOC,
  FN_MEM_ALLOC_ASYNC,
  FN_MEM_FREE,
  FN_MEM_FREE_ASYNC,
  FN_STREAM_IS_CAPTURING,
  FN_OCCUPANCY_MAX_ACTIVE_CLUSTERS,
  FN_COUNT
};

static const char *const k_fn_names[FN_COUNT] = {
    "cuInit",
    "cuGetErrorName",
    "cuCtxGetDevice",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuMemGetInfo_v2",
    "cuLibraryLoadData",
    "cuLibraryGetKernel",
    "cuLibraryUnload",
    "cuKernelGetFunction",
    "cuKernelSetAttribute",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "lazy_module_load",
    "cuTensorMapEncodeTiled",
    "cuMemAlloc_v2",
    "cuMemAllocAsync",
    "cuMemFree_v2",
    "cuMemFreeAsync",
    "cuStreamIsCapturing",
    "cuOccupancyMaxActiveClusters",
};

static _Atomic(unsigned long long) g_counts[FN_COUNT];
static _Atomic(unsigned long long) g_device_counts[FN_COUNT][FAKE_CUDA_MAX_DEVICES];
static _Atomic(int) g_fail_next[FN_COUNT]; /* 0: none pending */

/* Returns the index of function `name`, or -1. */
static int fn_index(const char *name) {
  for (int i = 0; name != NULL && i < FN_COUNT; ++i) {
    if (strcmp(name, k_fn_names[i]) == 0) {
      return i;
    }
  }
  return -1;
}

/* Counts a call of `fn`, on `device` when it is a valid ordinal. */
static void count_call(int fn, int device) {
  atomic_fetch_add_explicit(&g_counts[fn], 1, memory_order_relaxed);
  if (device >= 0 && device < FAKE_CUDA_MAX_DEVICES) {
    atomic_fetch_add_explicit(&g_device_counts[fn][device], 1, memory_order_relaxed);
  }
}

/* Returns and clears the failure injected for `fn`, or CUDA_SUCCESS. */
static CUresult take_failure(int fn) {
  if (atomic_load_explicit(&g_fail_next[fn], memory_order_relaxed) == 0) {
    return CUDA_SUCCESS;
  }
  return (CUresult)atomic_exchange_explicit(&g_fail_next[fn], 0, memory_order_relaxed);
}

/* ---- Settings ------------------------------------------------------------ */

static _Atomic(int) g_initialized;
static _Atomic(int) g_device_count = 1;
static _Atomic(int) g_cc_major[FAKE_CUDA_MAX_DEVICES];
static _Atomic(int) g_cc_minor[FAKE_CUDA_MAX_DEVICES];
static _Atomic(int) g_default_device;
static _Atomic(unsigned) g_load_delay_us;
static _Atomic(size_t) g_mem_free = (size_t)1 << 30;
static _Atomic(size_t) g_mem_total = (size_t)16 << 30;
static _Atomic(int) g_max_smem_optin = 227 * 1024;
/* The other attributes cuDeviceGetAttribute answers, by device and code
   (fake_cuda_set_device_attribute); codes beyond the table read 0. */
#define FAKE_CUDA_ATTRIBUTE_SLOTS 256
static _Atomic(int) g_attributes[FAKE_CUDA_MAX_DEVICES][FAKE_CUDA_ATTRIBUTE_SLOTS];
static _Atomic(int) g_last_smem_attribute;
/* Each device's name (fake_cuda_set_device_name).  Plain memory: tests
   set names before the threads that read them start, and only
   cuDeviceGetName reads them, so a race here would be the test's. */
#define FAKE_CUDA_NAME_SIZE 128
static char g_device_names[FAKE_CUDA_MAX_DEVICES][FAKE_CUDA_NAME_SIZE];
static _Atomic(const void *) g_last_image;
/* Whether the last successful cuLibraryLoadData was told the image is
   preserved; whether library options are refused, as by a driver older than
   CU_LIBRARY_BINARY_IS_PRESERVED. */
static _Atomic(int) g_last_load_preserved;
static _Atomic(int) g_reject_library_options;

/* Per-thread current device; FAKE_CUDA_FOLLOW_DEFAULT: the default. */
static _Thread_local int tl_device = FAKE_CUDA_FOLLOW_DEFAULT;
static _Thread_local fake_cuda_launch tl_last_launch;
static _Thread_local int tl_has_launch;
static _Thread_local void (*tl_launch_hook)(const fake_cuda_launch *launch);

/* Valid stream handles. */
static char g_streams[4];

/* What cuStreamIsCapturing answers: index 0 the NULL stream, i + 1 fake
   stream i (stream_index). */
static _Atomic(int) g_capturing[5];

/* What cuOccupancyMaxActiveClusters answers for a cluster it accepts. */
static _Atomic(int) g_max_active_clusters = 1;

/* The calling thread's last cuTensorMapEncodeTiled call and
   cuOccupancyMaxActiveClusters query; the serial numbers of the maps. */
static _Thread_local fake_cuda_tensor_map_call tl_last_tensor_map;
static _Thread_local int tl_has_tensor_map;
static _Thread_local fake_cuda_launch tl_last_occupancy;
static _Thread_local int tl_has_occupancy;
static _Atomic(unsigned long long) g_tensor_map_serial;

/* The index of `stream` in g_capturing: 0 for NULL, i + 1 for fake stream
   i, -1 for anything else. */
static int stream_index(const void *stream) {
  if (stream == NULL) {
    return 0;
  }
  const char *p = (const char *)stream;
  return p >= g_streams && p < g_streams + sizeof g_streams ? (int)(p - g_streams) + 1 : -1;
}

/* Returns the calling thread's current device, or -1 for no context. */
static int current_device(void) {
  return tl_device != FAKE_CUDA_FOLLOW_DEFAULT
             ? tl_device
             : atomic_load_explicit(&g_default_device, memory_order_relaxed);
}

/* Returns whether `device` is an ordinal of an existing fake device.
   (Unused in the lean fake, which lacks the functions that ask.) */
__attribute__((unused)) static int device_exists(int device) {
  return device >= 0 && device < atomic_load_explicit(&g_device_count, memory_order_relaxed);
}

/* ---- Libraries, kernels, functions ---------------------------------------- */

#define MAX_LIBRARIES 256
/* A library of a batch's fatbin holds up to 64 specializations' kernels
   (kpack's largest `batch:`), all taken from it by the runtime. */
#define MAX_KERNELS_PER_LIBRARY 64
#define MAX_ENTRY_NAME 96

/* The CUfunction of a kernel in one device's context. */
typedef struct fake_function {
  int device;
} fake_function;

/* A CUkernel.  Fields are written under g_lock and read by cuLaunchKernel
   without it (see the file comment). */
typedef struct fake_kernel {
  int used;
  struct fake_library *library;
  char entry[MAX_ENTRY_NAME];
  int num_params;
  int resolved_on[FAKE_CUDA_MAX_DEVICES];  /* module loaded in the device's context */
  int smem_limit[FAKE_CUDA_MAX_DEVICES];   /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
  int non_portable[FAKE_CUDA_MAX_DEVICES]; /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
  fake_function functions[FAKE_CUDA_MAX_DEVICES];
} fake_kernel;

/* A CUlibrary. */
typedef struct fake_library {
  int live;
  const char *image;
  fake_kernel kernels[MAX_KERNELS_PER_LIBRARY];
} fake_library;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_library g_libraries[MAX_LIBRARIES]; /* guarded by g_lock */
static int g_num_libraries;                    /* guarded by g_lock */
static _Atomic(int) g_live_libraries;

/* ---- Driver entry points ---------------------------------------------------- */

#ifndef FAKE_CUDA_LEAN_DRIVER
/* Marks CUDA initialized; flags must be 0, as the driver requires. */
EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  count_call(FN_INIT, -1);
  CUresult r = take_failure(FN_INIT);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (Flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  atomic_store_explicit(&g_initialized, 1, memory_order_relaxed);
  return CUDA_SUCCESS;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

/* Returns CUDA_ERROR_NOT_INITIALIZED before cuInit, like the driver. */
static CUresult check_initialized(void) {
  return atomic_load_explicit(&g_initialized, memory_order_relaxed) ? CUDA_SUCCESS
                                                                    : CUDA_ERROR_NOT_INITIALIZED;
}

#ifndef FAKE_CUDA_LEAN_DRIVER
/* The driver's names for the codes the tests use; others are unknown. */
EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
  count_call(FN_GET_ERROR_NAME, -1);
  static const struct {
    CUresult code;
    const char *name;
  } names[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
      {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
      {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
      {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
      {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
      {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
      {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
      {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
      {CUDA_ERROR_INVALID_CLUSTER_SIZE, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
      {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
      {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
      {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (names[i].code == error) {
      *pStr = names[i].name;
      return CUDA_SUCCESS;
    }
  }
  *pStr = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

/* The thread's current device; CUDA_ERROR_INVALID_CONTEXT when none. */
EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  count_call(FN_CTX_GET_DEVICE, -1);
  CUresult r = take_failure(FN_CTX_GET_DEVICE);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r != CUDA_SUCCESS) {
    return r;
  }
  int dev = current_device();
  if (dev < 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *device = dev;
  return CUDA_SUCCESS;
}

#ifndef FAKE_CUDA_LEAN_DRIVER
/* Compute capability, opt-in shared memory and the attributes set with
   fake_cuda_set_device_attribute of a configured device. */
EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  count_call(FN_DEVICE_GET_ATTRIBUTE, dev);
  CUresult r = take_failure(FN_DEVICE_GET_ATTRIBUTE);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (!device_exists(dev)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *pi = atomic_load_explicit(&g_cc_major[dev], memory_order_relaxed);
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *pi = atomic_load_explicit(&g_cc_minor[dev], memory_order_relaxed);
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *pi = atomic_load_explicit(&g_max_smem_optin, memory_order_relaxed);
    break;
  default:
    *pi = attrib >= 0 && attrib < FAKE_CUDA_ATTRIBUTE_SLOTS
              ? atomic_load_explicit(&g_attributes[dev][attrib], memory_order_relaxed)
              : 0;
    break;
  }
  return CUDA_SUCCESS;
}

/* The name set with fake_cuda_set_device_name, cut to `len` bytes with its
   NUL, as the driver does. */
EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  count_call(FN_DEVICE_GET_NAME, dev);
  CUresult r = take_failure(FN_DEVICE_GET_NAME);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (name == NULL || len <= 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!device_exists(dev)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  size_t n = strlen(g_device_names[dev]);
  if (n >= (size_t)len) {
    n = (size_t)len - 1;
  }
  memcpy(name, g_device_names[dev], n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

/* The configured free and total memory (cuMemGetInfo_v2 via cuda.h). */
EXPORT CUresult CUDAAPI cuMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  count_call(FN_MEM_GET_INFO, current_device());
  CUresult r = take_failure(FN_MEM_GET_INFO);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (current_device() < 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *free_bytes = atomic_load_explicit(&g_mem_free, memory_order_relaxed);
  *total_bytes = atomic_load_explicit(&g_mem_total, memory_order_relaxed);
  return CUDA_SUCCESS;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

/* Sleeps for the configured load delay (fake_cuda_set_load_delay_us). */
__attribute__((unused)) static void load_delay(void) {
  unsigned us = atomic_load_explicit(&g_load_delay_us, memory_order_relaxed);
  if (us > 0) {
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    nanosleep(&ts, NULL);
  }
}

/* ---- The library API of CUDA 12 (what an old driver lacks) ----------------- */

#ifndef FAKE_CUDA_OLD_DRIVER

/* Returns the live library `handle`, or NULL. */
static fake_library *find_library(const void *handle) {
  for (int i = 0; i < MAX_LIBRARIES; ++i) {
    if (handle == &g_libraries[i] && g_libraries[i].live) {
      return &g_libraries[i];
    }
  }
  return NULL;
}

/* Returns the CUkernel `handle` if it belongs to a live library, else NULL. */
static fake_kernel *find_kernel(const void *handle) {
  const char *p = (const char *)handle;
  const char *base = (const char *)g_libraries;
  if (p < base || p >= base + sizeof g_libraries) {
    return NULL;
  }
  size_t index = (size_t)(p - base) / sizeof(fake_library);
  fake_library *lib = &g_libraries[index];
  for (int j = 0; j < MAX_KERNELS_PER_LIBRARY; ++j) {
    if (handle == &lib->kernels[j]) {
      return lib->live && lib->kernels[j].used ? &lib->kernels[j] : NULL;
    }
  }
  return NULL;
}

/* Returns the kernel whose CUfunction `handle` is, setting *device; NULL if
   `handle` is no function of a live kernel. */
static fake_kernel *find_function(const void *handle, int *device) {
  const char *p = (const char *)handle;
  const char *base = (const char *)g_libraries;
  if (p < base || p >= base + sizeof g_libraries) {
    return NULL;
  }
  fake_library *lib = &g_libraries[(size_t)(p - base) / sizeof(fake_library)];
  for (int j = 0; j < MAX_KERNELS_PER_LIBRARY; ++j) {
    fake_kernel *k = &lib->kernels[j];
    const fake_function *first = &k->functions[0];
    const fake_function *last = &k->functions[FAKE_CUDA_MAX_DEVICES - 1];
    if (handle >= (const void *)first && handle <= (const void *)last) {
      *device = (int)((const fake_function *)handle - first);
      return lib->live && k->used && (const fake_function *)handle == &k->functions[*device] ? k
                                                                                            : NULL;
    }
  }
  return NULL;
}

/* A fatbin made by NVIDIA's fatbinary (magic 0xBA55ED50, little-endian), as
   in a library that kpack built for real. */
static int is_real_fatbin(const void *code) {
  /* Byte by byte, stopping at the first mismatch: a short fake image ends in
     a NUL, which matches no magic byte, so nothing past it is read. */
  const unsigned char *u = (const unsigned char *)code;
  return u[0] == 0x50 && u[1] == 0xed && u[2] == 0x55 && u[3] == 0xba;
}

/*
 * Looks `entry` up in a fake fatbin image; returns its parameter count, or -1
 * if the image does not list it.
 */
static int image_entry_params(const char *image, const char *entry) {
  size_t n = strlen(entry);
  if (is_real_fatbin(image)) {
    /* kpack's cubins name their kernel in the ELF string table, NUL-ended;
       their parameter count is not modelled (0). */
    const unsigned char *u = (const unsigned char *)image;
    uint64_t size = 16;
    for (int i = 7; i >= 0; --i) size += (uint64_t)u[8 + i] << (8 * i);
    for (uint64_t at = 0; at + n + 1 <= size; ++at)
      if (memcmp(image + at, entry, n + 1) == 0 && (at == 0 || image[at - 1] == '\0')) return 0;
    return -1;
  }
  const char *p = image + strlen(FAKE_CUDA_FATBIN_MAGIC) - 1; /* at a '|' */
  while ((p = strchr(p, '|')) != NULL) {
    ++p;
    if (strncmp(p, entry, n) == 0 && p[n] == ':') {
      return atoi(p + n + 1);
    }
  }
  return -1;
}

/*
 * Whether code for arch number `number` ("sm_90" is 90) with suffix `suffix`
 * ('a' arch-specific, 'f' family, else plain), SASS or (`ptx`) PTX, runs on
 * a device of compute capability `cc` (10*major+minor), by the driver's
 * rules: SASS within its major version from its minor up (arch-specific
 * only on its exact version), PTX JIT-compiled for any newer device (family
 * PTX within its family, arch-specific PTX on its exact version).
 */
static int arch_runs_on(int number, char suffix, int ptx, int cc) {
  if (suffix == 'a') {
    return number == cc;
  }
  if (ptx && suffix != 'f') {
    return number <= cc;
  }
  return number / 10 == cc / 10 && number % 10 <= cc % 10;
}

/*
 * Whether `image` has code the driver could run on a device of compute
 * capability `cc`: one of its "sm_XX" (SASS) or "compute_XX" (PTX) items,
 * with an optional 'a' or 'f' suffix, runs there.  An image that lists no
 * arch, and a real fatbin (whose archs the fake does not read), has code
 * for every device.
 */
static int image_has_code_for(const char *image, int cc) {
  if (is_real_fatbin(image)) {
    return 1;
  }
  int listed = 0;
  const char *p = image + strlen(FAKE_CUDA_FATBIN_MAGIC) - 1; /* at a '|' */
  while ((p = strchr(p, '|')) != NULL) {
    ++p;
    const int ptx = strncmp(p, "compute_", 8) == 0;
    const char *digits = ptx ? p + 8 : strncmp(p, "sm_", 3) == 0 ? p + 3 : NULL;
    if (digits == NULL || *digits < '0' || *digits > '9') {
      continue; /* an entry or another item */
    }
    char *end = NULL;
    const long number = strtol(digits, &end, 10);
    listed = 1;
    if (arch_runs_on((int)number, *end, ptx, cc)) {
      return 1;
    }
  }
  return !listed;
}

/* Whether `image` has code for fake device `dev` (see image_has_code_for).
   A device the fake does not model is left to the other checks. */
static int image_runs_on_device(const char *image, int dev) {
  if (dev < 0 || dev >= FAKE_CUDA_MAX_DEVICES) {
    return 1;
  }
  const int cc = 10 * atomic_load_explicit(&g_cc_major[dev], memory_order_relaxed) +
                 atomic_load_explicit(&g_cc_minor[dev], memory_order_relaxed);
  return image_has_code_for(image, cc);
}

/* Records the image and loads it if it is a fake fatbin or a real one. */
EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                          CUjit_option *jitOptions, void **jitOptionsValues,
                                          unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions,
                                          void **libraryOptionValues,
                                          unsigned int numLibraryOptions) {
  count_call(FN_LIBRARY_LOAD_DATA, current_device());
  atomic_store_explicit(&g_last_image, code, memory_order_relaxed);
  load_delay();
  CUresult r = take_failure(FN_LIBRARY_LOAD_DATA);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r != CUDA_SUCCESS) {
    return r;
  }
  /* kpack passes no JIT options, and no library options or exactly
     CU_LIBRARY_BINARY_IS_PRESERVED with the value 1 carried in the pointer
     (cuda-python's encoding); anything else would be a runtime bug.  A
     driver older than the option refuses every library option. */
  if (library == NULL || code == NULL || jitOptions != NULL || jitOptionsValues != NULL ||
      numJitOptions != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int preserved = 0;
  if (numLibraryOptions != 0 || libraryOptions != NULL || libraryOptionValues != NULL) {
    if (atomic_load_explicit(&g_reject_library_options, memory_order_relaxed) ||
        numLibraryOptions != 1 || libraryOptions == NULL || libraryOptionValues == NULL ||
        libraryOptions[0] != CU_LIBRARY_BINARY_IS_PRESERVED ||
        libraryOptionValues[0] != (void *)(uintptr_t)1) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    preserved = 1;
  }
  if (strncmp((const char *)code, FAKE_CUDA_FATBIN_MAGIC, strlen(FAKE_CUDA_FATBIN_MAGIC)) != 0 &&
      !is_real_fatbin(code)) {
    return CUDA_ERROR_INVALID_IMAGE;
  }
  pthread_mutex_lock(&g_lock);
  if (g_num_libraries == MAX_LIBRARIES) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    fake_library *lib = &g_libraries[g_num_libraries++];
    lib->live = 1;
    /* Read in place (never copied) whether or not it is preserved: the
       runtime's images are static, and a test that frees one would see it. */
    lib->image = (const char *)code;
    *library = (CUlibrary)lib;
    atomic_store_explicit(&g_last_load_preserved, preserved, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_live_libraries, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

/* Returns lib's kernel for `entry`, creating it; NULL if lib has no room.
   Called with g_lock held. */
static fake_kernel *library_kernel(fake_library *lib, const char *entry, int num_params) {
  for (int j = 0; j < MAX_KERNELS_PER_LIBRARY; ++j) {
    fake_kernel *k = &lib->kernels[j];
    if (k->used && strcmp(k->entry, entry) == 0) {
      return k;
    }
    if (!k->used) {
      k->used = 1;
      k->library = lib;
      snprintf(k->entry, sizeof k->entry, "%s", entry);
      k->num_params = num_params;
      for (int d = 0; d < FAKE_CUDA_MAX_DEVICES; ++d) {
        k->functions[d].device = d;
      }
      return k;
    }
  }
  return NULL;
}

/* The library's CUkernel for an entry its image lists (the same handle
   each time); CUDA_ERROR_NOT_FOUND for others; CUDA_ERROR_NO_BINARY_FOR_GPU
   when the image has no code for the current device, as the driver
   answered on an H200 for a library built for sm_80 only
   (tests/gpu/RESULTS.md). */
EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
                                           const char *name) {
  const int dev = current_device();
  count_call(FN_LIBRARY_GET_KERNEL, dev);
  CUresult r = take_failure(FN_LIBRARY_GET_KERNEL);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (pKernel == NULL || name == NULL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_lock(&g_lock);
  fake_library *lib = find_library(library);
  int num_params = lib != NULL ? image_entry_params(lib->image, name) : -1;
  if (lib == NULL) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else if (num_params < 0) {
    r = CUDA_ERROR_NOT_FOUND;
  } else if (!image_runs_on_device(lib->image, dev)) {
    r = CUDA_ERROR_NO_BINARY_FOR_GPU;
  } else {
    fake_kernel *k = library_kernel(lib, name, num_params);
    if (k == NULL) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      *pKernel = (CUkernel)k;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

#ifndef FAKE_CUDA_LEAN_DRIVER
/* Unloads a live library; its handles become invalid. */
EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
  count_call(FN_LIBRARY_UNLOAD, -1);
  CUresult r = take_failure(FN_LIBRARY_UNLOAD);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  pthread_mutex_lock(&g_lock);
  fake_library *lib = find_library(library);
  if (lib == NULL) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    lib->live = 0;
    atomic_fetch_sub_explicit(&g_live_libraries, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

/* The kernel's CUfunction in the current device's context; marks the
   kernel resolved there (see lazy_module_load), or fails with
   CUDA_ERROR_NO_BINARY_FOR_GPU if its image has no code for the device. */
EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  int dev = current_device();
  count_call(FN_KERNEL_GET_FUNCTION, dev);
  load_delay();
  CUresult r = take_failure(FN_KERNEL_GET_FUNCTION);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (dev < 0 || dev >= FAKE_CUDA_MAX_DEVICES) { /* also keeps the arrays in bounds */
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  pthread_mutex_lock(&g_lock);
  fake_kernel *k = find_kernel(kernel);
  if (k == NULL || pFunc == NULL) {
    r = k == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
  } else if (!image_runs_on_device(k->library->image, dev)) {
    r = CUDA_ERROR_NO_BINARY_FOR_GPU;
  } else {
    k->resolved_on[dev] = 1;
    *pFunc = (CUfunction)&k->functions[dev];
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

#ifndef FAKE_CUDA_LEAN_DRIVER
/* Sets MAX_DYNAMIC_SHARED_SIZE_BYTES of a kernel on a device, up to the
   opt-in limit, or NON_PORTABLE_CLUSTER_SIZE_ALLOWED (0 or 1): the
   attributes kpack sets. */
EXPORT CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                             CUkernel kernel, CUdevice dev) {
  count_call(FN_KERNEL_SET_ATTRIBUTE, dev);
  load_delay();
  CUresult r = take_failure(FN_KERNEL_SET_ATTRIBUTE);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (!device_exists(dev)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  /* The runtime only ever sets these attributes. */
  const int smem = attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
  if (smem ? val < 0 || val > atomic_load_explicit(&g_max_smem_optin, memory_order_relaxed)
           : attrib != CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED || val < 0 || val > 1) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_lock(&g_lock);
  fake_kernel *k = find_kernel(kernel);
  if (k == NULL) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else if (smem) {
    k->smem_limit[dev] = val;
    atomic_store_explicit(&g_last_smem_attribute, val, memory_order_relaxed);
  } else {
    k->non_portable[dev] = val;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

/* Returns whether `stream` is NULL (legacy default) or a fake stream. */
static int stream_is_valid(const void *stream) {
  const char *p = (const char *)stream;
  return p == NULL || (p >= g_streams && p < g_streams + sizeof g_streams);
}

/*
 * Resolves the launched handle: a CUkernel (what kpack passes) or a
 * CUfunction of the current device.  Returns the kernel or NULL.
 */
static fake_kernel *launched_kernel(const void *f, int dev, int *was_kernel) {
  fake_kernel *k = find_kernel(f);
  *was_kernel = k != NULL;
  if (k == NULL) {
    int fdev = -1;
    k = find_function(f, &fdev);
    if (k != NULL && fdev != dev) {
      k = NULL; /* a function of another context */
    }
  }
  return k;
}

/* Checks launch dimensions and shared memory the way the driver does. */
static CUresult check_launch_config(const fake_kernel *k, int dev, const unsigned grid[3],
                                    const unsigned block[3], unsigned smem) {
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 ||
      block[2] == 0 || (unsigned long long)block[0] * block[1] * block[2] > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (smem > 48 * 1024 && (int)smem > k->smem_limit[dev]) {
    return CUDA_ERROR_INVALID_VALUE; /* the limit was not raised */
  }
  return CUDA_SUCCESS;
}

/* What a launch passed besides the plain cuLaunchKernel arguments: the
   attributes of a cuLaunchKernelEx (all 0 for cuLaunchKernel). */
typedef struct launch_attrs {
  int via_ex;
  unsigned pdl;
  unsigned cooperative;
  unsigned cluster[3];
  int num_attrs;
  int invalid; /* a config the fake refuses (see cuLaunchKernelEx) */
  unsigned cluster_policy;
} launch_attrs;

/*
 * Whether a cluster of this size may run k on `dev`: up to 8 blocks
 * always, up to 16 with the kernel's NON_PORTABLE_CLUSTER_SIZE_ALLOWED, as
 * on an H100.  Reads non_portable without the lock, as a launch reads
 * smem_limit (see the file comment).
 */
static int cluster_size_allowed(const fake_kernel *k, int dev, const unsigned cluster[3]) {
  const unsigned long long blocks = (unsigned long long)cluster[0] * cluster[1] * cluster[2];
  return blocks <= 8 || (blocks <= 16 && k->non_portable[dev]);
}

/* Records a successful launch as the calling thread's last one. */
static void record_launch(const void *f, int was_kernel, const fake_kernel *k, int dev,
                          const unsigned grid[3], const unsigned block[3], unsigned smem,
                          const void *stream, void **params, void **extra,
                          const launch_attrs *attrs) {
  fake_cuda_launch *l = &tl_last_launch;
  memset(l, 0, sizeof *l);
  l->function = f;
  l->was_kernel = was_kernel;
  l->entry = k->entry;
  l->device = dev;
  memcpy(l->grid, grid, sizeof l->grid);
  memcpy(l->block, block, sizeof l->block);
  l->smem = smem;
  l->stream = stream;
  l->params = params;
  l->num_params = k->num_params;
  for (int i = 0; i < k->num_params && i < FAKE_CUDA_MAX_PARAMS; ++i) {
    l->param_values[i] = params[i];
  }
  l->extra = extra;
  l->via_ex = attrs->via_ex;
  l->pdl = attrs->pdl;
  l->cooperative = attrs->cooperative;
  memcpy(l->cluster, attrs->cluster, sizeof l->cluster);
  l->num_attrs = attrs->num_attrs;
  l->cluster_policy = attrs->cluster_policy;
  tl_has_launch = 1;
  if (tl_launch_hook != NULL) {
    tl_launch_hook(l);
  }
}

/*
 * What cuLaunchKernel and cuLaunchKernelEx share once each has read its
 * arguments (counted as `fn`, whose injected failure comes first): validates
 * the launch as the driver would (context, stream, handle, dimensions,
 * shared-memory limit, parameters, and a cluster that divides the grid),
 * loads the module into the context if this is the first launch there, and
 * records the launch.
 */
static CUresult launch(int fn, CUfunction f, const unsigned grid[3], const unsigned block[3],
                       unsigned smem, CUstream hStream, void **kernelParams, void **extra,
                       const launch_attrs *attrs) {
  int dev = current_device();
  count_call(fn, dev);
  CUresult r = take_failure(fn);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (attrs->invalid) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (dev < 0 || dev >= FAKE_CUDA_MAX_DEVICES) { /* also keeps the arrays in bounds */
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!stream_is_valid(hStream)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  int was_kernel = 0;
  fake_kernel *k = launched_kernel(f, dev, &was_kernel);
  if (k == NULL) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  r = check_launch_config(k, dev, grid, block, smem);
  if (r != CUDA_SUCCESS) {
    return r;
  }
  /* A cluster must tile the grid: the driver (an H100's, 2026-11-25)
     refuses a misfit with CUDA_ERROR_INVALID_CLUSTER_SIZE. */
  for (int i = 0; i < 3 && attrs->cluster[0] != 0; ++i) {
    if (attrs->cluster[i] == 0 || grid[i] % attrs->cluster[i] != 0) {
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
  }
  if (!cluster_size_allowed(k, dev, attrs->cluster)) {
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  if (k->num_params > 0 && kernelParams == NULL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  /* The driver's lazy loading: a module not yet in this context is loaded
     now and stays loaded; an image without code for the device fails to
     load, with CUDA_ERROR_NO_BINARY_FOR_GPU.  Read without the lock on
     purpose (see the file comment): the runtime must order a device's first
     launch, which writes it, before every later launch there. */
  if (!k->resolved_on[dev]) {
    pthread_mutex_lock(&g_lock);
    count_call(FN_LAZY_MODULE_LOAD, dev);
    r = take_failure(FN_LAZY_MODULE_LOAD);
    if (r == CUDA_SUCCESS && !image_runs_on_device(k->library->image, dev)) {
      r = CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    k->resolved_on[dev] = r == CUDA_SUCCESS;
    pthread_mutex_unlock(&g_lock);
    if (r != CUDA_SUCCESS) {
      return r;
    }
  }
  record_launch(f, was_kernel, k, dev, grid, block, smem, hStream, kernelParams, extra, attrs);
  return CUDA_SUCCESS;
}

/* Validates the launch as the driver would (context, stream, handle,
   dimensions, shared-memory limit, parameters) and records it. */
EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void **kernelParams, void **extra) {
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  const launch_attrs none = {0, 0, 0, {0, 0, 0}, 0, 0, 0};
  return launch(FN_LAUNCH_KERNEL, f, grid, block, sharedMemBytes, hStream, kernelParams, extra,
                &none);
}

#ifndef FAKE_CUDA_LEAN_DRIVER
/*
 * cuLaunchKernel with a CUlaunchConfig: the same checks, lazy module load
 * and record, plus the attributes, which the record carries
 * (fake_cuda_launch: via_ex, pdl, cooperative, cluster, num_attrs,
 * cluster_policy).  Knows the four attributes kpack sets
 * (PROGRAMMATIC_STREAM_SERIALIZATION, COOPERATIVE, CLUSTER_DIMENSION,
 * CLUSTER_SCHEDULING_POLICY_PREFERENCE); any other, a NULL config, or
 * attributes counted but not passed is a runtime bug, refused with
 * CUDA_ERROR_INVALID_VALUE (after an injected failure, like every check).
 * A cluster that does not divide the grid, or of more blocks than the
 * kernel may have on the device (cluster_size_allowed), is
 * CUDA_ERROR_INVALID_CLUSTER_SIZE;
 * what a cluster or a cooperative launch needs of the device (sm_90,
 * co-resident blocks) is not modelled.  Counted (and fail_next'd) as
 * "cuLaunchKernelEx", not as "cuLaunchKernel".
 */
EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                         void **kernelParams, void **extra) {
  static const CUlaunchConfig k_no_config; /* stands in for a NULL config */
  const CUlaunchConfig *c = config != NULL ? config : &k_no_config;
  launch_attrs attrs = {1, 0, 0, {0, 0, 0}, (int)c->numAttrs, config == NULL, 0};
  attrs.invalid |= c->numAttrs > 0 && c->attrs == NULL;
  for (unsigned i = 0; i < c->numAttrs && !attrs.invalid; ++i) {
    const CUlaunchAttribute *a = &c->attrs[i];
    switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      attrs.pdl = (unsigned)a->value.programmaticStreamSerializationAllowed;
      break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      attrs.cooperative = (unsigned)a->value.cooperative;
      break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      attrs.cluster[0] = a->value.clusterDim.x;
      attrs.cluster[1] = a->value.clusterDim.y;
      attrs.cluster[2] = a->value.clusterDim.z;
      break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      attrs.cluster_policy = (unsigned)a->value.clusterSchedulingPolicyPreference;
      break;
    default: /* an attribute kpack never sets */
      attrs.invalid = 1;
      break;
    }
  }
  const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
  const unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
  return launch(FN_LAUNCH_KERNEL_EX, f, grid, block, c->sharedMemBytes, c->hStream, kernelParams,
                extra, &attrs);
}

/*
 * The clusters of this config that fit the device: what
 * fake_cuda_set_max_active_clusters set, for a CUkernel (what kpack
 * passes, as a CUfunction) and a config whose attributes name a cluster
 * the kernel may have on the current device (cluster_size_allowed; else
 * CUDA_ERROR_INVALID_CLUSTER_SIZE).  No cluster attribute, any other
 * attribute, or a NULL argument is CUDA_ERROR_INVALID_VALUE.  Counted on
 * the current device; the config is recorded (last_occupancy_query).
 */
EXPORT CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                                     const CUlaunchConfig *config) {
  const int dev = current_device();
  count_call(FN_OCCUPANCY_MAX_ACTIVE_CLUSTERS, dev);
  CUresult r = take_failure(FN_OCCUPANCY_MAX_ACTIVE_CLUSTERS);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r != CUDA_SUCCESS) {
    return r;
  }
  if (dev < 0 || dev >= FAKE_CUDA_MAX_DEVICES) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (numClusters == NULL || config == NULL || (config->numAttrs > 0 && config->attrs == NULL)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  unsigned cluster[3] = {0, 0, 0};
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    cluster[0] = config->attrs[i].value.clusterDim.x;
    cluster[1] = config->attrs[i].value.clusterDim.y;
    cluster[2] = config->attrs[i].value.clusterDim.z;
  }
  if (cluster[0] == 0 || cluster[1] == 0 || cluster[2] == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const fake_kernel *k = find_kernel(func);
  if (k == NULL) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!cluster_size_allowed(k, dev, cluster)) {
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  fake_cuda_launch *q = &tl_last_occupancy;
  memset(q, 0, sizeof *q);
  q->function = func;
  q->was_kernel = 1;
  q->entry = k->entry;
  q->device = dev;
  q->grid[0] = config->gridDimX;
  q->grid[1] = config->gridDimY;
  q->grid[2] = config->gridDimZ;
  q->block[0] = config->blockDimX;
  q->block[1] = config->blockDimY;
  q->block[2] = config->blockDimZ;
  q->smem = config->sharedMemBytes;
  q->stream = config->hStream;
  memcpy(q->cluster, cluster, sizeof q->cluster);
  q->num_attrs = (int)config->numAttrs;
  tl_has_occupancy = 1;
  *numClusters = atomic_load_explicit(&g_max_active_clusters, memory_order_relaxed);
  return CUDA_SUCCESS;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

#endif /* FAKE_CUDA_OLD_DRIVER */

/* ---- Tensor maps, device memory, stream capture ----------------------------- */

#ifndef FAKE_CUDA_LEAN_DRIVER
/* Bytes per element of each CUtensorMapDataType the fake encodes (the
   packed sub-byte types, 13..15, are refused); whether it is a float. */
static const struct {
  unsigned bytes;
  int floating;
} k_tensor_map_types[] = {{1, 0}, {2, 0}, {4, 0}, {4, 0}, {8, 0}, {8, 0}, {2, 1},
                          {4, 1}, {8, 1}, {2, 1}, {4, 1}, {4, 1}, {4, 1}};

/* Whether a cuTensorMapEncodeTiled call satisfies the driver's documented
   requirements (fake_cuda.h); `c` has its arguments. */
static int tensor_map_valid(const fake_cuda_tensor_map_call *c, const cuuint64_t *dims,
                            const cuuint64_t *strides, const cuuint32_t *box,
                            const cuuint32_t *element_strides) {
  const unsigned ntypes = sizeof k_tensor_map_types / sizeof k_tensor_map_types[0];
  if (c->map == NULL || (uintptr_t)c->map % 64 != 0 || c->data_type < 0 ||
      (unsigned)c->data_type >= ntypes || c->rank < 1 || c->rank > 5 ||
      (uintptr_t)c->address % 16 != 0 || dims == NULL || box == NULL || element_strides == NULL ||
      (c->rank > 1 && strides == NULL) || c->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE ||
      c->swizzle < 0 || c->swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B || c->l2_promotion < 0 ||
      c->l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || c->oob_fill < 0 || c->oob_fill > 1) {
    return 0;
  }
  const unsigned elem = k_tensor_map_types[c->data_type].bytes;
  if (c->oob_fill && !k_tensor_map_types[c->data_type].floating) {
    return 0;
  }
  for (unsigned i = 0; i < c->rank; ++i) {
    if (dims[i] == 0 || dims[i] > (1ull << 32) || box[i] == 0 || box[i] > 256 ||
        element_strides[i] == 0 || element_strides[i] > 8) {
      return 0;
    }
  }
  for (unsigned i = 0; i + 1 < c->rank; ++i) {
    if (strides[i] % 16 != 0 || strides[i] >= (1ull << 40)) {
      return 0;
    }
  }
  const unsigned inner = box[0] * elem;
  static const unsigned spans[] = {0, 32, 64, 128, 128, 128, 128}; /* by swizzle */
  return inner % 16 == 0 && (c->swizzle == 0 || inner <= spans[c->swizzle]);
}

/* Records the call (as the calling thread's last), checks it as the driver
   would and writes a recognizable map: "FAKETMAP", the address, a serial
   number, then the dims. */
EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  count_call(FN_TENSOR_MAP_ENCODE_TILED, -1);
  fake_cuda_tensor_map_call *c = &tl_last_tensor_map;
  memset(c, 0, sizeof *c);
  c->map = tensorMap;
  c->data_type = (int)tensorDataType;
  c->rank = tensorRank;
  c->address = globalAddress;
  for (unsigned i = 0; i < tensorRank && i < 5; ++i) {
    c->dims[i] = globalDim != NULL ? globalDim[i] : 0;
    c->strides[i] = globalStrides != NULL && i + 1 < tensorRank ? globalStrides[i] : 0;
    c->box[i] = boxDim != NULL ? boxDim[i] : 0;
    c->element_strides[i] = elementStrides != NULL ? elementStrides[i] : 0;
  }
  c->interleave = (int)interleave;
  c->swizzle = (int)swizzle;
  c->l2_promotion = (int)l2Promotion;
  c->oob_fill = (int)oobFill;
  tl_has_tensor_map = 1;
  CUresult r = take_failure(FN_TENSOR_MAP_ENCODE_TILED);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r == CUDA_SUCCESS &&
      !tensor_map_valid(c, globalDim, globalStrides, boxDim, elementStrides)) {
    r = CUDA_ERROR_INVALID_VALUE;
  }
  c->result = (int)r;
  if (r != CUDA_SUCCESS) {
    return r;
  }
  c->serial = atomic_fetch_add_explicit(&g_tensor_map_serial, 1, memory_order_relaxed) + 1;
  unsigned char *out = (unsigned char *)tensorMap;
  memset(out, 0, sizeof *tensorMap);
  memcpy(out, "FAKETMAP", 8);
  const uint64_t address = (uint64_t)(uintptr_t)globalAddress;
  memcpy(out + 8, &address, 8);
  memcpy(out + 16, &c->serial, 8);
  for (unsigned i = 0; i < tensorRank; ++i) {
    const uint64_t dim = globalDim[i];
    memcpy(out + 24 + 8 * i, &dim, 8);
  }
  return CUDA_SUCCESS;
}

/* What cuStreamIsCapturing answers for `stream` (fake_cuda_set_capturing). */
EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                            CUstreamCaptureStatus *captureStatus) {
  count_call(FN_STREAM_IS_CAPTURING, current_device());
  CUresult r = take_failure(FN_STREAM_IS_CAPTURING);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r != CUDA_SUCCESS) {
    return r;
  }
  const int index = stream_index(hStream);
  if (index < 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (captureStatus == NULL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *captureStatus =
      (CUstreamCaptureStatus)atomic_load_explicit(&g_capturing[index], memory_order_relaxed);
  return CUDA_SUCCESS;
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

#define MAX_ALLOCATIONS 4096
#define DEVICE_BASE ((CUdeviceptr)0x7a0000000000ull) /* no host mapping */
#define ALLOCATION_SPACING ((CUdeviceptr)2 << 20)   /* addresses 2 MiB apart */

/* Every allocation since reset (freed ones too, until the table is full:
   then freed entries are reused).  Guarded by g_mem_lock, which the
   allocation calls take: it orders nothing the runtime's launch path
   reads (see the file comment). */
static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_cuda_allocation g_allocations[MAX_ALLOCATIONS];
static int g_num_allocations;
static CUdeviceptr g_next_address = DEVICE_BASE;
static size_t g_allocated; /* live bytes */

/* A table entry for a new allocation, or NULL when the table is full of
   live ones.  Called with g_mem_lock held. */
static fake_cuda_allocation *new_allocation(void) {
  if (g_num_allocations < MAX_ALLOCATIONS) {
    return &g_allocations[g_num_allocations++];
  }
  for (int i = 0; i < MAX_ALLOCATIONS; ++i) {
    if (!g_allocations[i].live) {
      return &g_allocations[i];
    }
  }
  return NULL;
}

/* Allocates `bytes` on the current device (for cuMemAllocAsync on
   `stream`), counted against the free memory; CUDA_ERROR_OUT_OF_MEMORY
   when it does not fit. */
__attribute__((unused)) static CUresult allocate(CUdeviceptr *ptr, size_t bytes, int async,
                                                 CUstream stream) {
  const int dev = current_device();
  if (dev < 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (ptr == NULL || bytes == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t free_bytes = atomic_load_explicit(&g_mem_free, memory_order_relaxed);
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_mem_lock);
  fake_cuda_allocation *a = NULL;
  if (bytes > free_bytes - (g_allocated < free_bytes ? g_allocated : free_bytes) ||
      (a = new_allocation()) == NULL) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    const fake_cuda_allocation made = {g_next_address, bytes, dev, async, stream, 1, 0, NULL};
    *a = made;
    *ptr = g_next_address;
    g_next_address += (bytes + ALLOCATION_SPACING - 1) / ALLOCATION_SPACING * ALLOCATION_SPACING;
    g_allocated += bytes;
  }
  pthread_mutex_unlock(&g_mem_lock);
  return r;
}

/* Frees the live allocation at `ptr` (on `stream` when `async`);
   CUDA_ERROR_INVALID_VALUE for any other address. */
__attribute__((unused)) static CUresult release(CUdeviceptr ptr, int async, CUstream stream) {
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem_lock);
  for (int i = 0; i < g_num_allocations; ++i) {
    fake_cuda_allocation *a = &g_allocations[i];
    if (a->live && a->base == ptr) {
      a->live = 0;
      a->freed_async = async;
      a->freed_stream = stream;
      g_allocated -= a->size;
      r = CUDA_SUCCESS;
      break;
    }
  }
  pthread_mutex_unlock(&g_mem_lock);
  return r;
}

/* Whether [dst, dst + bytes) lies inside one live allocation (the tuning
   harness's cuMemcpyHtoD, fake_cuda_tune.c). */
int fake_cuda_memory_is_live(CUdeviceptr dst, size_t bytes) {
  int inside = 0;
  pthread_mutex_lock(&g_mem_lock);
  for (int i = 0; i < g_num_allocations && !inside; ++i) {
    const fake_cuda_allocation *a = &g_allocations[i];
    inside = a->live && dst >= a->base && dst - a->base <= a->size &&
             bytes <= a->size - (dst - a->base);
  }
  pthread_mutex_unlock(&g_mem_lock);
  return inside;
}

#ifndef FAKE_CUDA_LEAN_DRIVER
/* The status of stream-ordered allocation on `stream`: an invalid handle,
   or a capture, which the runtime must never allocate in. */
static CUresult check_async_stream(CUstream stream) {
  const int index = stream_index(stream);
  if (index < 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return atomic_load_explicit(&g_capturing[index], memory_order_relaxed) != 0
             ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
             : CUDA_SUCCESS;
}

/* Device memory for the current device, after cuMemGetInfo's checks (its
   count, failures and context), as the tuning harness has always seen it;
   counted as cuMemAlloc_v2 too. */
EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  count_call(FN_MEM_ALLOC, current_device());
  CUresult r = take_failure(FN_MEM_ALLOC);
  size_t free_bytes = 0, total = 0;
  if (r == CUDA_SUCCESS) {
    r = cuMemGetInfo(&free_bytes, &total);
  }
  return r != CUDA_SUCCESS ? r : allocate(dptr, bytesize, 0, NULL);
}

/* Stream-ordered device memory: an allocation recorded with its stream. */
EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  count_call(FN_MEM_ALLOC_ASYNC, current_device());
  load_delay();
  CUresult r = take_failure(FN_MEM_ALLOC_ASYNC);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r == CUDA_SUCCESS) {
    r = check_async_stream(hStream);
  }
  return r != CUDA_SUCCESS ? r : allocate(dptr, bytesize, 1, hStream);
}

/* Frees an allocation of either kind now. */
EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  count_call(FN_MEM_FREE, -1);
  CUresult r = take_failure(FN_MEM_FREE);
  return r != CUDA_SUCCESS ? r : release(dptr, 0, NULL);
}

/* Frees an allocation of either kind in stream order, recording the
   stream. */
EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  count_call(FN_MEM_FREE_ASYNC, current_device());
  CUresult r = take_failure(FN_MEM_FREE_ASYNC);
  if (r == CUDA_SUCCESS) {
    r = check_initialized();
  }
  if (r == CUDA_SUCCESS) {
    r = check_async_stream(hStream);
  }
  return r != CUDA_SUCCESS ? r : release(dptr, 1, hStream);
}
#endif /* FAKE_CUDA_LEAN_DRIVER */

/* ---- Control interface (fake_cuda.h) ------------------------------------------- */
/* Each function below is documented at its member of fake_cuda_api in
   fake_cuda.h, in the same order.  Settings are relaxed atomics; see the
   file comment for why. */

EXPORT void fake_cuda_reset(void) {
  pthread_mutex_lock(&g_lock);
  memset(g_libraries, 0, sizeof g_libraries);
  g_num_libraries = 0;
  pthread_mutex_unlock(&g_lock);
  for (int fn = 0; fn < FN_COUNT; ++fn) {
    atomic_store_explicit(&g_counts[fn], 0, memory_order_relaxed);
    atomic_store_explicit(&g_fail_next[fn], 0, memory_order_relaxed);
    for (int d = 0; d < FAKE_CUDA_MAX_DEVICES; ++d) {
      atomic_store_explicit(&g_device_counts[fn][d], 0, memory_order_relaxed);
    }
  }
  for (int d = 0; d < FAKE_CUDA_MAX_DEVICES; ++d) {
    atomic_store_explicit(&g_cc_major[d], 8, memory_order_relaxed);
    atomic_store_explicit(&g_cc_minor[d], 0, memory_order_relaxed);
    for (int a = 0; a < FAKE_CUDA_ATTRIBUTE_SLOTS; ++a) {
      atomic_store_explicit(&g_attributes[d][a], 0, memory_order_relaxed);
    }
    /* An A100's, like the default compute capability. */
    atomic_store_explicit(&g_attributes[d][CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT], 108,
                          memory_order_relaxed);
    atomic_store_explicit(&g_attributes[d][CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE], 40 << 20,
                          memory_order_relaxed);
    snprintf(g_device_names[d], FAKE_CUDA_NAME_SIZE, "%s", "NVIDIA A100-SXM4-40GB");
  }
  atomic_store_explicit(&g_initialized, 0, memory_order_relaxed);
  atomic_store_explicit(&g_device_count, 1, memory_order_relaxed);
  atomic_store_explicit(&g_default_device, 0, memory_order_relaxed);
  atomic_store_explicit(&g_load_delay_us, 0u, memory_order_relaxed);
  atomic_store_explicit(&g_mem_free, (size_t)1 << 30, memory_order_relaxed);
  atomic_store_explicit(&g_mem_total, (size_t)16 << 30, memory_order_relaxed);
  atomic_store_explicit(&g_max_smem_optin, 227 * 1024, memory_order_relaxed);
  atomic_store_explicit(&g_last_smem_attribute, 0, memory_order_relaxed);
  atomic_store_explicit(&g_last_image, NULL, memory_order_relaxed);
  atomic_store_explicit(&g_last_load_preserved, 0, memory_order_relaxed);
  atomic_store_explicit(&g_reject_library_options, 0, memory_order_relaxed);
  atomic_store_explicit(&g_live_libraries, 0, memory_order_relaxed);
  for (int i = 0; i < 5; ++i) {
    atomic_store_explicit(&g_capturing[i], 0, memory_order_relaxed);
  }
  atomic_store_explicit(&g_max_active_clusters, 1, memory_order_relaxed);
  atomic_store_explicit(&g_tensor_map_serial, 0ull, memory_order_relaxed);
  pthread_mutex_lock(&g_mem_lock);
  memset(g_allocations, 0, sizeof g_allocations);
  g_num_allocations = 0;
  g_next_address = DEVICE_BASE;
  g_allocated = 0;
  pthread_mutex_unlock(&g_mem_lock);
  tl_device = FAKE_CUDA_FOLLOW_DEFAULT;
  tl_has_launch = 0;
  tl_launch_hook = NULL;
  tl_has_tensor_map = 0;
  tl_has_occupancy = 0;
}

/* Starts from the reset state, so a test that forgets to reset still sees
   the documented defaults. */
__attribute__((constructor)) static void fake_cuda_load(void) { fake_cuda_reset(); }

EXPORT void fake_cuda_set_device_count(int count) {
  atomic_store_explicit(&g_device_count, count, memory_order_relaxed);
}

EXPORT void fake_cuda_set_compute_capability(int device, int major, int minor) {
  if (device >= 0 && device < FAKE_CUDA_MAX_DEVICES) {
    atomic_store_explicit(&g_cc_major[device], major, memory_order_relaxed);
    atomic_store_explicit(&g_cc_minor[device], minor, memory_order_relaxed);
  }
}

EXPORT void fake_cuda_set_device_attribute(int device, int attribute, int value) {
  if (device >= 0 && device < FAKE_CUDA_MAX_DEVICES && attribute >= 0 &&
      attribute < FAKE_CUDA_ATTRIBUTE_SLOTS) {
    atomic_store_explicit(&g_attributes[device][attribute], value, memory_order_relaxed);
  }
}

EXPORT void fake_cuda_set_device_name(int device, const char *name) {
  if (device >= 0 && device < FAKE_CUDA_MAX_DEVICES && name != NULL) {
    snprintf(g_device_names[device], FAKE_CUDA_NAME_SIZE, "%s", name);
  }
}

EXPORT void fake_cuda_set_current_device(int device) { tl_device = device; }

EXPORT void fake_cuda_set_default_device(int device) {
  atomic_store_explicit(&g_default_device, device, memory_order_relaxed);
}

EXPORT int fake_cuda_fail_next(const char *function, int cu_result) {
  int fn = fn_index(function);
  if (fn < 0) {
    return -1;
  }
  atomic_store_explicit(&g_fail_next[fn], cu_result, memory_order_relaxed);
  return 0;
}

EXPORT void fake_cuda_set_load_delay_us(unsigned microseconds) {
  atomic_store_explicit(&g_load_delay_us, microseconds, memory_order_relaxed);
}

EXPORT void fake_cuda_set_mem_info(size_t free_bytes, size_t total_bytes) {
  atomic_store_explicit(&g_mem_free, free_bytes, memory_order_relaxed);
  atomic_store_explicit(&g_mem_total, total_bytes, memory_order_relaxed);
}

EXPORT void fake_cuda_set_max_smem_optin(int bytes) {
  atomic_store_explicit(&g_max_smem_optin, bytes, memory_order_relaxed);
}

EXPORT unsigned long long fake_cuda_count(const char *function) {
  int fn = fn_index(function);
  return fn < 0 ? ~0ull : atomic_load_explicit(&g_counts[fn], memory_order_relaxed);
}

EXPORT unsigned long long fake_cuda_count_on_device(const char *function, int device) {
  int fn = fn_index(function);
  if (fn < 0 || device < 0 || device >= FAKE_CUDA_MAX_DEVICES) {
    return ~0ull;
  }
  return atomic_load_explicit(&g_device_counts[fn][device], memory_order_relaxed);
}

EXPORT int fake_cuda_live_libraries(void) {
  return atomic_load_explicit(&g_live_libraries, memory_order_relaxed);
}

EXPORT const void *fake_cuda_last_image(void) {
  return atomic_load_explicit(&g_last_image, memory_order_relaxed);
}

EXPORT int fake_cuda_last_load_preserved(void) {
  return atomic_load_explicit(&g_last_load_preserved, memory_order_relaxed);
}

EXPORT void fake_cuda_set_reject_library_options(int reject) {
  atomic_store_explicit(&g_reject_library_options, reject != 0, memory_order_relaxed);
}

EXPORT int fake_cuda_last_smem_attribute(void) {
  return atomic_load_explicit(&g_last_smem_attribute, memory_order_relaxed);
}

EXPORT void *fake_cuda_stream(int i) {
  return i >= 0 && i < (int)sizeof g_streams ? &g_streams[i] : NULL;
}

EXPORT int fake_cuda_last_launch(fake_cuda_launch *out) {
  if (!tl_has_launch) {
    return 0;
  }
  *out = tl_last_launch;
  return 1;
}

EXPORT const char *fake_cuda_kernel_entry(const void *handle) {
#ifdef FAKE_CUDA_OLD_DRIVER
  (void)handle;
  return NULL;
#else
  pthread_mutex_lock(&g_lock);
  const fake_kernel *k = find_kernel(handle);
  pthread_mutex_unlock(&g_lock);
  return k != NULL ? k->entry : NULL;
#endif
}

EXPORT void fake_cuda_set_initialized(int initialized) {
  atomic_store_explicit(&g_initialized, initialized != 0, memory_order_relaxed);
}

EXPORT void fake_cuda_set_launch_hook(void (*hook)(const fake_cuda_launch *launch)) {
  tl_launch_hook = hook;
}

EXPORT int fake_cuda_last_tensor_map(fake_cuda_tensor_map_call *out) {
  if (!tl_has_tensor_map) {
    return 0;
  }
  *out = tl_last_tensor_map;
  return 1;
}

EXPORT int fake_cuda_find_allocation(unsigned long long address, fake_cuda_allocation *out) {
  int found = 0;
  pthread_mutex_lock(&g_mem_lock);
  /* The newest first: an address freed and handed out again is the live one. */
  for (int i = g_num_allocations - 1; i >= 0 && !found; --i) {
    if (g_allocations[i].base == address) {
      *out = g_allocations[i];
      found = 1;
    }
  }
  pthread_mutex_unlock(&g_mem_lock);
  return found;
}

EXPORT int fake_cuda_live_allocations(void) {
  int live = 0;
  pthread_mutex_lock(&g_mem_lock);
  for (int i = 0; i < g_num_allocations; ++i) {
    live += g_allocations[i].live;
  }
  pthread_mutex_unlock(&g_mem_lock);
  return live;
}

EXPORT void fake_cuda_set_capturing(const void *stream, int status) {
  const int index = stream_index(stream);
  if (index >= 0) {
    atomic_store_explicit(&g_capturing[index], status, memory_order_relaxed);
  }
}

EXPORT void fake_cuda_set_max_active_clusters(int clusters) {
  atomic_store_explicit(&g_max_active_clusters, clusters, memory_order_relaxed);
}

EXPORT int fake_cuda_last_occupancy_query(fake_cuda_launch *out) {
  if (!tl_has_occupancy) {
    return 0;
  }
  *out = tl_last_occupancy;
  return 1;
}

EXPORT int fake_cuda_kernel_attribute(const void *kernel, int attribute, int device) {
#ifdef FAKE_CUDA_OLD_DRIVER
  (void)kernel;
  (void)attribute;
  (void)device;
  return -1;
#else
  if (device < 0 || device >= FAKE_CUDA_MAX_DEVICES) {
    return -1;
  }
  int value = -1;
  pthread_mutex_lock(&g_lock);
  const fake_kernel *k = find_kernel(kernel);
  if (k != NULL && attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    value = k->smem_limit[device];
  } else if (k != NULL && attribute == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
    value = k->non_portable[device];
  }
  pthread_mutex_unlock(&g_lock);
  return value;
#endif
}
