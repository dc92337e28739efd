/*
 * driver.c - finds the CUDA driver at run time.
 *
 * libcuda.so.1 is dlopen()ed on first use instead of being linked, so that a
 * program using libkernels.a starts on a machine without a GPU and gets a
 * status it can report instead of a loader error.  Entry points are resolved
 * by their exact, versioned symbol names with dlsym; the un-suffixed names
 * are the ABI-stable ones every CUDA 12+ driver exports.
 *
 * The first launch in a process pays for finding the driver, so that is
 * kept to what it needs: a dlopen that only finds the library where it is
 * already loaded (wherever a context exists; RTLD_NOLOAD, falling back to
 * a real load), one dlsym per entry point of kpack_driver, and cuInit only
 * when no context is current.  The device that the cuCtxGetDevice probe
 * finds is handed back to the launch, which would otherwise ask again.  The
 * entry points of kpack_lazy_entry are looked up on first use.
 */
#include "driver.h"

#include "errors.h"
#include "kpack_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
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
_Static_assert(_Generic(&cuDeviceGetName, kpack_pfn_device_get_name: 1, default: 0),
               "cuDeviceGetName");
_Static_assert(_Generic(&cuMemGetInfo, kpack_pfn_mem_get_info: 1, default: 0),
               "cuMemGetInfo_v2");
_Static_assert(_Generic(&cuLibraryLoadData, kpack_pfn_library_load_data: 1, default: 0),
               "cuLibraryLoadData");
_Static_assert(_Generic(&cuLibraryGetKernel, kpack_pfn_library_get_kernel: 1, default: 0),
               "cuLibraryGetKernel");
_Static_assert(_Generic(&cuLibraryUnload, kpack_pfn_library_unload: 1, default: 0),
               "cuLibraryUnload");
_Static_assert(_Generic(&cuKernelSetAttribute, kpack_pfn_kernel_set_attribute: 1, default: 0),
               "cuKernelSetAttribute");
_Static_assert(_Generic(&cuLaunchKernel, kpack_pfn_launch_kernel: 1, default: 0),
               "cuLaunchKernel");
/* cuda.h #defines cuLaunchKernelEx to cuLaunchKernelEx_ptsz under
   CUDA_API_PER_THREAD_DEFAULT_STREAM, as it does cuLaunchKernel; both
   variants have this prototype, and k_lazy_symbols names the legacy one. */
_Static_assert(_Generic(&cuLaunchKernelEx, kpack_pfn_launch_kernel_ex: 1, default: 0),
               "cuLaunchKernelEx");
_Static_assert(_Generic(&cuTensorMapEncodeTiled, kpack_pfn_tensor_map_encode_tiled: 1, default: 0),
               "cuTensorMapEncodeTiled");
/* The legacy-default-stream variants, as for cuLaunchKernel (k_lazy_symbols
   names them); the _ptsz ones have the same prototypes. */
_Static_assert(_Generic(&cuMemAllocAsync, kpack_pfn_mem_alloc_async: 1, default: 0),
               "cuMemAllocAsync");
_Static_assert(_Generic(&cuMemFreeAsync, kpack_pfn_mem_free_async: 1, default: 0),
               "cuMemFreeAsync");
_Static_assert(_Generic(&cuMemFree, kpack_pfn_mem_free: 1, default: 0), "cuMemFree_v2");
_Static_assert(_Generic(&cuStreamIsCapturing, kpack_pfn_stream_is_capturing: 1, default: 0),
               "cuStreamIsCapturing");
_Static_assert(_Generic(&cuOccupancyMaxActiveClusters,
                        kpack_pfn_occupancy_max_active_clusters: 1, default: 0),
               "cuOccupancyMaxActiveClusters");
/* dlsym returns void *; POSIX guarantees function pointers have its size and
   representation, which resolve_entry_points(), ensure_initialized() and
   the lazy entry points rely on. */
_Static_assert(sizeof(void *) == sizeof(kpack_pfn_init), "function pointer size");

/* One entry point: the symbol the driver exports and where it goes. */
typedef struct entry_point {
  const char *symbol;
  size_t offset; /* of the member in kpack_driver */
} entry_point;

/* The entry points resolved when the driver is loaded, those of
   kpack_driver, in the order they are looked up (a driver missing several
   is reported by the first).  cuLaunchKernel is the legacy-default-stream
   variant, matching kpack.h's "NULL is the legacy default stream". */
