/*
 * fake_cuda.h - control interface of the fake CUDA driver (libfakecuda.so)
 * that the runtime tests load in place of libcuda.so.1.
 *
 * The fake exports the driver entry points the kpack runtime uses, with the
 * names and C signatures of cuda.h, and these fake_cuda_* functions to
 * configure it and inspect what the runtime did.  Tests dlopen() the same
 * path the runtime is pointed at; the loader returns the same handle, so
 * both see one fake.  fake_cuda_bind() resolves the control functions.
 *
 * A "fatbin" for the fake is a NUL-terminated string
 *     "FAKEFATBIN1|<entry>:<number of parameters>|<entry>:<n>|...|sm_80|..."
 * cuLibraryLoadData also takes a real fatbin (fatbinary's magic 0xBA55ED50),
 * such as kpack builds, whose kernels are the names its cubins' string tables
 * hold (their parameter count is taken as 0: not modelled).  It rejects
 * anything else with CUDA_ERROR_INVALID_IMAGE, and cuLibraryGetKernel finds
 * only the entries listed, so tests can check that the runtime passed the
 * right image and entry name.
 *
 * The "sm_XX" (SASS) and "compute_XX" (PTX) items, each with an optional
 * 'a' or 'f' suffix as in kpack's arch names, say what code the image has.
 * Where it has none for a device's compute capability (by the driver's
 * rules; PTX is JIT-compiled), the fake fails as the driver does, with
 * CUDA_ERROR_NO_BINARY_FOR_GPU: in cuLibraryGetKernel when that device is
 * current (what an H200 did), and when the module is loaded into that
 * device's context (cuKernelGetFunction, or the first cuLaunchKernel or
 * cuLaunchKernelEx there: lazy_module_load).  An image without such items,
 * and a real fatbin, has code for every device.
 *
 * cuLaunchKernelEx is cuLaunchKernel with a CUlaunchConfig: the same checks
 * and lazy loading, and the same record (fake_cuda_launch), which also
 * holds the attributes it got.  A cluster of more than 8 blocks needs the
 * kernel's NON_PORTABLE_CLUSTER_SIZE_ALLOWED on the device (set with
 * cuKernelSetAttribute), and more than 16 is refused, as on an H100
 * (CUDA_ERROR_INVALID_CLUSTER_SIZE); cuOccupancyMaxActiveClusters applies the
 * same rules and answers what fake_cuda_set_max_active_clusters set.  The
 * lean build (libfakecuda_lean.so) lacks cuLaunchKernelEx, like the other
 * entry points the runtime looks up on first use, and stands in for a
 * driver without it.
 *
 * cuTensorMapEncodeTiled checks its arguments as the CUDA reference says
 * the driver does (the map 64-byte aligned, the address 16-byte aligned,
 * dims 1..2^32, strides multiples of 16 below 2^40, boxes 1..256 whose
 * innermost bytes are a multiple of 16 and fit the swizzle span, element
 * strides 1..8, padding nan only for floating types) and fails with
 * CUDA_ERROR_INVALID_VALUE otherwise; every call's arguments are recorded
 * (fake_cuda_tensor_map_call).  The map it writes starts with the bytes
 * "FAKETMAP", then the address and a serial number, one per successful
 * call, so a test can tell which call made a map.
 *
 * Device memory is not backed: cuMemAlloc and cuMemAllocAsync hand out
 * addresses 2 MiB apart in a range no process maps, counted against the
 * free memory of fake_cuda_set_mem_info (more is CUDA_ERROR_OUT_OF_MEMORY),
 * and record the device (the current one), the stream and how each was
 * freed (fake_cuda_allocation).  The stream-ordered calls refuse a stream
 * that is capturing (fake_cuda_set_capturing) with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: the runtime must never allocate
 * there.
 *
 * CUDA is initialized by cuInit or, standing in for an application that
 * initialized it before its first kpack launch (cudaSetDevice), by
 * fake_cuda_set_initialized().  Until then cuCtxGetDevice and the calls that
 * need CUDA return CUDA_ERROR_NOT_INITIALIZED whatever the current device
 * settings say, as the driver does: a context can only be current once CUDA
 * is initialized.
 *
 * C and C++.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device ordinals the fake can model: more than the runtime tracks
   (KPACK_MAX_DEVICES, 64), to test that limit. */
