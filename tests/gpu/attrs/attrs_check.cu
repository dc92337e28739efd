// attrs_check.cu - checks on a GPU (sm_90) that kpack's launches with
// launch attributes really have them, with the kernels of
// tests/gpu/attrs/attrs.cuh as kpack packages them (package.yaml, prefix
// kat):
//
//   cluster_fixed<N>    __cluster_dims__(2, 1, 1) in the source, a plain
//                       kpack_launch: every block must see a cluster of 2
//                       blocks, its rank, and its partner's blockIdx.x
//                       through distributed shared memory.  The same
//                       instantiation launched directly (<<<>>>) must give
//                       the same output.  A grid of 3 blocks must be
//                       refused by the driver (the cubin's cluster applies).
//   cluster_runtime<C>  no cluster in the source, launch.cluster [C]
//                       (kpack_launch_ex with cluster Cx1x1): clusters of C
//                       blocks, for C = 1, 2, 4, as with the direct
//                       cudaLaunchKernelEx with the same cluster attribute
//                       (same output); for C > 1 a grid that C
//                       does not divide must be refused by the driver, with
//                       a detail naming cuLaunchKernelEx and the cluster.
//   grid_reduce<BLOCK>  cooperative: true (kpack_launch_ex with
//                       KPACK_LAUNCH_COOPERATIVE): a two-phase sum across a
//                       grid-wide barrier; out[1] = 1 (this_grid() could
//                       synchronize), and partials and the sum must equal
//                       the CPU's exactly.  Grids of 1 block, the SM count,
//                       the most co-resident blocks
//                       (cudaOccupancyMaxActiveBlocksPerMultiprocessor on
//                       the direct instantiation x SMs) and a random one.
//                       That the launch was cooperative shows in the
//                       driver's refusal of one block more than fits, which
//                       it checks for cooperative launches only: it must
//                       give KPACK_ERROR_LAUNCH_FAILED, CUresult 720
//                       (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), a detail
//                       naming cuLaunchKernelEx, the grid and "cooperative",
//                       and leave the outputs alone.  (this_grid().is_valid()
//                       cannot tell: a CUDA 13.0 driver gives a plain launch
//                       of the kernel a grid workspace too.)  For comparison,
//                       the direct cudaLaunchCooperativeKernel: the same
//                       outputs, and the same refusal one block past fit.
//
// Inputs are fresh random values each run (the seed is printed;
// KPACK_GPU_TEST_SEED=<seed> reproduces them); outputs are filled with 0xFF
// bytes before every launch.  Each launch goes through the typed launcher of
// its specialization; every kpack_status is checked, and a failure prints
// kpack_status_name(), kpack_last_cu_result() and kpack_last_error_detail().
//
// Output: "PASS"/"FAIL" lines, then "N passed, M failed".  Exit status: 0
// all passed, 1 a failure or error, 2 usage, 77 no CUDA device (or not an
// sm_9x one: the package has sm_90 SASS only), 124 the watchdog
// (--timeout) fired.  --list prints the package's specializations and needs
// no GPU.
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attrs.cuh"
// The generated header of the package (C; declares its own extern "C").
#include "attrs.h"

