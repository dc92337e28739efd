/*
 * kpack_runtime.c - loads and launches the kernels that kpack embedded in a
 * library.  See kpack.h for the public API and kpack_internal.h for the
 * contract with generated launchers.
 *
 * Life of a specialization
 * ------------------------
 *  1. First launch anywhere in the process: load the driver (driver.c;
 *     only the entry points a first launch calls, no cuInit when a context
 *     is current, and the device its probe found is the launch's), then
 *     under g_load_lock load the fatbin with cuLibraryLoadData (in place:
 *     see load_library) and look up its CUkernel.  The handle is published
 *     with a release store into state->kernel; the state joins g_loaded so
 *     kpack_unload_all finds it.
 *  2. First launch on a device with more than 48 KiB of dynamic shared
 *     memory (and each time a launch needs more than before): raise the
 *     kernel's limit on that device with cuKernelSetAttribute, under
 *     g_load_lock.
 *  3. First launch on each device: the launch itself, under g_load_lock.
 *     The driver loads the module into the current context inside that
 *     cuLaunchKernel (or cuLaunchKernelEx: lazy loading), so a failure to
 *     load (out of memory, no binary) comes back from it and is reported
 *     with its load status.
 *     The first launch with a cluster on a device (the first there, or
 *     a later one) prepares the cluster first, under the same lock: the
 *     non-portable attribute for more than 8 blocks, and
 *     cuOccupancyMaxActiveClusters to refuse a cluster that cannot run
 *     (prepare_cluster).
 *     Publish state->device_ready[dev]'s bits (launched, cluster checked,
 *     non-portable set) with a release store once it succeeded.
 *     Whenever a driver call of steps 1-3 fails, the device's compute
 *     capability is read (once per device and process) and checked against
 *     the fatbin's archs: a device it has no code for is reported as such
 *     (see "Why the arch check waits for a failure").
 *  4. Every launch after that (the hot path): the thread's device hint
 *     taken (kpack_tuning_select or kpack_scratch left it), argument checks
 *     (the ABI version is compared on every call; it is one integer and
 *     saves reasoning about when it could be skipped), an acquire load of
 *     the driver table, cuCtxGetDevice (unless the hint gave the device),
 *     acquire loads of state->kernel and state->device_ready[dev] (and
 *     smem_limit[dev] above 48 KiB), and cuLaunchKernel.  A
 *     kpack_launch_ex with launch attributes adds the attribute checks and
 *     an acquire load of the lazily resolved cuLaunchKernelEx, which it
 *     calls instead; one without any is kpack_launch's path.  No locks, no allocation, no synchronization,
 *     so a launch is legal inside stream capture.
 *
 * Memory ordering
 * ---------------
 * Each published value (driver table, state->kernel, device_ready[dev],
 * smem_limit[dev]) is written once per "generation" by a thread holding a
 * lock, after everything it guards is complete, with a release store.  The
 * hot path reads it with an acquire load: seeing the value implies seeing
 * every write that preceded the store (the table's members, the CUkernel,
 * the driver's own bookkeeping done by the calls before the store).  A
 * reader that sees 0 takes the lock and checks again (double-checked
 * locking), so racing first launches do the work exactly once.
 *
 * Why the CUkernel is launched directly
 * -------------------------------------
 * A CUkernel (from cuLibraryGetKernel) is context-independent, and
 * cuLaunchKernel (like cuLaunchKernelEx, for launches with attributes)
 * accepts it in place of a CUfunction, launching it in the calling thread's
 * current context.  One handle per specialization therefore
 * serves every device and every context, so the hot path needs no
 * per-context table.  A thread that switches to a second, non-primary
 * context on a device already prepared gets the module loaded lazily by
 * cuLaunchKernel in that context.
 *
 * Why the first launch on a device loads the module itself
 * ---------------------------------------------------------
 * Earlier versions called cuKernelGetFunction first, to force the load into
 * the context and report its errors as load errors.  On the H100 and H200
 * that made a cold first launch cost about 30 us more than a bare
 * cuLibraryLoadData + cuLaunchKernel of the same fatbin (the load that
 * cuLaunchKernel does by itself is cheaper: bench/RESULTS.md), so the first
 * launch now loads it, under the lock, and its errors get the same statuses.
 *
 * Why the arch check waits for a failure
 * --------------------------------------
 * A device that the fatbin has no code for (no SASS it can run, no PTX the
 * driver can JIT for it) gets KPACK_ERROR_NO_BINARY_FOR_DEVICE with a detail
 * naming its sm and the archs built, where the driver would only say
 * CUDA_ERROR_NO_BINARY_FOR_GPU.  The check used to run before the first
 * launch on each device, and its two cuDeviceGetAttribute calls cost a
 * cold first launch 2.2 us on an H100 (bench/RESULTS.md) to prevent
 * nothing: where it passes, the driver runs the code or JIT-compiles its
 * PTX, and where it fails, the driver fails on its own, in
 * cuLibraryLoadData, cuLibraryGetKernel (seen on an H200),
 * cuKernelSetAttribute or the first cuLaunchKernel on the device (lazy
 * loading).  So the check now runs only
 * after one of those failed, whatever the CUresult, which stays available
 * from kpack_last_cu_result().  The fatbin may then have been loaded (and
 * stay loaded, when another device uses it) before the device is refused.
 * The compute capability read then is kept per device in g_device_cc, so
 * other specializations failing on the device do not ask again.
 *
 * Locking and the primary context
 * -------------------------------
 * First loads take g_load_lock, and inside the driver they take the
 * context's lock (for the primary context, the same lock that cudaSetDevice
 * and cudaMalloc take), and may take milliseconds per fatbin.  Launch each
 * specialization once at start-up, outside stream capture and
 * latency-sensitive sections, to keep that cost off the critical path.
 */
#include "kpack_internal.h"

#include "driver.h"
#include "errors.h"
#include "runtime_private.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dynamic shared memory a kernel may use without raising its limit. */
#define KPACK_DEFAULT_SMEM_LIMIT (48u * 1024u)

/* Serializes every first-use step (loads, device checks, smem limits) and
   guards g_loaded and each state's `library` and `next_loaded`.  Never held
   on the hot path. */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* States whose library is loaded, newest first, for kpack_unload_all. */
static kpack_kernel_state *g_loaded;

/*
 * The library loaded from each embedded fatbin, shared by every
 * specialization whose descriptor points at it: specializations compiled
 * in one nvcc batch share one fatbin (compiler/plan.h), and loading it once
 * for all of them saves the driver parsing it (and, under eager module
 * loading, loading all its kernels) once per specialization.  Owned here,
 * unloaded by kpack_unload_all; guarded by g_load_lock.
 */
typedef struct blob_library {
  const kpack_blob *blob;
  CUlibrary library;
  struct blob_library *next;
} blob_library;
static blob_library *g_blob_libraries;

/* kpack_get_load_counts(); relaxed: they order nothing. */
static _Atomic(uint64_t) g_libraries_loaded;
static _Atomic(uint64_t) g_functions_resolved;

/* ---- Versions and names ------------------------------------------------ */

/* See kpack.h. */
int kpack_version_number(void) { return KPACK_VERSION_NUMBER; }

/* See kpack.h. */
const char *kpack_version_string(void) { return KPACK_VERSION_STRING; }

/* The ABI this runtime implements.  Only a test defines it otherwise
   (tests/runtime/meson.build builds a runtime of the next ABI), so that
   generated code's ABI-mismatch paths run for real. */
#ifndef KPACK_RT_ABI_VERSION
#define KPACK_RT_ABI_VERSION KPACK_ABI_VERSION
#endif

/* See kpack.h. */
int kpack_abi_version(void) { return KPACK_RT_ABI_VERSION; }

/* See kpack.h.  A switch, not a table: the pinned values start at 1. */
const char *kpack_dtype_name(kpack_dtype dtype) {
  switch (dtype) {
  case KPACK_DTYPE_F32: return "f32";
  case KPACK_DTYPE_F16: return "f16";
  case KPACK_DTYPE_BF16: return "bf16";
  case KPACK_DTYPE_F64: return "f64";
  case KPACK_DTYPE_I8: return "i8";
  case KPACK_DTYPE_I16: return "i16";
  case KPACK_DTYPE_I32: return "i32";
  case KPACK_DTYPE_I64: return "i64";
  case KPACK_DTYPE_U8: return "u8";
  case KPACK_DTYPE_U16: return "u16";
  case KPACK_DTYPE_U32: return "u32";
  case KPACK_DTYPE_U64: return "u64";
  }
  return "?";
}

