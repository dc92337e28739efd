// kpack_throughput_bench.cc - achieved memory bandwidth of every built
// specialization of the bundled kernels and of their Triton twins (launched
// through kpack), against the device-to-device copy ceiling measured in the
// same run.
//
//   kpack_throughput_bench [--quick] [--kernel NAME[,NAME...]] [--mem-gib N]
//
// For each kernel, shape (sizes well past L2: H200 has 60 MB, H100 50 MB) and
// dtype, it allocates up to 3 rotating sets of inputs and outputs, validates
// one launch of each specialization against a CPU computation of a few rows
// or elements, then times batches of launches with CUDA events and prints
// the minimum bytes the kernel must move divided by the median time per
// launch.  The ceiling is cudaMemcpyAsync device to device of the same
// number of bytes moved (read + written), timed the same way.
//
// The Triton twins (vector_add_triton, ...) run through the same code as
// the CUDA kernels, on the shapes bench/triton/triton_throughput.py gives
// Triton's JIT, with its shape spelling, so that bench/report.py can pair
// kpack's AOT launches of the Triton kernels with the JIT's.
//
// stdout: JSON lines, one per measurement ("device", "ceiling",
// "throughput", "best", "skipped", "error" sections); notes go to stderr.
// Exit status: 0, 1 on a validation failure or a CUDA/kpack error, 2 on a
// bad option, 3 when the watchdog fires, 77 when there is no CUDA device.
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// Each timed batch moves at least this many bytes, so that one batch lasts
// about a millisecond on an H200 and the 0.5 us event resolution and any
// launch gap are noise.
constexpr uint64_t kBatchBytes = 4 * kGiB;
// Timed batches per measurement (the median is reported).
constexpr int kBatches = 30;
constexpr int kQuickBatches = 5;
// Host-generated data is this many elements, repeated over the buffer by
// device copies: generating gigabytes on the host would dominate the run.
constexpr size_t kPatternElems = size_t{1} << 20;
// A step (one measurement, one allocation and fill) that takes longer than
// this is stuck: the program exits instead of hanging the caller.
constexpr unsigned kWatchdogSeconds = 120;

// ---- Formatting and failure ---------------------------------------------------

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, f, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&s[0], s.size() + 1, f, ap2);
  va_end(ap2);
  return s;
}

// Error details from the runtime can hold quotes and backslashes.
std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += fmt("\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      o += c;
    }
  }
  return o + "\"";
}

// JSON has no NaN: a missing ceiling is null.
std::string json_num(double v, const char* f = "%.4f") { return std::isfinite(v) ? fmt(f, v) : "null"; }

void note(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
  std::fflush(stderr);
}

void emit(const std::string& json) {
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
}

[[noreturn]] void die(const std::string& msg) {
  note("kpack_throughput_bench: FATAL: " + msg);
  emit("{\"section\": \"error\", \"message\": " + json_str(msg) + "}");
  std::exit(1);
}

void ck(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) die(fmt("%s: %s (%s)", what.c_str(), cudaGetErrorName(err), cudaGetErrorString(err)));
}

void kck(kpack_status st, const std::string& what) {
  if (st != KPACK_SUCCESS)
    die(fmt("%s: %s: %s (%s)", what.c_str(), kpack_status_name(st), kpack_last_error_detail(),
            kpack_status_message(st)));
}

// ---- Watchdog -------------------------------------------------------------------

// The step in progress, for the alarm handler (which may only call
// async-signal-safe functions: write and _exit).
char g_step[256] = "startup";

void on_alarm(int) {
  static const char head[] = "kpack_throughput_bench: FATAL: watchdog: no progress in this step: ";
  size_t len = 0;
  while (len < sizeof g_step && g_step[len] != '\0') ++len;
  ssize_t r = write(2, head, sizeof head - 1);
  r = write(2, g_step, len);
  r = write(2, "\n", 1);
  static const char json[] = "{\"section\": \"error\", \"message\": \"watchdog fired\"}\n";
  r = write(1, json, sizeof json - 1);
  (void)r;
  _exit(3);
}

// Starts a step: re-arms the alarm, so only a step that is stuck fires it.
void watch(const std::string& step) {
  std::snprintf(g_step, sizeof g_step, "%s", step.c_str());
  alarm(kWatchdogSeconds);
}

// ---- Element types on the host ------------------------------------------------

size_t dtype_size(kpack_dtype t) { return t == KPACK_DTYPE_F32 ? 4 : 2; }

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; finite inputs (all we generate).
uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Round to nearest even, with subnormals and overflow to infinity.
uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half: units of 2^-24
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds up the exponent
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
  return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

void put(kpack_dtype t, uint8_t* base, size_t i, double v) {
  const float f = static_cast<float>(v);
  if (t == KPACK_DTYPE_F32) {
    std::memcpy(base + 4 * i, &f, 4);
  } else {
    const uint16_t h = t == KPACK_DTYPE_F16 ? f32_to_f16(f) : f32_to_bf16(f);
    std::memcpy(base + 2 * i, &h, 2);
  }
}

double get(kpack_dtype t, const uint8_t* base, size_t i) {
  if (t == KPACK_DTYPE_F32) {
    float f;
    std::memcpy(&f, base + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, base + 2 * i, 2);
  return t == KPACK_DTYPE_F16 ? f16_to_f32(h) : bits_f32(static_cast<uint32_t>(h) << 16);
}

// Spot-check tolerance on an output of type t: a few times half an ulp
// (f16: 2^-11, bf16: 2^-8) or fp32 sums over long rows.  These are sanity
// checks that the benchmark's inputs are valid and its launches right (a
// wrong launch is off by far more); tests/gpu is the correctness test.
double rtol(kpack_dtype t) { return t == KPACK_DTYPE_F32 ? 1e-4 : t == KPACK_DTYPE_F16 ? 2e-3 : 2e-2; }

bool close(double got, double want, double rt, double at) {
  return std::fabs(got - want) <= at + rt * std::fabs(want);  // false for NaN
}

// splitmix64: fast and reproducible (every run uses the same inputs).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53; }
  int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

std::vector<uint8_t> uniform_pattern(kpack_dtype t, size_t n, double lo, double hi, uint64_t seed) {
  Rng rng{seed};
  std::vector<uint8_t> raw(n * dtype_size(t));
  for (size_t i = 0; i < n; ++i) put(t, raw.data(), i, rng.uniform(lo, hi));
  return raw;
}

const char* dname(kpack_dtype t) { return kpack_dtype_name(t); }

// ---- Device memory ----------------------------------------------------------------

// The allocations of one case, freed together when it ends.  Running out of
// memory (another process on the GPU) skips the case instead of failing.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() {
    for (void* p : ptrs_) {
      const cudaError_t e = cudaFree(p);
      if (e != cudaSuccess) note(fmt("note: cudaFree: %s", cudaGetErrorString(e)));
    }
  }
  void* alloc(uint64_t bytes) {
    if (!ok_) return nullptr;
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it and go on
      ok_ = false;
      return nullptr;
    }
    ck(e, fmt("cudaMalloc(%" PRIu64 ")", bytes));
    ptrs_.push_back(p);
    return p;
  }
  std::vector<void*> alloc_sets(int n, uint64_t bytes) {
    std::vector<void*> v(static_cast<size_t>(n));
    for (void*& p : v) p = alloc(bytes);
    return v;
  }
  bool ok() const { return ok_; }

 private:
  std::vector<void*> ptrs_;
  bool ok_ = true;
};

// ---- The benchmark context ----------------------------------------------------------

// One (kernel, shape, dtype) with its buffers' sizes and rotation.
struct Case {
  std::string kernel, impl, shape;  // impl: kpack_cuda or kpack_triton
  kpack_dtype t = KPACK_DTYPE_F32;
  uint64_t bytes = 0;      // minimum bytes one launch must move
  uint64_t set_bytes = 0;  // device bytes of one rotating set
  int nsets = 0;           // 0: does not fit, skipped
  double ceiling = NAN;    // TB/s of a copy moving the same bytes
};

struct Record {
  std::string kernel, dtype, variant, shape, spec;
  double tbps, ratio;
};

struct Timing {
  double median_us, min_us;
  int per_batch;
};

class Ctx {
 public:
  cudaStream_t stream = nullptr;
  bool quick = false;
  uint64_t cap = 0;  // device bytes one case may allocate
  uint64_t l2 = 0;
  bool failed = false;  // a validation failed

