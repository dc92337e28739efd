// On a real sm_90+ GPU: the tma package (tests/compiler/manifests/tma)
// through the kpack runtime and the real driver:
//   - Triton host tensor descriptors (bf16, f32) with and without clusters
//     (num_ctas 1 and 2), on shapes that are not multiples of the tile and
//     on a strided view: dst = src + 1 exactly, nothing written outside;
//   - a CUDA kernel that loads through a host descriptor (cp.async.bulk.tensor);
//   - Triton's global scratch (a device-side descriptor): the runtime's
//     workspace of (device, stream), its size from kpack_workspace_usage,
//     and a caller's workspace, too small then big enough;
//   - stream capture: a launch that would grow the workspace is refused, a
//     reserved one captures and its graph replays, also after a growth;
//   - a misaligned base, a stride TMA cannot take: the statuses, nothing
//     launched;
//   - the host cost of a launch with two descriptors, the map cache on and
//     off (printed; a benchmark, not a check).
// Every output is poisoned before its launch and compared element by
// element with the CPU on fresh random input.  Exit 77 without an sm_90+ GPU.
#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtma.h"

extern "C" void kpack_set_tensor_map_cache_for_testing(int enabled);

namespace {

int g_passed = 0, g_failed = 0;

void report(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  (ok ? g_passed : g_failed)++;
}

uint16_t ToBf16(float f) {  // round to nearest even, as the GPU does
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float FromBf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::mt19937 g_rng(std::random_device{}());

// A rows x cols tensor inside a rows x pitch allocation of `bytes`-sized
// elements (pitch >= cols), random in [-100, 100), on the device; the host
// copy in `host`.
template <typename T>
T* Upload(std::vector<T>& host, int64_t rows, int64_t pitch, T (*make)(float)) {
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  host.resize(static_cast<size_t>(rows * pitch));
  for (T& v : host) v = make(dist(g_rng));
  T* d = nullptr;
  cudaMalloc(&d, host.size() * sizeof(T));
  cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

template <typename T>
std::vector<T> Download(const T* d, size_t n) {
  std::vector<T> out(n);
  cudaMemcpy(out.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

// dst (rows x pitch, poisoned with 0xff) must be src + 1 inside rows x cols
// and untouched elsewhere, except that a TMA store writes each row up to
// its next 16-byte boundary (zero-filled columns past cols: what the
// hardware does, and Triton's JIT alike).
template <typename T>
bool CheckPlusOne(const std::vector<T>& src, const std::vector<T>& dst, int64_t rows, int64_t cols, int64_t pitch,
                  T (*plus_one)(T), bool store_pads, std::string* why) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < pitch; ++c) {
      const T got = dst[static_cast<size_t>(r * pitch + c)];
      const T want = c < cols ? plus_one(src[static_cast<size_t>(r * pitch + c)]) : T{};
      const bool poisoned = [&] {
        unsigned char bytes[sizeof(T)];
        std::memcpy(bytes, &got, sizeof(T));
        for (unsigned char b : bytes)
          if (b != 0xff) return false;
        return true;
      }();
      const int64_t row_end = (cols * static_cast<int64_t>(sizeof(T)) + 15) / 16 * 16 / static_cast<int64_t>(sizeof(T));
      if (c >= cols && c < row_end && store_pads) continue;
      if (c < cols ? std::memcmp(&got, &want, sizeof(T)) != 0 : !poisoned) {
        *why = "first difference at [" + std::to_string(r) + ", " + std::to_string(c) + "]";
        return false;
      }
    }
  return true;
}

uint16_t MakeBf16(float f) { return ToBf16(f); }
uint16_t Bf16PlusOne(uint16_t x) { return ToBf16(FromBf16(x) + 1.0f); }
float MakeF32(float f) { return f; }
float F32PlusOne(float x) { return x + 1.0f; }

// store_pads: dst is written by a TMA store (Triton's copies), not by
// ordinary stores (the CUDA kernel's).
template <typename T, typename Launch>
void CopyCase(const char* label, int64_t rows, int64_t cols, int64_t pitch, T (*make)(float), T (*plus_one)(T),
              bool store_pads, Launch launch) {
  std::vector<T> src;
  T* d_src = Upload(src, rows, pitch, make);
  T* d_dst = nullptr;
  cudaMalloc(&d_dst, src.size() * sizeof(T));
  cudaMemset(d_dst, 0xff, src.size() * sizeof(T));
  const int64_t shape[2] = {rows, cols}, strides[2] = {pitch, 1};
  const kpack_status st = launch(d_src, d_dst, shape, strides);
  cudaError_t e = cudaDeviceSynchronize();
  std::string why;
  const bool ok = st == KPACK_SUCCESS && e == cudaSuccess &&
                  CheckPlusOne(src, Download(d_dst, src.size()), rows, cols, pitch, plus_one, store_pads, &why);
  report(ok, std::string(label) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " (row pitch " +
                 std::to_string(pitch) + ")" + (st ? std::string(": ") + kpack_last_error_detail() : "") +
                 (e ? std::string(": ") + cudaGetErrorString(e) : "") + (why.empty() ? "" : ": " + why));
  cudaFree(d_src);
  cudaFree(d_dst);
}

void TritonCopies() {
  for (int ctas : {1, 2})
    for (const std::array<int64_t, 3>& shape : {std::array<int64_t, 3>{100, 300, 320}, {64, 128, 128}, {1, 8, 8}}) {
      const auto [rows, cols, pitch] = shape;
      std::string label = "Triton bf16 copy, num_ctas " + std::to_string(ctas) + ",";
      CopyCase<uint16_t>(label.c_str(), rows, cols, pitch, MakeBf16, Bf16PlusOne, true,
                         [&](uint16_t* s, uint16_t* d, const int64_t* shape, const int64_t* strides) {
                           return tma_copy_triton(nullptr, KPACK_DTYPE_BF16, 64, 128, 1, 4, ctas, s, shape, strides,
                                                   d, shape, strides, (int32_t)shape[0], (int32_t)shape[1]);
                         });
      label = "Triton f32 copy, num_ctas " + std::to_string(ctas) + ",";
      CopyCase<float>(label.c_str(), rows, cols, pitch, MakeF32, F32PlusOne, true,
                      [&](float* s, float* d, const int64_t* shape, const int64_t* strides) {
                        return tma_copy_triton(nullptr, KPACK_DTYPE_F32, 64, 128, 1, 4, ctas, s, shape, strides, d,
                                                shape, strides, (int32_t)shape[0], (int32_t)shape[1]);
                      });
    }
  // The CUDA kernel writes dst dense (row stride N), so the tensor is too.
  CopyCase<float>("CUDA f32 copy through a host descriptor,", 100, 304, 304, MakeF32, F32PlusOne, false,
                  [&](float* s, float* d, const int64_t* shape, const int64_t* strides) {
                    return tma_copy_cuda_f32_m32_n64(nullptr, s, shape, strides, d, (int32_t)shape[0],
                                                      (int32_t)shape[1]);
                  });
}

// x += 1 through Triton's device-side descriptor, which needs 128 bytes of
// global scratch per program.
void Scratch() {
  const int64_t rows = 130, cols = 200, pitch = 208;
  std::vector<uint16_t> x;
  uint16_t* d_x = Upload<uint16_t>(x, rows, pitch, [](float f) { return static_cast<uint16_t>(0x3c00 + (static_cast<int>(f) & 0xff)); });
  uint64_t before_bytes = 0, before_count = 0, after_bytes = 0, after_count = 0;
  kpack_workspace_usage(&before_bytes, &before_count);
  kpack_status st = tma_scratch_triton_f16_m64_n64(nullptr, reinterpret_cast<kpack_f16*>(d_x), rows, cols, pitch);
  cudaError_t e = cudaDeviceSynchronize();
  kpack_workspace_usage(&after_bytes, &after_count);
  std::vector<uint16_t> got = Download(d_x, x.size());
  bool ok = st == KPACK_SUCCESS && e == cudaSuccess;
  for (int64_t r = 0; ok && r < rows; ++r)
    for (int64_t c = 0; ok && c < pitch; ++c) {
      const size_t i = static_cast<size_t>(r * pitch + c);
      // Inputs are f16 values from 1 to 1.25 (0x3c00 + 0..255); x + 1 is
      // rounded to f16 once, so it is within one ulp of 2^-9.
      uint16_t h = x[i];
      float v = std::ldexp(1.0f + (h & 0x3ff) / 1024.0f, ((h >> 10) & 0x1f) - 15);
      uint16_t g = got[i];
      float w = std::ldexp(1.0f + (g & 0x3ff) / 1024.0f, ((g >> 10) & 0x1f) - 15);
      ok = c < cols ? std::fabs(w - (v + 1.0f)) <= 1e-3f * (v + 1.0f) : g == h;
    }
  report(ok, "Triton global scratch: x += 1 through a device-side descriptor" +
                 (st ? std::string(": ") + kpack_last_error_detail() : ""));
  std::printf("INFO runtime workspaces: %llu bytes in %llu workspaces after the first scratch launch (was %llu in %llu); "
              "the launch needs 12 CTAs x 128 bytes\n",
              (unsigned long long)after_bytes, (unsigned long long)after_count, (unsigned long long)before_bytes,
              (unsigned long long)before_count);
  report(after_count == before_count + 1 && after_bytes >= before_bytes + 3 * 4 * 128,
         "the runtime allocated one workspace for (device, stream)");
  // A caller's workspace on another stream: too small, then big enough.
  cudaStream_t s;
  cudaStreamCreate(&s);
  void* mine = nullptr;
  cudaMalloc(&mine, 1 << 20);
  kpack_workspace_set(s, mine, 64);
  st = tma_scratch_triton_f16_m64_n64(s, reinterpret_cast<kpack_f16*>(d_x), rows, cols, pitch);
  report(st == KPACK_ERROR_WORKSPACE_TOO_SMALL, std::string("a caller workspace of 64 bytes is too small: ") +
                                                    kpack_status_name(st) + ": " + kpack_last_error_detail());
  kpack_workspace_set(s, mine, 1 << 20);
  st = tma_scratch_triton_f16_m64_n64(s, reinterpret_cast<kpack_f16*>(d_x), rows, cols, pitch);
  e = cudaStreamSynchronize(s);
  uint64_t bytes = 0, count = 0;
  kpack_workspace_usage(&bytes, &count);
  report(st == KPACK_SUCCESS && e == cudaSuccess && count == after_count,
         "a caller workspace of 1 MiB runs the launch, and the runtime allocates none");
  kpack_workspace_set(s, nullptr, 0);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  cudaFree(mine);
  cudaFree(d_x);
}

// f16 bits as a float, for the scratch kernel's checks.
float F16(uint16_t h) { return std::ldexp(1.0f + (h & 0x3ff) / 1024.0f, ((h >> 10) & 0x1f) - 15); }

// Whether x (rows x pitch, f16 in 1..1.25) is its original plus `added`
// inside rows x cols (each add rounded once to f16) and untouched outside.
bool AddedEverywhere(const std::vector<uint16_t>& original, const std::vector<uint16_t>& now, int64_t rows,
                     int64_t cols, int64_t pitch, float added) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < pitch; ++c) {
      const size_t i = static_cast<size_t>(r * pitch + c);
      if (c >= cols ? now[i] != original[i] : std::fabs(F16(now[i]) - (F16(original[i]) + added)) > 4e-3f * (1 + added))
        return false;
    }
  return true;
}

// Under stream capture with the real driver: a launch whose workspace is too
// small is refused (it cannot grow in a graph); after kpack_workspace_reserve
// the launch captures, and the graph replays; a growth after the capture
// keeps the buffer the graph uses, so the graph still replays right.
void Capture() {
  const int64_t rows = 130, cols = 200, pitch = 208;
  std::vector<uint16_t> x;
  uint16_t* d_x = Upload<uint16_t>(x, rows, pitch, [](float f) { return static_cast<uint16_t>(0x3c00 + (static_cast<int>(f) & 0xff)); });
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t graph = nullptr;
  // No workspace yet: refused inside the capture, nothing captured.
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  kpack_status st = tma_scratch_triton_f16_m64_n64(s, reinterpret_cast<kpack_f16*>(d_x), rows, cols, pitch);
  const std::string refused = kpack_last_error_detail();
  cudaStreamEndCapture(s, &graph);
  report(st == KPACK_ERROR_WORKSPACE_TOO_SMALL && refused.find("kpack_workspace_reserve(stream, ") != std::string::npos,
         "a launch that would grow the workspace inside a capture is refused: " + refused);
  if (graph) cudaGraphDestroy(graph);
  graph = nullptr;
  // Reserved first: the launch captures and the graph replays twice.
  kpack_status reserved = kpack_workspace_reserve(s, 1536);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  st = tma_scratch_triton_f16_m64_n64(s, reinterpret_cast<kpack_f16*>(d_x), rows, cols, pitch);
  cudaError_t e = cudaStreamEndCapture(s, &graph);
  cudaGraphExec_t exec = nullptr;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  for (int i = 0; i < 2 && e == cudaSuccess; ++i) e = cudaGraphLaunch(exec, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  report(reserved == KPACK_SUCCESS && st == KPACK_SUCCESS && e == cudaSuccess &&
             AddedEverywhere(x, Download(d_x, x.size()), rows, cols, pitch, 2.0f),
         std::string("after kpack_workspace_reserve a scratch launch captures, and its graph replays (x + 2)") +
             (e ? std::string(": ") + cudaGetErrorString(e) : ""));
  // A growth after the capture keeps the graph's buffer: a third replay.
  kpack_status grown = kpack_workspace_reserve(s, 8 << 20);
  if (e == cudaSuccess) e = cudaGraphLaunch(exec, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  uint64_t bytes = 0, count = 0;
  kpack_workspace_usage(&bytes, &count);
  report(grown == KPACK_SUCCESS && e == cudaSuccess && AddedEverywhere(x, Download(d_x, x.size()), rows, cols, pitch, 3.0f),
         "the graph replays after the workspace grew (x + 3); runtime workspaces hold " + std::to_string(bytes) +
             " bytes");
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  kpack_workspace_release(s);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  cudaFree(d_x);
}

void BadInput() {
  float* d = nullptr;
  cudaMalloc(&d, 1 << 20);
  const int64_t shape[2] = {64, 128}, strides[2] = {128, 1}, odd[2] = {130, 1};
  kpack_status st = tma_copy_triton_f32_m64_n128_add_one_w4_ctas1(nullptr, d + 1, shape, strides, d, shape, strides, 64, 128);
  report(st == KPACK_ERROR_INVALID_ARGUMENT, std::string("a base 4 bytes off 16-byte alignment: ") +
                                                 kpack_status_name(st) + ": " + kpack_last_error_detail());
  st = tma_copy_triton_f32_m64_n128_add_one_w4_ctas1(nullptr, d, shape, odd, d, shape, strides, 64, 128);
  report(st == KPACK_ERROR_INVALID_ARGUMENT, std::string("a row stride of 520 bytes: ") + kpack_status_name(st) + ": " +
                                                 kpack_last_error_detail());
  cudaFree(d);
}

// Host time of a launch with two descriptors (the kernel is tiny and the
// grid one program, so the launch path dominates), map cache on and off.
void HostCost() {
  float *s = nullptr, *d = nullptr;
  cudaMalloc(&s, 64 * 128 * 4);
  cudaMalloc(&d, 64 * 128 * 4);
  const int64_t shape[2] = {64, 128}, strides[2] = {128, 1};
  for (int cached : {1, 0, 1}) {
    kpack_set_tensor_map_cache_for_testing(cached);
    const int n = 20000;
    for (int i = 0; i < 1000; ++i) tma_copy_triton_f32_m64_n128_add_one_w4_ctas1(nullptr, s, shape, strides, d, shape, strides, 64, 128);
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) tma_copy_triton_f32_m64_n128_add_one_w4_ctas1(nullptr, s, shape, strides, d, shape, strides, 64, 128);
    auto t1 = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    std::printf("INFO host cost of a launch with 2 tensor descriptors, map cache %s: %.0f ns\n", cached ? "on" : "off",
                std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  kpack_set_tensor_map_cache_for_testing(1);
  cudaFree(s);
  cudaFree(d);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major < 9) {
    std::printf("sm_%d%d: TMA needs sm_90 or later: skipped\n", prop.major, prop.minor);
    return 77;
  }
  cudaFree(nullptr);  // a current context for the kpack runtime
  TritonCopies();
  Scratch();
  Capture();
  BadInput();
  HostCost();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
