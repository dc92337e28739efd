// cuda_gemm_check.cu - standalone device check of templates/gemm_sm90.cuh:
// correctness against an fp32 cuBLAS reference and speed against cuBLAS
// (cublasGemmEx, bf16 in/out, fp32 compute) for the tile configs of
// manifests/gemm_cuda.yaml (and a few candidates that the manifest left out).
//
// Build (no GPU needed):
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Itemplates \
//        bench/compute/cuda_gemm_check.cu -o cuda_gemm_check -lcublas
// Run:
//   cuda_gemm_check --list            config names, one a line
//   cuda_gemm_check --check [CFGS]    correctness of every dtype and epilogue
//                                     of the comma-separated configs (default: all)
//   cuda_gemm_check --bench [CFGS]    timings (bf16, no bias, no activation)
//
// Correctness: A, B, bias uniform in [-1, 1) rounded to T; the reference is
// cublasSgemm (pedantic fp32, no TF32) of the same rounded values, then bias
// and the activation in fp32; an element passes when |c - ref| <= rtol |ref|
// + atol (rtol 2^-7 for bf16, 2^-10 for f16: one rounding of the output and
// some slack; atol 1e-3 + 1e-4 sqrt(K): the fp32 sums in another order).
// C is pre-filled with NaN and has two guard rows after row M-1 that must
// stay untouched, so unwritten elements and stores outside C both fail.
//
// Timing: cudaEvent around each launch, median of 20 after 3 warm-ups; the
// tensor maps are encoded once per shape (outside the timing), and L2 is
// flushed (a 256 MiB memset) before every timed launch of both kernels.
// cuBLAS is timed before and after the configs of a shape and the faster
// median counts.  "auto" marks the config that the manifest's rules pick
// (auto_pick below mirrors them); the last line is the geometric mean of
// the ratios over the 20 engine shapes (Llama-3-8B projections, M = 1, 16,
// 32, 64, 4096), for the rules and for the best config per shape.
//
// Device run: bench/results/2026-11-26-cuda-gemm-check/run.sh.
#include <cublas_v2.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm_sm90.cuh"

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)
#define CB(x)                                                                   \
  do {                                                                          \
    cublasStatus_t s_ = (x);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                          \
      fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #x, \
              static_cast<int>(s_));                                            \
      exit(2);                                                                  \
    }                                                                           \
  } while (0)

static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;
static int g_num_sms = 0;

// The tensor map the kpack launcher makes for `{type: const tensordesc,
// block: [ROWS, BK], swizzle: 128B}`: shape [rows, K], strides [K, 1].
static CUtensorMap make_map(const void* base, bool bf16, int rows, int K, int box_rows, int box_k) {
  CUtensorMap m;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(box_k), static_cast<cuuint32_t>(box_rows)};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = g_encode(&m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                        2, const_cast<void*>(base), dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed: %d (rows %d K %d box %d x %d)\n", (int)r, rows,
            K, box_rows, box_k);
    exit(2);
  }
  return m;
}

// One specialization: the launch the manifest describes.
struct Spec {
  std::string cfg;  // tile config name
  int BM, BN, STAGES, SPLITK, MCAST;
  bool bf16, has_bias;
  int act;
  size_t smem;
  int threads;
  int max_clusters;  // cudaOccupancyMaxActiveClusters
  std::function<cudaError_t(const CUtensorMap&, const CUtensorMap&, void*, const void*, int, int,
                            int, cudaStream_t)>
      launch;
};
static std::vector<Spec> g_specs;