/* ---- Failure helpers ----------------------------------------------------- */

/* The specialization's name for messages; hand-written descriptors may lack
   one. */
static const char *name_of(const kpack_kernel *k) {
  return k->name != NULL ? k->name : "(unnamed kernel)";
}

/* The status for a failed load step (cuLibraryLoadData, cuLibraryGetKernel). */
static kpack_status load_status(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: return KPACK_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_BINARY_FOR_GPU: return KPACK_ERROR_NO_BINARY_FOR_DEVICE;
  default: return KPACK_ERROR_LOAD_FAILED;
  }
}

/* Fails with KPACK_ERROR_ABI_MISMATCH.  Only abi_version, the first field,
   is read: the rest of a mismatched descriptor's layout is unknown. */
static kpack_status fail_abi(int abi_version) {
  return kpack_rt_fail(KPACK_ERROR_ABI_MISMATCH, 0,
                       "a kernel descriptor was generated for kpack ABI %d, but the linked "
                       "runtime implements ABI %d; regenerate the library with the kpack that "
                       "provides this runtime",
                       abi_version, KPACK_RT_ABI_VERSION);
}

/* ---- Architecture matching ------------------------------------------------ */

/*
 * Whether SASS built for arch `code` runs on a device of compute capability
 * `cc` (10*major+minor).  Machine code runs within its major version on
 * minors at least its own ("sm_80" on 8.6), family code likewise
 * ("sm_100f" on 10.3); arch-specific code only on its exact version
 * ("sm_90a" on 9.0 only).
 */
static int sass_runs_on(uint32_t code, int cc) {
  int number = (int)KPACK_ARCH_NUMBER(code);
  if (code & KPACK_ARCH_SPECIFIC) {
    return number == cc;
  }
  return number / 10 == cc / 10 && number % 10 <= cc % 10;
}

/*
 * Whether PTX for arch `code` can be JIT-compiled by the driver for compute
 * capability `cc`: any newer device for plain PTX, the family for family
 * PTX, the exact version for arch-specific PTX.
 */
static int ptx_runs_on(uint32_t code, int cc) {
  int number = (int)KPACK_ARCH_NUMBER(code);
  if (code & KPACK_ARCH_SPECIFIC) {
    return number == cc;
  }
  if (code & KPACK_ARCH_FAMILY) {
    return number / 10 == cc / 10 && number % 10 <= cc % 10;
  }
  return number <= cc;
}

/* Whether any of the `count` codes satisfies `runs_on` for `cc`. */
static int any_runs_on(const uint32_t *codes, uint32_t count, int (*runs_on)(uint32_t, int),
                       int cc) {
  for (uint32_t i = 0; i < count && codes != NULL; ++i) {
    if (runs_on(codes[i], cc)) {
      return 1;
    }
  }
  return 0;
}

/*
 * Fails with KPACK_ERROR_NO_BINARY_FOR_DEVICE unless k has SASS for `cc`, or
 * PTX (embedded only when the manifest asked for it) that the driver can
 * JIT for it.  kpack never falls back to anything else: a missing arch is an
 * error the user sees, not a silent slow path.  `r` is the CUresult the
 * driver failed with, kept for kpack_last_cu_result().
 */
static kpack_status check_archs(const kpack_kernel *k, CUdevice dev, int cc, CUresult r) {
  if (any_runs_on(k->sass_archs, k->num_sass_archs, sass_runs_on, cc) ||
      any_runs_on(k->ptx_archs, k->num_ptx_archs, ptx_runs_on, cc)) {
    return KPACK_SUCCESS;
  }
  kpack_rt_fail(KPACK_ERROR_NO_BINARY_FOR_DEVICE, (int)r,
                "%s: device %d is sm_%d; this library has SASS for %s", name_of(k), (int)dev, cc,
                k->archs_text != NULL ? k->archs_text : "");
  if (k->num_ptx_archs > 0) {
    kpack_rt_append_detail(" and PTX for %s", k->ptx_archs_text != NULL ? k->ptx_archs_text : "");
  } else {
    kpack_rt_append_detail(" and no PTX");
  }
  return KPACK_ERROR_NO_BINARY_FOR_DEVICE;
}

/*
 * The compute capability of each device (10*major+minor), 0 until read.
 * Process-wide, so that a second specialization failing on a device does
 * not ask the driver again.  Relaxed: a slot is one int that every thread
 * would read the same from the driver, and it orders nothing else.
 * kpack_unload_all clears it along with the driver it came from.
 */
static _Atomic(int) g_device_cc[KPACK_MAX_DEVICES];

/*
 * Reads the compute capability of `dev` into *cc, from g_device_cc or else
 * the driver (two cuDeviceGetAttribute).  Returns the driver's CUresult and
 * records no error: it runs while a failure's detail is being decided.
 */
static CUresult device_cc(const kpack_driver *d, CUdevice dev, int *cc) {
  int known = atomic_load_explicit(&g_device_cc[dev], memory_order_relaxed);
  if (known != 0) {
    *cc = known;
    return CUDA_SUCCESS;
  }
  /* Looked up here, not when the driver is loaded: one dlsym less on
     every process's first launch. */
  kpack_pfn_device_get_attribute get_attribute = kpack_rt_device_get_attribute(d);
  if (get_attribute == NULL) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  int major = 0;
  int minor = 0;
  CUresult r = get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  if (r == CUDA_SUCCESS) {
    r = get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  }
  if (r == CUDA_SUCCESS) {
    *cc = 10 * major + minor;
    atomic_store_explicit(&g_device_cc[dev], *cc, memory_order_relaxed);
  }
  return r;
}

/*
 * Cold path, after a first use of k on `dev` (cuLibraryLoadData,
 * cuLibraryGetKernel, cuKernelSetAttribute, or the first cuLaunchKernel
 * there) failed with `r`:
 * reads the device's compute capability into *cc (0 when the driver cannot
 * say) and, when k has no code that runs on it, records
 * KPACK_ERROR_NO_BINARY_FOR_DEVICE with check_archs' detail and `r` as the
 * CUresult, and returns it.  Otherwise records nothing and returns
 * KPACK_SUCCESS: the caller reports the failure itself.  See "Why the arch
 * check waits for a failure".
 */
static kpack_status check_failed_device(const kpack_driver *d, const kpack_kernel *k,
                                        CUdevice dev, CUresult r, int *cc) {
  if (device_cc(d, dev, cc) != CUDA_SUCCESS) {
    *cc = 0;
    return KPACK_SUCCESS;
  }
  return check_archs(k, dev, *cc, r);
}

/* ---- First use ----------------------------------------------------------------- */

/* Fails with KPACK_ERROR_INVALID_ARGUMENT if a descriptor lacks what loading
   needs; generated descriptors always have it, hand-written ones may not. */
static kpack_status check_descriptor(const kpack_kernel *k) {
  if (k->fatbin == NULL || k->fatbin->data == NULL || k->entry == NULL) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: the kernel descriptor has no fatbin or no entry name", name_of(k));
  }
  return KPACK_SUCCESS;
}

/*
 * Loads k's fatbin and looks up its entry.  Called with g_load_lock held.
 * On success *library and *kernel hold the new handles; on failure nothing
 * stays loaded and *cu is the driver's CUresult.
 *
 * The fatbin is passed with CU_LIBRARY_BINARY_IS_PRESERVED: it is embedded
 * in the program and outlives every library loaded from it (kpack_internal.h
 * requires that of a descriptor), so the driver may read it in place instead
 * of allocating and filling its own copy, which a first launch would pay
 * for and which would stay in host memory for each loaded specialization.
 * The option's value is an unsigned int carried in the pointer itself, as
 * the driver API reads it; the driver may ignore the hint.  A CUDA 12 driver
 * older than the option refuses it with CUDA_ERROR_INVALID_VALUE and gets
 * the plain call instead, whose failure, if any, is the one reported.
 */
