/*
 * driver.h - the runtime's private view of the CUDA driver: a table of entry
 * points resolved from a dlopen()ed libcuda.so.1.  Not installed.
 *
 * cuda.h is included for its types only; nothing links against libcuda, so
 * that programs using libkernels.a link with -ldl -lpthread alone and start
 * (and report KPACK_ERROR_DRIVER_NOT_FOUND) on machines without a GPU.
 */
#ifndef KPACK_RUNTIME_DRIVER_H
#define KPACK_RUNTIME_DRIVER_H

#include "kpack.h"

#include <cuda.h>
#include <stdatomic.h>
#include <stddef.h>

/* Types of the entry points kpack calls, spelled out so that driver.c can
   check each against its prototype in cuda.h at compile time. */
typedef CUresult (*kpack_pfn_init)(unsigned int flags);
typedef CUresult (*kpack_pfn_get_error_name)(CUresult error, const char **name);
typedef CUresult (*kpack_pfn_ctx_get_device)(CUdevice *device);
typedef CUresult (*kpack_pfn_device_get_attribute)(int *value, CUdevice_attribute attribute,
                                                   CUdevice device);
typedef CUresult (*kpack_pfn_device_get_name)(char *name, int len, CUdevice device);
typedef CUresult (*kpack_pfn_mem_get_info)(size_t *free_bytes, size_t *total_bytes);
typedef CUresult (*kpack_pfn_library_load_data)(CUlibrary *library, const void *code,
                                                CUjit_option *jit_options, void **jit_values,
                                                unsigned int num_jit_options,
                                                CUlibraryOption *library_options,
                                                void **library_values,
                                                unsigned int num_library_options);
typedef CUresult (*kpack_pfn_library_get_kernel)(CUkernel *kernel, CUlibrary library,
                                                 const char *name);
typedef CUresult (*kpack_pfn_library_unload)(CUlibrary library);
typedef CUresult (*kpack_pfn_kernel_set_attribute)(CUfunction_attribute attribute, int value,
                                                   CUkernel kernel, CUdevice device);
typedef CUresult (*kpack_pfn_launch_kernel)(CUfunction f, unsigned int grid_x,
                                            unsigned int grid_y, unsigned int grid_z,
                                            unsigned int block_x, unsigned int block_y,
                                            unsigned int block_z, unsigned int smem_bytes,
                                            CUstream stream, void **params, void **extra);
typedef CUresult (*kpack_pfn_launch_kernel_ex)(const CUlaunchConfig *config, CUfunction f,
                                               void **params, void **extra);
typedef CUresult (*kpack_pfn_tensor_map_encode_tiled)(
    CUtensorMap *map, CUtensorMapDataType data_type, cuuint32_t rank, void *address,
    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
    const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2_promotion,
    CUtensorMapFloatOOBfill oob_fill);
typedef CUresult (*kpack_pfn_mem_alloc_async)(CUdeviceptr *ptr, size_t bytes, CUstream stream);
typedef CUresult (*kpack_pfn_mem_free_async)(CUdeviceptr ptr, CUstream stream);
typedef CUresult (*kpack_pfn_mem_free)(CUdeviceptr ptr);
typedef CUresult (*kpack_pfn_stream_is_capturing)(CUstream stream, CUstreamCaptureStatus *status);
typedef CUresult (*kpack_pfn_occupancy_max_active_clusters)(int *clusters, CUfunction f,
                                                            const CUlaunchConfig *config);

/*
 * The driver entry points that a first launch calls, resolved (dlsym) when
 * the driver is loaded; a driver that lacks one is refused then, with
 * KPACK_ERROR_DRIVER_TOO_OLD naming it.  Members are not named after the
 * functions because cuda.h #defines some of those names to versioned
 * symbols (cuLaunchKernel -> cuLaunchKernel_ptsz under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM); driver.c names the exact symbol it
 * resolves for each.
 *
 * The other entry points kpack calls are not here: cuInit is resolved (and
 * called) only when no context is current at load time, and those of
 * kpack_lazy_entry on first use.  Fewer dlsym calls and no cuInit are what
 * make the first launch in a process that already has a context cheap.
 */
