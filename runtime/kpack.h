/*
 * kpack.h - the public C API of the kpack runtime.
 *
 * The runtime loads kernels that kpack embedded in a library (libkernels.a)
 * and launches them through the CUDA driver API.  It never JIT-compiles,
 * never needs Python, and never needs to be linked against libcuda: the
 * driver is dlopen()ed ("libcuda.so.1") the first time a kernel is launched.
 *
 * Conventions (SQLite/zstd style):
 *   - every public symbol starts with kpack_ / KPACK_;
 *   - every function returns a kpack_status or a value that cannot fail;
 *   - nothing here calls exit(), abort() or printf(); errors are returned;
 *   - every function is safe to call from any thread at any time, unless its
 *     doc block says otherwise.
 *
 * This header is strict C99 and is also valid C++.  It does not include any
 * CUDA header: a stream is passed as a pointer to the driver's opaque
 * `struct CUstream_st`, which is what both CUstream and cudaStream_t are, so
 * either converts implicitly.
 */
#ifndef KPACK_H
#define KPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ---------------------------------------------------------- */

#define KPACK_VERSION_MAJOR 0
#define KPACK_VERSION_MINOR 1
#define KPACK_VERSION_PATCH 0
#define KPACK_VERSION_NUMBER \
  (KPACK_VERSION_MAJOR * 10000 + KPACK_VERSION_MINOR * 100 + KPACK_VERSION_PATCH)
#define KPACK_VERSION_STRING "0.1.0"

/*
 * The ABI version of the contract between generated launchers and this
 * runtime (the layout of kpack_kernel in kpack_internal.h and the meaning of
 * kpack_launch).  Bumped on every incompatible change.  Generated code
 * records the ABI it was generated for and checks it at first use.
 */
#define KPACK_ABI_VERSION 1

/*
 * Returns KPACK_VERSION_NUMBER of the runtime that is linked in, which can
 * differ from the header the caller was compiled against.  Never fails.
 */
int kpack_version_number(void);

/* Returns the KPACK_VERSION_STRING of the linked runtime; static storage. */
const char *kpack_version_string(void);

/*
 * Returns KPACK_ABI_VERSION of the linked runtime.  Generated code compares
 * it with the ABI it was generated for (<prefix>_build_info(), and every
 * first launch).  Never fails.
 */
int kpack_abi_version(void);

/* ---- Status codes ------------------------------------------------------ */

/*
 * Every kpack function that can fail returns one of these.  The numeric
 * values are pinned: they are part of the ABI and will never be reused.
 */
typedef enum kpack_status {
  KPACK_SUCCESS = 0,
  /* An argument was invalid: NULL where a value is needed, a launch
     dimension that is zero, negative or larger than the device allows, or
     more dynamic shared memory than the device allows. */
  KPACK_ERROR_INVALID_ARGUMENT = 1,
  /* libcuda.so.1 could not be loaded: no NVIDIA driver is installed. */
  KPACK_ERROR_DRIVER_NOT_FOUND = 2,
  /* The driver lacks an entry point kpack needs (driver older than CUDA 12). */
  KPACK_ERROR_DRIVER_TOO_OLD = 3,
  /* cuInit failed or reported no CUDA device. */
  KPACK_ERROR_NO_DEVICE = 4,
  /* The calling thread has no current CUDA context. */
  KPACK_ERROR_NO_CONTEXT = 5,
  /* The library holds no machine code (SASS) that runs on the current
     device; kpack_last_error_detail() names the device's sm and the archs
     that were built.  kpack never falls back to JIT-compiling PTX unless the
     manifest asked for PTX. */
  KPACK_ERROR_NO_BINARY_FOR_DEVICE = 6,
  /* A dispatcher was asked for constexpr values that were not built; the
     detail lists the values that were built. */
  KPACK_ERROR_NO_SPECIALIZATION = 7,
  /* The device ran out of memory while loading a kernel or allocating a
     scratch workspace (kpack_workspace_reserve, and launches that grow
     one). */
  KPACK_ERROR_OUT_OF_MEMORY = 8,
  /* cuLibraryLoadData or cuLibraryGetKernel failed, or the first launch on a
     device could not load the code into its context. */
  KPACK_ERROR_LOAD_FAILED = 9,
  /* cuLaunchKernel rejected the launch (bad stream, too many resources...). */
  KPACK_ERROR_LAUNCH_FAILED = 10,
  /* Generated code was built for a different runtime ABI than the one
     linked in (see KPACK_ABI_VERSION). */
  KPACK_ERROR_ABI_MISMATCH = 11,
  /* Any other driver error; kpack_last_cu_result() has the CUresult. */
  KPACK_ERROR_DRIVER = 12,
  /* Internal inconsistency (a bug in kpack), or a limit of the runtime: a
     device ordinal of KPACK_MAX_DEVICES (64) or more, or scratch
     workspaces for more than KPACK_WORKSPACE_STREAMS (64) streams on one
     device. */
  KPACK_ERROR_INTERNAL = 13,
  /* A launch needs more scratch memory than its stream's workspace has,
     and the workspace cannot grow: it is the caller's
     (kpack_workspace_set), or the stream is capturing a graph (reserve the
     workspace before the capture with kpack_workspace_reserve).  The
     detail names the bytes needed. */
  KPACK_ERROR_WORKSPACE_TOO_SMALL = 14
} kpack_status;

