// flashinfer_check.cu - FlashInfer's unchanged __global__ templates as kpack
// packages them (tests/corpus/flashinfer, prefix fic), checked on a GPU
// against the very same template instantiations launched by this nvcc
// program, and timed.
//
// Modes (one or more; none means --check):
//   --check         every built specialization (iterating the generated
//                   fic_<kernel>_configs[] arrays) on shapes engines use,
//                   through four paths: "direct" (<<<grid, block, smem,
//                   stream>>> of the same instantiation, built here),
//                   "direct_pdl" (cudaLaunchKernelEx with the programmatic
//                   stream serialization attribute), "kpack" (the typed
//                   launcher, pdl = 0) and "kpack_pdl" (pdl = 1); rope has no
//                   PDL in its manifest, so only "direct" and "kpack".
//                   Every path must be bit-identical to "direct" (outputs,
//                   in-place inputs, untouched inputs and guard bytes) and
//                   within tolerance of a double-precision CPU reference.
//   --pdl-bench     GPU time of a chain of dependent rmsnorm launches with
//                   and without PDL, through kpack and directly.
//   --launch-bench  host time per launch: kpack's typed launcher against the
//                   raw driver call on the same kernel, with and without PDL.
//   --self-test     no GPU: the CPU references on hand-computed cases, the
//                   launch geometry, and the tables of direct
//                   instantiations against the package's configs.
//   --list          no GPU: the specializations and their instantiations.
//
// Inputs are fresh random values each run; the seed is printed and
// KPACK_GPU_TEST_SEED=<seed> reproduces a run (each case draws from its own
// stream, derived from the seed and the case's name, so --only reproduces
// a case too).  Outputs are filled with 0xFF bytes (NaN in f16 and bf16)
// before every launch and have 256 guard bytes on either side.
//
// Output: one "PASS"/"FAIL" line per (specialization, shape, path), a
// coverage line, then "N passed, M failed"; the benches print "pdl: ..." and
// "launch: ..." key=value lines (README: tests/gpu/flashinfer.md).  --json
// FILE writes the same as one JSON document.  Exit status: 0 all passed,
// 1 a failure or error, 2 usage, 77 no CUDA device (or one whose arch was
// not built), 124 the watchdog (--timeout) fired.
//
// Every CUDA runtime, driver and kpack call is checked.  A kpack launch that
// fails is a FAIL line with kpack_status_name() and kpack_last_error_detail();
// a CUDA error (a fault in a kernel is sticky) ends the run with one
// "flashinfer_check: error:" line, after the counts.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

// FlashInfer's headers, as kpack's units include them (-I order: the CCCL
// of the corpus cache, then the wheel's include directory), and the
// corpus's activations.
#include <flashinfer/norm.cuh>
#include <flashinfer/pos_enc.cuh>

#include "activations.cuh"

// The generated header of the package (C; declares its own extern "C").
#include "fic.h"
// The project's element conversions (tests/gpu/reference.cc).
#include "reference.h"

