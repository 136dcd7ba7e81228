#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "kernels/Attention.hpp"
#include "kernels/Quant.hpp"

namespace attnsim::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The KV cache as a kernel sees it: rows of a request, either in place or in a shared page pool.
class KvCache {
 public:
  KvCache(const Problem& p, const TiledOptions& o) : layout_(o.layout), page_(std::max(1, o.page_size)) {
    if (layout_ == KvLayout::Contiguous) return;
    // Every request's rows go to pages scattered over one pool, as a paged allocator leaves them.
    std::int64_t pages = 0;
    for (const auto& r : p.requests) pages += (r.kvLen() + page_ - 1) / page_;
    std::vector<int> ids(static_cast<std::size_t>(pages));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(o.seed));
    const auto kw = static_cast<Eigen::Index>(p.geo.num_kv_heads) * p.geo.d_qk;
    const auto vw = static_cast<Eigen::Index>(p.geo.num_kv_heads) * p.geo.d_v;
    k_pool_ = Matrix::Zero(pages * page_, kw);
    v_pool_ = Matrix::Zero(pages * page_, vw);
    std::size_t next = 0;
    for (const auto& r : p.requests) {
      std::vector<int> table;
      for (std::int64_t j0 = 0; j0 < r.kvLen(); j0 += page_) table.push_back(ids[next++]);
      for (std::int64_t j = 0; j < r.kvLen(); ++j) {
        const std::int64_t slot =
            static_cast<std::int64_t>(table[static_cast<std::size_t>(j / page_)]) * page_ + j % page_;
        k_pool_.row(slot) = r.k.row(j);
        v_pool_.row(slot) = r.v.row(j);
      }
      if (layout_ == KvLayout::PagedPerToken) {
        // The emulation: the page table expanded to one pool index per token (page size 1).
        std::vector<std::int64_t> index(static_cast<std::size_t>(r.kvLen()));
        for (std::int64_t j = 0; j < r.kvLen(); ++j) {
          index[static_cast<std::size_t>(j)] =
              static_cast<std::int64_t>(table[static_cast<std::size_t>(j / page_)]) * page_ + j % page_;
        }
        token_index_.push_back(std::move(index));
      }
      page_tables_.push_back(std::move(table));
    }
  }

  // Copies rows [j0, j1) of one KV head of request r into the tile buffers.
  void gather(const RequestData& r, std::size_t ri, int kv_head, const Geometry& g, std::int64_t j0, std::int64_t j1,
              Matrix& k_tile, Matrix& v_tile) const {
    const auto n = static_cast<Eigen::Index>(j1 - j0);
    k_tile.resize(n, g.d_qk);
    v_tile.resize(n, g.d_v);
    if (layout_ == KvLayout::Contiguous) {
      k_tile = r.k.block(j0, static_cast<Eigen::Index>(kv_head) * g.d_qk, n, g.d_qk);
      v_tile = r.v.block(j0, static_cast<Eigen::Index>(kv_head) * g.d_v, n, g.d_v);
      return;
    }
    for (std::int64_t j = j0; j < j1; ++j) {
      const std::int64_t slot =
          layout_ == KvLayout::PagedNative
              ? static_cast<std::int64_t>(page_tables_[ri][static_cast<std::size_t>(j / page_)]) * page_ + j % page_
              : token_index_[ri][static_cast<std::size_t>(j)];
      k_tile.row(j - j0) = k_pool_.row(slot).segment(static_cast<Eigen::Index>(kv_head) * g.d_qk, g.d_qk);
      v_tile.row(j - j0) = v_pool_.row(slot).segment(static_cast<Eigen::Index>(kv_head) * g.d_v, g.d_v);
    }
  }

 private:
  KvLayout layout_;
  std::int64_t page_;
  Matrix k_pool_, v_pool_;
  std::vector<std::vector<int>> page_tables_;
  std::vector<std::vector<std::int64_t>> token_index_;
};

bool plainCausal(const Problem& p, const RequestData& r) {
  return p.mask.causal && p.mask.chunk == 0 && r.tree_parent.empty() && r.key_sets.empty();
}