/* Number of status codes; valid codes are 0 .. KPACK_STATUS_COUNT-1. */
#define KPACK_STATUS_COUNT 15

/*
 * Returns the enumerator's name, e.g. "KPACK_ERROR_NO_DEVICE".  Unknown
 * values give "KPACK_STATUS_UNKNOWN".  Static storage; never NULL.
 */
const char *kpack_status_name(kpack_status status);

/*
 * Returns a one-sentence English description of the status.  Static storage;
 * never NULL.  For the specifics of the most recent failure on this thread
 * (which kernel, which device, which archs) see kpack_last_error_detail().
 */
const char *kpack_status_message(kpack_status status);

/*
 * Returns the CUresult behind the most recent kpack failure on the calling
 * thread: the failing driver call's result, or 0 (CUDA_SUCCESS) when that
 * failure did not come from the driver (a missing specialization, an arch
 * mismatch found by kpack) or nothing has failed.  Thread-local.
 */
int kpack_last_cu_result(void);

/*
 * Returns a NUL-terminated description of the most recent failure on the
 * calling thread, e.g. "vector_add_f16_b256: device 0 is sm_75; this library
 * has SASS for sm_80,sm_90 and no PTX".  Empty string if nothing failed.
 * Driver failures end in the call and its result, e.g. "...: cuLibraryLoadData
 * failed: CUDA_ERROR_OUT_OF_MEMORY (2)".  At most 1023 characters (longer
 * text is cut and ends in "...").  The pointer is to thread-local storage
 * that stays valid until the next kpack call on the same thread.  Never NULL.
 */
const char *kpack_last_error_detail(void);

/* ---- Types shared by generated headers --------------------------------- */

/* The stream to launch on: a CUstream or cudaStream_t converts implicitly.
   NULL is the legacy default stream. */
typedef struct CUstream_st *kpack_stream;

/* Element types of tensors.  Values are pinned. */
typedef enum kpack_dtype {
  KPACK_DTYPE_F32 = 1,
  KPACK_DTYPE_F16 = 2,
  KPACK_DTYPE_BF16 = 3,
  KPACK_DTYPE_F64 = 4,
  KPACK_DTYPE_I8 = 5,
  KPACK_DTYPE_I16 = 6,
  KPACK_DTYPE_I32 = 7,
  KPACK_DTYPE_I64 = 8,
  KPACK_DTYPE_U8 = 9,
  KPACK_DTYPE_U16 = 10,
  KPACK_DTYPE_U32 = 11,
  KPACK_DTYPE_U64 = 12
} kpack_dtype;

/* Returns the manifest spelling of a dtype ("f16", ...), or "?" if unknown. */
const char *kpack_dtype_name(kpack_dtype dtype);

/* IEEE binary16 and bfloat16 elements, as C callers see them.  Layout is
   exactly the CUDA __half / __nv_bfloat16 layout (two bytes). */
typedef struct kpack_f16 { uint16_t bits; } kpack_f16;
typedef struct kpack_bf16 { uint16_t bits; } kpack_bf16;

/* A description of one built specialization, for enumeration at run time.
   All strings have static storage. */
typedef struct kpack_spec_info {
  const char *kernel;      /* manifest kernel name, e.g. "vector_add" */
  const char *name;        /* specialization, e.g. "vector_add_f16_b256" */
  const char *archs;       /* SASS archs, e.g. "sm_80,sm_90" */
  const char *ptx_archs;   /* PTX archs embedded, "" when none (the default) */
  const char *build_mode;  /* "release" or "debug" */
  uint64_t fatbin_size;    /* bytes of the embedded fatbin */
} kpack_spec_info;

/* How a package was built, from <prefix>_build_info().  Strings have
   static storage. */
