/*
 * kpack_internal.h - the contract between kpack-generated launcher sources
 * and the runtime.  NOT a public API: only code that kpack generates (and
 * the runtime's own tests) include it.  Its layout is versioned by
 * KPACK_ABI_VERSION in kpack.h.
 *
 * Requires C11 (<stdatomic.h>): generated launcher sources are compiled by
 * the kpack build, never by the consumer.  The consumer-facing generated
 * header only includes kpack.h.
 */
#ifndef KPACK_INTERNAL_H
#define KPACK_INTERNAL_H

#include "kpack.h"

#include <stdatomic.h>
#include <stdint.h>

#ifdef __cplusplus
#error "kpack_internal.h is C11 only; it is included by generated launcher .c files"
#endif

/* Devices per process that the runtime tracks (CUdevice ordinals 0..63). */
#define KPACK_MAX_DEVICES 64

/* Arch codes: 10*major + minor (80, 86, 90, 100, 120) plus flags. */
#define KPACK_ARCH_SPECIFIC 0x10000 /* "sm_90a": runs only on exactly 9.0 */
#define KPACK_ARCH_FAMILY 0x20000   /* "sm_100f": runs on the 10.x family */
#define KPACK_ARCH_NUMBER(code) ((code) & 0xffff)

/* One embedded fatbin, as laid out by the assembler table in the
   generated *_fatbins.S: an absolute 64-bit address and a size, so that the
   blobs themselves can live in a large-data section beyond 2 GiB. */
typedef struct kpack_blob {
  const unsigned char *data;
  uint64_t size;
} kpack_blob;

/* Mutable per-specialization runtime state.  Generated code allocates one
   zero-initialized instance per specialization (static storage); only the
   runtime reads or writes its fields. */
typedef struct kpack_kernel_state {
  _Atomic(uintptr_t) kernel;          /* CUkernel, 0 until loaded */
  void *library;                      /* CUlibrary, guarded by the load lock */
  _Atomic(uint32_t) device_ready[KPACK_MAX_DEVICES]; /* 0, or bits: launched,
                                                        cluster checked */
  _Atomic(uint32_t) smem_limit[KPACK_MAX_DEVICES];   /* dynamic smem set */
  struct kpack_kernel_state *next_loaded; /* list for kpack_unload_all */
} kpack_kernel_state;

/* Immutable description of one specialization (one fatbin, one entry). */
typedef struct kpack_kernel {
  int abi_version;                /* KPACK_ABI_VERSION the code was made for */
  const char *package;            /* package name, for messages */
  const char *kernel;             /* manifest kernel name */
  const char *name;               /* specialization name */
  const char *entry;              /* kernel symbol inside the cubins */
  const kpack_blob *fatbin;       /* the embedded fatbin; the driver reads it in
                                     place, so it must stay valid and unchanged
                                     while the process may launch k */
  const uint32_t *sass_archs;     /* arch codes with SASS in the fatbin */
  uint32_t num_sass_archs;
  const uint32_t *ptx_archs;      /* arch codes with PTX (manifest asked) */
  uint32_t num_ptx_archs;
  const char *archs_text;         /* "sm_80,sm_90", for messages and info */
  const char *ptx_archs_text;     /* "" when no PTX */
  const char *build_mode;         /* "release" or "debug" */
  kpack_kernel_state *state;      /* zero-initialized runtime state */
} kpack_kernel;

/*
 * Launches `k` on `stream` with the given grid, block and dynamic shared
 * memory; `args` is the cuLaunchKernel parameter array (one pointer per
 * kernel parameter, hidden parameters included).  A grid with any zero
 * dimension launches nothing and returns KPACK_SUCCESS.
 *
 * The first launch of `k` in the process loads its fatbin
 * (cuLibraryLoadData, cuLibraryGetKernel); the first launch on each device
 * raises the dynamic shared-memory limit when `smem` > 48 KiB, and launches
 * under the load lock (the driver loads the code into the context inside
 * that launch; its failures get load statuses).  When one of those steps
 * fails on a device that `k` has no SASS or usable PTX for, the status is
 * KPACK_ERROR_NO_BINARY_FOR_DEVICE, naming the device's sm and the archs
 * built.  Racing first launches load exactly once.  After that the
 * path is cuCtxGetDevice, two atomic loads and cuLaunchKernel of the
 * context-independent CUkernel: no locks, no allocation, no synchronization,
 * so it is legal inside stream capture.
 *
 * Thread-safe.  Returns KPACK_SUCCESS or an error status; on error the
 * thread's last CUresult and detail are set.
 */
