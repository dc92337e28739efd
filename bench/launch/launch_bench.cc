// launch_bench.cc - kpack_launch_bench: what a launch through kpack costs on
// the host, what the first launch costs in a fresh process, and how much
// device memory lazy loading takes.  See README.md in this directory for the
// modes, the JSON lines each prints and how to run them.
//
// Every CUDA, driver and kpack call is checked; a failure prints one line
// starting "kpack_launch_bench: error:" on stderr and exits 1.  No CUDA
// device: exit 77, as the tests do.  A watchdog (--timeout) ends a process
// that hangs with exit 124.  stdout carries only JSON lines, one per
// measurement; notes go to stderr.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "chevrons.h"
#include "kernels.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kProg = "kpack_launch_bench";

// The specialization every launch-cost and cold measurement uses, its
// symbol in the cubins (compiler/plan.cc: kpack_<prefix>_<specialization>)
// and the file the build writes it to under kernels.kpack/fatbins/.
constexpr const char* kSpec = "vector_add_f32_b128";
constexpr const char* kEntry = "kpack_kernels_vector_add_f32_b128";
constexpr int64_t kN = 4096;  // 4 blocks of 128 threads: a few microseconds of GPU time

// Exit statuses besides 0 and 1.
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 77;  // Meson's "skipped", as tests/gpu uses
constexpr int kExitTimeout = 124;  // what timeout(1) returns

// ---- Options and messages ---------------------------------------------------

struct Options {
  int rounds = 1000;     // measured rounds of --launch (each: one batch per variant)
  int warmup_rounds = 20;
  int batch = 256;       // launches per timed batch
  // Fresh processes per cold variant (kpack, raw, <<<>>>) in --all, and for
  // the two kpack diagnostics (spread over those runs).  Each costs about
  // 0.33 s (an H200, 2026-11-22: mostly creating the context), so these
  // 124 keep --all near 47 s; the median ratio's 95% interval is about
  // +-0.06 at 36 pairs, against +-0.08 at the 20 of before.
  int cold_runs = 36;
  int cold_diag_runs = 8;
  int timeout_s = 0;     // 0: the mode's default
  bool quiet = false;    // no notes on stderr (errors are always printed)
};
Options g_opt;
const char* g_argv0 = kProg;

void note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void note(const char* fmt, ...) {
  if (g_opt.quiet) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
}

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void fatal(const char* fmt, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: ", kProg);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::exit(1);
}

std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

// ---- Watchdog ---------------------------------------------------------------

// The child being waited for, killed when the watchdog fires so that nothing
// this process started outlives it.
volatile sig_atomic_t g_child_pid = 0;

// Async-signal-safe: kill, write and _exit only.
void on_alarm(int) {
  const pid_t child = static_cast<pid_t>(g_child_pid);
  if (child > 0) kill(child, SIGKILL);
  static const char msg[] =
      "kpack_launch_bench: error: timed out (see --timeout): a CUDA call or a child process "
      "hung\n";
  const ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
  _exit(kExitTimeout);
}

// A hung driver call or child must not hang the benchmark run: after
// `seconds` (or --timeout) the process exits with kExitTimeout.  The alarm
// is per process; children arm their own.
void arm_watchdog(int seconds) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGALRM, &sa, nullptr) != 0) fatal("sigaction(SIGALRM): %s", std::strerror(errno));
  alarm(static_cast<unsigned>(g_opt.timeout_s > 0 ? g_opt.timeout_s : seconds));
}

// ---- JSON lines -------------------------------------------------------------

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += strf("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Integral values (byte counts) are printed exactly; others with 10
// significant digits.  JSON has no NaN or infinity: such a value is a bug
// here, printed as null with a note so the line still parses.
std::string number(double v) {
  if (!std::isfinite(v)) {
    std::fprintf(stderr, "%s: warning: a non-finite value is printed as null\n", kProg);
    return "null";
  }
  if (v == std::floor(v) && std::fabs(v) < 9e15) return strf("%.0f", v);
  return strf("%.10g", v);
}

// One measurement: {"section": ..., "name": ..., "value": ..., "unit": ..., extras}.
class Json {
 public:
  Json(const char* section, const std::string& name, double value, const char* unit)
      : line_("{\"section\": " + quote(section) + ", \"name\": " + quote(name) +
              ", \"value\": " + number(value) + ", \"unit\": " + quote(unit)) {}
  Json& add(const char* key, double v) {
    line_ += ", " + quote(key) + ": " + number(v);
    return *this;
  }
  Json& add(const char* key, const std::string& v) {
    line_ += ", " + quote(key) + ": " + quote(v);
    return *this;
  }
  // Flushed at once: children share stdout with their parent.
  void emit() {
    std::printf("%s}\n", line_.c_str());
    std::fflush(stdout);
  }

 private:
  std::string line_;
};

// ---- Statistics -------------------------------------------------------------

struct Stats {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0, mean = 0;
  size_t count = 0;
};

// Linear interpolation between order statistics (numpy's default).
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) fatal("internal: statistics of no samples");
  std::sort(v.begin(), v.end());
  s.count = v.size();
  s.median = quantile(v, 0.5);
  s.p10 = quantile(v, 0.1);
  s.p90 = quantile(v, 0.9);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (const double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

Json& add_spread(Json& j, const Stats& s) {
  return j.add("p10", s.p10).add("p90", s.p90).add("min", s.min).add("max", s.max).add("mean", s.mean);
}

// op(a[i], b[i]) for each round i: samples taken in the same round are
// paired, which cancels drift that moves both (clock, temperature, other
// load).  A NaN marks a round that did not run a variant; such rounds are
// skipped.
template <typename Op>
std::vector<double> paired_values(const std::vector<double>& a, const std::vector<double>& b, Op op) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isnan(a[i]) && !std::isnan(b[i])) r.push_back(op(a[i], b[i]));
  }
  return r;
}

// Statistics of paired_values(a, b, op).
template <typename Op>
Stats paired(const std::vector<double>& a, const std::vector<double>& b, Op op) {
  return stats_of(paired_values(a, b, op));
}

// A distribution-free 95% confidence interval for the median of `v`: the
// order statistics at ranks n/2 -+ 1.96 sqrt(n)/2 (normal approximation to
// the binomial; conservative by rounding outwards).  It narrows as
// 1/sqrt(n), unlike p10..p90, which describe single runs and stay as wide
// however many runs there are.
std::pair<double, double> median_ci95(std::vector<double> v) {
  if (v.empty()) fatal("internal: confidence interval of no samples");
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const double half = 1.96 * std::sqrt(n) / 2;
  // 1-based ranks floor(n/2 - half) and n + 1 - that, as indices.
  const long lo = std::max(0L, static_cast<long>(std::floor(n / 2 - half)) - 1);
  const long hi = std::min(static_cast<long>(v.size()) - 1, static_cast<long>(v.size()) - 1 - lo);
  return {v[static_cast<size_t>(lo)], v[static_cast<size_t>(hi)]};
}

// The samples of `v` that are not NaN.
std::vector<double> present(const std::vector<double>& v) {
  std::vector<double> out;
  for (const double x : v) {
    if (!std::isnan(x)) out.push_back(x);
  }
  return out;
}

// ---- The CUDA driver, for the raw variant and memory queries ---------------------

// Entry points this program calls directly.  libcuda.so.1 is dlopen()ed, as
// the kpack runtime does, so that the binary links on a machine without a
// driver.  The types come from cuda.h (decltype), so a prototype mismatch
// is a compile error; the symbols are the exact exported names (cuda.h maps
// cuMemGetInfo to cuMemGetInfo_v2).
struct Driver {
  decltype(&cuInit) init = nullptr;
  decltype(&cuGetErrorName) get_error_name = nullptr;
  decltype(&cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&cuMemGetInfo_v2) mem_get_info = nullptr;
  decltype(&cuLibraryLoadData) library_load_data = nullptr;
  decltype(&cuLibraryGetKernel) library_get_kernel = nullptr;
  decltype(&cuLibraryUnload) library_unload = nullptr;
  decltype(&cuLaunchKernel) launch_kernel = nullptr;
};

