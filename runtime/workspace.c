/*
 * workspace.c - scratch memory for launches: one workspace per (device,
 * stream), the runtime's (grown on demand with the stream-ordered
 * allocator) or the caller's (kpack_workspace_set).  See kpack.h,
 * "Scratch workspaces", and kpack_scratch in kpack_internal.h.
 *
 * The table
 * ---------
 * g_workspaces[dev] holds KPACK_WORKSPACE_STREAMS slots; a slot belongs to
 * one stream (its key is the stream + 1, so that the legacy default stream
 * NULL is a key too, and 0 a free slot) and holds the workspace's base,
 * size and owner.  Slots [0, used) have been handed out; a released slot
 * is free again (key 0) and reused before `used` grows.  Only threads
 * holding g_workspace_lock write slots, so writers see a stable table.
 *
 * The launch path (kpack_scratch once the workspace is big enough) takes
 * no lock: an acquire load of `used`, a scan of the keys, and a seqlock
 * read of the slot.  A slot holds words (key, base, size, owner) that must
 * be read together, so each write makes the slot's sequence number odd,
 * stores the words with release stores, and makes the number even again
 * (release); a reader loads the number, the words and the number again,
 * all with acquire loads, and uses what it read only if the number was
 * even and did not change.  A reader that sees any new word therefore sees
 * the odd number (or a later one) at its second load, and one that sees
 * the even number again saw no word of the next write.  (Acquire and
 * release on every word, not fences: ThreadSanitizer does not model
 * fences, and on x86 these are plain loads and stores.)  Every field is an
 * atomic, so a reader racing a writer reads stale or torn values but never
 * has a data race; the sequence number tells it to ignore them.  A reader that finds no slot, a slot
 * being written, or one too small takes the lock and looks again, which is
 * also how racing first launches on a stream allocate exactly once.
 *
 * Growth
 * ------
 * A runtime workspace grows by freeing the old buffer with cuMemFreeAsync
 * and allocating the new one with cuMemAllocAsync, both on the stream
 * itself: work already queued on the stream that uses the old buffer
 * finishes before the free takes effect, the pool may hand the same memory
 * back to the new allocation, and nothing synchronizes.  Sizes are powers
 * of two from 1 MiB, so a workspace is reallocated a few times at most and
 * holds at most twice the largest need.  A driver without the stream-
 * ordered allocator (CUDA 11.2 and later all have it, and kpack needs 12)
 * gives KPACK_ERROR_DRIVER_TOO_OLD rather than a fallback that would have
 * to synchronize.  While the stream captures a graph the workspace cannot
 * grow (the graph would keep the old pointer), so growth asks
 * cuStreamIsCapturing first.
 */
#include "kpack_internal.h"

#include "driver.h"
#include "errors.h"
#include "runtime_private.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* The smallest workspace the runtime allocates. */
#define KPACK_WORKSPACE_MIN_BYTES ((uint64_t)1 << 20)

/* More scratch than any device has: refused before the driver is asked. */
#define KPACK_SCRATCH_MAX_BYTES ((uint64_t)1 << 48)

/* The alignment the driver's allocations have at least (the CUDA
   programming guide's 256 bytes): a larger `align` needs slack. */
#define KPACK_DEVICE_ALLOC_ALIGN 256u

/* One stream's workspace on one device; see "The table". */
typedef struct workspace_slot {
  _Atomic(uint32_t) seq;     /* odd while being written */
  _Atomic(uintptr_t) key;    /* the stream + 1; 0: free */
  _Atomic(uint64_t) base;    /* CUdeviceptr, or the caller's pointer; 0: none */
  _Atomic(uint64_t) bytes;
  _Atomic(uint32_t) callers; /* 1: kpack_workspace_set's memory, never freed here */
} workspace_slot;

/* A consistent copy of a slot's fields. */
typedef struct workspace {
  uintptr_t key;
  uint64_t base;
  uint64_t bytes;
  uint32_t callers;
} workspace;

typedef struct device_workspaces {
  _Atomic(uint32_t) used; /* slots [0, used) have been handed out */
  workspace_slot slots[KPACK_WORKSPACE_STREAMS];
} device_workspaces;

/* Zero-initialized: untouched pages cost nothing until a device has a
   workspace. */
static device_workspaces g_workspaces[KPACK_MAX_DEVICES];