kpack_status kpack_launch(const kpack_kernel *k, kpack_stream stream,
                          uint32_t grid_x, uint32_t grid_y, uint32_t grid_z,
                          uint32_t block_x, uint32_t block_y, uint32_t block_z,
                          uint32_t smem_bytes, void **args);

/* Launch attribute flags for kpack_launch_ex. Pinned: generated code passes them. */
#define KPACK_LAUNCH_PDL 0x1u          /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 1 */
#define KPACK_LAUNCH_COOPERATIVE 0x2u  /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 1 */
#define KPACK_LAUNCH_CLUSTER_SPREAD 0x4u /* CLUSTER_SCHEDULING_POLICY_PREFERENCE = SPREAD */

/*
 * kpack_launch with launch attributes: everything kpack_launch does and
 * says above (the lazy load, the first launch on a device under the load
 * lock, raising the dynamic shared-memory limit, the arch errors, an empty
 * grid launching nothing, thread safety and the statuses) holds as written
 * there, except that a launch with attributes goes through cuLaunchKernelEx
 * with a CUlaunchConfig of the same grid, block, dynamic shared memory and
 * stream, the CUkernel as its CUfunction and `args` as its kernelParams.
 * Its attributes, in this order, only those asked for:
 *   - CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 1 when `flags`
 *     has KPACK_LAUNCH_PDL (programmatic dependent launch: the kernel may
 *     start while the previous one on the stream still runs, and waits for
 *     its results itself, with griddepcontrol.wait);
 *   - CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 1 when `flags` has
 *     KPACK_LAUNCH_COOPERATIVE (every block resident at once, for grid
 *     synchronization);
 *   - CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {cluster_x, cluster_y,
 *     cluster_z} when cluster_x != 0;
 *   - CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE =
 *     CU_CLUSTER_SCHEDULING_POLICY_SPREAD when `flags` has
 *     KPACK_LAUNCH_CLUSTER_SPREAD (only with a cluster: the CTAs of a
 *     cluster spread over the SMs, what Triton asks for its num_ctas).
 * With `flags` 0 and no cluster there are none, and the launch is exactly
 * kpack_launch's, through cuLaunchKernel at the same cost, so generated code
 * may call kpack_launch_ex whether or not a call switches PDL on.
 *
 * cluster_x 0 means no cluster, and then cluster_y and cluster_z must be 0
 * too; with cluster_x != 0 all three must be at least 1 (that they divide
 * the grid is the driver's to check at the launch).  Any other cluster,
 * KPACK_LAUNCH_CLUSTER_SPREAD without a cluster, and a `flags` bit other
 * than those above, is KPACK_ERROR_INVALID_ARGUMENT (CUresult 0, nothing
 * launched or loaded), with a detail naming the specialization and the
 * values:
 *   "<spec>: kpack_launch_ex: flags 0x9 has unknown bits 0x8 (known:
 *    KPACK_LAUNCH_PDL 0x1, KPACK_LAUNCH_COOPERATIVE 0x2,
 *    KPACK_LAUNCH_CLUSTER_SPREAD 0x4)",
 *   "<spec>: kpack_launch_ex: cluster 0x2x1: cluster_x 0 means no cluster,
 *    so cluster_y and cluster_z must be 0 too",
 *   "<spec>: kpack_launch_ex: cluster 2x0x1: every cluster dimension must
 *    be at least 1",
 *   "<spec>: kpack_launch_ex: KPACK_LAUNCH_CLUSTER_SPREAD needs a cluster
 *    (cluster_x 0 means none)".
 *
 * The first launch with a cluster of `k` on each device (under the load
 * lock, after the shared-memory limit is raised) prepares the cluster:
 * a cluster of more than 8 blocks (non-portable: up to 16 on an H100) sets
 * CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 1 on the kernel
 * for the device (cuKernelSetAttribute), and cuOccupancyMaxActiveClusters
 * (looked up then) says whether the cluster fits the device at all.  Where
 * it gives 0, nothing is launched and the status is
 * KPACK_ERROR_INVALID_ARGUMENT (CUresult 0): "<spec>: cluster 16x1x1 of
 * 256-thread blocks with 200000 bytes of shared memory cannot run on
 * device 0 (sm_90): cuOccupancyMaxActiveClusters gives 0".  A failure of
 * either call is a load status where the device has no code for `k` (as
 * at any first launch), KPACK_ERROR_INVALID_ARGUMENT for
 * CUDA_ERROR_INVALID_VALUE or CUDA_ERROR_INVALID_CLUSTER_SIZE, and
 * KPACK_ERROR_DRIVER otherwise, the detail naming the call, e.g.
 * "<spec>: cuOccupancyMaxActiveClusters(cluster 32x1x1, block 128x1x1,
 * smem 0) on device 0 failed: CUDA_ERROR_INVALID_CLUSTER_SIZE (912)"; a
 * driver without cuOccupancyMaxActiveClusters is
 * KPACK_ERROR_DRIVER_TOO_OLD.  None of it is latched: the next launch
 * checks again.  A cluster that passed is not checked again on that
 * device, except that a later cluster of more than 8 blocks sets the
 * non-portable attribute (once) and checks again: every launch of a
 * generated launcher has its specialization's cluster.
 * These are checked after kpack_launch's own argument checks, so an empty
 * grid still launches nothing and succeeds whatever the attributes, and a
 * NULL `k` is "kpack_launch_ex: the kernel is NULL".
 *
 * cuLaunchKernelEx is looked up on the first launch with attributes (after
 * the driver is found, before anything is loaded) and then read with one
 * atomic load per such launch.  A driver without it gives
 * KPACK_ERROR_DRIVER_TOO_OLD ("<driver> has no cuLaunchKernelEx: the NVIDIA
 * driver is too old; ..."), each time, and launches nothing.  A launch the
 * driver rejects is KPACK_ERROR_LAUNCH_FAILED (or, at the first launch on a
 * device, a load status, as for kpack_launch), and its detail names the call
 * with the attributes that were set: "<spec>: cuLaunchKernelEx(grid 8x1x1,
 * block 128x1x1, smem 0, pdl, cooperative, cluster 2x1x1, spread) failed:
 * NAME (code)".
 */