/* k's entry in `lib`; on failure the status names the entry. */
static kpack_status library_kernel(const kpack_driver *d, const kpack_kernel *k, CUdevice dev, CUlibrary lib,
                                   CUkernel *kernel, CUresult *cu) {
  CUresult r = d->library_get_kernel(kernel, lib, k->entry);
  *cu = r;
  if (r != CUDA_SUCCESS) {
    kpack_status s = kpack_rt_fail_cu(d, load_status(r), r, "%s: cuLibraryGetKernel(\"%s\")",
                                      name_of(k), k->entry);
    kpack_rt_append_memory_info(d, r, dev);
    return s;
  }
  return KPACK_SUCCESS;
}

static kpack_status load_library(const kpack_driver *d, const kpack_kernel *k, CUdevice dev,
                                 CUlibrary *library, CUkernel *kernel, CUresult *cu) {
  CUlibraryOption options[1] = {CU_LIBRARY_BINARY_IS_PRESERVED};
  void *values[1] = {(void *)(uintptr_t)1};
  CUlibrary lib = NULL;
  CUresult r = d->library_load_data(&lib, k->fatbin->data, NULL, NULL, 0, options, values, 1);
  if (r == CUDA_ERROR_INVALID_VALUE) {
    r = d->library_load_data(&lib, k->fatbin->data, NULL, NULL, 0, NULL, NULL, 0);
  }
  *cu = r;
  if (r != CUDA_SUCCESS) {
    kpack_status s = kpack_rt_fail_cu(d, load_status(r), r, "%s: cuLibraryLoadData", name_of(k));
    kpack_rt_append_memory_info(d, r, dev);
    return s;
  }
  atomic_fetch_add_explicit(&g_libraries_loaded, 1, memory_order_relaxed);
  CUkernel kern = NULL;
  kpack_status s = library_kernel(d, k, dev, lib, &kern, cu);
  if (s != KPACK_SUCCESS) {
    /* Best effort; the lookup error is the one to report.  A driver
       without cuLibraryUnload keeps the library (kpack_unload_all reports
       that driver as too old). */
    kpack_pfn_library_unload library_unload = kpack_rt_library_unload(d);
    if (library_unload != NULL) {
      library_unload(lib);
    }
    return s;
  }
  *library = lib;
  *kernel = kern;
  return KPACK_SUCCESS;
}

/* The library loaded from `blob`, or NULL.  With g_load_lock held. */
static CUlibrary library_of_blob(const kpack_blob *blob) {
  for (const blob_library *b = g_blob_libraries; b != NULL; b = b->next) {
    if (b->blob == blob) {
      return b->library;
    }
  }
  return NULL;
}

/*
 * k's kernel from the library already loaded from its fatbin, when another
 * specialization of its batch loaded it: *found says whether there was
 * one.  With g_load_lock held.
 */
static kpack_status kernel_from_shared_library(const kpack_driver *d, const kpack_kernel *k, CUdevice dev,
                                               CUkernel *kernel, CUresult *cu, int *found) {
  CUlibrary lib = library_of_blob(k->fatbin);
  *found = lib != NULL;
  return lib != NULL ? library_kernel(d, k, dev, lib, kernel, cu) : KPACK_SUCCESS;
}

/*
 * Hands `lib`, just loaded from k's fatbin, to the shared table; returns
 * whether it did (if the table cannot grow, the state keeps the library,
 * and the next specialization of the batch loads its own).
 */
static int share_library(const kpack_kernel *k, CUlibrary lib) {
  blob_library *b = (blob_library *)malloc(sizeof *b);
  if (b == NULL) {
    return 0;
  }
  b->blob = k->fatbin;
  b->library = lib;
  b->next = g_blob_libraries;
  g_blob_libraries = b;
  return 1;
}

/*
 * Slow path of step 1: loads k unless a racing thread already has, and
 * stores the CUkernel in *kernel.  `dev`, the current device, is used in
 * messages, and to tell a device that k has no code for once a load step
 * failed (the driver may refuse such a device there).
 */
static kpack_status ensure_loaded(const kpack_driver *d, const kpack_kernel *k, CUdevice dev,
                                  uintptr_t *kernel) {
  kpack_kernel_state *st = k->state;
  kpack_status s = KPACK_SUCCESS;
  CUresult cu = CUDA_SUCCESS; /* of the driver call that failed, if one did */
  pthread_mutex_lock(&g_load_lock);
  /* Relaxed under the lock: state->kernel is only written under it. */
  uintptr_t loaded = atomic_load_explicit(&st->kernel, memory_order_relaxed);
  if (loaded == 0) {
    CUlibrary lib = NULL;
    CUkernel kern = NULL;
    int shared = 0;
    s = check_descriptor(k);
    if (s == KPACK_SUCCESS) {
      s = kernel_from_shared_library(d, k, dev, &kern, &cu, &shared);
    }
    if (s == KPACK_SUCCESS && !shared) {
      s = load_library(d, k, dev, &lib, &kern, &cu);
      if (s == KPACK_SUCCESS && share_library(k, lib)) {
        lib = NULL; /* the table owns it */
      }
    }
    if (s == KPACK_SUCCESS) {
      st->library = lib; /* NULL when shared: unloaded from the table */
      st->next_loaded = g_loaded;
      g_loaded = st;
      loaded = (uintptr_t)kern;
      /* Release: pairs with the hot path's acquire load. */
      atomic_store_explicit(&st->kernel, loaded, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_load_lock);
  *kernel = loaded;
  if (cu != CUDA_SUCCESS) {
    /* Replaces the load's detail when the device is the reason. */
    int cc = 0;
    kpack_status archs = check_failed_device(d, k, dev, cu, &cc);
    s = archs != KPACK_SUCCESS ? archs : s;
  }
  return s;
}

/*
 * One launch's geometry, stream, arguments and attributes, as kpack_launch
 * or kpack_launch_ex got them.  A launch has attributes when `flags` or
 * cluster[0] is nonzero (launch() has checked that cluster[1] and
 * cluster[2] are 0 when cluster[0] is); it then goes through
 * cuLaunchKernelEx, which launch() looks up into `launch_ex`.  Without
 * attributes `launch_ex` stays NULL and launch_now() calls cuLaunchKernel.
 */
typedef struct launch_config {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t smem;
  CUstream stream;
  void **args;
  uint32_t flags;                       /* KPACK_LAUNCH_* bits */
  uint32_t cluster[3];                  /* CLUSTER_DIMENSION; {0, 0, 0}: none */
  kpack_pfn_launch_kernel_ex launch_ex; /* NULL: no attributes */
} launch_config;

/* Launch attribute flags kpack_launch_ex knows. */
#define KPACK_LAUNCH_KNOWN_FLAGS \
  (KPACK_LAUNCH_PDL | KPACK_LAUNCH_COOPERATIVE | KPACK_LAUNCH_CLUSTER_SPREAD)

/*
 * The bits of state->device_ready[dev].  A launch takes the hot path once
 * the bits it needs (ready_bits_needed) are all set; first_launch_on_device
 * sets them, under g_load_lock, after a launch that needed them succeeded.
 */
#define KPACK_READY_LAUNCHED 0x1u     /* launched there: the module is in the context */
#define KPACK_READY_CLUSTER 0x2u      /* a launch with a cluster was checked there */
#define KPACK_READY_NON_PORTABLE 0x4u /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED set there */

/* Blocks in a cluster; up to 8 is portable (every device with clusters
   runs them), more needs the kernel's non-portable attribute. */
#define KPACK_PORTABLE_CLUSTER_BLOCKS 8u

/*
 * The device_ready bits a launch with cluster `cluster` needs before it
 * takes the hot path: a launch without a cluster only the first launch,
 * one with a cluster the cluster check, and a non-portable cluster the
 * attribute as well.  In kpack_launch's copy of launch() the cluster is the
 * constant 0, so this is the constant KPACK_READY_LAUNCHED.
 */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline uint32_t ready_bits_needed(const uint32_t cluster[3]) {
  if (cluster[0] == 0) {
    return KPACK_READY_LAUNCHED;
  }
  const uint64_t blocks = (uint64_t)cluster[0] * cluster[1] * cluster[2];
  return KPACK_READY_LAUNCHED | KPACK_READY_CLUSTER |
         (blocks > KPACK_PORTABLE_CLUSTER_BLOCKS ? KPACK_READY_NON_PORTABLE : 0u);
}

/*
 * Launches the CUkernel through cuLaunchKernelEx with the config's
 * attributes, in kpack_internal.h's order; see "Why the CUkernel is
 * launched directly" (cuLaunchKernelEx takes it as its CUfunction just as
 * cuLaunchKernel does).  The attributes live on the stack: the driver reads
 * them during the call only.  Only `id` and the value's member in use are
 * written.  The config is taken by value, copied on the way in, because
 * this is the one out-of-line function that launch() hands its config to
 * (see launch()).
 */
static CUresult launch_now_ex(uintptr_t kernel, const launch_config config) {
  const launch_config *c = &config;
  CUlaunchAttribute attrs[4];
  unsigned int n = 0;
  if (c->flags & KPACK_LAUNCH_PDL) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (c->flags & KPACK_LAUNCH_COOPERATIVE) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n++].value.cooperative = 1;
  }
  if (c->cluster[0] != 0) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = c->cluster[0];
    attrs[n].value.clusterDim.y = c->cluster[1];
    attrs[n++].value.clusterDim.z = c->cluster[2];
  }
  if (c->flags & KPACK_LAUNCH_CLUSTER_SPREAD) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attrs[n++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
  }
  const CUlaunchConfig cu_config = {c->grid[0],  c->grid[1], c->grid[2], c->block[0], c->block[1],
                                    c->block[2], c->smem,    c->stream,  attrs,       n};
  return c->launch_ex(&cu_config, (CUfunction)kernel, c->args, NULL);
}