namespace {

constexpr const char* kProg = "attrs_check";
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 77;  // Meson's "skipped", as tests/gpu uses
constexpr int kExitTimeout = 124;  // what timeout(1) returns
constexpr int kPoison = -1;        // 0xFFFFFFFF: what every output holds before a launch
constexpr int kCudaErrorCooperativeLaunchTooLarge = 720;  // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE

int g_passed = 0, g_failed = 0;
uint64_t g_seed = 0;

std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

void report(bool pass, const std::string& what, const std::string& detail) {
  std::printf("%s %s%s%s\n", pass ? "PASS" : "FAIL", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
  (pass ? g_passed : g_failed)++;
}

void print_counts() {
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  std::fflush(stdout);
}

// A CUDA runtime error ends the run (a fault in a kernel is sticky).
[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void fatal(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  print_counts();
  std::printf("%s: error: %s\n", kProg, buf);
  std::exit(1);
}

#define CUDA_OK(call)                                                                                   \
  do {                                                                                                  \
    const cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) fatal("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, cudaGetErrorName(e_), \
                                 cudaGetErrorString(e_));                                               \
  } while (0)

// "KPACK_ERROR_...: CUresult N: detail" for a kpack failure.
std::string kpack_failure(kpack_status s) {
  return strf("%s, CUresult %d: %s", kpack_status_name(s), kpack_last_cu_result(), kpack_last_error_detail());
}

// ---- Watchdog ----------------------------------------------------------------------------

void on_alarm(int) {
  static const char msg[] = "attrs_check: error: timed out (the watchdog of --timeout fired)\n";
  const ssize_t ignored = write(1, msg, sizeof msg - 1);
  (void)ignored;
  _exit(kExitTimeout);
}

void arm_watchdog(int seconds) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  alarm(static_cast<unsigned>(seconds));
}

// ---- Random numbers ----------------------------------------------------------------------

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() { return splitmix64(s); }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

// The stream of one case: the run's seed mixed with the case's name.
Rng case_rng(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  uint64_t s = g_seed ^ h;
  return Rng(splitmix64(s));
}

uint64_t choose_seed() {
  const char* env = std::getenv("KPACK_GPU_TEST_SEED");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(env, &end, 0);
    if (errno != 0 || end == env || *end != '\0') {
      std::fprintf(stderr, "%s: KPACK_GPU_TEST_SEED='%s' is not an unsigned integer\n", kProg, env);
      std::exit(kExitUsage);
    }
    return v;
  }
  std::random_device rd;
  const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t) & ((1ull << 53) - 1);
}

// ---- Device buffers ----------------------------------------------------------------------

// A device array of ints that is poisoned (0xFF bytes) before each launch.
struct DeviceInts {
  int* ptr = nullptr;
  size_t count = 0;
  explicit DeviceInts(size_t n) : count(n) { CUDA_OK(cudaMalloc(&ptr, n * sizeof(int))); }
  ~DeviceInts() { cudaFree(ptr); }
  DeviceInts(const DeviceInts&) = delete;
  DeviceInts& operator=(const DeviceInts&) = delete;
  void poison(cudaStream_t s) { CUDA_OK(cudaMemsetAsync(ptr, 0xFF, count * sizeof(int), s)); }
  std::vector<int> read(cudaStream_t s) const {
    std::vector<int> h(count);
    CUDA_OK(cudaMemcpyAsync(h.data(), ptr, count * sizeof(int), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    return h;
  }
};

struct Device {
  cudaDeviceProp prop;
  int sms = 0;
};

// Exits 77 without a device, or with one that cannot run sm_90 SASS (the
// package's only arch; this program has no PTX either).  Makes device 0's
// primary context current, which kpack's launches use.
Device open_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("%s: skipped: no CUDA device (%s)\n", kProg,
                e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none");
    std::exit(kExitNoDevice);
  }
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr));
  Device d;
  CUDA_OK(cudaGetDeviceProperties(&d.prop, 0));
  d.sms = d.prop.multiProcessorCount;
  int drv = 0, rt = 0;
  CUDA_OK(cudaDriverGetVersion(&drv));
  CUDA_OK(cudaRuntimeGetVersion(&rt));
  std::printf("%s: device 0: %s, sm_%d%d, %d SMs, driver CUDA %d.%d, runtime %d.%d\n", kProg, d.prop.name,
              d.prop.major, d.prop.minor, d.sms, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
  if (d.prop.major != 9) {
    std::printf("%s: skipped: device sm_%d%d cannot run sm_90 SASS, the only arch built\n", kProg, d.prop.major,
                d.prop.minor);
    std::exit(kExitNoDevice);
  }
  int cluster_launch = 0, cooperative_launch = 0;
  CUDA_OK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, 0));
  CUDA_OK(cudaDeviceGetAttribute(&cooperative_launch, cudaDevAttrCooperativeLaunch, 0));
  std::printf("%s: device 0: cluster launch %d, cooperative launch %d\n", kProg, cluster_launch, cooperative_launch);
  return d;
}

