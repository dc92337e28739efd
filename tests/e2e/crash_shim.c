/*
 * crash_shim.c - an LD_PRELOAD library for crash_safe.sh: kills the whole
 * process group with SIGKILL at an exact point of `kpack build`, so the
 * script can crash it during output writes, not just at a random moment.
 *
 *   KPACK_CRASH_AT=rename:N  just before the Nth rename() (a temporary file
 *                            is complete and about to become an output)
 *   KPACK_CRASH_AT=write:N   in the middle of the Nth write() to a regular
 *                            file: half the bytes are written, then SIGKILL
 *
 * Only processes named kpack count (the toolkit's processes inherit the
 * preload but are crashed by time in the script instead).  Each process
 * counts for itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_long g_renames, g_writes;

/* N when KPACK_CRASH_AT names `op` and this is kpack; else 0. */
static long crash_point(const char *op) {
  const char *at = getenv("KPACK_CRASH_AT");
  size_t len = strlen(op);
  if (at == NULL || strncmp(at, op, len) != 0 || at[len] != ':') return 0;
  if (strcmp(program_invocation_short_name, "kpack") != 0) return 0;
  return strtol(at + len + 1, NULL, 10);
}

static void crash(void) {
  kill(0, SIGKILL); /* the whole group: kpack and every tool it runs */
  _exit(137);       /* not reached */
}

int rename(const char *from, const char *to) {
  static int (*real)(const char *, const char *);
  if (real == NULL) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  long n = crash_point("rename");
  if (n > 0 && atomic_fetch_add(&g_renames, 1) + 1 == n) crash();
  return real(from, to);
}

ssize_t write(int fd, const void *buf, size_t count) {
  static ssize_t (*real)(int, const void *, size_t);
  if (real == NULL) real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  long n = crash_point("write");
  struct stat st;
  if (n > 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && atomic_fetch_add(&g_writes, 1) + 1 == n) {
    if (count > 1) real(fd, buf, count / 2); /* a torn file, if anything reads it */
    crash();
  }
  return real(fd, buf, count);
}