/*
 * Launches the CUkernel itself; see "Why the CUkernel is launched
 * directly".  A launch without attributes (every kpack_launch) is the
 * cuLaunchKernel call it always was.  The test of `launch_ex` is the only
 * addition, and in kpack_launch's copy of launch() the compiler knows it is
 * NULL and drops it.
 */
static inline CUresult launch_now(const kpack_driver *d, uintptr_t kernel, const launch_config *c) {
  if (c->launch_ex != NULL) {
    return launch_now_ex(kernel, *c);
  }
  return d->launch_kernel((CUfunction)kernel, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                          c->block[1], c->block[2], c->smem, c->stream, c->args, NULL);
}

/* Inlined into each caller, for the hot path's sake: see launch(). */
#if defined(__GNUC__)
#define KPACK_RT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define KPACK_RT_ALWAYS_INLINE inline
#endif

/*
 * Appends the driver call that launch_now() makes for `c`, and how it
 * failed, to the thread's detail: "cuLaunchKernel(grid 1x1x1, block
 * 256x1x1, smem 0) failed: NAME (code)", or for a launch with attributes
 * "cuLaunchKernelEx(grid ..., smem 0, pdl, cooperative, cluster 2x1x1,
 * spread) failed: ..." with only the attributes that are set.
 */
static KPACK_RT_ALWAYS_INLINE void append_launch_failure(const kpack_driver *d, CUresult r,
                                                         const launch_config *c) {
  kpack_rt_append_detail("%s(grid %ux%ux%u, block %ux%ux%u, smem %u",
                         c->launch_ex != NULL ? "cuLaunchKernelEx" : "cuLaunchKernel", c->grid[0],
                         c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->smem);
  if (c->flags & KPACK_LAUNCH_PDL) {
    kpack_rt_append_detail(", pdl");
  }
  if (c->flags & KPACK_LAUNCH_COOPERATIVE) {
    kpack_rt_append_detail(", cooperative");
  }
  if (c->cluster[0] != 0) {
    kpack_rt_append_detail(", cluster %ux%ux%u", c->cluster[0], c->cluster[1], c->cluster[2]);
  }
  if (c->flags & KPACK_LAUNCH_CLUSTER_SPREAD) {
    kpack_rt_append_detail(", spread");
  }
  kpack_rt_append_detail(") failed: %s (%d)", kpack_rt_cu_name(d, r), (int)r);
}

/* Fails with KPACK_ERROR_LAUNCH_FAILED: cuLaunchKernel (or cuLaunchKernelEx)
   returned `r`. */
static KPACK_RT_ALWAYS_INLINE kpack_status fail_launch(const kpack_driver *d,
                                                       const kpack_kernel *k, CUresult r,
                                                       const launch_config *c) {
  kpack_rt_fail(KPACK_ERROR_LAUNCH_FAILED, (int)r, "%s: ", name_of(k));
  append_launch_failure(d, r, c);
  return KPACK_ERROR_LAUNCH_FAILED;
}

/*
 * Whether a first launch on a device that failed with `r` failed to load the
 * module into the context (then it gets load_status(r)); any other failure
 * is KPACK_ERROR_LAUNCH_FAILED, as on the hot path.
 */
static int is_load_failure(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
  case CUDA_ERROR_JIT_COMPILATION_DISABLED:
  case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED: return 1;
  default: return 0;
  }
}

/*
 * The status for a failed driver call of prepare_cluster that is not the
 * device's lack of code: the caller's cluster or block for INVALID_VALUE
 * and INVALID_CLUSTER_SIZE, a load status where the call had to load the
 * module and could not, else a driver failure.
 */
static kpack_status cluster_failure_status(CUresult r) {
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_CLUSTER_SIZE) {
    return KPACK_ERROR_INVALID_ARGUMENT;
  }
  return is_load_failure(r) ? load_status(r) : KPACK_ERROR_DRIVER;
}

/*
 * Prepares the first launch of k with a cluster on `dev` (kpack_internal.h,
 * kpack_launch_ex), called by first_launch_on_device with g_load_lock held
 * and the device's ready bits `ready`: sets the non-portable attribute for
 * a cluster of more than 8 blocks unless it is set, then asks
 * cuOccupancyMaxActiveClusters whether the cluster fits at all, and refuses
 * the launch where it gives 0, naming the cluster, the block, the shared
 * memory and the device.  Triton's launcher does the same before its
 * cluster launches; the driver's own refusal at the launch would only say
 * CUDA_ERROR_INVALID_CLUSTER_SIZE or nothing useful.  The config is taken
 * by value, for launch()'s sake (see launch_now_ex).
 */
static kpack_status prepare_cluster(const kpack_driver *d, const kpack_kernel *k, uintptr_t kernel,
                                    CUdevice dev, uint32_t ready, const launch_config config) {
  const launch_config *c = &config;
  int cc = 0;
  kpack_status s = KPACK_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  const uint32_t needed = ready_bits_needed(c->cluster);
  if ((needed & KPACK_READY_NON_PORTABLE) && !(ready & KPACK_READY_NON_PORTABLE)) {
    kpack_pfn_kernel_set_attribute set_attribute = kpack_rt_kernel_set_attribute(d);
    if (set_attribute == NULL) {
      return kpack_rt_fail_missing(KPACK_LAZY_KERNEL_SET_ATTRIBUTE);
    }
    r = set_attribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, (CUkernel)kernel,
                      dev);
    if (r != CUDA_SUCCESS) {
      if ((s = check_failed_device(d, k, dev, r, &cc)) != KPACK_SUCCESS) {
        return s;
      }
      return kpack_rt_fail_cu(d, cluster_failure_status(r), r,
                              "%s: cuKernelSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) on "
                              "device %d",
                              name_of(k), (int)dev);
    }
  }
  kpack_pfn_occupancy_max_active_clusters max_active_clusters =
      kpack_rt_occupancy_max_active_clusters(d);
  if (max_active_clusters == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_OCCUPANCY_MAX_ACTIVE_CLUSTERS);
  }
  /* Only the cluster: the other attributes do not change what fits. */
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = c->cluster[0];
  attr.value.clusterDim.y = c->cluster[1];
  attr.value.clusterDim.z = c->cluster[2];
  const CUlaunchConfig query = {c->grid[0],  c->grid[1], c->grid[2], c->block[0], c->block[1],
                                c->block[2], c->smem,    c->stream,  &attr,       1};
  int clusters = 0;
  r = max_active_clusters(&clusters, (CUfunction)kernel, &query);
  if (r != CUDA_SUCCESS) {
    if ((s = check_failed_device(d, k, dev, r, &cc)) != KPACK_SUCCESS) {
      return s;
    }
    return kpack_rt_fail_cu(d, cluster_failure_status(r), r,
                            "%s: cuOccupancyMaxActiveClusters(cluster %ux%ux%u, block %ux%ux%u, "
                            "smem %u) on device %d",
                            name_of(k), c->cluster[0], c->cluster[1], c->cluster[2], c->block[0],
                            c->block[1], c->block[2], c->smem, (int)dev);
  }
  if (clusters > 0) {
    return KPACK_SUCCESS;
  }
  /* " (sm_90)", or nothing when the driver cannot say. */
  char sm[24] = "";
  if (device_cc(d, dev, &cc) == CUDA_SUCCESS && cc > 0) {
    snprintf(sm, sizeof sm, " (sm_%d)", cc);
  }
  const unsigned long long threads = (unsigned long long)c->block[0] * c->block[1] * c->block[2];
  return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                       "%s: cluster %ux%ux%u of %llu-thread blocks with %u bytes of shared memory "
                       "cannot run on device %d%s: cuOccupancyMaxActiveClusters gives 0",
                       name_of(k), c->cluster[0], c->cluster[1], c->cluster[2], threads, c->smem,
                       (int)dev, sm);
}

