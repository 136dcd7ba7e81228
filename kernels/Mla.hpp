#pragma once
// Multi-head latent attention on real numbers: the naive form (latent up-projected to per-head K
// and V) and the weight-absorbed decode form (queries moved into the latent space: 576-wide keys,
// 512-wide values shared by every head). The two are the same function.
#include "kernels/Attention.hpp"

namespace attnsim::kernels {

struct MlaProblem {
  int heads = 1;
  int kv_lora = 512;
  int nope = 128;
  int rope = 64;
  int v_dim = 128;
  MaskSpec mask;
  Matrix w_uk;  // (heads × nope) × kv_lora: latent -> per-head non-rotary key
  Matrix w_uv;  // (heads × v_dim) × kv_lora: latent -> per-head value
  struct Request {
    std::int64_t prefix = 0;
    Matrix q_nope;                           // q_len × (heads × nope)
    Matrix q_rope;                           // q_len × (heads × rope)
    Matrix c_kv;                             // kv_len × kv_lora (the cached latent)
    Matrix k_rope;                           // kv_len × rope (shared by all heads)
    std::vector<std::vector<int>> key_sets;  // sparse MLA: each row's top-k keys
  };
  std::vector<Request> requests;
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(nope + rope)); }
};

// Per-head K = [c_kv W_UKᵀ, k_rope], V = c_kv W_UVᵀ: a plain multi-head problem.
Problem naiveMla(const MlaProblem& m);
// One latent KV head: K = [c_kv, k_rope] (576), V = c_kv (512), Q = [q_nope W_UK, q_rope].
Problem absorbedMla(const MlaProblem& m);
// Latent outputs (per head, kv_lora wide) projected to values with W_UV.
Result unabsorb(const MlaProblem& m, const Result& latent);

}  // namespace attnsim::kernels