// One key tile folded into a query tile's running max m, sum l and output acc; s holds the tile's
// scaled (and masked) scores and is overwritten with its probabilities.
void onlineSoftmaxStep(Matrix& s, const Matrix& v_tile, bool round_p_to_bf16, Eigen::VectorXf& m, Eigen::VectorXf& l,
                       Matrix& acc) {
  const Eigen::VectorXf tile_max = s.rowwise().maxCoeff();
  const Eigen::VectorXf m_new = m.cwiseMax(tile_max);
  // Rows that saw no key yet keep m = -inf; guard exp(-inf - -inf).
  const Eigen::VectorXf m_safe = m_new.unaryExpr([](float x) { return std::isfinite(x) ? x : 0.0f; });
  const Eigen::VectorXf correction = (m - m_safe).array().exp().matrix();
  s = (s.colwise() - m_safe).array().exp().matrix();
  l = l.cwiseProduct(correction) + s.rowwise().sum();
  if (round_p_to_bf16) s = s.unaryExpr([](float x) { return roundToBf16(x); });
  acc = correction.asDiagonal() * acc;
  acc.noalias() += s * v_tile;
  m = m_new;
}

// One head of one request over keys [k_begin, k_end): online softmax over key tiles.
void attendHead(const Problem& p, const RequestData& r, std::size_t ri, const KvCache& cache, const TiledOptions& o,
                int h, std::int64_t k_begin, std::int64_t k_end, bool with_sink, MatrixD& out, MatrixD& lse) {
  const Geometry& g = p.geo;
  const int kvh = h / g.group();
  const MaskView mask(p.mask, r);
  const bool simple = plainCausal(p, r);
  const auto scale = static_cast<float>(g.scale);
  const std::int64_t tile_q = o.unfused ? r.qLen() : o.tile_q;
  const std::int64_t tile_kv = o.unfused ? std::max<std::int64_t>(1, k_end - k_begin) : o.tile_kv;
  Matrix k_tile, v_tile, s, acc;
  Eigen::VectorXf m, l;
  for (std::int64_t i0 = 0; i0 < r.qLen(); i0 += tile_q) {
    const std::int64_t i1 = std::min(r.qLen(), i0 + tile_q);
    const auto rows = static_cast<Eigen::Index>(i1 - i0);
    const auto q_tile = r.q.block(i0, static_cast<Eigen::Index>(h) * g.d_qk, rows, g.d_qk);
    // NOLINTNEXTLINE(bugprone-narrowing-conversions): float to float; clang-tidy 14 misreads -inf in a ?: as narrowing
    const float sink = with_sink ? p.sinks[static_cast<std::size_t>(h)] : kNegInf;
    m = Eigen::VectorXf::Constant(rows, sink);
    l = Eigen::VectorXf::Constant(rows, with_sink ? 1.0f : 0.0f);  // exp(sink - m) with m = sink
    acc = Matrix::Zero(rows, g.d_v);
    const std::int64_t first_pos = mask.position(i0);
    const std::int64_t last_pos = mask.position(i1 - 1);
    for (std::int64_t j0 = k_begin; j0 < k_end; j0 += tile_kv) {
      const std::int64_t j1 = std::min(k_end, j0 + tile_kv);
      if (simple) {
        if (j0 > last_pos) break;                                                // above the causal diagonal
        if (p.mask.window > 0 && j1 - 1 <= first_pos - p.mask.window) continue;  // left of every window
      }
      cache.gather(r, ri, kvh, g, j0, j1, k_tile, v_tile);
      s.noalias() = (q_tile * k_tile.transpose()) * scale;
      const bool whole = simple && j1 - 1 <= first_pos && (p.mask.window == 0 || last_pos - j0 < p.mask.window);
      if (!whole) {
        for (Eigen::Index a = 0; a < rows; ++a) {
          for (Eigen::Index b = 0; b < s.cols(); ++b) {
            if (!mask.allowed(i0 + a, j0 + b)) s(a, b) = kNegInf;
          }
        }
      }
      onlineSoftmaxStep(s, v_tile, o.round_p_to_bf16, m, l, acc);
    }
    for (Eigen::Index a = 0; a < rows; ++a) {
      const std::int64_t i = i0 + a;
      if (l(a) > 0) {
        out.row(i).segment(static_cast<Eigen::Index>(h) * g.d_v, g.d_v) = (acc.row(a) / l(a)).cast<double>();
        lse(i, h) = static_cast<double>(m(a)) + std::log(static_cast<double>(l(a)));
      } else {
        out.row(i).segment(static_cast<Eigen::Index>(h) * g.d_v, g.d_v).setZero();
        lse(i, h) = -std::numeric_limits<double>::infinity();
      }
    }
  }
}