static const entry_point k_entry_points[] = {
    {"cuCtxGetDevice", offsetof(kpack_driver, ctx_get_device)},
    {"cuLibraryLoadData", offsetof(kpack_driver, library_load_data)},
    {"cuLibraryGetKernel", offsetof(kpack_driver, library_get_kernel)},
    {"cuLaunchKernel", offsetof(kpack_driver, launch_kernel)},
};

/* The symbols of kpack_lazy_entry, in its order.  The _v2 suffix is the
   symbol cuda.h maps cuMemGetInfo to.  cuLaunchKernelEx is, like
   cuLaunchKernel, the legacy-default-stream variant (not _ptsz), matching
   kpack.h's "NULL is the legacy default stream". */
static const char *const k_lazy_symbols[KPACK_LAZY_COUNT] = {
    [KPACK_LAZY_GET_ERROR_NAME] = "cuGetErrorName",
    [KPACK_LAZY_MEM_GET_INFO] = "cuMemGetInfo_v2",
    [KPACK_LAZY_LIBRARY_UNLOAD] = "cuLibraryUnload",
    [KPACK_LAZY_KERNEL_SET_ATTRIBUTE] = "cuKernelSetAttribute",
    [KPACK_LAZY_DEVICE_GET_ATTRIBUTE] = "cuDeviceGetAttribute",
    [KPACK_LAZY_LAUNCH_KERNEL_EX] = "cuLaunchKernelEx",
    [KPACK_LAZY_DEVICE_GET_NAME] = "cuDeviceGetName",
    [KPACK_LAZY_TENSOR_MAP_ENCODE_TILED] = "cuTensorMapEncodeTiled",
    [KPACK_LAZY_MEM_ALLOC_ASYNC] = "cuMemAllocAsync",
    [KPACK_LAZY_MEM_FREE_ASYNC] = "cuMemFreeAsync",
    [KPACK_LAZY_MEM_FREE] = "cuMemFree_v2",
    [KPACK_LAZY_STREAM_IS_CAPTURING] = "cuStreamIsCapturing",
    [KPACK_LAZY_OCCUPANCY_MAX_ACTIVE_CLUSTERS] = "cuOccupancyMaxActiveClusters",
};

_Atomic(const kpack_driver *) kpack_rt_driver_table;

/* The table kpack_rt_driver_table points at while loaded.  Written only
   under g_driver_lock while unpublished. */
static kpack_driver g_table;
static pthread_mutex_t g_driver_lock = PTHREAD_MUTEX_INITIALIZER;

/* The lazily resolved entry points of the loaded driver, NULL until first
   used.  Any thread may fill a slot (with the value dlsym gives every
   thread); kpack_rt_driver_unload() clears them. */
static _Atomic(void *) g_lazy[KPACK_LAZY_COUNT];

/* The path the loaded driver was opened from (KPACK_DRIVER_LIBRARY or
   g_test_path, which the test seam only changes while nothing is loaded),
   for messages about entry points found missing after the load.  A pointer,
   not a copy: a 4 KiB buffer written on every load would cost the first
   launch a page fault.  Written under g_driver_lock before the table is
   published, read by threads that have seen the table. */
static const char *g_loaded_path = "";

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
  kpack_pfn_get_error_name get_error_name = kpack_rt_get_error_name(d);
  const char *name = NULL;
  if (get_error_name != NULL && get_error_name(result, &name) == CUDA_SUCCESS && name != NULL) {
    return name;
  }
  return "unrecognized CUresult";
}

/* Fails with KPACK_ERROR_DRIVER_TOO_OLD: `path` lacks `symbol`.  The library
   entry points arrived in CUDA 12.0, so that is what an older driver lacks. */
static kpack_status fail_too_old(const char *path, const char *symbol) {
  return kpack_rt_fail(KPACK_ERROR_DRIVER_TOO_OLD, 0,
                       "%s has no %s: the NVIDIA driver is too old; kpack needs a driver for "
                       "CUDA 12.0 or newer",
                       path, symbol);
}

/*
 * Fills t's members from `handle`.  Returns KPACK_ERROR_DRIVER_TOO_OLD
 * naming the first missing symbol.
 */
static kpack_status resolve_entry_points(kpack_driver *t, void *handle, const char *path) {
  size_t count = sizeof k_entry_points / sizeof k_entry_points[0];
  for (size_t i = 0; i < count; ++i) {
    void *sym = dlsym(handle, k_entry_points[i].symbol);
    if (sym == NULL) {
      return fail_too_old(path, k_entry_points[i].symbol);
    }
    /* memcpy, not a cast: ISO C has no conversion from void * to a
       function pointer, but the representations are the same (above). */
    memcpy((char *)t + k_entry_points[i].offset, &sym, sizeof sym);
  }
  return KPACK_SUCCESS;
}