template <typename T, int BM, int BN, int STAGES, bool HAS_BIAS, int ACT, int SPLITK, int MCAST>
static void add_spec(const char* cfg) {
  constexpr int BK = 64;
  Spec s;
  s.cfg = cfg;
  s.BM = BM;
  s.BN = BN;
  s.STAGES = STAGES;
  s.SPLITK = SPLITK;
  s.MCAST = MCAST;
  s.bf16 = std::is_same<T, __nv_bfloat16>::value;
  s.has_bias = HAS_BIAS;
  s.act = ACT;
  // manifests/gemm_cuda.yaml, launch.shared_mem and launch.block
  s.smem = 1024 + static_cast<size_t>(STAGES) * (BM + BN) * BK * sizeof(T) +
           (SPLITK > 1 ? static_cast<size_t>(BM) * BN * 4 : 0);
  s.threads = 128 * (1 + (BM >= 128 ? 2 : 1));
  auto kernel = kpack_gemm::gemm_sm90<T, BM, BN, BK, STAGES, HAS_BIAS, ACT, SPLITK, MCAST>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(s.smem)));
  const size_t smem = s.smem;
  const int threads = s.threads;
  {
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3(SPLITK * MCAST * 64);
    lc.blockDim = dim3(threads);
    lc.dynamicSmemBytes = smem;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = SPLITK * MCAST;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    lc.attrs = at;
    lc.numAttrs = 1;
    s.max_clusters = -1;
    if (cudaOccupancyMaxActiveClusters(&s.max_clusters, kernel, &lc) != cudaSuccess) {
      s.max_clusters = -1;
      cudaGetLastError();
    }
  }
  s.launch = [kernel, smem, threads](const CUtensorMap& a, const CUtensorMap& b, void* c,
                                     const void* bias, int M, int N, int K,
                                     cudaStream_t st) -> cudaError_t {
    // manifests/gemm_cuda.yaml, launch.grid
    const long long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const long long grid =
        SPLITK > 1 ? tiles_m * tiles_n * SPLITK
                   : std::min<long long>((tiles_m + MCAST - 1) / MCAST * tiles_n, g_num_sms / MCAST) * MCAST;
    if (grid == 0) return cudaSuccess;
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3(static_cast<unsigned>(grid));
    lc.blockDim = dim3(threads);
    lc.dynamicSmemBytes = smem;
    lc.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = SPLITK * MCAST;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    lc.attrs = at;
    lc.numAttrs = 1;
    return cudaLaunchKernelEx(&lc, kernel, a, b, static_cast<T*>(c), static_cast<const T*>(bias),
                              M, N, K);
  };
  g_specs.push_back(s);
}

// Every dtype and epilogue of the manifest for one tile config:
// (HAS_BIAS, ACT) in {(no, none), (yes, none), (no, SiLU), (yes, GELU)}.
template <int BM, int BN, int STAGES, int SPLITK, int MCAST>
static void add_config(const char* name) {
  add_spec<__nv_bfloat16, BM, BN, STAGES, false, 0, SPLITK, MCAST>(name);
  add_spec<__nv_bfloat16, BM, BN, STAGES, true, 0, SPLITK, MCAST>(name);
  add_spec<__nv_bfloat16, BM, BN, STAGES, false, 1, SPLITK, MCAST>(name);
  add_spec<__nv_bfloat16, BM, BN, STAGES, true, 2, SPLITK, MCAST>(name);
  add_spec<__half, BM, BN, STAGES, false, 0, SPLITK, MCAST>(name);
  add_spec<__half, BM, BN, STAGES, true, 0, SPLITK, MCAST>(name);
  add_spec<__half, BM, BN, STAGES, false, 1, SPLITK, MCAST>(name);
  add_spec<__half, BM, BN, STAGES, true, 2, SPLITK, MCAST>(name);
}

// name: BMxBN_sSTAGES_kSPLITK_mMCAST.  The manifest builds 128x256_s4_k1_m2,
// 64x128_s8_k1_m1 and 64x128_s8_k2_m1; the others are candidates it left
// out (bench/results/2026-11-26-cuda-gemm-check/).
#define CONFIGS(X)       \
  X(128, 256, 4, 1, 2)   \
  X(128, 256, 4, 1, 1)   \
  X(64, 128, 8, 1, 1)    \
  X(64, 128, 8, 2, 1)    \
  X(64, 96, 10, 2, 1)    \
  X(64, 64, 12, 2, 1)    \
  X(64, 256, 5, 1, 1)

#define ADD_CONFIG(bm, bn, st, sk, mc) \
  add_config<bm, bn, st, sk, mc>(#bm "x" #bn "_s" #st "_k" #sk "_m" #mc);

// ---------------------------------------------------------------------------
__device__ __forceinline__ float hash_uniform(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return static_cast<float>(x & 0xFFFFFF) / 8388608.0f - 1.0f;  // [-1, 1)
}

template <typename T>
__global__ void fill_random(T* out, float* out_f32, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const T v = static_cast<T>(hash_uniform(i, seed));
    out[i] = v;
    if (out_f32) out_f32[i] = static_cast<float>(v);
  }
}

template <typename T>
__device__ float to_f(T v) {
  return static_cast<float>(v);
}

__device__ float ref_act(float x, int act) {
  if (act == 1) return x / (1.0f + expf(-x));
  if (act == 2) return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  return x;
}

struct CmpOut {
  unsigned long long bad;
  unsigned int max_err_bits;
  unsigned int max_rel_bits;
  unsigned long long guard_bad;
};