/* Serializes every write of g_workspaces (growth, set, release, forget).
   Never held on the launch path, and never together with another lock of
   the runtime. */
static pthread_mutex_t g_workspace_lock = PTHREAD_MUTEX_INITIALIZER;

/* kpack_workspace_usage(); written under g_workspace_lock, read relaxed. */
static _Atomic(uint64_t) g_runtime_bytes;
static _Atomic(uint64_t) g_runtime_workspaces;

/* The slot key of `stream`. */
static uintptr_t stream_key(CUstream stream) { return (uintptr_t)stream + 1u; }

/*
 * A workspace that a bigger one replaced.  It is kept, not freed: a graph
 * captured on its stream before the growth launches its kernels with this
 * buffer at every replay.  Freed (stream-ordered) when the stream's
 * workspace is released or replaced by the caller's, and by
 * kpack_unload_all.  The list is guarded by g_workspace_lock.
 */
typedef struct retired_buffer {
  struct retired_buffer *next;
  int dev;
  uintptr_t key;
  uint64_t base;
  uint64_t bytes;
} retired_buffer;
static retired_buffer *g_retired;

/* ---- Slots ------------------------------------------------------------------ */

/* Reads `slot` into *w without the lock; 0 when a writer was in the middle
   of it (the fields read are then meaningless). */
static int slot_read(workspace_slot *slot, workspace *w) {
  const uint32_t before = atomic_load_explicit(&slot->seq, memory_order_acquire);
  if (before & 1u) {
    return 0;
  }
  w->key = atomic_load_explicit(&slot->key, memory_order_acquire);
  w->base = atomic_load_explicit(&slot->base, memory_order_acquire);
  w->bytes = atomic_load_explicit(&slot->bytes, memory_order_acquire);
  w->callers = atomic_load_explicit(&slot->callers, memory_order_acquire);
  return atomic_load_explicit(&slot->seq, memory_order_acquire) == before;
}

/* Reads `slot` into *w; only under g_workspace_lock, where nothing writes. */
static workspace slot_get(workspace_slot *slot) {
  workspace w;
  w.key = atomic_load_explicit(&slot->key, memory_order_relaxed);
  w.base = atomic_load_explicit(&slot->base, memory_order_relaxed);
  w.bytes = atomic_load_explicit(&slot->bytes, memory_order_relaxed);
  w.callers = atomic_load_explicit(&slot->callers, memory_order_relaxed);
  return w;
}

/* Writes *w into `slot` of `dev`, under g_workspace_lock, and hands the
   slot out (raises `used`) if it was not. */
static void slot_put(CUdevice dev, workspace_slot *slot, const workspace *w) {
  device_workspaces *dw = &g_workspaces[dev];
  const uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_relaxed);
  atomic_store_explicit(&slot->seq, seq + 1u, memory_order_relaxed);
  atomic_store_explicit(&slot->key, w->key, memory_order_release);
  atomic_store_explicit(&slot->base, w->base, memory_order_release);
  atomic_store_explicit(&slot->bytes, w->bytes, memory_order_release);
  atomic_store_explicit(&slot->callers, w->callers, memory_order_release);
  atomic_store_explicit(&slot->seq, seq + 2u, memory_order_release);
  const uint32_t index = (uint32_t)(slot - dw->slots);
  if (index >= atomic_load_explicit(&dw->used, memory_order_relaxed)) {
    /* Release: a reader that sees the count sees the slot's words. */
    atomic_store_explicit(&dw->used, index + 1u, memory_order_release);
  }
}

/* Frees the slot (key 0), under g_workspace_lock. */
static void slot_clear(CUdevice dev, workspace_slot *slot) {
  const workspace none = {0, 0, 0, 0};
  slot_put(dev, slot, &none);
}

/* Returns `slot` to its zero-initialized state (kpack_rt_workspaces_forget). */
static void slot_zero(workspace_slot *slot) {
  atomic_store_explicit(&slot->seq, 0, memory_order_relaxed);
  atomic_store_explicit(&slot->key, 0, memory_order_relaxed);
  atomic_store_explicit(&slot->base, 0, memory_order_relaxed);
  atomic_store_explicit(&slot->bytes, 0, memory_order_relaxed);
  atomic_store_explicit(&slot->callers, 0, memory_order_relaxed);
}

