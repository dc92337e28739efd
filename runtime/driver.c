/*
 * driver.c - finds the CUDA driver at run time.
 *
 * libcuda.so.1 is dlopen()ed on first use instead of being linked, so that a
 * program using libkernels.a starts on a machine without a GPU and gets a
 * status it can report instead of a loader error.  Entry points are resolved
 * by their exact, versioned symbol names with dlsym; the un-suffixed names
 * are the ABI-stable ones every CUDA 12+ driver exports.
 */
#include "driver.h"

#include "errors.h"
#include "kpack_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/* The library loaded when no test path is set. */
#define KPACK_DRIVER_LIBRARY "libcuda.so.1"

/* Each member type must match its prototype in cuda.h.  _Generic does not
   evaluate its operand, so naming the functions here references nothing. */
_Static_assert(_Generic(&cuInit, kpack_pfn_init: 1, default: 0), "cuInit");
_Static_assert(_Generic(&cuGetErrorName, kpack_pfn_get_error_name: 1, default: 0),
               "cuGetErrorName");
_Static_assert(_Generic(&cuCtxGetDevice, kpack_pfn_ctx_get_device: 1, default: 0),
               "cuCtxGetDevice");
_Static_assert(_Generic(&cuDeviceGetAttribute, kpack_pfn_device_get_attribute: 1, default: 0),
               "cuDeviceGetAttribute");
_Static_assert(_Generic(&cuMemGetInfo, kpack_pfn_mem_get_info: 1, default: 0),
               "cuMemGetInfo_v2");
_Static_assert(_Generic(&cuLibraryLoadData, kpack_pfn_library_load_data: 1, default: 0),
               "cuLibraryLoadData");
_Static_assert(_Generic(&cuLibraryGetKernel, kpack_pfn_library_get_kernel: 1, default: 0),
               "cuLibraryGetKernel");
_Static_assert(_Generic(&cuLibraryUnload, kpack_pfn_library_unload: 1, default: 0),
               "cuLibraryUnload");
_Static_assert(_Generic(&cuKernelGetFunction, kpack_pfn_kernel_get_function: 1, default: 0),
               "cuKernelGetFunction");
_Static_assert(_Generic(&cuKernelSetAttribute, kpack_pfn_kernel_set_attribute: 1, default: 0),
               "cuKernelSetAttribute");
_Static_assert(_Generic(&cuLaunchKernel, kpack_pfn_launch_kernel: 1, default: 0),
               "cuLaunchKernel");
/* dlsym returns void *; POSIX guarantees function pointers have its size and
   representation, which resolve_entry_points() relies on. */
_Static_assert(sizeof(void *) == sizeof(kpack_pfn_init), "function pointer size");

/* One entry point: the symbol the driver exports and where it goes. */
typedef struct entry_point {
  const char *symbol;
  size_t offset; /* of the member in kpack_driver */
} entry_point;

/* Every entry point kpack needs, in the order they are looked up (a driver
   missing several is reported by the first).  The _v2 suffix is the symbol
   cuda.h maps cuMemGetInfo to; cuLaunchKernel is the legacy-default-stream
   variant, matching kpack.h's "NULL is the legacy default stream". */
static const entry_point k_entry_points[] = {
    {"cuInit", offsetof(kpack_driver, init)},
    {"cuGetErrorName", offsetof(kpack_driver, get_error_name)},
    {"cuCtxGetDevice", offsetof(kpack_driver, ctx_get_device)},
    {"cuDeviceGetAttribute", offsetof(kpack_driver, device_get_attribute)},
    {"cuMemGetInfo_v2", offsetof(kpack_driver, mem_get_info)},
    {"cuLibraryLoadData", offsetof(kpack_driver, library_load_data)},
    {"cuLibraryGetKernel", offsetof(kpack_driver, library_get_kernel)},
    {"cuLibraryUnload", offsetof(kpack_driver, library_unload)},
    {"cuKernelGetFunction", offsetof(kpack_driver, kernel_get_function)},
    {"cuKernelSetAttribute", offsetof(kpack_driver, kernel_set_attribute)},
    {"cuLaunchKernel", offsetof(kpack_driver, launch_kernel)},
};

_Atomic(const kpack_driver *) kpack_rt_driver_table;

/* The table kpack_rt_driver_table points at while loaded.  Written only
   under g_driver_lock while unpublished. */
static kpack_driver g_table;
static pthread_mutex_t g_driver_lock = PTHREAD_MUTEX_INITIALIZER;

/* Test seam: the library to dlopen instead of libcuda.so.1; "" for none.  A
   copy, so the caller's string need not outlive the call. */