template <typename T>
__global__ void compare(const T* c, const float* ref, const T* bias, int M, int N, int act,
                        float rtol, float atol, CmpOut* out) {
  const size_t total = static_cast<size_t>(M + 2) * N;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const int row = static_cast<int>(i / N);
    const int col = static_cast<int>(i % N);
    if (row >= M) {
      unsigned short bits;
      memcpy(&bits, c + i, 2);
      if (bits != 0xFFFFu) atomicAdd(&out->guard_bad, 1ull);
      continue;
    }
    float r = ref[i] + (bias ? to_f(bias[col]) : 0.0f);
    r = ref_act(r, act);
    const float v = to_f(c[i]);
    const float err = fabsf(v - r);
    if (!(err <= rtol * fabsf(r) + atol)) atomicAdd(&out->bad, 1ull);
    const float e = isnan(err) ? 1e30f : err;
    atomicMax(&out->max_err_bits, __float_as_uint(e));
    atomicMax(&out->max_rel_bits, __float_as_uint(e / fmaxf(fabsf(r), 1.0f)));
  }
}

// `only`: empty (every config) or a comma-separated list of config names.
static bool selected(const std::string& only, const std::string& cfg) {
  if (only.empty()) return true;
  return ("," + only + ",").find("," + cfg + ",") != std::string::npos;
}

static int blocks_for(size_t n) { return static_cast<int>(std::min<size_t>((n + 255) / 256, 8192)); }

// ---------------------------------------------------------------------------
static int run_check(const std::string& only, cublasHandle_t h) {
  struct Shape {
    int M, N, K;
  };
  const std::vector<Shape> shapes = {{1, 4000, 4000},   {7, 4000, 4000}, {33, 4000, 4000},
                                     {4097, 4000, 4000}, {33, 257, 72},   {130, 264, 8},
                                     {300, 520, 136}};
  int failures = 0, checked = 0;
  for (const Shape& sh : shapes) {
    const int M = sh.M, N = sh.N, K = sh.K;
    for (int dt = 0; dt < 2; ++dt) {
      const bool bf16 = dt == 0;
      bool any = false;
      for (const Spec& s : g_specs)
        if (s.bf16 == bf16 && selected(only, s.cfg)) any = true;
      if (!any) continue;
      void *A, *B, *bias, *C;
      float *Af, *Bf, *ref;
      CK(cudaMalloc(&A, (size_t)M * K * 2));
      CK(cudaMalloc(&B, (size_t)N * K * 2));
      CK(cudaMalloc(&bias, (size_t)N * 2));
      CK(cudaMalloc(&C, (size_t)(M + 2) * N * 2));
      CK(cudaMalloc(&Af, (size_t)M * K * 4));
      CK(cudaMalloc(&Bf, (size_t)N * K * 4));
      CK(cudaMalloc(&ref, (size_t)M * N * 4));
      if (bf16) {
        fill_random<<<blocks_for((size_t)M * K), 256>>>((__nv_bfloat16*)A, Af, (size_t)M * K, 1);
        fill_random<<<blocks_for((size_t)N * K), 256>>>((__nv_bfloat16*)B, Bf, (size_t)N * K, 2);
        fill_random<<<blocks_for(N), 256>>>((__nv_bfloat16*)bias, (float*)nullptr, (size_t)N, 3);
      } else {
        fill_random<<<blocks_for((size_t)M * K), 256>>>((__half*)A, Af, (size_t)M * K, 1);
        fill_random<<<blocks_for((size_t)N * K), 256>>>((__half*)B, Bf, (size_t)N * K, 2);
        fill_random<<<blocks_for(N), 256>>>((__half*)bias, (float*)nullptr, (size_t)N, 3);
      }
      CK(cudaGetLastError());
      const float one = 1.0f, zero = 0.0f;
      // ref[M, N] = Af[M, K] @ Bf[N, K]^T (column-major: ref^T = Bf^T^T Af^T)
      CB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, Bf, K, Af, K, &zero, ref, N));
      CmpOut* dout;
      CK(cudaMalloc(&dout, sizeof(CmpOut)));
      for (const Spec& s : g_specs) {
        if (s.bf16 != bf16 || !selected(only, s.cfg)) continue;
        const CUtensorMap ma = make_map(A, bf16, M, K, s.BM, 64);
        const CUtensorMap mb = make_map(B, bf16, N, K, s.BN / s.MCAST, 64);
        CK(cudaMemset(C, 0xFF, (size_t)(M + 2) * N * 2));
        CK(cudaMemset(dout, 0, sizeof(CmpOut)));
        CK(s.launch(ma, mb, C, s.has_bias ? bias : nullptr, M, N, K, 0));
        CK(cudaGetLastError());
        const float rtol = bf16 ? 1.0f / 128 : 1.0f / 1024;
        const float atol = 1e-3f + 1e-4f * std::sqrt((float)K);
        const size_t tot = (size_t)(M + 2) * N;
        if (bf16)
          compare<<<blocks_for(tot), 256>>>((const __nv_bfloat16*)C, ref,
                                            s.has_bias ? (const __nv_bfloat16*)bias : nullptr, M,
                                            N, s.act, rtol, atol, dout);
        else
          compare<<<blocks_for(tot), 256>>>((const __half*)C, ref,
                                            s.has_bias ? (const __half*)bias : nullptr, M, N, s.act,
                                            rtol, atol, dout);
        CK(cudaGetLastError());
        CmpOut o;
        CK(cudaMemcpy(&o, dout, sizeof(o), cudaMemcpyDeviceToHost));
        float me, mr;
        memcpy(&me, &o.max_err_bits, 4);
        memcpy(&mr, &o.max_rel_bits, 4);
        const bool ok = o.bad == 0 && o.guard_bad == 0;
        ++checked;
        if (!ok) ++failures;
        printf("check %-17s %s bias=%d act=%d M=%-5d N=%-5d K=%-5d %s max_abs_err=%.3g max_rel=%.3g%s\n",
               s.cfg.c_str(), bf16 ? "bf16" : "f16 ", s.has_bias, s.act, M, N, K,
               ok ? "OK  " : "FAIL", me, mr,
               ok ? "" : (" bad=" + std::to_string(o.bad) + " guard_bad=" + std::to_string(o.guard_bad)).c_str());
      }
      CK(cudaFree(dout));
      CK(cudaFree(A));
      CK(cudaFree(B));
      CK(cudaFree(bias));
      CK(cudaFree(C));
      CK(cudaFree(Af));
      CK(cudaFree(Bf));
      CK(cudaFree(ref));
    }
  }
  printf("check summary %s: %d of %d specialization-shape pairs passed\n",
         only.empty() ? "all" : only.c_str(), checked - failures, checked);
  return failures ? 1 : 0;
}

