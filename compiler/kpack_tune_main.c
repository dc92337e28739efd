/*
 * kpack_tune_main.c - the fixed main of a tuning harness (docs/tuning.md).
 *
 * Linked with the tables that `kpack build --tuner FILE.c` generates
 * (kpack_tune.h) and the package's static library, it times every built
 * candidate of every kernel with `tune:` at every shape of its grid and at
 * its probe shapes, on one GPU, and prints what it measured as JSON lines
 * for `kpack tune`:
 *
 *   tuner --list
 *     {"package":{"name":...,"kpack_version":...,"tune_abi":N}}
 *     {"kernel":{"name":...,"hash":...,"key":[...],"grid":[[...],...],
 *                "shapes":N,"probes":[[...],...],"probe_shapes":P,
 *                "unaligned":B,"tuned":[...],"combos":[...],
 *                "candidates":[...],"work":N}}      one per kernel
 *     {"done":{"kernels":N,"work":N}}
 *   tuner --run [--kernel NAME]... [--repeats N] [--device N]
 *     {"device":{"name":...,"ordinal":N,"sm":N,"driver":...,"l2_bytes":N,
 *                "num_sms":N,"free_bytes":N,"total_bytes":N,"repeats":N,
 *                "work":N}}
 *     {"progress":{"kernel":...,"combo":M,"shape":S,"variant":V}}
 *                                                  before each shape's variant
 *     {"result":{"kernel":...,"combo":M,"shape":S,"variant":V,"candidate":C,
 *                "us":T,"launches":L}}             one per measurement
 *     {"done":{"results":N}}
 *   and on any failure one {"error":"...","status":"KPACK_..."} line
 *   ("status" only for a kpack status), then exit status 1.
 *
 * Shapes S are the grid's (0 to shapes - 1), then the probes' (shapes to
 * shapes + probe_shapes - 1, row-major over "probes", the last key
 * fastest).  Variant V (kpack_tune.h) is 1 where a kernel with
 * "unaligned":true ran its unaligned variant, else 0.  Such a kernel (an
 * `aligned` test in its tables) is timed again at every shape whose as-is
 * launches ran the aligned variant: its unaligned twin (variant 1), each
 * `divisibility: auto` buffer passed one element past its allocation's
 * start, holding the same contents.  --eval times as-is only.
 *
 * A work item is one (kernel, combination, shape, variant, candidate) that
 * was built and is valid there.  Per shape: its buffers, sized by the count
 * expressions and filled per `fill:` from a deterministic generator, in
 * enough rotation sets that each launch reads memory not left in L2 by the
 * previous one (ceil(2 * L2 / footprint), 1 to 16); per candidate: warm-up
 * launches (the first loads the code), a launch timed alone and up to
 * three trial batches to size the batches, then `repeats` batches of
 * launches lasting >= 100 us each (at most 256 launches), all
 * queued behind a cuStreamWaitValue32 gate on host memory that opens once
 * the batch is queued (so the GPU never waits for the host between
 * launches), timed with CUDA events; the median of the batches' time per
 * launch.  Every shape's memory is checked against the device's free
 * memory before anything is timed.
 *
 * The driver is dlopen()ed (libcuda.so.1) for the few calls the harness
 * makes itself; cuda.h gives their types.  The hidden `--driver PATH` loads
 * another library instead, and points the kpack runtime at it too (the
 * tests' fake driver).  Only stdout is written.  C11.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpack_tune.h"

/* The runtime's test seam (kpack_internal.h), declared here so that the
   harness needs only the public headers. */
void kpack_set_driver_path_for_testing(const char *path);

#define MAX_KERNELS 4096     /* kernels a tuner serves */
#define MAX_SETS 16          /* rotation sets */
#define MAX_BATCH 256        /* launches queued behind the gate: well below
                                the driver's queue, which would block the
                                host (and the gate never open) when full */
#define BATCH_US 100.0       /* the least a timed batch lasts */
#define WARMUP_LAUNCHES 3
#define AUTO_CANDIDATE (-2)  /* --eval: the auto dispatcher, not a candidate */
#define FILL_CHUNK ((size_t)4 << 20)

/* ---- Output ------------------------------------------------------------ */

/* Writes `s` as a JSON string. */
static void put_json_string(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if (*p < 0x20) printf("\\u%04x", *p);
    else putchar(*p);
  }
  putchar('"');
}

static void put_json_strings(const char *const *items, int count) {
  putchar('[');
  for (int i = 0; i < count; ++i) {
    if (i) putchar(',');
    put_json_string(items[i]);
  }
  putchar(']');
}

/* Prints the error line and exits 1: nothing the harness measured counts
   once something failed.  `status` is a kpack status name or NULL. */
static _Noreturn void fail(const char *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static _Noreturn void fail(const char *status, const char *fmt, ...) {
  char text[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  printf("{\"error\":");
  put_json_string(text);
  if (status != NULL) {
    printf(",\"status\":");
    put_json_string(status);
  }
  printf("}\n");
  fflush(stdout);
  exit(1);
}

/* ---- The driver -------------------------------------------------------- */

/* The entry points the harness calls itself, by their versioned names. */
typedef struct driver {
  CUresult (*init)(unsigned);
  CUresult (*get_error_name)(CUresult, const char **);
  CUresult (*driver_get_version)(int *);
  CUresult (*device_get_count)(int *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*device_get_name)(char *, int, CUdevice);
  CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*mem_get_info)(size_t *, size_t *);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t);
  CUresult (*mem_host_alloc)(void **, size_t, unsigned);
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr *, void *, unsigned);
  CUresult (*stream_create)(CUstream *, unsigned);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*stream_wait_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  CUresult (*event_create)(CUevent *, unsigned);
  CUresult (*event_record)(CUevent, CUstream);
  CUresult (*event_synchronize)(CUevent);
  CUresult (*event_elapsed_time)(float *, CUevent, CUevent);
} driver;

static driver g_cu;
static const char *g_driver_path = "libcuda.so.1";

static const char *cu_name(CUresult r) {
  const char *name = NULL;
  if (g_cu.get_error_name == NULL || g_cu.get_error_name(r, &name) != CUDA_SUCCESS || name == NULL)
    return "CUDA_ERROR_UNKNOWN";
  return name;
}