typedef struct kpack_build_info {
  const char *package;        /* package name, e.g. "kernels" */
  const char *kpack_version;  /* the kpack that generated it, e.g. "0.1.0" */
  int abi_version;            /* the KPACK_ABI_VERSION it was generated for */
  const char *build_mode;     /* "release", or "debug" if any specialization is */
  size_t num_specializations;
  size_t num_debug_specializations; /* debug builds a manifest allowed */
} kpack_build_info;

/* ---- Runtime control ----------------------------------------------------- */

/*
 * Finds the CUDA driver now instead of at the first launch: the dlopen of
 * libcuda.so.1, the lookup of the entry points a launch needs, and
 * cuInit(0) when no context is current on the calling thread.  Optional:
 * an engine calls it at start-up to fail fast without a usable driver, and
 * to take that lookup (about 10 us in a fresh process on an H100,
 * bench/RESULTS.md) out of its first launch.  Loads no kernel.
 *
 * Returns KPACK_SUCCESS, also when the driver was found already; otherwise
 * KPACK_ERROR_DRIVER_NOT_FOUND, KPACK_ERROR_DRIVER_TOO_OLD or
 * KPACK_ERROR_NO_DEVICE, with the detail set.  A failure leaves nothing
 * behind: a later call or launch tries again.  Thread-safe.
 */
kpack_status kpack_init(void);

/*
 * Unloads every library this runtime loaded (cuLibraryUnload), frees every
 * scratch workspace the runtime allocated (cuMemFree: no launch using one
 * may still run; synchronize first) and forgets the caller's, and forgets
 * the driver, and what it learned of the devices (attributes, names, and
 * which tuning each auto dispatcher chose for them), so that the next
 * launch starts from scratch.  For leak
 * checkers and tests; engines never need it.  NOT thread-safe: no other
 * thread may be inside a kpack call.  Returns KPACK_SUCCESS or the status of
 * the first failed unload or free (everything is forgotten all the same).
 */
kpack_status kpack_unload_all(void);

/*
 * Counters of what the runtime has done since start (or kpack_unload_all):
 * libraries loaded with cuLibraryLoadData (one per embedded fatbin: the
 * specializations compiled in one batch share theirs), and (kernel, device) pairs
 * prepared: launched successfully on that device for the first time, which
 * loads the kernel's code into the device's context.  For tests and
 * benchmarks.  Never fails;
 * NULL pointers are skipped.
 */
void kpack_get_load_counts(uint64_t *libraries_loaded, uint64_t *functions_resolved);

/* ---- Scratch workspaces ---------------------------------------------------- */

/*
 * Some kernels need global scratch memory for each launch (Triton kernels
 * with device-side tensor descriptors, or profiling).  The runtime keeps a
 * workspace per (device, stream) and hands each such launch its scratch
 * from the workspace of the launch's stream, on the device of the calling
 * thread's current context: launches on one stream run in order, so they
 * share it; launches on different streams get different workspaces.  The
 * memory is not zeroed; the kernels do not need it to be.
 *
 * By default the runtime allocates a workspace at the first launch on a
 * stream that needs scratch, and grows it when a launch needs more, with
 * the stream-ordered allocator (cuMemAllocAsync on that stream).  The
 * buffer a growth replaces is kept, not freed, because a graph captured on
 * the stream before the growth launches with it at every replay: it is
 * freed (cuMemFreeAsync on the stream) by kpack_workspace_release,
 * kpack_workspace_set and kpack_unload_all, which therefore invalidate
 * graphs captured on that stream.  Sizes are rounded up to a power of two,
 * at least 1 MiB, so a workspace grows a few times at most and the buffers
 * kept add at most as much again.  Nothing synchronizes.  The per-thread
 * default stream (CU_STREAM_PER_THREAD) is another stream on every thread
 * and cannot have a workspace: KPACK_ERROR_INVALID_ARGUMENT.  The functions below pre-size a workspace, supply the
 * caller's own memory instead, free one, and report what the runtime holds.
 *
 * Stream capture: a workspace cannot grow while its stream is capturing a
 * graph (an allocation there would belong to the graph).  A launch
 * whose workspace is big enough captures fine; one that would need it to
 * grow fails with KPACK_ERROR_WORKSPACE_TOO_SMALL, naming the bytes it
 * needs.  Call kpack_workspace_reserve(stream, bytes) before the capture,
 * with the most scratch any launch captured on that stream needs (for a
 * Triton kernel: grid blocks x num_ctas x its scratch size per CTA).
 *
 * Ordering across threads: launches on one stream from several threads at
 * once are ordered by nothing: two of them may share the workspace while
 * both run.  Launch on each stream from one thread at a time (a stream
 * orders only what is queued on it in order).  Programmatic dependent launches (KPACK_LAUNCH_PDL) of
 * two scratch-using kernels on one stream may overlap on the workspace.
 */

