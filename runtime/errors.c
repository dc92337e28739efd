/*
 * errors.c - status names and messages, and the calling thread's last
 * failure (CUresult and detail text).
 *
 * The failure state is thread-local so that concurrent launches on different
 * threads never see each other's errors and no lock is needed.  The detail is
 * a fixed buffer formatted with vsnprintf: reporting an error never
 * allocates, so it also works when the process is out of host memory.
 */
#include "errors.h"

#include "kpack_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The calling thread's last failure.  See kpack_last_cu_result() and
   kpack_last_error_detail() for their meaning. */
static _Thread_local int tl_cu_result;
static _Thread_local char tl_detail[KPACK_RT_DETAIL_SIZE];
static _Thread_local size_t tl_detail_len;

/* Names and one-sentence messages, indexed by the pinned status values. */
static const char *const k_status_names[KPACK_STATUS_COUNT] = {
    "KPACK_SUCCESS",
    "KPACK_ERROR_INVALID_ARGUMENT",
    "KPACK_ERROR_DRIVER_NOT_FOUND",
    "KPACK_ERROR_DRIVER_TOO_OLD",
    "KPACK_ERROR_NO_DEVICE",
    "KPACK_ERROR_NO_CONTEXT",
    "KPACK_ERROR_NO_BINARY_FOR_DEVICE",
    "KPACK_ERROR_NO_SPECIALIZATION",
    "KPACK_ERROR_OUT_OF_MEMORY",
    "KPACK_ERROR_LOAD_FAILED",
    "KPACK_ERROR_LAUNCH_FAILED",
    "KPACK_ERROR_ABI_MISMATCH",
    "KPACK_ERROR_DRIVER",
    "KPACK_ERROR_INTERNAL",
    "KPACK_ERROR_WORKSPACE_TOO_SMALL",
};

static const char *const k_status_messages[KPACK_STATUS_COUNT] = {
    "Success.",
    "An argument was invalid.",
    "The NVIDIA driver (libcuda.so.1) could not be loaded.",
    "The NVIDIA driver is too old: kpack needs a driver for CUDA 12.0 or newer.",
    "CUDA could not be initialized or found no device.",
    "The calling thread has no current CUDA context.",
    "The library has no machine code that runs on the current device.",
    "No specialization was built for the requested constexpr values.",
    "The device ran out of memory while loading a kernel or allocating scratch memory.",
    "The driver could not load a kernel.",
    "The driver rejected the kernel launch.",
    "The generated launchers were built for a different kpack runtime ABI.",
    "A CUDA driver call failed.",
    "Internal error in the kpack runtime.",
    "The scratch workspace of the stream is too small for the launch and cannot grow.",
};

/* Each table must have exactly one entry per status. */
_Static_assert(sizeof k_status_names / sizeof k_status_names[0] == KPACK_STATUS_COUNT,
               "one name per status");
_Static_assert(sizeof k_status_messages / sizeof k_status_messages[0] == KPACK_STATUS_COUNT,
               "one message per status");
_Static_assert(KPACK_ERROR_WORKSPACE_TOO_SMALL == KPACK_STATUS_COUNT - 1, "status count");

/* Returns whether `status` is one of the pinned values. */
static int status_is_known(kpack_status status) {
  return (int)status >= 0 && (int)status < KPACK_STATUS_COUNT;
}

/* See kpack.h. */
const char *kpack_status_name(kpack_status status) {
  return status_is_known(status) ? k_status_names[status] : "KPACK_STATUS_UNKNOWN";
}

/* See kpack.h. */
const char *kpack_status_message(kpack_status status) {
  return status_is_known(status) ? k_status_messages[status] : "Unknown kpack status code.";
}

/* See kpack.h. */
int kpack_last_cu_result(void) { return tl_cu_result; }

/* See kpack.h.  Empty until the thread's first failure (zero-initialized). */
const char *kpack_last_error_detail(void) { return tl_detail; }

/*
 * Marks the detail as truncated by ending it in "...".  Called when the text
 * did not fit: a clipped message that looks complete would mislead.
 */