/* The launch path: the workspace of `key` on `dev` into *w, without the
   lock.  0 when there is none or a writer was busy with it: the caller
   then looks again under the lock. */
static int find_fast(CUdevice dev, uintptr_t key, workspace *w) {
  device_workspaces *dw = &g_workspaces[dev];
  const uint32_t used = atomic_load_explicit(&dw->used, memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    workspace_slot *slot = &dw->slots[i];
    if (atomic_load_explicit(&slot->key, memory_order_relaxed) == key) {
      return slot_read(slot, w) && w->key == key;
    }
  }
  return 0;
}

/* The slot of `key` on `dev`, or NULL; under g_workspace_lock. */
static workspace_slot *find_locked(CUdevice dev, uintptr_t key) {
  device_workspaces *dw = &g_workspaces[dev];
  const uint32_t used = atomic_load_explicit(&dw->used, memory_order_relaxed);
  for (uint32_t i = 0; i < used; ++i) {
    if (atomic_load_explicit(&dw->slots[i].key, memory_order_relaxed) == key) {
      return &dw->slots[i];
    }
  }
  return NULL;
}

/* A free slot of `dev` for a new stream, or NULL when all are taken; under
   g_workspace_lock.  It stays free until slot_put gives it a key. */
static workspace_slot *claim_slot(CUdevice dev) {
  device_workspaces *dw = &g_workspaces[dev];
  const uint32_t used = atomic_load_explicit(&dw->used, memory_order_relaxed);
  for (uint32_t i = 0; i < used; ++i) {
    if (atomic_load_explicit(&dw->slots[i].key, memory_order_relaxed) == 0) {
      return &dw->slots[i];
    }
  }
  return used < KPACK_WORKSPACE_STREAMS ? &dw->slots[used] : NULL;
}

/* Fails with KPACK_ERROR_INTERNAL: `dev` has no free slot. */
static kpack_status fail_too_many_streams(const char *who, CUdevice dev) {
  return kpack_rt_fail(KPACK_ERROR_INTERNAL, 0,
                       "%s: device %d has scratch workspaces for %d streams already "
                       "(KPACK_WORKSPACE_STREAMS); release those of streams no longer used with "
                       "kpack_workspace_release",
                       who, (int)dev, KPACK_WORKSPACE_STREAMS);
}

/* ---- Sizes ------------------------------------------------------------------ */

/* Where scratch of `bytes` aligned to `align` starts inside *w, or 0 when
   it does not fit (or *w has no memory). */
static uint64_t fit(const workspace *w, uint64_t bytes, uint32_t align) {
  if (w->base == 0) {
    return 0;
  }
  const uint64_t start = (w->base + align - 1u) & ~(uint64_t)(align - 1u);
  const uint64_t skipped = start - w->base;
  return skipped <= w->bytes && bytes <= w->bytes - skipped ? start : 0;
}

/* The bytes a runtime workspace needs for scratch of `bytes` aligned to
   `align`: more than `bytes` only where the driver's own alignment may
   fall short. */
static uint64_t needed_bytes(uint64_t bytes, uint32_t align) {
  return bytes + (align > KPACK_DEVICE_ALLOC_ALIGN ? align - 1u : 0u);
}

/* The size the runtime allocates for `needed` bytes: the next power of
   two, at least 1 MiB.  `needed` is below 2^49, so this cannot overflow. */
static uint64_t rounded_size(uint64_t needed) {
  uint64_t size = KPACK_WORKSPACE_MIN_BYTES;
  while (size < needed) {
    size <<= 1;
  }
  return size;
}

/* ---- The driver calls ------------------------------------------------------ */

/*
 * Sets *capturing to whether `stream` is capturing a graph (cuStreamIsCapturing;
 * an invalidated capture counts).  Fails with KPACK_ERROR_DRIVER_TOO_OLD
 * without the entry point, or KPACK_ERROR_DRIVER naming the call.
 */
static kpack_status stream_capturing(const kpack_driver *d, const char *who, CUdevice dev,
                                     CUstream stream, int *capturing) {
  kpack_pfn_stream_is_capturing is_capturing = kpack_rt_stream_is_capturing(d);
  if (is_capturing == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_STREAM_IS_CAPTURING);
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = is_capturing(stream, &status);
  if (r != CUDA_SUCCESS) {
    return kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r,
                            "%s: cuStreamIsCapturing(stream 0x%" PRIxPTR ") on device %d", who,
                            (uintptr_t)stream, (int)dev);
  }
  *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
  return KPACK_SUCCESS;
}