namespace {

using kref::DType;
using Bytes = std::vector<unsigned char>;
using Clock = std::chrono::steady_clock;

constexpr const char* kProg = "flashinfer_check";
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 77;  // Meson's "skipped", as tests/gpu uses
constexpr int kExitTimeout = 124;  // what timeout(1) returns

// ---- Options, messages and JSON --------------------------------------------------------

struct Options {
  bool check = false, pdl_bench = false, launch_bench = false, self_test = false, list = false;
  std::string json_path;
  std::string only;  // substring of the specialization names to check
  int pdl_rounds = 7;
  int pdl_pairs = 200;
  int launch_rounds = 1000;
  int launch_warmup = 20;
  int launch_batch = 256;
  int timeout_s = 0;  // 0: the modes' default
};
Options g_opt;

std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += strf("\\u%04x", c);
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string json_number(double v) { return std::isfinite(v) ? strf("%.9g", v) : "null"; }

// One JSON object, built field by field.
struct JsonObj {
  std::string body;
  JsonObj& raw(const char* k, const std::string& v) {
    body += (body.empty() ? "" : ", ") + json_string(k) + ": " + v;
    return *this;
  }
  JsonObj& str(const char* k, const std::string& v) { return raw(k, json_string(v)); }
  JsonObj& num(const char* k, double v) { return raw(k, json_number(v)); }
  JsonObj& flag(const char* k, bool v) { return raw(k, v ? "true" : "false"); }
  std::string done() const { return "{" + body + "}"; }
};

std::string json_array(const std::vector<std::string>& items) {
  std::string o = "[";
  for (size_t i = 0; i < items.size(); ++i) o += (i ? ",\n  " : "\n  ") + items[i];
  return o + (items.empty() ? "]" : "\n]");
}

// What the run found, for the summary line and --json.
struct Run {
  uint64_t seed = 0;
  JsonObj device;
  bool checking = false;  // inside --check: a fatal error prints the counts first
  int passed = 0, failed = 0;
  std::vector<std::string> cases, pdl, launch;
  std::vector<std::string> modes;
};
Run g_run;

void write_json() {
  if (g_opt.json_path.empty()) return;
  std::vector<std::string> modes;
  for (const std::string& m : g_run.modes) modes.push_back(json_string(m));
  JsonObj o;
  o.str("program", kProg)
      .raw("modes", json_array(modes))
      .raw("seed", strf("%" PRIu64, g_run.seed))
      .raw("device", g_run.device.done())
      .num("passed", g_run.passed)
      .num("failed", g_run.failed)
      .raw("cases", json_array(g_run.cases))
      .raw("pdl", json_array(g_run.pdl))
      .raw("launch", json_array(g_run.launch));
  FILE* f = std::fopen(g_opt.json_path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: error: cannot write %s: %s\n", kProg, g_opt.json_path.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(f, "%s\n", o.done().c_str());
  if (std::fclose(f) != 0) std::fprintf(stderr, "%s: error: writing %s failed\n", kProg, g_opt.json_path.c_str());
}

void print_counts() { std::printf("%d passed, %d failed\n", g_run.passed, g_run.failed); }

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void fatal(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (g_run.checking) {
    ++g_run.failed;  // the case that was running
    print_counts();
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", kProg, buf);
  g_run.cases.push_back(JsonObj().str("error", buf).done());
  write_json();
  std::exit(1);
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fatal("%s failed: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}
#define CUDA_OK(call) cuda_ok((call), #call)

std::string cuda_failure(cudaError_t e) { return strf("%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e)); }

std::string kpack_failure(kpack_status st) {
  return strf("%s: %s", kpack_status_name(st), kpack_last_error_detail());
}

void report(bool pass, const std::string& spec, const std::string& shape, const std::string& path,
            const std::string& detail, double worst) {
  std::printf("%s %s %s %s: %s\n", pass ? "PASS" : "FAIL", spec.c_str(), shape.c_str(), path.c_str(),
              detail.c_str());
  ++(pass ? g_run.passed : g_run.failed);
  g_run.cases.push_back(JsonObj()
                            .str("spec", spec)
                            .str("shape", shape)
                            .str("path", path)
                            .flag("pass", pass)
                            .num("err_over_tol", worst)
                            .str("detail", detail)
                            .done());
}

// ---- Watchdog ---------------------------------------------------------------------------

void on_alarm(int) {
  static const char msg[] = "flashinfer_check: error: timed out (the watchdog of --timeout fired)\n";
  const ssize_t ignored = write(2, msg, sizeof msg - 1);
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
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1p-53); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
};

// The stream of one case: the run's seed mixed with the case's name.
Rng case_rng(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  uint64_t s = g_run.seed ^ h;
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
  const uint64_t t = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  return ((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t) & ((1ull << 53) - 1);  // exact in JSON
}

// ---- Elements ------------------------------------------------------------------------------

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<__half>() {
  return DType::F16;
}
template <>
constexpr DType dtype_of<__nv_bfloat16>() {
  return DType::BF16;
}

uint16_t to_bits(DType t, float v) { return t == DType::F16 ? kref::f32_to_f16_bits(v) : kref::f32_to_bf16_bits(v); }
double from_bits(DType t, uint16_t b) {
  return t == DType::F16 ? kref::f16_bits_to_f32(b) : kref::bf16_bits_to_f32(b);
}
// A random value rounded to t, as bits.
uint16_t random_elem(DType t, Rng& r, double lo, double hi) { return to_bits(t, static_cast<float>(r.uniform(lo, hi))); }

constexpr uint16_t kPoison16 = 0xffff;  // NaN in f16 and bf16

// ---- Tolerances ------------------------------------------------------------------------------
//
// Each kernel computes in fp32 and rounds its result to the output type
// once: that rounding is at most half an ulp, 2^-11 (4.9e-4) relative in
// f16 and 2^-8 (3.9e-3) in bf16.  rtol is twice (f16) and 2.5 times (bf16)
// that, as tests/gpu/gpu_test.cc uses; the fp32 arithmetic before the
// rounding adds about 1e-6 relative (rsqrt.approx, __expf and the order of
// fp32 sums), far inside the margin.  atol is the f16 subnormal spacing.
// Kernel-specific terms (GELU's fp32 cancellation, RoPE's approximate
// angles) are added per element, where they are computed.

double rtol_of(DType t) { return t == DType::F16 ? 1e-3 : 1e-2; }
double atol_of(DType t) { return t == DType::F16 ? 0x1p-24 : 1e-30; }

// Largest |got - want| / tol over a buffer, and the first element out of
// tolerance.  NaN (an unwritten 0xFF element) never passes.
struct Compare {
  double worst = 0;
  size_t bad = 0;
  std::string first;
  void elem(const char* buf, size_t i, double got, double want, double tol) {
    const double ratio = std::isfinite(got) && std::isfinite(want) ? std::fabs(got - want) / tol : INFINITY;
    if (!(ratio <= 1.0)) {
      if (bad++ == 0) first = strf("%s[%zu] = %.8g, want %.8g (tol %.3g)", buf, i, got, want, tol);
    }
    if (!(ratio <= worst)) worst = ratio;
  }
  void mismatch(const std::string& what) {
    if (bad++ == 0) first = what;
    worst = INFINITY;
  }
};

// ---- CPU references (double precision) --------------------------------------------------

// RMSNorm of one row: out = x / sqrt(mean(x^2) + eps) * (bias + w).
void ref_rmsnorm_row(const double* x, const double* w, uint32_t d, double bias, double eps, double* out) {
  double ss = 0;
  for (uint32_t j = 0; j < d; ++j) ss += x[j] * x[j];
  const double r = 1.0 / std::sqrt(ss / d + eps);
  for (uint32_t j = 0; j < d; ++j) out[j] = x[j] * r * (bias + w[j]);
}

// FusedAddRMSNormKernel's order, mirrored: x = float(input) + float(residual)
// in fp32; residual = (T)x (stored rounded); the row is normalized from the
// fp32 x (kept in shared memory), not from the rounded residual.  The
// residual is therefore exact here, bit for bit.
void ref_fused_add_row(DType t, const double* in, const double* res, const double* w, uint32_t d, double bias,
                       double eps, uint16_t* res_bits, double* out) {
  std::vector<double> x(d);
  for (uint32_t j = 0; j < d; ++j) {
    const float s = static_cast<float>(in[j]) + static_cast<float>(res[j]);
    res_bits[j] = to_bits(t, s);
    x[j] = s;
  }
  ref_rmsnorm_row(x.data(), w, d, bias, eps, out);
}

double ref_silu(double x) { return x / (1.0 + std::exp(-x)); }
double ref_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// GELU's 1 + erff(x / sqrt 2) in fp32 cancels for x << 0: erff is within an
// ulp or two of -1 there, so the kernel's 1 + erff carries an absolute
// error up to about 2^-23, i.e. |gelu(x)| up to 0.5 |x| 2^-23 off (it gives
// 0 or a few ulp of 1 times x/2 where the exact value is ~1e-9).  Twice that,
// times |y|, is allowed on top of the relative tolerance.
double gelu_slack(double x, double y) { return 2.0 * 0.5 * std::fabs(x) * 0x1p-23 * std::fabs(y); }

// RoPE (Llama) of one head at one position, as BatchQKApplyRotaryPosIdsKernel
// computes it with smooth_a = smooth_b = 0: for j < rotary_dim,
//   out[j] = x[j] cos(pos f_j) + p_j sin(pos f_j),  f_j = rcp_scale * rcp_theta^(2k / rotary_dim)
// with k = j mod rotary_dim/2 and p_j = -x[j + rd/2] (j < rd/2) or x[j - rd/2]
// (not interleaved), or k = j / 2 and p_j = -x[j + 1] (j even) or x[j - 1]
// (interleaved); dims from rotary_dim on are copied.  rcp_theta and
// rcp_scale are the fp32 values the kernel gets.
//
// slack[j] is what the kernel's fast fp32 math may add: it takes f_j from
// __powf (ex2.approx(y lg2.approx(x)): relative error about 2^-22 plus the
// fp32 rounding of y log2(x); f_j times that is at most ~2.5e-7 over f_j in
// (0, 1]), rounds pos * f_j to fp32 (2^-24 relative) and takes __sincosf
// of it, whose absolute error is 2^-21.4 within [-pi, pi] and grows with
// |angle| outside it (its range reduction works in fp32, so a few 2^-24
// |angle|).  So the angle may be off by about
//   delta = 4e-7 pos + 5e-7 |pos f_j| + 2e-6  (radians),
// and the result by delta (|x_j| + |p_j|); twice that is allowed.  A token
// at position 32767 gets about 0.06 rad of slack (results off by up to a few
// percent of the inputs) while the usual positions below 4096 get under
// 0.008 rad: a wrong frequency, sign, pairing or position is still far
// outside, and the kpack result must match the direct launch bit for bit
// in any case.
struct RopeParams {
  uint32_t head_dim, rotary_dim;
  bool interleave;
  float rcp_scale, rcp_theta;
};

void ref_rope_head(const RopeParams& p, const double* x, double pos, double* out, double* slack) {
  const uint32_t rd = p.rotary_dim, half = rd / 2;
  for (uint32_t j = 0; j < p.head_dim; ++j) {
    if (j >= rd) {
      out[j] = x[j];
      slack[j] = 0;
      continue;
    }
    const uint32_t k = p.interleave ? j / 2 : j % half;
    const double f = static_cast<double>(p.rcp_scale) *
                     std::pow(static_cast<double>(p.rcp_theta), 2.0 * k / static_cast<double>(rd));
    const double angle = pos * f;
    double partner;
    if (p.interleave) {
      partner = j % 2 == 0 ? -x[j + 1] : x[j - 1];
    } else {
      partner = j < half ? -x[j + half] : x[j - half];
    }
    out[j] = x[j] * std::cos(angle) + partner * std::sin(angle);
    const double delta = 4e-7 * pos + 5e-7 * std::fabs(angle) + 2e-6;
    slack[j] = 2.0 * delta * (std::fabs(x[j]) + std::fabs(partner));
  }
}

// ---- Launch geometry: what the manifests' launch expressions compute ----------------

uint32_t cdiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

struct Geometry {
  dim3 grid, block;
  size_t smem;
};

// rmsnorm.yaml, gemma_rmsnorm.yaml, fused_add_rmsnorm.yaml: block (32,
// cdiv(min(1024, d / VEC_SIZE), 32)); shared memory num_warps * 4, or
// (cdiv(num_warps, 4) * 4 + d) * 4 for the fused add (the row in fp32).
Geometry norm_geometry(bool fused, uint32_t vec, uint32_t d, uint32_t batch) {
  const uint32_t warps = cdiv(std::min<uint32_t>(1024, d / vec), 32);
  const size_t smem = fused ? (static_cast<size_t>(cdiv(warps, 4)) * 4 + d) * sizeof(float) : warps * sizeof(float);
  return {dim3(batch), dim3(32, warps), smem};
}

// act_and_mul.yaml: grid (num_tokens), block max(1, min(256, d / vec_size)).
Geometry act_geometry(uint32_t vec, int32_t d, uint32_t tokens) {
  return {dim3(tokens), dim3(std::max<uint32_t>(1, std::min<uint32_t>(256, static_cast<uint32_t>(d) / vec))), 0};
}

// rope_pos_ids.yaml: grid cdiv(nnz, max(128, bdx) / bdx), block (bdx,
// max(128, bdx) / bdx).
Geometry rope_geometry(uint32_t bdx, uint32_t nnz) {
  const uint32_t bdy = std::max<uint32_t>(128, bdx) / bdx;
  return {dim3(cdiv(nnz, bdy)), dim3(bdx, bdy), 0};
}

// ---- Direct launches of the same instantiations ------------------------------------------

enum class Via {
  kChevrons,  // kernel<<<grid, block, smem, stream>>>(...)
  kEx,        // cudaLaunchKernelEx, no attribute
  kExPdl,     // cudaLaunchKernelEx with cudaLaunchAttributeProgrammaticStreamSerialization
};

// As FlashInfer's launchers do: raise the kernel's dynamic shared memory
// limit before a launch that needs more than the default 48 KiB.
template <typename... P>
cudaError_t allow_smem(void (*kernel)(P...), size_t smem) {
  if (smem <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
}

template <typename... P, typename... A>
cudaError_t launch_direct(void (*kernel)(P...), Via via, const Geometry& g, cudaStream_t s, A... args) {
  const cudaError_t e = allow_smem(kernel, g.smem);
  if (e != cudaSuccess) return e;
  if (via == Via::kChevrons) {
    kernel<<<g.grid, g.block, g.smem, s>>>(args...);
    return cudaGetLastError();
  }
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = g.grid;
  cfg.blockDim = g.block;
  cfg.dynamicSmemBytes = g.smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = via == Via::kExPdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <typename... P>
const void* kernel_symbol(void (*kernel)(P...)) {
  return reinterpret_cast<const void*>(kernel);
}

// The kernels' parameters (the norms and the fused add have the same types:
// three T pointers, d, two row strides, weight_bias, eps; batch_size is
// launch-only).
using NormKpackFn = kpack_status (*)(cudaStream_t, int pdl, void*, void*, void*, uint32_t d, uint32_t stride_a,
                                     uint32_t stride_b, float weight_bias, float eps, uint32_t batch);
using NormDirectFn = cudaError_t (*)(Via, cudaStream_t, void*, void*, void*, uint32_t d, uint32_t stride_a,
                                     uint32_t stride_b, float weight_bias, float eps, uint32_t batch);

template <uint32_t V, typename T>
cudaError_t direct_rmsnorm(Via via, cudaStream_t s, void* in, void* w, void* out, uint32_t d, uint32_t si,
                           uint32_t so, float wb, float eps, uint32_t batch) {
  return launch_direct(flashinfer::norm::RMSNormKernel<V, T>, via, norm_geometry(false, V, d, batch), s,
                       static_cast<T*>(in), static_cast<T*>(w), static_cast<T*>(out), d, si, so, wb, eps);
}

template <uint32_t V, typename T>
cudaError_t direct_fused_add(Via via, cudaStream_t s, void* in, void* res, void* w, uint32_t d, uint32_t si,
                             uint32_t sr, float wb, float eps, uint32_t batch) {
  return launch_direct(flashinfer::norm::FusedAddRMSNormKernel<V, T>, via, norm_geometry(true, V, d, batch), s,
                       static_cast<T*>(in), static_cast<T*>(res), static_cast<T*>(w), d, si, sr, wb, eps);
}

using ActKpackFn = kpack_status (*)(cudaStream_t, int pdl, void* out, const void* in, int32_t d, uint32_t tokens);
using ActDirectFn = cudaError_t (*)(Via, cudaStream_t, void* out, const void* in, int32_t d, uint32_t tokens);

template <typename T, float (*Act)(const float&), uint32_t V>
cudaError_t direct_act(Via via, cudaStream_t s, void* out, const void* in, int32_t d, uint32_t tokens) {
  return launch_direct(flashinfer::activation::act_and_mul_kernel<T, Act, V>, via, act_geometry(V, d, tokens), s,
                       static_cast<T*>(out), static_cast<const T*>(in), d);
}

struct RopeArgs {
  void *q, *k, *q_rope, *k_rope, *pos_ids;
  uint32_t nnz, num_qo_heads, num_kv_heads, rotary_dim;
  uint64_t q_stride_n, q_stride_h, k_stride_n, k_stride_h;
  uint64_t q_rope_stride_n, q_rope_stride_h, k_rope_stride_n, k_rope_stride_h;
  float smooth_a, smooth_b, rope_rcp_scale, rope_rcp_theta;
};
using RopeKpackFn = kpack_status (*)(cudaStream_t, const RopeArgs&);
using RopeDirectFn = cudaError_t (*)(Via, cudaStream_t, const RopeArgs&);

template <bool IL, uint32_t H, uint32_t X, typename T, typename I>
cudaError_t direct_rope(Via via, cudaStream_t s, const RopeArgs& a) {
  return launch_direct(flashinfer::BatchQKApplyRotaryPosIdsKernel<IL, H, 8, X, T, I>, via, rope_geometry(X, a.nnz), s,
                       static_cast<T*>(a.q), static_cast<T*>(a.k), static_cast<T*>(a.q_rope),
                       static_cast<T*>(a.k_rope), static_cast<I*>(a.pos_ids), a.nnz, a.num_qo_heads,
                       a.num_kv_heads, a.rotary_dim, static_cast<size_t>(a.q_stride_n),
                       static_cast<size_t>(a.q_stride_h), static_cast<size_t>(a.k_stride_n),
                       static_cast<size_t>(a.k_stride_h), static_cast<size_t>(a.q_rope_stride_n),
                       static_cast<size_t>(a.q_rope_stride_h), static_cast<size_t>(a.k_rope_stride_n),
                       static_cast<size_t>(a.k_rope_stride_h), a.smooth_a, a.smooth_b, a.rope_rcp_scale,
                       a.rope_rcp_theta);
}

// ---- The specializations: kpack's typed launcher and the direct instantiation ----------

enum class NormKind { kRms, kGemma, kFusedAdd };

struct NormSpec {
  NormKind kind;
  const char* kernel;  // manifest kernel name
  const char* name;    // specialization name, as kpack names it
  uint32_t vec;
  DType t;
  NormKpackFn kpack;
  NormDirectFn direct;
  const void* symbol;  // the direct instantiation, for cudaGetFuncBySymbol
};

#define FIC_NORM(KIND, KNAME, V, TAG, CT, DIRECT, FIK)                                                             \
  NormSpec {                                                                                                       \
    KIND, #KNAME, #KNAME "_v" #V "_" #TAG, V, dtype_of<CT>(),                                                      \
        [](cudaStream_t s, int pdl, void* a, void* b, void* c, uint32_t d, uint32_t sa, uint32_t sb, float wb,     \
           float eps, uint32_t n) {                                                                                \
          return fic_##KNAME##_v##V##_##TAG(s, pdl, static_cast<kpack_##TAG*>(a), static_cast<kpack_##TAG*>(b),    \
                                            static_cast<kpack_##TAG*>(c), d, sa, sb, wb, eps, n);                  \
        },                                                                                                         \
        &DIRECT<V, CT>, kernel_symbol(&flashinfer::norm::FIK<V, CT>)                                               \
  }

#define FIC_NORM_BOTH(KIND, KNAME, V, DIRECT, FIK) \
  FIC_NORM(KIND, KNAME, V, f16, __half, DIRECT, FIK), FIC_NORM(KIND, KNAME, V, bf16, __nv_bfloat16, DIRECT, FIK)

const std::vector<NormSpec>& norm_specs() {
  static const std::vector<NormSpec> specs = {
      FIC_NORM_BOTH(NormKind::kRms, rmsnorm, 8, direct_rmsnorm, RMSNormKernel),
      FIC_NORM_BOTH(NormKind::kRms, rmsnorm, 4, direct_rmsnorm, RMSNormKernel),
      FIC_NORM_BOTH(NormKind::kRms, rmsnorm, 2, direct_rmsnorm, RMSNormKernel),
      FIC_NORM_BOTH(NormKind::kRms, rmsnorm, 1, direct_rmsnorm, RMSNormKernel),
      FIC_NORM_BOTH(NormKind::kGemma, gemma_rmsnorm, 8, direct_rmsnorm, RMSNormKernel),
      FIC_NORM_BOTH(NormKind::kGemma, gemma_rmsnorm, 4, direct_rmsnorm, RMSNormKernel),
      FIC_NORM_BOTH(NormKind::kFusedAdd, fused_add_rmsnorm, 8, direct_fused_add, FusedAddRMSNormKernel),
      FIC_NORM_BOTH(NormKind::kFusedAdd, fused_add_rmsnorm, 4, direct_fused_add, FusedAddRMSNormKernel),
      FIC_NORM_BOTH(NormKind::kFusedAdd, fused_add_rmsnorm, 2, direct_fused_add, FusedAddRMSNormKernel),
      FIC_NORM_BOTH(NormKind::kFusedAdd, fused_add_rmsnorm, 1, direct_fused_add, FusedAddRMSNormKernel),
  };
  return specs;
}

struct ActSpec {
  const char* name;
  DType t;
  const char* act;      // "silu" or "gelu"
  const char* act_cpp;  // the manifest's value, "kpack_corpus::silu"
  uint32_t vec;
  ActKpackFn kpack;
  ActDirectFn direct;
  const void* symbol;
};

#define FIC_ACT(TAG, CT, ACT, V)                                                                                  \
  ActSpec {                                                                                                       \
    "act_and_mul_" #TAG "_" #ACT "_v" #V, dtype_of<CT>(), #ACT, "kpack_corpus::" #ACT, V,                         \
        [](cudaStream_t s, int pdl, void* o, const void* i, int32_t d, uint32_t n) {                              \
          return fic_act_and_mul_##TAG##_##ACT##_v##V(s, pdl, static_cast<kpack_##TAG*>(o),                       \
                                                      static_cast<const kpack_##TAG*>(i), d, n);                  \
        },                                                                                                        \
        &direct_act<CT, kpack_corpus::ACT, V>,                                                                    \
        kernel_symbol(&flashinfer::activation::act_and_mul_kernel<CT, kpack_corpus::ACT, V>)                      \
  }

#define FIC_ACT_VECS(TAG, CT, ACT) \
  FIC_ACT(TAG, CT, ACT, 8), FIC_ACT(TAG, CT, ACT, 4), FIC_ACT(TAG, CT, ACT, 2), FIC_ACT(TAG, CT, ACT, 1)

const std::vector<ActSpec>& act_specs() {
  static const std::vector<ActSpec> specs = {
      FIC_ACT_VECS(f16, __half, silu),
      FIC_ACT_VECS(f16, __half, gelu),
      FIC_ACT_VECS(bf16, __nv_bfloat16, silu),
      FIC_ACT_VECS(bf16, __nv_bfloat16, gelu),
  };
  return specs;
}

struct RopeSpec {
  const char* name;
  bool interleave;
  uint32_t head_dim, bdx;
  DType t;
  size_t id_size;  // 4 (i32) or 8 (i64)
  RopeKpackFn kpack;
  RopeDirectFn direct;
  const void* symbol;
};

#define FIC_ROPE(IL, ILB, H, X, TAG, CT, ID, IT)                                                                   \
  RopeSpec {                                                                                                       \
    "rope_pos_ids_" #IL "_h" #H "_v8_x" #X "_" #TAG "_" #ID, ILB, H, X, dtype_of<CT>(), sizeof(IT),                \
        [](cudaStream_t s, const RopeArgs& a) {                                                                    \
          return fic_rope_pos_ids_##IL##_h##H##_v8_x##X##_##TAG##_##ID(                                            \
              s, static_cast<kpack_##TAG*>(a.q), static_cast<kpack_##TAG*>(a.k),                                   \
              static_cast<kpack_##TAG*>(a.q_rope), static_cast<kpack_##TAG*>(a.k_rope),                            \
              static_cast<IT*>(a.pos_ids), a.nnz, a.num_qo_heads, a.num_kv_heads, a.rotary_dim, a.q_stride_n,      \
              a.q_stride_h, a.k_stride_n, a.k_stride_h, a.q_rope_stride_n, a.q_rope_stride_h, a.k_rope_stride_n,   \
              a.k_rope_stride_h, a.smooth_a, a.smooth_b, a.rope_rcp_scale, a.rope_rcp_theta);                      \
        },                                                                                                         \
        &direct_rope<ILB, H, X, CT, IT>,                                                                           \
        kernel_symbol(&flashinfer::BatchQKApplyRotaryPosIdsKernel<ILB, H, 8, X, CT, IT>)                           \
  }

#define FIC_ROPE_TYPES(IL, ILB, H, X)                                                                          \
  FIC_ROPE(IL, ILB, H, X, f16, __half, i32, int32_t), FIC_ROPE(IL, ILB, H, X, f16, __half, i64, int64_t),      \
      FIC_ROPE(IL, ILB, H, X, bf16, __nv_bfloat16, i32, int32_t),                                              \
      FIC_ROPE(IL, ILB, H, X, bf16, __nv_bfloat16, i64, int64_t)

const std::vector<RopeSpec>& rope_specs() {
  static const std::vector<RopeSpec> specs = {
      FIC_ROPE_TYPES(nointerleave, false, 64, 8),
      FIC_ROPE_TYPES(nointerleave, false, 128, 16),
      FIC_ROPE_TYPES(interleave, true, 64, 8),
      FIC_ROPE_TYPES(interleave, true, 128, 16),
  };
  return specs;
}

// ---- The package's configs, mapped to the tables above ---------------------------------------

bool dtype_from_kpack(kpack_dtype k, DType* t) {
  if (k == KPACK_DTYPE_F16) *t = DType::F16;
  else if (k == KPACK_DTYPE_BF16) *t = DType::BF16;
  else return false;
  return true;
}

// One built configuration of the package (from fic_<kernel>_configs[]) and
// the table entry that instantiates it here, if any.
struct Planned {
  std::string config;       // the config's values, for messages
  const NormSpec* norm = nullptr;
  const ActSpec* act = nullptr;
  const RopeSpec* rope = nullptr;
  const char* name() const { return norm ? norm->name : act ? act->name : rope ? rope->name : nullptr; }
};

const NormSpec* find_norm(NormKind kind, int vec, kpack_dtype kt) {
  DType t;
  if (!dtype_from_kpack(kt, &t)) return nullptr;
  for (const NormSpec& s : norm_specs()) {
    if (s.kind == kind && static_cast<int>(s.vec) == vec && s.t == t) return &s;
  }
  return nullptr;
}

std::vector<Planned> plan_all() {
  std::vector<Planned> plan;
  const auto add_norm = [&](NormKind kind, const char* kname, int vec, kpack_dtype t) {
    Planned p;
    p.config = strf("%s VEC_SIZE=%d T=%s", kname, vec, kpack_dtype_name(t));
    p.norm = find_norm(kind, vec, t);
    plan.push_back(p);
  };
  for (const fic_rmsnorm_config& c : fic_rmsnorm_configs) add_norm(NormKind::kRms, "rmsnorm", c.VEC_SIZE, c.T);
  for (const fic_gemma_rmsnorm_config& c : fic_gemma_rmsnorm_configs) {
    add_norm(NormKind::kGemma, "gemma_rmsnorm", c.VEC_SIZE, c.T);
  }
  for (const fic_fused_add_rmsnorm_config& c : fic_fused_add_rmsnorm_configs) {
    add_norm(NormKind::kFusedAdd, "fused_add_rmsnorm", c.VEC_SIZE, c.T);
  }
  for (const fic_act_and_mul_config& c : fic_act_and_mul_configs) {
    Planned p;
    p.config = strf("act_and_mul T=%s Activation=%s vec_size=%d", kpack_dtype_name(c.T), c.Activation, c.vec_size);
    DType t;
    if (dtype_from_kpack(c.T, &t)) {
      for (const ActSpec& s : act_specs()) {
        if (s.t == t && std::strcmp(s.act_cpp, c.Activation) == 0 && static_cast<int>(s.vec) == c.vec_size) p.act = &s;
      }
    }
    plan.push_back(p);
  }
  for (const fic_rope_pos_ids_config& c : fic_rope_pos_ids_configs) {
    Planned p;
    p.config = strf("rope_pos_ids interleave=%d head_dim=%d vec_size=%d bdx=%d DType=%s IdType=%s", c.interleave,
                    c.head_dim, c.vec_size, c.bdx, kpack_dtype_name(c.DType), kpack_dtype_name(c.IdType));
    DType t;
    const size_t id_size = c.IdType == KPACK_DTYPE_I32 ? 4 : c.IdType == KPACK_DTYPE_I64 ? 8 : 0;
    if (dtype_from_kpack(c.DType, &t) && c.vec_size == 8) {
      for (const RopeSpec& s : rope_specs()) {
        if (s.interleave == (c.interleave != 0) && static_cast<int>(s.head_dim) == c.head_dim &&
            static_cast<int>(s.bdx) == c.bdx && s.t == t && s.id_size == id_size) {
          p.rope = &s;
        }
      }
    }
    plan.push_back(p);
  }
  return plan;
}

// The package's specialization names (fic_specialization_info).
std::vector<std::string> package_names() {
  kpack_build_info info;
  const kpack_status st = fic_build_info(&info);
  if (st != KPACK_SUCCESS) fatal("fic_build_info: %s", kpack_failure(st).c_str());
  std::vector<std::string> names;
  for (size_t i = 0; i < info.num_specializations; ++i) {
    kpack_spec_info s;
    const kpack_status r = fic_specialization_info(i, &s);
    if (r != KPACK_SUCCESS) fatal("fic_specialization_info(%zu): %s", i, kpack_failure(r).c_str());
    names.push_back(s.name);
  }
  return names;
}

// Problems with the tables: a config without a direct instantiation here, a
// table entry the package does not have, a name twice.  Empty when the
// tables and the package agree one to one.
std::vector<std::string> table_problems(const std::vector<Planned>& plan) {
  std::vector<std::string> problems;
  std::set<std::string> planned;
  for (const Planned& p : plan) {
    if (p.name() == nullptr) {
      problems.push_back(p.config + ": no direct instantiation in flashinfer_check.cu (update its tables)");
    } else if (!planned.insert(p.name()).second) {
      problems.push_back(strf("%s: two configs map to it", p.name()));
    }
  }
  const std::vector<std::string> names = package_names();
  const std::set<std::string> in_package(names.begin(), names.end());
  for (const std::string& n : names) {
    if (planned.count(n) == 0) problems.push_back(n + ": in the package but no config of it is checked here");
  }
  std::vector<const char*> table;
  for (const NormSpec& s : norm_specs()) table.push_back(s.name);
  for (const ActSpec& s : act_specs()) table.push_back(s.name);
  for (const RopeSpec& s : rope_specs()) table.push_back(s.name);
  for (const char* n : table) {
    if (in_package.count(n) == 0) problems.push_back(strf("%s: in this program's tables but not in the package", n));
  }
  return problems;
}

// ---- Device buffers ----------------------------------------------------------------------------

// A device buffer with kGuard poisoned bytes on either side of its payload.
// The payload stays 256-byte aligned, as cudaMalloc's are.
class DevBuf {
 public:
  static constexpr size_t kGuard = 256;

  DevBuf(const char* name, size_t payload_bytes) : name_(name), bytes_(payload_bytes) {
    CUDA_OK(cudaMalloc(&base_, total()));
  }
  ~DevBuf() {
    if (base_ != nullptr) CUDA_OK(cudaFree(base_));
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;

  const char* name() const { return name_; }
  size_t total() const { return bytes_ + 2 * kGuard; }
  void* ptr() const { return base_ + kGuard; }

  // Everything 0xFF, on the stream.
  void poison(cudaStream_t s) { CUDA_OK(cudaMemsetAsync(base_, 0xff, total(), s)); }
  // Guards 0xFF and the payload from the host, on the stream (pageable
  // memory: the host buffer may change once this returns).
  void upload(const void* host, cudaStream_t s) {
    poison(s);
    CUDA_OK(cudaMemcpyAsync(ptr(), host, bytes_, cudaMemcpyHostToDevice, s));
  }
  // The whole buffer, guards included, once the stream has finished.
  Bytes download(cudaStream_t s) const {
    Bytes b(total());
    CUDA_OK(cudaMemcpyAsync(b.data(), base_, total(), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    return b;
  }

 private:
  const char* name_;
  size_t bytes_;
  unsigned char* base_ = nullptr;
};

uint16_t elem16(const Bytes& b, size_t i) {
  uint16_t v;
  std::memcpy(&v, b.data() + DevBuf::kGuard + 2 * i, 2);
  return v;
}

// "" when both guards of a downloaded buffer are still 0xFF.
std::string guard_problem(const Bytes& b, const char* name) {
  const size_t g = DevBuf::kGuard;
  for (size_t i = 0; i < g; ++i) {
    if (b[i] != 0xff) return strf("%s: byte %zd before the buffer was written (0x%02x)", name, static_cast<ssize_t>(i) - static_cast<ssize_t>(g), b[i]);
    if (b[b.size() - g + i] != 0xff) {
      return strf("%s: byte %zu past the end was written (0x%02x)", name, i, b[b.size() - g + i]);
    }
  }
  return "";
}

// "" when a downloaded buffer holds exactly `host` (and intact guards).
std::string unchanged_problem(const Bytes& b, const void* host, size_t bytes, const char* name) {
  std::string g = guard_problem(b, name);
  if (!g.empty()) return g;
  const unsigned char* h = static_cast<const unsigned char*>(host);
  for (size_t i = 0; i < bytes; ++i) {
    if (b[DevBuf::kGuard + i] != h[i]) return strf("%s changed at byte %zu (an input must stay unchanged)", name, i);
  }
  return "";
}

// The first difference between two downloads of the same buffer, or "".
std::string bits_difference(const Bytes& a, const Bytes& b, const char* name) {
  if (a.size() != b.size()) return strf("%s: sizes differ", name);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      const ssize_t off = static_cast<ssize_t>(i) - static_cast<ssize_t>(DevBuf::kGuard);
      if (off < 0 || static_cast<size_t>(off) >= a.size() - 2 * DevBuf::kGuard) {
        return strf("%s: guard byte %zd: 0x%02x vs direct 0x%02x", name, off, b[i], a[i]);
      }
      const size_t e = static_cast<size_t>(off) / 2;
      return strf("%s[%zu]: 0x%04x vs direct 0x%04x", name, e, elem16(b, e), elem16(a, e));
    }
  }
  return "";
}

// ---- Cases: buffers, paths, verification and a host model of the kernel -----------------
//
// A case is one specialization on one shape.  It names its buffers (what
// each holds before a launch: the inputs, or nothing: 0xFF), its launch
// paths (the first is the direct <<<>>> launch, which the others must match
// bit for bit), its check of a result against the CPU reference, and a
// host fp32 model of the kernel.  The GPU run (run_case_gpu) uploads the
// buffers afresh before every path; --self-test runs the model instead
// (run_case_model) to check the checks themselves without a GPU: the
// model's result must pass, and a corrupted byte in any buffer or guard
// must not.

using Ptrs = std::vector<void*>;  // the buffers' payloads, in the case's order

cudaStream_t g_stream = nullptr;  // --check launches on it (created, non-blocking)

struct BufSpec {
  const char* name;
  size_t bytes;      // payload, at least 2
  const void* init;  // the payload before each launch; nullptr: 0xFF bytes
};

struct Path {
  const char* name;
  std::function<std::string(const Ptrs&)> launch;  // "" on success, else what failed
};

struct Verdict {
  bool ok = true;
  double worst = 0;
  std::string detail;
};

struct Case {
  std::string spec, shape;
  std::vector<BufSpec> bufs;
  std::vector<Path> paths;
  std::function<Verdict(const std::vector<Bytes>&)> verify;  // every buffer, guards included
  std::function<void(const Ptrs&)> model;                     // the kernel on host memory
};
using CaseSink = std::function<void(const Case&)>;

Verdict verdict_of(const Compare& c, const std::vector<std::string>& problems) {
  Verdict v;
  v.worst = c.worst;
  for (const std::string& p : problems) {
    if (!p.empty()) {
      v.ok = false;
      v.detail += (v.detail.empty() ? "" : "; ") + p;
    }
  }
  if (c.bad != 0) {
    v.ok = false;
    v.detail += (v.detail.empty() ? "" : "; ") + strf("%zu elements out of tolerance, first %s", c.bad, c.first.c_str());
  }
  const std::string ratio = std::isfinite(c.worst) ? strf("err/tol %.3f", c.worst) : std::string("err/tol inf");
  v.detail = v.detail.empty() ? ratio : ratio + "; " + v.detail;
  return v;
}

std::string cuda_result(cudaError_t e) { return e == cudaSuccess ? "" : "launch failed: " + cuda_failure(e); }
std::string kpack_result(kpack_status st) { return st == KPACK_SUCCESS ? "" : kpack_failure(st); }

std::vector<Path> pdl_paths(const std::function<std::string(Via, const Ptrs&)>& direct,
                            const std::function<std::string(int, const Ptrs&)>& kpack) {
  return {
      {"direct", [=](const Ptrs& p) { return direct(Via::kChevrons, p); }},
      {"direct_pdl", [=](const Ptrs& p) { return direct(Via::kExPdl, p); }},
      {"kpack", [=](const Ptrs& p) { return kpack(0, p); }},
      {"kpack_pdl", [=](const Ptrs& p) { return kpack(1, p); }},
  };
}

struct Ctx {
  std::set<std::string> tested;  // specializations whose kpack paths ran
};

void run_case_gpu(Ctx& ctx, const Case& c) {
  std::vector<std::unique_ptr<DevBuf>> bufs;
  Ptrs ptrs;
  for (const BufSpec& b : c.bufs) {
    bufs.emplace_back(new DevBuf(b.name, b.bytes));
    ptrs.push_back(bufs.back()->ptr());
  }
  std::vector<Bytes> baseline;
  bool have_baseline = false;
  for (size_t i = 0; i < c.paths.size(); ++i) {
    const Path& p = c.paths[i];
    for (size_t b = 0; b < bufs.size(); ++b) {
      if (c.bufs[b].init != nullptr) {
        bufs[b]->upload(c.bufs[b].init, g_stream);
      } else {
        bufs[b]->poison(g_stream);
      }
    }
    const std::string failure = p.launch(ptrs);
    if (!failure.empty()) {
      CUDA_OK(cudaStreamSynchronize(g_stream));  // the uploads; a fault of an earlier launch
      report(false, c.spec, c.shape, p.name, failure, NAN);
      continue;
    }
    const cudaError_t e = cudaStreamSynchronize(g_stream);
    if (e != cudaSuccess) {
      report(false, c.spec, c.shape, p.name, "the kernel failed: " + cuda_failure(e), NAN);
      fatal("%s %s %s: cudaStreamSynchronize after the launch failed: %s (a sticky error: the run stops)",
            c.spec.c_str(), c.shape.c_str(), p.name, cuda_failure(e).c_str());
    }
    std::vector<Bytes> got;
    for (const auto& b : bufs) got.push_back(b->download(g_stream));
    Verdict v = c.verify(got);
    std::string detail = v.detail;
    if (i == 0) {
      baseline = got;
      have_baseline = true;
    } else if (!have_baseline) {
      v.ok = false;
      detail += "; no direct result to compare with";
    } else {
      std::string diff;
      for (size_t b = 0; b < bufs.size() && diff.empty(); ++b) diff = bits_difference(baseline[b], got[b], bufs[b]->name());
      if (diff.empty()) {
        detail += ", bit-equal to direct";
      } else {
        v.ok = false;
        detail += "; differs from direct: " + diff;
      }
    }
    if (std::strncmp(p.name, "kpack", 5) == 0) ctx.tested.insert(c.spec);
    report(v.ok, c.spec, c.shape, p.name, detail, v.worst);
  }
}

// ---- RMSNorm, Gemma RMSNorm, fused add + RMSNorm --------------------------------------------

struct NormShape {
  uint32_t d, batch, stride_a, stride_b;  // stride_a: input; stride_b: output (or residual)
  float bias;
};

std::vector<NormShape> norm_shapes(const NormSpec& s) {
  const float bias = s.kind == NormKind::kGemma ? 1.0f : 0.0f;
  std::vector<NormShape> v;
  for (const uint32_t d : {4096u, 5120u, 8192u, 16384u}) {  // 16384: the fused add's > 48 KiB path
    for (const uint32_t b : {1u, 7u, 128u}) v.push_back({d, b, d, d, bias});
  }
  v.push_back({4096, 7, 4096 + 256, 4096 + 128, bias});  // rows of larger tensors
  if (s.kind == NormKind::kFusedAdd) v.push_back({4096, 7, 4096, 4096, 1.0f});  // Gemma's fused add
  v.push_back({64, 3, 64, 64, bias});  // fewer threads than a warp
  for (const uint32_t d : {3420u, 2050u, 1027u}) {  // vector sizes below 8
    if (d % s.vec == 0) v.push_back({d, 5, d, d, bias});
  }
  return v;
}

std::string norm_shape_name(const NormSpec& s, const NormShape& sh) {
  std::string n = strf("d=%u batch=%u", sh.d, sh.batch);
  if (sh.stride_a != sh.d || sh.stride_b != sh.d) n += strf(" strides=%u,%u", sh.stride_a, sh.stride_b);
  if (s.kind == NormKind::kFusedAdd && sh.bias != 0.0f) n += strf(" weight_bias=%g", sh.bias);
  return n;
}

size_t rows_span(uint32_t rows, uint32_t stride, uint32_t d) { return static_cast<size_t>(rows - 1) * stride + d; }

// Host model of RMSNormKernel (fused = false: a input, b weight, c output)
// and FusedAddRMSNormKernel (a input, b residual, c weight), in fp32.
void model_norm(bool fused, DType t, void* a, void* b, void* c, uint32_t d, uint32_t sa, uint32_t sb, float wb,
                float eps, uint32_t rows) {
  uint16_t* in = static_cast<uint16_t*>(a);
  uint16_t* res = static_cast<uint16_t*>(b);
  const uint16_t* w = static_cast<const uint16_t*>(fused ? c : b);
  uint16_t* out = static_cast<uint16_t*>(c);
  std::vector<float> x(d);
  for (uint32_t r = 0; r < rows; ++r) {
    float ss = 0;
    for (uint32_t j = 0; j < d; ++j) {
      x[j] = static_cast<float>(from_bits(t, in[static_cast<size_t>(r) * sa + j]));
      if (fused) {
        x[j] += static_cast<float>(from_bits(t, res[static_cast<size_t>(r) * sb + j]));
        res[static_cast<size_t>(r) * sb + j] = to_bits(t, x[j]);
      }
      ss += x[j] * x[j];
    }
    const float rcp = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (uint32_t j = 0; j < d; ++j) {
      const uint16_t v = to_bits(t, x[j] * rcp * (wb + static_cast<float>(from_bits(t, w[j]))));
      (fused ? in[static_cast<size_t>(r) * sa + j] : out[static_cast<size_t>(r) * sb + j]) = v;
    }
  }
}

void norm_cases(const NormSpec& s, const CaseSink& sink) {
  const bool fused = s.kind == NormKind::kFusedAdd;
  const DType t = s.t;
  const float eps = fused ? 1e-5f : 1e-6f;
  for (const NormShape& sh : norm_shapes(s)) {
    Case c;
    c.spec = s.name;
    c.shape = norm_shape_name(s, sh);
    Rng rng = case_rng(c.spec + " " + c.shape);
    const uint32_t d = sh.d, rows = sh.batch, sa = sh.stride_a, sb = sh.stride_b;
    const float bias = sh.bias;
    const size_t n_a = rows_span(rows, sa, d), n_b = rows_span(rows, sb, d);
    // Inputs.  The gaps between strided rows are NaN: they must stay so,
    // and must not be read (a NaN in a sum spoils its row).
    std::vector<uint16_t> h_in(n_a, kPoison16), h_w(d), h_res(fused ? n_b : 0, kPoison16);
    for (uint32_t r = 0; r < rows; ++r) {
      static const double kScales[3] = {1.0, 1.0 / 32, 16.0};  // rows of very different norms
      const double scale = kScales[rng.below(3)];
      for (uint32_t j = 0; j < d; ++j) {
        h_in[static_cast<size_t>(r) * sa + j] = random_elem(t, rng, -2 * scale, 2 * scale);
        if (fused) h_res[static_cast<size_t>(r) * sb + j] = random_elem(t, rng, -2 * scale, 2 * scale);
      }
    }
    for (uint32_t j = 0; j < d; ++j) {
      h_w[j] = s.kind == NormKind::kGemma ? random_elem(t, rng, -1, 1) : random_elem(t, rng, -1.5, 1.5);
    }

    // Reference: out[r][j], and the fused add's residual, exactly.
    std::vector<double> ref(static_cast<size_t>(rows) * d), x(d), w(d), res(d);
    std::vector<uint16_t> ref_res(fused ? static_cast<size_t>(rows) * d : 0);
    for (uint32_t j = 0; j < d; ++j) w[j] = from_bits(t, h_w[j]);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t j = 0; j < d; ++j) x[j] = from_bits(t, h_in[static_cast<size_t>(r) * sa + j]);
      double* out = &ref[static_cast<size_t>(r) * d];
      if (fused) {
        for (uint32_t j = 0; j < d; ++j) res[j] = from_bits(t, h_res[static_cast<size_t>(r) * sb + j]);
        ref_fused_add_row(t, x.data(), res.data(), w.data(), d, bias, eps, &ref_res[static_cast<size_t>(r) * d], out);
      } else {
        ref_rmsnorm_row(x.data(), w.data(), d, bias, eps, out);
      }
    }

    // Buffers in the kernel's parameter order.
    if (fused) {
      c.bufs = {{"input", n_a * 2, h_in.data()}, {"residual", n_b * 2, h_res.data()}, {"weight", h_w.size() * 2, h_w.data()}};
    } else {
      c.bufs = {{"input", n_a * 2, h_in.data()}, {"weight", h_w.size() * 2, h_w.data()}, {"output", n_b * 2, nullptr}};
    }
    // Rows (stride `stride`) of `g`: the first d elements checked by
    // `elem`, the gaps between rows unchanged (0xFFFF).
    const auto rows_of = [&](Compare& cmp, const Bytes& g, const char* name, uint32_t stride,
                             const std::function<void(size_t i, uint32_t r, uint32_t j)>& elem) {
      for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t j = 0; j < stride && (r + 1 < rows || j < d); ++j) {
          const size_t i = static_cast<size_t>(r) * stride + j;
          if (j < d) {
            elem(i, r, j);
          } else if (elem16(g, i) != kPoison16) {
            cmp.mismatch(strf("%s[%zu], between rows, was written", name, i));
          }
        }
      }
    };
    c.verify = [&](const std::vector<Bytes>& g) {
      Compare cmp;
      std::vector<std::string> problems;
      const auto close_to_ref = [&](const Bytes& b, const char* name) {
        return [&, name](size_t i, uint32_t r, uint32_t j) {
          const double want = ref[static_cast<size_t>(r) * d + j];
          cmp.elem(name, i, from_bits(t, elem16(b, i)), want, atol_of(t) + rtol_of(t) * std::fabs(want));
        };
      };
      if (fused) {  // input: the normalized rows; residual: the sums rounded once, exactly
        problems = {guard_problem(g[0], "input"), guard_problem(g[1], "residual"),
                    unchanged_problem(g[2], h_w.data(), h_w.size() * 2, "weight")};
        rows_of(cmp, g[0], "input", sa, close_to_ref(g[0], "input"));
        rows_of(cmp, g[1], "residual", sb, [&](size_t i, uint32_t r, uint32_t j) {
          const uint16_t want = ref_res[static_cast<size_t>(r) * d + j];
          if (elem16(g[1], i) != want) {
            cmp.mismatch(strf("residual[%zu] = 0x%04x, want 0x%04x (the fp32 sum rounded once)", i, elem16(g[1], i), want));
          }
        });
      } else {
        problems = {unchanged_problem(g[0], h_in.data(), h_in.size() * 2, "input"),
                    unchanged_problem(g[1], h_w.data(), h_w.size() * 2, "weight"), guard_problem(g[2], "output")};
        rows_of(cmp, g[2], "output", sb, close_to_ref(g[2], "output"));
      }
      return verdict_of(cmp, problems);
    };
    const NormSpec* sp = &s;
    c.paths = pdl_paths(
        [=](Via via, const Ptrs& p) {
          return cuda_result(sp->direct(via, g_stream, p[0], p[1], p[2], d, sa, sb, bias, eps, rows));
        },
        [=](int pdl, const Ptrs& p) {
          return kpack_result(sp->kpack(g_stream, pdl, p[0], p[1], p[2], d, sa, sb, bias, eps, rows));
        });
    c.model = [=](const Ptrs& p) { model_norm(fused, t, p[0], p[1], p[2], d, sa, sb, bias, eps, rows); };
    sink(c);
  }
}

// ---- act_and_mul ------------------------------------------------------------------------------

// Host model of act_and_mul_kernel with the corpus's activations, in fp32.
void model_act(bool gelu, DType t, void* out, const void* in, int32_t d, uint32_t tokens) {
  const uint16_t* x = static_cast<const uint16_t*>(in);
  uint16_t* o = static_cast<uint16_t*>(out);
  const size_t nd = static_cast<size_t>(d);
  for (size_t r = 0; r < tokens; ++r) {
    for (size_t j = 0; j < nd; ++j) {
      const float a = static_cast<float>(from_bits(t, x[2 * nd * r + j]));
      const float y = static_cast<float>(from_bits(t, x[2 * nd * r + nd + j]));
      const float act = gelu ? 0.5f * a * (1.0f + std::erf(a * 0.70710678118654752f)) : a / (1.0f + std::exp(-a));
      o[nd * r + j] = to_bits(t, act * y);
    }
  }
}

void act_cases(const ActSpec& s, const CaseSink& sink) {
  const DType t = s.t;
  const bool gelu = std::strcmp(s.act, "gelu") == 0;
  std::vector<std::pair<int32_t, uint32_t>> shapes;  // (d, tokens)
  for (const int32_t d : {11008, 14336, 3420}) {    // Llama-2 7B, Llama-3 8B, Qwen2.5-VL (vec 4)
    if (d % static_cast<int32_t>(s.vec) != 0) continue;
    for (const uint32_t n : {1u, 33u, 256u}) shapes.push_back({d, n});
  }
  shapes.push_back({96, 3});  // fewer threads than a warp
  for (const auto& [d, tokens] : shapes) {
    Case c;
    c.spec = s.name;
    c.shape = strf("d=%d tokens=%u", d, tokens);
    Rng rng = case_rng(c.spec + " " + c.shape);
    const size_t nd = static_cast<size_t>(d);
    std::vector<uint16_t> h_in(2 * nd * tokens);
    for (uint32_t r = 0; r < tokens; ++r) {
      for (size_t j = 0; j < nd; ++j) {
        h_in[2 * nd * r + j] = random_elem(t, rng, -6, 6);       // x: into the activation
        h_in[2 * nd * r + nd + j] = random_elem(t, rng, -2, 2);  // y: the gate
      }
    }
    std::vector<double> ref(nd * tokens), slack(nd * tokens);
    for (uint32_t r = 0; r < tokens; ++r) {
      for (size_t j = 0; j < nd; ++j) {
        const double x = from_bits(t, h_in[2 * nd * r + j]), y = from_bits(t, h_in[2 * nd * r + nd + j]);
        ref[nd * r + j] = (gelu ? ref_gelu(x) : ref_silu(x)) * y;
        slack[nd * r + j] = gelu ? gelu_slack(x, y) : 0.0;
      }
    }
    c.bufs = {{"out", nd * tokens * 2, nullptr}, {"input", h_in.size() * 2, h_in.data()}};
    c.verify = [&](const std::vector<Bytes>& g) {
      Compare cmp;
      const std::vector<std::string> problems = {guard_problem(g[0], "out"),
                                                 unchanged_problem(g[1], h_in.data(), h_in.size() * 2, "input")};
      for (size_t i = 0; i < ref.size(); ++i) {
        cmp.elem("out", i, from_bits(t, elem16(g[0], i)), ref[i], atol_of(t) + rtol_of(t) * std::fabs(ref[i]) + slack[i]);
      }
      return verdict_of(cmp, problems);
    };
    const ActSpec* sp = &s;
    const int32_t dd = d;
    const uint32_t nt = tokens;
    c.paths = pdl_paths(
        [=](Via via, const Ptrs& p) { return cuda_result(sp->direct(via, g_stream, p[0], p[1], dd, nt)); },
        [=](int pdl, const Ptrs& p) { return kpack_result(sp->kpack(g_stream, pdl, p[0], p[1], dd, nt)); });
    c.model = [=](const Ptrs& p) { model_act(gelu, t, p[0], p[1], dd, nt); };
    sink(c);
  }
}

// ---- rope_pos_ids ------------------------------------------------------------------------------

// Host model of BatchQKApplyRotaryPosIdsKernel (unsplit), in fp32 with
// accurate powf and sincosf, from the kernel's own arguments.  Each head is
// read whole before it is written (q_rope may be q).
void model_rope(const RopeSpec& s, const RopeArgs& a) {
  const uint32_t D = s.head_dim, rd = a.rotary_dim;
  std::vector<float> freq(D), x(D), out(D);
  for (uint32_t j = 0; j < rd; ++j) {
    const uint32_t k = s.interleave ? 2 * (j / 2) : 2 * (j % (rd / 2));
    float f = std::pow(a.rope_rcp_theta, static_cast<float>(k) / static_cast<float>(rd));
    const float smooth = std::max(0.0f, std::min(1.0f, f * a.smooth_a + a.smooth_b));
    freq[j] = (1 - smooth) * (f * a.rope_rcp_scale) + smooth * f;
  }
  for (uint32_t idx = 0; idx < a.nnz; ++idx) {
    const int64_t pos = s.id_size == 4 ? static_cast<int64_t>(static_cast<const int32_t*>(a.pos_ids)[idx])
                                       : static_cast<const int64_t*>(a.pos_ids)[idx];
    for (uint32_t h = 0; h < a.num_qo_heads + a.num_kv_heads; ++h) {
      const bool is_q = h < a.num_qo_heads;
      const uint32_t hh = is_q ? h : h - a.num_qo_heads;
      const uint16_t* in = static_cast<const uint16_t*>(is_q ? a.q : a.k) +
                           idx * (is_q ? a.q_stride_n : a.k_stride_n) + hh * (is_q ? a.q_stride_h : a.k_stride_h);
      uint16_t* o = static_cast<uint16_t*>(is_q ? a.q_rope : a.k_rope) +
                    idx * (is_q ? a.q_rope_stride_n : a.k_rope_stride_n) +
                    hh * (is_q ? a.q_rope_stride_h : a.k_rope_stride_h);
      for (uint32_t j = 0; j < D; ++j) x[j] = static_cast<float>(from_bits(s.t, in[j]));
      for (uint32_t j = 0; j < D; ++j) {
        if (j >= rd) {
          out[j] = x[j];
          continue;
        }
        const float angle = static_cast<float>(pos) * freq[j];
        const float cs = std::cos(angle), sn = std::sin(angle);
        float partner;
        if (s.interleave) {
          partner = j % 2 == 0 ? -x[j + 1] : x[j - 1];
        } else {
          partner = j < rd / 2 ? -x[j + rd / 2] : x[j - rd / 2];
        }
        out[j] = x[j] * cs + partner * sn;
      }
      for (uint32_t j = 0; j < D; ++j) o[j] = to_bits(s.t, out[j]);
    }
  }
}

struct RopeShape {
  uint32_t nnz;
  bool half_rotary;  // rotary_dim = head_dim / 2 (and rope_scale 4)
  bool qkv_inplace;  // q and k inside one [nnz, Hq + 2 Hkv, D] tensor, rotated in place
};

void rope_cases(const RopeSpec& s, const CaseSink& sink) {
  const DType t = s.t;
  const uint32_t D = s.head_dim, hq = 32, hk = 8;
  const double theta = D == 64 ? 1e4 : 5e5;  // Llama-2, Llama-3
  static const unsigned char kPoisonPair[2] = {0xff, 0xff};
  const std::vector<RopeShape> shapes = {
      {1, false, false}, {17, false, false}, {17, true, false}, {300, false, false}, {300, false, true}};
  for (const RopeShape& sh : shapes) {
    const uint32_t nnz = sh.nnz, rd = sh.half_rotary ? D / 2 : D;
    const bool inplace = sh.qkv_inplace;
    const RopeParams p{D, rd, s.interleave, sh.half_rotary ? 0.25f : 1.0f, static_cast<float>(1.0 / theta)};
    Case c;
    c.spec = s.name;
    c.shape = strf("nnz=%u heads=%u/%u rotary_dim=%u%s%s", nnz, hq, hk, rd, sh.half_rotary ? " rope_scale=4" : "",
                   inplace ? " qkv-in-place" : "");
    Rng rng = case_rng(c.spec + " " + c.shape);
    // Positions below 4096, but 0 first and 32767 last in a longer batch.
    std::vector<int64_t> pos(nnz);
    for (uint32_t i = 0; i < nnz; ++i) pos[i] = rng.below(4096);
    if (nnz > 1) {
      pos[0] = 0;
      pos[nnz - 1] = 32767;
    }
    std::vector<unsigned char> h_pos(nnz * s.id_size);
    for (uint32_t i = 0; i < nnz; ++i) {
      const int32_t v32 = static_cast<int32_t>(pos[i]);
      std::memcpy(&h_pos[s.id_size * i], s.id_size == 4 ? static_cast<const void*>(&v32) : &pos[i], s.id_size);
    }
    // Layouts.  Separate: q [nnz, hq, D] and k [nnz, hk, D] into q_rope and
    // k_rope of the same shapes.  In place: one [nnz, hq + 2 hk, D] tensor,
    // q its first hq heads, k the next hk, and v, the last hk, untouched.
    const uint64_t row_q = inplace ? static_cast<uint64_t>(hq + 2 * hk) * D : static_cast<uint64_t>(hq) * D;
    const uint64_t row_k = inplace ? row_q : static_cast<uint64_t>(hk) * D;
    const size_t k_off = inplace ? static_cast<size_t>(hq) * D : 0;  // k's first element in its buffer
    std::vector<uint16_t> h_q(nnz * row_q), h_k(inplace ? 1 : nnz * row_k);
    for (uint16_t& v : h_q) v = random_elem(t, rng, -2, 2);
    for (uint16_t& v : h_k) v = random_elem(t, rng, -2, 2);
    const std::vector<uint16_t>& k_host = inplace ? h_q : h_k;

    // The reference of every element of q_rope and k_rope, [nnz, heads, D].
    std::vector<double> ref_q(static_cast<size_t>(nnz) * hq * D), slack_q(ref_q.size());
    std::vector<double> ref_k(static_cast<size_t>(nnz) * hk * D), slack_k(ref_k.size());
    std::vector<double> x(D);
    for (uint32_t i = 0; i < nnz; ++i) {
      for (uint32_t h = 0; h < hq; ++h) {
        for (uint32_t j = 0; j < D; ++j) x[j] = from_bits(t, h_q[i * row_q + static_cast<size_t>(h) * D + j]);
        const size_t o = (static_cast<size_t>(i) * hq + h) * D;
        ref_rope_head(p, x.data(), static_cast<double>(pos[i]), &ref_q[o], &slack_q[o]);
      }
      for (uint32_t h = 0; h < hk; ++h) {
        for (uint32_t j = 0; j < D; ++j) x[j] = from_bits(t, k_host[k_off + i * row_k + static_cast<size_t>(h) * D + j]);
        const size_t o = (static_cast<size_t>(i) * hk + h) * D;
        ref_rope_head(p, x.data(), static_cast<double>(pos[i]), &ref_k[o], &slack_k[o]);
      }
    }

    // Buffers: pos_ids, q (the qkv tensor in place), k, q_rope, k_rope
    // (the last three unused, two poisoned bytes, in place).
    const size_t q_rope_elems = static_cast<size_t>(nnz) * hq * D, k_rope_elems = static_cast<size_t>(nnz) * hk * D;
    c.bufs = {{"pos_ids", h_pos.size(), h_pos.data()},
              {inplace ? "qkv" : "q", h_q.size() * 2, h_q.data()},
              {"k", inplace ? 2 : h_k.size() * 2, inplace ? nullptr : h_k.data()},
              {"q_rope", inplace ? 2 : q_rope_elems * 2, nullptr},
              {"k_rope", inplace ? 2 : k_rope_elems * 2, nullptr}};
    RopeArgs base = {};
    base.nnz = nnz;
    base.num_qo_heads = hq;
    base.num_kv_heads = hk;
    base.rotary_dim = rd;
    base.q_stride_n = row_q;
    base.q_stride_h = D;
    base.k_stride_n = row_k;
    base.k_stride_h = D;
    base.q_rope_stride_n = inplace ? row_q : static_cast<uint64_t>(hq) * D;
    base.q_rope_stride_h = D;
    base.k_rope_stride_n = inplace ? row_k : static_cast<uint64_t>(hk) * D;
    base.k_rope_stride_h = D;
    base.smooth_a = 0.0f;
    base.smooth_b = 0.0f;
    base.rope_rcp_scale = p.rcp_scale;
    base.rope_rcp_theta = p.rcp_theta;
    const auto args_of = [=](const Ptrs& b) {
      RopeArgs a = base;
      a.pos_ids = b[0];
      a.q = b[1];
      a.k = inplace ? static_cast<void*>(static_cast<uint16_t*>(b[1]) + k_off) : b[2];
      a.q_rope = inplace ? a.q : b[3];
      a.k_rope = inplace ? a.k : b[4];
      return a;
    };
    c.verify = [&](const std::vector<Bytes>& g) {
      Compare cmp;
      std::vector<std::string> problems = {unchanged_problem(g[0], h_pos.data(), h_pos.size(), "pos_ids")};
      const Bytes& q_out = inplace ? g[1] : g[3];
      const Bytes& k_out = inplace ? g[1] : g[4];
      const uint64_t qs = inplace ? row_q : static_cast<uint64_t>(hq) * D;
      const uint64_t ks = inplace ? row_k : static_cast<uint64_t>(hk) * D;
      const size_t k0 = inplace ? k_off : 0;
      if (inplace) {
        problems.push_back(guard_problem(g[1], "qkv"));
        for (uint32_t i = 0; i < nnz; ++i) {  // v: untouched
          for (size_t j = static_cast<size_t>(hq + hk) * D; j < row_q; ++j) {
            const size_t e = i * row_q + j;
            if (elem16(g[1], e) != h_q[e]) cmp.mismatch(strf("qkv[%zu] (v) changed", e));
          }
        }
        problems.push_back(unchanged_problem(g[2], kPoisonPair, 2, "k (unused)"));
        problems.push_back(unchanged_problem(g[3], kPoisonPair, 2, "q_rope (unused)"));
        problems.push_back(unchanged_problem(g[4], kPoisonPair, 2, "k_rope (unused)"));
      } else {
        problems.push_back(unchanged_problem(g[1], h_q.data(), h_q.size() * 2, "q"));
        problems.push_back(unchanged_problem(g[2], h_k.data(), h_k.size() * 2, "k"));
        problems.push_back(guard_problem(g[3], "q_rope"));
        problems.push_back(guard_problem(g[4], "k_rope"));
      }
      const char* qn = inplace ? "qkv" : "q_rope";
      const char* kn = inplace ? "qkv" : "k_rope";
      for (uint32_t i = 0; i < nnz; ++i) {
        for (uint32_t h = 0; h < hq; ++h) {
          for (uint32_t j = 0; j < D; ++j) {
            const size_t o = (static_cast<size_t>(i) * hq + h) * D + j, e = i * qs + static_cast<size_t>(h) * D + j;
            cmp.elem(qn, e, from_bits(t, elem16(q_out, e)), ref_q[o],
                     atol_of(t) + rtol_of(t) * std::fabs(ref_q[o]) + slack_q[o]);
          }
        }
        for (uint32_t h = 0; h < hk; ++h) {
          for (uint32_t j = 0; j < D; ++j) {
            const size_t o = (static_cast<size_t>(i) * hk + h) * D + j, e = k0 + i * ks + static_cast<size_t>(h) * D + j;
            cmp.elem(kn, e, from_bits(t, elem16(k_out, e)), ref_k[o],
                     atol_of(t) + rtol_of(t) * std::fabs(ref_k[o]) + slack_k[o]);
          }
        }
      }
      return verdict_of(cmp, problems);
    };
    const RopeSpec* sp = &s;
    c.paths = {
        {"direct", [=](const Ptrs& b) { return cuda_result(sp->direct(Via::kChevrons, g_stream, args_of(b))); }},
        {"kpack", [=](const Ptrs& b) { return kpack_result(sp->kpack(g_stream, args_of(b))); }},
    };
    c.model = [=](const Ptrs& b) { model_rope(*sp, args_of(b)); };
    sink(c);
  }
}

// Every case of a planned config.
void cases_of(const Planned& p, const CaseSink& sink) {
  if (p.norm != nullptr) norm_cases(*p.norm, sink);
  if (p.act != nullptr) act_cases(*p.act, sink);
  if (p.rope != nullptr) rope_cases(*p.rope, sink);
}

// --self-test: a case's checks, run on the host model's result.  It must
// pass; a wrong element in the middle of any buffer, or a flipped bit in
// the first or last guard byte of any, must fail.
void model_case(const Case& c, const std::function<void(bool, const std::string&)>& expect) {
  std::vector<Bytes> host;
  Ptrs ptrs;
  for (const BufSpec& b : c.bufs) {
    host.emplace_back(b.bytes + 2 * DevBuf::kGuard, 0xff);
    if (b.init != nullptr) std::memcpy(host.back().data() + DevBuf::kGuard, b.init, b.bytes);
  }
  for (Bytes& h : host) ptrs.push_back(h.data() + DevBuf::kGuard);
  c.model(ptrs);
  const Verdict v = c.verify(host);
  expect(v.ok, strf("model %s %s: %s", c.spec.c_str(), c.shape.c_str(), v.detail.c_str()));
  bool caught = true;
  std::string missed;
  for (size_t b = 0; b < host.size(); ++b) {
    // The middle element becomes 65504 (f16; 2.6e36 in bf16), far outside
    // any tolerance; a guard byte is flipped.
    const size_t mid = DevBuf::kGuard + (c.bufs[b].bytes / 2 & ~static_cast<size_t>(1));
    for (const size_t at : {mid, static_cast<size_t>(0), host[b].size() - 1}) {
      std::vector<Bytes> bad = host;
      if (at == mid) {
        const bool same = bad[b][at] == 0xff && bad[b][at + 1] == 0x7b;
        bad[b][at] = same ? 0x00 : 0xff;
        bad[b][at + 1] = same ? 0x3c : 0x7b;
      } else {
        bad[b][at] ^= 0x40;
      }
      if (c.verify(bad).ok) {
        caught = false;
        missed += strf(" %s byte %zu;", c.bufs[b].name, at);
      }
    }
  }
  expect(caught, strf("model %s %s: corrupted bytes are caught%s", c.spec.c_str(), c.shape.c_str(),
                      caught ? "" : (": missed" + missed).c_str()));
}

// ---- Device ------------------------------------------------------------------------------------

struct Device {
  cudaDeviceProp prop;
  int sm = 0;
};

// Exits 77 without a usable device, or when the device can run neither
// sm_80 nor sm_90 SASS (the package's archs; this program has no PTX
// either).  Makes device 0's primary context current, which kpack's
// launches and the raw driver calls use.
Device open_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    const std::string why = e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none";
    std::printf("%s: skipped: no CUDA device (%s)\n", kProg, why.c_str());
    g_run.device.str("skipped", "no CUDA device: " + why);
    write_json();
    std::exit(kExitNoDevice);
  }
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr));
  Device d;
  CUDA_OK(cudaGetDeviceProperties(&d.prop, 0));
  d.sm = d.prop.major * 10 + d.prop.minor;
  int drv = 0, rt = 0;
  CUDA_OK(cudaDriverGetVersion(&drv));
  CUDA_OK(cudaRuntimeGetVersion(&rt));
  std::printf("%s: device 0: %s, sm_%d, %d SMs, driver CUDA %d.%d, runtime %d.%d\n", kProg, d.prop.name, d.sm,
              d.prop.multiProcessorCount, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
  g_run.device.str("name", d.prop.name).num("sm", d.sm).num("sms", d.prop.multiProcessorCount).num("driver", drv).num("runtime", rt);
  if (!(d.prop.major == 8 || d.sm == 90)) {
    std::printf("%s: skipped: device sm_%d runs neither sm_80 nor sm_90 SASS, the archs built\n", kProg, d.sm);
    g_run.device.str("skipped", strf("sm_%d runs neither sm_80 nor sm_90 SASS", d.sm));
    write_json();
    std::exit(kExitNoDevice);
  }
  return d;
}

cudaStream_t make_stream() {
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

bool selected(const char* name) { return g_opt.only.empty() || std::strstr(name, g_opt.only.c_str()) != nullptr; }

int run_check() {
  g_run.checking = true;
  Ctx ctx;
  g_stream = make_stream();
  const std::vector<Planned> plan = plan_all();
  for (const std::string& p : table_problems(plan)) report(false, "tables", "-", "-", p, NAN);
  for (const Planned& p : plan) {
    if (p.name() == nullptr || !selected(p.name())) continue;
    cases_of(p, [&](const Case& c) { run_case_gpu(ctx, c); });
  }
  // Every specialization of the package went through kpack.
  size_t covered = 0, expected = 0;
  std::string missing;
  for (const std::string& n : package_names()) {
    if (!selected(n.c_str())) continue;
    ++expected;
    if (ctx.tested.count(n) != 0) {
      ++covered;
    } else {
      missing += (missing.empty() ? "" : ", ") + n;
    }
  }
  report(covered == expected && expected > 0, "coverage", "-", "-",
         strf("%zu of %zu specializations launched through kpack%s%s", covered, expected,
              missing.empty() ? "" : "; not: ", missing.c_str()),
         NAN);
  CUDA_OK(cudaStreamDestroy(g_stream));
  g_stream = nullptr;
  g_run.checking = false;
  print_counts();
  return g_run.failed == 0 ? 0 : 1;
}

// ---- Statistics --------------------------------------------------------------------------------

struct Stats {
  double median = NAN, p10 = NAN, p90 = NAN, min = NAN, max = NAN;
  size_t count = 0;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  s.count = v.size();
  if (v.empty()) return s;
  s.median = quantile(v, 0.5);
  s.p10 = quantile(v, 0.1);
  s.p90 = quantile(v, 0.9);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

// Per-round pairs (a[i], b[i]) combined, then their statistics.
Stats paired(const std::vector<double>& a, const std::vector<double>& b, double (*f)(double, double)) {
  std::vector<double> v;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) v.push_back(f(a[i], b[i]));
  return stats_of(v);
}
double ratio_fn(double a, double b) { return a / b; }
double minus_fn(double a, double b) { return a - b; }

// ---- --pdl-bench ---------------------------------------------------------------------------------

// Keeps the GPU busy for `cycles` SM clocks, so that the host can queue a
// whole chain before its first launch starts.
__global__ void spin_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

const NormSpec& norm_spec_named(const char* name) {
  for (const NormSpec& s : norm_specs()) {
    if (std::strcmp(s.name, name) == 0) return s;
  }
  fatal("internal: no specialization %s in the tables", name);
}

// SM clocks per microsecond, measured with events around spin_kernel.
double spin_cycles_per_us(cudaStream_t s) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  spin_kernel<<<1, 1, 0, s>>>(1000);  // load it
  CUDA_OK(cudaGetLastError());
  const long long cycles = 20000000;
  CUDA_OK(cudaEventRecord(e0, s));
  spin_kernel<<<1, 1, 0, s>>>(cycles);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaEventRecord(e1, s));
  CUDA_OK(cudaEventSynchronize(e1));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return static_cast<double>(cycles) / (static_cast<double>(ms) * 1000.0);
}

int run_pdl_bench() {
  const cudaStream_t st = make_stream();
  const NormSpec& s = norm_spec_named("rmsnorm_v8_bf16");
  const uint32_t d = 4096;
  const float eps = 1e-6f;
  const double cyc_per_us = spin_cycles_per_us(st);
  std::printf("pdl_note: %s d=%u; %d rounds of %d launch pairs per variant, variants rotated each round; "
              "GPU time between events, the chain queued behind a spinning kernel; SM clock %.0f MHz\n",
              s.name, d, g_opt.pdl_rounds, g_opt.pdl_pairs, cyc_per_us);
  bool all_equal = true;
  for (const uint32_t batch : {128u, 1u}) {
    Rng rng = case_rng(strf("pdl %s d=%u batch=%u", s.name, d, batch));
    std::vector<uint16_t> h_x(static_cast<size_t>(batch) * d), h_w(d);
    for (uint16_t& v : h_x) v = random_elem(DType::BF16, rng, -2, 2);
    for (uint16_t& v : h_w) v = random_elem(DType::BF16, rng, 0.98, 1.02);  // 400 norms: no row collapses onto a few elements
    DevBuf A("A", h_x.size() * 2), B("B", h_x.size() * 2), W("weight", h_w.size() * 2);
    W.upload(h_w.data(), st);
    void* a = A.ptr();
    void* b = B.ptr();
    void* w = W.ptr();
    struct Variant {
      const char* name;
      std::function<void(void*, void*)> launch;  // in -> out
    };
    const auto kp = [&](int pdl) {
      return [&, pdl](void* in, void* out) {
        const kpack_status r = s.kpack(st, pdl, in, w, out, d, d, d, 0.0f, eps, batch);
        if (r != KPACK_SUCCESS) fatal("%s (pdl=%d): %s", s.name, pdl, kpack_failure(r).c_str());
      };
    };
    const auto dir = [&](Via via) {
      return [&, via](void* in, void* out) {
        const cudaError_t e = s.direct(via, st, in, w, out, d, d, d, 0.0f, eps, batch);
        if (e != cudaSuccess) fatal("direct cudaLaunchKernelEx of %s: %s", s.name, cuda_failure(e).c_str());
      };
    };
    std::vector<Variant> vars = {{"kpack_nopdl", kp(0)}, {"kpack_pdl", kp(1)}, {"direct_nopdl", dir(Via::kEx)},
                                 {"direct_pdl", dir(Via::kExPdl)}};
    const size_t nv = vars.size();
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    // The spin covers the queuing of a chain: 20 ms in the warm-up round
    // (which also loads the code), then twice the slowest enqueue of the
    // round before plus 1 ms.
    double spin_us = 20000;
    double max_enqueue_us = 0;
    std::vector<std::vector<double>> per(nv);
    Bytes reference;
    std::string mismatch;
    int ahead = 0, runs = 0;
    for (int round = 0; round <= g_opt.pdl_rounds; ++round) {  // round 0: warm-up
      for (size_t j = 0; j < nv; ++j) {
        const size_t v = (static_cast<size_t>(round) + j) % nv;
        A.upload(h_x.data(), st);
        B.poison(st);
        spin_kernel<<<1, 1, 0, st>>>(static_cast<long long>(spin_us * cyc_per_us));
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaEventRecord(e0, st));
        const Clock::time_point t0 = Clock::now();
        for (int i = 0; i < g_opt.pdl_pairs; ++i) {
          vars[v].launch(a, b);
          vars[v].launch(b, a);
        }
        const double enqueue_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        // Still spinning when the last launch was queued: the events time
        // the GPU alone.
        const cudaError_t q = cudaEventQuery(e0);
        if (q != cudaSuccess && q != cudaErrorNotReady) CUDA_OK(q);
        const cudaError_t last = cudaGetLastError();  // NotReady is not an error
        if (last != cudaSuccess && last != cudaErrorNotReady) CUDA_OK(last);
        CUDA_OK(cudaEventRecord(e1, st));
        CUDA_OK(cudaEventSynchronize(e1));
        float ms = 0;
        CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
        max_enqueue_us = std::max(max_enqueue_us, enqueue_us);
        const Bytes got = A.download(st);
        if (reference.empty()) {
          reference = got;
        } else if (mismatch.empty()) {
          const std::string diff = bits_difference(reference, got, "A");
          if (!diff.empty()) mismatch = strf("%s round %d differs from %s: %s", vars[v].name, round, vars[0].name, diff.c_str());
        }
        if (round > 0) {
          per[v].push_back(static_cast<double>(ms) * 1000.0 / g_opt.pdl_pairs);
          ++runs;
          if (q == cudaErrorNotReady) ++ahead;
          std::printf("pdl_round: batch=%u round=%d variant=%s us_per_pair=%.3f enqueue_us=%.0f host_ahead=%s\n", batch,
                      round, vars[v].name, per[v].back(), enqueue_us, q == cudaErrorNotReady ? "yes" : "no");
        }
      }
      spin_us = std::min(200000.0, std::max(2000.0, 2.0 * max_enqueue_us + 1000.0));
      max_enqueue_us = 0;
    }
    CUDA_OK(cudaEventDestroy(e0));
    CUDA_OK(cudaEventDestroy(e1));
    // The chain's result must not depend on PDL: griddepcontrol.wait in
    // each kernel must hold it until the previous one has finished.
    bool finite = true;
    for (size_t i = 0; i < h_x.size(); ++i) finite = finite && std::isfinite(from_bits(DType::BF16, elem16(reference, i)));
    const bool equal = mismatch.empty() && finite;
    all_equal = all_equal && equal;
    std::vector<Stats> st_v;
    for (size_t v = 0; v < nv; ++v) st_v.push_back(stats_of(per[v]));
    const Stats kp_saved = paired(per[0], per[1], minus_fn), dir_saved = paired(per[2], per[3], minus_fn);
    const Stats pdl_ratio = paired(per[1], per[3], ratio_fn), nopdl_ratio = paired(per[0], per[2], ratio_fn);
    std::printf("pdl: spec=%s d=%u batch=%u pairs=%d rounds=%d kpack_nopdl_us=%.3f kpack_pdl_us=%.3f "
                "direct_nopdl_us=%.3f direct_pdl_us=%.3f kpack_saved_us=%.3f direct_saved_us=%.3f "
                "kpack_pdl_over_direct_pdl=%.4f kpack_nopdl_over_direct_nopdl=%.4f bit_equal=%s host_ahead=%d/%d\n",
                s.name, d, batch, g_opt.pdl_pairs, g_opt.pdl_rounds, st_v[0].median, st_v[1].median, st_v[2].median,
                st_v[3].median, kp_saved.median, dir_saved.median, pdl_ratio.median, nopdl_ratio.median,
                equal ? "yes" : "no", ahead, runs);
    if (!equal) {
      std::printf("FAIL pdl %s batch=%u: %s\n", s.name, batch,
                  mismatch.empty() ? "the chain's result has non-finite values" : mismatch.c_str());
    }
    JsonObj j;
    j.str("spec", s.name).num("d", d).num("batch", batch).num("pairs", g_opt.pdl_pairs).num("rounds", g_opt.pdl_rounds);
    for (size_t v = 0; v < nv; ++v) {
      j.raw(vars[v].name, JsonObj()
                              .num("us_per_pair", st_v[v].median)
                              .num("p10", st_v[v].p10)
                              .num("p90", st_v[v].p90)
                              .num("min", st_v[v].min)
                              .num("max", st_v[v].max)
                              .done());
    }
    j.num("kpack_saved_us_per_pair", kp_saved.median)
        .num("direct_saved_us_per_pair", dir_saved.median)
        .num("kpack_pdl_over_direct_pdl", pdl_ratio.median)
        .num("kpack_nopdl_over_direct_nopdl", nopdl_ratio.median)
        .flag("bit_equal", equal)
        .num("host_ahead_runs", ahead)
        .num("runs", runs)
        .str("detail", mismatch);
    g_run.pdl.push_back(j.done());
  }
  CUDA_OK(cudaStreamDestroy(st));
  return all_equal ? 0 : 1;
}