static char g_test_path[4096];

/* See kpack_internal.h. */
void kpack_set_driver_path_for_testing(const char *path) {
  if (path == NULL) {
    g_test_path[0] = '\0';
    return;
  }
  size_t n = strlen(path);
  if (n >= sizeof g_test_path) {
    n = sizeof g_test_path - 1;
  }
  memcpy(g_test_path, path, n);
  g_test_path[n] = '\0';
}

/* Returns the path kpack_rt_driver_load() will dlopen. */
static const char *driver_path(void) {
  return g_test_path[0] != '\0' ? g_test_path : KPACK_DRIVER_LIBRARY;
}

/* See driver.h. */
const char *kpack_rt_cu_name(const kpack_driver *d, CUresult result) {
  const char *name = NULL;
  if (d != NULL && d->get_error_name(result, &name) == CUDA_SUCCESS && name != NULL) {
    return name;
  }
  return "unrecognized CUresult";
}

/*
 * Fills t's entry points from `handle`.  Returns KPACK_ERROR_DRIVER_TOO_OLD
 * naming the first missing symbol: the library entry points arrived in CUDA
 * 12.0, so that is what an older driver lacks.
 */
static kpack_status resolve_entry_points(kpack_driver *t, void *handle, const char *path) {
  size_t count = sizeof k_entry_points / sizeof k_entry_points[0];
  for (size_t i = 0; i < count; ++i) {
    void *sym = dlsym(handle, k_entry_points[i].symbol);
    if (sym == NULL) {
      return kpack_rt_fail(KPACK_ERROR_DRIVER_TOO_OLD, 0,
                           "%s has no %s: the NVIDIA driver is too old; kpack needs a driver "
                           "for CUDA 12.0 or newer",
                           path, k_entry_points[i].symbol);
    }
    /* memcpy, not a cast: ISO C has no conversion from void * to a
       function pointer, but the representations are the same (above). */
    memcpy((char *)t + k_entry_points[i].offset, &sym, sizeof sym);
  }
  return KPACK_SUCCESS;
}

/*
 * dlopens the driver, resolves it into *t and initializes CUDA.  On failure
 * closes whatever it opened and leaves *t untouched.
 */
static kpack_status open_driver(kpack_driver *t) {
  const char *path = driver_path();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *why = dlerror();
    return kpack_rt_fail(KPACK_ERROR_DRIVER_NOT_FOUND, 0,
                         "%s could not be loaded (%s); an NVIDIA driver is needed to launch "
                         "kernels",
                         path, why != NULL ? why : "no reason given");
  }
  kpack_driver local;
  memset(&local, 0, sizeof local);
  local.handle = handle;
  kpack_status status = resolve_entry_points(&local, handle, path);
  if (status == KPACK_SUCCESS) {
    /* cuInit is cheap once CUDA is initialized, which it is in any process
       that has made a context current; calling it keeps kpack correct in
       one that has not. */
    CUresult r = local.init(0);
    if (r != CUDA_SUCCESS) {
      status = kpack_rt_fail(KPACK_ERROR_NO_DEVICE, (int)r, "cuInit(0) failed: %s (%d)",
                             kpack_rt_cu_name(&local, r), (int)r);
    }
  }
  if (status != KPACK_SUCCESS) {
    dlclose(handle);
    return status;
  }
  *t = local;
  return KPACK_SUCCESS;
}

/* See driver.h. */
kpack_status kpack_rt_driver_load(const kpack_driver **out) {
  kpack_status status = KPACK_SUCCESS;
  pthread_mutex_lock(&g_driver_lock);
  /* Relaxed is enough under the lock: the table only changes under it. */
  const kpack_driver *d = atomic_load_explicit(&kpack_rt_driver_table, memory_order_relaxed);
  if (d == NULL) {
    status = open_driver(&g_table);
    if (status == KPACK_SUCCESS) {
      d = &g_table;
      /* Release: a thread that sees the pointer sees every member. */
      atomic_store_explicit(&kpack_rt_driver_table, d, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_driver_lock);
  *out = d;
  return status;
}

/* See driver.h. */
void kpack_rt_driver_unload(void) {
  pthread_mutex_lock(&g_driver_lock);
  if (atomic_load_explicit(&kpack_rt_driver_table, memory_order_relaxed) != NULL) {
    atomic_store_explicit(&kpack_rt_driver_table, NULL, memory_order_release);
    dlclose(g_table.handle);
    memset(&g_table, 0, sizeof g_table);
  }
  pthread_mutex_unlock(&g_driver_lock);
}
