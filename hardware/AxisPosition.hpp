#pragma once
// Where a value lies on an ascending grid axis, for the measured grids' interpolation (GEMM surfaces,
// attention surfaces).
#include <algorithm>
#include <cstddef>
#include <vector>

namespace attnsim {

// The node at or below x and the fraction towards the next node, clamped to the axis: below the first
// node {0, 0}, at or beyond the last {last, 0}, so lo + 1 clamped to the last node is always valid.
struct AxisPosition {
  std::size_t lo = 0;
  double t = 0;
};

inline AxisPosition positionOn(const std::vector<double>& axis, double x) {
  if (axis.size() < 2 || x <= axis.front()) return {0, 0};
  if (x >= axis.back()) return {axis.size() - 1, 0};
  const auto hi = static_cast<std::size_t>(std::upper_bound(axis.begin(), axis.end(), x) - axis.begin());
  const std::size_t lo = hi - 1;
  return {lo, (x - axis[lo]) / (axis[hi] - axis[lo])};
}

}  // namespace attnsim