template <typename F>
void resolve(void* handle, const char* symbol, F* out) {
  void* p = dlsym(handle, symbol);
  if (p == nullptr) {
    fatal("libcuda.so.1 has no %s: the NVIDIA driver is older than CUDA 12.0", symbol);
  }
  static_assert(sizeof p == sizeof *out, "function pointers must be pointer-sized");
  std::memcpy(out, &p, sizeof p);  // ISO C++ has no void* -> function pointer cast
}

// dlopen and dlsym only: no driver call (see Cold::kRawNoPrelude).
Driver open_driver_table() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    fatal("cannot load libcuda.so.1 (%s)", why != nullptr ? why : "no reason given");
  }
  Driver d;
  resolve(h, "cuInit", &d.init);
  resolve(h, "cuGetErrorName", &d.get_error_name);
  resolve(h, "cuCtxGetCurrent", &d.ctx_get_current);
  resolve(h, "cuCtxGetDevice", &d.ctx_get_device);
  resolve(h, "cuMemGetInfo_v2", &d.mem_get_info);
  resolve(h, "cuLibraryLoadData", &d.library_load_data);
  resolve(h, "cuLibraryGetKernel", &d.library_get_kernel);
  resolve(h, "cuLibraryUnload", &d.library_unload);
  resolve(h, "cuLaunchKernel", &d.launch_kernel);
  return d;  // the handle stays open for the life of the process
}

Driver load_driver() {
  Driver d = open_driver_table();
  const CUresult r = d.init(0);
  if (r != CUDA_SUCCESS) fatal("cuInit(0) failed: CUresult %d", static_cast<int>(r));
  return d;  // the handle stays open for the life of the process
}

const Driver& driver() {
  static const Driver d = load_driver();
  return d;
}

[[noreturn]] __attribute__((noinline, cold)) void fail_cu(CUresult r, const char* what) {
  const char* name = nullptr;
  if (driver().get_error_name(r, &name) != CUDA_SUCCESS || name == nullptr) name = "unrecognized CUresult";
  fatal("%s failed: %s (%d)", what, name, static_cast<int>(r));
}

void cu_check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) fail_cu(r, what);
}

