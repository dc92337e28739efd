/*
 * fake_cuda_tune.c - what a tuning harness (compiler/kpack_tune_main.c)
 * needs of the fake driver beyond what the runtime uses: devices and the
 * primary context, device memory, host memory the device can read, streams,
 * events, cuStreamWaitValue32 and the driver's version.  Part of
 * libfakecuda.so (tests/fake_cuda/meson.build).
 *
 * Time is modelled, not measured: each stream has a clock in microseconds
 * that every launch on it advances by
 *
 *     2 + 0.01 * (blocks in the grid) + 0.001 * (threads per block)
 *
 * and an event records its stream's clock, so cuEventElapsedTime gives the
 * modelled time of the launches between two events.  A test therefore
 * knows which candidate wins at each shape: for a grid of cdiv(n, B)
 * blocks of B threads, the B nearest sqrt(10 n).
 *
 * Device memory is not backed: cuMemAlloc hands out addresses of a range
 * no process maps, counts the bytes against the fake's free memory
 * (fake_cuda_set_mem_info) and refuses what does not fit with
 * CUDA_ERROR_OUT_OF_MEMORY; cuMemcpyHtoD checks that the destination lies
 * inside one live allocation, and fails with CUDA_ERROR_INVALID_VALUE
 * otherwise.
 *
 * cuStreamWaitValue32 cannot block a fake that runs everything at once;
 * instead it remembers the wait, and a cuEventSynchronize or
 * cuStreamSynchronize of that stream while the word is still below the
 * value fails with CUDA_ERROR_LAUNCH_TIMEOUT: on a GPU the host would wait
 * forever there.
 *
 * A harness is its own process, so a test configures the fake through the
 * environment, read on the first call of a function of this file
 * (cuDriverGetVersion, cuDeviceGetCount or cuDeviceGet, which the harness
 * calls right after cuInit):
 *   FAKE_CUDA_TUNE_FREE_BYTES=N   free device memory (total stays 16 GiB)
 *   FAKE_CUDA_TUNE_DEVICE_NAME=S  device 0's name
 *   FAKE_CUDA_TUNE_FAIL=FN:CODE:N after N successful launches, the next call
 *                                 of driver function FN (fake_cuda.h's
 *                                 fail_next names) returns CUresult CODE
 *   FAKE_CUDA_TUNE_DRIVER=V       cuDriverGetVersion's answer (13000)
 */
#define _POSIX_C_SOURCE 200809L

#include "fake_cuda.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* fake_cuda.c's control functions (fake_cuda.h documents them). */
void fake_cuda_set_mem_info(size_t free_bytes, size_t total_bytes);
void fake_cuda_set_current_device(int device);
void fake_cuda_set_launch_hook(void (*hook)(const fake_cuda_launch *launch));
int fake_cuda_fail_next(const char *function, int cu_result);
void fake_cuda_set_device_name(int device, const char *name);
void *fake_cuda_stream(int i);

static pthread_mutex_t g_tune_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- Configuration from the environment ------------------------------------ */

static int g_configured;
static unsigned long long g_launches;       /* successful launches seen */
static char g_fail_function[64];
static int g_fail_code;
static unsigned long long g_fail_after;     /* arm the failure after these launches */
static int g_fail_armed;

/* Stream clocks, in microseconds: index 0 the NULL stream, i + 1 fake stream i. */
static double g_clock[5];

static int clock_index(const void *stream) {
  for (int i = 0; i < 4; ++i)
    if (stream == fake_cuda_stream(i)) return i + 1;
  return 0;
}

/* The launch hook: advances the stream's clock by the cost model. */
static void on_launch(const fake_cuda_launch *l) {
  const double blocks = (double)l->grid[0] * l->grid[1] * l->grid[2];
  const double threads = (double)l->block[0] * l->block[1] * l->block[2];
  pthread_mutex_lock(&g_tune_lock);
  g_clock[clock_index(l->stream)] += 2.0 + 0.01 * blocks + 0.001 * threads;
  ++g_launches;
  const int arm = !g_fail_armed && g_fail_function[0] != '\0' && g_launches >= g_fail_after;
  if (arm) g_fail_armed = 1;
  pthread_mutex_unlock(&g_tune_lock);
  if (arm) fake_cuda_fail_next(g_fail_function, g_fail_code);
}

/* Reads the environment once, on the harness's main thread (the launch
   hook is per thread, and the harness launches from that thread). */
static void configure(void) {
  pthread_mutex_lock(&g_tune_lock);
  const int first = !g_configured;
  g_configured = 1;
  pthread_mutex_unlock(&g_tune_lock);
  if (!first) return;
  const char *free_bytes = getenv("FAKE_CUDA_TUNE_FREE_BYTES");
  if (free_bytes != NULL)
    fake_cuda_set_mem_info((size_t)strtoull(free_bytes, NULL, 10), (size_t)16 << 30);
  const char *name = getenv("FAKE_CUDA_TUNE_DEVICE_NAME");
  if (name != NULL) fake_cuda_set_device_name(0, name);
  const char *fail = getenv("FAKE_CUDA_TUNE_FAIL");
  if (fail != NULL &&
      sscanf(fail, "%63[^:]:%d:%llu", g_fail_function, &g_fail_code, &g_fail_after) != 3)
    g_fail_function[0] = '\0';
  if (g_fail_function[0] != '\0' && g_fail_after == 0) {
    g_fail_armed = 1;
    fake_cuda_fail_next(g_fail_function, g_fail_code);
  }
  fake_cuda_set_launch_hook(on_launch);
}

