#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/Attention.hpp"

namespace attnsim::kernels {

MaskView::MaskView(const MaskSpec& mask, const RequestData& r) : mask_(mask), r_(r) {
  depth_.resize(r.tree_parent.size());
  for (std::size_t i = 0; i < r.tree_parent.size(); ++i) {
    const int parent = r.tree_parent[i];
    depth_[i] = parent < 0 ? 1 : depth_[static_cast<std::size_t>(parent)] + 1;  // parents come first
  }
}

std::int64_t MaskView::position(std::int64_t i) const {
  if (depth_.empty()) return r_.prefix + i;
  return r_.prefix + depth_[static_cast<std::size_t>(i)] - 1;
}

bool MaskView::allowed(std::int64_t i, std::int64_t j) const {
  if (!r_.key_sets.empty()) {
    const auto& keys = r_.key_sets[static_cast<std::size_t>(i)];
    if (!std::binary_search(keys.begin(), keys.end(), static_cast<int>(j))) return false;
  }
  if (!depth_.empty() && j >= r_.prefix) {
    // A draft node sees the nodes on its own path only.
    for (auto node = static_cast<int>(i); node >= 0; node = r_.tree_parent[static_cast<std::size_t>(node)]) {
      if (node == j - r_.prefix) return true;
    }
    return false;
  }
  if (!mask_.causal) return true;
  const std::int64_t p = position(i);
  if (j > p) return false;
  if (mask_.window > 0 && p - j >= mask_.window) return false;
  if (mask_.chunk > 0 && j / mask_.chunk != p / mask_.chunk) return false;
  return true;
}

Result goldenAttention(const Problem& p) {
  const Geometry& g = p.geo;
  Result result;
  for (const auto& r : p.requests) {
    const MaskView mask(p.mask, r);
    const MatrixD q = r.q.cast<double>();
    const MatrixD k = r.k.cast<double>();
    const MatrixD v = r.v.cast<double>();
    MatrixD out = MatrixD::Zero(r.qLen(), static_cast<Eigen::Index>(g.num_heads) * g.d_v);
    MatrixD lse = MatrixD::Constant(r.qLen(), g.num_heads, -std::numeric_limits<double>::infinity());
    for (int h = 0; h < g.num_heads; ++h) {
      const int kvh = h / g.group();
      const MatrixD s = q.middleCols(static_cast<Eigen::Index>(h) * g.d_qk, g.d_qk) *
                        k.middleCols(static_cast<Eigen::Index>(kvh) * g.d_qk, g.d_qk).transpose() * g.scale;
      for (std::int64_t i = 0; i < r.qLen(); ++i) {
        double m = p.sinks.empty() ? -std::numeric_limits<double>::infinity() : p.sinks[static_cast<std::size_t>(h)];
        for (std::int64_t j = 0; j < r.kvLen(); ++j) {
          if (mask.allowed(i, j)) m = std::max(m, s(i, j));
        }
        if (!std::isfinite(m)) continue;
        double sum = p.sinks.empty() ? 0.0 : std::exp(p.sinks[static_cast<std::size_t>(h)] - m);
        Eigen::RowVectorXd acc = Eigen::RowVectorXd::Zero(g.d_v);
        for (std::int64_t j = 0; j < r.kvLen(); ++j) {
          if (!mask.allowed(i, j)) continue;
          const double w = std::exp(s(i, j) - m);
          sum += w;
          acc += w * v.row(j).segment(static_cast<Eigen::Index>(kvh) * g.d_v, g.d_v);
        }
        out.row(i).segment(static_cast<Eigen::Index>(h) * g.d_v, g.d_v) = acc / sum;
        lse(i, h) = m + std::log(sum);
      }
    }
    result.out.push_back(std::move(out));
    result.lse.push_back(std::move(lse));
  }
  return result;
}

}  // namespace attnsim::kernels