// The package as built: name, ABI, and its specializations.
bool print_package() {
  kpack_build_info info;
  const kpack_status s = kat_build_info(&info);
  if (s != KPACK_SUCCESS) {
    report(false, "package build_info", kpack_failure(s));
    return false;
  }
  std::printf("%s: package %s, kpack %s, abi %d, %s build, %zu specializations\n", kProg, info.package,
              info.kpack_version, info.abi_version, info.build_mode, kat_num_specializations());
  for (size_t i = 0; i < kat_num_specializations(); ++i) {
    kpack_spec_info si;
    const kpack_status t = kat_specialization_info(i, &si);
    if (t != KPACK_SUCCESS) {
      report(false, strf("package specialization_info(%zu)", i), kpack_failure(t));
      return false;
    }
    std::printf("%s:   %s (kernel %s) sass %s, %s, fatbin %" PRIu64 " bytes\n", kProg, si.name, si.kernel, si.archs,
                si.build_mode, si.fatbin_size);
  }
  return true;
}

// ---- Clusters ----------------------------------------------------------------------------

// Checks out[4b .. 4b+3] for `blocks` blocks in clusters of `cluster` along x:
// {cluster, b % cluster, tag, the block of the next rank}; nothing beyond.
std::string check_cluster_output(const std::vector<int>& out, unsigned blocks, int cluster, int tag) {
  int bad = 0;
  std::string first;
  for (unsigned b = 0; b < out.size() / 4; ++b) {
    int want[4] = {kPoison, kPoison, kPoison, kPoison};
    if (b < blocks) {
      const int rank = static_cast<int>(b % cluster);
      want[0] = cluster;
      want[1] = rank;
      want[2] = tag;
      want[3] = static_cast<int>(b - rank) + (rank + 1) % cluster;
    }
    for (int i = 0; i < 4; ++i) {
      if (out[4 * b + i] == want[i]) continue;
      if (bad++ == 0) {
        first = strf("block %u: {blocks, rank, tag, peer} = {%d, %d, %d, %d}, want {%d, %d, %d, %d}", b,
                     out[4 * b], out[4 * b + 1], out[4 * b + 2], out[4 * b + 3], want[0], want[1], want[2], want[3]);
      }
      break;
    }
  }
  if (bad == 0) return "";
  return strf("%d of %zu blocks wrong; first %s", bad, out.size() / 4, first.c_str());
}

// Block counts to launch clusters of `cluster` with: one cluster, the SM
// count rounded up to clusters, 1024 blocks (more than run at once), and a
// random number of clusters.
std::vector<unsigned> cluster_grids(int cluster, const Device& d, Rng& rng) {
  const unsigned c = static_cast<unsigned>(cluster);
  const auto round_up = [c](unsigned b) { return (b + c - 1) / c * c; };
  return {c, round_up(static_cast<unsigned>(d.sms)), round_up(1024), static_cast<unsigned>(rng.range(1, 300)) * c};
}

using ClusterLauncher = kpack_status (*)(kpack_stream, int32_t*, uint32_t);

// One launch: poison, launch, read back, check.  `launch` returns the status
// (KPACK_SUCCESS, or a failure already described by `failure`).
template <typename Launch>
void run_cluster_case(const std::string& what, DeviceInts& out, cudaStream_t stream, unsigned blocks, int cluster,
                      int tag, Launch launch, std::vector<int>* result = nullptr) {
  out.poison(stream);
  std::string failure;
  if (!launch(blocks, &failure)) {
    report(false, what, failure);
    return;
  }
  CUDA_OK(cudaGetLastError());
  const std::vector<int> h = out.read(stream);
  const std::string err = check_cluster_output(h, blocks, cluster, tag);
  report(err.empty(), what, err.empty() ? strf("%u blocks in clusters of %d", blocks, cluster) : err);
  if (result != nullptr) *result = h;
}

