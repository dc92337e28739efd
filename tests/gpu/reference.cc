// reference.cc - see reference.h.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kref {

size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00u;
  if (std::isinf(f)) return sign | 0x7c00u;
  const double a = std::fabs(static_cast<double>(f));
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal (or zero): units of 2^-24.  A result of 0x400 is the
    // smallest normal, which the same bits encode.
    return sign | static_cast<uint16_t>(std::nearbyint(a * std::ldexp(1.0, 24)));
  }
  int e;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // a = (1 + q/1024) * 2^(e-1); ties to even via nearbyint (default mode).
  double q = std::nearbyint((m * 2.0 - 1.0) * 1024.0);
  int exp = e - 1;
  if (q >= 1024.0) {
    q = 0.0;
    ++exp;
  }
  if (exp > 15) return sign | 0x7c00u;  // overflow (and infinity)
  return sign | static_cast<uint16_t>(((exp + 15) << 10) | static_cast<int>(q));
}

float f16_bits_to_f32(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  double v;
  if (e == 0) {
    v = std::ldexp(static_cast<double>(m), -24);
  } else if (e == 31) {
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(1.0 + m / 1024.0, e - 15);
  }
  return static_cast<float>((h & 0x8000u) ? -v : v);
}

uint16_t f32_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even on the low half
  return static_cast<uint16_t>(x >> 16);
}

float bf16_bits_to_f32(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void encode(DType t, double v, void* buf, size_t i) {
  switch (t) {
    case DType::F32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DType::F16: static_cast<uint16_t*>(buf)[i] = f32_to_f16_bits(static_cast<float>(v)); break;
    case DType::BF16: static_cast<uint16_t*>(buf)[i] = f32_to_bf16_bits(static_cast<float>(v)); break;
  }
}

double decode(DType t, const void* buf, size_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(buf)[i];
    case DType::F16: return f16_bits_to_f32(static_cast<const uint16_t*>(buf)[i]);
    case DType::BF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(buf)[i]);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double round_to(DType t, double v) {
  unsigned char tmp[4];
  encode(t, v, tmp, 0);
  return decode(t, tmp, 0);
}

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return false;
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

Giou giou(const double p[4], const double t[4]) {
  const double area_p = (p[2] - p[0]) * (p[3] - p[1]);
  const double area_t = (t[2] - t[0]) * (t[3] - t[1]);
  const double iw = std::fmax(std::fmin(p[2], t[2]) - std::fmax(p[0], t[0]), 0.0);
  const double ih = std::fmax(std::fmin(p[3], t[3]) - std::fmax(p[1], t[1]), 0.0);
  const double inter = iw * ih;
  const double uni = area_p + area_t - inter;
  const double iou = inter / std::fmax(uni, 1e-5);
  const double ew = std::fmax(std::fmax(p[2], t[2]) - std::fmin(p[0], t[0]), 0.0);
  const double eh = std::fmax(std::fmax(p[3], t[3]) - std::fmin(p[1], t[1]), 0.0);
  const double enclose = ew * eh;
  const double g = iou - (enclose - uni) / std::fmax(enclose, 1e-5);
  const bool valid = t[3] > 0.0;
  return {valid ? g : 0.0, static_cast<uint8_t>(valid ? 1 : 0)};
}

std::vector<int8_t> mask_fill(const std::vector<int32_t>& q_len, const std::vector<int32_t>& kv_len,
                              const std::vector<int64_t>& offsets, bool causal, size_t size) {
  std::vector<int8_t> out(size, -1);
  for (size_t r = 0; r < q_len.size(); ++r) {
    const int64_t ql = q_len[r], kl = kv_len[r];
    if (ql <= 0 || kl <= 0) continue;
    for (int64_t q = 0; q < ql; ++q) {
      for (int64_t k = 0; k < kl; ++k) {
        const bool allowed = !causal || k <= kl - ql + q;
        out[static_cast<size_t>(offsets[r] + q * kl + k)] = allowed ? 1 : 0;
      }
    }
  }
  return out;
}

void softmax(const double* x, int64_t n, double* out) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i] - m) / s;
}

double cross_entropy(const double* x, int64_t n, int64_t target, int64_t ignore_index) {
  if (target == ignore_index) return 0.0;
  if (target < 0 || target >= n) return std::numeric_limits<double>::quiet_NaN();
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  return m + std::log(s) - x[target];
}

}  // namespace kref