  void init() {
    ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    events_.resize(kBatches + 1);
    for (cudaEvent_t& e : events_) ck(cudaEventCreate(&e), "cudaEventCreate");
    for (size_t i = 0, n = kernels_num_specializations(); i < n; ++i) {
      kpack_spec_info info;
      kck(kernels_specialization_info(i, &info), "kernels_specialization_info");
      spec_names_.insert(info.name);
    }
  }

  void sync(const std::string& what) { ck(cudaStreamSynchronize(stream), "cudaStreamSynchronize after " + what); }

  // Rotating sets that fit the cap: 3 when they fit, so a set comes back
  // only after the two others have streamed through L2 (every set here is
  // at least 5x L2); 2 or 1 only for the largest cases, whose one set is
  // over 100x L2, so nothing of it survives in L2 until it comes back.
  int sets_for(uint64_t set_bytes) const {
    for (int n = 3; n >= 1; --n)
      if (static_cast<uint64_t>(n) * set_bytes <= cap) return n;
    return 0;
  }

  // Fills dst[0, bytes) with `pattern` repeated: one upload, then the filled
  // prefix doubled by device copies.  pattern.size() is a multiple of the
  // record (box, element) size, and so is every copy.
  void fill_repeat(void* dst, uint64_t bytes, const std::vector<uint8_t>& pattern) {
    uint8_t* d = static_cast<uint8_t*>(dst);
    const uint64_t first = std::min<uint64_t>(bytes, pattern.size());
    ck(cudaMemcpyAsync(d, pattern.data(), first, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync H2D");
    for (uint64_t filled = first; filled < bytes;) {
      const uint64_t n = std::min(filled, bytes - filled);
      ck(cudaMemcpyAsync(d + filled, d, n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync D2D (fill)");
      filled += n;
    }
    sync("fill");  // the pageable source must outlive the copy
  }

  // Set 0 from the pattern, the other sets copies of it.
  void fill_sets(const std::vector<void*>& sets, uint64_t bytes, const std::vector<uint8_t>& pattern) {
    fill_repeat(sets[0], bytes, pattern);
    for (size_t s = 1; s < sets.size(); ++s)
      ck(cudaMemcpyAsync(sets[s], sets[0], bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync D2D (sets)");
    sync("fill of the rotating sets");
  }

  // 0xFF bytes are NaN in f32, f16 and bf16 and not a valid u8 flag: an
  // output the validation launch does not write fails the check.
  void poison(void* p, uint64_t bytes) {
    ck(cudaMemsetAsync(p, 0xff, bytes, stream), "cudaMemsetAsync (poison)");
  }

  std::vector<uint8_t> download(const void* src, uint64_t offset, uint64_t bytes) {
    std::vector<uint8_t> h(bytes);
    ck(cudaMemcpyAsync(h.data(), static_cast<const uint8_t*>(src) + offset, bytes, cudaMemcpyDeviceToHost, stream),
       "cudaMemcpyAsync D2H");
    sync("download");
    return h;
  }

  template <typename T>
  void upload(void* dst, const std::vector<T>& v) {
    ck(cudaMemcpyAsync(dst, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync H2D");
    sync("upload");
  }

  // Times launch(set) back to back on the stream: one untimed batch, then
  // kBatches batches with an event between consecutive ones.  The host
  // enqueues everything before waiting, so the GPU never idles between
  // batches and each interval is pure device time.  Returns per-launch
  // times.  Every batch is a whole number of rotations through the sets.
  Timing time_launches(int nsets, uint64_t bytes, const std::function<void(int)>& launch) {
    const uint64_t per_round = bytes * static_cast<uint64_t>(nsets);
    const int rounds = static_cast<int>(std::max<uint64_t>(1, (kBatchBytes + per_round - 1) / per_round));
    const int per_batch = rounds * nsets;
    const int batches = quick ? kQuickBatches : kBatches;
    int k = 0;
    for (int i = 0; i < per_batch; ++i) launch(k++ % nsets);
    ck(cudaEventRecord(events_[0], stream), "cudaEventRecord");
    for (int b = 0; b < batches; ++b) {
      for (int i = 0; i < per_batch; ++i) launch(k++ % nsets);
      ck(cudaEventRecord(events_[b + 1], stream), "cudaEventRecord");
    }
    ck(cudaEventSynchronize(events_[batches]), "cudaEventSynchronize (end of the timed batches)");
    std::vector<double> us(static_cast<size_t>(batches));
    for (int b = 0; b < batches; ++b) {
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, events_[b], events_[b + 1]), "cudaEventElapsedTime");
      us[b] = 1000.0 * ms / per_batch;
    }
    std::sort(us.begin(), us.end());
    const size_t m = us.size() / 2;
    const double median = us.size() % 2 ? us[m] : 0.5 * (us[m - 1] + us[m]);
    return {median, us.front(), per_batch};
  }

  // TB/s of cudaMemcpyAsync device to device moving `bytes_moved` bytes
  // (half read, half written), measured once per size and cached.  Called
  // before a case allocates, so the copy buffers fit next to nothing else.
  double ceiling(uint64_t bytes_moved) {
    const uint64_t size = (bytes_moved / 2 + 255) / 256 * 256;
    const auto it = ceilings_.find(size);
    if (it != ceilings_.end()) return it->second;
    watch(fmt("d2d copy of %" PRIu64 " bytes", size));
    double tbps = NAN;
    const int pairs = sets_for(2 * size);
    Arena a;
    const std::vector<void*> src = a.alloc_sets(pairs, size), dst = a.alloc_sets(pairs, size);  // none when 0
    if (pairs == 0 || !a.ok()) {
      note(fmt("note: no memory for a %" PRIu64 "-byte copy ceiling; ratios for that size are null", size));
    } else {
      // Random bytes: cudaMalloc memory is not compressible anyway, but the
      // ceiling should not depend on what the buffers hold.
      Rng rng{0xc0ffee};
      std::vector<uint8_t> pattern(4 * kMiB);
      for (uint8_t& b : pattern) b = static_cast<uint8_t>(rng.next());
      for (void* p : src) fill_repeat(p, size, pattern);
      const Timing t = time_launches(pairs, 2 * size, [&](int s) {
        ck(cudaMemcpyAsync(dst[s], src[s], size, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync D2D");
      });
      tbps = 2.0 * static_cast<double>(size) / t.median_us / 1e6;
      emit(fmt("{\"section\": \"ceiling\", \"name\": \"d2d_copy\", \"bytes\": %" PRIu64 ", \"copy_size\": %" PRIu64
               ", \"us\": %.3f, \"us_min\": %.3f, \"tbps\": %.4f, \"sets\": %d}",
               2 * size, size, t.median_us, t.min_us, tbps, pairs));
    }
    ceilings_[size] = tbps;
    return tbps;
  }

  // Sizes a case: its rotation and its copy ceiling.  nsets == 0: skipped.
  Case begin_case(const std::string& kernel, const std::string& impl, const std::string& shape, kpack_dtype t,
                  uint64_t bytes, uint64_t set_bytes) {
    Case c;
    c.kernel = kernel;
    c.impl = impl;
    c.shape = shape;
    c.t = t;
    c.bytes = bytes;
    c.set_bytes = set_bytes;
    c.nsets = sets_for(set_bytes);
    if (c.nsets == 0) {
      skip(c, fmt("one set of %.2f GiB exceeds the %.2f GiB cap (--mem-gib)", set_bytes / double(kGiB),
                  cap / double(kGiB)));
      return c;
    }
    c.ceiling = ceiling(bytes);
    watch(fmt("%s %s %s: allocate and fill", kernel.c_str(), dname(t), shape.c_str()));
    note(fmt("%s %s [%s]: %.3f GiB moved per launch, %d sets of %.3f GiB", kernel.c_str(), dname(t), shape.c_str(),
             bytes / double(kGiB), c.nsets, set_bytes / double(kGiB)));
    if (static_cast<uint64_t>(c.nsets) * set_bytes < 4 * l2)
      note("note: the rotating sets total less than 4x L2; launches may hit L2");
    return c;
  }

  void skip(Case& c, const std::string& why) {
    c.nsets = 0;
    note(fmt("skipped: %s %s [%s]: %s", c.kernel.c_str(), dname(c.t), c.shape.c_str(), why.c_str()));
    emit(fmt("{\"section\": \"skipped\", \"kernel\": %s, \"impl\": %s, \"dtype\": %s, \"shape\": %s, "
             "\"reason\": %s}",
             json_str(c.kernel).c_str(), json_str(c.impl).c_str(), json_str(dname(c.t)).c_str(),
             json_str(c.shape).c_str(), json_str(why).c_str()));
  }

  // One specialization on one case: poison the set-0 outputs, launch once
  // (this also loads the fatbin, outside the timing), check a sample
  // against the CPU, then time.  `variant` names the non-tuning constexprs
  // (attention_mask_fill's causal) that "best" must not mix.
  void run(const Case& c, const std::string& spec, const std::string& variant,
           const std::function<kpack_status(int)>& launch, const std::function<void()>& poison_outputs,
           const std::function<bool(std::string*)>& check) {
    watch(fmt("%s [%s]: validate", spec.c_str(), c.shape.c_str()));
    if (!spec_names_.count(spec)) note("note: " + spec + " is not a name kernels_specialization_info() lists");
    poison_outputs();
    kck(launch(0), spec + " (validation launch)");
    sync(spec + " (validation launch)");
    std::string why;
    const bool valid = check(&why);
    if (!valid) {
      failed = true;
      note(fmt("VALIDATION FAILED: %s [%s]: %s", spec.c_str(), c.shape.c_str(), why.c_str()));
    }
    watch(fmt("%s [%s]: timing", spec.c_str(), c.shape.c_str()));
    const Timing t = time_launches(c.nsets, c.bytes, [&](int s) { kck(launch(s), spec); });
    const double tbps = static_cast<double>(c.bytes) / t.median_us / 1e6;
    const double ratio = tbps / c.ceiling;
    std::string extra = variant.empty() ? "" : ", \"variant\": " + json_str(variant);
    emit(fmt("{\"section\": \"throughput\", \"kernel\": %s, \"impl\": %s, \"spec\": %s, \"dtype\": %s%s, "
             "\"shape\": %s, \"bytes\": %" PRIu64 ", \"us\": %.3f, \"us_min\": %.3f, \"tbps\": %.4f, "
             "\"ceiling_tbps\": %s, \"ratio\": %s, \"sets\": %d, \"launches_per_batch\": %d, \"valid\": %s}",
             json_str(c.kernel).c_str(), json_str(c.impl).c_str(), json_str(spec).c_str(), json_str(dname(c.t)).c_str(),
             extra.c_str(), json_str(c.shape).c_str(), c.bytes, t.median_us, t.min_us, tbps,
             json_num(c.ceiling).c_str(), json_num(ratio).c_str(), c.nsets, t.per_batch, valid ? "true" : "false"));
    if (valid) records_.push_back({c.kernel, dname(c.t), variant, c.shape, spec, tbps, ratio});
  }

  // Per (dtype, variant): the fastest specialization of each shape, and the
  // one that is best over all shapes (geometric mean of its throughput
  // relative to each shape's fastest; 1 = fastest everywhere), which is the
  // BLOCK / TILE to pick.
  void emit_best(const std::string& kernel) {
    std::vector<std::pair<std::string, std::string>> groups;
    for (const Record& r : records_)
      if (r.kernel == kernel && std::find(groups.begin(), groups.end(), std::make_pair(r.dtype, r.variant)) == groups.end())
        groups.emplace_back(r.dtype, r.variant);
    for (const auto& g : groups) {
      std::vector<const Record*> rs;
      std::vector<std::string> shapes;
      for (const Record& r : records_) {
        if (r.kernel != kernel || r.dtype != g.first || r.variant != g.second) continue;
        rs.push_back(&r);
        if (std::find(shapes.begin(), shapes.end(), r.shape) == shapes.end()) shapes.push_back(r.shape);
      }
      std::string head = "{\"section\": \"best\", \"kernel\": " + json_str(kernel) + ", \"dtype\": " + json_str(g.first);
      if (!g.second.empty()) head += ", \"variant\": " + json_str(g.second);
      std::map<std::string, double> best_of_shape;
      for (const std::string& sh : shapes) {
        const Record* best = nullptr;
        for (const Record* r : rs)
          if (r->shape == sh && (!best || r->tbps > best->tbps)) best = r;
        best_of_shape[sh] = best->tbps;
        emit(head + fmt(", \"shape\": %s, \"spec\": %s, \"tbps\": %.4f, \"ratio\": %s}", json_str(sh).c_str(),
                        json_str(best->spec).c_str(), best->tbps, json_num(best->ratio).c_str()));
      }
      std::map<std::string, std::pair<double, size_t>> score;  // spec -> (sum of logs, shapes)
      std::vector<std::string> specs;
      for (const Record* r : rs) {
        if (!score.count(r->spec)) specs.push_back(r->spec);
        auto& s = score[r->spec];
        s.first += std::log(r->tbps / best_of_shape[r->shape]);
        ++s.second;
      }
      std::string best;
      double best_gm = -1;
      for (const std::string& sp : specs) {
        const auto& s = score[sp];
        if (s.second != shapes.size()) continue;  // not measured on every shape
        const double gm = std::exp(s.first / static_cast<double>(s.second));
        if (gm > best_gm) {
          best_gm = gm;
          best = sp;
        }
      }
      if (!best.empty())
        emit(head + fmt(", \"shape\": \"all\", \"spec\": %s, \"geomean_vs_best\": %.4f, \"shapes\": %zu}",
                        json_str(best).c_str(), best_gm, shapes.size()));
    }
  }

 private:
  std::vector<cudaEvent_t> events_;
  std::map<uint64_t, double> ceilings_;
  std::vector<Record> records_;
  std::set<std::string> spec_names_;
};

// ---- Implementations -------------------------------------------------------------
// Every kernel body below (shapes, buffers, validation, timing) serves both
// the CUDA template and its Triton twin.  An Impl lists the built
// specializations of one of them, each with its launch: the dispatcher with
// that specialization's constexprs bound, so a body never names a dispatcher.

template <typename Fn>
struct Spec {
  kpack_dtype T;
  int causal;        // attention_mask_fill's CAUSAL (0 or 1); 0 for the others
  std::string name;  // as kernels_specialization_info() lists it
  Fn launch;
};

template <typename Fn>
struct Impl {
  std::string kernel;  // "kernel" of the JSON lines: softmax, softmax_triton, ...
  std::string impl;    // "impl": kpack_cuda or kpack_triton
  std::vector<Spec<Fn>> specs;

  // The dtypes of the built specializations, in manifest order.
  std::vector<kpack_dtype> dtypes() const {
    std::vector<kpack_dtype> out;
    for (const Spec<Fn>& s : specs)
      if (std::find(out.begin(), out.end(), s.T) == out.end()) out.push_back(s.T);
    return out;
  }
};

// An Impl over a generated kernels_<kernel>_configs[] array, in its order;
// make(config) returns the Spec of one entry.
template <typename Fn, typename Cfg, size_t N, typename Make>
Impl<Fn> impl_of(const char* kernel, const char* impl, const Cfg (&configs)[N], const Make& make) {
  Impl<Fn> im{kernel, impl, {}};
  for (const Cfg& cfg : configs) im.specs.push_back(make(cfg));
  return im;
}

constexpr const char* kCuda = "kpack_cuda";
constexpr const char* kTriton = "kpack_triton";

// Specialization names as the generator spells them: <kernel>_<T>_b<BLOCK>,
// and _w<num_warps> after it for the Triton twins.
std::string block_spec(const char* kernel, kpack_dtype t, int block) {
  return fmt("%s_%s_b%d", kernel, dname(t), block);
}

std::string triton_spec(const char* kernel, kpack_dtype t, int block, int num_warps) {
  return block_spec(kernel, t, block) + fmt("_w%d", num_warps);
}

// Checks got(i) against want(i) for i < n; describes the first mismatch as
// where + i + "]", e.g. "out[1024 + 5]".
bool check_range(size_t n, const std::function<double(size_t)>& got, const std::function<double(size_t)>& want,
                 double rt, double at, const std::string& where, std::string* why) {
  for (size_t i = 0; i < n; ++i) {
    const double g = got(i), w = want(i);
    if (!close(g, w, rt, at)) {
      *why = fmt("%s%zu] = %.9g, want %.9g", where.c_str(), i, g, w);
      return false;
    }
  }
  return true;
}

// ---- vector_add ----------------------------------------------------------------
// Bytes: 3 n sizeof(T) (x and y read, out written).

using VectorAddFn = std::function<kpack_status(cudaStream_t, const void* x, const void* y, void* out, int64_t n)>;

struct VectorAddJob {
  std::string shape;
  int64_t n;
  kpack_dtype t;
};

void bench_vector_add(Ctx& ctx, const Impl<VectorAddFn>& im, const std::vector<VectorAddJob>& jobs) {
  for (const VectorAddJob& j : jobs) {
    const kpack_dtype t = j.t;
    const size_t es = dtype_size(t);
    const uint64_t n = static_cast<uint64_t>(j.n), tensor = n * es;
    Case c = ctx.begin_case(im.kernel, im.impl, j.shape, t, 3 * tensor, 3 * tensor);
    if (c.nsets == 0) continue;
    Arena a;
    const auto x = a.alloc_sets(c.nsets, tensor), y = a.alloc_sets(c.nsets, tensor),
               out = a.alloc_sets(c.nsets, tensor);
    if (!a.ok()) {
      ctx.skip(c, "cudaMalloc ran out of memory");
      continue;
    }
    ctx.fill_sets(x, tensor, uniform_pattern(t, kPatternElems, -4, 4, 1));
    ctx.fill_sets(y, tensor, uniform_pattern(t, kPatternElems, -4, 4, 2));

    // Windows at the start, middle and end: out = x + y rounded once.
    const auto check = [&](std::string* why) {
      const uint64_t w = 4096;
      for (const uint64_t e0 : {uint64_t{0}, n / 2, n - w}) {
        const auto hx = ctx.download(x[0], e0 * es, w * es), hy = ctx.download(y[0], e0 * es, w * es),
                   ho = ctx.download(out[0], e0 * es, w * es);
        if (!check_range(
                w, [&](size_t i) { return get(t, ho.data(), i); },
                [&](size_t i) { return get(t, hx.data(), i) + get(t, hy.data(), i); }, rtol(t), 0,
                fmt("out[%" PRIu64 " + ", e0), why))
          return false;
      }
      return true;
    };
    for (const Spec<VectorAddFn>& sp : im.specs) {
      if (sp.T != t) continue;
      ctx.run(
          c, sp.name, "", [&](int s) { return sp.launch(ctx.stream, x[s], y[s], out[s], j.n); },
          [&] { ctx.poison(out[0], tensor); }, check);
    }
  }
  ctx.emit_best(im.kernel);
}

void bench_vector_add_cuda(Ctx& ctx) {
  const auto im =
      impl_of<VectorAddFn>("vector_add", kCuda, kernels_vector_add_configs, [](const kernels_vector_add_config& cfg) {
        return Spec<VectorAddFn>{cfg.T, 0, block_spec("vector_add", cfg.T, cfg.BLOCK),
                                 [cfg](cudaStream_t st, const void* x, const void* y, void* out, int64_t n) {
                                   return kernels_vector_add(st, cfg.T, cfg.BLOCK, x, y, out, n);
                                 }};
      });
  // 2^28 elements: 1 GiB per f32 tensor, the large case; the residual add
  // of an 8192-token batch of a hidden=8192 model (Llama-70B) as the engine
  // shape (128 MiB per f16 tensor: still 6x L2 per set).
  const std::pair<const char*, int64_t> shapes[] = {
      {"n=268435456", int64_t{1} << 28}, {"n=67108864 (residual add, tokens=8192 hidden=8192)", int64_t{8192} * 8192}};
  std::vector<VectorAddJob> jobs;
  for (const auto& sh : shapes)
    for (const kpack_dtype t : im.dtypes()) jobs.push_back({sh.first, sh.second, t});
  bench_vector_add(ctx, im, jobs);
}

void bench_vector_add_triton(Ctx& ctx) {
  const auto im = impl_of<VectorAddFn>(
      "vector_add_triton", kTriton, kernels_vector_add_triton_configs, [](const kernels_vector_add_triton_config& cfg) {
        return Spec<VectorAddFn>{cfg.T, 0, triton_spec("vector_add_triton", cfg.T, cfg.BLOCK, cfg.num_warps),
                                 [cfg](cudaStream_t st, const void* x, const void* y, void* out, int64_t n) {
                                   return kernels_vector_add_triton(st, cfg.T, cfg.BLOCK, cfg.num_warps, x, y, out, n);
                                 }};
      });
  // triton_throughput.py: n = 2^28 for f32, 2^29 for f16 and bf16 (the same
  // bytes), shape "n=<n>".
  std::vector<VectorAddJob> jobs;
  for (const kpack_dtype t : im.dtypes()) {
    const int64_t n = t == KPACK_DTYPE_F32 ? int64_t{1} << 28 : int64_t{1} << 29;
    jobs.push_back({fmt("n=%" PRId64, n), n, t});
  }
  bench_vector_add(ctx, im, jobs);
}

// ---- giou_loss -----------------------------------------------------------------
// Bytes: 2 B 4 sizeof(T) (preds, targets) + B sizeof(T) (giou) + B (valid).

// GIoU of one box pair in double, as templates/giou_loss.cuh defines it.
double giou_ref(const double* p, const double* t, bool* ok) {
  const double area_p = (p[2] - p[0]) * (p[3] - p[1]);
  const double area_t = (t[2] - t[0]) * (t[3] - t[1]);
  const double iw = std::max(std::min(p[2], t[2]) - std::max(p[0], t[0]), 0.0);
  const double ih = std::max(std::min(p[3], t[3]) - std::max(p[1], t[1]), 0.0);
  const double inter = iw * ih;
  const double uni = area_p + area_t - inter;
  const double iou = inter / std::max(uni, 1e-5);
  const double ew = std::max(std::max(p[2], t[2]) - std::min(p[0], t[0]), 0.0);
  const double eh = std::max(std::max(p[3], t[3]) - std::min(p[1], t[1]), 0.0);
  const double enclose = ew * eh;
  const double g = iou - (enclose - uni) / std::max(enclose, 1e-5);
  *ok = t[3] > 0;
  return *ok ? g : 0;
}

// Boxes as in tests/gpu: 15% all-zero padding targets (invalid), targets
// whose bottom may be <= 0 (invalid), 70% of predictions near their target.
void box_patterns(kpack_dtype t, size_t boxes, std::vector<uint8_t>* preds, std::vector<uint8_t>* targets) {
  Rng rng{3};
  preds->assign(boxes * 4 * dtype_size(t), 0);
  targets->assign(boxes * 4 * dtype_size(t), 0);
  for (size_t b = 0; b < boxes; ++b) {
    double tb[4] = {0, 0, 0, 0}, pb[4];
    if (rng.uniform(0, 1) > 0.15) {
      tb[0] = rng.uniform(-20, 100);
      tb[1] = rng.uniform(-20, 100);
      tb[2] = tb[0] + rng.uniform(0.5, 60);
      tb[3] = tb[1] + rng.uniform(0.5, 60);
    }
    if (rng.uniform(0, 1) < 0.7) {
      for (int i = 0; i < 4; ++i) pb[i] = tb[i] + rng.uniform(-5, 5);
    } else {
      pb[0] = rng.uniform(-20, 100);
      pb[1] = rng.uniform(-20, 100);
      pb[2] = pb[0] + rng.uniform(0.5, 60);
      pb[3] = pb[1] + rng.uniform(0.5, 60);
    }
    for (int i = 0; i < 4; ++i) {
      put(t, preds->data(), b * 4 + i, pb[i]);
      put(t, targets->data(), b * 4 + i, tb[i]);
    }
  }
}

using GiouFn = std::function<kpack_status(cudaStream_t, const void* preds, const void* targets, void* giou,
                                          uint8_t* valid, int64_t boxes)>;

struct GiouJob {
  std::string shape;
  int64_t boxes;
  kpack_dtype t;
};

void bench_giou(Ctx& ctx, const Impl<GiouFn>& im, const std::vector<GiouJob>& jobs) {
  for (const GiouJob& j : jobs) {
    const kpack_dtype t = j.t;
    const size_t es = dtype_size(t);
    const uint64_t nb = static_cast<uint64_t>(j.boxes);
    const uint64_t in_bytes = nb * 4 * es, g_bytes = nb * es, v_bytes = nb;
    const uint64_t bytes = 2 * in_bytes + g_bytes + v_bytes;
    Case c = ctx.begin_case(im.kernel, im.impl, j.shape, t, bytes, bytes);
    if (c.nsets == 0) continue;
    Arena a;
    const auto p = a.alloc_sets(c.nsets, in_bytes), tg = a.alloc_sets(c.nsets, in_bytes),
               g = a.alloc_sets(c.nsets, g_bytes), v = a.alloc_sets(c.nsets, v_bytes);
    if (!a.ok()) {
      ctx.skip(c, "cudaMalloc ran out of memory");
      continue;
    }
    std::vector<uint8_t> pp, tp;
    box_patterns(t, kPatternElems / 4, &pp, &tp);  // whole boxes, the same period in both
    ctx.fill_sets(p, in_bytes, pp);
    ctx.fill_sets(tg, in_bytes, tp);

    const auto check = [&](std::string* why) {
      const uint64_t w = 4096;
      for (const uint64_t b0 : {uint64_t{0}, nb / 2, nb - w}) {
        const auto hp = ctx.download(p[0], b0 * 4 * es, w * 4 * es), ht = ctx.download(tg[0], b0 * 4 * es, w * 4 * es),
                   hg = ctx.download(g[0], b0 * es, w * es), hv = ctx.download(v[0], b0, w);
        for (uint64_t i = 0; i < w; ++i) {
          double pb[4], tb[4];
          for (int k = 0; k < 4; ++k) {
            pb[k] = get(t, hp.data(), i * 4 + k);
            tb[k] = get(t, ht.data(), i * 4 + k);
          }
          bool ok = false;
          const double want = giou_ref(pb, tb, &ok), got = get(t, hg.data(), i);
          if (hv[i] != (ok ? 1 : 0)) {
            *why = fmt("valid[%" PRIu64 "] = %d, want %d", b0 + i, hv[i], ok ? 1 : 0);
            return false;
          }
          // giou is in [-1, 1]: tolerance relative to max(1, |giou|).
          if (!close(got, want, rtol(t), rtol(t))) {
            *why = fmt("giou[%" PRIu64 "] = %.9g, want %.9g", b0 + i, got, want);
            return false;
          }
        }
      }
      return true;
    };
    for (const Spec<GiouFn>& sp : im.specs) {
      if (sp.T != t) continue;
      ctx.run(
          c, sp.name, "",
          [&](int s) { return sp.launch(ctx.stream, p[s], tg[s], g[s], static_cast<uint8_t*>(v[s]), j.boxes); },
          [&] {
            ctx.poison(g[0], g_bytes);
            ctx.poison(v[0], v_bytes);
          },
          check);
    }
  }
  ctx.emit_best(im.kernel);
}

void bench_giou_cuda(Ctx& ctx) {
  const auto im =
      impl_of<GiouFn>("giou_loss", kCuda, kernels_giou_loss_configs, [](const kernels_giou_loss_config& cfg) {
        return Spec<GiouFn>{cfg.T, 0, block_spec("giou_loss", cfg.T, cfg.BLOCK),
                            [cfg](cudaStream_t st, const void* p, const void* t, void* g, uint8_t* v, int64_t nb) {
                              return kernels_giou_loss(st, cfg.T, cfg.BLOCK, p, t, g, v, nb);
                            }};
      });
  // 64M boxes: 2.3 GiB moved per f32 launch, 1.2 GiB per f16 one; 16M
  // boxes (64 images x 262144 anchors) as the engine shape.
  const std::pair<const char*, int64_t> shapes[] = {{"boxes=67108864", int64_t{64} << 20},
                                                    {"boxes=16777216 (B=64 N=262144)", int64_t{16} << 20}};
  std::vector<GiouJob> jobs;
  for (const auto& sh : shapes)
    for (const kpack_dtype t : im.dtypes()) jobs.push_back({sh.first, sh.second, t});
  bench_giou(ctx, im, jobs);
}

void bench_giou_triton(Ctx& ctx) {
  const auto im = impl_of<GiouFn>(
      "giou_loss_triton", kTriton, kernels_giou_loss_triton_configs, [](const kernels_giou_loss_triton_config& cfg) {
        return Spec<GiouFn>{cfg.T, 0, triton_spec("giou_loss_triton", cfg.T, cfg.BLOCK, cfg.num_warps),
                            [cfg](cudaStream_t st, const void* p, const void* t, void* g, uint8_t* v, int64_t nb) {
                              return kernels_giou_loss_triton(st, cfg.T, cfg.BLOCK, cfg.num_warps, p, t, g, v, nb);
                            }};
      });
  // triton_throughput.py: B = 2^24 boxes, shape "B=<B>".
  std::vector<GiouJob> jobs;
  for (const kpack_dtype t : im.dtypes()) jobs.push_back({fmt("B=%" PRId64, int64_t{1} << 24), int64_t{1} << 24, t});
  bench_giou(ctx, im, jobs);
}

// ---- attention_mask_fill -------------------------------------------------------
// Bytes: sum(q_len * kv_len) sizeof(T) (the mask, written once) + 16 per
// request (q_len, kv_len, mask_offsets read).

struct MaskShape {
  std::string label;
  std::vector<int32_t> q, kv;
};

std::vector<MaskShape> mask_shapes() {
  std::vector<MaskShape> v;
  // A prefill batch, as in the issue: 64 requests of 2048 tokens.
  v.push_back({"64 x q=kv=2048", std::vector<int32_t>(64, 2048), std::vector<int32_t>(64, 2048)});
  // The same at 2047 tokens: every request's block starts mid-line (the
  // Triton twin's bench runs it too, bench/triton/triton_throughput.py).
  v.push_back({"64 x q=kv=2047", std::vector<int32_t>(64, 2047), std::vector<int32_t>(64, 2047)});
  // Long-context prefill: 1G mask elements (4 GiB f32, 2 GiB f16).
  v.push_back({"16 x q=kv=8192", std::vector<int32_t>(16, 8192), std::vector<int32_t>(16, 8192)});
  // A continuous-batching step, shuffled: 96 chunked prefills (q 256-2048
  // new tokens over kv q..q+2048, cached prefix included) and 160 decodes
  // (q=1, kv 512-8192); about 1 GiB of f32 mask.  max_q * max_kv is ~60x
  // the mean request: the kernel's blocks share out the work items of the
  // requests present, so this costs what its elements cost.
  MaskShape r{"ragged: 96 prefill + 160 decode", {}, {}};
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
  for (size_t i = r.q.size() - 1; i > 0; --i) {  // Fisher-Yates, reproducible
    const size_t j = static_cast<size_t>(rng.integer(0, static_cast<int64_t>(i)));
    std::swap(r.q[i], r.q[j]);
    std::swap(r.kv[i], r.kv[j]);
  }
  v.push_back(r);
  return v;
}

uint32_t masked_bits(kpack_dtype t) {
  return t == KPACK_DTYPE_F32 ? 0xff800000u : t == KPACK_DTYPE_F16 ? 0xfc00u : 0xff80u;
}

using MaskFn =
    std::function<kpack_status(cudaStream_t, const int32_t* q_len, const int32_t* kv_len, const int64_t* mask_offsets,
                               void* mask, int32_t num_requests, int32_t max_q_len, int32_t max_kv_len)>;

struct MaskJob {
  MaskShape shape;
  kpack_dtype t;
  int causal;  // only the specializations with this CAUSAL; -1: both
};

void bench_mask(Ctx& ctx, const Impl<MaskFn>& im, const std::vector<MaskJob>& jobs) {
  for (const MaskJob& j : jobs) {
    const MaskShape& sh = j.shape;
    const kpack_dtype t = j.t;
    const size_t nr = sh.q.size();
    std::vector<int64_t> off(nr);
    int64_t total = 0;
    int32_t max_q = 0, max_kv = 0;
    for (size_t r = 0; r < nr; ++r) {
      off[r] = total;  // packed: the exclusive prefix sum, no gaps
      total += static_cast<int64_t>(sh.q[r]) * sh.kv[r];
      max_q = std::max(max_q, sh.q[r]);
      max_kv = std::max(max_kv, sh.kv[r]);
    }
    // Requests whose blocks the check samples: first, middle, last, largest.
    size_t big = 0;
    for (size_t r = 1; r < nr; ++r)
      if (static_cast<int64_t>(sh.q[r]) * sh.kv[r] > static_cast<int64_t>(sh.q[big]) * sh.kv[big]) big = r;
    const std::vector<size_t> sample = {0, nr / 2, nr - 1, big};
    const size_t es = dtype_size(t);
    const uint64_t mask_bytes = static_cast<uint64_t>(total) * es;
    Case c = ctx.begin_case(im.kernel, im.impl, sh.label, t, mask_bytes + 16 * nr, mask_bytes);
    if (c.nsets == 0) continue;
    Arena a;
    // Each set its own allocation: the mask base is 256-byte aligned (the
    // requests' blocks need not be: the mask has no divisibility).
    const auto mask = a.alloc_sets(c.nsets, mask_bytes);
    // The small inputs are shared by the sets: every block reads them, so
    // they live in L2 whatever the rotation.
    void* dq = a.alloc(nr * 4);
    void* dkv = a.alloc(nr * 4);
    void* doff = a.alloc(nr * 8);
    if (!a.ok()) {
      ctx.skip(c, "cudaMalloc ran out of memory");
      continue;
    }
    ctx.upload(dq, sh.q);
    ctx.upload(dkv, sh.kv);
    ctx.upload(doff, off);

    for (const Spec<MaskFn>& sp : im.specs) {
      if (sp.T != t || (j.causal >= 0 && sp.causal != j.causal)) continue;
      const bool causal = sp.causal != 0;
      // The first and last 8192 elements of each sampled request's block,
      // bit for bit: 0 where allowed, -inf where masked.
      const auto check = [&](std::string* why) {
        for (const size_t r : sample) {
          const int64_t len = static_cast<int64_t>(sh.q[r]) * sh.kv[r];
          const int64_t w = std::min<int64_t>(8192, len);
          for (const int64_t l0 : {int64_t{0}, len - w}) {
            const auto hm =
                ctx.download(mask[0], static_cast<uint64_t>(off[r] + l0) * es, static_cast<uint64_t>(w) * es);
            for (int64_t i2 = 0; i2 < w; ++i2) {
              const int64_t l = l0 + i2, qi = l / sh.kv[r], k = l % sh.kv[r];
              const bool allowed = !causal || k <= sh.kv[r] - sh.q[r] + qi;
              uint32_t bits = 0;
              std::memcpy(&bits, hm.data() + i2 * es, es);
              const uint32_t want = allowed ? 0u : masked_bits(t);
              if (bits != want) {
                *why = fmt("request %zu element (%" PRId64 ", %" PRId64 ") = 0x%x, want 0x%x", r, qi, k, bits, want);
                return false;
              }
            }
          }
        }
        return true;
      };
      ctx.run(
          c, sp.name, causal ? "causal" : "nocausal",
          [&](int s) {
            return sp.launch(ctx.stream, static_cast<int32_t*>(dq), static_cast<int32_t*>(dkv),
                             static_cast<int64_t*>(doff), mask[s], static_cast<int32_t>(nr), max_q, max_kv);
          },
          [&] { ctx.poison(mask[0], mask_bytes); }, check);
    }
  }
  ctx.emit_best(im.kernel);
}

void bench_mask_cuda(Ctx& ctx) {
  const char* K = "attention_mask_fill";
  const auto im = impl_of<MaskFn>(
      K, kCuda, kernels_attention_mask_fill_configs, [K](const kernels_attention_mask_fill_config& cfg) {
        return Spec<MaskFn>{
            cfg.T, cfg.CAUSAL != 0, fmt("%s_%s_%s_t%d", K, dname(cfg.T), cfg.CAUSAL ? "causal" : "nocausal", cfg.TILE),
            [cfg](cudaStream_t st, const int32_t* q, const int32_t* kv, const int64_t* off, void* m, int32_t nr,
                  int32_t mq, int32_t mkv) {
              return kernels_attention_mask_fill(st, cfg.T, cfg.CAUSAL, cfg.TILE, q, kv, off, m, nr, mq, mkv);
            }};
      });
  std::vector<MaskJob> jobs;
  for (const MaskShape& sh : mask_shapes())
    for (const kpack_dtype t : im.dtypes()) jobs.push_back({sh, t, -1});
  bench_mask(ctx, im, jobs);
}

void bench_mask_triton(Ctx& ctx) {
  const char* K = "attention_mask_fill_triton";
  const auto im = impl_of<MaskFn>(
      K, kTriton, kernels_attention_mask_fill_triton_configs,
      [K](const kernels_attention_mask_fill_triton_config& cfg) {
        return Spec<MaskFn>{
            cfg.T, cfg.CAUSAL != 0,
            fmt("%s_%s_%s_t%d_w%d", K, dname(cfg.T), cfg.CAUSAL ? "causal" : "nocausal", cfg.TILE, cfg.num_warps),
            [cfg](cudaStream_t st, const int32_t* q, const int32_t* kv, const int64_t* off, void* m, int32_t nr,
                  int32_t mq, int32_t mkv) {
              return kernels_attention_mask_fill_triton(st, cfg.T, cfg.CAUSAL, cfg.TILE, cfg.num_warps, q, kv, off, m,
                                                        nr, mq, mkv);
            }};
      });
  // triton_throughput.py: only f16, causal, 64 requests of q = kv = 2048 and
  // of 2047 (whose rows are not 16-byte aligned), shape "64x<q>x<kv>,causal".
  std::vector<MaskJob> jobs;
  const std::vector<kpack_dtype> dts = im.dtypes();
  if (std::find(dts.begin(), dts.end(), KPACK_DTYPE_F16) != dts.end())
    for (const int32_t q : {2048, 2047}) {
      MaskShape sh{fmt("64x%dx%d,causal", q, q), std::vector<int32_t>(64, q), std::vector<int32_t>(64, q)};
      jobs.push_back({sh, KPACK_DTYPE_F16, 1});
    }
  bench_mask(ctx, im, jobs);
}

// ---- softmax -------------------------------------------------------------------
// Bytes: 2 rows cols sizeof(T) (in read once, out written once; longer rows
// than the register cache, or than the Triton BLOCK, read the input twice,
// which this counts once).

using SoftmaxFn = std::function<kpack_status(cudaStream_t, const void* in, void* out, int64_t rows, int64_t cols)>;

struct SoftmaxJob {
  std::string shape;
  int64_t rows, cols;
  kpack_dtype t;
};

void bench_softmax(Ctx& ctx, const Impl<SoftmaxFn>& im, const std::vector<SoftmaxJob>& jobs) {
  for (const SoftmaxJob& j : jobs) {
    const kpack_dtype t = j.t;
    const size_t es = dtype_size(t);
    const int64_t rows = j.rows, cols = j.cols;
    const uint64_t tensor = static_cast<uint64_t>(rows * cols) * es;
    Case c = ctx.begin_case(im.kernel, im.impl, j.shape, t, 2 * tensor, 2 * tensor);
    if (c.nsets == 0) continue;
    Arena a;
    const auto in = a.alloc_sets(c.nsets, tensor), out = a.alloc_sets(c.nsets, tensor);
    if (!a.ok()) {
      ctx.skip(c, "cudaMalloc ran out of memory");
      continue;
    }
    ctx.fill_sets(in, tensor, uniform_pattern(t, kPatternElems, -8, 8, 5));

    // First, middle and last rows against a double softmax.  f16 outputs
    // below 2^-14 are subnormal, with fewer bits: an absolute 2^-24 there.
    const auto check = [&](std::string* why) {
      const uint64_t row_bytes = static_cast<uint64_t>(cols) * es;
      for (const int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
        const auto hx = ctx.download(in[0], r * row_bytes, row_bytes),
                   hy = ctx.download(out[0], r * row_bytes, row_bytes);
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < cols; ++k) m = std::max(m, get(t, hx.data(), k));
        for (int64_t k = 0; k < cols; ++k) s += std::exp(get(t, hx.data(), k) - m);
        if (!check_range(
                cols, [&](size_t k) { return get(t, hy.data(), k); },
                [&](size_t k) { return std::exp(get(t, hx.data(), k) - m) / s; }, rtol(t),
                t == KPACK_DTYPE_F16 ? std::ldexp(1.0, -24) : 0, fmt("out[row %" PRId64 ", col ", r), why))
          return false;
      }
      return true;
    };
    for (const Spec<SoftmaxFn>& sp : im.specs) {
      if (sp.T != t) continue;
      ctx.run(
          c, sp.name, "", [&](int s) { return sp.launch(ctx.stream, in[s], out[s], rows, cols); },
          [&] { ctx.poison(out[0], tensor); }, check);
    }
  }
  ctx.emit_best(im.kernel);
}

void bench_softmax_cuda(Ctx& ctx) {
  const auto im = impl_of<SoftmaxFn>("softmax", kCuda, kernels_softmax_configs, [](const kernels_softmax_config& cfg) {
    return Spec<SoftmaxFn>{cfg.T, 0, block_spec("softmax", cfg.T, cfg.BLOCK),
                           [cfg](cudaStream_t st, const void* in, void* out, int64_t rows, int64_t cols) {
                             return kernels_softmax(st, cfg.T, cfg.BLOCK, in, out, rows, cols, cols, cols);
                           }};
  });
  struct Shape {
    int64_t cols;
    int64_t rows;  // 0: as many as make each tensor 512 MiB
    const char* why;
  };
  const Shape shapes[] = {
      {4096, 32768, ""},                             // the engine shape from the issue
      {1024, 0, " (warp per row)"},                  // rows of <= 4 KiB: a warp per row
      {32000, 0, " (sampling over a 32000 vocab)"},  // long rows, beyond the f32 register cache
  };
  std::vector<SoftmaxJob> jobs;
  for (const Shape& sh : shapes) {
    for (const kpack_dtype t : im.dtypes()) {
      const int64_t rows = sh.rows ? sh.rows : static_cast<int64_t>(512 * kMiB / (sh.cols * dtype_size(t)));
      jobs.push_back({fmt("rows=%" PRId64 " cols=%" PRId64 "%s", rows, sh.cols, sh.why), rows, sh.cols, t});
    }
  }
  bench_softmax(ctx, im, jobs);
}

void bench_softmax_triton(Ctx& ctx) {
  const auto im = impl_of<SoftmaxFn>(
      "softmax_triton", kTriton, kernels_softmax_triton_configs, [](const kernels_softmax_triton_config& cfg) {
        return Spec<SoftmaxFn>{cfg.T, 0, triton_spec("softmax_triton", cfg.T, cfg.BLOCK, cfg.num_warps),
                               [cfg](cudaStream_t st, const void* in, void* out, int64_t rows, int64_t cols) {
                                 return kernels_softmax_triton(st, cfg.T, cfg.BLOCK, cfg.num_warps, in, out, rows, cols,
                                                               cols, cols);
                               }};
      });
  // triton_throughput.py: 32768 x 4096 and 4096 x 32768, shape "<rows>x<cols>":
  // cudaMalloc'd rows with strides that are multiples of 16 run the aligned
  // variant (divisibility: auto); 50257 columns (odd strides) the unhinted build.
  const std::pair<int64_t, int64_t> shapes[] = {{32768, 4096}, {4096, 32768}, {4096, 50257}};
  std::vector<SoftmaxJob> jobs;
  for (const auto& sh : shapes)
    for (const kpack_dtype t : im.dtypes())
      jobs.push_back({fmt("%" PRId64 "x%" PRId64, sh.first, sh.second), sh.first, sh.second, t});
  bench_softmax(ctx, im, jobs);
}

// ---- cross_entropy -------------------------------------------------------------
// Bytes: rows vocab sizeof(T) (logits) + rows 8 (targets) + rows 4 (loss).
// No target is ignore_index: ignored rows are not read, and counting their
// bytes would overstate the bandwidth.

using CrossEntropyFn = std::function<kpack_status(cudaStream_t, const void* logits, const int64_t* targets, float* loss,
                                                  int64_t rows, int64_t vocab, int64_t ignore_index)>;

struct CrossEntropyJob {
  std::string shape;
  int64_t rows, vocab;
  kpack_dtype t;
};

void bench_cross_entropy(Ctx& ctx, const Impl<CrossEntropyFn>& im, const std::vector<CrossEntropyJob>& jobs) {
  const int64_t ignore_index = -100;
  for (const CrossEntropyJob& j : jobs) {
    const kpack_dtype t = j.t;
    const size_t es = dtype_size(t);
    const int64_t rows = j.rows, vocab = j.vocab;
    const uint64_t logits_bytes = static_cast<uint64_t>(rows * vocab) * es;
    const uint64_t tgt_bytes = static_cast<uint64_t>(rows) * 8, loss_bytes = static_cast<uint64_t>(rows) * 4;
    const uint64_t bytes = logits_bytes + tgt_bytes + loss_bytes;
    Case c = ctx.begin_case(im.kernel, im.impl, j.shape, t, bytes, bytes);
    if (c.nsets == 0) continue;
    Arena a;
    const auto x = a.alloc_sets(c.nsets, logits_bytes), tg = a.alloc_sets(c.nsets, tgt_bytes),
               loss = a.alloc_sets(c.nsets, loss_bytes);
    if (!a.ok()) {
      ctx.skip(c, "cudaMalloc ran out of memory");
      continue;
    }
    ctx.fill_sets(x, logits_bytes, uniform_pattern(t, kPatternElems, -8, 8, 6));
    {
      Rng rng{7};
      std::vector<uint8_t> tp(kPatternElems / 8 * 8);
      for (size_t i = 0; i < tp.size() / 8; ++i) {
        const int64_t v = rng.integer(0, vocab - 1);
        std::memcpy(tp.data() + 8 * i, &v, 8);
      }
      ctx.fill_sets(tg, tgt_bytes, tp);
    }

    // Rows 0, 1, middle and last: loss = logsumexp(row) - row[target].
    const auto check = [&](std::string* why) {
      const uint64_t row_bytes = static_cast<uint64_t>(vocab) * es;
      for (const int64_t r : {int64_t{0}, int64_t{1}, rows / 2, rows - 1}) {
        const auto hx = ctx.download(x[0], r * row_bytes, row_bytes), ht = ctx.download(tg[0], r * 8, 8),
                   hl = ctx.download(loss[0], r * 4, 4);
        int64_t target;
        std::memcpy(&target, ht.data(), 8);
        float got;
        std::memcpy(&got, hl.data(), 4);
        if (target < 0 || target >= vocab) {
          *why = fmt("target[%" PRId64 "] = %" PRId64 " is out of range (bad input)", r, target);
          return false;
        }
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < vocab; ++k) m = std::max(m, get(t, hx.data(), k));
        for (int64_t k = 0; k < vocab; ++k) s += std::exp(get(t, hx.data(), k) - m);
        const double want = m + std::log(s) - get(t, hx.data(), static_cast<size_t>(target));
        // The loss is f32 for every T, from exact inputs.
        if (!close(got, want, 1e-4, 1e-4)) {
          *why = fmt("loss[%" PRId64 "] = %.9g, want %.9g (target %" PRId64 ")", r, got, want, target);
          return false;
        }
      }
      return true;
    };
    for (const Spec<CrossEntropyFn>& sp : im.specs) {
      if (sp.T != t) continue;
      ctx.run(
          c, sp.name, "",
          [&](int s) {
            return sp.launch(ctx.stream, x[s], static_cast<const int64_t*>(tg[s]), static_cast<float*>(loss[s]), rows,
                             vocab, ignore_index);
          },
          [&] { ctx.poison(loss[0], loss_bytes); }, check);
    }
  }
  ctx.emit_best(im.kernel);
}

void bench_cross_entropy_cuda(Ctx& ctx) {
  const auto im = impl_of<CrossEntropyFn>(
      "cross_entropy", kCuda, kernels_cross_entropy_configs, [](const kernels_cross_entropy_config& cfg) {
        return Spec<CrossEntropyFn>{cfg.T, 0, block_spec("cross_entropy", cfg.T, cfg.BLOCK),
                                    [cfg](cudaStream_t st, const void* x, const int64_t* tg, float* loss, int64_t rows,
                                          int64_t vocab, int64_t ignore) {
                                      return kernels_cross_entropy(st, cfg.T, cfg.BLOCK, x, tg, loss, rows, vocab,
                                                                   vocab, ignore);
                                    }};
      });
  struct Shape {
    int64_t vocab;
    int64_t rows;  // 0: as many as make the logits 1 GiB
    const char* why;
  };
  const Shape shapes[] = {
      {32000, 16384, " (Llama-2 vocab)"},
      {128256, 16384, " (Llama-3 vocab)"},
      {1000, 0, " (warp per row)"},  // rows of <= 4 KiB: a warp per row
  };
  std::vector<CrossEntropyJob> jobs;
  for (const Shape& sh : shapes) {
    for (const kpack_dtype t : im.dtypes()) {
      const int64_t rows = sh.rows ? sh.rows : static_cast<int64_t>(kGiB / (sh.vocab * dtype_size(t)));
      jobs.push_back({fmt("rows=%" PRId64 " vocab=%" PRId64 "%s", rows, sh.vocab, sh.why), rows, sh.vocab, t});
    }
  }
  bench_cross_entropy(ctx, im, jobs);
}

void bench_cross_entropy_triton(Ctx& ctx) {
  const auto im = impl_of<CrossEntropyFn>(
      "cross_entropy_triton", kTriton, kernels_cross_entropy_triton_configs,
      [](const kernels_cross_entropy_triton_config& cfg) {
        return Spec<CrossEntropyFn>{cfg.T, 0, triton_spec("cross_entropy_triton", cfg.T, cfg.BLOCK, cfg.num_warps),
                                    [cfg](cudaStream_t st, const void* x, const int64_t* tg, float* loss, int64_t rows,
                                          int64_t vocab, int64_t ignore) {
                                      return kernels_cross_entropy_triton(st, cfg.T, cfg.BLOCK, cfg.num_warps, x, tg,
                                                                          loss, rows, vocab, vocab, ignore);
                                    }};
      });
  // triton_throughput.py: 16384 x 32000 and 4096 x 128256, shape "<rows>x<vocab>"
  // (the aligned variant), and the odd GPT-2 vocab 4096 x 50257 (unhinted).
  const std::pair<int64_t, int64_t> shapes[] = {{16384, 32000}, {4096, 128256}, {4096, 50257}};
  std::vector<CrossEntropyJob> jobs;
  for (const auto& sh : shapes)
    for (const kpack_dtype t : im.dtypes())
      jobs.push_back({fmt("%" PRId64 "x%" PRId64, sh.first, sh.second), sh.first, sh.second, t});
  bench_cross_entropy(ctx, im, jobs);
}

// ---- Driver ------------------------------------------------------------------------

struct Bench {
  const char* name;
  void (*fn)(Ctx&);
};

// In this order: the CUDA templates, then their Triton twins.
const Bench kBenches[] = {
    {"vector_add", bench_vector_add_cuda},
    {"giou_loss", bench_giou_cuda},
    {"attention_mask_fill", bench_mask_cuda},
    {"softmax", bench_softmax_cuda},
    {"cross_entropy", bench_cross_entropy_cuda},
    {"vector_add_triton", bench_vector_add_triton},
    {"giou_loss_triton", bench_giou_triton},
    {"attention_mask_fill_triton", bench_mask_triton},
    {"softmax_triton", bench_softmax_triton},
    {"cross_entropy_triton", bench_cross_entropy_triton},
};

[[noreturn]] void usage(int status) {
  std::fprintf(stderr,
               "usage: kpack_throughput_bench [--quick] [--kernel NAME[,NAME...]] [--mem-gib N]\n"
               "  --quick       %d timed batches per measurement instead of %d\n"
               "  --kernel      only these kernels (repeatable): vector_add, giou_loss,\n"
               "                attention_mask_fill, softmax, cross_entropy, and their Triton\n"
               "                twins vector_add_triton, giou_loss_triton,\n"
               "                attention_mask_fill_triton, softmax_triton, cross_entropy_triton\n"
               "  --mem-gib N   device memory one case may use (default 40, and at most\n"
               "                the free memory less 2 GiB)\n"
               "JSON lines on stdout; notes on stderr.  Exit 77 when there is no CUDA device.\n",
               kQuickBatches, kBatches);
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  Ctx ctx;
  std::set<std::string> only;
  double mem_gib = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      ctx.quick = true;
    } else if ((a == "--kernel" || a == "--mem-gib") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--mem-gib") {
        char* end = nullptr;
        mem_gib = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end != '\0' || !(mem_gib > 0)) usage(2);
        continue;
      }
      size_t p = 0;
      while (p <= v.size()) {
        const size_t q = std::min(v.find(',', p), v.size());
        const std::string name = v.substr(p, q - p);
        bool known = false;
        for (const Bench& b : kBenches) known |= name == b.name;
        if (!known) {
          std::fprintf(stderr, "kpack_throughput_bench: unknown kernel '%s'\n", name.c_str());
          usage(2);
        }
        only.insert(name);
        p = q + 1;
      }
    } else if (a == "--help" || a == "-h") {
      usage(0);
    } else {
      std::fprintf(stderr, "kpack_throughput_bench: unknown argument '%s'\n", a.c_str());
      usage(2);
    }
  }

  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    note(fmt("kpack_throughput_bench: skipped: no CUDA device (%s)",
             err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount returned 0"));
    return 77;
  }
  signal(SIGALRM, on_alarm);
  watch("device setup");
  ck(cudaSetDevice(0), "cudaSetDevice");
  // The kpack runtime launches on the calling thread's current context:
  // make the primary context current before the first launch.
  ck(cudaFree(nullptr), "cudaFree(0)");
  cudaDeviceProp prop;
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0, mem_khz = 0, bus_bits = 0;
  ck(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  ck(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  ck(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0), "cudaDeviceGetAttribute(MemoryClockRate)");
  ck(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0),
     "cudaDeviceGetAttribute(GlobalMemoryBusWidth)");
  // Double data rate: 2 transfers per clock over the whole bus.
  const double peak_tbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e12;
  size_t free_b = 0, total_b = 0;
  ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  const uint64_t reserve = 2 * kGiB;
  ctx.cap = std::min<uint64_t>(static_cast<uint64_t>(mem_gib * kGiB), free_b > reserve ? free_b - reserve : 0);
  ctx.l2 = static_cast<uint64_t>(prop.l2CacheSize);
  ctx.init();

  note(fmt("device 0: %s (sm_%d%d), %d SMs, L2 %.1f MiB, %.1f GiB (%.1f free), theoretical %.2f TB/s; "
           "driver %d, runtime %d; cap %.1f GiB per case%s",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, ctx.l2 / double(kMiB), total_b / double(kGiB),
           free_b / double(kGiB), peak_tbps, driver, runtime, ctx.cap / double(kGiB), ctx.quick ? "; quick" : ""));
  emit(fmt("{\"section\": \"device\", \"name\": %s, \"sm\": \"sm_%d%d\", \"sms\": %d, \"l2_bytes\": %" PRIu64
           ", \"mem_bytes\": %" PRIu64 ", \"peak_tbps\": %.4f, \"driver\": %d, \"runtime\": %d, \"cap_bytes\": %" PRIu64
           ", \"quick\": %s}",
           json_str(prop.name).c_str(), prop.major, prop.minor, prop.multiProcessorCount, ctx.l2,
           static_cast<uint64_t>(total_b), peak_tbps, driver, runtime, ctx.cap, ctx.quick ? "true" : "false"));

  // Warm up (clocks, the copy path) on the reference copy, then measure the
  // 1 GiB ceiling that the issue names.
  {
    watch("warm-up");
    const int pairs = ctx.sets_for(2 * kGiB) > 0 ? 1 : 0;
    if (pairs) {
      Arena a;
      void* s = a.alloc(kGiB);
      void* d = a.alloc(kGiB);
      if (a.ok()) {
        for (int i = 0; i < (ctx.quick ? 20 : 100); ++i)
          ck(cudaMemcpyAsync(d, s, kGiB, cudaMemcpyDeviceToDevice, ctx.stream), "cudaMemcpyAsync D2D (warm-up)");
        ctx.sync("warm-up");
      }
    }
    ctx.ceiling(2 * kGiB);
  }

  for (const Bench& b : kBenches) {
    if (!only.empty() && !only.count(b.name)) continue;
    b.fn(ctx);
  }
  alarm(0);
  ck(cudaStreamSynchronize(ctx.stream), "final cudaStreamSynchronize");
  if (ctx.failed) note("kpack_throughput_bench: some validation failed (see VALIDATION FAILED above)");
  return ctx.failed ? 1 : 0;
}
