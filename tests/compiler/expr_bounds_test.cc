// Interval bounds of launch expressions: exact folds, the rules of each
// operator, and a randomized check of soundness against EvaluateExpr.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "expr.h"
#include "expr_bounds.h"
#include "types.h"

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

using Ranges = std::map<std::string, kpack::Interval>;
using Constants = std::map<std::string, int64_t>;

kpack::Expr Parse(const std::string& text) {
  kpack::Diagnostics diag;
  auto e = kpack::ParseExpr(text, kpack::SourceLoc{"m.yaml", 3, 10}, diag);
  INFO(text);
  REQUIRE(diag.Text() == "");
  REQUIRE(e);
  return *e;
}

kpack::ExprBindings Bindings(const Constants& constants) {
  kpack::ExprBindings b;
  b.constant = [constants](const std::string& n) -> std::optional<int64_t> {
    auto it = constants.find(n);
    if (it == constants.end()) return std::nullopt;
    return it->second;
  };
  b.size_of = [](const std::string&) -> int64_t { return 2; };
  return b;
}

kpack::NameRange RangesOf(const Ranges& ranges) {
  return [ranges](const std::string& n) -> std::optional<kpack::Interval> {
    auto it = ranges.find(n);
    if (it == ranges.end()) return std::nullopt;
    return it->second;
  };
}

kpack::Interval TypeRange(const char* type) { return *kpack::ScalarRange(*kpack::ParseScalar(type)); }

// A kernel's names: BLOCK and CAUSAL constexprs, T a dtype (sizeof 2); d a
// u32, n and m i64, flag a bool, p a pointer (ranges does not know it).
const Constants kKernelConstants = {{"BLOCK", 256}, {"CAUSAL", 1}};
const Ranges kKernelRanges = {{"d", TypeRange("u32")}, {"n", TypeRange("i64")}, {"m", TypeRange("i64")},
                              {"flag", TypeRange("bool")}};

std::string Text(const std::optional<kpack::Interval>& r) {
  if (!r) return "none";
  return std::string("[") + std::to_string(r->lo) + ", " + std::to_string(r->hi) + "]";
}

// BoundExpr of `text` as "[lo, hi]" ("none" for nullopt).
std::string Bound(const std::string& text, const Ranges& ranges = kKernelRanges,
                  const Constants& constants = kKernelConstants) {
  return Text(kpack::BoundExpr(Parse(text), Bindings(constants), RangesOf(ranges)));
}

std::string Witness(const std::string& text, const Ranges& ranges = kKernelRanges,
                    const Constants& constants = kKernelConstants) {
  return kpack::BoundWitness(Parse(text), Bindings(constants), RangesOf(ranges));
}

// The exact [min, max] of the launcher's successful values of `text`, by
// evaluating it at every point of `ranges` (small ones), "none" when every
// point fails.
std::string BruteForce(const std::string& text, const Ranges& ranges) {
  kpack::Expr e = Parse(text);
  std::vector<std::string> names;
  std::vector<kpack::Interval> intervals;
  for (const auto& [name, r] : ranges) {
    names.push_back(name);
    intervals.push_back(r);
  }
  std::vector<int64_t> point(names.size());
  std::optional<kpack::Interval> seen;
  std::function<void(size_t)> walk = [&](size_t i) {
    if (i == names.size()) {
      Constants constants;
      for (size_t k = 0; k < names.size(); ++k) constants[names[k]] = point[k];
      std::optional<int64_t> v = kpack::EvaluateExpr(e, Bindings(constants));
      if (!v) return;
      if (!seen) seen = kpack::Interval{*v, *v};
      seen->lo = std::min(seen->lo, *v);
      seen->hi = std::max(seen->hi, *v);
      return;
    }
    for (int64_t v = intervals[i].lo; v <= intervals[i].hi; ++v) {
      point[i] = v;
      walk(i + 1);
    }
  };
  walk(0);
  return Text(seen);
}

}  // namespace

