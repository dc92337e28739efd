// gpu_test.cc - runs every built specialization of the bundled kernels on
// the GPU and compares the results with the double-precision references in
// reference.h.
//
//   gpu_test            # fresh random inputs; the seed is printed
//   KPACK_GPU_TEST_SEED=123 gpu_test   # reproduce a run
//
// Every specialization is reached through its dispatcher by iterating the
// generated kernels_<kernel>_configs[] arrays; a sample is also launched
// through the typed launchers, and unbuilt constexpr values must give
// KPACK_ERROR_NO_SPECIALIZATION.  Outputs are poisoned with 0xFF bytes (NaN
// for every float type) and surrounded by poisoned guard bytes, so an
// element that is not written, or a write outside the output, fails.
//
// Prints one line per specialization (and launch path) and a final line
// "N passed, M failed"; exits 1 on any failure and 77 (Meson's "skipped")
// when there is no CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels.h"
#include "reference.h"

namespace {

using kref::DType;

// ---- Plumbing ---------------------------------------------------------------

[[noreturn]] void die(const char* what, cudaError_t err) {
  std::printf("FATAL %s: %s (%s)\n", what, cudaGetErrorName(err), cudaGetErrorString(err));
  std::printf("0 passed, 1 failed\n");
  std::exit(1);
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) die(what, err);
}

DType to_ref(kpack_dtype t) {
  switch (t) {
    case KPACK_DTYPE_F16: return DType::F16;
    case KPACK_DTYPE_BF16: return DType::BF16;
    default: return DType::F32;
  }
}

// The poison byte: 0xFF..FF is a NaN in f32, f16 and bf16, and 255 is not a
// valid u8 flag.
constexpr unsigned char kPoison = 0xff;
// Guard bytes on each side of every buffer (also keeps the user region's
// alignment under control: the allocation is 256-byte aligned).
constexpr size_t kGuard = 256;