kpack_status kpack_launch_ex(const kpack_kernel *k, kpack_stream stream,
                             uint32_t grid_x, uint32_t grid_y, uint32_t grid_z,
                             uint32_t block_x, uint32_t block_y, uint32_t block_z,
                             uint32_t smem_bytes, void **args,
                             uint32_t flags, uint32_t cluster_x, uint32_t cluster_y,
                             uint32_t cluster_z);

/* Attributes of the launching device that launch expressions read
   (`device.NAME` in a manifest), for kpack_device_attribute.  Pinned:
   generated code passes them. */
#define KPACK_DEVICE_ATTR_NUM_SMS 0        /* device.num_sms: multiprocessors */
#define KPACK_DEVICE_ATTR_SM 1             /* device.sm: 10*major + minor */
#define KPACK_DEVICE_ATTR_MAX_SHARED_MEM 2 /* device.max_shared_mem: bytes of
                                              shared memory a block may opt in
                                              to (..._PER_BLOCK_OPTIN) */
#define KPACK_DEVICE_ATTR_L2_BYTES 3       /* device.l2_bytes: L2 cache size */
#define KPACK_DEVICE_ATTR_COUNT 4

/*
 * Reads attribute `which` (a KPACK_DEVICE_ATTR_* code) of the device of the
 * calling thread's current context into *value.  A typed launcher calls it
 * for each attribute its launch expressions use, before it computes the
 * grid; `who` (the specialization's name; NULL: "kpack_device_attribute")
 * starts the detail of a failure.
 *
 * Finds the driver and the device as kpack_launch does (loading the driver
 * on first use; cuCtxGetDevice on every call, since the device is the
 * thread's).  Each (device, attribute) is read from the driver once
 * (cuDeviceGetAttribute; two for device.sm) and cached process-wide in
 * atomics until kpack_unload_all(), so later calls take no lock and make
 * no driver call but cuCtxGetDevice.  Racing first reads may both ask the
 * driver; they store the same value.
 *
 * Thread-safe.  Returns KPACK_SUCCESS, or with the thread's detail and
 * CUresult set: KPACK_ERROR_INVALID_ARGUMENT (an unknown code, or NULL
 * `value`); the driver load's statuses (KPACK_ERROR_DRIVER_NOT_FOUND, ...);
 * KPACK_ERROR_NO_CONTEXT (no current context); KPACK_ERROR_INTERNAL (a
 * device ordinal beyond KPACK_MAX_DEVICES); KPACK_ERROR_DRIVER_TOO_OLD (no
 * cuDeviceGetAttribute); KPACK_ERROR_DRIVER when cuDeviceGetAttribute
 * fails, the detail naming the attribute ("<who>: device.num_sms:
 * cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) on device 0 failed: NAME
 * (code)").
 */
