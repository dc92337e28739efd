/*
 * errors.h - the runtime's private error helpers: the calling thread's last
 * CUresult and detail text.  Not installed; only the runtime sources include it.
 */
#ifndef KPACK_RUNTIME_ERRORS_H
#define KPACK_RUNTIME_ERRORS_H

#include "kpack.h"

#include <stdarg.h>

/* Marks a printf-style function so the compiler checks its format strings:
   argument `fmt` is the format, variadic arguments start at `first`. */
#if defined(__GNUC__)
#define KPACK_RT_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define KPACK_RT_PRINTF(fmt, first)
#endif

/* Size of the thread-local detail buffer, NUL included.  Longer details are
   truncated (the text then ends in "...").  */
#define KPACK_RT_DETAIL_SIZE 1024

/*
 * Records a failure on the calling thread: `cu_result` (0 when the failure
 * did not come from a driver call) and the printf-style detail.  Returns
 * `status`, so that callers can `return kpack_rt_fail(...)`.  Formats into
 * thread-local storage; never allocates.
 */
kpack_status kpack_rt_fail(kpack_status status, int cu_result, const char *fmt, ...)
    KPACK_RT_PRINTF(3, 4);

/* As kpack_rt_fail(), with a va_list. */
kpack_status kpack_rt_vfail(kpack_status status, int cu_result, const char *fmt, va_list ap);

/*
 * Appends printf-style text to the thread's detail, after whatever the last
 * kpack_rt_fail() wrote.  For details assembled in pieces (lists of values)
 * without a scratch buffer.  Truncates like kpack_rt_fail().
 */
void kpack_rt_append_detail(const char *fmt, ...) KPACK_RT_PRINTF(1, 2);

#endif /* KPACK_RUNTIME_ERRORS_H */