// A launch that the driver must refuse: KPACK_ERROR_LAUNCH_FAILED with a
// detail containing each of `needles`, and the outputs left alone.
void expect_refused(const std::string& what, kpack_status s, const std::vector<std::string>& needles, int want_cu,
                    DeviceInts& out, cudaStream_t stream) {
  if (s == KPACK_SUCCESS) {
    CUDA_OK(cudaStreamSynchronize(stream));
    report(false, what, "the launch succeeded; it must fail");
    return;
  }
  const std::string detail = kpack_last_error_detail();
  const int cu = kpack_last_cu_result();
  std::string err;
  if (s != KPACK_ERROR_LAUNCH_FAILED) err = strf("status %s, want KPACK_ERROR_LAUNCH_FAILED", kpack_status_name(s));
  if (err.empty() && want_cu != 0 && cu != want_cu) err = strf("CUresult %d, want %d", cu, want_cu);
  for (const std::string& n : needles) {
    if (err.empty() && detail.find(n) == std::string::npos) err = strf("the detail does not name '%s'", n.c_str());
  }
  if (err.empty()) {
    for (const int v : out.read(stream)) {
      if (v != kPoison) {
        err = "the outputs changed";
        break;
      }
    }
  }
  report(err.empty(), what,
         err.empty() ? strf("%s, CUresult %d: %s", kpack_status_name(s), cu, detail.c_str())
                     : strf("%s (%s, CUresult %d: %s)", err.c_str(), kpack_status_name(s), cu, detail.c_str()));
}