/*
 * Frees the runtime workspace *w of `stream` in `slot` (cuMemFreeAsync on
 * the stream) and frees the slot, under g_workspace_lock, once the caller
 * has made sure that the stream is not capturing.  On failure the slot is
 * unchanged.
 */
static kpack_status free_buffer(const kpack_driver *d, const char *who, CUdevice dev,
                                CUstream stream, workspace_slot *slot, const workspace *w) {
  kpack_pfn_mem_free_async free_async = kpack_rt_mem_free_async(d);
  if (free_async == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_MEM_FREE_ASYNC);
  }
  CUresult r = free_async((CUdeviceptr)w->base, stream);
  if (r != CUDA_SUCCESS) {
    return kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r,
                            "%s: cuMemFreeAsync of the %" PRIu64 "-byte scratch workspace of "
                            "stream 0x%" PRIxPTR " on device %d",
                            who, w->bytes, (uintptr_t)stream, (int)dev);
  }
  slot_clear(dev, slot);
  atomic_fetch_sub_explicit(&g_runtime_bytes, w->bytes, memory_order_relaxed);
  atomic_fetch_sub_explicit(&g_runtime_workspaces, 1, memory_order_relaxed);
  return KPACK_SUCCESS;
}

/* Keeps *w, the runtime workspace of `slot`, on the retired list and frees
   the slot (its bytes stay counted in kpack_workspace_usage); 0 when the
   list entry cannot be allocated. */
static int retire(CUdevice dev, workspace_slot *slot, const workspace *w) {
  retired_buffer *r = malloc(sizeof *r);
  if (r == NULL) {
    return 0;
  }
  *r = (retired_buffer){g_retired, (int)dev, w->key, w->base, w->bytes};
  g_retired = r;
  slot_clear(dev, slot);
  atomic_fetch_sub_explicit(&g_runtime_workspaces, 1, memory_order_relaxed);
  return 1;
}

/* Frees the retired buffers of `stream` on `dev`, stream-ordered, under
   g_workspace_lock, once the caller has made sure that the stream is not
   capturing.  Stops at the first failure, keeping the rest. */
static kpack_status free_retired(const kpack_driver *d, const char *who, CUdevice dev, CUstream stream) {
  const uintptr_t key = stream_key(stream);
  for (retired_buffer **at = &g_retired; *at != NULL;) {
    retired_buffer *r = *at;
    if (r->dev != (int)dev || r->key != key) {
      at = &r->next;
      continue;
    }
    kpack_pfn_mem_free_async free_async = kpack_rt_mem_free_async(d);
    if (free_async == NULL) {
      return kpack_rt_fail_missing(KPACK_LAZY_MEM_FREE_ASYNC);
    }
    CUresult res = free_async((CUdeviceptr)r->base, stream);
    if (res != CUDA_SUCCESS) {
      return kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, res,
                              "%s: cuMemFreeAsync of the %" PRIu64 "-byte scratch workspace that stream "
                              "0x%" PRIxPTR " on device %d outgrew",
                              who, r->bytes, (uintptr_t)stream, (int)dev);
    }
    atomic_fetch_sub_explicit(&g_runtime_bytes, r->bytes, memory_order_relaxed);
    *at = r->next;
    free(r);
  }
  return KPACK_SUCCESS;
}

/* Whether `stream` has retired buffers on `dev`; under g_workspace_lock. */
static int has_retired(CUdevice dev, CUstream stream) {
  for (const retired_buffer *r = g_retired; r != NULL; r = r->next)
    if (r->dev == (int)dev && r->key == stream_key(stream)) return 1;
  return 0;
}

/*
 * free_buffer for kpack_workspace_set and kpack_workspace_release: refused
 * while the stream captures a graph, with KPACK_ERROR_INVALID_ARGUMENT
 * (the graph would free the buffer at each replay).
 */