kpack_status kpack_device_attribute(const char *who, int which, int64_t *value);

/*
 * The tunings of one tuned kernel (the tuning files of its package that
 * have decision tables for it: kpack tune, docs/tuning.md), for
 * kpack_tuning_select: each one's GPU model, as cuDeviceGetName names it,
 * and sm (10*major + minor), in the package file's order.  A generated auto
 * dispatcher defines one, static, as {count, gpus, sms, {0}, NULL, 0};
 * only the runtime reads or writes `cache`, `next` and `listed`.
 */
typedef struct kpack_tuning_set {
  int count;
  const char *const *gpus;
  const int *sms;
  /* Per device: 0 until chosen, then 1 + (index + 1): 1 for none. */
  _Atomic int cache[KPACK_MAX_DEVICES];
  /* Sets with a choice cached, so kpack_unload_all can forget them;
     guarded by the runtime's lock. */
  struct kpack_tuning_set *next;
  int listed;
} kpack_tuning_set;

/*
 * Chooses the tuning of `set` that applies to the device of the calling
 * thread's current context, into *index: the first whose gpu is the
 * device's name (cuDeviceGetName), else the first whose sm is the device's
 * compute capability, else none (-1).  A tuned auto dispatcher calls it on
 * every call, before its tables; `who` (the auto dispatcher's name; NULL:
 * "kpack_tuning_select") starts the detail of a failure.
 *
 * Finds the driver and the device as kpack_launch does (loading the driver
 * on first use; cuCtxGetDevice on every call).  The choice is cached per
 * (set, device) in set->cache, so after the first call on a device the
 * path is cuCtxGetDevice and one atomic load: no lock, no other driver
 * call.  The first call reads the device's name, once per device and
 * process (cached, like its compute capability, which is read only when no
 * name matches), under a lock; racing first calls store the same choice.
 * kpack_unload_all() forgets the names and every set's choices.
 *
 * Thread-safe.  Returns KPACK_SUCCESS, or with the thread's detail and
 * CUresult set (and *index -1): KPACK_ERROR_INVALID_ARGUMENT (NULL `set` or
 * `index`, a negative count, or no gpus or sms); the driver load's
 * statuses; KPACK_ERROR_NO_CONTEXT (no current context);
 * KPACK_ERROR_INTERNAL (a device ordinal beyond KPACK_MAX_DEVICES);
 * KPACK_ERROR_DRIVER_TOO_OLD (no cuDeviceGetName, or no cuDeviceGetAttribute
 * where the sm is needed); KPACK_ERROR_DRIVER when cuDeviceGetName fails
 * ("<who>: cuDeviceGetName on device 0 failed: NAME (code)") or the compute
 * capability cannot be read (kpack_device_attribute's detail for device.sm).
 * A failure is not cached: the next call asks again.
 *
 * On success it also leaves the device it found as a one-shot hint for the
 * calling thread: the thread's next kpack_launch or kpack_launch_ex (or
 * kpack_scratch, which leaves it again) takes it instead of asking
 * cuCtxGetDevice again (and clears it: any launch does, even one refused
 * or with nothing to launch), so that an auto dispatcher's launch costs
 * one cuCtxGetDevice, as a typed launcher's does.  Nothing can change the
 * thread's context between the two: the auto dispatcher only reads its
 * tables and calls the launcher.
 * It must call kpack_device_hint_clear() before it returns, whether or not
 * a launch took the hint (an empty problem, a refused argument).
 */
kpack_status kpack_tuning_select(const char *who, kpack_tuning_set *set, int *index);

/*
 * Drops the calling thread's device hint (kpack_tuning_select), if any:
 * what a tuned auto dispatcher calls last.  One thread-local store.
 */
void kpack_device_hint_clear(void);

/* ---- Tensor descriptors (TMA) ---------------------------------------------- */

