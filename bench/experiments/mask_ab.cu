// mask_ab.cu - A/B of attention_mask_fill on ragged batches: where the f32
// ragged case loses against the uniform one (bench/RESULTS.md: 0.88 of the
// copy ceiling against 1.07), and whether starting each warp's 16-byte
// stores on a 128-byte line (ALIGN_LINES) closes it.
//
// Not part of the build: a one-off experiment kept with its results.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o mask_ab bench/experiments/mask_ab.cu
//   ./mask_ab > mask_ab.jsonl
// Every variant's mask is compared bit for bit with the ALIGN_LINES=false
// output of the same shape, so a faster variant is also a correct one.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../templates/attention_mask_fill.cuh"

template <typename T, bool C, int TILE, bool AL>
__global__ void __launch_bounds__(256) mask_kernel(const int32_t* q, const int32_t* kv, const int64_t* off, T* mask,
                                                   int32_t n, int32_t mq, int32_t mkv) {
  attention_mask_fill<T, C, TILE, AL>(q, kv, off, mask, n, mq, mkv);
}

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

struct Rng {  // bench/throughput's, so the ragged shape is the bench's
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t integer(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

struct Shape {
  std::string name;
  std::vector<int32_t> q, kv;
};

// kind 0: the bench's ragged batch; 1: the same with kv rounded up to a
// multiple of 32 (every request then starts on a 128-byte line in f32);
// 2: its 96 prefills only.
Shape ragged(int kind) {
  Shape r{kind == 0 ? "ragged" : kind == 1 ? "ragged_kv_mult32" : "ragged_prefills_only", {}, {}};
  Rng rng{4};
  for (int i = 0; i < 96; ++i) {
    const int32_t q = static_cast<int32_t>(rng.integer(256, 2048));
    r.q.push_back(q);
    r.kv.push_back(q + static_cast<int32_t>(rng.integer(0, 2048)));
  }
  for (int i = 0; i < 160; ++i) {
    r.q.push_back(1);
    r.kv.push_back(static_cast<int32_t>(rng.integer(512, 8192)));
  }
  for (size_t i = r.q.size() - 1; i > 0; --i) {
    const size_t j = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(i)));
    std::swap(r.q[i], r.q[j]);
    std::swap(r.kv[i], r.kv[j]);
  }
  if (kind == 1)
    for (auto& k : r.kv) k = (k + 31) / 32 * 32;
  if (kind == 2) {
    Shape p{r.name, {}, {}};
    for (size_t i = 0; i < r.q.size(); ++i)
      if (r.q[i] > 1) p.q.push_back(r.q[i]), p.kv.push_back(r.kv[i]);
    return p;
  }
  return r;
}

constexpr int kSets = 3;

struct Dev {
  int32_t *q = nullptr, *kv = nullptr;
  int64_t* off = nullptr;
  int64_t total = 0;
  int32_t mq = 0, mkv = 0, n = 0;
};

template <typename T, bool C, int TILE, bool AL>
double run(const Dev& d, void* const* masks, cudaStream_t s, int reps) {
  const int64_t per = std::min<int64_t>(4096, ((int64_t)d.mq * d.mkv + TILE - 1) / TILE * std::min(d.n, 512));
  const dim3 grid(static_cast<unsigned>(per), static_cast<unsigned>(std::min((d.n + 511) / 512, 65535)));
  for (int i = 0; i < kSets; ++i)  // warm up
    mask_kernel<T, C, TILE, AL><<<grid, 256, 0, s>>>(d.q, d.kv, d.off, (T*)masks[i], d.n, d.mq, d.mkv);
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < kSets; ++i)
      mask_kernel<T, C, TILE, AL><<<grid, 256, 0, s>>>(d.q, d.kv, d.off, (T*)masks[i], d.n, d.mq, d.mkv);
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / kSets);
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e3;  // us
}

double copy_us(void* dst, const void* src, size_t bytes, cudaStream_t s, int reps) {
  CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e3;
}