TEST_CASE("bounds: constant expressions fold exactly") {
  for (const char* text :
       {"1 + 2 * 3", "BLOCK * 4", "cdiv(1000, BLOCK)", "-7 / 2", "-7 % 3", "7 % -3", "cdiv(-7, -2)",
        "cdiv(7, -2)", "floordiv(-7, 2)", "floormod(-7, 3)", "floormod(7, -3)", "gcd(-12, 18)", "gcd(0, 0)",
        "log2(1000)", "next_pow2(1000)", "next_pow2(-5)", "min(3, -4, BLOCK)", "max(3, -4, 1)", "sizeof(T)",
        "CAUSAL ? BLOCK : 64", "BLOCK == 256", "BLOCK != 256", "!CAUSAL", "-(BLOCK - 300)",
        "0 && n", "1 || n", "CAUSAL || 1 / 0", "-9223372036854775807 - 1"}) {
    INFO(text);
    std::optional<int64_t> folded = kpack::EvaluateExpr(Parse(text), Bindings(kKernelConstants));
    REQUIRE(folded);
    CHECK(Bound(text) == Text(kpack::Interval{*folded, *folded}));
    CHECK(Witness(text) == "");  // no runtime name to show
  }
  CHECK(Bound("1 + 2 * 3") == "[7, 7]");
  CHECK(Bound("cdiv(1000, BLOCK)") == "[4, 4]");
  CHECK(Bound("floormod(-7, 3)") == "[2, 2]");
  CHECK(Bound("-9223372036854775807 - 1") == "[-9223372036854775808, -9223372036854775808]");
  // A constant part beside a runtime name is still exact.
  CHECK(Bound("d + BLOCK * 2", {{"d", {0, 10}}}) == "[512, 522]");
  // Runtime values that are single values fold through the launcher's
  // semantics too, where the interval rules alone would be looser.
  CHECK(Bound("(n * 0 + 7) % 3") == "[1, 1]");
  CHECK(Bound("gcd(x, 12)", {{"x", {18, 18}}}) == "[6, 6]");
}

TEST_CASE("bounds: expressions that always fail have none") {
  CHECK(Bound("1 / 0") == "none");
  CHECK(Bound("n % 0") == "none");
  CHECK(Bound("cdiv(n, 0)") == "none");
  CHECK(Bound("log2(0)") == "none");
  CHECK(Bound("log2(-d)") == "none");  // -d <= 0
  CHECK(Bound("9223372036854775807 + 1") == "none");
  CHECK(Bound("(-9223372036854775807 - 1) / -1") == "none");
  CHECK(Bound("-(-9223372036854775807 - 1)") == "none");
  CHECK(Bound("next_pow2(4611686018427387905 + d)") == "none");  // above 2^62
  CHECK(Bound("(d + 1) * 9223372036854775807 * 2") == "none");
  // A branch that always fails contributes nothing.
  CHECK(Bound("flag ? 1 / 0 : 64") == "[64, 64]");
  CHECK(Bound("min(d, 1 / 0)") == "none");
}

TEST_CASE("bounds: a block size over a u32 parameter") {
  // d = 0 gives 0, so [0, 32] is exact: the lower bound cannot be 1.
  CHECK(Bound("cdiv(min(1024, d / 8), 32)") == "[0, 32]");
  CHECK(Witness("cdiv(min(1024, d / 8), 32)") == "d = 4294967295");
  CHECK(Bound("32 * cdiv(min(1024, d / 8), 32)") == "[0, 1024]");
  CHECK(Bound("max(32 * cdiv(min(1024, d / 8), 32), 32)") == "[32, 1024]");
  CHECK(Bound("min(n, 256)") == "[-9223372036854775808, 256]");
  CHECK(Witness("min(n, 256)") == "n = 9223372036854775807");
  CHECK(Bound("n") == "[-9223372036854775808, 9223372036854775807]");
  CHECK(Bound("max(min(n, 256), 32)") == "[32, 256]");
  CHECK(Bound("next_pow2(min(d, 1000))") == "[0, 1024]");
  CHECK(Bound("log2(max(d, 1))") == "[0, 31]");
  CHECK(Bound("min(BLOCK, d) * 4") == "[0, 1024]");
  CHECK(Witness("min(BLOCK, d) * 4") == "d = 4294967295");
  // A witness names every runtime name, at values where hi is reached.
  CHECK(Bound("d - n") == "[-9223372036854775807, 9223372036854775807]");
  CHECK(Bound("min(d, 8) + min(m, 2)") == "[-9223372036854775808, 10]");
  CHECK(Witness("min(d, 8) + min(m, 2)") == "d = 4294967295, m = 9223372036854775807");
  // Unknown names cannot be bounded.
  CHECK(Bound("q + 1") == "none");
  CHECK(Witness("q + 1") == "");
}