template <int N>
void check_cluster_fixed(ClusterLauncher launcher, const Device& d, cudaStream_t stream) {
  const std::string name = strf("cluster_fixed_n%d", N);
  Rng rng = case_rng(name);
  const std::vector<unsigned> grids = cluster_grids(2, d, rng);
  unsigned most = 0;
  for (const unsigned g : grids) most = g > most ? g : most;
  DeviceInts out(4 * static_cast<size_t>(most));
  for (const unsigned blocks : grids) {
    std::vector<int> via_kpack, via_direct;
    run_cluster_case(
        strf("%s kpack blocks=%u", name.c_str(), blocks), out, stream, blocks, 2, N,
        [&](unsigned b, std::string* failure) {
          const kpack_status s = launcher(stream, out.ptr, b);
          if (s != KPACK_SUCCESS) *failure = kpack_failure(s);
          return s == KPACK_SUCCESS;
        },
        &via_kpack);
    run_cluster_case(
        strf("%s direct blocks=%u", name.c_str(), blocks), out, stream, blocks, 2, N,
        [&](unsigned b, std::string*) {
          kpack_attrs::cluster_fixed<N><<<b, 128, 0, stream>>>(out.ptr);
          CUDA_OK(cudaGetLastError());
          return true;
        },
        &via_direct);
    report(via_kpack == via_direct, strf("%s kpack==direct blocks=%u", name.c_str(), blocks),
           via_kpack == via_direct ? "" : "kpack's output differs from the direct launch's");
  }
  // The cubin's cluster of 2 cannot tile 3 blocks: the driver must refuse
  // the plain launch (after the successful ones: no first-launch load).
  out.poison(stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  expect_refused(strf("%s kpack blocks=3 refused", name.c_str()), launcher(stream, out.ptr, 3), {"cuLaunchKernel("},
                 0, out, stream);
}

template <int C>
void check_cluster_runtime(ClusterLauncher launcher, const Device& d, cudaStream_t stream) {
  const std::string name = strf("cluster_runtime_c%d", C);
  Rng rng = case_rng(name);
  const std::vector<unsigned> grids = cluster_grids(C, d, rng);
  unsigned most = 0;
  for (const unsigned g : grids) most = g > most ? g : most;
  DeviceInts out(4 * static_cast<size_t>(most));
  for (const unsigned blocks : grids) {
    std::vector<int> via_kpack, via_direct;
    run_cluster_case(
        strf("%s kpack blocks=%u", name.c_str(), blocks), out, stream, blocks, C, C,
        [&](unsigned b, std::string* failure) {
          const kpack_status s = launcher(stream, out.ptr, b);
          if (s != KPACK_SUCCESS) *failure = kpack_failure(s);
          return s == KPACK_SUCCESS;
        },
        &via_kpack);
    run_cluster_case(
        strf("%s direct blocks=%u", name.c_str(), blocks), out, stream, blocks, C, C,
        [&](unsigned b, std::string*) {
          cudaLaunchConfig_t config = {};
          cudaLaunchAttribute attr[1];
          attr[0].id = cudaLaunchAttributeClusterDimension;
          attr[0].val.clusterDim.x = C;
          attr[0].val.clusterDim.y = 1;
          attr[0].val.clusterDim.z = 1;
          config.gridDim = dim3(b);
          config.blockDim = dim3(128);
          config.stream = stream;
          config.attrs = attr;
          config.numAttrs = 1;
          CUDA_OK(cudaLaunchKernelEx(&config, kpack_attrs::cluster_runtime<C>, out.ptr));
          return true;
        },
        &via_direct);
    report(via_kpack == via_direct, strf("%s kpack==direct blocks=%u", name.c_str(), blocks),
           via_kpack == via_direct ? "" : "kpack's output differs from the direct launch's");
  }
  if (C > 1) {
    const unsigned blocks = 2 * C + 1;
    out.poison(stream);
    CUDA_OK(cudaStreamSynchronize(stream));
    expect_refused(strf("%s kpack blocks=%u refused", name.c_str(), blocks), launcher(stream, out.ptr, blocks),
                   {"cuLaunchKernelEx(", strf("cluster %dx1x1", C)}, 0, out, stream);
  }
}

// ---- Cooperative launch ------------------------------------------------------------------

using ReduceLauncher = kpack_status (*)(kpack_stream, const int32_t*, int32_t, int32_t*, int32_t*, uint32_t);

// Block b's slice of in[0 .. n) as the kernel cuts it: ceil(n / blocks)
// elements from b times that.
std::vector<int> cpu_partials(const std::vector<int>& in, unsigned blocks) {
  const long long n = static_cast<long long>(in.size());
  const long long chunk = (n + blocks - 1) / blocks;
  std::vector<int> p(blocks, 0);
  for (unsigned b = 0; b < blocks; ++b) {
    long long sum = 0;
    for (long long i = chunk * b; i < chunk * (b + 1) && i < n; ++i) sum += in[i];
    p[b] = static_cast<int>(sum);
  }
  return p;
}

template <int BLOCK>
void check_grid_reduce(ReduceLauncher launcher, const Device& d, cudaStream_t stream) {
  const std::string name = strf("grid_reduce_b%d", BLOCK);
  Rng rng = case_rng(name);
  int per_sm = 0;
  CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kpack_attrs::grid_reduce<BLOCK>, BLOCK, 0));
  const unsigned fit = static_cast<unsigned>(per_sm) * static_cast<unsigned>(d.sms);
  std::printf("%s: %s: %d blocks per SM x %d SMs: at most %u co-resident blocks\n", kProg, name.c_str(), per_sm,
              d.sms, fit);
  if (fit == 0) {
    report(false, name + " occupancy", "no block of the kernel fits an SM");
    return;
  }
  constexpr int kMaxN = 1 << 20;  // |in[i]| <= 1000: every sum fits an int
  DeviceInts in(kMaxN), partials(fit + 1), out(2);
  struct Case {
    unsigned blocks;
    int n;
  };
  const std::vector<Case> cases = {
      {1, static_cast<int>(rng.range(1, 5000))},
      {static_cast<unsigned>(d.sms), static_cast<int>(rng.range(1, kMaxN))},
      {fit, kMaxN},
      {fit, static_cast<int>(rng.range(1, fit > 1 ? fit - 1 : 1))},  // fewer elements than blocks
      {static_cast<unsigned>(rng.range(1, fit)), static_cast<int>(rng.range(1, kMaxN))},
  };
  for (const Case& c : cases) {
    std::vector<int> h_in(c.n);
    for (int& v : h_in) v = static_cast<int>(rng.range(-1000, 1000));
    CUDA_OK(cudaMemcpyAsync(in.ptr, h_in.data(), h_in.size() * sizeof(int), cudaMemcpyHostToDevice, stream));
    const std::vector<int> want_partials = cpu_partials(h_in, c.blocks);
    long long want_sum = 0;
    for (const int v : h_in) want_sum += v;

    for (const char* path : {"kpack", "direct"}) {
      const std::string what = strf("%s %s blocks=%u n=%d", name.c_str(), path, c.blocks, c.n);
      partials.poison(stream);
      out.poison(stream);
      const int* in_ptr = in.ptr;
      int n = c.n;
      int* p_ptr = partials.ptr;
      int* o_ptr = out.ptr;
      const std::string p = path;
      if (p == "kpack") {
        const kpack_status s = launcher(stream, in_ptr, n, p_ptr, o_ptr, c.blocks);
        if (s != KPACK_SUCCESS) {
          report(false, what, kpack_failure(s));
          continue;
        }
      } else {
        void* args[] = {&in_ptr, &n, &p_ptr, &o_ptr};
        CUDA_OK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kpack_attrs::grid_reduce<BLOCK>),
                                            dim3(c.blocks), dim3(BLOCK), args, 0, stream));
      }
      const std::vector<int> h_out = out.read(stream);
      const std::vector<int> h_partials = partials.read(stream);
      std::string err;
      if (h_out[1] != 1) err = strf("out[1] = %d, want 1 (the grid could not synchronize)", h_out[1]);
      for (size_t b = 0; err.empty() && b < h_partials.size(); ++b) {
        const int want = b < c.blocks ? want_partials[b] : kPoison;
        if (h_partials[b] != want) err = strf("partials[%zu] = %d, want %d", b, h_partials[b], want);
      }
      if (err.empty() && h_out[0] != want_sum) err = strf("sum %d, want %lld", h_out[0], want_sum);
      report(err.empty(), what, err.empty() ? strf("sum %lld", want_sum) : err);
    }
  }

  // One block more than fits: the driver must refuse the cooperative launch.
  partials.poison(stream);
  out.poison(stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  const kpack_status s = launcher(stream, in.ptr, kMaxN, partials.ptr, out.ptr, fit + 1);
  expect_refused(strf("%s kpack blocks=%u (one more than fits) refused", name.c_str(), fit + 1), s,
                 {"cuLaunchKernelEx(", strf("grid %ux1x1", fit + 1), "cooperative",
                  "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
                 kCudaErrorCooperativeLaunchTooLarge, out, stream);
  for (const int v : partials.read(stream)) {
    if (v != kPoison) {
      report(false, name + " refused launch left partials alone", "partials changed");
      break;
    }
  }

  // The direct cooperative launch of the same grid: refused the same way,
  // so `fit` is the driver's limit for this code, not kpack's doing.
  {
    const int* in_ptr = in.ptr;
    int n = kMaxN;
    int* p_ptr = partials.ptr;
    int* o_ptr = out.ptr;
    void* args[] = {&in_ptr, &n, &p_ptr, &o_ptr};
    const cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kpack_attrs::grid_reduce<BLOCK>),
                                                      dim3(fit + 1), dim3(BLOCK), args, 0, stream);
    (void)cudaGetLastError();  // a launch error is not sticky; clear it
    report(e == cudaErrorCooperativeLaunchTooLarge,
           strf("%s direct blocks=%u (one more than fits) refused", name.c_str(), fit + 1),
           strf("%s (%d)", cudaGetErrorName(e), static_cast<int>(e)));
  }
}