/*
 * Slow path of step 3: the first launch of k on `dev`, and the first with
 * a cluster there (see ready_bits_needed).  Launches under g_load_lock, so
 * racing first launches on a device load the module once, after
 * prepare_cluster when the launch has a cluster not checked yet, and sets
 * the device's ready bits when the launch succeeded; a failure is not
 * latched, so the next launch tries again.  A thread that finds the bits
 * set by the time it holds the lock launches as on the hot path, and
 * reports a failure as it would.  Only a failure reads the device's compute
 * capability: to refuse a device k has no code for (check_failed_device),
 * and to name its sm in the load failure's detail.  Always inlined: see
 * launch().
 */
static KPACK_RT_ALWAYS_INLINE kpack_status first_launch_on_device(const kpack_driver *d,
                                                                  const kpack_kernel *k,
                                                                  uintptr_t kernel, CUdevice dev,
                                                                  const launch_config *c) {
  kpack_kernel_state *st = k->state;
  const uint32_t needed = ready_bits_needed(c->cluster);
  kpack_status s = KPACK_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_load_lock);
  const uint32_t ready = atomic_load_explicit(&st->device_ready[dev], memory_order_relaxed);
  if ((ready | KPACK_READY_LAUNCHED) != (ready | needed)) {
    s = prepare_cluster(d, k, kernel, dev, ready, *c);
  }
  if (s == KPACK_SUCCESS) {
    r = launch_now(d, kernel, c);
  }
  if (s == KPACK_SUCCESS && r == CUDA_SUCCESS && (ready & needed) != needed) {
    if (!(ready & KPACK_READY_LAUNCHED)) {
      atomic_fetch_add_explicit(&g_functions_resolved, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&st->device_ready[dev], ready | needed, memory_order_release);
  }
  pthread_mutex_unlock(&g_load_lock);
  if (s != KPACK_SUCCESS || r == CUDA_SUCCESS) {
    return s;
  }
  if (ready & KPACK_READY_LAUNCHED) {
    return fail_launch(d, k, r, c);
  }
  int cc = 0;
  s = check_failed_device(d, k, dev, r, &cc);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  if (!is_load_failure(r)) {
    return fail_launch(d, k, r, c);
  }
  /* " (sm_90)", or nothing when the driver could not say. */
  char sm[24] = "";
  if (cc > 0) {
    snprintf(sm, sizeof sm, " (sm_%d)", cc);
  }
  s = kpack_rt_fail(load_status(r), (int)r, "%s: first launch on device %d%s, which loads its code: ",
                    name_of(k), (int)dev, sm);
  append_launch_failure(d, r, c);
  kpack_rt_append_memory_info(d, r, dev);
  return s;
}

/*
 * Slow path of step 2: raises k's dynamic shared-memory limit on `dev` to
 * `smem` unless it is already at least that.  The limit only grows, so a
 * launch with less never comes here again.
 */
static kpack_status raise_smem_limit(const kpack_driver *d, const kpack_kernel *k,
                                     uintptr_t kernel, CUdevice dev, uint32_t smem) {
  if (smem > (uint32_t)INT_MAX) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %u bytes of dynamic shared memory is more than any device has",
                         name_of(k), smem);
  }
  kpack_kernel_state *st = k->state;
  kpack_status s = KPACK_SUCCESS;
  pthread_mutex_lock(&g_load_lock);
  if (smem > atomic_load_explicit(&st->smem_limit[dev], memory_order_relaxed)) {
    /* Looked up on first use (driver.h).  A driver without it fails here,
       each time: like any failure, not latched. */
    kpack_pfn_kernel_set_attribute set_attribute = kpack_rt_kernel_set_attribute(d);
    CUresult r = CUDA_SUCCESS;
    if (set_attribute == NULL) {
      s = kpack_rt_fail_missing(KPACK_LAZY_KERNEL_SET_ATTRIBUTE);
    } else if ((r = set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem,
                                  (CUkernel)kernel, dev)) != CUDA_SUCCESS) {
      /* A first use on the device too: one that k has no code for is
         refused as at the first launch.  INVALID_VALUE: more than the
         device allows, the caller's mistake. */
      int cc = 0;
      kpack_status status =
          r == CUDA_ERROR_INVALID_VALUE ? KPACK_ERROR_INVALID_ARGUMENT : KPACK_ERROR_DRIVER;
      if ((s = check_failed_device(d, k, dev, r, &cc)) == KPACK_SUCCESS) {
        s = kpack_rt_fail_cu(d, status, r,
                             "%s: cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %u) on "
                             "device %d",
                             name_of(k), smem, (int)dev);
      }
    } else {
      atomic_store_explicit(&st->smem_limit[dev], smem, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_load_lock);
  return s;
}

/* ---- Launch ------------------------------------------------------------------ */

/*
 * Validates what kpack_launch can check without the driver; `api` (the
 * entry point called) names a NULL kernel.  Sets *empty when the grid has
 * no blocks, which is success with nothing to launch.
 */
static kpack_status check_launch_args(const char *api, const kpack_kernel *k, uint32_t grid_x,
                                      uint32_t grid_y, uint32_t grid_z, uint32_t block_x,
                                      uint32_t block_y, uint32_t block_z, int *empty) {
  *empty = 0;
  if (k == NULL) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0, "%s: the kernel is NULL", api);
  }
  /* An empty problem (n == 0) is not an error; it launches nothing. */
  if (grid_x == 0 || grid_y == 0 || grid_z == 0) {
    *empty = 1;
    return KPACK_SUCCESS;
  }
  if (k->abi_version != KPACK_RT_ABI_VERSION) {
    return fail_abi(k->abi_version);
  }
  if (k->state == NULL) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0, "%s: the kernel descriptor has no state",
                         name_of(k));
  }
  if (block_x == 0 || block_y == 0 || block_z == 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: block dimensions must be nonzero, got %ux%ux%u", name_of(k), block_x,
                         block_y, block_z);
  }
  return KPACK_SUCCESS;
}

/*
 * Validates kpack_launch_ex's attributes (kpack_internal.h): known flags
 * only, a cluster that is none (0x0x0) or at least 1 in every dimension,
 * and KPACK_LAUNCH_CLUSTER_SPREAD only with a cluster.  After
 * check_launch_args, so `k` is a descriptor of this ABI.
 */
static kpack_status check_launch_attrs(const kpack_kernel *k, uint32_t flags, uint32_t cluster_x,
                                       uint32_t cluster_y, uint32_t cluster_z) {
  if ((flags & ~KPACK_LAUNCH_KNOWN_FLAGS) != 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_launch_ex: flags 0x%x has unknown bits 0x%x (known: "
                         "KPACK_LAUNCH_PDL 0x1, KPACK_LAUNCH_COOPERATIVE 0x2, "
                         "KPACK_LAUNCH_CLUSTER_SPREAD 0x4)",
                         name_of(k), flags, flags & ~KPACK_LAUNCH_KNOWN_FLAGS);
  }
  if (cluster_x == 0 && (cluster_y != 0 || cluster_z != 0)) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_launch_ex: cluster %ux%ux%u: cluster_x 0 means no cluster, "
                         "so cluster_y and cluster_z must be 0 too",
                         name_of(k), cluster_x, cluster_y, cluster_z);
  }
  if (cluster_x != 0 && (cluster_y == 0 || cluster_z == 0)) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_launch_ex: cluster %ux%ux%u: every cluster dimension must be "
                         "at least 1",
                         name_of(k), cluster_x, cluster_y, cluster_z);
  }
  if ((flags & KPACK_LAUNCH_CLUSTER_SPREAD) && cluster_x == 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_launch_ex: KPACK_LAUNCH_CLUSTER_SPREAD needs a cluster "
                         "(cluster_x 0 means none)",
                         name_of(k));
  }
  return KPACK_SUCCESS;
}