typedef struct kpack_driver {
  void *handle; /* from dlopen */
  kpack_pfn_ctx_get_device ctx_get_device;
  kpack_pfn_library_load_data library_load_data;
  kpack_pfn_library_get_kernel library_get_kernel;
  kpack_pfn_launch_kernel launch_kernel;
} kpack_driver;

/*
 * Entry points resolved on first use, each off the path of a first launch:
 * error names and memory figures are only wanted in error messages,
 * cuLibraryUnload after a failed load and in kpack_unload_all,
 * cuKernelSetAttribute for a launch with more than 48 KiB of dynamic shared
 * memory, cuDeviceGetAttribute (the compute capability) only after a
 * first use failed (kpack_runtime.c, "Why the arch check waits for a
 * failure"), and cuLaunchKernelEx only for a kpack_launch_ex with launch
 * attributes (one without any launches through cuLaunchKernel).
 * cuDeviceGetName is read once per device, by the first call of a tuned
 * auto dispatcher there (kpack_tuning_select).  cuTensorMapEncodeTiled is
 * for launchers with tensor descriptors (tensor_map.c); the memory and
 * stream-capture calls for scratch workspaces (workspace.c), and
 * cuOccupancyMaxActiveClusters for the first launch with a cluster on a
 * device.
 */
typedef enum kpack_lazy_entry {
  KPACK_LAZY_GET_ERROR_NAME,       /* cuGetErrorName */
  KPACK_LAZY_MEM_GET_INFO,         /* cuMemGetInfo_v2 (cuda.h's cuMemGetInfo) */
  KPACK_LAZY_LIBRARY_UNLOAD,       /* cuLibraryUnload */
  KPACK_LAZY_KERNEL_SET_ATTRIBUTE, /* cuKernelSetAttribute */
  KPACK_LAZY_DEVICE_GET_ATTRIBUTE, /* cuDeviceGetAttribute */
  KPACK_LAZY_LAUNCH_KERNEL_EX,     /* cuLaunchKernelEx (legacy default stream) */
  KPACK_LAZY_DEVICE_GET_NAME,      /* cuDeviceGetName */
  KPACK_LAZY_TENSOR_MAP_ENCODE_TILED, /* cuTensorMapEncodeTiled */
  KPACK_LAZY_MEM_ALLOC_ASYNC,      /* cuMemAllocAsync (legacy default stream) */
  KPACK_LAZY_MEM_FREE_ASYNC,       /* cuMemFreeAsync (legacy default stream) */
  KPACK_LAZY_MEM_FREE,             /* cuMemFree_v2 (cuda.h's cuMemFree) */
  KPACK_LAZY_STREAM_IS_CAPTURING,  /* cuStreamIsCapturing (legacy default stream) */
  KPACK_LAZY_OCCUPANCY_MAX_ACTIVE_CLUSTERS, /* cuOccupancyMaxActiveClusters */
  KPACK_LAZY_COUNT
} kpack_lazy_entry;

/* The loaded driver, or NULL.  Published with a release store once every
   member is set; read it through kpack_rt_driver(). */
extern _Atomic(const kpack_driver *) kpack_rt_driver_table;

/*
 * Returns the loaded driver or NULL if it is not loaded yet.  The acquire
 * load pairs with the release store in kpack_rt_driver_load(), so a non-NULL
 * result has all of its members visible.  Lock-free: this is on the hot path.
 */
static inline const kpack_driver *kpack_rt_driver(void) {
  return atomic_load_explicit(&kpack_rt_driver_table, memory_order_acquire);
}

/*
 * Loads the driver if it is not loaded: dlopen (RTLD_NOLOAD first: the
 * library is normally loaded already), dlsym of the members of
 * kpack_driver, then cuCtxGetDevice: if it succeeds a context is current, so
 * CUDA is initialized and cuInit is not called; otherwise cuInit is
 * resolved and cuInit(0) called, as before any use of CUDA.  Serialized by a
 * mutex; a failure leaves nothing loaded, so a later call tries again.  On
 * success stores the table in *out and returns KPACK_SUCCESS; otherwise
 * returns KPACK_ERROR_DRIVER_NOT_FOUND, KPACK_ERROR_DRIVER_TOO_OLD (naming
 * the missing symbol) or KPACK_ERROR_NO_DEVICE (cuInit failed) with the
 * detail set.
 *
 * *device is the device of the context current on the calling thread when
 * this call loaded the driver and its cuCtxGetDevice found one, so that the
 * first launch need not ask again; -1 otherwise (another call had loaded
 * the driver, no context was current, or the load failed).
 */