// ---- --launch-bench --------------------------------------------------------------------------------

using PfnLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void**, void**);
using PfnLaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);

// A driver entry point through the runtime (no link against libcuda).
void* driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  CUDA_OK(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || fn == nullptr) fatal("the driver has no %s (query result %d)", symbol, static_cast<int>(q));
  return fn;
}

[[noreturn]] __attribute__((noinline, cold)) void fail_cu(CUresult r, const char* what) {
  fatal("%s failed: CUresult %d", what, static_cast<int>(r));
}
[[noreturn]] __attribute__((noinline, cold)) void fail_kpack(kpack_status st, const char* what) {
  fatal("%s: %s", what, kpack_failure(st).c_str());
}

// The timed loop, instantiated per variant so that the launch is inlined
// into it: nothing but the launches and their checks between the clocks.
template <typename Launch>
std::function<double(int)> timed(Launch launch) {
  return [launch](int count) {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < count; ++i) launch();
    const Clock::time_point t1 = Clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / count;
  };
}

int run_launch_bench() {
  const cudaStream_t st = make_stream();
  const NormSpec& s = norm_spec_named("rmsnorm_v8_bf16");
  uint32_t d = 4096, batch = 1, stride = 4096;
  float bias = 0.0f, eps = 1e-6f;
  Rng rng = case_rng("launch rmsnorm_v8_bf16");
  std::vector<uint16_t> h_x(d), h_w(d);
  for (uint16_t& v : h_x) v = random_elem(DType::BF16, rng, -2, 2);
  for (uint16_t& v : h_w) v = random_elem(DType::BF16, rng, -1.5, 1.5);
  DevBuf X("input", d * 2), W("weight", d * 2), O("output", d * 2);
  X.upload(h_x.data(), st);
  W.upload(h_w.data(), st);

  // The raw driver path: the CUfunction of the direct instantiation (the
  // same code as kpack's), arguments and launch config prepared once.
  CUfunction fn = nullptr;
  CUDA_OK(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&fn), s.symbol));
  // And the context-independent CUkernel of the same instantiation: the
  // kind of handle kpack launches (cuLibraryGetKernel), which the driver
  // resolves to the context's function inside the launch.  The like-for-like
  // baseline of the goal.
  cudaKernel_t kernel_handle = nullptr;
  CUDA_OK(cudaGetKernel(&kernel_handle, s.symbol));
  CUfunction fk = reinterpret_cast<CUfunction>(kernel_handle);
  const PfnLaunch raw_launch = reinterpret_cast<PfnLaunch>(driver_entry("cuLaunchKernel"));
  const PfnLaunchEx raw_launch_ex = reinterpret_cast<PfnLaunchEx>(driver_entry("cuLaunchKernelEx"));
  __nv_bfloat16* x = static_cast<__nv_bfloat16*>(X.ptr());
  __nv_bfloat16* w = static_cast<__nv_bfloat16*>(W.ptr());
  __nv_bfloat16* o = static_cast<__nv_bfloat16*>(O.ptr());
  void* args[] = {&x, &w, &o, &d, &stride, &stride, &bias, &eps};
  void** const argp = args;
  const Geometry g = norm_geometry(false, 8, d, batch);
  CUlaunchAttribute attr[1];
  std::memset(attr, 0, sizeof attr);
  attr[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr[0].value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = g.grid.x;
  cfg.gridDimY = g.grid.y;
  cfg.gridDimZ = g.grid.z;
  cfg.blockDimX = g.block.x;
  cfg.blockDimY = g.block.y;
  cfg.blockDimZ = g.block.z;
  cfg.sharedMemBytes = static_cast<unsigned>(g.smem);
  cfg.hStream = st;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const CUlaunchConfig* const cfgp = &cfg;
  const unsigned gx = g.grid.x, bx = g.block.x, by = g.block.y, sm = static_cast<unsigned>(g.smem);
  kpack_bf16* kx = reinterpret_cast<kpack_bf16*>(x);
  kpack_bf16* kw = reinterpret_cast<kpack_bf16*>(w);
  kpack_bf16* ko = reinterpret_cast<kpack_bf16*>(o);

  struct Variant {
    const char* name;
    std::function<double(int)> batch;
  };
  // Order: the columns of the results; rounds rotate it.
  std::vector<Variant> vars = {
      {"raw_cuLaunchKernel", timed([=] {
         const CUresult r = raw_launch(fn, gx, 1, 1, bx, by, 1, sm, st, argp, nullptr);
         if (r != CUDA_SUCCESS) [[unlikely]] fail_cu(r, "cuLaunchKernel");
       })},
      {"kpack", timed([=] {
         const kpack_status r = fic_rmsnorm_v8_bf16(st, 0, kx, kw, ko, d, stride, stride, bias, eps, batch);
         if (r != KPACK_SUCCESS) [[unlikely]] fail_kpack(r, "fic_rmsnorm_v8_bf16 (pdl=0)");
       })},
      {"raw_cuLaunchKernelEx_pdl", timed([=] {
         const CUresult r = raw_launch_ex(cfgp, fn, argp, nullptr);
         if (r != CUDA_SUCCESS) [[unlikely]] fail_cu(r, "cuLaunchKernelEx");
       })},
      {"kpack_pdl", timed([=] {
         const kpack_status r = fic_rmsnorm_v8_bf16(st, 1, kx, kw, ko, d, stride, stride, bias, eps, batch);
         if (r != KPACK_SUCCESS) [[unlikely]] fail_kpack(r, "fic_rmsnorm_v8_bf16 (pdl=1)");
       })},
      {"raw_cuLaunchKernel_cukernel", timed([=] {
         const CUresult r = raw_launch(fk, gx, 1, 1, bx, by, 1, sm, st, argp, nullptr);
         if (r != CUDA_SUCCESS) [[unlikely]] fail_cu(r, "cuLaunchKernel (CUkernel)");
       })},
      {"raw_cuLaunchKernelEx_pdl_cukernel", timed([=] {
         const CUresult r = raw_launch_ex(cfgp, fk, argp, nullptr);
         if (r != CUDA_SUCCESS) [[unlikely]] fail_cu(r, "cuLaunchKernelEx (CUkernel)");
       })},
      {"cuda_launch_ex_pdl", timed([=] {
         const cudaError_t e = direct_rmsnorm<8, __nv_bfloat16>(Via::kExPdl, st, x, w, o, d, stride, stride, bias,
                                                                eps, batch);
         if (e != cudaSuccess) [[unlikely]] fatal("cudaLaunchKernelEx: %s", cuda_failure(e).c_str());
       })},
  };
  enum { kRaw = 0, kKpack = 1, kRawEx = 2, kKpackPdl = 3, kRawK = 4, kRawExK = 5, kCudaEx = 6 };
  const size_t nv = vars.size();

  // Each variant's first launch (loading its code) outside the timing, and
  // its result, bit for bit, against the direct <<<>>> launch's.
  O.poison(st);
  const cudaError_t first = direct_rmsnorm<8, __nv_bfloat16>(Via::kChevrons, st, x, w, o, d, stride, stride, bias, eps, batch);
  CUDA_OK(first);
  const Bytes want = O.download(st);
  const auto check_all = [&](const char* when) {
    for (Variant& v : vars) {
      O.poison(st);
      v.batch(1);
      const Bytes got = O.download(st);
      const std::string diff = bits_difference(want, got, "output");
      if (!diff.empty()) fatal("launch bench: %s, %s: %s", v.name, when, diff.c_str());
    }
  };
  check_all("first launch");
  std::printf("launch_note: %s d=%u batch=%u; %d warm-up + %d measured rounds of %zu variants x %d launches, "
              "host time of the launch loop only, the stream drained between batches\n",
              s.name, d, batch, g_opt.launch_warmup, g_opt.launch_rounds, nv, g_opt.launch_batch);

  std::vector<std::vector<double>> per(nv);
  for (int round = 0; round < g_opt.launch_warmup + g_opt.launch_rounds; ++round) {
    for (size_t j = 0; j < nv; ++j) {
      const size_t v = (static_cast<size_t>(round) + j) % nv;
      const double ns = vars[v].batch(g_opt.launch_batch);
      CUDA_OK(cudaStreamSynchronize(st));
      CUDA_OK(cudaGetLastError());
      if (round >= g_opt.launch_warmup) per[v].push_back(ns);
    }
  }
  check_all("last launch");

  JsonObj j;
  j.str("spec", s.name).num("d", d).num("batch", batch).num("launches_per_batch", g_opt.launch_batch).num("rounds", g_opt.launch_rounds);
  for (size_t v = 0; v < nv; ++v) {
    const Stats t = stats_of(per[v]);
    std::printf("launch: variant=%s ns=%.1f p10=%.1f p90=%.1f batches=%zu launches_per_batch=%d\n", vars[v].name,
                t.median, t.p10, t.p90, t.count, g_opt.launch_batch);
    j.raw(vars[v].name, JsonObj().num("ns", t.median).num("p10", t.p10).num("p90", t.p90).num("batches", static_cast<double>(t.count)).done());
  }
  struct Pair {
    const char* name;
    int a, b;
  };
  double goal_ratio = NAN;
  // The goal's pair first: both launch a CUkernel handle.
  for (const Pair& p : {Pair{"kpack_pdl_over_raw_ex_pdl_cukernel", kKpackPdl, kRawExK},
                        Pair{"kpack_over_raw_cukernel", kKpack, kRawK},
                        Pair{"kpack_pdl_over_raw_ex_pdl", kKpackPdl, kRawEx}, Pair{"kpack_over_raw", kKpack, kRaw},
                        Pair{"raw_ex_pdl_cukernel_over_cufunction", kRawExK, kRawEx},
                        Pair{"cuda_launch_ex_pdl_over_raw_ex_pdl", kCudaEx, kRawEx}}) {
    const Stats r = paired(per[p.a], per[p.b], ratio_fn);
    const Stats diff = paired(per[p.a], per[p.b], minus_fn);
    std::printf("launch_ratio: %s=%.4f p10=%.4f p90=%.4f ratio_of_medians=%.4f difference_ns=%.1f\n", p.name, r.median,
                r.p10, r.p90, stats_of(per[p.a]).median / stats_of(per[p.b]).median, diff.median);
    j.raw(p.name, JsonObj().num("ratio", r.median).num("p10", r.p10).num("p90", r.p90).num("difference_ns", diff.median).done());
    if (p.a == kKpackPdl && p.b == kRawExK) goal_ratio = r.median;
  }
  const bool met = goal_ratio <= 1.03;
  std::printf("launch: goal kpack_pdl_over_raw_ex_pdl_cukernel <= 1.03: %s (%.4f)\n", met ? "met" : "not met",
              goal_ratio);
  j.flag("goal_met", met);
  g_run.launch.push_back(j.done());
  CUDA_OK(cudaStreamDestroy(st));
  return 0;
}