/* Fails naming the call unless it succeeded. */
static void check_cu(CUresult r, const char *call) {
  if (r != CUDA_SUCCESS) fail(NULL, "%s failed: %s (%d)", call, cu_name(r), (int)r);
}

static void load_driver(void) {
  void *handle = dlopen(g_driver_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL)
    fail("KPACK_ERROR_DRIVER_NOT_FOUND", "cannot load the CUDA driver %s: %s", g_driver_path, dlerror());
  static const struct {
    const char *names[2]; /* the name to use, and the one of older drivers */
    size_t offset;
  } entries[] = {
      {{"cuInit", NULL}, offsetof(driver, init)},
      {{"cuGetErrorName", NULL}, offsetof(driver, get_error_name)},
      {{"cuDriverGetVersion", NULL}, offsetof(driver, driver_get_version)},
      {{"cuDeviceGetCount", NULL}, offsetof(driver, device_get_count)},
      {{"cuDeviceGet", NULL}, offsetof(driver, device_get)},
      {{"cuDeviceGetName", NULL}, offsetof(driver, device_get_name)},
      {{"cuDeviceGetAttribute", NULL}, offsetof(driver, device_get_attribute)},
      {{"cuDevicePrimaryCtxRetain", NULL}, offsetof(driver, primary_ctx_retain)},
      {{"cuCtxSetCurrent", NULL}, offsetof(driver, ctx_set_current)},
      {{"cuMemGetInfo_v2", NULL}, offsetof(driver, mem_get_info)},
      {{"cuMemAlloc_v2", NULL}, offsetof(driver, mem_alloc)},
      {{"cuMemFree_v2", NULL}, offsetof(driver, mem_free)},
      {{"cuMemcpyHtoD_v2", NULL}, offsetof(driver, memcpy_htod)},
      {{"cuMemHostAlloc", NULL}, offsetof(driver, mem_host_alloc)},
      {{"cuMemHostGetDevicePointer_v2", NULL}, offsetof(driver, mem_host_get_device_pointer)},
      {{"cuStreamCreate", NULL}, offsetof(driver, stream_create)},
      {{"cuStreamSynchronize", NULL}, offsetof(driver, stream_synchronize)},
      {{"cuStreamWaitValue32_v2", "cuStreamWaitValue32"}, offsetof(driver, stream_wait_value32)},
      {{"cuEventCreate", NULL}, offsetof(driver, event_create)},
      {{"cuEventRecord", NULL}, offsetof(driver, event_record)},
      {{"cuEventSynchronize", NULL}, offsetof(driver, event_synchronize)},
      {{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, offsetof(driver, event_elapsed_time)},
  };
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i) {
    void *sym = dlsym(handle, entries[i].names[0]);
    if (sym == NULL && entries[i].names[1] != NULL) sym = dlsym(handle, entries[i].names[1]);
    if (sym == NULL)
      fail("KPACK_ERROR_DRIVER_TOO_OLD", "%s has no %s: the NVIDIA driver is too old", g_driver_path,
           entries[i].names[0]);
    memcpy((char *)&g_cu + entries[i].offset, &sym, sizeof sym);
  }
}

/* ---- The device -------------------------------------------------------- */

typedef struct device {
  int ordinal;
  CUdevice dev;
  char name[256];
  char driver[128];
  int sm;
  int64_t attrs[KPACK_TUNE_DEVICE_COUNT];
  size_t free_bytes, total_bytes;
} device;

static int attribute(CUdevice dev, CUdevice_attribute a, const char *what) {
  int v = 0;
  CUresult r = g_cu.device_get_attribute(&v, a, dev);
  if (r != CUDA_SUCCESS) fail(NULL, "cuDeviceGetAttribute(%s) failed: %s (%d)", what, cu_name(r), (int)r);
  return v;
}

/* "580.159.04 (CUDA 13.0)": the kernel module's version when the system
   says (not under --driver: a test's fake is no module), and the CUDA
   version the driver supports. */
static void describe_driver(device *d, int read_proc) {
  int version = 0;
  check_cu(g_cu.driver_get_version(&version), "cuDriverGetVersion");
  char module[64] = "";
  FILE *f = read_proc ? fopen("/proc/driver/nvidia/version", "r") : NULL;
  if (f != NULL) {
    char line[512];
    /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ..." or
       "... Open Kernel Module for x86_64  580.159.04  ...": the first word
       after "Kernel Module" that starts with a digit. */
    const char *at = fgets(line, sizeof line, f) != NULL ? strstr(line, "Kernel Module") : NULL;
    for (int n = 0; at != NULL && sscanf(at, " %63s%n", module, &n) == 1; at += n) {
      if (module[0] >= '0' && module[0] <= '9' && strchr(module, '.') != NULL) break;
      module[0] = '\0';
    }
    fclose(f);
  }
  if (module[0] != '\0')
    snprintf(d->driver, sizeof d->driver, "%s (CUDA %d.%d)", module, version / 1000, version % 1000 / 10);
  else
    snprintf(d->driver, sizeof d->driver, "CUDA %d.%d", version / 1000, version % 1000 / 10);
}