#define FAKE_CUDA_MAX_DEVICES 80

/* Parameters recorded per launch. */
#define FAKE_CUDA_MAX_PARAMS 16

/* Magic prefix of a fake fatbin. */
#define FAKE_CUDA_FATBIN_MAGIC "FAKEFATBIN1|"

/* fake_cuda_set_current_device(FAKE_CUDA_FOLLOW_DEFAULT): the calling thread
   uses the default device again. */
#define FAKE_CUDA_FOLLOW_DEFAULT (-2)

/* What cuLaunchKernel or cuLaunchKernelEx received, recorded per thread. */
typedef struct fake_cuda_launch {
  const void *function;   /* the handle passed as CUfunction */
  int was_kernel;         /* 1: a CUkernel from cuLibraryGetKernel; 0: a CUfunction */
  const char *entry;      /* its entry name (valid until fake_cuda_reset) */
  int device;             /* current device at the launch */
  unsigned grid[3];
  unsigned block[3];
  unsigned smem;
  const void *stream;
  void **params;          /* the kernelParams pointer itself */
  int num_params;         /* from the fatbin's entry list */
  void *param_values[FAKE_CUDA_MAX_PARAMS]; /* params[0..num_params) */
  void **extra;
  /* cuLaunchKernelEx only (0 for cuLaunchKernel): its CUlaunchConfig's
     grid, block, shared memory and stream are recorded above. */
  int via_ex;             /* 1: launched with cuLaunchKernelEx */
  unsigned pdl;           /* PROGRAMMATIC_STREAM_SERIALIZATION's value; 0 if absent */
  unsigned cooperative;   /* COOPERATIVE's value; 0 if absent */
  unsigned cluster[3];    /* CLUSTER_DIMENSION's x, y, z; 0 if absent */
  int num_attrs;          /* the config's numAttrs */
  unsigned cluster_policy; /* CLUSTER_SCHEDULING_POLICY_PREFERENCE's value; 0 if absent */
} fake_cuda_launch;

/* The arguments of a cuTensorMapEncodeTiled call, as the driver got them
   (innermost dimension first); only the first `rank` entries (rank - 1 for
   the strides) are copied. */
typedef struct fake_cuda_tensor_map_call {
  const void *map;
  int data_type;
  unsigned rank;
  const void *address;
  unsigned long long dims[5];
  unsigned long long strides[5];
  unsigned box[5];
  unsigned element_strides[5];
  int interleave;
  int swizzle;
  int l2_promotion;
  int oob_fill;
  int result;                /* the CUresult the fake returned */
  unsigned long long serial; /* written into the map; 0 when the call failed */
} fake_cuda_tensor_map_call;

/* One device allocation of cuMemAlloc or cuMemAllocAsync. */
typedef struct fake_cuda_allocation {
  unsigned long long base;
  unsigned long long size;
  int device;               /* current at the allocation */
  int async;                /* 1: cuMemAllocAsync */
  const void *stream;       /* cuMemAllocAsync's stream */
  int live;                 /* 0 once freed */
  int freed_async;          /* 1: freed with cuMemFreeAsync */
  const void *freed_stream; /* cuMemFreeAsync's stream */
} fake_cuda_allocation;

