// faults_check.cc - the runtime's fault statuses on a real GPU and driver.
//
// tests/fake_cuda checks every fault against a simulated driver; this file
// checks that the real driver produces the same statuses, so that the fake
// is not the only witness.  Each check prints one line
//
//   PASS|FAIL <check>: <status name>, CUresult <n>, detail "<detail>"[; note]
//
// or SKIP when the device or driver cannot set the check up (the line says
// why), and the run ends with "N passed, M failed, K skipped".  Exit 0 when
// none failed, 1 on any failure, 77 (Meson's "skipped") without a CUDA
// device.
//
// Not checked: a launch on a destroyed stream.  Using a destroyed handle is
// undefined behaviour in CUDA, and the H100's driver (580.159.04) dies of
// SIGSEGV inside cuLaunchKernel on one (2026-11-23, tests/gpu/RESULTS.md).
// kpack passes the caller's stream through untouched: telling a destroyed
// stream from a live one would take a driver query on every launch, which
// the hot path's promise (the cost of a raw cuLaunchKernel) rules out.
//
// Checks that can take the whole process down (a bogus stream handle, which
// the driver may dereference) or that need a different process setup (no
// device, no libcuda) run in a child: this same binary, started with
// posix_spawn and an argv (no shell) as `faults_check --child MODE`.  The
// child prints one line "<status value> <CUresult> <detail>" and exits 0, so
// a crash shows up as a signal instead of a status.
//
// Memory is only ever plain cudaMalloc memory (never managed), so filling
// the device in check (d) cannot be undone by the driver paging it out.
#include <cuda.h>
#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "kernels.h"

extern char** environ;

// The runtime's test seam (runtime/kpack_internal.h, which is not installed
// with kpack.h): dlopen this path instead of libcuda.so.1.  libkernels.a
// holds the runtime, so the symbol is there.
extern "C" void kpack_set_driver_path_for_testing(const char* path);