/*
 * What a launcher knows at build time of one tensor-descriptor parameter
 * (a manifest `type: tensordesc`, or Triton's tensordesc_meta): the
 * fields of the cuTensorMapEncodeTiled call that do not come from the
 * call's tensor.  No padding: ten uint32_t.
 */
typedef struct kpack_tensor_map_spec {
  uint32_t data_type;  /* CUtensorMapDataType (host enum value), 0..12 */
  uint32_t elem_bytes; /* 1, 2, 4 or 8: the data type's size */
  uint32_t rank;       /* 1..5 */
  uint32_t box[5];     /* box dims, outermost first; box[0..rank-1] used */
  uint32_t swizzle;    /* CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B */
  uint32_t oob_nan;    /* 1: CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA */
} kpack_tensor_map_spec;

/*
 * Checks the call's tensor and encodes a tiled CUtensorMap into `map`
 * (128 bytes, 64-byte aligned) with cuTensorMapEncodeTiled; `shape` and
 * `strides` have spec->rank entries each, in elements, outermost first
 * (torch's .shape and .stride()).  `shape32` (may be NULL) gets the shape
 * as int32, what a Triton kernel receives besides the map.  `who` is the
 * specialization, `param` the manifest param (NULL: "?"), for the detail.
 *
 * The encode call: dims `shape` reversed (innermost first), byte strides
 * strides[0..rank-2] * elem_bytes reversed, box spec->box reversed,
 * element strides all 1, CU_TENSOR_MAP_INTERLEAVE_NONE, spec->swizzle,
 * CU_TENSOR_MAP_L2_PROMOTION_L2_128B, and CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
 * or, with spec->oob_nan, ..._NAN_REQUEST_ZERO_FMA.
 *
 * Checked first, in this order, each failing with
 * KPACK_ERROR_INVALID_ARGUMENT (CUresult 0) and a detail
 * "<who>: <param>: ..." naming the value (docs/runtime.md lists the texts):
 * NULL spec, base, shape, strides or map; a rank outside 1..5; a map not
 * 64-byte aligned; a data type other than 0..12, an elem_bytes that is not
 * its size, a swizzle above 3, an oob_nan other than 0 or 1, padding nan
 * with a data type that is not floating-point; a base not 16-byte aligned;
 * a shape dimension outside 1..2^31-1 (the kernel receives i32 shapes); a
 * negative stride, a stride of 2^40 bytes or more, a stride (but the last)
 * whose bytes are not a multiple of 16, a last stride other than 1; a box
 * dimension outside 1..256, an innermost box whose bytes are not a
 * multiple of 16.  What
 * only the driver checks (the innermost box within the swizzle span, ...)
 * fails there: KPACK_ERROR_INVALID_ARGUMENT with the driver's CUresult
 * and the call's arguments, "<who>: <param>: cuTensorMapEncodeTiled(type
 * 9 (BFLOAT16), rank 2, address 0x7f0000000000, dims [128, 64], byte
 * strides [256], box [64, 64], element strides [1, 1], interleave none,
 * swizzle 128B, L2 promotion 128B, oob fill none) failed: NAME (code)".
 *
 * Loads the driver on first use (as a launch does: the driver load's
 * statuses) but needs no context or device; cuTensorMapEncodeTiled is
 * looked up on first use, and a driver without it gives
 * KPACK_ERROR_DRIVER_TOO_OLD.  Each thread caches the 8 encodings it used
 * last, keyed by the spec's values, base, shape and strides: a call that
 * repeats one copies its 128 bytes, with no driver call (a miss replaces
 * the entry used least recently; kpack_unload_all invalidates every
 * thread's cache).  Thread-safe; no lock, no allocation.
 */
kpack_status kpack_tensor_map_encode(const char *who, const char *param,
                                     const kpack_tensor_map_spec *spec, const void *base,
                                     const int64_t *shape, const int64_t *strides, void *map,
                                     int32_t *shape32);

/*
 * Test seam: 0 turns every thread's tensor-map cache off (each
 * kpack_tensor_map_encode calls the driver), 1 (the default) on again; for
 * benchmarks of the cost of an encode.  Thread-safe (a relaxed atomic).
 */
void kpack_set_tensor_map_cache_for_testing(int enabled);

/* ---- Scratch ------------------------------------------------------------------ */