/* ---- Devices and contexts ------------------------------------------------------ */

/* Whether `ordinal` is a fake device: cuDeviceGetAttribute says. */
static CUresult probe_device(int ordinal) {
  int cc = 0;
  return cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ordinal);
}

EXPORT CUresult CUDAAPI cuDriverGetVersion(int *version) {
  configure();
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  const char *v = getenv("FAKE_CUDA_TUNE_DRIVER");
  *version = v != NULL ? atoi(v) : 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count) {
  configure();
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  int n = 0;
  CUresult r;
  while (n < FAKE_CUDA_MAX_DEVICES && (r = probe_device(n)) == CUDA_SUCCESS) ++n;
  if (n == 0 && r != CUDA_ERROR_INVALID_DEVICE) return r; /* not initialized */
  *count = n;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  configure();
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = probe_device(ordinal);
  if (r == CUDA_SUCCESS) *device = ordinal;
  return r;
}

/* A primary context is a byte of this array: its offset is the device. */
static char g_contexts[FAKE_CUDA_MAX_DEVICES];

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
  CUresult r = probe_device(device);
  if (r != CUDA_SUCCESS) return r;
  if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *ctx = (CUcontext)(void *)&g_contexts[device];
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) { return probe_device(device); }

/* Makes the context's device current on the calling thread (NULL: none). */
EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  const char *p = (const char *)(void *)ctx;
  if (p == NULL) {
    fake_cuda_set_current_device(-1);
    return CUDA_SUCCESS;
  }
  if (p < g_contexts || p >= g_contexts + FAKE_CUDA_MAX_DEVICES) return CUDA_ERROR_INVALID_CONTEXT;
  fake_cuda_set_current_device((int)(p - g_contexts));
  return CUDA_SUCCESS;
}

/* ---- Device memory ------------------------------------------------------------ */

/* cuMemAlloc and cuMemFree are fake_cuda.c's, which keeps the allocations
   (the runtime's scratch workspaces allocate there too). */
int fake_cuda_memory_is_live(CUdeviceptr dst, size_t bytes);

EXPORT CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  if (src == NULL) return CUDA_ERROR_INVALID_VALUE;
  return fake_cuda_memory_is_live(dst, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Host memory the device reads at the same address (unified addressing). */
EXPORT CUresult CUDAAPI cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags) {
  (void)flags;
  if (ptr == NULL) return CUDA_ERROR_INVALID_VALUE;
  *ptr = calloc(1, bytes == 0 ? 1 : bytes);
  return *ptr != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult CUDAAPI cuMemFreeHost(void *ptr) {
  free(ptr);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *host,
                                                  unsigned int flags) {
  if (dptr == NULL || host == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *dptr = (CUdeviceptr)(uintptr_t)host;
  return CUDA_SUCCESS;
}

/* ---- Streams, waits and events -------------------------------------------------- */

/* The last wait queued on each stream (clock index): the word and value. */
static const volatile uint32_t *g_wait_word[5];
static uint32_t g_wait_value[5];

static int valid_stream(CUstream s) { return s == NULL || clock_index(s) != 0; }

EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  if (stream == NULL) return CUDA_ERROR_INVALID_VALUE;
  *stream = (CUstream)fake_cuda_stream(1);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  return valid_stream(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult CUDAAPI cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                            unsigned int flags) {
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (addr == 0 || flags != CU_STREAM_WAIT_VALUE_GEQ) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_tune_lock);
  g_wait_word[clock_index(stream)] = (const volatile uint32_t *)(uintptr_t)addr;
  g_wait_value[clock_index(stream)] = value;
  pthread_mutex_unlock(&g_tune_lock);
  return CUDA_SUCCESS;
}

/* What a GPU would do on waiting for `stream`: hang while its gate is shut. */
static CUresult drain(CUstream stream) {
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_tune_lock);
  const int i = clock_index(stream);
  const int shut = g_wait_word[i] != NULL && *g_wait_word[i] < g_wait_value[i];
  pthread_mutex_unlock(&g_tune_lock);
  return shut ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream stream) { return drain(stream); }

typedef struct fake_event {
  int recorded;
  CUstream stream;
  double time; /* the stream's clock when recorded */
} fake_event;

EXPORT CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  (void)flags;
  if (event == NULL) return CUDA_ERROR_INVALID_VALUE;
  fake_event *e = calloc(1, sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *event = (CUevent)(void *)e;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventDestroy(CUevent event) {
  free((void *)event);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (!valid_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  fake_event *e = (fake_event *)(void *)event;
  pthread_mutex_lock(&g_tune_lock);
  e->recorded = 1;
  e->stream = stream;
  e->time = g_clock[clock_index(stream)];
  pthread_mutex_unlock(&g_tune_lock);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
  const fake_event *e = (const fake_event *)(void *)event;
  return e->recorded ? drain(e->stream) : CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  if (ms == NULL || start == NULL || end == NULL) return CUDA_ERROR_INVALID_VALUE;
  const fake_event *a = (const fake_event *)(void *)start, *b = (const fake_event *)(void *)end;
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)((b->time - a->time) / 1000.0);
  return CUDA_SUCCESS;
}