namespace {

constexpr int64_t kN = 4096;  // elements per vector_add launch
constexpr int kInvalidContext = 201;   // CUDA_ERROR_INVALID_CONTEXT
constexpr int kNoDevice = 100;         // CUDA_ERROR_NO_DEVICE
constexpr int kContextDestroyed = 709; // CUDA_ERROR_CONTEXT_IS_DESTROYED
constexpr const char* kMissingDriver = "/nonexistent/kpack-faults-check/libcuda.so.1";

// ---- Driver entry points ------------------------------------------------------
// The test is linked against the static CUDA runtime only (like gpu_test),
// so that it starts, and skips, on a machine without libcuda; the few
// driver calls it needs are fetched through the runtime at the version of
// the cuda.h it is compiled with, so each pointer has the signature that
// header declares.  (cuCtxCreate is cuCtxCreate_v4 since CUDA 12.5, with a
// parameter struct before the flags: fetching it at 12.0 while calling the
// new signature, or the reverse, passes garbage as the device.)
using CtxCreateFn = decltype(&cuCtxCreate);
using CtxFn = CUresult (*)(CUcontext);
using StreamCreateFn = CUresult (*)(CUstream*, unsigned int);
using StreamFn = CUresult (*)(CUstream);

struct Driver {
  CtxCreateFn ctx_create_entry = nullptr;
  // A new context on `dev`, made current on this thread.
  CUresult ctx_create(CUcontext* ctx, unsigned int flags, CUdevice dev) const {
#if CUDA_VERSION >= 12050
    return ctx_create_entry(ctx, nullptr, flags, dev);
#else
    return ctx_create_entry(ctx, flags, dev);
#endif
  }
  CtxFn ctx_destroy = nullptr;
  StreamCreateFn stream_create = nullptr;
  StreamFn stream_destroy = nullptr;
  StreamFn stream_synchronize = nullptr;
};

template <typename Fn>
bool entry(const char* symbol, Fn* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDriverEntryPointByVersion(symbol, &p, CUDA_VERSION, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    std::printf("FATAL the driver has no %s\n", symbol);
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

bool load_driver(Driver* d) {
  return entry("cuCtxCreate", &d->ctx_create_entry) && entry("cuCtxDestroy", &d->ctx_destroy) &&
         entry("cuStreamCreate", &d->stream_create) &&
         entry("cuStreamDestroy", &d->stream_destroy) && entry("cuStreamSynchronize", &d->stream_synchronize);
}

// ---- Outcomes ------------------------------------------------------------------

// What a launch returned, with the thread's CUresult and detail read right
// after it (they are thread-local, so read on the launching thread).
struct Outcome {
  int status = -1;
  int cu = 0;
  std::string detail;
  std::string note;  // how the check got there, e.g. a child's exit
};

Outcome outcome_of(kpack_status st) {
  return Outcome{static_cast<int>(st), kpack_last_cu_result(), kpack_last_error_detail(), ""};
}

int passed = 0;
int failed = 0;
int skipped = 0;

// A check the device or driver could not set up: neither passed nor failed.
void skip(const char* check, const std::string& why) {
  ++skipped;
  std::printf("SKIP %s: %s\n", check, why.c_str());
  std::fflush(stdout);
}

void report(const char* check, bool ok, const Outcome& o) {
  ok ? ++passed : ++failed;
  std::printf("%s %s: %s, CUresult %d, detail \"%s\"%s%s\n", ok ? "PASS" : "FAIL", check,
              o.status < 0 ? "no status" : kpack_status_name(static_cast<kpack_status>(o.status)), o.cu,
              o.detail.c_str(), o.note.empty() ? "" : "; ", o.note.c_str());
  std::fflush(stdout);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Device buffers x, y, out of kN floats with x[i] = i, y[i] = 0.5 - 2i, and
// out poisoned with NaN, so an unwritten element cannot pass.
struct Buffers {
  float* x = nullptr;
  float* y = nullptr;
  float* out = nullptr;
  std::vector<float> hx, hy;

  bool init() {
    hx.resize(kN);
    hy.resize(kN);
    for (int64_t i = 0; i < kN; ++i) {
      hx[i] = static_cast<float>(i);
      hy[i] = 0.5f - 2.0f * static_cast<float>(i);
    }
    const size_t bytes = kN * sizeof(float);
    return cudaMalloc(&x, bytes) == cudaSuccess && cudaMalloc(&y, bytes) == cudaSuccess &&
           cudaMalloc(&out, bytes) == cudaSuccess &&
           cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemcpy(y, hy.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess && poison();
  }
  bool poison() {
    return cudaMemset(out, 0xff, kN * sizeof(float)) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  }
  // Compares out with the CPU's float sums; "" when equal, else the first
  // difference.
  std::string mismatch() const {
    std::vector<float> h(kN);
    cudaError_t e = cudaMemcpy(h.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return std::string("cudaMemcpy: ") + cudaGetErrorName(e);
    for (int64_t i = 0; i < kN; ++i) {
      const float want = hx[i] + hy[i];
      if (std::memcmp(&h[i], &want, sizeof want) != 0) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "out[%lld] = %g, want %g", static_cast<long long>(i), h[i], want);
        return buf;
      }
    }
    return "";
  }
  ~Buffers() {
    cudaFree(x);
    cudaFree(y);
    cudaFree(out);
  }
};

// ---- Children --------------------------------------------------------------------

// Runs `faults_check --child mode` with `env_override` ("NAME=value", or
// "" for none) replacing that variable, and turns its line into an Outcome.
// A child killed by a signal or exiting non-zero gives status -1 and a note.
Outcome run_child(const char* mode, const std::string& env_override) {
  Outcome o;
  std::vector<std::string> env_text;
  const std::string name = env_override.substr(0, env_override.find('=') + 1);
  for (char** e = environ; *e != nullptr; ++e) {
    if (name.empty() || std::strncmp(*e, name.c_str(), name.size()) != 0) env_text.emplace_back(*e);
  }
  if (!env_override.empty()) env_text.push_back(env_override);
  std::vector<char*> envp;
  for (std::string& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  char self[] = "/proc/self/exe";
  char flag[] = "--child";
  std::string mode_arg = mode;
  char* argv[] = {self, flag, mode_arg.data(), nullptr};

  int fds[2];
  if (pipe(fds) != 0) {
    o.note = "pipe failed";
    return o;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  pid_t pid = 0;
  const int spawn_error = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while (spawn_error == 0 && (n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (spawn_error != 0) {
    o.note = std::string("posix_spawn: ") + std::strerror(spawn_error);
    return o;
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (WIFSIGNALED(wstatus)) {
    o.note = "child killed by signal " + std::to_string(WTERMSIG(wstatus)) + " (" + strsignal(WTERMSIG(wstatus)) + ")";
    return o;
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    o.note = "child exited " + std::to_string(WEXITSTATUS(wstatus)) + ": " + text;
    return o;
  }
  int status = -1, cu = 0, consumed = 0;
  if (std::sscanf(text.c_str(), "%d %d %n", &status, &cu, &consumed) < 2) {
    o.note = "child printed \"" + text + "\"";
    return o;
  }
  o.status = status;
  o.cu = cu;
  o.detail = text.substr(static_cast<size_t>(consumed));
  while (!o.detail.empty() && o.detail.back() == '\n') o.detail.pop_back();
  o.note = "in a child process";
  return o;
}

// The child's side: one launch set up by `mode`, one line, exit 0.  A mode
// that needs a device makes the primary context current first.
int child_main(const std::string& mode, Driver& d) {
  kpack_status st = KPACK_ERROR_INTERNAL;
  if (mode == "no-device" || mode == "no-driver") {
    // Nothing touches CUDA before the launch: the runtime must find the
    // missing device (cuInit) or library (dlopen) on its own.  The pointers
    // are never dereferenced: the launch fails before the driver sees them.
    if (mode == "no-driver") kpack_set_driver_path_for_testing(kMissingDriver);
    float dummy = 0;
    st = kernels_vector_add_f32_b128(nullptr, &dummy, &dummy, &dummy, kN);
  } else {
    Buffers b;
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess || !b.init() ||
        !load_driver(&d)) {
      std::printf("-1 0 child setup failed\n");
      return 0;
    }
    if (mode == "bogus-stream") {
      // Not a stream at all: the address of an int on this stack.
      int not_a_stream = 0;
      st = kernels_vector_add_f32_b128(reinterpret_cast<kpack_stream>(&not_a_stream), b.x, b.y, b.out, kN);
    }
    // The process must still be usable: a good launch computes the sum.
    const Outcome bad = outcome_of(st);
    const kpack_status again = kernels_vector_add_f32_b128(nullptr, b.x, b.y, b.out, kN);
    const cudaError_t sync = cudaDeviceSynchronize();
    const std::string wrong = again == KPACK_SUCCESS && sync == cudaSuccess ? b.mismatch() : "not run";
    std::printf("%d %d %s; then a launch on the default stream: %s, sync %s%s%s\n", bad.status, bad.cu,
                bad.detail.c_str(), kpack_status_name(again), cudaGetErrorName(sync), wrong.empty() ? "" : ", ",
                wrong.empty() ? ", result correct" : wrong.c_str());
    return 0;
  }
  std::printf("%d %d %s\n", static_cast<int>(st), kpack_last_cu_result(), kpack_last_error_detail());
  return 0;
}

// ---- Checks in this process ---------------------------------------------------------

// (d) Fills device memory with plain allocations, largest first, until even
// 4 KiB fails; returns what it allocated.
std::vector<void*> fill_device() {
  std::vector<void*> held;
  for (size_t size = size_t{1} << 30; size >= 4096; size /= 2) {
    void* p = nullptr;
    while (cudaMalloc(&p, size) == cudaSuccess) held.push_back(p);
    cudaGetLastError();  // an allocation failure is not sticky; clear it anyway
  }
  return held;
}

}  // namespace

int main(int argc, char** argv) {
  Driver d;
  if (argc == 3 && std::strcmp(argv[1], "--child") == 0) return child_main(argv[2], d);

  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("faults_check: no CUDA device, skipped\n");
    return 77;
  }
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess || !load_driver(&d)) {
    std::printf("FATAL could not set up device 0\n0 passed, 1 failed\n");
    return 1;
  }
  Buffers b;
  if (!b.init()) {
    std::printf("FATAL could not allocate the test buffers\n0 passed, 1 failed\n");
    return 1;
  }

  // (a) A fresh thread has no current context until it makes one current.
  {
    Outcome o;
    std::thread([&] { o = outcome_of(kernels_vector_add_f32_b128(nullptr, b.x, b.y, b.out, kN)); }).join();
    report("no-context", o.status == KPACK_ERROR_NO_CONTEXT && o.cu == kInvalidContext &&
                             contains(o.detail, "the calling thread has no current CUDA context"),
           o);
  }

  // (b) Invalid stream handles, each in a child in case the driver
  // dereferences them; the child also checks that a good launch then works.
  for (const char* mode : {"bogus-stream"}) {
    const Outcome o = run_child(mode, "");
    report(mode, o.status == KPACK_ERROR_LAUNCH_FAILED && o.cu != 0 &&
                     contains(o.detail, "cuLaunchKernel(grid 4x1x1, block 128x1x1, smem 0) failed: ") &&
                     contains(o.detail, "then a launch on the default stream: KPACK_SUCCESS, sync cudaSuccess, "
                                        "result correct"),
           o);
  }

  // (c1) A stream of context A (the primary context) launched while context
  // B, on the same device, is current.  Either the driver refuses the launch
  // (a status, never a crash), or it runs it in the stream's context, in
  // which case the result must be right.
  {
    CUstream stream_a = nullptr;
    CUcontext ctx_b = nullptr;
    Outcome o;
    b.poison();
    const CUresult made_stream = d.stream_create(&stream_a, CU_STREAM_NON_BLOCKING);
    const CUresult made_ctx = made_stream == CUDA_SUCCESS ? d.ctx_create(&ctx_b, 0, 0) : CUDA_SUCCESS;
    if (made_stream != CUDA_SUCCESS || made_ctx != CUDA_SUCCESS) {
      skip("wrong-context-stream", "cuStreamCreate returned " + std::to_string(made_stream) + ", cuCtxCreate " +
                                       std::to_string(made_ctx));
      if (stream_a != nullptr) d.stream_destroy(stream_a);
    } else {
      o = outcome_of(kernels_vector_add_f32_b128(stream_a, b.x, b.y, b.out, kN));
      const CUresult sync = o.status == KPACK_SUCCESS ? d.stream_synchronize(stream_a) : CUDA_SUCCESS;
      d.ctx_destroy(ctx_b);  // pops B; the primary context is current again
      cudaSetDevice(0);
      const std::string wrong = o.status == KPACK_SUCCESS ? b.mismatch() : "";
      o.note = o.status == KPACK_SUCCESS ? "the driver ran it in the stream's context, sync " + std::to_string(sync) +
                                               (wrong.empty() ? ", result correct" : ", " + wrong)
                                         : "refused";
      report("wrong-context-stream",
             (o.status == KPACK_ERROR_LAUNCH_FAILED && o.cu != 0) ||
                 (o.status == KPACK_SUCCESS && sync == CUDA_SUCCESS && wrong.empty()),
             o);
      d.stream_destroy(stream_a);
    }
  }

  // (c2) A context current on one thread and destroyed by another stays
  // current on the first, destroyed (cuCtxDestroy's documented behaviour):
  // the launch must fail with a status, not use freed driver state.
  {
    std::promise<CUcontext> created;
    std::promise<void> destroyed;
    Outcome o;
    CUresult made = CUDA_SUCCESS;
    std::thread t([&] {
      CUcontext ctx = nullptr;
      const CUresult r = d.ctx_create(&ctx, 0, 0);  // current on this thread
      made = r;
      created.set_value(r == CUDA_SUCCESS ? ctx : nullptr);
      if (r != CUDA_SUCCESS) return;
      destroyed.get_future().wait();
      o = outcome_of(kernels_vector_add_f32_b128(nullptr, b.x, b.y, b.out, kN));
    });
    CUcontext ctx = created.get_future().get();
    if (ctx != nullptr) d.ctx_destroy(ctx);
    destroyed.set_value();
    t.join();
    // The fake driver fails cuCtxGetDevice (KPACK_ERROR_DRIVER); a real one
    // might only notice at cuLaunchKernel (KPACK_ERROR_LAUNCH_FAILED).  Either
    // way the CUresult must say the context is destroyed.
    const bool at_get_device = o.status == KPACK_ERROR_DRIVER &&
                               contains(o.detail, "cuCtxGetDevice failed: CUDA_ERROR_CONTEXT_IS_DESTROYED (709)");
    const bool at_launch = o.status == KPACK_ERROR_LAUNCH_FAILED &&
                           contains(o.detail, "failed: CUDA_ERROR_CONTEXT_IS_DESTROYED (709)");
    if (ctx == nullptr) {
      skip("destroyed-context", "cuCtxCreate returned " + std::to_string(made));
    } else {
      report("destroyed-context", o.cu == kContextDestroyed && (at_get_device || at_launch), o);
    }
  }

  // (d) Out of memory while loading: f32_b256 has not been launched yet, so
  // its first launch loads it into the full device.
  {
    uint64_t resolved_before = 0, resolved_after = 0;
    kpack_get_load_counts(nullptr, &resolved_before);
    b.poison();
    std::vector<void*> held = fill_device();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    Outcome o = outcome_of(kernels_vector_add_f32_b256(nullptr, b.x, b.y, b.out, kN));
    kpack_get_load_counts(nullptr, &resolved_after);
    o.note = std::to_string(held.size()) + " allocations left " + std::to_string(free_bytes >> 20) + " MiB free of " +
             std::to_string(total_bytes >> 20) + " MiB";
    // The driver may still fit the module in what cudaMalloc leaves (on the
    // H100, 2 MiB: 2026-11-23): then the launch must simply work.  Either
    // way a status, never a crash or a wrong result.
    const bool refused = o.status == KPACK_ERROR_OUT_OF_MEMORY && o.cu == CUDA_ERROR_OUT_OF_MEMORY &&
                         contains(o.detail, "failed: CUDA_ERROR_OUT_OF_MEMORY (2); device 0 has ") &&
                         contains(o.detail, " MiB free of ") && resolved_after == resolved_before;
    std::string fitted = "not run";
    if (o.status == KPACK_SUCCESS) {
      const cudaError_t synced = cudaDeviceSynchronize();
      fitted = synced != cudaSuccess ? std::string("sync ") + cudaGetErrorName(synced) : b.mismatch();
      o.note += fitted.empty() ? "; the module still fitted: loaded, ran, result correct" : "; " + fitted;
    }
    report("out-of-memory", refused || (o.status == KPACK_SUCCESS && fitted.empty() &&
                                        resolved_after == resolved_before + 1),
           o);
    for (void* p : held) cudaFree(p);
    b.poison();
    // The failure is not latched: the same launch now loads and computes.
    Outcome again = outcome_of(kernels_vector_add_f32_b256(nullptr, b.x, b.y, b.out, kN));
    const cudaError_t sync = cudaDeviceSynchronize();
    const std::string wrong = again.status == KPACK_SUCCESS && sync == cudaSuccess ? b.mismatch() : "not run";
    kpack_get_load_counts(nullptr, &resolved_after);
    again.note = std::string("after freeing: sync ") + cudaGetErrorName(sync) +
                 (wrong.empty() ? ", result correct" : ", " + wrong);
    report("out-of-memory-then-freed",
           again.status == KPACK_SUCCESS && sync == cudaSuccess && wrong.empty() &&
               resolved_after == resolved_before + 1,
           again);
  }

  // (e) No device visible: cuInit fails inside the runtime.
  {
    const Outcome o = run_child("no-device", "CUDA_VISIBLE_DEVICES=");
    report("no-device", o.status == KPACK_ERROR_NO_DEVICE && o.cu == kNoDevice &&
                            o.detail == "cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)",
           o);
  }

  // (f) No libcuda: the runtime's driver path points nowhere.
  {
    const Outcome o = run_child("no-driver", "");
    report("no-driver", o.status == KPACK_ERROR_DRIVER_NOT_FOUND && o.cu == 0 &&
                            contains(o.detail, std::string(kMissingDriver) + " could not be loaded (") &&
                            contains(o.detail, "); an NVIDIA driver is needed to launch kernels"),
           o);
  }

  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}