/*
 * Scratch memory of `bytes` bytes, aligned to `align` (a power of two), for
 * one launch on `stream` on the current device, into *ptr: from the
 * caller's workspace of (device, stream) if one is set
 * (kpack_workspace_set), else from the runtime's, allocated or grown now
 * when it is missing or too small (kpack.h, "Scratch workspaces").  0 bytes
 * is *ptr = NULL, with no driver call and no other effect.
 *
 * The device is the thread's one-shot device hint if kpack_tuning_select
 * left one (taken, as a launch takes it), else cuCtxGetDevice's.  On
 * success kpack_scratch leaves the device as the hint for the launch that
 * follows, so a launch with scratch costs one cuCtxGetDevice, as one
 * without does; call it last before kpack_launch/kpack_launch_ex (any
 * launch takes the hint, even one that fails or launches nothing; a
 * launcher that returns without launching calls kpack_device_hint_clear()).
 * On failure it leaves no hint.
 *
 * Once the stream's workspace is big enough, the path is the device lookup,
 * a few atomic loads and no lock, no driver call and no allocation, so it
 * is legal inside stream capture.  Growing it takes the runtime's workspace
 * lock, cuStreamIsCapturing (it is refused while capturing), and
 * cuMemAllocAsync and cuMemFreeAsync on `stream`.
 *
 * Thread-safe.  Returns KPACK_SUCCESS, or with *ptr NULL, the thread's
 * detail and CUresult set (details name `who`, NULL: "kpack_scratch"):
 * KPACK_ERROR_INVALID_ARGUMENT (NULL `ptr`, an `align` that is not a power
 * of two, more than 2^48 bytes); the driver load's statuses;
 * KPACK_ERROR_NO_CONTEXT; KPACK_ERROR_WORKSPACE_TOO_SMALL, "<who>: needs N
 * bytes of scratch; the caller's workspace for stream 0x... on device D
 * has M (kpack_workspace_set)" or, while the stream captures, "<who>: N
 * bytes of scratch do not fit the workspace of stream 0x... on device D
 * (M bytes), and the stream is capturing a graph, where the workspace
 * cannot grow; call kpack_workspace_reserve(stream, R) before the
 * capture" (R is N, plus align - 1 for an `align` above 256, the driver's
 * own); KPACK_ERROR_OUT_OF_MEMORY, "<who>: cuMemAllocAsync(N bytes) for
 * the scratch workspace of stream 0x... on device D failed:
 * CUDA_ERROR_OUT_OF_MEMORY (2); device D has F MiB free of T MiB";
 * KPACK_ERROR_INTERNAL (too many streams on the device);
 * KPACK_ERROR_DRIVER_TOO_OLD; KPACK_ERROR_DRIVER.
 */
kpack_status kpack_scratch(const char *who, kpack_stream stream, uint64_t bytes, uint32_t align,
                           void **ptr);

/* Kinds of constexpr value, for kpack_fail_no_specialization. */
#define KPACK_CONSTEXPR_INT 0
#define KPACK_CONSTEXPR_BOOL 1
#define KPACK_CONSTEXPR_DTYPE 2
#define KPACK_CONSTEXPR_FLOAT 3 /* the value holds the double's bits */
#define KPACK_CONSTEXPR_STR 4   /* the value holds the const char * */

/*
 * Called by a dispatcher when no built specialization matches.  Formats the
 * detail "<kernel>: no specialization T=f16 BLOCK=1024; built: <built>"
 * from `count` constexpr names, kinds and values, stores it as the thread's
 * detail and returns KPACK_ERROR_NO_SPECIALIZATION.  No allocation.
 */
kpack_status kpack_fail_no_specialization(const char *kernel, const char *built,
                                          int count, const char *const *names,
                                          const int *kinds, const int64_t *values);

/*
 * Records `detail` (printf-style) as the thread's last error detail and
 * returns `status`.  Used by generated launchers for argument errors, e.g. a
 * grid dimension that does not fit the device limits.
 */
kpack_status kpack_fail(kpack_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Fills `info` from `k`.  Returns KPACK_ERROR_INVALID_ARGUMENT on NULL. */
kpack_status kpack_describe(const kpack_kernel *k, kpack_spec_info *info);

/*
 * Test seam: makes the runtime dlopen `path` instead of "libcuda.so.1" the
 * next time it loads the driver (call kpack_unload_all() first to forget a
 * driver already loaded).  NULL restores the default.  Not thread-safe.
 */
void kpack_set_driver_path_for_testing(const char *path);

#endif /* KPACK_INTERNAL_H */