// A device buffer whose user region starts `offset` bytes past a 256-byte
// boundary and is surrounded by poisoned guard bytes.
class DevBuf {
 public:
  DevBuf(size_t bytes, size_t offset = 0) : bytes_(bytes), offset_(offset) {
    total_ = kGuard + offset + bytes + kGuard;
    cuda_check(cudaMalloc(&base_, total_), "cudaMalloc");
    cuda_check(cudaMemset(base_, kPoison, total_), "cudaMemset");
    // cudaMemset runs on the legacy default stream, which the test's
    // non-blocking stream does not wait for: finish it before any launch.
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after poisoning");
  }
  ~DevBuf() { cudaFree(base_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;

  void* get() const { return static_cast<unsigned char*>(base_) + kGuard + offset_; }
  template <typename P>
  P* as() const {
    return static_cast<P*>(get());
  }

  void upload(const void* host) {
    cuda_check(cudaMemcpy(get(), host, bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    // A pageable H2D copy may return before its DMA lands (see above).
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after upload");
  }
  // Downloads the user region into `host` (bytes_ bytes); returns false when
  // any byte outside it (guards, alignment offset) lost its poison.
  bool download(void* host) const {
    std::vector<unsigned char> all(total_);
    cuda_check(cudaMemcpy(all.data(), base_, total_, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    std::memcpy(host, all.data() + kGuard + offset_, bytes_);
    for (size_t i = 0; i < kGuard + offset_; ++i)
      if (all[i] != kPoison) return false;
    for (size_t i = kGuard + offset_ + bytes_; i < total_; ++i)
      if (all[i] != kPoison) return false;
    return true;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_, offset_, total_;
};

// Failures of one specialization; keeps the first few messages.
struct Check {
  int cases = 0;
  int errors = 0;
  std::string detail;
  void fail(const std::string& msg) {
    if (errors++ < 6) detail += "\n    " + msg;
  }
};

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

struct Ctx {
  std::mt19937_64 rng;
  cudaStream_t stream = nullptr;
  int passed = 0;
  int failed = 0;

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

  void report(const std::string& name, const Check& c) {
    if (c.errors == 0) {
      ++passed;
      std::printf("PASS %s (%d cases)\n", name.c_str(), c.cases);
    } else {
      ++failed;
      std::printf("FAIL %s (%d errors in %d cases)%s\n", name.c_str(), c.errors, c.cases, c.detail.c_str());
    }
    std::fflush(stdout);
  }
};

// Runs a launch and waits for it; a launcher error is a test failure, a
// device fault is fatal (the context is gone).
bool launched(Ctx& ctx, Check& c, const std::string& what, kpack_status st) {
  if (st != KPACK_SUCCESS) {
    c.fail(fmt("%s: launcher returned %s: %s", what.c_str(), kpack_status_name(st), kpack_last_error_detail()));
    return false;
  }
  const cudaError_t err = cudaStreamSynchronize(ctx.stream);
  if (err != cudaSuccess) {
    std::printf("FATAL %s: %s\n", what.c_str(), cudaGetErrorString(err));
    std::printf("%d passed, %d failed\n", ctx.passed, ctx.failed + 1);
    std::exit(1);
  }
  return true;
}

// Per-dtype relative tolerance for outputs rounded to the dtype, and the
// absolute floor below which f16 subnormals have fewer bits.
double rtol(DType t) { return t == DType::F32 ? 1e-5 : t == DType::F16 ? 1e-3 : 1e-2; }
double subnormal_atol(DType t) { return t == DType::F16 ? std::ldexp(1.0, -24) : 0.0; }

// Random values rounded to the dtype, so the reference sees exactly the
// device's inputs.
std::vector<unsigned char> random_tensor(Ctx& ctx, DType t, size_t n, double lo, double hi,
                                         std::vector<double>* values) {
  std::vector<unsigned char> raw(n * kref::dtype_size(t));
  values->resize(n);
  for (size_t i = 0; i < n; ++i) {
    kref::encode(t, ctx.uniform(lo, hi), raw.data(), i);
    (*values)[i] = kref::decode(t, raw.data(), i);
  }
  return raw;
}

// ---- vector_add -------------------------------------------------------------

using VectorAddFn = std::function<kpack_status(cudaStream_t, const void*, const void*, void*, int64_t)>;

void test_vector_add(Ctx& ctx, DType t, const VectorAddFn& launch, Check& c) {
  struct Case {
    int64_t n;
    size_t ox, oy, oo;  // offsets in elements from a 256-byte boundary
  };
  const std::vector<Case> cases = {
      {0, 0, 0, 0},        {1, 0, 0, 0},         {7, 0, 0, 0},        {8, 0, 0, 0},
      {9, 0, 0, 0},        {255, 0, 0, 0},       {4097, 0, 0, 0},     {(1 << 21) + 5, 0, 0, 0},
      {1, 1, 1, 1},        {7, 1, 1, 1},         {4097, 1, 1, 1},     {(1 << 20) + 3, 3, 3, 3},
      {7, 1, 0, 2},        {4097, 0, 1, 0},      {65549, 2, 1, 0},
  };
  const size_t es = kref::dtype_size(t);
  for (const Case& k : cases) {
    ++c.cases;
    const std::string what = fmt("n=%" PRId64 " offsets=(%zu,%zu,%zu)", k.n, k.ox, k.oy, k.oo);
    std::vector<double> x, y;
    const auto hx = random_tensor(ctx, t, k.n, -4, 4, &x);
    const auto hy = random_tensor(ctx, t, k.n, -4, 4, &y);
    DevBuf dx(k.n * es, k.ox * es), dy(k.n * es, k.oy * es), dout(k.n * es, k.oo * es);
    dx.upload(hx.data());
    dy.upload(hy.data());
    if (!launched(ctx, c, what, launch(ctx.stream, dx.get(), dy.get(), dout.get(), k.n))) continue;
    std::vector<unsigned char> out(k.n * es);
    if (!dout.download(out.data())) c.fail(what + ": wrote outside out[0, n)");
    for (int64_t i = 0; i < k.n; ++i) {
      const double got = kref::decode(t, out.data(), i);
      const double want = kref::round_to(t, x[i] + y[i]);
      if (!kref::close(got, want, rtol(t), 1e-30)) {
        c.fail(fmt("%s: out[%" PRId64 "] = %.9g, want %.9g", what.c_str(), i, got, want));
        break;
      }
    }
  }

  // In place: out == x.
  ++c.cases;
  const int64_t n = 10007;
  std::vector<double> x, y;
  const auto hx = random_tensor(ctx, t, n, -4, 4, &x);
  const auto hy = random_tensor(ctx, t, n, -4, 4, &y);
  DevBuf dx(n * es), dy(n * es);
  dx.upload(hx.data());
  dy.upload(hy.data());
  if (launched(ctx, c, "in place", launch(ctx.stream, dx.get(), dy.get(), dx.get(), n))) {
    std::vector<unsigned char> out(n * es);
    dx.download(out.data());
    for (int64_t i = 0; i < n; ++i) {
      const double got = kref::decode(t, out.data(), i);
      const double want = kref::round_to(t, x[i] + y[i]);
      if (!kref::close(got, want, rtol(t), 1e-30)) {
        c.fail(fmt("in place n=%" PRId64 ": x[%" PRId64 "] = %.9g, want %.9g", n, i, got, want));
        break;
      }
    }
  }
}

// ---- giou_loss --------------------------------------------------------------

using GiouFn = std::function<kpack_status(cudaStream_t, const void*, const void*, void*, uint8_t*, int64_t)>;

void test_giou(Ctx& ctx, DType t, const GiouFn& launch, Check& c) {
  struct Case {
    int64_t boxes;
    size_t oin, oout;  // element offsets of preds/targets and of giou/valid
  };
  const std::vector<Case> cases = {{1, 0, 0},    {2, 0, 0},    {3, 0, 0},     {7, 0, 0},
                                   {256, 0, 0},  {1001, 0, 0}, {65539, 0, 0}, {(1 << 19) + 1, 0, 0},
                                   {1001, 1, 0}, {1001, 0, 1}, {333, 4, 3}};
  const size_t es = kref::dtype_size(t);
  for (const Case& k : cases) {
    ++c.cases;
    const std::string what = fmt("boxes=%" PRId64 " offsets=(%zu,%zu)", k.boxes, k.oin, k.oout);
    const size_t nc = static_cast<size_t>(k.boxes) * 4;
    std::vector<unsigned char> hp(nc * es), ht(nc * es);
    std::vector<double> p(nc), tg(nc);
    for (int64_t b = 0; b < k.boxes; ++b) {
      double tb[4] = {0, 0, 0, 0};
      if (ctx.uniform(0, 1) > 0.15) {  // else an all-zero padding target (invalid)
        tb[0] = ctx.uniform(-20, 100);
        tb[1] = ctx.uniform(-20, 100);  // bottom can be <= 0: invalid
        tb[2] = tb[0] + ctx.uniform(0.5, 60);
        tb[3] = tb[1] + ctx.uniform(0.5, 60);
      }
      double pb[4];
      if (ctx.uniform(0, 1) < 0.7) {  // overlapping prediction
        for (int i = 0; i < 4; ++i) pb[i] = tb[i] + ctx.uniform(-5, 5);
      } else {
        pb[0] = ctx.uniform(-20, 100);
        pb[1] = ctx.uniform(-20, 100);
        pb[2] = pb[0] + ctx.uniform(0.5, 60);
        pb[3] = pb[1] + ctx.uniform(0.5, 60);
      }
      for (int i = 0; i < 4; ++i) {
        const size_t j = static_cast<size_t>(b) * 4 + i;
        kref::encode(t, pb[i], hp.data(), j);
        kref::encode(t, tb[i], ht.data(), j);
        p[j] = kref::decode(t, hp.data(), j);
        tg[j] = kref::decode(t, ht.data(), j);
      }
    }
    DevBuf dp(nc * es, k.oin * es), dt(nc * es, k.oin * es);
    DevBuf dg(k.boxes * es, k.oout * es), dv(k.boxes, k.oout);
    dp.upload(hp.data());
    dt.upload(ht.data());
    if (!launched(ctx, c, what, launch(ctx.stream, dp.get(), dt.get(), dg.get(), dv.as<uint8_t>(), k.boxes)))
      continue;
    std::vector<unsigned char> g(k.boxes * es), v(k.boxes);
    if (!dg.download(g.data())) c.fail(what + ": wrote outside giou[0, boxes)");
    if (!dv.download(v.data())) c.fail(what + ": wrote outside valid[0, boxes)");
    for (int64_t b = 0; b < k.boxes; ++b) {
      const kref::Giou want = kref::giou(&p[b * 4], &tg[b * 4]);
      const double got = kref::decode(t, g.data(), b);
      if (v[b] != want.valid) {
        c.fail(fmt("%s: valid[%" PRId64 "] = %d, want %d", what.c_str(), b, v[b], want.valid));
        break;
      }
      // giou is in [-1, 1]: the tolerance is relative to max(1, |giou|).
      if (!kref::close(got, want.giou, rtol(t), rtol(t))) {
        c.fail(fmt("%s: giou[%" PRId64 "] = %.9g, want %.9g", what.c_str(), b, got, want.giou));
        break;
      }
    }
  }
}

// ---- attention_mask_fill ----------------------------------------------------

using MaskFn = std::function<kpack_status(cudaStream_t, const int32_t*, const int32_t*, const int64_t*, void*,
                                          int32_t, int32_t, int32_t)>;

uint32_t masked_bits(DType t) { return t == DType::F32 ? 0xff800000u : t == DType::F16 ? 0xfc00u : 0xff80u; }

void test_mask(Ctx& ctx, DType t, bool causal, const MaskFn& launch, Check& c) {
  struct Case {
    const char* name;
    std::vector<int32_t> q, kv;
    bool gaps;         // random gaps between the requests' blocks
    size_t offset;     // mask pointer offset in elements
    int grid_divisor;  // pass max_q_len / d, max_kv_len / d: grid too small
  };
  std::vector<Case> cases;
  cases.push_back({"single", {1}, {1}, false, 0, 1});
  {
    Case k{"mixed", {}, {}, false, 0, 1};
    for (int i = 0; i < 9; ++i) {
      k.q.push_back(static_cast<int32_t>(ctx.integer(0, 20)));
      k.kv.push_back(static_cast<int32_t>(ctx.integer(0, 300)));
    }
    k.q.push_back(9);  // kv < q: the first rows are fully masked
    k.kv.push_back(4);
    k.q.push_back(3);
    k.kv.push_back(1);
    cases.push_back(k);
    k.name = "mixed+gaps";
    k.gaps = true;
    cases.push_back(k);
    k.name = "mixed+unaligned";
    k.gaps = false;
    k.offset = 1;
    cases.push_back(k);
  }
  {
    Case k{"decode", {}, {}, false, 0, 1};
    for (int i = 0; i < 33; ++i) {
      k.q.push_back(1);
      k.kv.push_back(static_cast<int32_t>(ctx.integer(1, 5000)));
    }
    cases.push_back(k);
  }
  {
    Case k{"tree-verify", {}, {}, true, 3, 1};
    for (int i = 0; i < 17; ++i) {
      k.q.push_back(5);
      k.kv.push_back(static_cast<int32_t>(ctx.integer(5, 2000)));
    }
    cases.push_back(k);
  }
  {
    // Several batches of 512 requests, with requests of many work
    // items among small ones (and empty ones) on both sides of a batch edge.
    Case k{"ragged 2100", {}, {}, true, 1, 1};
    for (int i = 0; i < 2100; ++i) {
      const bool big = i % 300 == 17 || i == 511 || i == 512 || i == 1023 || i == 1024;
      k.q.push_back(big ? static_cast<int32_t>(ctx.integer(200, 400)) : static_cast<int32_t>(ctx.integer(0, 4)));
      k.kv.push_back(big ? static_cast<int32_t>(ctx.integer(600, 1200)) : static_cast<int32_t>(ctx.integer(0, 50)));
    }
    cases.push_back(k);
  }
  cases.push_back({"prefill", {700, 300, 1}, {700, 1500, 4097}, false, 0, 1});
  cases.push_back({"prefill+small-grid", {700, 300, 1}, {700, 1500, 4097}, false, 1, 7});
  {
    // 137 batches of 512 requests, one row of blocks each.  (A grid.y past
    // 65535 rows, where rows loop over batches, needs 33M requests: not run.)
    Case k{"70000 requests", std::vector<int32_t>(70000, 1), std::vector<int32_t>(70000, 3), false, 0, 1};
    k.q[69999] = 2;
    cases.push_back(k);
  }

  const size_t es = kref::dtype_size(t);
  for (const Case& k : cases) {
    ++c.cases;
    const std::string what = fmt("%s (%zu requests, offset %zu)", k.name, k.q.size(), k.offset);
    const size_t nr = k.q.size();
    std::vector<int64_t> off(nr);
    int64_t total = 0;
    int32_t max_q = 0, max_kv = 0;
    for (size_t r = 0; r < nr; ++r) {
      if (k.gaps) total += ctx.integer(0, 9);
      off[r] = total;
      total += static_cast<int64_t>(std::max(k.q[r], 0)) * std::max(k.kv[r], 0);
      max_q = std::max(max_q, k.q[r]);
      max_kv = std::max(max_kv, k.kv[r]);
    }
    if (k.gaps) total += ctx.integer(0, 9);
    const std::vector<int8_t> want = kref::mask_fill(k.q, k.kv, off, causal, total);

    DevBuf dq(nr * 4), dkv(nr * 4), doff(nr * 8), dm(total * es, k.offset * es);
    dq.upload(k.q.data());
    dkv.upload(k.kv.data());
    doff.upload(off.data());
    const int32_t gq = std::max(1, max_q / k.grid_divisor), gkv = std::max(1, max_kv / k.grid_divisor);
    if (!launched(ctx, c, what,
                  launch(ctx.stream, dq.as<int32_t>(), dkv.as<int32_t>(), doff.as<int64_t>(), dm.get(),
                         static_cast<int32_t>(nr), gq, gkv)))
      continue;
    std::vector<unsigned char> m(total * es);
    if (!dm.download(m.data())) c.fail(what + ": wrote outside the mask buffer");
    const uint32_t poison = es == 4 ? 0xffffffffu : 0xffffu;
    for (int64_t i = 0; i < total; ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, m.data() + i * es, es);
      const uint32_t expect = want[i] < 0 ? poison : want[i] ? 0u : masked_bits(t);
      if (bits != expect) {
        c.fail(fmt("%s: mask[%" PRId64 "] = 0x%x, want 0x%x (%s)", what.c_str(), i, bits, expect,
                   want[i] < 0 ? "untouched gap" : want[i] ? "allowed" : "masked"));
        break;
      }
    }
  }
}

// ---- softmax ------------------------------------------------------------------

using SoftmaxFn = std::function<kpack_status(cudaStream_t, const void*, void*, int64_t, int64_t, int64_t, int64_t)>;

void test_softmax(Ctx& ctx, DType t, const SoftmaxFn& launch, Check& c) {
  struct Case {
    int64_t rows, cols, in_pad, out_pad;  // row stride = cols + pad
    double neg_inf_fraction;              // entries set to -inf (masked logits)
    bool in_place;
  };
  const std::vector<Case> cases = {
      {1, 1, 0, 0, 0, false},       {3, 7, 0, 0, 0, false},       {4, 8, 0, 0, 0, false},
      {5, 100, 3, 1, 0, false},     {37, 1000, 0, 0, 0, false},   {11, 1000, 1, 0, 0.9, false},
      {9, 1024, 0, 0, 0, false},    {9, 2048, 1, 0, 0, false},    {3, 2049, 0, 5, 0, false},
      {4, 4099, 0, 0, 0, false},    {2, 8193, 2, 2, 0, false},    {2, 16391, 0, 0, 0, false},
      {2, 20000, 0, 3, 0.9, false}, {2, 32771, 1, 1, 0, false},   {1, 70001, 0, 0, 0, false},
      {6, 3000, 0, 0, 0, true},     {40, 513, 0, 0, 0, true},
      // Several rows per group size (8 to 128 threads a row), with a
      // partial last block: 200 / 500 / 1000 / 3000 / 4096 columns.
      {21, 200, 1, 3, 0, false},    {33, 500, 0, 0, 0.5, true},   {19, 3000, 2, 0, 0, false},
      {13, 4096, 0, 0, 0, false},   {5, 4096, 8, 8, 0, false},
  };
  const size_t es = kref::dtype_size(t);
  for (const Case& k : cases) {
    ++c.cases;
    const std::string what = fmt("rows=%" PRId64 " cols=%" PRId64 " strides=(%" PRId64 ",%" PRId64 ")%s%s", k.rows,
                                 k.cols, k.cols + k.in_pad, k.cols + k.out_pad,
                                 k.neg_inf_fraction > 0 ? " with -inf" : "", k.in_place ? " in place" : "");
    const int64_t sin = k.cols + k.in_pad, sout = k.in_place ? sin : k.cols + k.out_pad;
    const size_t nin = static_cast<size_t>(k.rows - 1) * sin + k.cols;
    const size_t nout = static_cast<size_t>(k.rows - 1) * sout + k.cols;
    std::vector<double> x;
    auto hx = random_tensor(ctx, t, nin, -8, 8, &x);
    if (k.neg_inf_fraction > 0) {
      for (int64_t r = 0; r < k.rows; ++r) {
        for (int64_t j = 1; j < k.cols; ++j) {  // keep column 0 finite
          if (ctx.uniform(0, 1) < k.neg_inf_fraction) {
            kref::encode(t, -std::numeric_limits<double>::infinity(), hx.data(), r * sin + j);
            x[r * sin + j] = -std::numeric_limits<double>::infinity();
          }
        }
      }
    }
    DevBuf din(nin * es);
    din.upload(hx.data());
    DevBuf dout(k.in_place ? 0 : nout * es);
    void* out = k.in_place ? din.get() : dout.get();
    if (!launched(ctx, c, what, launch(ctx.stream, din.get(), out, k.rows, k.cols, sin, sout))) continue;
    std::vector<unsigned char> o(nout * es);
    if (!(k.in_place ? din : dout).download(o.data())) c.fail(what + ": wrote outside out");
    std::vector<double> want(k.cols);
    bool bad = false;
    for (int64_t r = 0; r < k.rows && !bad; ++r) {
      kref::softmax(&x[r * sin], k.cols, want.data());
      for (int64_t j = 0; j < k.cols; ++j) {
        const double got = kref::decode(t, o.data(), r * sout + j);
        if (!kref::close(got, want[j], rtol(t), subnormal_atol(t))) {
          c.fail(fmt("%s: out[%" PRId64 ", %" PRId64 "] = %.9g, want %.9g", what.c_str(), r, j, got, want[j]));
          bad = true;
          break;
        }
      }
      // The padding between output rows must keep its poison.
      for (int64_t j = k.cols; j < sout && r + 1 < k.rows && !k.in_place && !bad; ++j) {
        if (!std::isnan(kref::decode(t, o.data(), r * sout + j))) {
          c.fail(fmt("%s: wrote padding out[%" PRId64 ", %" PRId64 "]", what.c_str(), r, j));
          bad = true;
        }
      }
    }
  }
}

// ---- cross_entropy ------------------------------------------------------------

using CrossEntropyFn =
    std::function<kpack_status(cudaStream_t, const void*, const int64_t*, float*, int64_t, int64_t, int64_t, int64_t)>;

void test_cross_entropy(Ctx& ctx, DType t, const CrossEntropyFn& launch, Check& c) {
  struct Case {
    int64_t rows, vocab, pad;  // row stride = vocab + pad
  };
  const std::vector<Case> cases = {{1, 1, 0},    {5, 10, 3},   {7, 1000, 0},   {33, 1024, 1},     {4, 2049, 0},
                                   {9, 2048, 0}, {6, 32000, 0}, {2, 128256, 5}, {3, 70001, 0},
                                   // Several rows per group size, partial last block.
                                   {70, 100, 0}, {45, 700, 2}, {17, 3000, 1}, {13, 4096, 0}};
  const int64_t ignore_index = -100;
  const size_t es = kref::dtype_size(t);
  for (const Case& k : cases) {
    ++c.cases;
    const std::string what = fmt("rows=%" PRId64 " vocab=%" PRId64 " stride=%" PRId64, k.rows, k.vocab, k.vocab + k.pad);
    const int64_t stride = k.vocab + k.pad;
    const size_t n = static_cast<size_t>(k.rows - 1) * stride + k.vocab;
    std::vector<double> x;
    const auto hx = random_tensor(ctx, t, n, -8, 8, &x);
    std::vector<int64_t> tgt(k.rows);
    for (int64_t r = 0; r < k.rows; ++r) tgt[r] = ctx.uniform(0, 1) < 0.2 ? ignore_index : ctx.integer(0, k.vocab - 1);
    DevBuf dx(n * es), dt(k.rows * 8), dl(k.rows * 4);
    dx.upload(hx.data());
    dt.upload(tgt.data());
    if (!launched(ctx, c, what, launch(ctx.stream, dx.get(), dt.as<int64_t>(), dl.as<float>(), k.rows, k.vocab, stride,
                                       ignore_index)))
      continue;
    std::vector<float> loss(k.rows);
    if (!dl.download(loss.data())) c.fail(what + ": wrote outside loss[0, rows)");
    for (int64_t r = 0; r < k.rows; ++r) {
      const double want = kref::cross_entropy(&x[r * stride], k.vocab, tgt[r], ignore_index);
      // The loss is f32 for every T and computed from exact inputs.
      if (!kref::close(loss[r], want, 1e-5, 1e-5)) {
        c.fail(fmt("%s: loss[%" PRId64 "] = %.9g, want %.9g (target %" PRId64 ")", what.c_str(), r, loss[r], want,
                   tgt[r]));
        break;
      }
    }
  }
}

// ---- Driving the generated API --------------------------------------------

void expect_no_specialization(Ctx& ctx, const std::string& what, kpack_status st) {
  Check c;
  c.cases = 1;
  if (st != KPACK_ERROR_NO_SPECIALIZATION)
    c.fail(fmt("returned %s, want KPACK_ERROR_NO_SPECIALIZATION", kpack_status_name(st)));
  ctx.report("unbuilt " + what, c);
}

std::string block_name(const char* kernel, kpack_dtype t, int block) {
  return fmt("%s_%s_b%d", kernel, kpack_dtype_name(t), block);
}

void run_all(Ctx& ctx) {
  // vector_add: every config through the dispatcher.
  for (size_t i = 0; i < KERNELS_VECTOR_ADD_NUM_CONFIGS; ++i) {
    const kernels_vector_add_config cfg = kernels_vector_add_configs[i];
    Check c;
    test_vector_add(ctx, to_ref(cfg.T), [&](cudaStream_t s, const void* x, const void* y, void* o, int64_t n) {
      return kernels_vector_add(s, cfg.T, cfg.BLOCK, x, y, o, n);
    }, c);
    ctx.report(block_name("vector_add", cfg.T, cfg.BLOCK) + " [dispatcher]", c);
  }
  for (size_t i = 0; i < KERNELS_GIOU_LOSS_NUM_CONFIGS; ++i) {
    const kernels_giou_loss_config cfg = kernels_giou_loss_configs[i];
    Check c;
    test_giou(ctx, to_ref(cfg.T), [&](cudaStream_t s, const void* p, const void* tg, void* g, uint8_t* v, int64_t n) {
      return kernels_giou_loss(s, cfg.T, cfg.BLOCK, p, tg, g, v, n);
    }, c);
    ctx.report(block_name("giou_loss", cfg.T, cfg.BLOCK) + " [dispatcher]", c);
  }
  for (size_t i = 0; i < KERNELS_ATTENTION_MASK_FILL_NUM_CONFIGS; ++i) {
    const kernels_attention_mask_fill_config cfg = kernels_attention_mask_fill_configs[i];
    const bool causal = cfg.CAUSAL != 0;
    Check c;
    test_mask(ctx, to_ref(cfg.T), causal,
              [&](cudaStream_t s, const int32_t* q, const int32_t* kv, const int64_t* off, void* m, int32_t nr,
                  int32_t mq, int32_t mkv) {
                return kernels_attention_mask_fill(s, cfg.T, causal ? 1 : 0, cfg.TILE, q, kv, off, m, nr, mq, mkv);
              },
              c);
    ctx.report(fmt("attention_mask_fill_%s_%s_t%d [dispatcher]", kpack_dtype_name(cfg.T),
                   causal ? "causal" : "nocausal", static_cast<int>(cfg.TILE)),
               c);
  }
  for (size_t i = 0; i < KERNELS_SOFTMAX_NUM_CONFIGS; ++i) {
    const kernels_softmax_config cfg = kernels_softmax_configs[i];
    Check c;
    test_softmax(ctx, to_ref(cfg.T), [&](cudaStream_t s, const void* in, void* out, int64_t r, int64_t n, int64_t si,
                                         int64_t so) { return kernels_softmax(s, cfg.T, cfg.BLOCK, in, out, r, n, si, so); },
                 c);
    ctx.report(block_name("softmax", cfg.T, cfg.BLOCK) + " [dispatcher]", c);
  }
  for (size_t i = 0; i < KERNELS_CROSS_ENTROPY_NUM_CONFIGS; ++i) {
    const kernels_cross_entropy_config cfg = kernels_cross_entropy_configs[i];
    Check c;
    test_cross_entropy(ctx, to_ref(cfg.T),
                       [&](cudaStream_t s, const void* x, const int64_t* tg, float* l, int64_t r, int64_t v, int64_t st,
                           int64_t ig) { return kernels_cross_entropy(s, cfg.T, cfg.BLOCK, x, tg, l, r, v, st, ig); },
                       c);
    ctx.report(block_name("cross_entropy", cfg.T, cfg.BLOCK) + " [dispatcher]", c);
  }

  // A sample of typed launchers, called directly.
  {
    Check c;
    test_vector_add(ctx, DType::F16, [](cudaStream_t s, const void* x, const void* y, void* o, int64_t n) {
      return kernels_vector_add_f16_b256(s, static_cast<const kpack_f16*>(x), static_cast<const kpack_f16*>(y),
                                         static_cast<kpack_f16*>(o), n);
    }, c);
    ctx.report("vector_add_f16_b256 [typed]", c);
  }
  {
    Check c;
    test_vector_add(ctx, DType::F32, [](cudaStream_t s, const void* x, const void* y, void* o, int64_t n) {
      return kernels_vector_add_f32_b128(s, static_cast<const float*>(x), static_cast<const float*>(y),
                                         static_cast<float*>(o), n);
    }, c);
    ctx.report("vector_add_f32_b128 [typed]", c);
  }
  {
    Check c;
    test_giou(ctx, DType::BF16, [](cudaStream_t s, const void* p, const void* tg, void* g, uint8_t* v, int64_t n) {
      return kernels_giou_loss_bf16_b256(s, static_cast<const kpack_bf16*>(p), static_cast<const kpack_bf16*>(tg),
                                         static_cast<kpack_bf16*>(g), v, n);
    }, c);
    ctx.report("giou_loss_bf16_b256 [typed]", c);
  }
  {
    Check c;
    test_mask(ctx, DType::F16, true,
              [](cudaStream_t s, const int32_t* q, const int32_t* kv, const int64_t* off, void* m, int32_t nr, int32_t mq,
                 int32_t mkv) {
                return kernels_attention_mask_fill_f16_causal_t4096(s, q, kv, off, static_cast<kpack_f16*>(m), nr, mq,
                                                                    mkv);
              },
              c);
    ctx.report("attention_mask_fill_f16_causal_t4096 [typed]", c);
  }
  {
    Check c;
    test_softmax(ctx, DType::F32, [](cudaStream_t s, const void* in, void* out, int64_t r, int64_t n, int64_t si,
                                     int64_t so) {
      return kernels_softmax_f32_b1024(s, static_cast<const float*>(in), static_cast<float*>(out), r, n, si, so);
    }, c);
    ctx.report("softmax_f32_b1024 [typed]", c);
  }
  {
    Check c;
    test_cross_entropy(ctx, DType::BF16,
                       [](cudaStream_t s, const void* x, const int64_t* tg, float* l, int64_t r, int64_t v, int64_t st,
                          int64_t ig) {
                         return kernels_cross_entropy_bf16_b256(s, static_cast<const kpack_bf16*>(x), tg, l, r, v, st,
                                                                ig);
                       },
                       c);
    ctx.report("cross_entropy_bf16_b256 [typed]", c);
  }

  // Unbuilt values must be reported, never silently replaced.
  DevBuf scratch(1024);
  void* p = scratch.get();
  expect_no_specialization(ctx, "vector_add T=f32 BLOCK=512 (excluded)",
                           kernels_vector_add(ctx.stream, KPACK_DTYPE_F32, 512, p, p, p, 1));
  expect_no_specialization(ctx, "vector_add T=f64 BLOCK=256",
                           kernels_vector_add(ctx.stream, KPACK_DTYPE_F64, 256, p, p, p, 1));
  expect_no_specialization(ctx, "giou_loss T=f16 BLOCK=1024",
                           kernels_giou_loss(ctx.stream, KPACK_DTYPE_F16, 1024, p, p, p, static_cast<uint8_t*>(p), 1));
  expect_no_specialization(ctx, "attention_mask_fill T=f16 CAUSAL=1 TILE=1234",
                           kernels_attention_mask_fill(ctx.stream, KPACK_DTYPE_F16, 1, 1234, static_cast<int32_t*>(p),
                                                       static_cast<int32_t*>(p), static_cast<int64_t*>(p), p, 1, 1, 1));
  expect_no_specialization(ctx, "softmax T=f16 BLOCK=384",
                           kernels_softmax(ctx.stream, KPACK_DTYPE_F16, 384, p, p, 1, 1, 1, 1));
  expect_no_specialization(ctx, "cross_entropy T=u8 BLOCK=256",
                           kernels_cross_entropy(ctx.stream, KPACK_DTYPE_U8, 256, p, static_cast<int64_t*>(p),
                                                 static_cast<float*>(p), 1, 1, 1, -100));

  // The package enumerates exactly the configs of its kernels: the CUDA
  // ones above, their Triton twins (tests/gpu/triton_parity.py) and the
  // compute-bound three (bench/compute/kpack_compute_bench.py).
  {
    Check c;
    c.cases = 1;
    const size_t want = KERNELS_VECTOR_ADD_NUM_CONFIGS + KERNELS_GIOU_LOSS_NUM_CONFIGS +
                        KERNELS_ATTENTION_MASK_FILL_NUM_CONFIGS + KERNELS_SOFTMAX_NUM_CONFIGS +
                        KERNELS_CROSS_ENTROPY_NUM_CONFIGS + KERNELS_VECTOR_ADD_TRITON_NUM_CONFIGS +
                        KERNELS_GIOU_LOSS_TRITON_NUM_CONFIGS + KERNELS_ATTENTION_MASK_FILL_TRITON_NUM_CONFIGS +
                        KERNELS_SOFTMAX_TRITON_NUM_CONFIGS + KERNELS_CROSS_ENTROPY_TRITON_NUM_CONFIGS +
                        KERNELS_MATMUL_TRITON_NUM_CONFIGS + KERNELS_ATTENTION_TRITON_NUM_CONFIGS +
                        KERNELS_GEMM_CUDA_NUM_CONFIGS;
    if (kernels_num_specializations() != want)
      c.fail(fmt("kernels_num_specializations() = %zu, want %zu", kernels_num_specializations(), want));
    ctx.report("kernels_num_specializations", c);
  }
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("gpu_test: skipped: no CUDA device (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  // The kpack runtime launches on the calling thread's current context: make
  // the primary context current before the first launch.
  cuda_check(cudaFree(nullptr), "cudaFree(0)");
  cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");

  uint64_t seed;
  if (const char* s = std::getenv("KPACK_GPU_TEST_SEED")) {
    seed = std::strtoull(s, nullptr, 0);
  } else {
    seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  std::printf("device 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  std::printf("seed: %" PRIu64 " (KPACK_GPU_TEST_SEED=%" PRIu64 " reproduces this run)\n", seed, seed);

  Ctx ctx;
  ctx.rng.seed(seed);
  cuda_check(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  run_all(ctx);
  cudaStreamDestroy(ctx.stream);

  std::printf("%d passed, %d failed\n", ctx.passed, ctx.failed);
  return ctx.failed == 0 ? 0 : 1;
}