TEST_CASE("bounds: device attributes") {
  CHECK(Bound("device.num_sms * 4") == "[4, 4096]");
  CHECK(Witness("device.num_sms * 4") == "device.num_sms = 1024");
  CHECK(Bound("device.sm") == "[50, 200]");
  CHECK(Bound("device.max_shared_mem / 1024") == "[0, 1024]");
  CHECK(Bound("2 * device.l2_bytes") == "[0, 34359738368]");
  CHECK(Bound("min(d, device.num_sms)") == "[0, 1024]");
  CHECK(Witness("min(d, device.num_sms)") == "d = 4294967295, device.num_sms = 1024");
  CHECK(Text(kpack::DeviceAttributeRange("num_sms")) == "[1, 1024]");
  CHECK(Text(kpack::DeviceAttributeRange("l2_bytes")) == "[0, 17179869184]");
  CHECK(Text(kpack::DeviceAttributeRange("warp_size")) == "none");
  for (const std::string& name : kpack::DeviceAttributeNames()) CHECK(kpack::DeviceAttributeRange(name));
}

TEST_CASE("bounds: conditionals take only the branches the condition allows") {
  CHECK(Bound("flag ? 128 : 256") == "[128, 256]");
  CHECK(Bound("d > 0 ? 128 : 256") == "[128, 256]");
  CHECK(Bound("d >= 0 ? 128 : 256") == "[128, 128]");
  CHECK(Bound("d < 0 ? 128 : 256") == "[256, 256]");
  CHECK(Bound("d + 1 ? 128 : 256") == "[128, 128]");
  CHECK(Bound("d * 0 ? 128 : 256") == "[256, 256]");
  CHECK(Bound("flag ? d : -5") == "[-5, 4294967295]");
  // Only the evaluated branch needs known names.
  CHECK(Bound("CAUSAL ? 64 : q") == "[64, 64]");
  CHECK(Bound("d >= 0 ? 64 : q") == "[64, 64]");
  CHECK(Bound("flag ? 64 : q") == "none");
  CHECK(Bound("0 && q") == "[0, 0]");
  CHECK(Bound("d < 0 && q") == "[0, 0]");
  CHECK(Bound("flag && q") == "none");
  // NULL comparisons are 0 or 1; the pointer needs no range.
  CHECK(Bound("p != NULL ? 256 : 128") == "[128, 256]");
  CHECK(Bound("NULL == p") == "[0, 1]");
}

TEST_CASE("bounds: comparisons and logic are 0 or 1, decided where the intervals decide") {
  const Ranges r = {{"x", {0, 3}}, {"y", {5, 9}}, {"z", {-2, 7}}, {"zero", {0, 0}}};
  CHECK(Bound("x < 5", r) == "[1, 1]");
  CHECK(Bound("y < 5", r) == "[0, 0]");
  CHECK(Bound("z < 5", r) == "[0, 1]");
  CHECK(Bound("x <= 3", r) == "[1, 1]");
  CHECK(Bound("x > 3", r) == "[0, 0]");
  CHECK(Bound("y >= x", r) == "[1, 1]");
  CHECK(Bound("x == y", r) == "[0, 0]");
  CHECK(Bound("x != y", r) == "[1, 1]");
  CHECK(Bound("x == z", r) == "[0, 1]");
  CHECK(Bound("!y", r) == "[0, 0]");
  CHECK(Bound("!zero", r) == "[1, 1]");
  CHECK(Bound("!x", r) == "[0, 1]");
  CHECK(Bound("y && zero", r) == "[0, 0]");
  CHECK(Bound("y && x", r) == "[0, 1]");
  CHECK(Bound("y && y", r) == "[1, 1]");
  CHECK(Bound("zero || y", r) == "[1, 1]");
  CHECK(Bound("x || zero", r) == "[0, 1]");
  CHECK(Bound("y || 1 / 0", r) == "[1, 1]");  // never evaluates the division
  CHECK(Bound("x && 1 / 0", r) == "[0, 0]");  // x == 0 is its only success
}

