#pragma once
// Where a value lies on an ascending grid axis, for the measured grids' interpolation (GEMM surfaces,
// attention surfaces, MoE fits), and the trilinear interpolation of a three-axis grid.
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

// Trilinear interpolation of a grid of values stored row-major over three axes (a, b, c), at a position on
// each: the GEMM surface's log time over (m, n, k), the MoE fit's log efficiency over (tokens per expert,
// weights, width). No allocation.
inline double interpolateGrid3(const std::vector<double>& values, const std::vector<double>& axis_a,
                               const std::vector<double>& axis_b, const std::vector<double>& axis_c, AxisPosition a,
                               AxisPosition b, AxisPosition c) {
  const std::size_t nb = axis_b.size();
  const std::size_t nc = axis_c.size();
  const std::size_t ua = std::min(a.lo + 1, axis_a.size() - 1);
  const std::size_t ub = std::min(b.lo + 1, nb - 1);
  const std::size_t uc = std::min(c.lo + 1, nc - 1);
  auto at = [&](std::size_t i, std::size_t j, std::size_t k) { return values[(i * nb + j) * nc + k]; };
  auto along_c = [&](std::size_t i, std::size_t j) { return (1 - c.t) * at(i, j, c.lo) + c.t * at(i, j, uc); };
  auto along_b = [&](std::size_t i) { return (1 - b.t) * along_c(i, b.lo) + b.t * along_c(i, ub); };
  return (1 - a.t) * along_b(a.lo) + a.t * along_b(ua);
}

}  // namespace attnsim