static void open_device(device *d, int ordinal, int read_proc) {
  check_cu(g_cu.init(0), "cuInit(0)");
  int count = 0;
  check_cu(g_cu.device_get_count(&count), "cuDeviceGetCount");
  if (ordinal >= count)
    fail("KPACK_ERROR_NO_DEVICE", "--device %d: this machine has %d CUDA device%s", ordinal, count,
         count == 1 ? "" : "s");
  d->ordinal = ordinal;
  check_cu(g_cu.device_get(&d->dev, ordinal), "cuDeviceGet");
  check_cu(g_cu.device_get_name(d->name, (int)sizeof d->name, d->dev), "cuDeviceGetName");
  d->sm = 10 * attribute(d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR") +
          attribute(d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR");
  d->attrs[KPACK_TUNE_DEVICE_NUM_SMS] =
      attribute(d->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT");
  d->attrs[KPACK_TUNE_DEVICE_SM] = d->sm;
  d->attrs[KPACK_TUNE_DEVICE_MAX_SHARED_MEM] =
      attribute(d->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  d->attrs[KPACK_TUNE_DEVICE_L2_BYTES] = attribute(d->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE");
  describe_driver(d, read_proc);
  CUcontext ctx = NULL;
  check_cu(g_cu.primary_ctx_retain(&ctx, d->dev), "cuDevicePrimaryCtxRetain");
  check_cu(g_cu.ctx_set_current(ctx), "cuCtxSetCurrent");
  check_cu(g_cu.mem_get_info(&d->free_bytes, &d->total_bytes), "cuMemGetInfo");
}

/* ---- Work -------------------------------------------------------------- */

/* One (kernel, combination, shape): its params and buffers. */
typedef struct shape_work {
  const kpack_tune_kernel *k;
  int combo, shape;         /* shape: of the grid, then of the probes */
  int twin;                 /* the unaligned twin: twin_offset buffers one element off */
  int64_t key[16];
  int64_t *values;          /* [num_params] */
  kpack_tune_fill_at *fills; /* [num_buffers] */
  size_t *bytes;            /* [num_buffers]: allocation of one set */
  size_t footprint;         /* one set */
  int sets;
  int eval;                 /* --eval: an untuned shape, the auto dispatcher timed too */
} shape_work;

static int num_shapes(const kpack_tune_kernel *k) {
  int n = 1;
  for (int i = 0; i < k->num_keys; ++i) n *= k->grid_sizes[i];
  return n;
}

/* The probe shapes, numbered after the grid's. */
static int num_probes(const kpack_tune_kernel *k) {
  int n = 1;
  for (int i = 0; i < k->num_keys; ++i) n *= k->probe_sizes[i];
  return n;
}

/* The key values of shape s < num_shapes + num_probes: row-major over the
   grid, then over the probe values, the last key fastest. */
static void shape_key(const kpack_tune_kernel *k, int s, int64_t *key) {
  const int probe = s >= num_shapes(k);
  if (probe) s -= num_shapes(k);
  for (int i = k->num_keys; i-- > 0;) {
    const int size = probe ? k->probe_sizes[i] : k->grid_sizes[i];
    key[i] = (probe ? k->probes[i] : k->grid[i])[s % size];
    s /= size;
  }
}

/* Whether buffer b is passed one element off in the twin, and so sized
   for one element more. */
static int offset_buffer(const kpack_tune_kernel *k, int b) {
  return k->aligned != NULL && k->buffers[b].twin_offset;
}

static const kpack_dtype *elements_of(const shape_work *w) {
  return w->k->elements + (size_t)w->combo * (size_t)w->k->num_buffers;
}

static size_t element_size(kpack_dtype t) {
  switch ((int)t) {
  case KPACK_DTYPE_F64: case KPACK_DTYPE_I64: case KPACK_DTYPE_U64: return 8;
  case KPACK_DTYPE_F32: case KPACK_DTYPE_I32: case KPACK_DTYPE_U32: return 4;
  case KPACK_DTYPE_F16: case KPACK_DTYPE_BF16: case KPACK_DTYPE_I16: case KPACK_DTYPE_U16: return 2;
  default: return 1;
  }
}

static int is_float(kpack_dtype t) {
  return t == KPACK_DTYPE_F32 || t == KPACK_DTYPE_F16 || t == KPACK_DTYPE_BF16 || t == KPACK_DTYPE_F64;
}

/* "softmax T=f16 BLOCK=256 at rows=1 cols=128": what a message is about
   (no candidate: c < 0). */
static const char *where(const shape_work *w, int c) {
  static char text[1024];
  int n = snprintf(text, sizeof text, "%s", w->k->name);
  const char *combo = w->k->combos[w->combo];
  if (combo[0] != '\0') n += snprintf(text + n, sizeof text - (size_t)n, " %s", combo);
  if (c >= 0 && w->k->candidates[c][0] != '\0')
    n += snprintf(text + n, sizeof text - (size_t)n, " %s", w->k->candidates[c]);
  if (c == AUTO_CANDIDATE) n += snprintf(text + n, sizeof text - (size_t)n, " (auto dispatcher)");
  n += snprintf(text + n, sizeof text - (size_t)n, " at");
  for (int i = 0; i < w->k->num_keys && n < (int)sizeof text; ++i)
    n += snprintf(text + n, sizeof text - (size_t)n, " %s=%lld", w->k->key_names[i], (long long)w->key[i]);
  if (w->twin && n < (int)sizeof text) snprintf(text + n, sizeof text - (size_t)n, " (unaligned variant)");
  return text;
}

/* Fills w->values from w->key; exits on a failed expression. */
static void params_at_key(shape_work *w, const int64_t *device_attrs) {
  const kpack_tune_kernel *k = w->k;
  const char *what = "";
  if (k->params(w->combo, w->key, device_attrs, w->values, &what) != 0) fail(NULL, "%s: %s", where(w, -1), what);
}

/* Fills w->values (and key) for shape w->shape; exits on a failed expression. */
static void compute_params(shape_work *w, const int64_t *device_attrs) {
  const kpack_tune_kernel *k = w->k;
  shape_key(k, w->shape, w->key);
  const char *what = "";
  if (k->params(w->combo, w->key, device_attrs, w->values, &what) != 0) fail(NULL, "%s: %s", where(w, -1), what);
}

/* 1 when candidate c is built and valid at w's params (exits on failure). */
static int runs(const shape_work *w, int c, const int64_t *device_attrs) {
  const kpack_tune_kernel *k = w->k;
  if (!k->built[(size_t)w->combo * (size_t)k->num_candidates + (size_t)c]) return 0;
  const char *what = "";
  int ok = k->valid(w->combo, c, w->values, device_attrs, &what);
  if (ok < 0) fail(NULL, "%s: %s", where(w, c), what);
  return ok;
}

/* The buffers' sizes and the rotation sets, from the fill expressions. */
static void size_buffers(shape_work *w, const int64_t *device_attrs, int64_t l2_bytes) {
  const kpack_tune_kernel *k = w->k;
  const char *what = "";
  if (k->num_buffers > 0 && k->fills(w->combo, w->values, device_attrs, w->fills, &what) != 0)
    fail(NULL, "%s: %s", where(w, -1), what);
  w->footprint = 0;
  for (int b = 0; b < k->num_buffers; ++b) {
    size_t size = element_size(elements_of(w)[b]);
    if ((uint64_t)w->fills[b].count > (SIZE_MAX - 255) / size - 1)
      fail(NULL, "%s: buffer %s of %lld elements does not fit in memory", where(w, -1), k->buffers[b].param,
           (long long)w->fills[b].count);
    /* Never 0 bytes (a NULL pointer), and on the driver's alignment; one
       element more where the twin passes it one element off. */
    size_t bytes = ((size_t)w->fills[b].count + (size_t)offset_buffer(k, b)) * size;
    w->bytes[b] = bytes == 0 ? 256 : (bytes + 255) / 256 * 256;
    if (w->footprint > SIZE_MAX / MAX_SETS - w->bytes[b])
      fail(NULL, "%s: the buffers do not fit in memory", where(w, -1));
    w->footprint += w->bytes[b];
  }
  /* Each launch should find none of its data in L2: enough sets that the
     others' traffic evicts a set before its turn comes again. */
  uint64_t need = w->footprint == 0 ? 1 : ((uint64_t)(2 * l2_bytes) + w->footprint - 1) / w->footprint;
  w->sets = need < 1 ? 1 : need > MAX_SETS ? MAX_SETS : (int)need;
}

/* ---- Fills --------------------------------------------------------------- */

/* splitmix64's finalizer: element i of a buffer is a function of (seed,
   i) alone, so every run and every chunking fills the same bytes. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* FNV-1a of "kernel/buffer": each buffer its own stream. */
static uint64_t seed_of(const char *kernel, const char *buffer) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = kernel; *p; ++p) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  h = (h ^ '/') * 0x100000001b3ull;
  for (const char *p = buffer; *p; ++p) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return h;
}

/* Writes element i of a buffer of type t, `size` bytes, to out. */
static void element_at(kpack_dtype t, size_t size, kpack_tune_fill_kind kind, const kpack_tune_fill_at *f,
                       uint64_t seed, uint64_t i, unsigned char *out) {
  const uint64_t r = mix64(seed + (i + 1) * 0x9e3779b97f4a7c15ull);
  if (kind == KPACK_TUNE_FILL_DEFAULT) kind = is_float(t) ? KPACK_TUNE_FILL_RANDOM : KPACK_TUNE_FILL_ZERO;
  if (kind == KPACK_TUNE_FILL_RANDOM && is_float(t)) {
    /* Uniform in [-1, 1) on a grid every element type holds exactly. */
    if (t == KPACK_DTYPE_F64) {
      double v = (double)(r >> 11) * 0x1p-52 - 1.0;
      memcpy(out, &v, 8);
    } else if (t == KPACK_DTYPE_F32) {
      float v = (float)(r >> 40) * 0x1p-23f - 1.0f;
      memcpy(out, &v, 4);
    } else {
      uint16_t bits = t == KPACK_DTYPE_F16 ? kpack_tune_f16_bits((float)(r >> 53) * 0x1p-10f - 1.0f)
                                           : kpack_tune_bf16_bits((float)(r >> 56) * 0x1p-7f - 1.0f);
      memcpy(out, &bits, 2);
    }
    return;
  }
  uint64_t v = 0;
  switch (kind) {
  case KPACK_TUNE_FILL_RANDOM: v = t == KPACK_TUNE_BOOL ? (r & 1u) : r; break;
  case KPACK_TUNE_FILL_RANGE: v = (uint64_t)f->lo + r % ((uint64_t)f->hi - (uint64_t)f->lo); break;
  case KPACK_TUNE_FILL_VALUE: v = (uint64_t)f->value; break;
  case KPACK_TUNE_FILL_STEP: v = i * (uint64_t)f->value; break;
  default: break;
  }
  if (is_float(t)) { /* the reader refuses these fills for floats: kept exact anyway */
    double d = (double)(int64_t)v;
    if (t == KPACK_DTYPE_F64) memcpy(out, &d, 8);
    else if (t == KPACK_DTYPE_F32) { float x = (float)d; memcpy(out, &x, 4);
    } else {
      uint16_t b = t == KPACK_DTYPE_F16 ? kpack_tune_f16_bits((float)d) : kpack_tune_bf16_bits((float)d);
      memcpy(out, &b, 2);
    }
    return;
  }
  memcpy(out, &v, size); /* the low bytes: little-endian hosts */
}

/* Fills every buffer of every set, a chunk at a time; in the twin, element
   i of an offset buffer at position i + 1 (so the kernel, passed the
   buffer one element off, reads the same). */
static void fill_buffers(const shape_work *w, CUdeviceptr *const *set_ptrs, unsigned char *chunk) {
  const kpack_tune_kernel *k = w->k;
  for (int b = 0; b < k->num_buffers; ++b) {
    const kpack_dtype t = elements_of(w)[b];
    const size_t size = element_size(t);
    const kpack_tune_fill_at *f = &w->fills[b];
    if (k->buffers[b].fill == KPACK_TUNE_FILL_RANGE && f->hi <= f->lo)
      fail(NULL, "%s: the fill range [%lld, %lld) of buffer %s is empty", where(w, -1), (long long)f->lo,
           (long long)f->hi, k->buffers[b].param);
    const uint64_t seed = seed_of(k->name, k->buffers[b].param), per_chunk = FILL_CHUNK / size;
    const uint64_t at = w->twin && offset_buffer(k, b) ? 1 : 0;
    for (uint64_t first = 0; first < (uint64_t)f->count; first += per_chunk) {
      uint64_t n = (uint64_t)f->count - first < per_chunk ? (uint64_t)f->count - first : per_chunk;
      for (uint64_t j = 0; j < n; ++j) element_at(t, size, k->buffers[b].fill, f, seed, first + j, chunk + j * size);
      for (int s = 0; s < w->sets; ++s)
        check_cu(g_cu.memcpy_htod(set_ptrs[s][b] + (at + first) * size, chunk, n * size), "cuMemcpyHtoD");
    }
  }
}

/* ---- Timing -------------------------------------------------------------- */

typedef struct timer {
  CUstream stream;
  CUevent start, end;
  volatile uint32_t *gate; /* host memory the stream waits on */
  CUdeviceptr gate_dev;
  uint32_t gate_value;
  int use_gate;            /* 0 where the device has no stream memory ops */
  int repeats;
  const int64_t *device_attrs;
} timer;

static void open_gate(timer *t) {
  atomic_thread_fence(memory_order_seq_cst);
  *t->gate = t->gate_value;
  atomic_thread_fence(memory_order_seq_cst);
}

/* The pointers of one measurement: per rotation set, the kernel's params'
   slots (a buffer's device pointer, NULL for scalars). */
typedef struct rotation {
  void **ptrs[MAX_SETS];
  uint64_t turn; /* launches so far: the next uses set turn % sets */
} rotation;

static void launch_or_fail(const shape_work *w, int c, rotation *rot, timer *t) {
  void *const *ptrs = rot->ptrs[rot->turn++ % (uint64_t)w->sets];
  kpack_status st = c == AUTO_CANDIDATE ? w->k->launch_auto(w->combo, w->values, ptrs, t->stream)
                                        : w->k->launch(w->combo, c, w->values, ptrs, t->stream);
  if (st == KPACK_SUCCESS) return;
  open_gate(t);
  fail(kpack_status_name(st), "%s: %s%s() returned %s: %s", where(w, c), w->k->dispatcher,
       c == AUTO_CANDIDATE ? "_auto" : "", kpack_status_name(st), kpack_last_error_detail());
}

static void wait_device(const shape_work *w, int c, CUresult r, const char *call) {
  if (r != CUDA_SUCCESS)
    fail(NULL, "%s: the kernel failed on the device: %s: %s (%d)", where(w, c), call, cu_name(r), (int)r);
}

/* Microseconds per launch of a batch of `launches`, queued behind the gate
   when `gated`. */
static double time_batch(const shape_work *w, int c, rotation *rot, timer *t, int launches, int gated) {
  if (gated) {
    ++t->gate_value;
    CUresult r = g_cu.stream_wait_value32(t->stream, t->gate_dev, t->gate_value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_ERROR_NOT_SUPPORTED) {
      t->use_gate = gated = 0; /* no stream memory operations here: ungated batches */
    } else {
      check_cu(r, "cuStreamWaitValue32");
    }
  }
  check_cu(g_cu.event_record(t->start, t->stream), "cuEventRecord");
  for (int i = 0; i < launches; ++i) launch_or_fail(w, c, rot, t);
  check_cu(g_cu.event_record(t->end, t->stream), "cuEventRecord");
  if (gated) open_gate(t);
  wait_device(w, c, g_cu.event_synchronize(t->end), "cuEventSynchronize");
  float ms = 0;
  check_cu(g_cu.event_elapsed_time(&ms, t->start, t->end), "cuEventElapsedTime");
  return (double)ms * 1000.0 / launches;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Launches for a batch of >= BATCH_US, at `per_launch` us each (10% over,
   so that the batch does not fall short by a hair), more than `at_least`,
   at most MAX_BATCH. */
static int batch_size(double per_launch, int at_least) {
  if (!(per_launch > 0)) return MAX_BATCH;
  const double want = 1.1 * BATCH_US / per_launch + 1;
  if (want >= MAX_BATCH) return MAX_BATCH;
  return want > at_least ? (int)want : at_least;
}

/* The median time per launch of candidate c, in microseconds. */
static double measure(const shape_work *w, int c, rotation *rot, timer *t, int *launches_out) {
  for (int i = 0; i < WARMUP_LAUNCHES; ++i) launch_or_fail(w, c, rot, t);
  wait_device(w, c, g_cu.stream_synchronize(t->stream), "cuStreamSynchronize");
  /* A launch timed alone also times its own start on the device, so the
     first guess is short of 100 us: grow it by what a gated batch shows. */
  int launches = batch_size(time_batch(w, c, rot, t, 1, 0), 1);
  for (int round = 0; round < 3 && launches < MAX_BATCH; ++round) {
    const double per_launch = time_batch(w, c, rot, t, launches, t->use_gate);
    if (per_launch * launches >= BATCH_US) break;
    launches = batch_size(per_launch, launches);
  }
  double *samples = malloc(sizeof(double) * (size_t)t->repeats);
  if (samples == NULL) fail(NULL, "out of host memory");
  for (int r = 0; r < t->repeats; ++r) samples[r] = time_batch(w, c, rot, t, launches, t->use_gate);
  qsort(samples, (size_t)t->repeats, sizeof(double), by_value);
  const int n = t->repeats;
  double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  free(samples);
  *launches_out = launches;
  return median;
}

/* An --eval line: the key values spelled out (the shape is off the grid)
   and the candidate's label, or "auto" for the auto dispatcher. */
static void print_eval(const shape_work *w, int c, double us, int launches) {
  const kpack_tune_kernel *k = w->k;
  printf("{\"eval\":{\"kernel\":");
  put_json_string(k->name);
  printf(",\"combo\":");
  put_json_string(k->combos[w->combo]);
  printf(",\"key\":{");
  for (int i = 0; i < k->num_keys; ++i) {
    printf("%s", i ? "," : "");
    put_json_string(k->key_names[i]);
    printf(":%lld", (long long)w->key[i]);
  }
  printf("},\"candidate\":");
  put_json_string(c == AUTO_CANDIDATE ? "auto" : k->candidates[c]);
  printf(",\"us\":%.6g,\"launches\":%d}}\n", us, launches);
  fflush(stdout);
}

/* The progress line before timing w's shape in variant v. */
static void print_progress(const shape_work *w, int variant) {
  printf("{\"progress\":{\"kernel\":");
  put_json_string(w->k->name);
  printf(",\"combo\":%d,\"shape\":%d,\"variant\":%d}}\n", w->combo, w->shape, variant);
  fflush(stdout);
}

/* Times every candidate that runs at w (and under --eval the auto
   dispatcher) on rot's sets, printing a line each; returns the lines. */
static long long time_candidates(const shape_work *w, int variant, rotation *rot, timer *t) {
  const kpack_tune_kernel *k = w->k;
  long long results = 0;
  for (int c = w->eval ? AUTO_CANDIDATE : 0; c < k->num_candidates; ++c) {
    if (c < 0 ? c != AUTO_CANDIDATE : !runs(w, c, t->device_attrs)) continue;
    int launches = 0;
    double us = measure(w, c, rot, t, &launches);
    if (w->eval) {
      print_eval(w, c, us, launches);
    } else {
      printf("{\"result\":{\"kernel\":");
      put_json_string(k->name);
      printf(",\"combo\":%d,\"shape\":%d,\"variant\":%d,\"candidate\":%d,\"us\":%.6g,\"launches\":%d}}\n",
             w->combo, w->shape, variant, c, us, launches);
      fflush(stdout);
    }
    ++results;
  }
  return results;
}

/* The unaligned twin of w's shape: refills the buffers with the
   twin_offset ones one element off, checks that the launcher now runs its
   unaligned variant, and times every candidate again (variant 1). */
static long long time_twin(shape_work *w, CUdeviceptr *const *set_ptrs, rotation *rot, timer *t,
                           unsigned char *chunk) {
  const kpack_tune_kernel *k = w->k;
  w->twin = 1;
  for (int s = 0; s < w->sets; ++s) {
    for (int b = 0; b < k->num_buffers; ++b)
      if (offset_buffer(k, b))
        rot->ptrs[s][k->buffers[b].param_index] =
            (void *)(uintptr_t)(set_ptrs[s][b] + element_size(elements_of(w)[b]));
    if (k->aligned(w->values, rot->ptrs[s]) != 0)
      fail(NULL, "%s: the launcher's aligned test still passes with the divisibility: auto buffers one element "
           "off their allocations: no unaligned twin to time", where(w, -1));
  }
  fill_buffers(w, set_ptrs, chunk);
  print_progress(w, 1);
  const long long results = time_candidates(w, 1, rot, t);
  w->twin = 0;
  return results;
}

/* Allocates and fills w's sets, times every candidate that runs there as
   it is (and then its unaligned twin where the launcher ran the aligned
   variant; not under --eval), prints a line each, and frees the sets. */
static long long time_shape(shape_work *w, timer *t, unsigned char *chunk) {
  const kpack_tune_kernel *k = w->k;
  CUdeviceptr *set_ptrs[MAX_SETS];
  rotation rot = {{0}, 0};
  for (int s = 0; s < w->sets; ++s) {
    set_ptrs[s] = calloc((size_t)k->num_buffers + 1, sizeof(CUdeviceptr));
    rot.ptrs[s] = calloc((size_t)k->num_params + 1, sizeof(void *));
    if (set_ptrs[s] == NULL || rot.ptrs[s] == NULL) fail(NULL, "out of host memory");
    for (int b = 0; b < k->num_buffers; ++b) {
      CUresult r = g_cu.mem_alloc(&set_ptrs[s][b], w->bytes[b]);
      if (r != CUDA_SUCCESS)
        fail(NULL, "%s: cuMemAlloc of %zu bytes for buffer %s failed: %s (%d)", where(w, -1), w->bytes[b],
             k->buffers[b].param, cu_name(r), (int)r);
      rot.ptrs[s][k->buffers[b].param_index] = (void *)(uintptr_t)set_ptrs[s][b];
    }
  }
  w->twin = 0;
  fill_buffers(w, set_ptrs, chunk);
  /* The variant the launcher runs with these buffers. */
  const int variant = k->aligned != NULL && !k->aligned(w->values, rot.ptrs[0]);
  if (!w->eval) print_progress(w, variant);
  long long results = time_candidates(w, variant, &rot, t);
  if (!w->eval && k->aligned != NULL && variant == 0) results += time_twin(w, set_ptrs, &rot, t, chunk);
  for (int s = 0; s < w->sets; ++s) {
    for (int b = 0; b < k->num_buffers; ++b) check_cu(g_cu.mem_free(set_ptrs[s][b]), "cuMemFree");
    free(set_ptrs[s]);
    free(rot.ptrs[s]);
  }
  return results;
}

/* ---- --list and --run ------------------------------------------------------ */

static void init_work(shape_work *w, const kpack_tune_kernel *k) {
  memset(w, 0, sizeof *w);
  w->k = k;
  if (k->num_keys > (int)(sizeof w->key / sizeof w->key[0])) fail(NULL, "%s: too many key params", k->name);
  w->values = calloc((size_t)k->num_params + 1, sizeof(int64_t));
  w->fills = calloc((size_t)k->num_buffers + 1, sizeof(kpack_tune_fill_at));
  w->bytes = calloc((size_t)k->num_buffers + 1, sizeof(size_t));
  if (w->values == NULL || w->fills == NULL || w->bytes == NULL) fail(NULL, "out of host memory");
}

static void free_work(shape_work *w) {
  free(w->values);
  free(w->fills);
  free(w->bytes);
}

/* Whether --run times an unaligned twin at these params: where the
   launcher runs its aligned variant with every buffer as cuMemAlloc gives
   it (256-byte aligned). */
static int has_twin(const kpack_tune_kernel *k, const int64_t *values) {
  if (k->aligned == NULL) return 0;
  void **ptrs = calloc((size_t)k->num_params + 1, sizeof(void *));
  if (ptrs == NULL) fail(NULL, "out of host memory");
  for (int b = 0; b < k->num_buffers; ++b) ptrs[k->buffers[b].param_index] = (void *)(uintptr_t)(256 * (b + 1));
  const int twin = k->aligned(values, ptrs) != 0;
  free(ptrs);
  return twin;
}

/* The work items of k without a device (device attributes read 0): a
   failing expression counts its built candidates, which --run reports. */
static long long list_work(const kpack_tune_kernel *k) {
  static const int64_t no_device[KPACK_TUNE_DEVICE_COUNT];
  shape_work w;
  init_work(&w, k);
  long long work = 0;
  for (w.combo = 0; w.combo < k->num_combos; ++w.combo)
    for (w.shape = 0; w.shape < num_shapes(k) + num_probes(k); ++w.shape) {
      shape_key(k, w.shape, w.key);
      const char *what = "";
      const int params_ok = k->params(w.combo, w.key, no_device, w.values, &what) == 0;
      long long runnable = 0;
      for (int c = 0; c < k->num_candidates; ++c)
        if (k->built[(size_t)w.combo * (size_t)k->num_candidates + (size_t)c])
          runnable += !params_ok || k->valid(w.combo, c, w.values, no_device, &what) != 0;
      work += runnable * (params_ok && has_twin(k, w.values) ? 2 : 1);
    }
  free_work(&w);
  return work;
}

/* [[v,...],...]: per key, its grid's values or its probe values. */
static void put_axes(const kpack_tune_kernel *k, const int *sizes, const int64_t *const *axes) {
  putchar('[');
  for (int a = 0; a < k->num_keys; ++a) {
    printf("%s[", a ? "," : "");
    for (int v = 0; v < sizes[a]; ++v) printf("%s%lld", v ? "," : "", (long long)axes[a][v]);
    putchar(']');
  }
  putchar(']');
}

static void end_line(void) {
  putchar('\n');
  fflush(stdout);
}

static int list(const kpack_tune_package *pkg) {
  printf("{\"package\":{\"name\":");
  put_json_string(pkg->package);
  printf(",\"kpack_version\":");
  put_json_string(pkg->kpack_version);
  printf(",\"tune_abi\":%d}}", pkg->abi);
  end_line();
  long long total = 0;
  for (int i = 0; i < pkg->num_kernels; ++i) {
    const kpack_tune_kernel *k = &pkg->kernels[i];
    printf("{\"kernel\":{\"name\":");
    put_json_string(k->name);
    printf(",\"hash\":");
    put_json_string(k->manifest_hash);
    printf(",\"key\":");
    put_json_strings(k->key_names, k->num_keys);
    printf(",\"grid\":");
    put_axes(k, k->grid_sizes, k->grid);
    printf(",\"shapes\":%d,\"probes\":", num_shapes(k));
    put_axes(k, k->probe_sizes, k->probes);
    printf(",\"probe_shapes\":%d,\"unaligned\":%s,\"tuned\":", num_probes(k), k->aligned != NULL ? "true" : "false");
    put_json_strings(k->tuned, k->num_tuned);
    printf(",\"combos\":");
    put_json_strings(k->combos, k->num_combos);
    printf(",\"candidates\":");
    put_json_strings(k->candidates, k->num_candidates);
    const long long work = list_work(k);
    printf(",\"work\":%lld}}", work);
    end_line();
    total += work;
  }
  printf("{\"done\":{\"kernels\":%d,\"work\":%lld}}", pkg->num_kernels, total);
  end_line();
  return 0;
}

/* Visits every (kernel, combination, shape) of the selected kernels where
   some candidate runs, the grid's shapes and then the probes: checking
   memory (timer NULL) or timing.  Returns the work items (or results)
   seen, unaligned twins included. */
static long long each_shape(const kpack_tune_package *pkg, const int *selected, int num_selected, const device *d,
                            timer *t, unsigned char *chunk) {
  long long count = 0;
  for (int i = 0; i < num_selected; ++i) {
    const kpack_tune_kernel *k = &pkg->kernels[selected[i]];
    shape_work w;
    init_work(&w, k);
    for (w.combo = 0; w.combo < k->num_combos; ++w.combo)
      for (w.shape = 0; w.shape < num_shapes(k) + num_probes(k); ++w.shape) {
        compute_params(&w, d->attrs);
        int runnable = 0;
        for (int c = 0; c < k->num_candidates; ++c) runnable += runs(&w, c, d->attrs);
        if (runnable == 0) continue;
        size_buffers(&w, d->attrs, d->attrs[KPACK_TUNE_DEVICE_L2_BYTES]);
        const uint64_t need = (uint64_t)w.footprint * (uint64_t)w.sets;
        if (t == NULL && need > d->free_bytes)
          fail(NULL, "%s: its buffers need %llu bytes (%d rotation set%s of %llu) and device %d has %llu bytes free",
               where(&w, -1), (unsigned long long)need, w.sets, w.sets == 1 ? "" : "s",
               (unsigned long long)w.footprint, d->ordinal, (unsigned long long)d->free_bytes);
        if (t == NULL) {
          count += runnable * (has_twin(k, w.values) ? 2 : 1);
          continue;
        }
        count += time_shape(&w, t, chunk);
      }
    free_work(&w);
  }
  return count;
}

static void print_device(const device *d, long long work, int repeats) {
  printf("{\"device\":{\"name\":");
  put_json_string(d->name);
  printf(",\"ordinal\":%d,\"sm\":%d,\"driver\":", d->ordinal, d->sm);
  put_json_string(d->driver);
  printf(",\"l2_bytes\":%lld,\"num_sms\":%lld,\"free_bytes\":%llu,\"total_bytes\":%llu,\"repeats\":%d,\"work\":%lld}}",
         (long long)d->attrs[KPACK_TUNE_DEVICE_L2_BYTES], (long long)d->attrs[KPACK_TUNE_DEVICE_NUM_SMS],
         (unsigned long long)d->free_bytes, (unsigned long long)d->total_bytes, repeats, work);
  end_line();
}

static void make_timer(timer *t, const device *d, int repeats) {
  memset(t, 0, sizeof *t);
  t->repeats = repeats;
  t->device_attrs = d->attrs;
  check_cu(g_cu.stream_create(&t->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check_cu(g_cu.event_create(&t->start, CU_EVENT_DEFAULT), "cuEventCreate");
  check_cu(g_cu.event_create(&t->end, CU_EVENT_DEFAULT), "cuEventCreate");
  void *host = NULL;
  check_cu(g_cu.mem_host_alloc(&host, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
  check_cu(g_cu.mem_host_get_device_pointer(&t->gate_dev, host, 0), "cuMemHostGetDevicePointer");
  t->gate = host;
  *t->gate = 0;
  t->use_gate = 1;
}

static int run(const kpack_tune_package *pkg, const int *selected, int num_selected, int repeats, int ordinal,
               int read_proc) {
  load_driver();
  device d;
  memset(&d, 0, sizeof d);
  open_device(&d, ordinal, read_proc);
  /* Every shape's memory first: a grid that cannot fit fails now, not an
     hour into the run. */
  const long long work = each_shape(pkg, selected, num_selected, &d, NULL, NULL);
  print_device(&d, work, repeats);
  timer t;
  make_timer(&t, &d, repeats);
  unsigned char *chunk = malloc(FILL_CHUNK);
  if (chunk == NULL) fail(NULL, "out of host memory");
  const long long results = each_shape(pkg, selected, num_selected, &d, &t, chunk);
  free(chunk);
  printf("{\"done\":{\"results\":%lld}}", results);
  end_line();
  return 0;
}

/* ---- --eval: the auto dispatcher on shapes that were not tuned ------------- */

/* A deterministic uniform double in [0, 1) from the seed and a counter. */
static double uniform01(uint64_t seed, uint64_t n) {
  return (double)(mix64(seed * 0x9e3779b97f4a7c15ull + n) >> 11) * (1.0 / 9007199254740992.0);
}

/* w->key: each key log-uniform between its grid's first and last value,
   rounded (to a multiple of `multiple`, as engines' shapes often are, where
   that stays within the grid); a point of the grid itself is drawn again
   (it was tuned). */
static void untuned_key(shape_work *w, uint64_t seed, int64_t multiple, uint64_t *draws) {
  const kpack_tune_kernel *k = w->k;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    int on_grid = 1;
    for (int i = 0; i < k->num_keys; ++i) {
      const double lo = (double)k->grid[i][0], hi = (double)k->grid[i][k->grid_sizes[i] - 1];
      const double v = exp(log(lo) + (log(hi) - log(lo)) * uniform01(seed, (*draws)++));
      w->key[i] = (int64_t)llround(v);
      const int64_t rounded = (w->key[i] + multiple / 2) / multiple * multiple;
      if (rounded >= k->grid[i][0] && rounded <= k->grid[i][k->grid_sizes[i] - 1]) w->key[i] = rounded;
      int listed = 0;
      for (int g = 0; g < k->grid_sizes[i]; ++g) listed |= k->grid[i][g] == w->key[i];
      on_grid &= listed;
    }
    if (!on_grid) return;
  }
  fail(NULL, "%s: --eval found no shape off its grid", k->name);
}

/* Times every valid candidate and the auto dispatcher at `count` untuned
   shapes per (kernel, combination), printing "eval" lines. */
static int eval(const kpack_tune_package *pkg, const int *selected, int num_selected, int count, uint64_t seed,
                int64_t multiple, int repeats, int ordinal, int read_proc) {
  load_driver();
  device d;
  memset(&d, 0, sizeof d);
  open_device(&d, ordinal, read_proc);
  print_device(&d, 0, repeats);
  timer t;
  make_timer(&t, &d, repeats);
  unsigned char *chunk = malloc(FILL_CHUNK);
  if (chunk == NULL) fail(NULL, "out of host memory");
  long long results = 0;
  for (int i = 0; i < num_selected; ++i) {
    const kpack_tune_kernel *k = &pkg->kernels[selected[i]];
    shape_work w;
    init_work(&w, k);
    w.eval = 1;
    uint64_t draws = 0;
    for (w.combo = 0; w.combo < k->num_combos; ++w.combo)
      for (int e = 0; e < count; ++e) {
        untuned_key(&w, seed, multiple, &draws);
        params_at_key(&w, d.attrs);
        size_buffers(&w, d.attrs, d.attrs[KPACK_TUNE_DEVICE_L2_BYTES]);
        if ((uint64_t)w.footprint * (uint64_t)w.sets > d.free_bytes)
          fail(NULL, "%s: its buffers need more than the %llu bytes free", where(&w, -1),
               (unsigned long long)d.free_bytes);
        results += time_shape(&w, &t, chunk);
      }
    free_work(&w);
  }
  free(chunk);
  printf("{\"done\":{\"results\":%lld}}", results);
  end_line();
  return 0;
}

/* ---- main -------------------------------------------------------------------- */

static long parse_number(const char *option, const char *text, long lo, long hi) {
  char *end = NULL;
  long v = text != NULL ? strtol(text, &end, 10) : 0;
  if (text == NULL || *text == '\0' || *end != '\0' || v < lo || v > hi)
    fail(NULL, "%s takes a number from %ld to %ld", option, lo, hi);
  return v;
}

/* The index of kernel `name`, or fails listing the kernels there are. */
static int find_kernel(const kpack_tune_package *pkg, const char *name) {
  for (int i = 0; i < pkg->num_kernels; ++i)
    if (strcmp(pkg->kernels[i].name, name) == 0) return i;
  char names[1024] = "";
  for (int i = 0, n = 0; i < pkg->num_kernels && n < (int)sizeof names; ++i)
    n += snprintf(names + n, sizeof names - (size_t)n, "%s%s", i ? ", " : "", pkg->kernels[i].name);
  fail(NULL, "--kernel %s: this tuner has no kernel %s with a tune: section (it has: %s)", name, name,
       pkg->num_kernels ? names : "none");
}

/* The options, after the program's name, as both usage messages say. */
#define USAGE "--list | --run | --eval N [--seed S] [--eval-multiple M] [--kernel NAME]... [--repeats N] [--device N]"

int main(int argc, char **argv) {
  const kpack_tune_package *pkg = &kpack_tune_tables;
  if (pkg->abi != KPACK_TUNE_ABI)
    fail(NULL, "the tables are of tune ABI %d, this main of %d", pkg->abi, KPACK_TUNE_ABI);
  int mode = 0; /* 1: --list, 2: --run, 3: --eval */
  int repeats = 25, ordinal = 0, num_selected = 0, read_proc = 1, eval_count = 0;
  long seed = 1, multiple = 1;
  static int chosen[MAX_KERNELS], selected[MAX_KERNELS];
  if (pkg->num_kernels > MAX_KERNELS) fail(NULL, "more than %d kernels", MAX_KERNELS);
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--list") == 0 || strcmp(a, "--run") == 0) {
      mode = a[2] == 'l' ? 1 : 2;
    } else if (strcmp(a, "--eval") == 0) {
      mode = 3, eval_count = (int)parse_number(a, value, 1, 100000), ++i;
    } else if (strcmp(a, "--eval-multiple") == 0) {
      multiple = parse_number(a, value, 1, 1 << 20), ++i;
    } else if (strcmp(a, "--seed") == 0) {
      seed = parse_number(a, value, 0, 2147483647), ++i;
    } else if (strcmp(a, "--repeats") == 0) {
      repeats = (int)parse_number(a, value, 1, 100000), ++i;
    } else if (strcmp(a, "--device") == 0) {
      ordinal = (int)parse_number(a, value, 0, 1023), ++i;
    } else if (strcmp(a, "--kernel") == 0 && value != NULL) {
      chosen[find_kernel(pkg, value)] = 1, ++num_selected, ++i;
    } else if (strcmp(a, "--driver") == 0 && value != NULL) {
      g_driver_path = value, ++i;
      read_proc = 0;
      kpack_set_driver_path_for_testing(value); /* before any kpack call */
    } else {
      fail(NULL, "unknown argument '%s' (usage: %s " USAGE ")", a, argv[0]);
    }
  }
  if (mode == 0) fail(NULL, "usage: %s " USAGE, argv[0]);
  if (mode == 1) return list(pkg);
  const int all = num_selected == 0;
  num_selected = 0;
  for (int i = 0; i < pkg->num_kernels; ++i)
    if (all || chosen[i]) selected[num_selected++] = i;
  if (mode == 3)
    return eval(pkg, selected, num_selected, eval_count, (uint64_t)seed, multiple, repeats, ordinal, read_proc);
  return run(pkg, selected, num_selected, repeats, ordinal, read_proc);
}