/*
 * Fails with KPACK_ERROR_INTERNAL if `dev` is beyond the devices whose state
 * kpack keeps.  `who` (a specialization's name) starts the detail.
 */
static kpack_status check_device_ordinal(const char *who, CUdevice dev) {
  if (dev < 0 || dev >= KPACK_MAX_DEVICES) {
    return kpack_rt_fail(KPACK_ERROR_INTERNAL, 0,
                         "%s: device %d is beyond the %d devices kpack tracks (KPACK_MAX_DEVICES)",
                         who, (int)dev, KPACK_MAX_DEVICES);
  }
  return KPACK_SUCCESS;
}

/*
 * The device kpack_tuning_select found for this thread, for the launch its
 * auto dispatcher makes next; -1: none (kpack_internal.h).  The default TLS
 * model, not initial-exec: that would mark a shared library holding the
 * runtime STATIC_TLS, and then dlopen (Python's ctypes) refuses it once the
 * runtime's thread-locals (the error detail, the tensor-map cache) outgrow
 * glibc's static TLS surplus.  Linked into an executable, the access is one
 * load relative to the thread pointer anyway.
 */
static _Thread_local CUdevice tl_device_hint = -1;

void kpack_device_hint_clear(void) { tl_device_hint = -1; }

/* See runtime_private.h. */
void kpack_rt_set_device_hint(CUdevice dev) { tl_device_hint = dev; }

/*
 * Reads the current context's device into *dev.  No current context is the
 * common mistake of launching from a thread that never called
 * cudaSetDevice(), so its message says what to do.
 */
static kpack_status current_device(const kpack_driver *d, const char *who, CUdevice *dev) {
  CUresult r = d->ctx_get_device(dev);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    return kpack_rt_fail(KPACK_ERROR_NO_CONTEXT, (int)r,
                         "%s: the calling thread has no current CUDA context (cuCtxGetDevice: "
                         "%s (%d)); make one current first, e.g. with cudaSetDevice()",
                         who, kpack_rt_cu_name(d, r), (int)r);
  }
  if (r != CUDA_SUCCESS) {
    return kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r, "%s: cuCtxGetDevice", who);
  }
  return check_device_ordinal(who, *dev);
}

/*
 * Cold path: loads the driver (unless a racing thread just has) into *d and
 * reads the current device into *dev.  When this call loaded the driver,
 * the load's own cuCtxGetDevice (driver.c) already found the device, so it
 * is not asked again.  `who` starts the detail of a failure.
 */
static kpack_status load_driver(const char *who, const kpack_driver **d, CUdevice *dev) {
  CUdevice probed = -1;
  kpack_status s = kpack_rt_driver_load(d, &probed);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  if (probed < 0) {
    return current_device(*d, who, dev);
  }
  *dev = probed;
  return check_device_ordinal(who, *dev);
}

/* See runtime_private.h. */
kpack_status kpack_rt_driver_and_device(const char *who, int take_hint, const kpack_driver **d,
                                        CUdevice *dev) {
  CUdevice hinted = -1;
  if (take_hint && (hinted = tl_device_hint) >= 0) {
    tl_device_hint = -1;
  }
  *d = kpack_rt_driver();
  if (*d == NULL) {
    return load_driver(who, d, dev);
  }
  if (hinted >= 0) {
    *dev = hinted;
    return KPACK_SUCCESS;
  }
  return current_device(*d, who, dev);
}

/*
 * The body of kpack_launch and kpack_launch_ex (see kpack_internal.h and
 * the file comment): launches `c` (whose launch_ex is set here) of `k`;
 * `api` is the entry point called, for messages.  The hot path is the
 * straight line through this function: every branch into a load_*,
 * ensure_*, raise_* or first_* helper is taken only on first use.
 *
 * Why it is written so: the hot path of kpack_launch must not pay for
 * kpack_launch_ex.  This function is always inlined, so each entry point
 * has its own copy, and in kpack_launch's the compiler knows from `c`'s
 * constant attributes that has_attrs is 0 and launch_ex NULL, and drops
 * every test of them.  `c` stays in registers only while no out-of-line
 * function gets its address: once one does, GCC builds all of it in memory
 * before the hot path's branch.  So the slow paths that read it
 * (first_launch_on_device, fail_launch) are always inlined as well, as
 * they were into kpack_launch when it had them to itself, and
 * launch_now_ex takes a copy.  kpack_launch's hot path then compiles to
 * the instructions it had before kpack_launch_ex (98 with GCC 12 -O3, no
 * store of `c`).  kpack_launch_ex without attributes adds three predictable
 * branches on has_attrs and launch_ex; with them, the attribute checks, one
 * atomic load for cuLaunchKernelEx, and the CUlaunchConfig built on the
 * stack.
 */
static KPACK_RT_ALWAYS_INLINE kpack_status launch(const char *api, const kpack_kernel *k,
                                                  launch_config c) {
  /* The hint kpack_tuning_select or kpack_scratch left is for this launch
     only, whatever becomes of it (refused, empty grid): taken first. */
  CUdevice dev = tl_device_hint;
  if (dev >= 0) {
    tl_device_hint = -1;
  }
  const int has_attrs =
      c.flags != 0 || c.cluster[0] != 0 || c.cluster[1] != 0 || c.cluster[2] != 0;
  int empty = 0;
  kpack_status s = check_launch_args(api, k, c.grid[0], c.grid[1], c.grid[2], c.block[0],
                                     c.block[1], c.block[2], &empty);
  if (s != KPACK_SUCCESS || empty) {
    return s;
  }
  if (has_attrs && (s = check_launch_attrs(k, c.flags, c.cluster[0], c.cluster[1],
                                           c.cluster[2])) != KPACK_SUCCESS) {
    return s;
  }
  /* With a hint, kpack_tuning_select or kpack_scratch has just found the
     device (and the driver). */
  const kpack_driver *d = kpack_rt_driver();
  if (d == NULL) {
    if ((s = load_driver(name_of(k), &d, &dev)) != KPACK_SUCCESS) {
      return s;
    }
  } else if (dev < 0 && (s = current_device(d, name_of(k), &dev)) != KPACK_SUCCESS) {
    return s;
  }
  /* Looked up on the first launch with attributes (driver.h), then one
     atomic load; before the load, so that a driver that cannot make the
     launch does not get the library loaded for it. */
  kpack_pfn_launch_kernel_ex launch_ex = NULL;
  if (has_attrs && (launch_ex = kpack_rt_launch_kernel_ex(d)) == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_LAUNCH_KERNEL_EX);
  }
  kpack_kernel_state *st = k->state;
  uintptr_t kernel = atomic_load_explicit(&st->kernel, memory_order_acquire);
  const uint32_t ready = atomic_load_explicit(&st->device_ready[dev], memory_order_acquire);
  const uint32_t needed = ready_bits_needed(c.cluster);
  /* No arch check here: a device the library has no code for makes the
     driver fail one of the first-use calls, and only then is the device's
     compute capability read (check_failed_device). */
  if (kernel == 0 && (s = ensure_loaded(d, k, dev, &kernel)) != KPACK_SUCCESS) {
    return s;
  }
  /* Before the first launch too: the limit is the kernel's, per device,
     whether or not its module is loaded in a context yet. */
  if (c.smem > KPACK_DEFAULT_SMEM_LIMIT &&
      c.smem > atomic_load_explicit(&st->smem_limit[dev], memory_order_acquire) &&
      (s = raise_smem_limit(d, k, kernel, dev, c.smem)) != KPACK_SUCCESS) {
    return s;
  }
  c.launch_ex = launch_ex;
  if ((ready & needed) != needed) {
    return first_launch_on_device(d, k, kernel, dev, &c);
  }
  CUresult r = launch_now(d, kernel, &c);
  return r == CUDA_SUCCESS ? KPACK_SUCCESS : fail_launch(d, k, r, &c);
}