/* Streams per device that can have a workspace at once (slots are reused
   after kpack_workspace_release). */
#define KPACK_WORKSPACE_STREAMS 64

/*
 * Makes the `bytes` bytes at `ptr` (device memory of the current device,
 * or memory it can access) the scratch workspace of `stream` on the
 * current context's device, instead of the runtime's.  The runtime never
 * frees it, and never grows it: a launch on `stream` that needs more fails
 * with KPACK_ERROR_WORKSPACE_TOO_SMALL ("<spec>: needs N bytes of scratch;
 * the caller's workspace for stream 0x... on device D has M
 * (kpack_workspace_set)").  `ptr` need not be aligned: each launch's
 * scratch is aligned up inside the buffer, and the bytes skipped count
 * against `bytes`.  The memory must stay valid until the last launch on
 * `stream` that uses it has finished, and until it is replaced (another
 * call), reverted or released.
 *
 * A NULL `ptr` or 0 `bytes` reverts the stream to the runtime's workspace
 * (allocated again when a launch needs it).  Giving memory to a stream that
 * has a runtime workspace frees that workspace (cuMemFreeAsync on
 * `stream`); refused while the stream is capturing a graph
 * (KPACK_ERROR_INVALID_ARGUMENT).
 *
 * Loads the driver if needed and needs a current context.  Returns
 * KPACK_SUCCESS, or with the detail set: the driver load's statuses,
 * KPACK_ERROR_NO_CONTEXT, KPACK_ERROR_INVALID_ARGUMENT,
 * KPACK_ERROR_INTERNAL (the device has workspaces for
 * KPACK_WORKSPACE_STREAMS streams already), KPACK_ERROR_DRIVER_TOO_OLD (no
 * cuMemFreeAsync or cuStreamIsCapturing) or KPACK_ERROR_DRIVER.
 * Thread-safe.
 */
kpack_status kpack_workspace_set(kpack_stream stream, void *ptr, size_t bytes);

/*
 * Grows the runtime's workspace of `stream` on the current context's
 * device to at least `bytes` now (rounded up as described above; nothing
 * happens if it is that big already; 0 does nothing), so that launches on
 * `stream` need not grow it later, e.g. during stream capture.  Allocated
 * with cuMemAllocAsync on `stream`; the old buffer is kept until the
 * stream's workspace is released (see above).
 *
 * Returns KPACK_SUCCESS, or with the detail set: the driver load's
 * statuses; KPACK_ERROR_NO_CONTEXT; KPACK_ERROR_INVALID_ARGUMENT (the
 * stream has the caller's workspace, from kpack_workspace_set, or `bytes`
 * is more than 2^48); KPACK_ERROR_WORKSPACE_TOO_SMALL (the stream is
 * capturing a graph); KPACK_ERROR_OUT_OF_MEMORY (the CUresult kept);
 * KPACK_ERROR_INTERNAL (too many streams); KPACK_ERROR_DRIVER_TOO_OLD (no
 * cuMemAllocAsync, cuMemFreeAsync or cuStreamIsCapturing);
 * KPACK_ERROR_DRIVER.  Thread-safe.
 */
kpack_status kpack_workspace_reserve(kpack_stream stream, size_t bytes);

/*
 * Frees the runtime's workspace of `stream` on the current context's device,
 * and the buffers its growths replaced (cuMemFreeAsync on `stream`, so work
 * queued there that uses them finishes first; graphs captured on the stream
 * that used them must not be replayed after this), and forgets the stream;
 * a caller's workspace is only forgotten.
 * Call it before destroying a stream that launched scratch-using kernels,
 * or the workspace stays allocated until kpack_unload_all.  Nothing to
 * release is success.  Refused while the stream is capturing a graph
 * (KPACK_ERROR_INVALID_ARGUMENT).  Returns the statuses of
 * kpack_workspace_set.  Thread-safe.
 */
kpack_status kpack_workspace_release(kpack_stream stream);

/*
 * Reports the device memory held by the runtime's workspaces, over all
 * devices and streams, the buffers growths replaced included, in
 * *device_bytes, and how many workspaces there are in *workspaces; caller
 * workspaces (kpack_workspace_set) are not counted.
 * NULL pointers are skipped.  Needs no driver; always KPACK_SUCCESS.
 * Thread-safe (a snapshot: concurrent growth may or may not be counted).
 */
kpack_status kpack_workspace_usage(uint64_t *device_bytes, uint64_t *workspaces);

#ifdef __cplusplus
}
#endif

#endif /* KPACK_H */