[[noreturn]] __attribute__((noinline, cold)) void fail_cuda(cudaError_t e, const char* what) {
  fatal("%s failed: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail_cuda(e, what);
}

[[noreturn]] __attribute__((noinline, cold)) void fail_kpack(kpack_status st, const char* what) {
  fatal("%s returned %s: %s", what, kpack_status_name(st), kpack_last_error_detail());
}

void kpack_check(kpack_status st, const char* what) {
  if (st != KPACK_SUCCESS) fail_kpack(st, what);
}

// ---- Device, context and buffers ------------------------------------------------

// Exits 77 when there is no usable device; otherwise makes device 0's
// primary context current on this thread (cudaFree(0) creates it), which
// both kpack and the raw driver calls launch into.
void open_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "%s: skipped: no CUDA device (%s)\n", kProg,
                 e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
    std::exit(kExitNoDevice);
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
  cuda_check(cudaFree(nullptr), "cudaFree(0)");
  cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int drv = 0, rt = 0;
  cuda_check(cudaDriverGetVersion(&drv), "cudaDriverGetVersion");
  cuda_check(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
  note("device 0: %s (sm_%d%d), driver CUDA %d.%d, runtime %d.%d\n", prop.name, prop.major, prop.minor,
       drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

// The raw driver calls use the calling thread's current context; make sure
// cudaFree(0) left one there rather than fail obscurely later.
void require_current_context() {
  CUcontext ctx = nullptr;
  cu_check(driver().ctx_get_current(&ctx), "cuCtxGetCurrent");
  if (ctx == nullptr) fatal("no current CUDA context after cudaSetDevice(0) and cudaFree(0)");
}

cudaStream_t make_stream() {
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}

// x, y and out of vector_add on the device, with inputs whose sums are exact
// in float (x = i, y = 2i + 0.25; below 2^21), so the check is bit-exact.
struct VecAdd {
  int64_t n;
  float* x = nullptr;
  float* y = nullptr;
  float* out = nullptr;
  std::vector<float> hx, hy;

  explicit VecAdd(int64_t count) : n(count), hx(count), hy(count) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    for (int64_t i = 0; i < n; ++i) {
      hx[i] = static_cast<float>(i);
      hy[i] = 2.0f * static_cast<float>(i) + 0.25f;
    }
    cuda_check(cudaMalloc(&x, bytes), "cudaMalloc(x)");
    cuda_check(cudaMalloc(&y, bytes), "cudaMalloc(y)");
    cuda_check(cudaMalloc(&out, bytes), "cudaMalloc(out)");
    cuda_check(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(x)");
    cuda_check(cudaMemcpy(y, hy.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(y)");
    // The copies and allocations ran on the legacy stream, which a
    // non-blocking stream does not wait for: finish them now.
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after upload");
  }
  ~VecAdd() {
    // Best effort at exit; a failure here cannot change any result.
    cudaFree(out);
    cudaFree(y);
    cudaFree(x);
  }
  VecAdd(const VecAdd&) = delete;
  VecAdd& operator=(const VecAdd&) = delete;

  // Fills out with 0xFF bytes (NaN) on `s`, so that only a launch that runs
  // after this can pass check().
  void poison(cudaStream_t s) {
    cuda_check(cudaMemsetAsync(out, 0xff, static_cast<size_t>(n) * sizeof(float), s), "cudaMemsetAsync(out)");
  }

  // Waits for `s` and compares out with x + y computed here; exits on a
  // mismatch, naming `who`.
  void check(cudaStream_t s, const char* who) {
    cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize before the check");
    std::vector<float> got(n);
    cuda_check(cudaMemcpy(got.data(), out, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy(out)");
    for (int64_t i = 0; i < n; ++i) {
      const float want = hx[i] + hy[i];
      if (!(got[i] == want)) {
        fatal("%s computed a wrong result: out[%lld] = %.9g, want %.9g", who, static_cast<long long>(i),
              static_cast<double>(got[i]), static_cast<double>(want));
      }
    }
  }
};

// Reads a fatbin written by the kpack build; exits if it is missing or is
// not a fatbin (magic 0xBA55ED50, little-endian), so that a wrong path is not
// reported as a driver error.
std::vector<unsigned char> read_fatbin(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fatal("cannot open %s: %s", path.c_str(), std::strerror(errno));
  std::vector<unsigned char> data;
  unsigned char buf[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fatal("cannot read %s", path.c_str());
  static const unsigned char kMagic[4] = {0x50, 0xed, 0x55, 0xba};
  if (data.size() < 16 || std::memcmp(data.data(), kMagic, 4) != 0) {
    fatal("%s is not a fatbin (no 0xBA55ED50 magic)", path.c_str());
  }
  // The raw variant should load the very bytes kpack embedded; the size is
  // what the public API tells about them, so compare that.
  for (size_t i = 0; i < kernels_num_specializations(); ++i) {
    kpack_spec_info info;
    kpack_check(kernels_specialization_info(i, &info), "kernels_specialization_info");
    if (std::strcmp(info.name, kSpec) == 0 && info.fatbin_size != data.size()) {
      std::fprintf(stderr,
                   "%s: warning: %s has %zu bytes but the embedded %s has %llu: is it from another "
                   "build?\n",
                   kProg, path.c_str(), data.size(), kSpec, static_cast<unsigned long long>(info.fatbin_size));
    }
  }
  return data;
}

std::string fatbin_path_in(const std::string& dir) { return dir + "/" + kSpec + ".fatbin"; }

std::string module_loading() {
  const char* v = std::getenv("CUDA_MODULE_LOADING");
  return v != nullptr ? v : "unset (driver default: LAZY)";
}

// The CUkernel of kSpec from `image`, loaded as a library of its own.
// `preserved`: with CU_LIBRARY_BINARY_IS_PRESERVED, as kpack's runtime loads
// its embedded fatbins (the driver may read the image in place instead of
// copying it); the bare baseline passes no option.
CUkernel load_raw_kernel(const std::vector<unsigned char>& image, CUlibrary* lib, const Driver& d = driver(),
                         bool preserved = false) {
  CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
  void* value = reinterpret_cast<void*>(uintptr_t{1});
  cu_check(preserved ? d.library_load_data(lib, image.data(), nullptr, nullptr, 0, &option, &value, 1)
                     : d.library_load_data(lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
           "cuLibraryLoadData");
  CUkernel k = nullptr;
  cu_check(d.library_get_kernel(&k, *lib, kEntry), "cuLibraryGetKernel");
  return k;
}

unsigned vector_add_grid(int64_t n) { return static_cast<unsigned>((n + kChevronsPerBlock - 1) / kChevronsPerBlock); }

// ---- Self-execution ----------------------------------------------------------------

struct ChildResult {
  int status = 0;   // from waitpid
  std::string out;  // its stdout, when captured
};

// Runs this program again with `args` in a fresh process (/proc/self/exe)
// and waits for it.  Its stderr is this process's; its stdout too unless
// `capture`, in which case it is returned.
ChildResult run_self(const std::vector<std::string>& args, bool capture) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(g_argv0));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  if (g_opt.quiet) argv.push_back(const_cast<char*>("--quiet"));
  argv.push_back(nullptr);

  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) fatal("posix_spawn_file_actions_init failed");
  if (capture) {
    // Both ends close on exec; dup2 gives the child a plain fd 1.
    if (pipe2(fds, O_CLOEXEC) != 0) fatal("pipe2: %s", std::strerror(errno));
    if (posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO) != 0) {
      fatal("posix_spawn_file_actions_adddup2 failed");
    }
  }
  std::fflush(stdout);  // keep this process's lines before the child's
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) fatal("posix_spawn(/proc/self/exe): %s", std::strerror(rc));
  g_child_pid = static_cast<sig_atomic_t>(pid);

  ChildResult r;
  if (capture) {
    close(fds[1]);
    char buf[4096];
    for (;;) {
      const ssize_t got = read(fds[0], buf, sizeof buf);
      if (got > 0) {
        r.out.append(buf, static_cast<size_t>(got));
      } else if (got == 0) {
        break;
      } else if (errno != EINTR) {
        fatal("reading a child's output: %s", std::strerror(errno));
      }
    }
    close(fds[0]);
  }
  while (waitpid(pid, &r.status, 0) < 0) {
    if (errno != EINTR) fatal("waitpid: %s", std::strerror(errno));
  }
  g_child_pid = 0;
  return r;
}

// Exits unless the child succeeded; a child without a device makes this
// process report the same (77).
void require_child_ok(const ChildResult& r, const std::string& what) {
  if (WIFEXITED(r.status)) {
    const int code = WEXITSTATUS(r.status);
    if (code == 0) return;
    if (code == kExitNoDevice) {
      std::fprintf(stderr, "%s: skipped: no CUDA device (reported by %s)\n", kProg, what.c_str());
      std::exit(kExitNoDevice);
    }
    fatal("%s exited with status %d", what.c_str(), code);
  }
  if (WIFSIGNALED(r.status)) {
    fatal("%s was killed by signal %d (%s)", what.c_str(), WTERMSIG(r.status), strsignal(WTERMSIG(r.status)));
  }
  fatal("%s ended with wait status %d", what.c_str(), r.status);
}

// The "value" (or another numeric field) of the JSON line a cold child
// printed.
double value_of(const std::string& out, const std::string& what, const char* field = "value") {
  const std::string key = std::string("\"") + field + "\": ";
  const size_t at = out.find(key);
  if (at == std::string::npos) fatal("%s printed no JSON %s: '%s'", what.c_str(), field, out.c_str());
  const char* start = out.c_str() + at + key.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start || !std::isfinite(v)) fatal("%s printed a bad %s: '%s'", what.c_str(), field, out.c_str());
  return v;
}

// ---- --launch: host cost of a launch ---------------------------------------------------

// One way to launch vector_add_f32_b128.  batch(count) runs `count`
// launches back to back and returns the host time per launch in ns; only
// the launch loop is timed.
struct Variant {
  const char* name;
  std::function<double(int)> batch;
};

// The timed loop, instantiated per variant so that the launch call is
// inlined into it: the only work between the two clock reads is the launches
// and their return-code checks.
template <typename Launch>
std::function<double(int)> timed(Launch launch) {
  return [launch](int count) {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < count; ++i) launch();
    const Clock::time_point t1 = Clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / count;
  };
}

// Waits for the stream between batches (outside the timing), so a batch
// never meets a full launch queue, and surfaces any launch or device error.
void drain(cudaStream_t stream, const char* who) {
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after a batch");
  // <<<>>> reports launch failures only through the runtime's last error.
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail_cuda(e, strf("a %s launch", who).c_str());
}

int run_launch(const std::string& fatbin_dir) {
  arm_watchdog(300);
  const std::string path = fatbin_path_in(fatbin_dir);
  const std::vector<unsigned char> image = read_fatbin(path);
  open_device();
  const Driver& d = driver();
  require_current_context();
  cudaStream_t stream = make_stream();
  VecAdd buf(kN);

  CUlibrary lib = nullptr;
  const CUkernel kernel = load_raw_kernel(image, &lib);

  // Everything a launch needs is prepared here, outside the loops, so the
  // raw variant is the floor: the driver call with nothing around it.  The
  // closures copy these values; args points at these locals, which outlive
  // every launch.
  float* x = buf.x;
  float* y = buf.y;
  float* out = buf.out;
  int64_t n = buf.n;
  const unsigned grid = vector_add_grid(n);
  void* args[] = {&x, &y, &out, &n};
  void** const argp = args;
  const auto raw_launch = d.launch_kernel;
  const CUfunction raw_f = reinterpret_cast<CUfunction>(kernel);  // cuLaunchKernel takes a CUkernel as is

  // Variant order is the column order of the results; rounds rotate it.
  std::vector<Variant> variants = {
      {"raw_cuLaunchKernel", timed([=] {
         const CUresult r = raw_launch(raw_f, grid, 1, 1, kChevronsBlock, 1, 1, 0, stream, argp, nullptr);
         if (r != CUDA_SUCCESS) [[unlikely]] fail_cu(r, "cuLaunchKernel");
       })},
      {"kpack_typed", timed([=] {
         const kpack_status st = kernels_vector_add_f32_b128(stream, x, y, out, n);
         if (st != KPACK_SUCCESS) [[unlikely]] fail_kpack(st, "kernels_vector_add_f32_b128");
       })},
      {"cuda_chevrons", timed([=] { bench_chevrons_vector_add_f32_b128(stream, x, y, out, n); })},
      {"kpack_dispatcher", timed([=] {
         const kpack_status st = kernels_vector_add(stream, KPACK_DTYPE_F32, 128, x, y, out, n);
         if (st != KPACK_SUCCESS) [[unlikely]] fail_kpack(st, "kernels_vector_add");
       })},
      {"cuda_chevrons_checked", timed([=] {
         const cudaError_t e = bench_chevrons_vector_add_f32_b128_checked(stream, x, y, out, n);
         if (e != cudaSuccess) [[unlikely]] fail_cuda(e, "<<<>>> + cudaGetLastError");
       })},
      // The auto dispatcher: the tuning table of this device (or the rule)
      // picks BLOCK for n, then the dispatcher launches it.  Its pick may
      // differ from b128; a launch's host cost does not depend on BLOCK.
      {"kpack_auto", timed([=] {
         const kpack_status st = kernels_vector_add_auto(stream, KPACK_DTYPE_F32, x, y, out, n);
         if (st != KPACK_SUCCESS) [[unlikely]] fail_kpack(st, "kernels_vector_add_auto");
       })},
  };
  const size_t nv = variants.size();
  enum { kRaw = 0, kTyped = 1, kChevrons = 2, kDispatcher = 3, kChecked = 4, kAuto = 5 };

  // The first launch of each variant loads its code (kpack's library, the
  // runtime's module); it must also compute the right thing.
  for (Variant& v : variants) {
    buf.poison(stream);
    v.batch(1);
    drain(stream, v.name);
    buf.check(stream, v.name);
  }
  note("launch: %d warm-up + %d measured rounds of %zu variants x %d launches, n = %lld\n", g_opt.warmup_rounds,
       g_opt.rounds, nv, g_opt.batch, static_cast<long long>(n));

  // per[v][r]: ns per launch of variant v in measured round r.  Each round
  // runs one batch of every variant, starting at a different variant each
  // round, so drift and position effects fall on all of them alike.
  std::vector<std::vector<double>> per(nv);
  for (int round = 0; round < g_opt.warmup_rounds + g_opt.rounds; ++round) {
    for (size_t j = 0; j < nv; ++j) {
      const size_t v = (static_cast<size_t>(round) + j) % nv;
      const double ns = variants[v].batch(g_opt.batch);
      drain(stream, variants[v].name);
      if (round >= g_opt.warmup_rounds) per[v].push_back(ns);
    }
  }

  // The last launch of each variant, checked against the host.
  for (Variant& v : variants) {
    buf.poison(stream);
    v.batch(1);
    drain(stream, v.name);
    buf.check(stream, v.name);
  }
  note("launch: every variant's final launch matches the host's x + y\n");

  std::vector<Stats> st;
  for (size_t v = 0; v < nv; ++v) {
    st.push_back(stats_of(per[v]));
    Json j("launch", variants[v].name, st[v].median, "ns");
    add_spread(j, st[v])
        .add("batches", static_cast<double>(st[v].count))
        .add("launches_per_batch", g_opt.batch)
        .add("n", static_cast<double>(n))
        .emit();
  }
  const auto ratio = [](double a, double b) { return a / b; };
  const auto minus = [](double a, double b) { return a - b; };
  struct Pair {
    const char* name;
    int a, b;
  };
  for (const Pair& p : {Pair{"kpack_typed_over_raw", kTyped, kRaw}, Pair{"cuda_chevrons_over_raw", kChevrons, kRaw},
                        Pair{"kpack_dispatcher_over_raw", kDispatcher, kRaw},
                        Pair{"kpack_typed_over_cuda_chevrons", kTyped, kChevrons}}) {
    const Stats s = paired(per[p.a], per[p.b], ratio);
    Json("launch_ratio", p.name, s.median, "ratio")
        .add("p10", s.p10)
        .add("p90", s.p90)
        .add("ratio_of_medians", st[p.a].median / st[p.b].median)
        .emit();
  }
  for (const Pair& p : {Pair{"dispatcher_minus_typed", kDispatcher, kTyped},
                        Pair{"auto_minus_dispatcher", kAuto, kDispatcher},
                        Pair{"auto_minus_typed", kAuto, kTyped},
                        Pair{"kpack_typed_minus_raw", kTyped, kRaw},
                        Pair{"cuda_chevrons_checked_minus_unchecked", kChecked, kChevrons}}) {
    const Stats s = paired(per[p.a], per[p.b], minus);
    Json("dispatch", p.name, s.median, "ns")
        .add("p10", s.p10)
        .add("p90", s.p90)
        .add("difference_of_medians", st[p.a].median - st[p.b].median)
        .emit();
  }

  cu_check(d.library_unload(lib), "cuLibraryUnload");
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}

// ---- --dispatch-cost: what choosing costs, without a launch -------------------------------

// The host time of the typed launcher, the dispatcher and the auto
// dispatcher (tables or rules, the device lookup) of vector_add on an empty
// problem (n = 0: the grid has no blocks, so the runtime returns before the
// driver and nothing reaches the GPU), and of cuCtxGetDevice alone.  The
// empty auto call pays the cuCtxGetDevice of its tuning's lookup, which the
// empty typed call never reaches; in a real launch the typed launcher pays
// it too and the auto dispatcher's launch takes the device its lookup
// found (kpack_internal.h: the device hint).  So what the auto dispatcher
// adds to a real launch is its difference to the typed launcher here less
// one cuCtxGetDevice ("auto_adds_to_a_launch"); measured with launches, the
// +-300 ns jitter of cuLaunchKernel hides a few tens of ns.
int run_dispatch_cost() {
  arm_watchdog(300);
  open_device();
  const Driver& d = driver();
  require_current_context();
  cudaStream_t stream = make_stream();
  VecAdd buf(kN);
  float* x = buf.x;
  float* y = buf.y;
  float* out = buf.out;
  const int64_t n = 0;
  std::vector<Variant> variants = {
      {"empty_typed", timed([=] {
         const kpack_status st = kernels_vector_add_f32_b128(stream, x, y, out, n);
         if (st != KPACK_SUCCESS) [[unlikely]] fail_kpack(st, "kernels_vector_add_f32_b128");
       })},
      {"empty_dispatcher", timed([=] {
         const kpack_status st = kernels_vector_add(stream, KPACK_DTYPE_F32, 128, x, y, out, n);
         if (st != KPACK_SUCCESS) [[unlikely]] fail_kpack(st, "kernels_vector_add");
       })},
      {"empty_auto", timed([=] {
         const kpack_status st = kernels_vector_add_auto(stream, KPACK_DTYPE_F32, x, y, out, n);
         if (st != KPACK_SUCCESS) [[unlikely]] fail_kpack(st, "kernels_vector_add_auto");
       })},
      {"ctx_get_device", timed([=] {
         CUdevice dev = 0;
         if (d.ctx_get_device(&dev) != CUDA_SUCCESS) [[unlikely]] fatal("cuCtxGetDevice failed");
       })},
  };
  const size_t nv = variants.size();
  std::vector<std::vector<double>> per(nv);
  const int calls = 10000;
  for (int round = 0; round < g_opt.warmup_rounds / 10 + g_opt.rounds / 5; ++round)
    for (size_t j = 0; j < nv; ++j) {
      const size_t v = (static_cast<size_t>(round) + j) % nv;
      const double ns = variants[v].batch(calls);
      if (round >= g_opt.warmup_rounds / 10) per[v].push_back(ns);
    }
  std::vector<Stats> st;
  for (size_t v = 0; v < nv; ++v) {
    st.push_back(stats_of(per[v]));
    Json j("dispatch_cost", variants[v].name, st[v].median, "ns");
    add_spread(j, st[v]).add("batches", static_cast<double>(st[v].count)).add("calls_per_batch", calls).emit();
  }
  const auto minus = [](double a, double b) { return a - b; };
  for (const auto& [name, a, b] : {std::tuple{"empty_auto_minus_typed", 2, 0}, std::tuple{"empty_auto_minus_dispatcher", 2, 1},
                                   std::tuple{"empty_dispatcher_minus_typed", 1, 0}}) {
    const Stats s = paired(per[a], per[b], minus);
    Json("dispatch_cost", name, s.median, "ns")
        .add("p10", s.p10)
        .add("p90", s.p90)
        .add("difference_of_medians", st[a].median - st[b].median)
        .emit();
  }
  // Per round: auto - typed - cuCtxGetDevice, from the same round's batches.
  std::vector<double> adds;
  for (size_t r = 0; r < per[0].size() && r < per[2].size() && r < per[3].size(); ++r)
    adds.push_back(per[2][r] - per[0][r] - per[3][r]);
  const Stats a = stats_of(adds);
  Json("dispatch_cost", "auto_adds_to_a_launch", a.median, "ns")
      .add("p10", a.p10)
      .add("p90", a.p90)
      .add("difference_of_medians", st[2].median - st[0].median - st[3].median)
      .emit();
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}

// ---- --cold-*: the first launch in a fresh process -------------------------------------

enum class Cold {
  kKpack,
  kRaw,
  kCuda,
  // Diagnostics of kpack's cold path: the fatbin's pages touched before the
  // clock starts (the raw path reads its file before timing), and the
  // driver already found by an earlier launch of another specialization.
  kKpackPrefaulted,
  kKpackDriverWarm,
  // Whether the raw variant's prelude favours it: before its clock it
  // calls cuInit and cuCtxGetCurrent through the driver's exported API,
  // which kpack's first launch is the first to do in its process.  kpack
  // after that same prelude, and the raw path after only dlopen and dlsym.
  kKpackDriverApiWarm,
  kRawNoPrelude,
  // kpack after kpack_init() at start-up, before the clock, as the raw path
  // resolves its driver table before its clock: the engine's view when it
  // finds the driver at start.
  kKpackInit,
  // The raw path with CU_LIBRARY_BINARY_IS_PRESERVED, the option kpack's
  // runtime loads with: what the option itself is worth to the driver.
  kRawPreserved,
};

const char* cold_name(Cold c) {
  switch (c) {
    case Cold::kKpack: return "kpack_first_launch";
    case Cold::kRaw: return "raw_first_launch";
    case Cold::kCuda: return "cuda_chevrons_first_launch";
    case Cold::kKpackPrefaulted: return "kpack_first_launch_prefaulted";
    case Cold::kKpackDriverWarm: return "kpack_first_launch_driver_warm";
    case Cold::kKpackDriverApiWarm: return "kpack_first_launch_driver_api_warm";
    case Cold::kRawNoPrelude: return "raw_first_launch_no_prelude";
    case Cold::kKpackInit: return "kpack_first_launch_after_init";
    case Cold::kRawPreserved: return "raw_first_launch_preserved";
  }
  return "?";
}

// The embedded fatbins, in specialization order (see kpack_internal.h).
struct EmbeddedBlob {
  const unsigned char* data;
  uint64_t size;
};
extern "C" const EmbeddedBlob kernels_kpack_blobs[];

// Reads every page of the embedded fatbin of `name`, so that page faults on
// the executable's file-backed pages happen before the clock starts.
void touch_embedded_fatbin(const char* name) {
  for (size_t i = 0; i < kernels_num_specializations(); ++i) {
    kpack_spec_info info;
    kpack_check(kernels_specialization_info(i, &info), "kernels_specialization_info");
    if (std::strcmp(info.name, name) != 0) continue;
    volatile unsigned sum = 0;
    for (uint64_t b = 0; b < kernels_kpack_blobs[i].size; b += 64) sum = sum + kernels_kpack_blobs[i].data[b];
    return;
  }
  fatal("no embedded fatbin named %s", name);
}

// Times, in this process, from just before the first launch call to the end
// of the cudaStreamSynchronize that sees it complete.  The context, the
// stream, the buffers and (raw) the driver table and the fatbin's bytes are
// ready before the clock starts.  kpack's time includes its own first-use
// work: finding the driver (RTLD_NOLOAD dlopen of the already loaded
// libcuda, dlsym, a cuCtxGetDevice that finds the context current),
// cuLibraryLoadData of the embedded fatbin and cuLibraryGetKernel; the
// module is loaded into the context inside the first cuLaunchKernel.
int run_cold(Cold kind, const std::string& fatbin) {
  arm_watchdog(60);
  std::vector<unsigned char> image;
  const bool raw = kind == Cold::kRaw || kind == Cold::kRawNoPrelude || kind == Cold::kRawPreserved;
  if (raw) image = read_fatbin(fatbin);
  open_device();
  if (kind == Cold::kRaw || kind == Cold::kRawPreserved || kind == Cold::kKpackDriverApiWarm) {
    driver();
    require_current_context();
  }
  const Driver bare = kind == Cold::kRawNoPrelude ? open_driver_table() : Driver{};
  cudaStream_t stream = make_stream();
  VecAdd buf(kN);
  buf.poison(stream);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize before timing");
  uint64_t loaded = 0;
  kpack_get_load_counts(&loaded, nullptr);
  if (loaded != 0) {
    fatal("internal: kpack loaded %llu libraries before the first launch", static_cast<unsigned long long>(loaded));
  }

  float* x = buf.x;
  float* y = buf.y;
  float* out = buf.out;
  int64_t n = buf.n;
  void* args[] = {&x, &y, &out, &n};
  CUlibrary lib = nullptr;
  if (kind == Cold::kKpackPrefaulted) touch_embedded_fatbin("vector_add_f32_b128");
  // kpack_init()'s own time, outside the clock: what finding the driver
  // costs a first launch that did not have it done.
  double init_us = std::nan("");
  if (kind == Cold::kKpackInit) {
    const Clock::time_point i0 = Clock::now();
    kpack_check(kpack_init(), "kpack_init");
    init_us = std::chrono::duration<double, std::micro>(Clock::now() - i0).count();
  }
  if (kind == Cold::kKpackDriverWarm) {
    kpack_check(kernels_vector_add_f32_b256(stream, x, y, out, n), "kernels_vector_add_f32_b256");
    buf.poison(stream);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize before timing");
    kpack_get_load_counts(&loaded, nullptr);
  }

  // Page faults inside the timed region: first touches of code and data
  // pages cost microseconds each in a fresh process (more in a VM).
  struct rusage ru0 {};
  getrusage(RUSAGE_SELF, &ru0);
  const Clock::time_point t0 = Clock::now();
  switch (kind) {
    case Cold::kKpackPrefaulted:
    case Cold::kKpackInit:
    case Cold::kKpackDriverWarm:
    case Cold::kKpackDriverApiWarm:
    case Cold::kKpack:
      kpack_check(kernels_vector_add_f32_b128(stream, x, y, out, n), "kernels_vector_add_f32_b128");
      break;
    case Cold::kRaw:
    case Cold::kRawPreserved:
    case Cold::kRawNoPrelude: {
      const Driver& d = kind == Cold::kRawNoPrelude ? bare : driver();
      const CUkernel k = load_raw_kernel(image, &lib, d, kind == Cold::kRawPreserved);
      cu_check(d.launch_kernel(reinterpret_cast<CUfunction>(k), vector_add_grid(n), 1, 1, kChevronsBlock, 1, 1, 0,
                               stream, args, nullptr),
               "cuLaunchKernel");
      break;
    }
    case Cold::kCuda:
      cuda_check(bench_chevrons_vector_add_f32_b128_checked(stream, x, y, out, n), "<<<>>>");
      break;
  }
  const cudaError_t synced = cudaStreamSynchronize(stream);
  const Clock::time_point t1 = Clock::now();
  struct rusage ru1 {};
  getrusage(RUSAGE_SELF, &ru1);
  cuda_check(synced, "cudaStreamSynchronize after the first launch");
  buf.check(stream, cold_name(kind));

  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  kpack_get_load_counts(&loaded, nullptr);
  note("cold: %s took %.1f us\n", cold_name(kind), us);
  Json j("cold", cold_name(kind), us, "us");
  if (kind == Cold::kKpackInit) j.add("init_us", init_us);
  j.add("runs", 1)
      .add("minor_faults", static_cast<double>(ru1.ru_minflt - ru0.ru_minflt))
      .add("major_faults", static_cast<double>(ru1.ru_majflt - ru0.ru_majflt))
      .add("kpack_libraries_loaded", static_cast<double>(loaded))
      .add("module_loading", module_loading())
      .emit();
  if (lib != nullptr) cu_check(driver().library_unload(lib), "cuLibraryUnload");
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}

// Runs kpack's, the raw and the <<<>>> cold variants `runs` times each and
// kpack's two diagnostics `diag_runs` times each (in rounds spread evenly
// over the `runs`), each run in a fresh process, rotating the order within a
// round so none always goes first, and prints their median, spread and
// ratios paired by round, with a 95% confidence interval of each median.
// This process never touches CUDA itself.
int run_cold_repeat(int runs, int diag_runs, const std::string& fatbin_dir) {
  const std::string fatbin = fatbin_path_in(fatbin_dir);
  const Cold kinds[] = {Cold::kKpack,           Cold::kRaw,          Cold::kCuda,         Cold::kKpackPrefaulted,
                        Cold::kKpackDriverWarm, Cold::kKpackDriverApiWarm, Cold::kRawNoPrelude, Cold::kKpackInit,
                        Cold::kRawPreserved};
  constexpr int kKinds = 9;
  constexpr int kMain = 3;  // kinds[0..3) run every round
  diag_runs = std::min(diag_runs, runs);
  // samples[k][round]; NaN where the round did not run kind k (ratios pair
  // them by round).  faults[k]: the minor page faults inside each of kind
  // k's timed regions, and init_us kKpackInit's kpack_init() times, only
  // summarized.
  std::vector<double> samples[kKinds];
  std::vector<double> faults[kKinds];
  std::vector<double> init_us;
  for (auto& v : samples) v.assign(static_cast<size_t>(runs), std::nan(""));
  note("cold: %d fresh processes per variant, %d per diagnostic variant\n", runs, diag_runs);
  const auto start = Clock::now();
  for (int i = 0; i < runs; ++i) {
    // The diagnostics run in diag_runs of the rounds, spread evenly.
    const bool diag = (static_cast<long>(i + 1) * diag_runs) / runs > (static_cast<long>(i) * diag_runs) / runs;
    const int count = diag ? kKinds : kMain;
    for (int j = 0; j < count; ++j) {
      const int k = (i + j) % count;
      std::vector<std::string> args;
      switch (kinds[k]) {
        case Cold::kKpack: args = {"--cold-kpack"}; break;
        case Cold::kRaw: args = {"--cold-raw", fatbin}; break;
        case Cold::kCuda: args = {"--cold-cuda"}; break;
        case Cold::kKpackPrefaulted: args = {"--cold-kpack-prefaulted"}; break;
        case Cold::kKpackDriverWarm: args = {"--cold-kpack-driver-warm"}; break;
        case Cold::kKpackDriverApiWarm: args = {"--cold-kpack-driver-api-warm"}; break;
        case Cold::kRawNoPrelude: args = {"--cold-raw-no-prelude", fatbin}; break;
        case Cold::kKpackInit: args = {"--cold-kpack-after-init"}; break;
        case Cold::kRawPreserved: args = {"--cold-raw-preserved", fatbin}; break;
      }
      args.insert(args.end(), {"--quiet", "--timeout", "60"});
      const std::string what = strf("the %s child (run %d)", cold_name(kinds[k]), i + 1);
      const ChildResult r = run_self(args, true);
      require_child_ok(r, what);
      samples[k][static_cast<size_t>(i)] = value_of(r.out, what);
      faults[k].push_back(value_of(r.out, what, "minor_faults"));
      if (kinds[k] == Cold::kKpackInit) init_us.push_back(value_of(r.out, what, "init_us"));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int children = runs * kMain + diag_runs * (kKinds - kMain);
  note("cold: %d processes in %.1f s (%.0f ms each)\n", children, seconds, 1000 * seconds / children);
  Stats st[kKinds];
  for (int k = 0; k < kKinds; ++k) {
    if (k >= kMain && diag_runs == 0) continue;
    const std::vector<double> v = present(samples[k]);
    st[k] = stats_of(v);
    const auto ci = median_ci95(v);
    Json j("cold", cold_name(kinds[k]), st[k].median, "us");
    add_spread(j, st[k])
        .add("median_ci95_lo", ci.first)
        .add("median_ci95_hi", ci.second)
        .add("median_minor_faults", stats_of(faults[k]).median)
        .add("runs", static_cast<double>(v.size()))
        .add("module_loading", module_loading());
    if (kinds[k] == Cold::kKpackInit && !init_us.empty()) j.add("median_init_us", stats_of(init_us).median);
    j.emit();
  }
  const auto ratio = [](double a, double b) { return a / b; };
  const struct {
    const char* name;
    int other;
    int self;
  } pairs[] = {{"kpack_over_raw", 1, 0},
               {"kpack_over_cuda_chevrons", 2, 0},
               {"kpack_prefaulted_over_raw", 1, 3},
               {"kpack_driver_warm_over_raw", 1, 4},
               {"kpack_driver_api_warm_over_raw", 1, 5},
               {"kpack_over_raw_no_prelude", 6, 0},
               {"kpack_after_init_over_raw", 1, 7},
               {"raw_preserved_over_raw", 1, 8},
               {"kpack_over_raw_preserved", 8, 0}};
  for (const auto& p : pairs) {
    // A ratio with a diagnostic on either side has no pairs without them.
    if ((p.self >= kMain || p.other >= kMain) && diag_runs == 0) continue;
    const std::vector<double> r = paired_values(samples[p.self], samples[p.other], ratio);
    const Stats s = stats_of(r);
    const auto ci = median_ci95(r);
    // value: the median of the per-round (paired) ratios, the number to
    // quote; ratio_of_medians for comparison.
    Json("cold_ratio", p.name, s.median, "ratio")
        .add("p10", s.p10)
        .add("p90", s.p90)
        .add("median_ci95_lo", ci.first)
        .add("median_ci95_hi", ci.second)
        .add("pairs", static_cast<double>(r.size()))
        .add("ratio_of_medians", st[p.self].median / st[p.other].median)
        .emit();
    note("cold: %s paired by run: median %.3f (95%% CI %.3f..%.3f, p10 %.3f, p90 %.3f, %zu pairs)\n", p.name,
         s.median, ci.first, ci.second, s.p10, s.p90, r.size());
  }
  return 0;
}

// ---- --lazy: device memory of loaded specializations ----------------------------------------

// One specialization of the package and a launch of it, through its
// kernel's dispatcher, on tiny valid inputs.
struct SpecLaunch {
  std::string name;  // as kpack names it (docs/manifest.md, "Specialization names")
  std::function<kpack_status()> launch;
};

// Device scratch for the tiny launches: 256-byte slots, zeroed, except
// q_len = kv_len = 1 for the mask.  Every kernel gets 1 element (or 1 row
// of 1 column, 1 box, 1 request of 1 x 1): enough to run its code, nothing
// to measure.
struct Scratch {
  static constexpr size_t kSlot = 256;
  unsigned char* base = nullptr;
  void* slot(int i) const { return base + static_cast<size_t>(i) * kSlot; }
  void* in1() const { return slot(0); }
  void* in2() const { return slot(1); }
  void* out1() const { return slot(2); }
  uint8_t* out2() const { return static_cast<uint8_t*>(slot(3)); }
  int32_t* q_len() const { return static_cast<int32_t*>(slot(4)); }
  int32_t* kv_len() const { return static_cast<int32_t*>(slot(5)); }
  int64_t* offsets() const { return static_cast<int64_t*>(slot(6)); }  // 0
  int64_t* targets() const { return static_cast<int64_t*>(slot(7)); }  // 0

  Scratch() {
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&base), 8 * kSlot), "cudaMalloc(scratch)");
    cuda_check(cudaMemset(base, 0, 8 * kSlot), "cudaMemset(scratch)");
    const int32_t one = 1;
    cuda_check(cudaMemcpy(q_len(), &one, sizeof one, cudaMemcpyHostToDevice), "cudaMemcpy(q_len)");
    cuda_check(cudaMemcpy(kv_len(), &one, sizeof one, cudaMemcpyHostToDevice), "cudaMemcpy(kv_len)");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the scratch setup");
  }
  ~Scratch() { cudaFree(base); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// Every specialization of the package's memory-bound kernels, in manifest
// order, from the generated configs arrays (as tests/gpu/gpu_test.cc
// reaches them); run_lazy prints how many of the package's it launches.
std::vector<SpecLaunch> every_specialization(const Scratch& s, cudaStream_t stream) {
  std::vector<SpecLaunch> out;
  for (const kernels_vector_add_config c : kernels_vector_add_configs) {
    out.push_back({strf("vector_add_%s_b%d", kpack_dtype_name(c.T), c.BLOCK), [=, &s] {
                     return kernels_vector_add(stream, c.T, c.BLOCK, s.in1(), s.in2(), s.out1(), 1);
                   }});
  }
  for (const kernels_giou_loss_config c : kernels_giou_loss_configs) {
    out.push_back({strf("giou_loss_%s_b%d", kpack_dtype_name(c.T), c.BLOCK), [=, &s] {
                     return kernels_giou_loss(stream, c.T, c.BLOCK, s.in1(), s.in2(), s.out1(), s.out2(), 1);
                   }});
  }
  for (const kernels_attention_mask_fill_config c : kernels_attention_mask_fill_configs) {
    out.push_back({strf("attention_mask_fill_%s_%s_t%d", kpack_dtype_name(c.T), c.CAUSAL ? "causal" : "nocausal",
                        c.TILE),
                   [=, &s] {
                     return kernels_attention_mask_fill(stream, c.T, c.CAUSAL, c.TILE, s.q_len(), s.kv_len(),
                                                        s.offsets(), s.out1(), 1, 1, 1);
                   }});
  }
  for (const kernels_softmax_config c : kernels_softmax_configs) {
    out.push_back({strf("softmax_%s_b%d", kpack_dtype_name(c.T), c.BLOCK), [=, &s] {
                     return kernels_softmax(stream, c.T, c.BLOCK, s.in1(), s.out1(), 1, 1, 1, 1);
                   }});
  }
  for (const kernels_cross_entropy_config c : kernels_cross_entropy_configs) {
    out.push_back({strf("cross_entropy_%s_b%d", kpack_dtype_name(c.T), c.BLOCK), [=, &s] {
                     return kernels_cross_entropy(stream, c.T, c.BLOCK, s.in1(), s.targets(),
                                                  static_cast<float*>(s.out1()), 1, 1, 1, -100);
                   }});
  }
  // The Triton twins take the same arguments through their own dispatchers.
  for (const kernels_vector_add_triton_config c : kernels_vector_add_triton_configs) {
    out.push_back({strf("vector_add_triton_%s_b%d_w%d", kpack_dtype_name(c.T), c.BLOCK, c.num_warps), [=, &s] {
                     return kernels_vector_add_triton(stream, c.T, c.BLOCK, c.num_warps, s.in1(), s.in2(), s.out1(), 1);
                   }});
  }
  for (const kernels_giou_loss_triton_config c : kernels_giou_loss_triton_configs) {
    out.push_back({strf("giou_loss_triton_%s_b%d_w%d", kpack_dtype_name(c.T), c.BLOCK, c.num_warps), [=, &s] {
                     return kernels_giou_loss_triton(stream, c.T, c.BLOCK, c.num_warps, s.in1(), s.in2(), s.out1(),
                                                     s.out2(), 1);
                   }});
  }
  for (const kernels_attention_mask_fill_triton_config c : kernels_attention_mask_fill_triton_configs) {
    out.push_back({strf("attention_mask_fill_triton_%s_%s_t%d_w%d", kpack_dtype_name(c.T),
                        c.CAUSAL ? "causal" : "nocausal", c.TILE, c.num_warps),
                   [=, &s] {
                     return kernels_attention_mask_fill_triton(stream, c.T, c.CAUSAL, c.TILE, c.num_warps, s.q_len(),
                                                               s.kv_len(), s.offsets(), s.out1(), 1, 1, 1);
                   }});
  }
  for (const kernels_softmax_triton_config c : kernels_softmax_triton_configs) {
    out.push_back({strf("softmax_triton_%s_b%d_w%d", kpack_dtype_name(c.T), c.BLOCK, c.num_warps), [=, &s] {
                     return kernels_softmax_triton(stream, c.T, c.BLOCK, c.num_warps, s.in1(), s.out1(), 1, 1, 1, 1);
                   }});
  }
  for (const kernels_cross_entropy_triton_config c : kernels_cross_entropy_triton_configs) {
    out.push_back({strf("cross_entropy_triton_%s_b%d_w%d", kpack_dtype_name(c.T), c.BLOCK, c.num_warps), [=, &s] {
                     return kernels_cross_entropy_triton(stream, c.T, c.BLOCK, c.num_warps, s.in1(), s.targets(),
                                                         static_cast<float*>(s.out1()), 1, 1, 1, -100);
                   }});
  }
  return out;
}

// Bytes of the embedded fatbin of specialization `name`; 0 (with a
// warning) if the package has no such name.
uint64_t fatbin_size_of(const std::string& name) {
  for (size_t i = 0; i < kernels_num_specializations(); ++i) {
    kpack_spec_info info;
    kpack_check(kernels_specialization_info(i, &info), "kernels_specialization_info");
    if (name == info.name) return info.fatbin_size;
  }
  std::fprintf(stderr, "%s: warning: the package has no specialization named %s\n", kProg, name.c_str());
  return 0;
}

int run_lazy() {
  arm_watchdog(120);
  open_device();
  const Driver& d = driver();
  cudaStream_t stream = make_stream();
  Scratch scratch;  // allocated before the baseline: only code should count
  const std::vector<SpecLaunch> specs = every_specialization(scratch, stream);
  // The compute-bound kernels (matmul, attention, the CUDA GEMM) need real
  // shapes and tensor descriptors: they are not launched here, and the
  // counts below say how many of the package's specializations were.
  const size_t total_specs = specs.size();
  note("lazy: launching %zu of the package's %zu specializations\n", total_specs, kernels_num_specializations());

  uint64_t loaded = 0, resolved = 0;
  kpack_get_load_counts(&loaded, &resolved);
  if (loaded != 0) {
    fatal("internal: kpack loaded %llu libraries before the baseline", static_cast<unsigned long long>(loaded));
  }
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize before the baseline");
  size_t free0 = 0, total = 0;
  cu_check(d.mem_get_info(&free0, &total), "cuMemGetInfo");
  note("lazy: %zu specializations; baseline %.1f MiB free of %.1f MiB\n", total_specs, free0 / 1048576.0,
       total / 1048576.0);
  Json("lazy", "baseline_free", static_cast<double>(free0), "bytes")
      .add("total", static_cast<double>(total))
      .add("mib", free0 / 1048576.0)
      .add("libraries_loaded", static_cast<double>(loaded))
      .emit();

  // Steps: 1, 10 and every specialization (fewer if the package is small).
  std::vector<size_t> steps = {1, std::min<size_t>(10, total_specs), total_specs};
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  size_t launched = 0;
  uint64_t fatbin_bytes = 0;
  double used_after_first = 0;
  for (const size_t target : steps) {
    for (; launched < target; ++launched) {
      const SpecLaunch& s = specs[launched];
      kpack_check(s.launch(), s.name.c_str());
      // Each launch must be a first launch of its kernel, or "N
      // specializations" is false.  (Libraries are fewer: the
      // specializations of one batch share their fatbin's.)
      uint64_t now = 0;
      kpack_get_load_counts(nullptr, &now);
      if (now != launched + 1) {
        fatal("after launching %s kpack reports %llu kernels prepared, expected %zu", s.name.c_str(),
              static_cast<unsigned long long>(now), launched + 1);
      }
      fatbin_bytes += fatbin_size_of(s.name);
    }
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after the launches");
    size_t free_now = 0;
    cu_check(d.mem_get_info(&free_now, &total), "cuMemGetInfo");
    kpack_get_load_counts(&loaded, &resolved);
    // Signed: another process on the device can free memory meanwhile.
    const double used = static_cast<double>(static_cast<int64_t>(free0) - static_cast<int64_t>(free_now));
    if (target == 1) used_after_first = used;
    const std::string name = target == total_specs ? "after_all" : strf("after_%zu", target);
    note("lazy: %zu loaded: %.2f MiB more in use (%llu bytes of fatbins)\n", target, used / 1048576.0,
         static_cast<unsigned long long>(fatbin_bytes));
    Json("lazy", name, used, "bytes")
        .add("mib", used / 1048576.0)
        .add("specializations", static_cast<double>(target))
        .add("libraries_loaded", static_cast<double>(loaded))
        .add("functions_resolved", static_cast<double>(resolved))
        .add("fatbin_bytes", static_cast<double>(fatbin_bytes))
        .emit();
    if (target == total_specs && total_specs > 1) {
      // Without what the first launch pays once per context.
      const double per = (used - used_after_first) / static_cast<double>(total_specs - 1);
      Json("lazy", "per_specialization_after_first", per, "bytes").add("mib", per / 1048576.0).emit();
    }
  }
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}

// ---- --all -------------------------------------------------------------------------------

// Each part in fresh processes, so that none sees what another loaded:
// lazy memory first, then launch cost, then cold launches.
int run_all(const std::string& fatbin_dir) {
  arm_watchdog(580);
  const std::string fatbin = fatbin_path_in(fatbin_dir);
  if (access(fatbin.c_str(), R_OK) != 0) fatal("cannot read %s: %s", fatbin.c_str(), std::strerror(errno));
  note("== lazy ==\n");
  require_child_ok(run_self({"--lazy", "--timeout", "120"}, false), "the --lazy child");
  note("== launch ==\n");
  require_child_ok(run_self({"--launch", fatbin_dir, "--rounds", std::to_string(g_opt.rounds), "--batch",
                             std::to_string(g_opt.batch), "--warmup", std::to_string(g_opt.warmup_rounds),
                             "--timeout", "300"},
                            false),
                   "the --launch child");
  note("== cold ==\n");
  return run_cold_repeat(g_opt.cold_runs, g_opt.cold_diag_runs, fatbin_dir);
}

// ---- Command line --------------------------------------------------------------------------

[[noreturn]] void usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "%s: %s\n", kProg, why);
  std::fprintf(stderr,
               "usage: %s MODE [OPTIONS]\n"
               "modes:\n"
               "  --launch FATBIN_DIR        host time per launch: raw cuLaunchKernel, kpack typed launcher,\n"
               "                             <<<>>>, kpack dispatcher, <<<>>> + cudaGetLastError\n"
               "  --dispatch-cost            host time of the typed launcher, dispatcher and auto\n"
               "                             dispatcher on an empty problem (no launch)\n"
               "  --cold-kpack               first kpack launch in this process (one JSON line)\n"
               "  --cold-raw FATBIN          first cuLibraryLoadData + cuLaunchKernel in this process\n"
               "  --cold-raw-preserved FATBIN  the same with CU_LIBRARY_BINARY_IS_PRESERVED, as kpack loads\n"
               "  --cold-cuda                first <<<>>> launch in this process\n"
               "  --cold-repeat N FATBIN_DIR the cold modes N times each in fresh processes (the two\n"
               "                             kpack diagnostics --cold-diagnostic-runs times)\n"
               "  --lazy                     device memory after loading 1, 10 and all specializations\n"
               "  --all FATBIN_DIR           --lazy, --launch and --cold-repeat, each in fresh processes\n"
               "FATBIN_DIR holds %s.fatbin (build/manifests/kernels.kpack/fatbins).\n"
               "options:\n"
               "  --rounds N     measured rounds of --launch (default 1000)\n"
               "  --warmup N     unmeasured rounds before them (default 20)\n"
               "  --batch N      launches per timed batch, 1..1024 (default 256)\n"
               "  --cold-runs N  fresh processes per cold variant in --all (default 36)\n"
               "  --cold-diagnostic-runs N  fresh processes per kpack cold diagnostic (prefaulted,\n"
               "                 driver warm, after kpack_init, ...) in --all and --cold-repeat,\n"
               "                 0 for none (default 8)\n"
               "  --timeout S    exit 124 after S seconds (default: per mode)\n"
               "  --quiet        no notes on stderr\n"
               "Exit: 0 ok, 1 error, 2 usage, 77 no CUDA device, 124 timed out.\n",
               kProg, kSpec);
  std::exit(kExitUsage);
}

int parse_count(const char* flag, const char* text, int lo, int hi) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    usage(strf("%s needs an integer in [%d, %d], got '%s'", flag, lo, hi, text).c_str());
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0 && argv[0] != nullptr) g_argv0 = argv[0];
  std::string mode, operand;
  int repeat = 0;
  const auto need = [&](int& i, const char* flag) -> const char* {
    if (i + 1 >= argc) usage(strf("%s needs an argument", flag).c_str());
    return argv[++i];
  };
  const auto set_mode = [&](const char* m) {
    if (!mode.empty()) usage(strf("choose one mode, not %s and %s", mode.c_str(), m).c_str());
    mode = m;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--launch" || a == "--cold-raw" || a == "--cold-raw-no-prelude" || a == "--cold-raw-preserved" ||
        a == "--all") {
      set_mode(argv[i]);
      operand = need(i, a.c_str());
    } else if (a == "--cold-kpack" || a == "--cold-cuda" || a == "--lazy" || a == "--cold-kpack-prefaulted" ||
               a == "--dispatch-cost" ||
               a == "--cold-kpack-driver-warm" || a == "--cold-kpack-driver-api-warm" ||
               a == "--cold-kpack-after-init") {
      set_mode(argv[i]);
    } else if (a == "--cold-repeat") {
      set_mode(argv[i]);
      repeat = parse_count("--cold-repeat", need(i, "--cold-repeat"), 1, 100000);
      operand = need(i, "--cold-repeat");
    } else if (a == "--rounds") {
      g_opt.rounds = parse_count("--rounds", need(i, "--rounds"), 1, 10000000);
    } else if (a == "--warmup") {
      g_opt.warmup_rounds = parse_count("--warmup", need(i, "--warmup"), 0, 10000000);
    } else if (a == "--batch") {
      // A batch must fit the launch queue (about a thousand launches) so
      // that a launch never waits for the GPU inside the timing.
      g_opt.batch = parse_count("--batch", need(i, "--batch"), 1, 1024);
    } else if (a == "--cold-runs") {
      g_opt.cold_runs = parse_count("--cold-runs", need(i, "--cold-runs"), 1, 100000);
    } else if (a == "--cold-diagnostic-runs") {
      g_opt.cold_diag_runs = parse_count("--cold-diagnostic-runs", need(i, "--cold-diagnostic-runs"), 0, 100000);
    } else if (a == "--timeout") {
      g_opt.timeout_s = parse_count("--timeout", need(i, "--timeout"), 1, 86400);
    } else if (a == "--quiet") {
      g_opt.quiet = true;
    } else if (a == "-h" || a == "--help") {
      usage(nullptr);
    } else {
      usage(strf("unknown argument '%s'", argv[i]).c_str());
    }
  }
  if (mode.empty()) usage("no mode given");

  if (mode == "--launch") return run_launch(operand);
  if (mode == "--dispatch-cost") return run_dispatch_cost();
  if (mode == "--cold-kpack") return run_cold(Cold::kKpack, "");
  if (mode == "--cold-raw") return run_cold(Cold::kRaw, operand);
  if (mode == "--cold-cuda") return run_cold(Cold::kCuda, "");
  if (mode == "--cold-kpack-prefaulted") return run_cold(Cold::kKpackPrefaulted, "");
  if (mode == "--cold-kpack-driver-warm") return run_cold(Cold::kKpackDriverWarm, "");
  if (mode == "--cold-kpack-driver-api-warm") return run_cold(Cold::kKpackDriverApiWarm, "");
  if (mode == "--cold-kpack-after-init") return run_cold(Cold::kKpackInit, "");
  if (mode == "--cold-raw-no-prelude") return run_cold(Cold::kRawNoPrelude, operand);
  if (mode == "--cold-raw-preserved") return run_cold(Cold::kRawPreserved, operand);
  if (mode == "--cold-repeat") {
    arm_watchdog(580);
    return run_cold_repeat(repeat, std::min(repeat, g_opt.cold_diag_runs), operand);
  }
  if (mode == "--lazy") return run_lazy();
  return run_all(operand);
}