static kpack_status free_workspace(const kpack_driver *d, const char *who, CUdevice dev,
                                   CUstream stream, workspace_slot *slot, const workspace *w) {
  int capturing = 0;
  kpack_status s = stream_capturing(d, who, dev, stream, &capturing);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  if (capturing) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: stream 0x%" PRIxPTR " on device %d is capturing a graph; free its "
                         "scratch workspace after the capture",
                         who, (uintptr_t)stream, (int)dev);
  }
  if ((s = free_retired(d, who, dev, stream)) != KPACK_SUCCESS) {
    return s;
  }
  return w->base != 0 ? free_buffer(d, who, dev, stream, slot, w) : KPACK_SUCCESS;
}

/*
 * Replaces the runtime workspace *w of `stream` (none when w->base is 0)
 * in `slot` with one of at least `needed` bytes, under g_workspace_lock:
 * refused while the stream captures (KPACK_ERROR_WORKSPACE_TOO_SMALL, the
 * detail naming `bytes`, what the launch asked for, and `needed`, what to
 * reserve), else the old buffer freed and the new one allocated, both
 * stream-ordered on `stream` (see "Growth").  On success *w is the new
 * workspace; when the allocation fails the slot is left free.
 */
static kpack_status grow_workspace(const kpack_driver *d, const char *who, CUdevice dev,
                                   CUstream stream, workspace_slot *slot, uint64_t bytes,
                                   uint64_t needed, workspace *w) {
  kpack_pfn_mem_alloc_async alloc_async = kpack_rt_mem_alloc_async(d);
  if (alloc_async == NULL) {
    return kpack_rt_fail_missing(KPACK_LAZY_MEM_ALLOC_ASYNC);
  }
  int capturing = 0;
  kpack_status s = stream_capturing(d, who, dev, stream, &capturing);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  if (capturing) {
    return kpack_rt_fail(KPACK_ERROR_WORKSPACE_TOO_SMALL, 0,
                         "%s: %" PRIu64 " bytes of scratch do not fit the workspace of stream "
                         "0x%" PRIxPTR " on device %d (%" PRIu64 " bytes), and the stream is "
                         "capturing a graph, where the workspace cannot grow; call "
                         "kpack_workspace_reserve(stream, %" PRIu64 ") before the capture",
                         who, bytes, (uintptr_t)stream, (int)dev, w->bytes, needed);
  }
  /* The old buffer is retired, not freed: a graph captured before may use
     it.  Without memory for the list entry, it is freed (stream-ordered). */
  if (w->base != 0 && !retire(dev, slot, w) && (s = free_buffer(d, who, dev, stream, slot, w)) != KPACK_SUCCESS) {
    return s;
  }
  const uint64_t size = rounded_size(needed);
  CUdeviceptr base = 0;
  CUresult r = alloc_async(&base, (size_t)size, stream);
  if (r != CUDA_SUCCESS) {
    s = kpack_rt_fail_cu(d, r == CUDA_ERROR_OUT_OF_MEMORY ? KPACK_ERROR_OUT_OF_MEMORY
                                                          : KPACK_ERROR_DRIVER,
                         r,
                         "%s: cuMemAllocAsync(%" PRIu64 " bytes) for the scratch workspace of "
                         "stream 0x%" PRIxPTR " on device %d",
                         who, size, (uintptr_t)stream, (int)dev);
    kpack_rt_append_memory_info(d, r, dev);
    return s;
  }
  const workspace grown = {stream_key(stream), (uint64_t)base, size, 0};
  slot_put(dev, slot, &grown);
  atomic_fetch_add_explicit(&g_runtime_bytes, size, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_runtime_workspaces, 1, memory_order_relaxed);
  *w = grown;
  return KPACK_SUCCESS;
}

/* Fails with KPACK_ERROR_WORKSPACE_TOO_SMALL: the caller's workspace *w
   has no room for `bytes` aligned to `align`. */
static kpack_status fail_caller_too_small(const char *who, CUdevice dev, CUstream stream,
                                          const workspace *w, uint64_t bytes, uint32_t align) {
  const uint64_t skipped = ((w->base + align - 1u) & ~(uint64_t)(align - 1u)) - w->base;
  if (skipped == 0) {
    return kpack_rt_fail(KPACK_ERROR_WORKSPACE_TOO_SMALL, 0,
                         "%s: needs %" PRIu64 " bytes of scratch; the caller's workspace for "
                         "stream 0x%" PRIxPTR " on device %d has %" PRIu64
                         " (kpack_workspace_set)",
                         who, bytes, (uintptr_t)stream, (int)dev, w->bytes);
  }
  return kpack_rt_fail(KPACK_ERROR_WORKSPACE_TOO_SMALL, 0,
                       "%s: needs %" PRIu64 " bytes of scratch aligned to %u; the caller's "
                       "workspace for stream 0x%" PRIxPTR " on device %d has %" PRIu64
                       ", of which the first %" PRIu64 " are skipped to align it "
                       "(kpack_workspace_set)",
                       who, bytes, align, (uintptr_t)stream, (int)dev, w->bytes, skipped);
}