/*
 * Makes sure CUDA is initialized in this process.  A context current on the
 * calling thread means it is (a context can only be made after cuInit), and
 * that is the usual case: the application chose its device before its
 * first launch.  cuCtxGetDevice answers that for less than cuInit costs
 * even when CUDA is initialized already (in a fresh process on an H200:
 * 1.0 us against 2.4 us, 2026-11-22).  In any other
 * case (CUDA_ERROR_NOT_INITIALIZED, no current context, or a context that is
 * not usable) cuInit(0) is called as before any first use of CUDA, so its
 * failure is still KPACK_ERROR_NO_DEVICE, and the thread's missing context
 * is reported by the launch itself (KPACK_ERROR_NO_CONTEXT).  *device is
 * the probe's answer when it found a context, -1 otherwise.
 */
static kpack_status ensure_initialized(const kpack_driver *t, const char *path,
                                       CUdevice *device) {
  if (t->ctx_get_device(device) == CUDA_SUCCESS) {
    return KPACK_SUCCESS;
  }
  *device = -1;
  /* cuInit is looked up only here: no current context is rare. */
  void *sym = dlsym(t->handle, "cuInit");
  if (sym == NULL) {
    return fail_too_old(path, "cuInit");
  }
  kpack_pfn_init init;
  memcpy(&init, &sym, sizeof init);
  CUresult r = init(0);
  if (r != CUDA_SUCCESS) {
    /* The table is not published yet, so name the error through `t`. */
    return kpack_rt_fail(KPACK_ERROR_NO_DEVICE, (int)r, "cuInit(0) failed: %s (%d)",
                         kpack_rt_cu_name(t, r), (int)r);
  }
  return KPACK_SUCCESS;
}

/* Forgets every lazily resolved entry point. */
static void clear_lazy(void) {
  for (int e = 0; e < KPACK_LAZY_COUNT; ++e) {
    atomic_store_explicit(&g_lazy[e], NULL, memory_order_relaxed);
  }
}

/*
 * dlopens the driver, resolves it into *t and makes sure CUDA is
 * initialized; *device as ensure_initialized() sets it.  On failure closes
 * whatever it opened and leaves *t untouched.
 *
 * In a process with a CUDA context libcuda.so.1 is already loaded (by the
 * CUDA runtime or the application), and RTLD_NOLOAD only finds it and
 * takes a reference, with RTLD_LAZY so that it never asks the loader to
 * bind a lazily loaded library's pending relocations.  Measured on an H100
 * (bench/launch/cold_lookup.cc, bench/RESULTS.md) this saves nothing: the
 * first dlopen in a fresh process costs about 6 us either way, in first
 * touches of the loader's data, not in its work.  It is kept because it
 * asks the loader for no more than the runtime needs.  A library that is
 * not loaded (no context yet, or the tests' fake drivers) is loaded as
 * before, with RTLD_NOW, so that a broken installation fails here rather
 * than inside a later call.
 */
static kpack_status open_driver(kpack_driver *t, CUdevice *device) {
  const char *path = driver_path();
  void *handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == NULL) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
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
    status = ensure_initialized(&local, path, device);
  }
  if (status != KPACK_SUCCESS) {
    /* Naming cuInit's error may have filled a lazy slot from `handle`. */
    clear_lazy();
    dlclose(handle);
    return status;
  }
  g_loaded_path = path;
  *t = local;
  return KPACK_SUCCESS;
}

/* See driver.h. */
kpack_status kpack_rt_driver_load(const kpack_driver **out, CUdevice *device) {
  kpack_status status = KPACK_SUCCESS;
  *device = -1;
  pthread_mutex_lock(&g_driver_lock);
  /* Relaxed is enough under the lock: the table only changes under it. */
  const kpack_driver *d = atomic_load_explicit(&kpack_rt_driver_table, memory_order_relaxed);
  if (d == NULL) {
    status = open_driver(&g_table, device);
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
    clear_lazy();
    dlclose(g_table.handle);
    memset(&g_table, 0, sizeof g_table);
    g_loaded_path = "";
  }
  pthread_mutex_unlock(&g_driver_lock);
}

/*
 * Returns lazy entry point `e` of `d`, looking it up on first use; NULL if
 * `d` is NULL or lacks it.  Acquire pairs with the release store, so a
 * pointer another thread found is seen whole; a NULL slot only costs a
 * dlsym, which is thread-safe.
 */
