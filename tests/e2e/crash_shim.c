/*
 * crash_shim.c - an LD_PRELOAD library for crash_safe.sh: SIGKILLs at an
 * exact point of `kpack build`, so the script can crash it during output
 * writes, not just at a random moment.
 *
 *   KPACK_CRASH_AT=rename:N   just before the Nth rename() (a temporary file
 *                             is complete and about to get its real name)
 *   KPACK_CRASH_AT=write:N    in the middle of the Nth write() to a regular
 *                             file: half the bytes are written, then SIGKILL
 *   KPACK_CRASH_COUNTER=FILE  an 8-byte file (zeros) that holds the count,
 *                             shared by every process of the build: `kpack
 *                             build` and each `kpack step` that Ninja runs
 *                             count together, so N runs over all of them
 *   KPACK_CRASH_WHO=any|COMMAND[:TEXT]
 *                             which kpack processes count: all (default),
 *                             or those running COMMAND (build, step) whose
 *                             command line holds TEXT (step:k_b1. counts
 *                             the steps of that unit and of its fatbin)
 *   KPACK_CRASH_KILL=session|self
 *                             session (default): every process of the
 *                             session (the script starts kpack with setsid):
 *                             kpack, Ninja, every step and every tool, as a
 *                             power loss or `kill -9` of the whole tree;
 *                             self: only the process at the point (a step
 *                             killed by the OOM killer; its build goes on)
 *
 * Only processes named kpack count (the toolkit's processes and Ninja inherit
 * the preload but are crashed by time in the script instead).  Ninja runs
 * each step in a process group of its own, so killing a process group would
 * not reach the build: the session is what holds them all.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The shared counter, mapped on first use; NULL when not configured. */
static long *counter(void) {
  static long *shared;
  static int tried;
  if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
    const char *path = getenv("KPACK_CRASH_COUNTER");
    long *p = NULL;
    int fd = path ? open(path, O_RDWR | O_CLOEXEC) : -1;
    if (fd >= 0) {
      void *m = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
      if (m != MAP_FAILED) p = m;
    }
    long *expected = NULL;
    if (!__atomic_compare_exchange_n(&shared, &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) && p)
      munmap(p, sizeof(long));
    __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(&shared, __ATOMIC_ACQUIRE);
}

/* Whether this process is the one KPACK_CRASH_WHO names: its arguments
 * (argv[1..], joined by spaces) start with COMMAND and hold TEXT. */
static int is_who(const char *who) {
  if (who == NULL || strcmp(who, "any") == 0) return 1;
  char args[4096] = {0};
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, args, sizeof args - 1) : -1;
  if (fd >= 0) close(fd);
  size_t first = n > 0 ? strlen(args) + 1 : 0; /* past argv[0] */
  if (first == 0 || first >= (size_t)n) return 0;
  for (ssize_t i = (ssize_t)first; i < n - 1; ++i)
    if (args[i] == '\0') args[i] = ' ';
  const char *rest = args + first;
  const char *colon = strchr(who, ':');
  size_t command = colon ? (size_t)(colon - who) : strlen(who);
  if (strncmp(rest, who, command) != 0 || (rest[command] != ' ' && rest[command] != '\0')) return 0;
  return colon == NULL || strstr(rest, colon + 1) != NULL;
}

/* N when KPACK_CRASH_AT names `op` and this process counts; else 0. */
static long crash_point(const char *op) {
  const char *at = getenv("KPACK_CRASH_AT");
  size_t len = strlen(op);
  if (at == NULL || strncmp(at, op, len) != 0 || at[len] != ':') return 0;
  if (strcmp(program_invocation_short_name, "kpack") != 0) return 0;
  if (!is_who(getenv("KPACK_CRASH_WHO"))) return 0;
  return strtol(at + len + 1, NULL, 10);
}

/* Whether this event is the Nth (counted over every process that shares
 * the counter, or within this process when there is none). */
static int is_nth(long n) {
  static long local;
  long *shared = counter();
  return __atomic_add_fetch(shared ? shared : &local, 1, __ATOMIC_SEQ_CST) == n;
}

/* SIGKILLs every other live process of this session, until none is left
 * (a process may fork while the first round runs), then this one. */
static void kill_session(void) {
  pid_t self = getpid(), sid = getsid(0);
  for (int round = 0; round < 2000; ++round) {
    int live = 0;
    DIR *proc = opendir("/proc");
    if (proc == NULL) break;
    for (struct dirent *e; (e = readdir(proc)) != NULL;) {
      pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
      if (pid <= 0 || pid == self) continue;
      char path[64], stat[512];
      snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t len = read(fd, stat, sizeof stat - 1);
      close(fd);
      if (len <= 0) continue;
      stat[len] = '\0';
      char *rest = strrchr(stat, ')'); /* the name may hold spaces and ')' */
      char state;
      int ppid, pgrp, session;
      if (rest == NULL || sscanf(rest + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4) continue;
      if (session != sid || state == 'Z' || state == 'X') continue;
      kill(pid, SIGKILL);
      ++live;
    }
    closedir(proc);
    if (live == 0) break;
    usleep(1000);
  }
}

static void crash(void) {
  const char *how = getenv("KPACK_CRASH_KILL");
  if (how == NULL || strcmp(how, "self") != 0) kill_session();
  kill(getpid(), SIGKILL);
  _exit(137); /* not reached */
}

int rename(const char *from, const char *to) {
  static int (*real)(const char *, const char *);
  if (real == NULL) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  long n = crash_point("rename");
  if (n > 0 && is_nth(n)) crash();
  return real(from, to);
}

ssize_t write(int fd, const void *buf, size_t count) {
  static ssize_t (*real)(int, const void *, size_t);
  if (real == NULL) real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  long n = crash_point("write");
  struct stat st;
  if (n > 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && is_nth(n)) {
    if (count > 1) real(fd, buf, count / 2); /* a torn file, if anything reads it */
    crash();
  }
  return real(fd, buf, count);
}