// The auto rules of manifests/gemm_cuda.yaml (BM, BN, STAGES, SPLITK).
static std::string auto_pick(int M, int N, int K) {
  (void)K;
  if (M > 256) return "128x256_s4_k1_m2";
  const long long ctas = (long long)((M + 63) / 64) * ((N + 127) / 128) * 2;
  return ctas <= g_num_sms ? "64x128_s8_k2_m1" : "64x128_s8_k1_m1";
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static int run_bench(const std::string& only, cublasHandle_t h) {
  struct Shape {
    int M, N, K;
    bool engine;
  };
  std::vector<Shape> shapes = {{8192, 8192, 8192, false}};
  for (int M : {128, 256, 512, 1024}) shapes.push_back({M, 4096, 4096, false});
  const int NK[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  for (auto& nk : NK)
    for (int M : {1, 16, 32, 64, 4096}) shapes.push_back({M, nk[0], nk[1], true});
  void* flush;
  const size_t flush_bytes = 256ull << 20;
  CK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int warm = 3, reps = 20;
  for (const Spec& s : g_specs)
    if (s.bf16 && !s.has_bias && s.act == 0 && selected(only, s.cfg))
      printf("config %-17s threads %d smem %zu max_active_clusters %d (cluster %d)\n", s.cfg.c_str(),
             s.threads, s.smem, s.max_clusters, s.SPLITK * s.MCAST);
  double log_auto = 0, log_best = 0;
  int n_engine = 0;
  std::vector<std::string> summary;
  for (const Shape& sh : shapes) {
    const int M = sh.M, N = sh.N, K = sh.K;
    const double flop = 2.0 * M * N * K;
    void *A, *B, *C;
    CK(cudaMalloc(&A, (size_t)M * K * 2));
    CK(cudaMalloc(&B, (size_t)N * K * 2));
    CK(cudaMalloc(&C, (size_t)M * N * 2));
    fill_random<<<blocks_for((size_t)M * K), 256>>>((__nv_bfloat16*)A, (float*)nullptr, (size_t)M * K, 1);
    fill_random<<<blocks_for((size_t)N * K), 256>>>((__nv_bfloat16*)B, (float*)nullptr, (size_t)N * K, 2);
    CK(cudaDeviceSynchronize());
    auto time_it = [&](const std::function<void()>& f) {
      for (int i = 0; i < warm; ++i) f();
      std::vector<float> t;
      for (int i = 0; i < reps; ++i) {
        CK(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, 0));
        CK(cudaEventRecord(e0, 0));
        f();
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      CK(cudaGetLastError());
      return median(t);
    };
    const float alpha = 1.0f, beta = 0.0f;
    auto cublas = [&] {
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16BF, K, A,
                      CUDA_R_16BF, K, &beta, C, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    };
    // cuBLAS before and after the configs; the faster median counts.
    const float t_cublas0 = time_it(cublas);
    std::string best;
    float t_best = 1e30f, t_auto = -1;
    const std::string pick = auto_pick(M, N, K);
    std::vector<std::pair<std::string, float>> results;
    for (const Spec& s : g_specs) {
      if (!s.bf16 || s.has_bias || s.act != 0 || !selected(only, s.cfg)) continue;
      const CUtensorMap ma = make_map(A, true, M, K, s.BM, 64);
      const CUtensorMap mb = make_map(B, true, N, K, s.BN / s.MCAST, 64);
      const float t = time_it([&] { CK(s.launch(ma, mb, C, nullptr, M, N, K, 0)); });
      results.push_back({s.cfg, t});
      if (t < t_best) {
        t_best = t;
        best = s.cfg;
      }
      if (s.cfg == pick) t_auto = t;
    }
    const float t_cublas1 = time_it(cublas);
    const float t_cublas = std::min(t_cublas0, t_cublas1);
    const double tf_cublas = flop / (t_cublas * 1e-3) / 1e12;
    printf("bench M=%-5d N=%-5d K=%-5d %-17s %9.1f us %7.1f TFLOP/s (before %.1f us, after %.1f us)\n",
           M, N, K, "cublas", t_cublas * 1e3, tf_cublas, t_cublas0 * 1e3, t_cublas1 * 1e3);
    for (auto& r : results)
      printf("bench M=%-5d N=%-5d K=%-5d %-17s %9.1f us %7.1f TFLOP/s %5.2fx cublas%s\n", M, N, K,
             r.first.c_str(), r.second * 1e3, flop / (r.second * 1e-3) / 1e12, t_cublas / r.second,
             r.first == pick ? " (auto)" : "");
    char line[320];
    snprintf(line, sizeof line,
             "best  M=%-5d N=%-5d K=%-5d %-17s %6.1f TFLOP/s %5.2fx | auto %-17s %5.2fx | cublas %6.1f TFLOP/s",
             M, N, K, best.c_str(), flop / (t_best * 1e-3) / 1e12, t_cublas / t_best, pick.c_str(),
             t_auto > 0 ? t_cublas / t_auto : 0.0, tf_cublas);
    summary.push_back(line);
    if (sh.engine) {
      ++n_engine;
      log_best += std::log(t_cublas / t_best);
      if (t_auto > 0) log_auto += std::log(t_cublas / t_auto);
    }
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
  }
  for (auto& l : summary) printf("%s\n", l.c_str());
  if (n_engine)
    printf("geomean over %d engine shapes: best %.3fx cublas, auto %.3fx cublas\n", n_engine,
           std::exp(log_best / n_engine), std::exp(log_auto / n_engine));
  CK(cudaFree(flush));
  return 0;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "--list";
  std::string only = argc > 2 ? argv[2] : "";
  if (mode != "--list") {
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    if (!fn || q != cudaDriverEntryPointSuccess) {
      fprintf(stderr, "no cuTensorMapEncodeTiled\n");
      return 2;
    }
    g_encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    CK(cudaDeviceGetAttribute(&g_num_sms, cudaDevAttrMultiProcessorCount, 0));
  }
  if (mode == "--list") {
    // names only: no device needed
    const char* names[] = {
#define NAME(bm, bn, st, sk, mc) #bm "x" #bn "_s" #st "_k" #sk "_m" #mc,
        CONFIGS(NAME)
#undef NAME
    };
    for (const char* n : names) printf("%s\n", n);
    return 0;
  }
  CONFIGS(ADD_CONFIG)
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  int rc = 0;
  if (mode == "--check") {
    rc = run_check(only, h);
  } else if (mode == "--bench") {
    CB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    rc = run_bench(only, h);
  } else {
    fprintf(stderr, "usage: %s --list | --check [CFG] | --bench [CFG]\n", argv[0]);
    rc = 2;
  }
  CB(cublasDestroy(h));
  return rc;
}
