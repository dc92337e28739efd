// reference_test.cc - the GPU test's CPU references, on hand-computed cases.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "reference.h"

namespace {

const double kInf = std::numeric_limits<double>::infinity();

kref::Giou giou_of(std::vector<double> p, std::vector<double> t) { return kref::giou(p.data(), t.data()); }

}  // namespace

TEST_CASE("giou of known boxes", "[reference]") {
  // Identical boxes: iou 1, enclose == union.
  kref::Giou g = giou_of({0, 0, 2, 3}, {0, 0, 2, 3});
  CHECK(g.valid == 1);
  CHECK(g.giou == Approx(1.0));

  // Prediction inside the target: inter 1, union 4, enclose 4.
  g = giou_of({0, 0, 1, 1}, {0, 0, 2, 2});
  CHECK(g.giou == Approx(0.25));

  // Disjoint side by side: iou 0, union 2, enclose 3 x 1.
  g = giou_of({0, 0, 1, 1}, {2, 0, 3, 1});
  CHECK(g.giou == Approx(-1.0 / 3.0));

  // Half overlap: inter 1, union 3, enclose 3 -> 1/3 - 0.
  g = giou_of({0, 0, 2, 1}, {1, 0, 3, 1});
  CHECK(g.giou == Approx(1.0 / 3.0));

  // Target bottom <= 0: invalid, giou 0 whatever the boxes.
  g = giou_of({0, -2, 1, 0}, {0, -2, 1, 0});
  CHECK(g.valid == 0);
  CHECK(g.giou == 0.0);
  g = giou_of({0, 0, 1, 1}, {0, 0, 0, 0});  // all-zero padding target
  CHECK(g.valid == 0);
  CHECK(g.giou == 0.0);

  // Degenerate (zero-area) boxes: the 1e-5 floors keep it finite.
  g = giou_of({1, 1, 1, 1}, {1, 1, 1, 1});
  CHECK(std::isfinite(g.giou));
  CHECK(g.giou == 0.0);
}

TEST_CASE("softmax rows sum to one", "[reference]") {
  const std::vector<double> x = {0.0, std::log(2.0), 0.0, std::log(4.0)};  // 1 : 2 : 1 : 4
  std::vector<double> y(x.size());
  kref::softmax(x.data(), 4, y.data());
  CHECK(y[0] == Approx(1.0 / 8));
  CHECK(y[1] == Approx(2.0 / 8));
  CHECK(y[3] == Approx(4.0 / 8));
  CHECK(y[0] + y[1] + y[2] + y[3] == Approx(1.0));

  // Shift invariance and no overflow for large logits.
  const std::vector<double> big = {1000.0, 1000.0 + std::log(2.0), 1000.0, 1000.0 + std::log(4.0)};
  std::vector<double> yb(4);
  kref::softmax(big.data(), 4, yb.data());
  for (int i = 0; i < 4; ++i) CHECK(yb[i] == Approx(y[i]));

  // -inf entries get exactly 0; a single column gets 1.
  const std::vector<double> masked = {1.0, -kInf, 1.0};
  std::vector<double> ym(3);
  kref::softmax(masked.data(), 3, ym.data());
  CHECK(ym[0] == Approx(0.5));
  CHECK(ym[1] == 0.0);
  const double one = 3.5;
  double y1 = 0;
  kref::softmax(&one, 1, &y1);
  CHECK(y1 == 1.0);
}

TEST_CASE("cross entropy of simple rows", "[reference]") {
  const std::vector<double> flat = {0, 0, 0, 0};
  CHECK(kref::cross_entropy(flat.data(), 4, 2, -100) == Approx(std::log(4.0)));

  // One-hot-ish: loss = log(1 + 2 e^-10) at the hot class, 10 + that elsewhere.
  const std::vector<double> hot = {10, 0, 0};
  CHECK(kref::cross_entropy(hot.data(), 3, 0, -100) == Approx(std::log1p(2 * std::exp(-10.0))));
  CHECK(kref::cross_entropy(hot.data(), 3, 1, -100) == Approx(10 + std::log1p(2 * std::exp(-10.0))));

  CHECK(kref::cross_entropy(hot.data(), 3, -100, -100) == 0.0);  // ignored
  CHECK(std::isnan(kref::cross_entropy(hot.data(), 3, 3, -100)));  // out of range
  CHECK(std::isnan(kref::cross_entropy(hot.data(), 3, -1, -100)));
}

TEST_CASE("ragged mask pattern", "[reference]") {
  // Request 0: q=2, kv=4 at 0; request 1: q=3, kv=2 at 10 (gap 8..9);
  // request 2 is empty.  Causal: allowed iff k <= kv - q + q_index.
  const std::vector<int8_t> m = kref::mask_fill({2, 3, 0}, {4, 2, 5}, {0, 10, 16}, true, 18);
  const std::vector<int8_t> want = {1, 1, 1, 0,  // q0: k <= 2
                                    1, 1, 1, 1,  // q1: k <= 3
                                    -1, -1,      // gap
                                    0, 0,        // q0: k <= -1 (kv < q: nothing)
                                    1, 0,        // q1: k <= 0
                                    1, 1,        // q2: k <= 1
                                    -1, -1};     // after the last block
  CHECK(m == want);

  const std::vector<int8_t> full = kref::mask_fill({2, 3, 0}, {4, 2, 5}, {0, 10, 16}, false, 18);
  for (size_t i = 0; i < full.size(); ++i) CHECK(full[i] == (want[i] < 0 ? -1 : 1));
}

TEST_CASE("f16 and bf16 conversions round to nearest even", "[reference]") {
  CHECK(kref::f32_to_f16_bits(1.0f) == 0x3c00);
  CHECK(kref::f32_to_f16_bits(-2.0f) == 0xc000);
  CHECK(kref::f32_to_f16_bits(65504.0f) == 0x7bff);      // largest finite
  CHECK(kref::f32_to_f16_bits(65520.0f) == 0x7c00);      // rounds to infinity
  CHECK(kref::f32_to_f16_bits(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(kref::f32_to_f16_bits(std::ldexp(1.0f, -25)) == 0x0000);  // tie to even: 0
  CHECK(kref::f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie to even
  CHECK(kref::f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie to even
  CHECK(kref::f32_to_f16_bits(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isnan(kref::f16_bits_to_f32(kref::f32_to_f16_bits(std::nanf("")))));
  CHECK(kref::f16_bits_to_f32(0x3555) == Approx(0.333251953125));
  CHECK(kref::f16_bits_to_f32(0x0001) == std::ldexp(1.0f, -24));

  CHECK(kref::f32_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(kref::f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // tie to even
  CHECK(kref::f32_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // tie to even
  CHECK(kref::bf16_bits_to_f32(0xff80) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(kref::bf16_bits_to_f32(kref::f32_to_bf16_bits(std::nanf("")))));

  CHECK(kref::round_to(kref::DType::F32, 0.1) == static_cast<double>(0.1f));
}

TEST_CASE("close() never accepts NaN", "[reference]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(kref::close(nan, 1.0, 1, 1));
  CHECK_FALSE(kref::close(nan, nan, 1, 1));
  CHECK_FALSE(kref::close(1.0, nan, 1, 1));
  CHECK(kref::close(-kInf, -kInf, 0, 0));
  CHECK_FALSE(kref::close(1e300, kInf, 1, 1));
  CHECK(kref::close(1.0 + 1e-6, 1.0, 1e-5, 0));
  CHECK_FALSE(kref::close(1.0 + 1e-4, 1.0, 1e-5, 0));
}