TEST_CASE("bounds: division and remainders by intervals crossing zero") {
  const Ranges r = {{"x", {-10, 20}}, {"y", {-2, 3}}};
  CHECK(Bound("100 / y", r) == "[-100, 100]");
  CHECK(Bound("x / y", r) == "[-20, 20]");
  CHECK(Bound("x / y", {{"x", {-10, 20}}, {"y", {0, 0}}}) == "none");
  CHECK(Bound("x / y", {{"x", {7, 20}}, {"y", {0, 4}}}) == "[1, 20]");
  CHECK(Bound("cdiv(x, y)", {{"x", {7, 20}}, {"y", {0, 4}}}) == "[2, 20]");
  CHECK(Bound("floordiv(x, y)", {{"x", {7, 20}}, {"y", {-4, 0}}}) == "[-20, -2]");
  CHECK(Bound("x % y", r) == "[-2, 2]");
  CHECK(Bound("x % 8", {{"x", {0, 3}}}) == "[0, 3]");
  CHECK(Bound("x % 8", {{"x", {17, 20}}}) == "[1, 4]");
  CHECK(Bound("x % -8", {{"x", {-20, -17}}}) == "[-4, -1]");
  CHECK(Bound("floormod(x, y)", r) == "[-1, 2]");
  CHECK(Bound("floormod(x, 8)", {{"x", {-3, -1}}}) == "[5, 7]");
  CHECK(Bound("gcd(x, 12)", {{"x", {-5, 5}}}) == "[1, 12]");  // gcd(0, 12) is 12
  CHECK(Bound("gcd(x, 0)", {{"x", {-12, -4}}}) == "[1, 12]");  // exactly [4, 12]: looser, sound
  // Where the rules are exact, they agree with evaluating every point.
  for (const char* text : {"x / y", "cdiv(x, y)", "floordiv(x, y)", "x % y", "floormod(x, y)", "x * y", "x - y",
                           "x + y", "-x", "min(x, y)", "max(x, -y)", "x < y", "x == y", "y ? x : -x",
                           "100 / y", "cdiv(100, y)", "floordiv(-100, y)"}) {
    INFO(text);
    CHECK(Bound(text, r) == BruteForce(text, r));
  }
  CHECK(Bound("log2(x)", r) == BruteForce("log2(x)", r));
  CHECK(Bound("next_pow2(x)", r) == BruteForce("next_pow2(x)", r));
}

TEST_CASE("bounds: negative ranges") {
  const Ranges r = {{"x", {-5, -2}}, {"y", {-3, 4}}};
  CHECK(Bound("x * y", r) == "[-20, 15]");
  CHECK(Bound("-x", r) == "[2, 5]");
  CHECK(Bound("x - y", r) == "[-9, 1]");
  CHECK(Bound("x / 2", r) == "[-2, -1]");
  CHECK(Bound("cdiv(x, 2)", r) == "[-2, -1]");
  CHECK(Bound("floordiv(x, 2)", r) == "[-3, -1]");
  CHECK(Bound("x % 3", r) == "[-2, 0]");
  CHECK(Bound("floormod(x, 3)", r) == "[0, 2]");
  CHECK(Bound("log2(y)", r) == "[0, 2]");
  CHECK(Bound("log2(x)", r) == "none");
  CHECK(Bound("next_pow2(x)", r) == "[0, 0]");
  CHECK(Bound("next_pow2(y)", r) == "[0, 4]");
  CHECK(Bound("min(x, y)", r) == "[-5, -2]");
  CHECK(Bound("max(x, y)", r) == "[-3, 4]");
}