// ---- --self-test (no GPU) -------------------------------------------------------------------------

int g_self_passed = 0, g_self_failed = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s self-test %s\n", ok ? "PASS" : "FAIL", what.c_str());
  ++(ok ? g_self_passed : g_self_failed);
}

void expect_near(double got, double want, double tol, const std::string& what) {
  expect(std::fabs(got - want) <= tol, strf("%s: %.12g, want %.12g", what.c_str(), got, want));
}

int run_self_test() {
  // Conversions and the poison.
  expect(to_bits(DType::F16, 1.0f) == 0x3c00 && to_bits(DType::BF16, 1.0f) == 0x3f80, "1.0 in f16 and bf16");
  expect(to_bits(DType::F16, 1.0f + 0x1p-11f) == 0x3c00, "f16: 1 + 2^-11 ties to even (1.0)");
  expect(to_bits(DType::F16, 1.0f + 3 * 0x1p-11f) == 0x3c02, "f16: 1 + 3 2^-11 ties to even (0x3c02)");
  expect(to_bits(DType::BF16, 1.0f + 0x1p-8f) == 0x3f80, "bf16: 1 + 2^-8 ties to even (1.0)");
  expect(std::isnan(from_bits(DType::F16, kPoison16)) && std::isnan(from_bits(DType::BF16, kPoison16)),
         "0xFFFF is NaN in f16 and bf16");
  {
    Compare c;
    c.elem("x", 0, NAN, 1.0, 1.0);
    expect(c.bad == 1 && !std::isfinite(c.worst), "NaN never passes the tolerance");
    Compare c2;
    c2.elem("x", 0, 1.0005, 1.0, atol_of(DType::F16) + rtol_of(DType::F16));
    expect(c2.bad == 0 && c2.worst < 1.0, "f16: half an ulp of 1 passes");
  }

  // RMSNorm: x = (3, 4): mean(x^2) = 12.5, rms = sqrt(12.5) = 3.5355339.
  {
    const double x[2] = {3, 4}, w1[2] = {1, 1}, w01[2] = {0, 1};
    double out[2];
    ref_rmsnorm_row(x, w1, 2, 0.0, 0.0, out);
    expect_near(out[0], 0.848528137423857, 1e-12, "rmsnorm (3, 4)[0]");
    expect_near(out[1], 1.131370849898476, 1e-12, "rmsnorm (3, 4)[1]");
    ref_rmsnorm_row(x, w01, 2, 1.0, 0.0, out);  // Gemma: (1 + w)
    expect_near(out[0], 0.848528137423857, 1e-12, "gemma rmsnorm (3, 4), w = (0, 1) [0]");
    expect_near(out[1], 2.262741699796952, 1e-12, "gemma rmsnorm (3, 4), w = (0, 1) [1]");
    ref_rmsnorm_row(x, w1, 2, 0.0, 12.5 * 3, out);  // eps = 37.5: rms = sqrt(50)
    expect_near(out[0], 3.0 / std::sqrt(50.0), 1e-12, "rmsnorm eps adds to the mean square");
  }
  // Fused add: input (1, 0) + residual (2^-11, 1): fp32 sums (1 + 2^-11, 1);
  // the stored f16 residual rounds the first to 1.0 (a tie, to even), but
  // the norm uses the fp32 sum.
  {
    const double in[2] = {1, 0}, res[2] = {0x1p-11, 1}, w[2] = {1, 1};
    uint16_t rb[2];
    double out[2];
    ref_fused_add_row(DType::F16, in, res, w, 2, 0.0, 0.0, rb, out);
    const double s0 = 1 + 0x1p-11, rms = std::sqrt((s0 * s0 + 1) / 2);
    expect(rb[0] == 0x3c00 && rb[1] == 0x3c00, "fused add: residual stored as f16 of the fp32 sum");
    expect_near(out[0], s0 / rms, 1e-15, "fused add: normalizes the fp32 sum, not the rounded residual [0]");
    expect_near(out[1], 1 / rms, 1e-15, "fused add: [1]");
    const double in2[1] = {3}, res2[1] = {4};
    ref_fused_add_row(DType::BF16, in2, res2, w, 1, 1.0, 0.0, rb, out);  // Gemma: 7 / 7 * (1 + 1)
    expect(rb[0] == 0x40e0 && std::fabs(out[0] - 2.0) < 1e-15, "fused add bf16: 3 + 4 = 7 (0x40e0), normalized 1 * (1 + w)");
  }
  // Activations.
  expect_near(ref_silu(0), 0, 0, "silu(0)");
  expect_near(ref_silu(1), 0.7310585786300049, 1e-15, "silu(1)");
  expect_near(ref_silu(-1), -0.2689414213699951, 1e-15, "silu(-1)");
  expect_near(ref_gelu(1), 0.8413447460685429, 1e-15, "gelu(1)");
  expect_near(ref_gelu(-1), -0.15865525393145707, 1e-15, "gelu(-1)");
  expect_near(ref_gelu(2), 1.9544997361036416, 1e-15, "gelu(2)");
  expect(gelu_slack(-6, 2) > 1e-6 && gelu_slack(-6, 2) < 2e-6, "gelu slack at x = -6, y = 2 covers fp32 1 + erff");
  // RoPE, head_dim 4, rotary_dim 4, rcp_theta 0.01: f = (1, 0.1).
  {
    const double x[4] = {1, 0, 0, 0}, y[4] = {1, 2, 3, 4};
    double out[4], slack[4];
    RopeParams p{4, 4, false, 1.0f, 0.01f};
    ref_rope_head(p, x, 1, out, slack);
    // k = j mod 2: (x0, x2) turn by 1 rad, (x1, x3) by f_1 = 0.01^(2/4) = 0.1.
    expect_near(out[0], std::cos(1.0), 1e-7, "rope: out0 = x0 cos(1) - x2 sin(1)");
    expect_near(out[2], std::sin(1.0), 1e-7, "rope: out2 = x2 cos(1) + x0 sin(1)");
    expect_near(out[1], 0, 1e-15, "rope: out1 = 0");
    ref_rope_head(p, y, 2, out, slack);
    const double f1 = std::pow(static_cast<double>(0.01f), 0.5);
    expect_near(out[1], 2 * std::cos(2 * f1) - 4 * std::sin(2 * f1), 1e-12, "rope: out1 = x1 cos(2 f1) - x3 sin(2 f1)");
    expect_near(out[3], 4 * std::cos(2 * f1) + 2 * std::sin(2 * f1), 1e-12, "rope: out3 = x3 cos(2 f1) + x1 sin(2 f1)");
    p.interleave = true;  // pairs (0, 1) at f = 1, (2, 3) at f = 0.1
    ref_rope_head(p, y, 1, out, slack);
    expect_near(out[0], std::cos(1.0) - 2 * std::sin(1.0), 1e-7, "rope interleaved: out0 = x0 cos - x1 sin");
    expect_near(out[1], 2 * std::cos(1.0) + std::sin(1.0), 1e-7, "rope interleaved: out1 = x1 cos + x0 sin");
    expect_near(out[3], 4 * std::cos(f1) + 3 * std::sin(f1), 1e-12, "rope interleaved: out3 = x3 cos(f1) + x2 sin(f1)");
    RopeParams half{4, 2, false, 0.25f, 0.01f};  // rotary_dim 2: (x0, x1) at f = 0.25; x2, x3 copied
    ref_rope_head(half, y, 4, out, slack);
    expect_near(out[0], std::cos(1.0) - 2 * std::sin(1.0), 1e-7, "rope rotary_dim 2, scale 4: out0 at angle 4 * 0.25");
    expect(out[2] == 3 && out[3] == 4 && slack[2] == 0, "rope rotary_dim 2: dims 2 and 3 copied exactly");
    expect(slack[0] > 0 && slack[0] < 1e-4, "rope slack at a small position is small");
  }
  // Launch geometry, as the manifests compute it.
  {
    const Geometry n = norm_geometry(false, 8, 4096, 7);
    expect(n.grid.x == 7 && n.block.x == 32 && n.block.y == 16 && n.smem == 64, "rmsnorm v8 d=4096: grid 7, block (32, 16), smem 64");
    const Geometry f = norm_geometry(true, 8, 16384, 1);
    expect(f.block.y == 32 && f.smem == (32 + 16384) * 4u && f.smem > 48 * 1024, "fused add d=16384: block (32, 32), smem 65664");
    const Geometry f1 = norm_geometry(true, 1, 1027, 5);
    expect(f1.block.y == 32 && f1.smem == (32 + 1027) * 4u, "fused add v1 d=1027: 1024 threads");
    const Geometry small = norm_geometry(false, 8, 64, 3);
    expect(small.block.y == 1 && small.smem == 4, "rmsnorm v8 d=64: one warp");
    expect(act_geometry(4, 3420, 33).block.x == 256 && act_geometry(8, 96, 3).block.x == 12 && act_geometry(4, 3420, 33).grid.x == 33,
           "act_and_mul: block min(256, d / vec)");
    const Geometry r = rope_geometry(16, 300);
    expect(r.grid.x == 38 && r.block.x == 16 && r.block.y == 8, "rope h128 (bdx 16) nnz=300: grid 38, block (16, 8)");
    expect(rope_geometry(8, 17).grid.x == 2 && rope_geometry(8, 17).block.y == 16, "rope h64 (bdx 8) nnz=17: grid 2, block (8, 16)");
  }
  // The tables against the package.
  {
    const std::vector<Planned> plan = plan_all();
    const std::vector<std::string> problems = table_problems(plan);
    for (const std::string& p : problems) expect(false, "tables: " + p);
    expect(problems.empty(), strf("tables: %zu configs of the package, each with its direct instantiation", plan.size()));
    // The checks, on the host models' results, for a few specializations
    // of each kernel (--only TEXT: those whose names contain TEXT).
    static const char* const kModelled[] = {"rmsnorm_v8_f16", "rmsnorm_v1_bf16", "gemma_rmsnorm_v4_bf16",
                                             "fused_add_rmsnorm_v8_bf16", "fused_add_rmsnorm_v1_f16",
                                             "act_and_mul_f16_gelu_v8", "act_and_mul_bf16_silu_v4",
                                             "rope_pos_ids_nointerleave_h64_v8_x8_f16_i32",
                                             "rope_pos_ids_interleave_h128_v8_x16_bf16_i64"};
    for (const Planned& p : plan) {
      if (p.name() == nullptr) continue;
      const bool chosen = g_opt.only.empty()
                              ? std::find_if(std::begin(kModelled), std::end(kModelled), [&](const char* n) {
                                  return std::strcmp(n, p.name()) == 0;
                                }) != std::end(kModelled)
                              : selected(p.name());
      if (chosen) cases_of(p, [&](const Case& c) { model_case(c, expect); });
    }
    for (const NormSpec& s : norm_specs()) {
      for (const NormShape& sh : norm_shapes(s)) {
        if (sh.d % s.vec != 0 || sh.stride_a % s.vec != 0 || sh.stride_b % s.vec != 0) expect(false, strf("%s: shape d=%u breaks VEC_SIZE", s.name, sh.d));
      }
    }
  }
  std::printf("self-test: %d passed, %d failed\n", g_self_passed, g_self_failed);
  return g_self_failed == 0 ? 0 : 1;
}