/*
 * The slow path of kpack_scratch (and kpack_workspace_reserve, with
 * `reserving` and align 1): under g_workspace_lock, finds the workspace of
 * `stream` on `dev` again, and where it has no room for `bytes` aligned to
 * `align`, grows the runtime's (or refuses the caller's); *start gets
 * where the scratch starts.
 */
static kpack_status provide(const kpack_driver *d, const char *who, CUdevice dev, CUstream stream,
                            uint64_t bytes, uint32_t align, int reserving, uint64_t *start) {
  kpack_status s = KPACK_SUCCESS;
  *start = 0;
  pthread_mutex_lock(&g_workspace_lock);
  workspace_slot *slot = find_locked(dev, stream_key(stream));
  workspace w = {0, 0, 0, 0};
  if (slot != NULL) {
    w = slot_get(slot);
  }
  if (slot != NULL && w.callers && reserving) {
    s = kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                      "%s: stream 0x%" PRIxPTR " on device %d has the caller's workspace "
                      "(kpack_workspace_set); revert it with kpack_workspace_set(stream, NULL, 0) "
                      "first",
                      who, (uintptr_t)stream, (int)dev);
  } else if ((*start = fit(&w, bytes, align)) != 0) {
    /* Found, or grown by a racing thread: nothing to do. */
  } else if (slot != NULL && w.callers) {
    s = fail_caller_too_small(who, dev, stream, &w, bytes, align);
  } else if (slot == NULL && (slot = claim_slot(dev)) == NULL) {
    s = fail_too_many_streams(who, dev);
  } else if ((s = grow_workspace(d, who, dev, stream, slot, bytes, needed_bytes(bytes, align),
                                 &w)) == KPACK_SUCCESS &&
             (*start = fit(&w, bytes, align)) == 0) {
    /* Only if the driver broke its alignment promise. */
    s = kpack_rt_fail(KPACK_ERROR_INTERNAL, 0,
                      "%s: cuMemAllocAsync gave 0x%" PRIx64 ", which has no room for %" PRIu64
                      " bytes aligned to %u in %" PRIu64,
                      who, w.base, bytes, align, w.bytes);
  }
  pthread_mutex_unlock(&g_workspace_lock);
  return s;
}

/* ---- Entry points -------------------------------------------------------------- */

/* CU_STREAM_PER_THREAD is another stream on every thread that names it: it
   cannot key one workspace (the threads' kernels would share it while they
   run at once, and a growth would free it ordered on one thread's stream
   only). */
static kpack_status refuse_per_thread_stream(const char *who, kpack_stream stream) {
  if ((CUstream)stream != CU_STREAM_PER_THREAD) {
    return KPACK_SUCCESS;
  }
  return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                       "%s: the per-thread default stream (CU_STREAM_PER_THREAD, cudaStreamPerThread) is "
                       "another stream on every thread, so it cannot have a scratch workspace; launch "
                       "kernels that need scratch on a stream of your own",
                       who);
}

/* Fails with KPACK_ERROR_INVALID_ARGUMENT unless `align` is a power of two
   and `bytes` at most KPACK_SCRATCH_MAX_BYTES. */
static kpack_status check_size(const char *who, uint64_t bytes, uint32_t align) {
  if (align == 0 || (align & (align - 1u)) != 0) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: scratch alignment %u is not a power of two", who, align);
  }
  if (bytes > KPACK_SCRATCH_MAX_BYTES) {
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: %" PRIu64 " bytes of scratch is more than any device has (the "
                         "runtime's limit is 2^48)",
                         who, bytes);
  }
  return KPACK_SUCCESS;
}

/*
 * See kpack_internal.h.  Once the stream's workspace is big enough the path
 * is the device (the hint, or cuCtxGetDevice), find_fast and fit: atomic
 * loads, no lock, no driver call.
 */
