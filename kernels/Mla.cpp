#include "kernels/Mla.hpp"

namespace attnsim::kernels {

Problem naiveMla(const MlaProblem& m) {
  Problem p;
  p.geo = {m.heads, m.heads, m.nope + m.rope, m.v_dim, m.scale()};
  p.mask = m.mask;
  for (const auto& r : m.requests) {
    RequestData d;
    d.prefix = r.prefix;
    d.key_sets = r.key_sets;
    d.q.resize(r.q_nope.rows(), static_cast<Eigen::Index>(m.heads) * (m.nope + m.rope));
    d.k.resize(r.c_kv.rows(), static_cast<Eigen::Index>(m.heads) * (m.nope + m.rope));
    d.v.resize(r.c_kv.rows(), static_cast<Eigen::Index>(m.heads) * m.v_dim);
    for (int h = 0; h < m.heads; ++h) {
      const auto col = static_cast<Eigen::Index>(h) * (m.nope + m.rope);
      d.q.middleCols(col, m.nope) = r.q_nope.middleCols(static_cast<Eigen::Index>(h) * m.nope, m.nope);
      d.q.middleCols(col + m.nope, m.rope) = r.q_rope.middleCols(static_cast<Eigen::Index>(h) * m.rope, m.rope);
      d.k.middleCols(col, m.nope) =
          r.c_kv * m.w_uk.middleRows(static_cast<Eigen::Index>(h) * m.nope, m.nope).transpose();
      d.k.middleCols(col + m.nope, m.rope) = r.k_rope;
      d.v.middleCols(static_cast<Eigen::Index>(h) * m.v_dim, m.v_dim) =
          r.c_kv * m.w_uv.middleRows(static_cast<Eigen::Index>(h) * m.v_dim, m.v_dim).transpose();
    }
    p.requests.push_back(std::move(d));
  }
  return p;
}

Problem absorbedMla(const MlaProblem& m) {
  Problem p;
  const int width = m.kv_lora + m.rope;
  p.geo = {m.heads, 1, width, m.kv_lora, m.scale()};
  p.mask = m.mask;
  for (const auto& r : m.requests) {
    RequestData d;
    d.prefix = r.prefix;
    d.key_sets = r.key_sets;
    d.q.resize(r.q_nope.rows(), static_cast<Eigen::Index>(m.heads) * width);
    for (int h = 0; h < m.heads; ++h) {
      const auto col = static_cast<Eigen::Index>(h) * width;
      d.q.middleCols(col, m.kv_lora) = r.q_nope.middleCols(static_cast<Eigen::Index>(h) * m.nope, m.nope) *
                                       m.w_uk.middleRows(static_cast<Eigen::Index>(h) * m.nope, m.nope);
      d.q.middleCols(col + m.kv_lora, m.rope) = r.q_rope.middleCols(static_cast<Eigen::Index>(h) * m.rope, m.rope);
    }
    d.k.resize(r.c_kv.rows(), width);
    d.k.leftCols(m.kv_lora) = r.c_kv;
    d.k.rightCols(m.rope) = r.k_rope;
    d.v = r.c_kv;
    p.requests.push_back(std::move(d));
  }
  return p;
}

Result unabsorb(const MlaProblem& m, const Result& latent) {
  Result out;
  out.lse = latent.lse;
  for (const auto& o : latent.out) {
    MatrixD v(o.rows(), static_cast<Eigen::Index>(m.heads) * m.v_dim);
    for (int h = 0; h < m.heads; ++h) {
      v.middleCols(static_cast<Eigen::Index>(h) * m.v_dim, m.v_dim) =
          o.middleCols(static_cast<Eigen::Index>(h) * m.kv_lora, m.kv_lora) *
          m.w_uv.middleRows(static_cast<Eigen::Index>(h) * m.v_dim, m.v_dim).transpose().cast<double>();
    }
    out.out.push_back(std::move(v));
  }
  return out;
}

}  // namespace attnsim::kernels