/* See kpack_internal.h. */
kpack_status kpack_launch(const kpack_kernel *k, kpack_stream stream, uint32_t grid_x,
                          uint32_t grid_y, uint32_t grid_z, uint32_t block_x, uint32_t block_y,
                          uint32_t block_z, uint32_t smem_bytes, void **args) {
  const launch_config c = {{grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, smem_bytes,
                           (CUstream)stream, args, 0, {0, 0, 0}, NULL};
  return launch("kpack_launch", k, c);
}

/* See kpack_internal.h. */
kpack_status kpack_launch_ex(const kpack_kernel *k, kpack_stream stream, uint32_t grid_x,
                             uint32_t grid_y, uint32_t grid_z, uint32_t block_x, uint32_t block_y,
                             uint32_t block_z, uint32_t smem_bytes, void **args, uint32_t flags,
                             uint32_t cluster_x, uint32_t cluster_y, uint32_t cluster_z) {
  const launch_config c = {{grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, smem_bytes,
                           (CUstream)stream, args, flags, {cluster_x, cluster_y, cluster_z}, NULL};
  return launch("kpack_launch_ex", k, c);
}

/* ---- Device attributes -------------------------------------------------------- */

/*
 * The attributes of each device that launch expressions read (device.NAME),
 * by KPACK_DEVICE_ATTR_* code: 0 until read, then KNOWN | the value.  A
 * driver's attribute is a non-negative int, so the high bit tells a value
 * read (possibly 0) from none.  Relaxed, as g_device_cc: each slot is one
 * word that every thread would read the same from the driver, and it
 * orders nothing else.  kpack_unload_all clears it.  device.sm is kept in
 * g_device_cc, which the arch check shares.
 */
#define KPACK_ATTR_KNOWN ((uint64_t)1 << 63)
static _Atomic(uint64_t) g_device_attr[KPACK_MAX_DEVICES][KPACK_DEVICE_ATTR_COUNT];

/* What each KPACK_DEVICE_ATTR_* code reads, for the driver and messages. */
typedef struct device_attr_info {
  const char *name;               /* as launch expressions spell it */
  CUdevice_attribute attribute;   /* unused for device.sm */
  const char *attribute_name;
} device_attr_info;

static const device_attr_info k_device_attrs[KPACK_DEVICE_ATTR_COUNT] = {
    [KPACK_DEVICE_ATTR_NUM_SMS] = {"device.num_sms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   "MULTIPROCESSOR_COUNT"},
    [KPACK_DEVICE_ATTR_SM] = {"device.sm", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              "COMPUTE_CAPABILITY_MAJOR/MINOR"},
    [KPACK_DEVICE_ATTR_MAX_SHARED_MEM] = {"device.max_shared_mem",
                                          CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                          "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"},
    [KPACK_DEVICE_ATTR_L2_BYTES] = {"device.l2_bytes", CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                    "L2_CACHE_SIZE"},
};

/*
 * Cold path: reads attribute `which` of `dev` from the driver into *value
 * and caches it.  On failure records KPACK_ERROR_DRIVER (or
 * KPACK_ERROR_DRIVER_TOO_OLD without cuDeviceGetAttribute) with a detail
 * naming the attribute, and the driver's CUresult.
 */
static kpack_status read_device_attribute(const kpack_driver *d, const char *who, int which,
                                          CUdevice dev, int64_t *value) {
  const device_attr_info *info = &k_device_attrs[which];
  kpack_pfn_device_get_attribute get_attribute = kpack_rt_device_get_attribute(d);
  if (get_attribute == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_DEVICE_GET_ATTRIBUTE);
  }
  int v = 0;
  CUresult r = which == KPACK_DEVICE_ATTR_SM ? device_cc(d, dev, &v)
                                              : get_attribute(&v, info->attribute, dev);
  if (r != CUDA_SUCCESS) {
    return kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r,
                            "%s: %s: cuDeviceGetAttribute(%s) on device %d", who, info->name,
                            info->attribute_name, (int)dev);
  }
  if (which != KPACK_DEVICE_ATTR_SM) {
    atomic_store_explicit(&g_device_attr[dev][which], KPACK_ATTR_KNOWN | (uint32_t)v,
                          memory_order_relaxed);
  }
  *value = v;
  return KPACK_SUCCESS;
}

/*
 * See kpack_internal.h.  After the first read of an attribute on a device,
 * the path is the launch's: an acquire load of the driver table,
 * cuCtxGetDevice, then one relaxed load.
 */
kpack_status kpack_device_attribute(const char *who, int which, int64_t *value) {
  if (who == NULL) {
    who = "kpack_device_attribute";
  }
  if (which < 0 || which >= KPACK_DEVICE_ATTR_COUNT || value == NULL) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_device_attribute(%d) needs a KPACK_DEVICE_ATTR_* code and a "
                         "place for the value",
                         who, which);
  }
  /* The driver and the device as kpack_launch finds them. */
  const kpack_driver *d = kpack_rt_driver();
  CUdevice dev = 0;
  kpack_status s = d == NULL ? load_driver(who, &d, &dev) : current_device(d, who, &dev);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  if (which == KPACK_DEVICE_ATTR_SM) {
    int cc = atomic_load_explicit(&g_device_cc[dev], memory_order_relaxed);
    if (cc != 0) {
      *value = cc;
      return KPACK_SUCCESS;
    }
  } else {
    uint64_t known = atomic_load_explicit(&g_device_attr[dev][which], memory_order_relaxed);
    if (known != 0) {
      *value = (int64_t)(known & ~KPACK_ATTR_KNOWN);
      return KPACK_SUCCESS;
    }
  }
  return read_device_attribute(d, who, which, dev, value);
}

/* ---- Tunings ------------------------------------------------------------------ */

/* Room for a device's name, as cuDeviceGetName writes it (NVIDIA's are
   under 100 bytes; a longer one is cut, and then matches no tuning). */
#define KPACK_DEVICE_NAME_SIZE 256

/*
 * Each device's name, read once per device and process by the first
 * kpack_tuning_select there: g_device_name[dev] is written under
 * g_tuning_lock while g_device_name_ready[dev] is 0, and published by a
 * release store of 1 that the readers' acquire load pairs with, so a
 * reader that sees 1 sees the whole name.  kpack_unload_all clears the
 * flags (the next driver may name its devices otherwise).
 */
static char g_device_name[KPACK_MAX_DEVICES][KPACK_DEVICE_NAME_SIZE];
static _Atomic(int) g_device_name_ready[KPACK_MAX_DEVICES];

/* Serializes reading names and listing sets.  Never held on the hot path,
   and never together with g_load_lock. */
static pthread_mutex_t g_tuning_lock = PTHREAD_MUTEX_INITIALIZER;

/* The sets with a choice cached, for kpack_unload_all; guarded by
   g_tuning_lock. */
static kpack_tuning_set *g_tuning_sets;

/*
 * Cold path: the name of `dev` into *name (static storage), from the cache
 * or else the driver.  On failure records KPACK_ERROR_DRIVER_TOO_OLD (no
 * cuDeviceGetName) or KPACK_ERROR_DRIVER naming the call.
 */
static kpack_status device_name(const kpack_driver *d, const char *who, CUdevice dev,
                                const char **name) {
  *name = g_device_name[dev];
  if (atomic_load_explicit(&g_device_name_ready[dev], memory_order_acquire)) {
    return KPACK_SUCCESS;
  }
  kpack_pfn_device_get_name get_name = kpack_rt_device_get_name(d);
  if (get_name == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_DEVICE_GET_NAME);
  }
  kpack_status s = KPACK_SUCCESS;
  pthread_mutex_lock(&g_tuning_lock);
  if (!atomic_load_explicit(&g_device_name_ready[dev], memory_order_relaxed)) {
    char *out = g_device_name[dev];
    CUresult r = get_name(out, KPACK_DEVICE_NAME_SIZE, dev);
    out[KPACK_DEVICE_NAME_SIZE - 1] = '\0';
    if (r != CUDA_SUCCESS) {
      s = kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r, "%s: cuDeviceGetName on device %d", who,
                           (int)dev);
    } else {
      atomic_store_explicit(&g_device_name_ready[dev], 1, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_tuning_lock);
  return s;
}

/*
 * Cold path of kpack_tuning_select: the first call for `set` on `dev`.
 * Matches the device's name, then (only if none matches) its compute
 * capability, caches the choice and lists the set for kpack_unload_all.
 */