kpack_status kpack_scratch(const char *who, kpack_stream stream, uint64_t bytes, uint32_t align,
                           void **ptr) {
  if (who == NULL) {
    who = "kpack_scratch";
  }
  if (ptr == NULL) {
    kpack_device_hint_clear();
    return kpack_rt_fail(KPACK_ERROR_INVALID_ARGUMENT, 0,
                         "%s: kpack_scratch needs a place for the pointer", who);
  }
  *ptr = NULL;
  if (bytes == 0) {
    return KPACK_SUCCESS;
  }
  kpack_status s = check_size(who, bytes, align);
  if (s == KPACK_SUCCESS) {
    s = refuse_per_thread_stream(who, stream);
  }
  if (s != KPACK_SUCCESS) {
    kpack_device_hint_clear();
    return s;
  }
  const kpack_driver *d = NULL;
  CUdevice dev = -1;
  if ((s = kpack_rt_driver_and_device(who, 1, &d, &dev)) != KPACK_SUCCESS) {
    return s; /* the hint, if any, is taken */
  }
  workspace w;
  uint64_t start = 0;
  if (!find_fast(dev, stream_key((CUstream)stream), &w) || (start = fit(&w, bytes, align)) == 0) {
    s = provide(d, who, dev, (CUstream)stream, bytes, align, 0, &start);
    if (s != KPACK_SUCCESS) {
      return s;
    }
  }
  *ptr = (void *)(uintptr_t)start;
  kpack_rt_set_device_hint(dev);
  return KPACK_SUCCESS;
}

/* See kpack.h. */
kpack_status kpack_workspace_reserve(kpack_stream stream, size_t bytes) {
  static const char who[] = "kpack_workspace_reserve";
  if (bytes == 0) {
    return KPACK_SUCCESS;
  }
  kpack_status s = check_size(who, (uint64_t)bytes, 1);
  if (s == KPACK_SUCCESS) {
    s = refuse_per_thread_stream(who, stream);
  }
  const kpack_driver *d = NULL;
  CUdevice dev = -1;
  if (s != KPACK_SUCCESS || (s = kpack_rt_driver_and_device(who, 0, &d, &dev)) != KPACK_SUCCESS) {
    return s;
  }
  uint64_t start = 0;
  return provide(d, who, dev, (CUstream)stream, (uint64_t)bytes, 1, 1, &start);
}

/* See kpack.h. */
kpack_status kpack_workspace_set(kpack_stream stream, void *ptr, size_t bytes) {
  static const char who[] = "kpack_workspace_set";
  const kpack_driver *d = NULL;
  CUdevice dev = -1;
  kpack_status s = refuse_per_thread_stream(who, stream);
  if (s != KPACK_SUCCESS || (s = kpack_rt_driver_and_device(who, 0, &d, &dev)) != KPACK_SUCCESS) {
    return s;
  }
  const int reverting = ptr == NULL || bytes == 0;
  pthread_mutex_lock(&g_workspace_lock);
  workspace_slot *slot = find_locked(dev, stream_key((CUstream)stream));
  workspace w = {0, 0, 0, 0};
  if (slot != NULL) {
    w = slot_get(slot);
  }
  if (reverting) {
    /* The runtime's workspace, if any, stays; the caller's is forgotten. */
    if (slot != NULL && w.callers) {
      slot_clear(dev, slot);
    }
  } else if (slot != NULL && !w.callers && w.base != 0 &&
             (s = free_workspace(d, who, dev, (CUstream)stream, slot, &w)) != KPACK_SUCCESS) {
    /* Refused: the runtime's workspace stays. */
  } else if (slot == NULL && (slot = claim_slot(dev)) == NULL) {
    s = fail_too_many_streams(who, dev);
  } else {
    const workspace given = {stream_key((CUstream)stream), (uint64_t)(uintptr_t)ptr,
                             (uint64_t)bytes, 1};
    slot_put(dev, slot, &given);
  }
  pthread_mutex_unlock(&g_workspace_lock);
  return s;
}

