#include "tune_probe.h"

#include <algorithm>
#include <cmath>

namespace kpack {

std::optional<int64_t> ProbeBetween(int64_t lo, int64_t hi) {
  if (lo < 1 || hi <= lo + 1) return std::nullopt;
  const double middle = std::sqrt(static_cast<double>(lo) * static_cast<double>(hi));
  auto inside = [&](int64_t v) { return v > lo && v < hi; };
  auto near = [&](int64_t v) { return std::max(v / middle, middle / v) <= 1.25; };
  for (int64_t step = 16; step >= 2; step /= 2) {
    // The odd multiples of `step` around the middle: step * (2j + 1).
    const int64_t j = static_cast<int64_t>(std::floor((middle / step - 1) / 2));
    const int64_t below = step * (2 * j + 1), above = step * (2 * j + 3);
    const bool take_below = inside(below) && (!inside(above) || middle - below < above - middle);
    const int64_t v = take_below ? below : above;
    if (inside(v) && near(v)) return v;
  }
  const int64_t rounded = std::clamp<int64_t>(std::llround(middle), lo + 1, hi - 1);
  return rounded;
}

std::vector<int64_t> ProbeAxis(const std::vector<int64_t>& grid) {
  if (grid.size() == 1) return grid;
  std::vector<int64_t> out;
  for (size_t i = 0; i + 1 < grid.size(); ++i)
    if (std::optional<int64_t> v = ProbeBetween(grid[i], grid[i + 1])) out.push_back(*v);
  return out;
}

bool ProbeValueFits(const std::vector<int64_t>& grid, int64_t v) {
  if (grid.size() == 1) return v == grid[0];
  auto above = std::upper_bound(grid.begin(), grid.end(), v);
  return above != grid.begin() && above != grid.end() && *(above - 1) != v;
}

}  // namespace kpack