template <typename T>
void one_dtype(const char* dname, const Shape& sh, cudaStream_t s, int reps) {
  Dev d;
  d.n = static_cast<int32_t>(sh.q.size());
  std::vector<int64_t> off(sh.q.size());
  for (size_t i = 0; i < sh.q.size(); ++i) {
    off[i] = d.total;
    d.total += (int64_t)sh.q[i] * sh.kv[i];
    d.mq = std::max(d.mq, sh.q[i]);
    d.mkv = std::max(d.mkv, sh.kv[i]);
  }
  const size_t bytes = (size_t)d.total * sizeof(T);
  CK(cudaMalloc(&d.q, sh.q.size() * 4));
  CK(cudaMalloc(&d.kv, sh.q.size() * 4));
  CK(cudaMalloc(&d.off, sh.q.size() * 8));
  CK(cudaMemcpy(d.q, sh.q.data(), sh.q.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.kv, sh.kv.data(), sh.q.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.off, off.data(), sh.q.size() * 8, cudaMemcpyHostToDevice));
  void* masks[kSets];
  for (auto& m : masks) CK(cudaMalloc(&m, bytes));
  // The copy ceiling: half the mask's bytes read, half written, so that it
  // moves the bytes the fill writes.
  const double ceil_tbps = bytes / copy_us(masks[1], masks[0], bytes / 2, s, reps) / 1e6;
  std::vector<unsigned char> ref(bytes), got(bytes);
  struct V {
    const char* name;
    double (*fn)(const Dev&, void* const*, cudaStream_t, int);
    bool causal;
    bool aligned;
    int tile;
  };
  const V vs[] = {
      {"nocausal_t16384", run<T, false, 16384, false>, false, false, 16384},
      {"nocausal_t16384", run<T, false, 16384, true>, false, true, 16384},
      {"nocausal_t4096", run<T, false, 4096, false>, false, false, 4096},
      {"nocausal_t4096", run<T, false, 4096, true>, false, true, 4096},
      {"causal_t16384", run<T, true, 16384, false>, true, false, 16384},
      {"causal_t16384", run<T, true, 16384, true>, true, true, 16384},
      {"causal_t4096", run<T, true, 4096, false>, true, false, 4096},
      {"causal_t4096", run<T, true, 4096, true>, true, true, 4096},
  };
  for (const V& v : vs) {
    for (auto& m : masks) CK(cudaMemsetAsync(m, 0x5a, bytes, s));  // poison
    const double us = v.fn(d, masks, s, reps);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got.data(), masks[0], bytes, cudaMemcpyDeviceToHost));
    bool same = true;
    if (!v.aligned) {
      ref = got;  // the reference for the aligned run that follows
      // And against the definition, on every element.
      size_t bad = 0;
      for (size_t r = 0; r < sh.q.size(); ++r) {
        const int64_t ql = sh.q[r], kl = sh.kv[r];
        for (int64_t e = 0; e < ql * kl; ++e) {
          const int64_t qq = e / kl, kk = e % kl;
          const bool allowed = !v.causal || kk <= kl - ql + qq;
          const T* p = reinterpret_cast<const T*>(got.data()) + off[r] + e;
          uint32_t bits = 0;
          std::memcpy(&bits, p, sizeof(T));
          const uint32_t want = allowed ? 0u : kpack_mask::Bits<T>::kMasked;
          if (bits != want) ++bad;
        }
      }
      same = bad == 0;
    } else {
      same = std::memcmp(ref.data(), got.data(), bytes) == 0;
    }
    std::printf(
        "{\"shape\": \"%s\", \"dtype\": \"%s\", \"variant\": \"%s\", \"align_lines\": %s, \"bytes\": %zu, \"us\": %.2f, "
        "\"tbps\": %.4f, \"ceiling_tbps\": %.4f, \"ratio\": %.4f, \"correct\": %s}\n",
        sh.name.c_str(), dname, v.name, v.aligned ? "true" : "false", bytes, us, bytes / us / 1e6, ceil_tbps,
        bytes / us / 1e6 / ceil_tbps, same ? "true" : "false");
    std::fflush(stdout);
  }
  for (auto& m : masks) CK(cudaFree(m));
  CK(cudaFree(d.q));
  CK(cudaFree(d.kv));
  CK(cudaFree(d.off));
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  std::vector<Shape> shapes = {{"64 x q=kv=2048", std::vector<int32_t>(64, 2048), std::vector<int32_t>(64, 2048)},
                               ragged(0), ragged(1), ragged(2)};
  for (const Shape& sh : shapes) {
    one_dtype<float>("f32", sh, s, reps);
    one_dtype<__half>("f16", sh, s, reps);
  }
  return 0;
}