static void mark_truncated(void) {
  static const char dots[] = "...";
  memcpy(tl_detail + KPACK_RT_DETAIL_SIZE - sizeof dots, dots, sizeof dots);
  tl_detail_len = KPACK_RT_DETAIL_SIZE - 1;
}

/*
 * Appends formatted text at tl_detail_len, keeping the buffer NUL-terminated
 * and tl_detail_len equal to its strlen.
 */
static void detail_vappend(const char *fmt, va_list ap) {
  size_t room = KPACK_RT_DETAIL_SIZE - tl_detail_len;
  if (room <= 1) {
    return; /* already full (and marked) */
  }
  int n = vsnprintf(tl_detail + tl_detail_len, room, fmt, ap);
  if (n < 0) {
    tl_detail[tl_detail_len] = '\0'; /* encoding error: keep what we had */
    return;
  }
  if ((size_t)n >= room) {
    mark_truncated();
    return;
  }
  tl_detail_len += (size_t)n;
}

/* See errors.h. */
void kpack_rt_append_detail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  detail_vappend(fmt, ap);
  va_end(ap);
}

/* See errors.h. */
kpack_status kpack_rt_vfail(kpack_status status, int cu_result, const char *fmt, va_list ap) {
  tl_cu_result = cu_result;
  tl_detail_len = 0;
  tl_detail[0] = '\0';
  detail_vappend(fmt, ap);
  return status;
}

/* See errors.h. */
kpack_status kpack_rt_fail(kpack_status status, int cu_result, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kpack_rt_vfail(status, cu_result, fmt, ap);
  va_end(ap);
  return status;
}

/* ---- Entry points for generated code (kpack_internal.h) ----------------- */

/* See kpack_internal.h.  Not a driver failure, so the CUresult is 0. */
kpack_status kpack_fail(kpack_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kpack_rt_vfail(status, 0, fmt ? fmt : "", ap);
  va_end(ap);
  return status;
}

/* Appends " NAME=value" for one constexpr, spelled as in the manifest. */
static void append_constexpr(const char *name, int kind, int64_t value) {
  const char *shown = name ? name : "?";
  switch (kind) {
  case KPACK_CONSTEXPR_BOOL:
    kpack_rt_append_detail(" %s=%s", shown, value ? "true" : "false");
    break;
  case KPACK_CONSTEXPR_DTYPE:
    kpack_rt_append_detail(" %s=%s", shown, kpack_dtype_name((kpack_dtype)value));
    break;
  case KPACK_CONSTEXPR_FLOAT: {
    /* The double's bits (kpack_internal.h); %.17g reads back the same. */
    double d;
    memcpy(&d, &value, sizeof d);
    kpack_rt_append_detail(" %s=%.17g", shown, d);
    break;
  }
  case KPACK_CONSTEXPR_STR: {
    const char *text = (const char *)(intptr_t)value;
    kpack_rt_append_detail(" %s=%s", shown, text != NULL ? text : "(null)");
    break;
  }
  default: /* KPACK_CONSTEXPR_INT, and anything unknown shown as a number */
    kpack_rt_append_detail(" %s=%" PRId64, shown, value);
    break;
  }
}

/* See kpack_internal.h.  Built piece by piece in the thread's detail
   buffer, so no scratch memory is needed whatever the number of values. */
kpack_status kpack_fail_no_specialization(const char *kernel, const char *built,
                                          int count, const char *const *names,
                                          const int *kinds, const int64_t *values) {
  kpack_rt_fail(KPACK_ERROR_NO_SPECIALIZATION, 0, "%s: no specialization",
                kernel ? kernel : "?");
  if (names != NULL && kinds != NULL && values != NULL) {
    for (int i = 0; i < count; ++i) {
      append_constexpr(names[i], kinds[i], values[i]);
    }
  }
  kpack_rt_append_detail("; built: %s", built ? built : "");
  return KPACK_ERROR_NO_SPECIALIZATION;
}