static void *lazy_entry(const kpack_driver *d, kpack_lazy_entry e) {
  if (d == NULL) {
    return NULL;
  }
  void *sym = atomic_load_explicit(&g_lazy[e], memory_order_acquire);
  if (sym == NULL) {
    sym = dlsym(d->handle, k_lazy_symbols[e]);
    if (sym != NULL) {
      atomic_store_explicit(&g_lazy[e], sym, memory_order_release);
    }
  }
  return sym;
}

/* The lazy getters of driver.h, one per kpack_lazy_entry: each turns
   lazy_entry's void * into its function pointer type with memcpy (see the
   size assertion above). */
#define KPACK_LAZY_GETTER(type, function, entry) \
  type function(const kpack_driver *d) {          \
    void *sym = lazy_entry(d, entry);             \
    type fn;                                      \
    memcpy(&fn, &sym, sizeof fn);                 \
    return fn;                                    \
  }

/* See driver.h. */
KPACK_LAZY_GETTER(kpack_pfn_get_error_name, kpack_rt_get_error_name, KPACK_LAZY_GET_ERROR_NAME)
KPACK_LAZY_GETTER(kpack_pfn_mem_get_info, kpack_rt_mem_get_info, KPACK_LAZY_MEM_GET_INFO)
KPACK_LAZY_GETTER(kpack_pfn_library_unload, kpack_rt_library_unload, KPACK_LAZY_LIBRARY_UNLOAD)
KPACK_LAZY_GETTER(kpack_pfn_kernel_set_attribute, kpack_rt_kernel_set_attribute,
                  KPACK_LAZY_KERNEL_SET_ATTRIBUTE)
KPACK_LAZY_GETTER(kpack_pfn_device_get_attribute, kpack_rt_device_get_attribute,
                  KPACK_LAZY_DEVICE_GET_ATTRIBUTE)
KPACK_LAZY_GETTER(kpack_pfn_launch_kernel_ex, kpack_rt_launch_kernel_ex,
                  KPACK_LAZY_LAUNCH_KERNEL_EX)
KPACK_LAZY_GETTER(kpack_pfn_device_get_name, kpack_rt_device_get_name, KPACK_LAZY_DEVICE_GET_NAME)
KPACK_LAZY_GETTER(kpack_pfn_tensor_map_encode_tiled, kpack_rt_tensor_map_encode_tiled,
                  KPACK_LAZY_TENSOR_MAP_ENCODE_TILED)
KPACK_LAZY_GETTER(kpack_pfn_mem_alloc_async, kpack_rt_mem_alloc_async, KPACK_LAZY_MEM_ALLOC_ASYNC)
KPACK_LAZY_GETTER(kpack_pfn_mem_free_async, kpack_rt_mem_free_async, KPACK_LAZY_MEM_FREE_ASYNC)
KPACK_LAZY_GETTER(kpack_pfn_mem_free, kpack_rt_mem_free, KPACK_LAZY_MEM_FREE)
KPACK_LAZY_GETTER(kpack_pfn_stream_is_capturing, kpack_rt_stream_is_capturing,
                  KPACK_LAZY_STREAM_IS_CAPTURING)
KPACK_LAZY_GETTER(kpack_pfn_occupancy_max_active_clusters, kpack_rt_occupancy_max_active_clusters,
                  KPACK_LAZY_OCCUPANCY_MAX_ACTIVE_CLUSTERS)

/* See driver.h. */
kpack_status kpack_rt_fail_missing(kpack_lazy_entry e) {
  return fail_too_old(g_loaded_path, k_lazy_symbols[e]);
}

/* See driver.h. */
kpack_status kpack_rt_fail_cu(const kpack_driver *d, kpack_status status, CUresult r,
                              const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kpack_rt_vfail(status, (int)r, fmt, ap);
  va_end(ap);
  kpack_rt_append_detail(" failed: %s (%d)", kpack_rt_cu_name(d, r), (int)r);
  return status;
}

/* See driver.h. */
void kpack_rt_append_memory_info(const kpack_driver *d, CUresult r, CUdevice dev) {
  if (r != CUDA_ERROR_OUT_OF_MEMORY) {
    return;
  }
  kpack_pfn_mem_get_info mem_get_info = kpack_rt_mem_get_info(d);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (mem_get_info == NULL || mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS) {
    return;
  }
  kpack_rt_append_detail("; device %d has %zu MiB free of %zu MiB", (int)dev,
                         free_bytes >> 20, total_bytes >> 20);
}