// ---- Main --------------------------------------------------------------------------------

// The typed launchers of every built specialization, by constexpr value.
struct {
  int n;
  ClusterLauncher launcher;
} const kClusterFixed[] = {{3, kat_cluster_fixed_n3}, {5, kat_cluster_fixed_n5}};
struct {
  int c;
  ClusterLauncher launcher;
} const kClusterRuntime[] = {{1, kat_cluster_runtime_c1}, {2, kat_cluster_runtime_c2}, {4, kat_cluster_runtime_c4}};
struct {
  int block;
  ReduceLauncher launcher;
} const kGridReduce[] = {{128, kat_grid_reduce_b128}, {512, kat_grid_reduce_b512}};

// The tables above must be the package's configs, in order.
bool tables_match_package() {
  bool ok = sizeof kClusterFixed / sizeof kClusterFixed[0] == KAT_CLUSTER_FIXED_NUM_CONFIGS &&
            sizeof kClusterRuntime / sizeof kClusterRuntime[0] == KAT_CLUSTER_RUNTIME_NUM_CONFIGS &&
            sizeof kGridReduce / sizeof kGridReduce[0] == KAT_GRID_REDUCE_NUM_CONFIGS;
  for (int i = 0; ok && i < KAT_CLUSTER_FIXED_NUM_CONFIGS; ++i) ok = kClusterFixed[i].n == kat_cluster_fixed_configs[i].N;
  for (int i = 0; ok && i < KAT_CLUSTER_RUNTIME_NUM_CONFIGS; ++i)
    ok = kClusterRuntime[i].c == kat_cluster_runtime_configs[i].C;
  for (int i = 0; ok && i < KAT_GRID_REDUCE_NUM_CONFIGS; ++i) ok = kGridReduce[i].block == kat_grid_reduce_configs[i].BLOCK;
  return ok;
}