/* The control functions, as resolved by fake_cuda_bind(). */
typedef struct fake_cuda_api {
  /* Forgets all libraries, counters, failures and settings: 1 device of
     compute capability 8.0 named "NVIDIA A100-SXM4-40GB" (every device
     is), with 108 multiprocessors and 40 MiB of L2,
     current on every thread; no delay; 1 GiB free of 16 GiB; 227 KiB
     opt-in shared memory.  Marks CUDA uninitialized
     (cuInit or set_initialized must be called again).  Call only while the runtime has
     nothing loaded (after kpack_unload_all). */
  void (*reset)(void);
  void (*set_device_count)(int count);
  void (*set_compute_capability)(int device, int major, int minor);
  /* The calling thread's current device; -1: no current context;
     FAKE_CUDA_FOLLOW_DEFAULT: use the default. */
  void (*set_current_device)(int device);
  /* The current device of threads that set none; -1: no context. */
  void (*set_default_device)(int device);
  /* The next call of `function` (e.g. "cuLibraryLoadData";
     "cuLaunchKernel" and "cuLaunchKernelEx" are separate) returns
     `cu_result` without doing anything.  Returns 0, or -1 for an unknown
     function name. */
  int (*fail_next)(const char *function, int cu_result);
  /* Sleep in cuLibraryLoadData, cuKernelGetFunction, cuKernelSetAttribute
     and cuMemAllocAsync, to widen races. */
  void (*set_load_delay_us)(unsigned microseconds);
  void (*set_mem_info)(size_t free_bytes, size_t total_bytes);
  void (*set_max_smem_optin)(int bytes);
  /* Calls of `function` since reset (failed ones included), or ~0 for an
     unknown name.  Besides driver functions: "lazy_module_load" counts
     launches of a CUkernel that loaded its module on the device (the first
     there, unless cuKernelGetFunction loaded it before), as the driver's
     lazy loading does.  fail_next("lazy_module_load", r) makes the next
     such load fail, and with it that launch. */
  unsigned long long (*count)(const char *function);
  /* As count(), for calls made on (or, for cuKernelSetAttribute, naming)
     `device`.  Counted for cuKernelGetFunction, cuKernelSetAttribute,
     cuLaunchKernel, cuLaunchKernelEx, lazy_module_load,
     cuOccupancyMaxActiveClusters, cuMemAlloc_v2, cuMemAllocAsync,
     cuMemFreeAsync and cuStreamIsCapturing (the current device). */
  unsigned long long (*count_on_device)(const char *function, int device);
  /* Libraries loaded and not unloaded. */
  int (*live_libraries)(void);
  /* The `code` pointer of the last cuLibraryLoadData call. */
  const void *(*last_image)(void);
  /* The value of the last successful cuKernelSetAttribute. */
  int (*last_smem_attribute)(void);
  /* A valid stream handle, i in [0, 4); any other non-NULL CUstream is
     rejected with CUDA_ERROR_INVALID_HANDLE. */
  void *(*stream)(int i);
  /* Copies the calling thread's last successful launch; returns 0 if it
     made none since reset. */
  int (*last_launch)(fake_cuda_launch *out);
  /* The entry name of `handle` if it is a live CUkernel, else NULL. */
  const char *(*kernel_entry)(const void *handle);
  /* Marks CUDA initialized (1) or not (0) without a counted cuInit call, as
     an application's own cudaSetDevice() would have left it. */
  void (*set_initialized)(int initialized);
  /* Calls `hook` (NULL: none) with each successful launch of the calling
     thread, inside cuLaunchKernel or cuLaunchKernelEx, while the launch's
     parameter values are still alive (after the call they are the caller's
     dead stack).  Reset clears it on the calling thread. */
  void (*set_launch_hook)(void (*hook)(const fake_cuda_launch *launch));
  /* Whether the last successful cuLibraryLoadData passed
     CU_LIBRARY_BINARY_IS_PRESERVED (the image is read in place). */
  int (*last_load_preserved)(void);
  /* 1: cuLibraryLoadData refuses any library option with
     CUDA_ERROR_INVALID_VALUE, as a driver older than
     CU_LIBRARY_BINARY_IS_PRESERVED would.  Reset clears it. */
  void (*set_reject_library_options)(int reject);
  /* What cuDeviceGetAttribute answers for `attribute` (a
     CUdevice_attribute other than the compute capability and the opt-in
     shared memory, which have their setters) on `device`; unset ones read
     0. */
  void (*set_device_attribute)(int device, int attribute, int value);
  /* What cuDeviceGetName answers for `device` (up to 127 bytes).  Set it
     before the threads that launch start. */
  void (*set_device_name)(int device, const char *name);
  /* Copies the calling thread's last cuTensorMapEncodeTiled call (failed
     ones too); returns 0 if it made none since reset. */
  int (*last_tensor_map)(fake_cuda_tensor_map_call *out);
  /* Copies the allocation whose base is `address` (live or freed) into
     *out; returns 0 if there is none. */
  int (*allocation)(unsigned long long address, fake_cuda_allocation *out);
  /* Allocations not freed. */
  int (*live_allocations)(void);
  /* What cuStreamIsCapturing answers for `stream` (NULL or a fake stream):
     a CUstreamCaptureStatus, 0 (none) after reset. */
  void (*set_capturing)(const void *stream, int status);
  /* What cuOccupancyMaxActiveClusters answers for a cluster it accepts; 1
     after reset. */
  void (*set_max_active_clusters)(int clusters);
  /* Copies the calling thread's last successful cuOccupancyMaxActiveClusters
     call's config (grid, block, smem, stream, cluster, num_attrs, and the
     function as `function`); returns 0 if it made none since reset. */
  int (*last_occupancy_query)(fake_cuda_launch *out);
  /* The value cuKernelSetAttribute set for `attribute` (a
     CUfunction_attribute: MAX_DYNAMIC_SHARED_SIZE_BYTES or
     NON_PORTABLE_CLUSTER_SIZE_ALLOWED) of the CUkernel `kernel` on
     `device`; 0 if never set, -1 for an unknown kernel or attribute. */
  int (*kernel_attribute)(const void *kernel, int attribute, int device);
} fake_cuda_api;