int run_list() {
  for (const Planned& p : plan_all()) std::printf("%-48s %s\n", p.name() ? p.name() : "(none)", p.config.c_str());
  const std::vector<std::string> problems = table_problems(plan_all());
  for (const std::string& p : problems) std::printf("problem: %s\n", p.c_str());
  return problems.empty() ? 0 : 1;
}

// ---- Command line ---------------------------------------------------------------------------------

[[noreturn]] void usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "%s: %s\n", kProg, why);
  std::fprintf(stderr,
               "usage: %s [--check] [--pdl-bench] [--launch-bench] [OPTIONS]\n"
               "       %s --self-test | --list\n"
               "modes (none given: --check):\n"
               "  --check          every specialization vs. the direct launch (bit for bit) and the CPU reference\n"
               "  --pdl-bench      GPU time of chains of dependent rmsnorm launches, with and without PDL\n"
               "  --launch-bench   host time per launch: kpack's typed launcher vs. the raw driver call\n"
               "  --self-test      no GPU: the CPU references, the launch geometry and the tables\n"
               "  --list           no GPU: the package's configs and their direct instantiations\n"
               "options:\n"
               "  --json FILE      write the results as JSON\n"
               "  --only TEXT      check only specializations whose name contains TEXT\n"
               "  --pdl-rounds N   measured rounds of --pdl-bench (default 7)\n"
               "  --pdl-pairs N    launch pairs per chain (default 200)\n"
               "  --launch-rounds N, --launch-warmup N, --launch-batch N (1..1024)\n"
               "                   rounds (1000), unmeasured rounds (20), launches per timed batch (256)\n"
               "  --timeout S      exit 124 after S seconds (default 300, plus 300 per bench)\n"
               "environment: KPACK_GPU_TEST_SEED=<seed> reproduces a run's inputs\n"
               "exit: 0 ok, 1 failure or error, 2 usage, 77 no CUDA device, 124 timed out\n",
               kProg, kProg);
  std::exit(kExitUsage);
}