// The direct instantiations, by value (templates: one call per value).
void run_all(const Device& d, cudaStream_t stream) {
  check_cluster_fixed<3>(kClusterFixed[0].launcher, d, stream);
  check_cluster_fixed<5>(kClusterFixed[1].launcher, d, stream);
  check_cluster_runtime<1>(kClusterRuntime[0].launcher, d, stream);
  check_cluster_runtime<2>(kClusterRuntime[1].launcher, d, stream);
  check_cluster_runtime<4>(kClusterRuntime[2].launcher, d, stream);
  check_grid_reduce<128>(kGridReduce[0].launcher, d, stream);
  check_grid_reduce<512>(kGridReduce[1].launcher, d, stream);
}

[[noreturn]] void usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "%s: %s\n", kProg, why);
  std::fprintf(stderr,
               "usage: %s [--timeout S]\n"
               "       %s --list\n"
               "  --timeout S   exit 124 after S seconds (default 120)\n"
               "  --list        the package's specializations (no GPU)\n"
               "environment: KPACK_GPU_TEST_SEED=<seed> reproduces a run's inputs\n"
               "exit: 0 ok, 1 failure or error, 2 usage, 77 no sm_9x CUDA device, 124 timed out\n",
               kProg, kProg);
  std::exit(kExitUsage);
}

}  // namespace

int main(int argc, char** argv) {
  int timeout_s = 120;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") {
      list = true;
    } else if (a == "--timeout" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 1 || v > 86400) usage("--timeout takes 1 to 86400 seconds");
      timeout_s = static_cast<int>(v);
    } else if (a == "-h" || a == "--help") {
      usage(nullptr);
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (!tables_match_package()) {
    std::printf("%s: error: the launcher tables of attrs_check.cu are not the package's configs\n", kProg);
    return 1;
  }
  if (list) return print_package() ? 0 : 1;

  arm_watchdog(timeout_s);
  g_seed = choose_seed();
  std::printf("%s: seed %" PRIu64 " (KPACK_GPU_TEST_SEED=%" PRIu64 " reproduces the inputs)\n", kProg, g_seed, g_seed);
  const Device d = open_device();
  if (!print_package()) {
    print_counts();
    return 1;
  }
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  run_all(d, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaStreamDestroy(stream));
  print_counts();
  return g_failed == 0 ? 0 : 1;
}