TEST_CASE("bounds: overflow is clamped to what the launcher computes without failing") {
  CHECK(Bound("n * 4") == "[-9223372036854775808, 9223372036854775807]");
  CHECK(Bound("n + 1") == "[-9223372036854775807, 9223372036854775807]");
  CHECK(Bound("n - 1") == "[-9223372036854775808, 9223372036854775806]");
  CHECK(Bound("-n") == "[-9223372036854775807, 9223372036854775807]");
  CHECK(Bound("n / -1") == "[-9223372036854775807, 9223372036854775807]");
  CHECK(Bound("d * d") == "[0, 9223372036854775807]");
  CHECK(Bound("d * d * d") == "[0, 9223372036854775807]");
  CHECK(Bound("(x - 9223372036854775807) - 2", {{"x", {0, 5}}}) == "[-9223372036854775808, -9223372036854775804]");
  CHECK(Bound("x * 4611686018427387904", {{"x", {1, 5}}}) == "[4611686018427387904, 9223372036854775807]");
  CHECK(Bound("gcd(n, 0)") == "[0, 9223372036854775807]");
  CHECK(Bound("next_pow2(n)") == "[0, 4611686018427387904]");
  CHECK(Bound("log2(n)") == "[0, 62]");
}

TEST_CASE("bounds: the ranges of the scalar types") {
  CHECK(Text(TypeRange("i8")) == "[-128, 127]");
  CHECK(Text(TypeRange("i32")) == "[-2147483648, 2147483647]");
  CHECK(Text(TypeRange("u16")) == "[0, 65535]");
  CHECK(Text(TypeRange("u32")) == "[0, 4294967295]");
  CHECK(Text(TypeRange("i64")) == "[-9223372036854775808, 9223372036854775807]");
  // (int64_t) of a u64 above INT64_MAX is negative.
  CHECK(Text(TypeRange("u64")) == "[-9223372036854775808, 9223372036854775807]");
  CHECK(Text(TypeRange("bool")) == "[0, 1]");
  CHECK(Text(kpack::ScalarRange(kpack::Scalar::kF32)) == "none");
}

namespace {

// Random expressions over the runtime names x and y: every operator and
// function, small literals and a few large ones, so that overflow, division
// by zero and the domains of log2 and next_pow2 all occur.
class RandomExpr {
 public:
  explicit RandomExpr(std::mt19937_64& rng) : rng_(rng) {}