int parse_int(const char* flag, const char* text, int lo, int hi) {
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
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach a log before a crash
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto need = [&]() -> const char* {
      if (i + 1 >= argc) usage(strf("%s needs an argument", a.c_str()).c_str());
      return argv[++i];
    };
    if (a == "--check") g_opt.check = true;
    else if (a == "--pdl-bench") g_opt.pdl_bench = true;
    else if (a == "--launch-bench") g_opt.launch_bench = true;
    else if (a == "--self-test") g_opt.self_test = true;
    else if (a == "--list") g_opt.list = true;
    else if (a == "--json") g_opt.json_path = need();
    else if (a == "--only") g_opt.only = need();
    else if (a == "--pdl-rounds") g_opt.pdl_rounds = parse_int("--pdl-rounds", need(), 1, 1000);
    else if (a == "--pdl-pairs") g_opt.pdl_pairs = parse_int("--pdl-pairs", need(), 1, 400);  // 800 launches fit the queue
    else if (a == "--launch-rounds") g_opt.launch_rounds = parse_int("--launch-rounds", need(), 1, 10000000);
    else if (a == "--launch-warmup") g_opt.launch_warmup = parse_int("--launch-warmup", need(), 0, 10000000);
    else if (a == "--launch-batch") g_opt.launch_batch = parse_int("--launch-batch", need(), 1, 1024);
    else if (a == "--timeout") g_opt.timeout_s = parse_int("--timeout", need(), 1, 86400);
    else if (a == "-h" || a == "--help") usage(nullptr);
    else usage(strf("unknown argument '%s'", a.c_str()).c_str());
  }
  if (g_opt.self_test || g_opt.list) {
    if (g_opt.check || g_opt.pdl_bench || g_opt.launch_bench || (g_opt.self_test && g_opt.list)) {
      usage("--self-test and --list run alone");
    }
    if (g_opt.list) return run_list();
    g_run.seed = choose_seed();
    std::printf("%s: seed %" PRIu64 " (KPACK_GPU_TEST_SEED=%" PRIu64 " reproduces the inputs)\n", kProg, g_run.seed,
                g_run.seed);
    return run_self_test();
  }
  if (!g_opt.check && !g_opt.pdl_bench && !g_opt.launch_bench) g_opt.check = true;
  if (g_opt.check) g_run.modes.push_back("check");
  if (g_opt.pdl_bench) g_run.modes.push_back("pdl-bench");
  if (g_opt.launch_bench) g_run.modes.push_back("launch-bench");
  arm_watchdog(g_opt.timeout_s > 0 ? g_opt.timeout_s
                                   : 300 + 300 * (static_cast<int>(g_opt.pdl_bench) + static_cast<int>(g_opt.launch_bench)));

  g_run.seed = choose_seed();
  std::printf("%s: seed %" PRIu64 " (KPACK_GPU_TEST_SEED=%" PRIu64 " reproduces the inputs)\n", kProg, g_run.seed,
              g_run.seed);
  open_device();
  kpack_build_info info;
  const kpack_status bi = fic_build_info(&info);
  if (bi != KPACK_SUCCESS) fatal("fic_build_info: %s", kpack_failure(bi).c_str());
  std::printf("%s: package %s, %zu specializations, kpack %s, %s build; runtime %s\n", kProg, info.package,
              info.num_specializations, info.kpack_version, info.build_mode, kpack_version_string());

  int rc = 0;
  if (g_opt.check) rc |= run_check();
  if (g_opt.pdl_bench) rc |= run_pdl_bench();
  if (g_opt.launch_bench) rc |= run_launch_bench();
  write_json();
  return rc;
}