/*
 * Resolves every member of *api from `handle` (a dlopen of libfakecuda.so).
 * Returns 0, or -1 naming nothing if a symbol is missing.
 */
static inline int fake_cuda_bind(fake_cuda_api *api, void *handle) {
  static const char *const names[] = {
      "fake_cuda_reset", "fake_cuda_set_device_count", "fake_cuda_set_compute_capability",
      "fake_cuda_set_current_device", "fake_cuda_set_default_device", "fake_cuda_fail_next",
      "fake_cuda_set_load_delay_us", "fake_cuda_set_mem_info", "fake_cuda_set_max_smem_optin",
      "fake_cuda_count", "fake_cuda_count_on_device", "fake_cuda_live_libraries",
      "fake_cuda_last_image", "fake_cuda_last_smem_attribute", "fake_cuda_stream",
      "fake_cuda_last_launch", "fake_cuda_kernel_entry", "fake_cuda_set_initialized",
      "fake_cuda_set_launch_hook", "fake_cuda_last_load_preserved",
      "fake_cuda_set_reject_library_options", "fake_cuda_set_device_attribute",
      "fake_cuda_set_device_name", "fake_cuda_last_tensor_map", "fake_cuda_find_allocation",
      "fake_cuda_live_allocations", "fake_cuda_set_capturing", "fake_cuda_set_max_active_clusters",
      "fake_cuda_last_occupancy_query", "fake_cuda_kernel_attribute"};
  /* The members are function pointers in declaration order, all of the size
     of void * (POSIX), so they are filled as an array; memcpy because C and
     C++ have no portable void * to function pointer conversion. */
  const size_t count = sizeof names / sizeof names[0];
  if (handle == NULL || sizeof(fake_cuda_api) != count * sizeof(void *)) {
    return -1;
  }
  for (size_t i = 0; i < count; ++i) {
    void *sym = dlsym(handle, names[i]);
    if (sym == NULL) {
      return -1;
    }
    memcpy((char *)api + i * sizeof(void *), &sym, sizeof sym);
  }
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* FAKE_CUDA_H */