Result runRange(const Problem& p, const KvCache& cache, const TiledOptions& o, int split, int splits) {
  Result res;
  const Geometry& g = p.geo;
  for (std::size_t ri = 0; ri < p.requests.size(); ++ri) {
    const auto& r = p.requests[ri];
    MatrixD out = MatrixD::Zero(r.qLen(), static_cast<Eigen::Index>(g.num_heads) * g.d_v);
    MatrixD lse = MatrixD::Constant(r.qLen(), g.num_heads, -std::numeric_limits<double>::infinity());
    const std::int64_t per = (r.kvLen() + splits - 1) / splits;
    const std::int64_t k0 = std::min(r.kvLen(), split * per);
    const std::int64_t k1 = std::min(r.kvLen(), k0 + per);
    for (int h = 0; h < g.num_heads; ++h) {
      attendHead(p, r, ri, cache, o, h, k0, k1, split == 0 && !p.sinks.empty(), out, lse);
    }
    res.out.push_back(std::move(out));
    res.lse.push_back(std::move(lse));
  }
  return res;
}

}  // namespace

void mergePartials(const std::vector<const Result*>& parts, Result& out) {
  const Result& first = *parts.front();
  out = first;
  for (std::size_t r = 0; r < first.out.size(); ++r) {
    const auto rows = first.lse[r].rows();
    const auto heads = first.lse[r].cols();
    const auto dv = first.out[r].cols() / heads;
    for (Eigen::Index i = 0; i < rows; ++i) {
      for (Eigen::Index h = 0; h < heads; ++h) {
        double m = -std::numeric_limits<double>::infinity();
        for (const Result* part : parts) m = std::max(m, part->lse[r](i, h));
        if (!std::isfinite(m)) {
          out.out[r].row(i).segment(h * dv, dv).setZero();
          out.lse[r](i, h) = m;
          continue;
        }
        double sum = 0;
        Eigen::RowVectorXd acc = Eigen::RowVectorXd::Zero(dv);
        for (const Result* part : parts) {
          const double w = std::exp(part->lse[r](i, h) - m);
          sum += w;
          acc += w * part->out[r].row(i).segment(h * dv, dv);
        }
        out.out[r].row(i).segment(h * dv, dv) = acc / sum;
        out.lse[r](i, h) = m + std::log(sum);
      }
    }
  }
}

Result tiledAttention(const Problem& p, const TiledOptions& o) {
  const KvCache cache(p, o);
  const int splits = std::max(1, o.splits);
  if (splits == 1) return runRange(p, cache, o, 0, 1);
  std::vector<Result> parts;
  parts.reserve(static_cast<std::size_t>(splits));
  for (int s = 0; s < splits; ++s) parts.push_back(runRange(p, cache, o, s, splits));
  std::vector<const Result*> views;
  views.reserve(parts.size());
  for (const auto& part : parts) views.push_back(&part);
  Result merged;
  mergePartials(views, merged);
  return merged;
}

Result cascadeAttention(const Problem& p, std::int64_t shared, const TiledOptions& o) {
  // Every query follows the shared prefix, so each sees all of it: one non-causal pass of every
  // request's query rows stacked together against the shared KV, stored once.
  const Geometry& g = p.geo;
  Problem prefix_part;
  prefix_part.geo = g;
  prefix_part.mask.causal = false;
  prefix_part.sinks = p.sinks;
  RequestData stacked;
  std::int64_t rows = 0;
  for (const auto& r : p.requests) rows += r.qLen();
  stacked.q.resize(rows, static_cast<Eigen::Index>(g.num_heads) * g.d_qk);
  std::int64_t at = 0;
  for (const auto& r : p.requests) {
    stacked.q.middleRows(at, r.qLen()) = r.q;
    at += r.qLen();
  }
  stacked.k = p.requests.front().k.topRows(shared);
  stacked.v = p.requests.front().v.topRows(shared);
  prefix_part.requests.push_back(std::move(stacked));
  const Result shared_stacked = tiledAttention(prefix_part, o);

  // Each request's own part: its keys after the shared prefix, with the request's mask.
  Problem own_part = p;
  own_part.sinks.clear();
  for (auto& r : own_part.requests) {
    const MaskView mask(p.mask, r);
    std::vector<std::vector<int>> sets(static_cast<std::size_t>(r.qLen()));
    for (std::int64_t i = 0; i < r.qLen(); ++i) {
      for (std::int64_t j = shared; j < r.kvLen(); ++j) {
        if (mask.allowed(i, j)) sets[static_cast<std::size_t>(i)].push_back(static_cast<int>(j));
      }
    }
    r.key_sets = std::move(sets);
  }
  const Result own = tiledAttention(own_part, o);

  Result shared_result;
  at = 0;
  for (const auto& r : p.requests) {
    shared_result.out.emplace_back(shared_stacked.out.front().middleRows(at, r.qLen()));
    shared_result.lse.emplace_back(shared_stacked.lse.front().middleRows(at, r.qLen()));
    at += r.qLen();
  }
  Result merged;
  mergePartials({&shared_result, &own}, merged);
  return merged;
}

}  // namespace attnsim::kernels