  std::string Make(int depth) {
    if (depth == 0 || Pick(4) == 0) return Leaf();
    static const char* const kBinary[] = {"+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||"};
    static const char* const kCalls[] = {"min", "max", "cdiv", "floordiv", "floormod", "gcd", "log2", "next_pow2"};
    switch (Pick(6)) {
      case 0: return std::string(Pick(2) ? "-" : "!") + "(" + Make(depth - 1) + ")";
      case 1: return std::string("(") + Make(depth - 1) + ") ? (" + Make(depth - 1) + ") : (" + Make(depth - 1) + ")";
      case 2: {
        const std::string name = kCalls[Pick(8)];
        if (name == "log2" || name == "next_pow2") return name + "(" + Make(depth - 1) + ")";
        std::string out = name + "(" + Make(depth - 1) + ", " + Make(depth - 1);
        if ((name == "min" || name == "max") && Pick(3) == 0) out += std::string(", ") + Make(depth - 1);
        return out + ")";
      }
      default:
        return std::string("(") + Make(depth - 1) + ") " + kBinary[Pick(13)] + " (" + Make(depth - 1) + ")";
    }
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  std::string Leaf() {
    switch (Pick(8)) {
      case 0: case 1: case 2: return "x";
      case 3: case 4: return "y";
      case 5: {
        static const char* const kLarge[] = {"9223372036854775807", "4611686018427387904", "4294967296",
                                             "3037000500", "1024"};
        return kLarge[Pick(5)];
      }
      default: {
        int v = Pick(17) - 8;
        return v < 0 ? std::string("(-") + std::to_string(-v) + ")" : std::to_string(v);
      }
    }
  }

  std::mt19937_64& rng_;
};

// Checks the witness of `e`, when there is one: "x = 1, y = 2" evaluates
// to the bound's hi.
void CheckWitness(const kpack::Expr& e, const kpack::NameRange& ranges, const kpack::Interval& bound) {
  std::string witness = kpack::BoundWitness(e, Bindings({}), ranges);
  if (witness.empty()) return;
  Constants at;
  std::istringstream in(witness);
  std::string name, equals, value;
  while (in >> name >> equals >> value) {
    if (!value.empty() && value.back() == ',') value.pop_back();
    at[name] = std::stoll(value);
  }
  INFO("witness " << witness);
  std::optional<int64_t> v = kpack::EvaluateExpr(e, Bindings(at));
  REQUIRE(v);
  CHECK(*v == bound.hi);
}

}  // namespace

TEST_CASE("bounds are sound: every value the launcher computes lies inside") {
  uint64_t seed = 20240611;
  if (const char* env = std::getenv("KPACK_BOUNDS_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::printf("expr_bounds soundness: seed %llu (set KPACK_BOUNDS_SEED to change it)\n",
              static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  RandomExpr gen(rng);
  // Ends of the wide ranges: around zero, 32 and 64 bits, and the extremes.
  const std::vector<int64_t> kEnds = {kMin, kMin + 1, -(int64_t{1} << 62), -(int64_t{1} << 32), -1000, -1, 0,
                                      1, 2, 1000, int64_t{1} << 31, int64_t{1} << 62, kMax - 1, kMax};
  size_t expressions = 0, evaluations = 0, successes = 0, tight = 0, empty = 0;
  for (int iteration = 0; iteration < 6000; ++iteration) {
    const bool wide = iteration % 3 == 2;
    Ranges ranges;
    for (const char* name : {"x", "y"}) {
      if (wide) {
        int64_t a = kEnds[rng() % kEnds.size()], b = kEnds[rng() % kEnds.size()];
        ranges[name] = {std::min(a, b), std::max(a, b)};
      } else {
        int64_t lo = static_cast<int64_t>(rng() % 25) - 12;
        ranges[name] = {lo, lo + static_cast<int64_t>(rng() % 13)};
      }
    }
    const std::string text = gen.Make(1 + static_cast<int>(rng() % 4));
    INFO(text << " with x in " << Text(ranges["x"]) << ", y in " << Text(ranges["y"]));
    const kpack::Expr e = Parse(text);
    const kpack::NameRange name_range = RangesOf(ranges);
    const std::optional<kpack::Interval> bound = kpack::BoundExpr(e, Bindings({}), name_range);
    ++expressions;

    // The points: every one of small ranges; the ends, their neighbours,
    // 0 and +-1, and random values of wide ones.
    std::vector<int64_t> xs, ys;
    auto points = [&](const kpack::Interval& r, std::vector<int64_t>& out) {
      if (!wide) {
        for (int64_t v = r.lo; v <= r.hi; ++v) out.push_back(v);
        return;
      }
      for (int64_t v : {r.lo, r.hi, int64_t{-1}, int64_t{0}, int64_t{1}})
        if (v >= r.lo && v <= r.hi) out.push_back(v);
      if (r.lo < r.hi) out.insert(out.end(), {r.lo + 1, r.hi - 1});
      const uint64_t span = static_cast<uint64_t>(r.hi) - static_cast<uint64_t>(r.lo);
      for (int k = 0; k < 10; ++k)
        out.push_back(static_cast<int64_t>(static_cast<uint64_t>(r.lo) +
                                           (span == UINT64_MAX ? rng() : rng() % (span + 1))));
    };
    points(ranges["x"], xs);
    points(ranges["y"], ys);

    std::optional<int64_t> seen_max;
    for (int64_t x : xs)
      for (int64_t y : ys) {
        ++evaluations;
        std::optional<int64_t> v = kpack::EvaluateExpr(e, Bindings({{"x", x}, {"y", y}}));
        if (!v) continue;
        ++successes;
        if (!bound || *v < bound->lo || *v > bound->hi)
          FAIL("x = " << x << ", y = " << y << " gives " << *v << ", outside the bound " << Text(bound));
        seen_max = std::max(seen_max.value_or(*v), *v);
      }
    if (!bound) ++empty;
    if (bound && seen_max == bound->hi) ++tight;
    if (bound && iteration % 10 == 0) CheckWitness(e, name_range, *bound);
  }
  std::printf("expr_bounds soundness: %zu expressions, %zu evaluations (%zu succeeded); hi reached in %zu, "
              "no bound (always fails) in %zu\n",
              expressions, evaluations, successes, tight, empty);
  CHECK(expressions == 6000);
}