kpack_status kpack_rt_driver_load(const kpack_driver **out, CUdevice *device);

/*
 * Forgets the driver: unpublishes the table, forgets the lazily resolved
 * entry points and dlclose()s the library.  The caller guarantees that no
 * other thread is using the driver (see kpack_unload_all).
 */
void kpack_rt_driver_unload(void);

/*
 * The lazily resolved entry points of the loaded driver `d` (from
 * kpack_rt_driver() or kpack_rt_driver_load()): each is looked up with dlsym
 * on its first use and kept, so later uses cost an atomic load.  NULL when
 * `d` is NULL or the driver lacks the symbol (looked up again next time: it
 * only happens on error paths).  Thread-safe and lock-free (racing first
 * uses store the same pointer); they never touch the thread's last error, so
 * they can be called while a failure's detail is being written.
 */
kpack_pfn_get_error_name kpack_rt_get_error_name(const kpack_driver *d);
kpack_pfn_mem_get_info kpack_rt_mem_get_info(const kpack_driver *d);
kpack_pfn_library_unload kpack_rt_library_unload(const kpack_driver *d);
kpack_pfn_kernel_set_attribute kpack_rt_kernel_set_attribute(const kpack_driver *d);
kpack_pfn_device_get_attribute kpack_rt_device_get_attribute(const kpack_driver *d);
kpack_pfn_launch_kernel_ex kpack_rt_launch_kernel_ex(const kpack_driver *d);
kpack_pfn_device_get_name kpack_rt_device_get_name(const kpack_driver *d);
kpack_pfn_tensor_map_encode_tiled kpack_rt_tensor_map_encode_tiled(const kpack_driver *d);
kpack_pfn_mem_alloc_async kpack_rt_mem_alloc_async(const kpack_driver *d);
kpack_pfn_mem_free_async kpack_rt_mem_free_async(const kpack_driver *d);
kpack_pfn_mem_free kpack_rt_mem_free(const kpack_driver *d);
kpack_pfn_stream_is_capturing kpack_rt_stream_is_capturing(const kpack_driver *d);
kpack_pfn_occupancy_max_active_clusters kpack_rt_occupancy_max_active_clusters(
    const kpack_driver *d);

/*
 * Fails with KPACK_ERROR_DRIVER_TOO_OLD (CUresult 0) for lazy entry point
 * `e`, which the loaded driver lacks: "<library> has no <symbol>: the NVIDIA
 * driver is too old; ...", the message a missing entry point gets at load.
 */
kpack_status kpack_rt_fail_missing(kpack_lazy_entry e);

/*
 * Returns the name that driver `d` gives `result`
 * ("CUDA_ERROR_OUT_OF_MEMORY"), or "unrecognized CUresult" when `d` is NULL,
 * lacks cuGetErrorName or does not know the code.  Static storage; never
 * NULL.
 */
const char *kpack_rt_cu_name(const kpack_driver *d, CUresult result);

/*
 * Records the failure of a driver call with `status` and CUresult `r`: the
 * detail is the printf-style prefix (which names the call) followed by
 * " failed: NAME (code)".  Returns `status`.
 */
kpack_status kpack_rt_fail_cu(const kpack_driver *d, kpack_status status, CUresult r,
                              const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/*
 * After an out-of-memory failure (`r` is CUDA_ERROR_OUT_OF_MEMORY; any
 * other result does nothing), appends "; device D has F MiB free of T MiB"
 * to the thread's detail, which tells "the device is full" apart from "this
 * request is huge".  Best effort: nothing is added if the driver cannot say
 * (or lacks cuMemGetInfo_v2).
 */
void kpack_rt_append_memory_info(const kpack_driver *d, CUresult r, CUdevice dev);

#endif /* KPACK_RUNTIME_DRIVER_H */