static kpack_status select_tuning(const kpack_driver *d, const char *who, kpack_tuning_set *set,
                                  CUdevice dev, int *index) {
  const char *name = NULL;
  kpack_status s = device_name(d, who, dev, &name);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  int chosen = -1;
  for (int i = 0; i < set->count && chosen < 0; ++i) {
    if (set->gpus[i] != NULL && strcmp(set->gpus[i], name) == 0) {
      chosen = i;
    }
  }
  if (chosen < 0 && set->count > 0) {
    /* Cached with the other attributes: the arch check shares it. */
    int64_t cc = atomic_load_explicit(&g_device_cc[dev], memory_order_relaxed);
    if (cc == 0 && (s = read_device_attribute(d, who, KPACK_DEVICE_ATTR_SM, dev, &cc)) != KPACK_SUCCESS) {
      return s;
    }
    for (int i = 0; i < set->count && chosen < 0; ++i) {
      if (set->sms[i] == cc) {
        chosen = i;
      }
    }
  }
  pthread_mutex_lock(&g_tuning_lock);
  if (!set->listed) {
    set->listed = 1;
    set->next = g_tuning_sets;
    g_tuning_sets = set;
  }
  /* Relaxed: the index means the same to every thread, and orders nothing. */
  atomic_store_explicit(&set->cache[dev], chosen + 2, memory_order_relaxed);
  pthread_mutex_unlock(&g_tuning_lock);
  *index = chosen;
  return KPACK_SUCCESS;
}

/*
 * See kpack_internal.h.  After the first call for `set` on a device, the
 * path is the launch's: an acquire load of the driver table,
 * cuCtxGetDevice, then one relaxed load and the hint's store.
 */
kpack_status kpack_tuning_select(const char *who, kpack_tuning_set *set, int *index) {
  if (who == NULL) {
    who = "kpack_tuning_select";
  }
  if (index != NULL) {
    *index = -1;
  }
  if (set == NULL || index == NULL || set->count < 0 ||
      (set->count > 0 && (set->gpus == NULL || set->sms == NULL))) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_tuning_select needs a tuning set (with its gpus and sms) and "
                         "a place for the index",
                         who);
  }
  const kpack_driver *d = kpack_rt_driver();
  CUdevice dev = 0;
  kpack_status s = d == NULL ? load_driver(who, &d, &dev) : current_device(d, who, &dev);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  int cached = atomic_load_explicit(&set->cache[dev], memory_order_relaxed);
  if (cached != 0) {
    *index = cached - 2;
    tl_device_hint = dev;
    return KPACK_SUCCESS;
  }
  s = select_tuning(d, who, set, dev, index);
  if (s == KPACK_SUCCESS) {
    tl_device_hint = dev;
  }
  return s;
}

/* Forgets every device name and every set's choices (kpack_unload_all). */
static void forget_tunings(void) {
  pthread_mutex_lock(&g_tuning_lock);
  for (int dev = 0; dev < KPACK_MAX_DEVICES; ++dev) {
    atomic_store_explicit(&g_device_name_ready[dev], 0, memory_order_relaxed);
  }
  kpack_tuning_set *next = NULL;
  for (kpack_tuning_set *set = g_tuning_sets; set != NULL; set = next) {
    next = set->next;
    for (int dev = 0; dev < KPACK_MAX_DEVICES; ++dev) {
      atomic_store_explicit(&set->cache[dev], 0, memory_order_relaxed);
    }
    set->next = NULL;
    set->listed = 0;
  }
  g_tuning_sets = NULL;
  pthread_mutex_unlock(&g_tuning_lock);
}

/* ---- Introspection and control ------------------------------------------------ */

/* See kpack_internal.h.  Reads only the immutable descriptor: no driver. */
kpack_status kpack_describe(const kpack_kernel *k, kpack_spec_info *info) {
  if (k == NULL || info == NULL) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "kpack_describe: the kernel and the info must not be NULL");
  }
  if (k->abi_version != KPACK_RT_ABI_VERSION) {
    return fail_abi(k->abi_version);
  }
  info->kernel = k->kernel != NULL ? k->kernel : "";
  info->name = k->name != NULL ? k->name : "";
  info->archs = k->archs_text != NULL ? k->archs_text : "";
  info->ptx_archs = k->ptx_archs_text != NULL ? k->ptx_archs_text : "";
  info->build_mode = k->build_mode != NULL ? k->build_mode : "";
  info->fatbin_size = k->fatbin != NULL ? k->fatbin->size : 0;
  return KPACK_SUCCESS;
}

/* Returns a state to its zero-initialized, never-launched form. */
static void reset_state(kpack_kernel_state *st) {
  atomic_store_explicit(&st->kernel, 0, memory_order_relaxed);
  st->library = NULL;
  for (int dev = 0; dev < KPACK_MAX_DEVICES; ++dev) {
    atomic_store_explicit(&st->device_ready[dev], 0, memory_order_relaxed);
    atomic_store_explicit(&st->smem_limit[dev], 0, memory_order_relaxed);
  }
  st->next_loaded = NULL;
}

/*
 * See kpack.h.  Not thread-safe by contract: hot-path readers hold no lock,
 * so nothing could stop them from using a library while it is unloaded.
 */
kpack_status kpack_unload_all(void) {
  kpack_status first = KPACK_SUCCESS;
  pthread_mutex_lock(&g_load_lock);
  const kpack_driver *d = kpack_rt_driver();
  /* Looked up only when there is something to unload (driver.h). */
  kpack_pfn_library_unload library_unload = NULL;
  if (d != NULL && (g_loaded != NULL || g_blob_libraries != NULL) &&
      (library_unload = kpack_rt_library_unload(d)) == NULL) {
    /* The libraries stay loaded in the driver; kpack forgets them all the
       same, so the call still leaves the runtime as if never used. */
    first = kpack_rt_fail_missing(KPACK_LAZY_LIBRARY_UNLOAD);
  }
  kpack_kernel_state *next = NULL;
  for (kpack_kernel_state *st = g_loaded; st != NULL; st = next) {
    next = st->next_loaded;
    CUresult r = library_unload != NULL && st->library != NULL
                     ? library_unload((CUlibrary)st->library)
                     : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS && first == KPACK_SUCCESS) {
      first = kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r, "kpack_unload_all: cuLibraryUnload");
    }
    reset_state(st);
  }
  g_loaded = NULL;
  blob_library *next_blob = NULL;
  for (blob_library *b = g_blob_libraries; b != NULL; b = next_blob) {
    next_blob = b->next;
    CUresult r = library_unload != NULL ? library_unload(b->library) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS && first == KPACK_SUCCESS) {
      first = kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r, "kpack_unload_all: cuLibraryUnload");
    }
    free(b);
  }
  g_blob_libraries = NULL;
  /* The next driver may be another (tests switch fakes); read anew. */
  for (int dev = 0; dev < KPACK_MAX_DEVICES; ++dev) {
    atomic_store_explicit(&g_device_cc[dev], 0, memory_order_relaxed);
    for (int which = 0; which < KPACK_DEVICE_ATTR_COUNT; ++which) {
      atomic_store_explicit(&g_device_attr[dev][which], 0, memory_order_relaxed);
    }
  }
  atomic_store_explicit(&g_libraries_loaded, 0, memory_order_relaxed);
  atomic_store_explicit(&g_functions_resolved, 0, memory_order_relaxed);
  pthread_mutex_unlock(&g_load_lock);
  /* The next driver's devices may be other models (tests switch fakes). */
  forget_tunings();
  /* While the driver that allocated the workspaces is still loaded. */
  kpack_status freed = kpack_rt_workspaces_forget(d, first == KPACK_SUCCESS);
  if (first == KPACK_SUCCESS) {
    first = freed;
  }
  kpack_rt_tensor_maps_forget();
  kpack_rt_driver_unload();
  return first;
}

/* See kpack.h.  The launch's own driver load, without a kernel. */
kpack_status kpack_init(void) {
  const kpack_driver *d = kpack_rt_driver();
  if (d != NULL) {
    return KPACK_SUCCESS;
  }
  CUdevice probed = -1;
  return kpack_rt_driver_load(&d, &probed);
}

/* See kpack.h. */
void kpack_get_load_counts(uint64_t *libraries_loaded, uint64_t *functions_resolved) {
  if (libraries_loaded != NULL) {
    *libraries_loaded = atomic_load_explicit(&g_libraries_loaded, memory_order_relaxed);
  }
  if (functions_resolved != NULL) {
    *functions_resolved = atomic_load_explicit(&g_functions_resolved, memory_order_relaxed);
  }
}