/* See kpack.h. */
kpack_status kpack_workspace_release(kpack_stream stream) {
  static const char who[] = "kpack_workspace_release";
  const kpack_driver *d = NULL;
  CUdevice dev = -1;
  kpack_status s = kpack_rt_driver_and_device(who, 0, &d, &dev);
  if (s != KPACK_SUCCESS) {
    return s;
  }
  pthread_mutex_lock(&g_workspace_lock);
  workspace_slot *slot = find_locked(dev, stream_key((CUstream)stream));
  const workspace w = slot != NULL ? slot_get(slot) : (workspace){0, 0, 0, 0};
  if (slot != NULL && !w.callers && w.base != 0) {
    s = free_workspace(d, who, dev, (CUstream)stream, slot, &w);
  } else {
    if (slot != NULL) {
      slot_clear(dev, slot);
    }
    if (has_retired(dev, (CUstream)stream)) {
      const workspace none = {0, 0, 0, 0};
      s = free_workspace(d, who, dev, (CUstream)stream, NULL, &none);
    }
  }
  pthread_mutex_unlock(&g_workspace_lock);
  return s;
}

/* See kpack.h. */
kpack_status kpack_workspace_usage(uint64_t *device_bytes, uint64_t *workspaces) {
  if (device_bytes != NULL) {
    *device_bytes = atomic_load_explicit(&g_runtime_bytes, memory_order_relaxed);
  }
  if (workspaces != NULL) {
    *workspaces = atomic_load_explicit(&g_runtime_workspaces, memory_order_relaxed);
  }
  return KPACK_SUCCESS;
}

/* See runtime_private.h.  cuMemFree, not cuMemFreeAsync: the streams may be
   destroyed by now; the caller has promised that nothing runs. */
kpack_status kpack_rt_workspaces_forget(const kpack_driver *d, int report) {
  kpack_status first = KPACK_SUCCESS;
  pthread_mutex_lock(&g_workspace_lock);
  kpack_pfn_mem_free mem_free = NULL;
  for (int dev = 0; dev < KPACK_MAX_DEVICES; ++dev) {
    device_workspaces *dw = &g_workspaces[dev];
    const uint32_t used = atomic_load_explicit(&dw->used, memory_order_relaxed);
    for (uint32_t i = 0; i < used; ++i) {
      const workspace w = slot_get(&dw->slots[i]);
      if (w.key != 0 && !w.callers && w.base != 0 && d != NULL) {
        if (mem_free == NULL && (mem_free = kpack_rt_mem_free(d)) == NULL) {
          /* The memory stays allocated in the driver; forgotten all the same. */
          if (first == KPACK_SUCCESS) {
            first = report ? kpack_rt_fail_missing(KPACK_LAZY_MEM_FREE)
                           : KPACK_ERROR_DRIVER_TOO_OLD;
          }
        } else if (mem_free != NULL) {
          CUresult r = mem_free((CUdeviceptr)w.base);
          if (r != CUDA_SUCCESS && first == KPACK_SUCCESS) {
            first = report ? kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, r,
                                              "kpack_unload_all: cuMemFree of the %" PRIu64
                                              "-byte scratch workspace of stream 0x%" PRIxPTR
                                              " on device %d",
                                              w.bytes, w.key - 1u, dev)
                           : KPACK_ERROR_DRIVER;
          }
        }
      }
      slot_zero(&dw->slots[i]);
    }
    atomic_store_explicit(&dw->used, 0, memory_order_relaxed);
  }
  while (g_retired != NULL) {
    retired_buffer *r = g_retired;
    if (d != NULL && (mem_free != NULL || (mem_free = kpack_rt_mem_free(d)) != NULL)) {
      CUresult res = mem_free((CUdeviceptr)r->base);
      if (res != CUDA_SUCCESS && first == KPACK_SUCCESS) {
        first = report ? kpack_rt_fail_cu(d, KPACK_ERROR_DRIVER, res,
                                          "kpack_unload_all: cuMemFree of the %" PRIu64
                                          "-byte scratch workspace that stream 0x%" PRIxPTR
                                          " on device %d outgrew",
                                          r->bytes, r->key - 1u, r->dev)
                       : KPACK_ERROR_DRIVER;
      }
    }
    g_retired = r->next;
    free(r);
  }
  atomic_store_explicit(&g_runtime_bytes, 0, memory_order_relaxed);
  atomic_store_explicit(&g_runtime_workspaces, 0, memory_order_relaxed);
  pthread_mutex_unlock(&g_workspace_lock);
  return first;
}
