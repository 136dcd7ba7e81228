#include "simulator/Checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/KernelFamily.hpp"
#include "kernels/Attention.hpp"
#include "kernels/Mla.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

using namespace kernels;

namespace {

double unitRoundoff(KvFormat f) {
  switch (f) {
    case KvFormat::FP32:
      return std::ldexp(1.0, -24);
    case KvFormat::FP16:
      return std::ldexp(1.0, -11);
    case KvFormat::BF16:
      return std::ldexp(1.0, -8);
    case KvFormat::FP8_E4M3:
      return std::ldexp(1.0, -4);
    case KvFormat::FP8_E5M2:
      return std::ldexp(1.0, -3);
    case KvFormat::FP4_E2M1:
      return std::ldexp(1.0, -2);
  }
  return 1.0;
}

float roundTo(const std::string& dtype, float x) {
  if (dtype == "bf16") return roundToBf16(x);
  if (dtype == "fp16") return roundToFp16(x);
  return x;
}

Matrix randomMatrix(std::mt19937& rng, Eigen::Index rows, Eigen::Index cols, const std::string& dtype,
                    float sd = 1.0f) {
  std::normal_distribution<float> n(0.0f, sd);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = roundTo(dtype, n(rng));
  return m;
}

void quantize(Matrix& m, int heads, int width, KvFormat kv) {
  roundTripKv(std::span<float>(m.data(), static_cast<std::size_t>(m.size())), static_cast<int>(m.rows()), heads, width,
              kv, ScaleGranularity::PerTensor);
}

// Query rows and contexts of the check's two requests, shrunk to the FLOP budget.
struct Lengths {
  std::int64_t q_len[2];
  std::int64_t context[2];
  bool scaled = false;
};

Lengths lengthsFor(Phase phase, std::int64_t tree_nodes, double flops_per_pair, double budget) {
  std::int64_t base[2] = {300, 173};  // odd lengths, not multiples of pages or tiles
  auto cost = [&](double f) {
    double total = 0;
    for (const auto c : base) {
      const double ctx = std::max(24.0, std::floor(static_cast<double>(c) * f));
      const double rows = phase == Phase::Prefill  ? ctx
                          : phase == Phase::Extend ? std::ceil(ctx / 8)
                          : phase == Phase::Verify ? static_cast<double>(tree_nodes)
                                                   : 1.0;
      total += rows * ctx * flops_per_pair;
    }
    return total;
  };
  double f = 1.0;
  while (f > 0.02 && cost(f) > budget) f *= 0.8;
  Lengths l;
  l.scaled = f < 1.0;
  for (int r = 0; r < 2; ++r) {
    const auto ctx = static_cast<std::int64_t>(std::max(24.0, std::floor(static_cast<double>(base[r]) * f)));
    l.context[r] = ctx;
    l.q_len[r] = phase == Phase::Prefill  ? ctx
                 : phase == Phase::Extend ? (ctx + 7) / 8
                 : phase == Phase::Verify ? tree_nodes
                                          : 1;
  }
  return l;
}

std::vector<int> treeParents(std::int64_t nodes, std::int64_t topk) {
  // A root, then levels of topk nodes, each child of a node of the level above.
  std::vector<int> parent(static_cast<std::size_t>(nodes), -1);
  if (topk <= 1) {
    for (std::int64_t i = 1; i < nodes; ++i) parent[static_cast<std::size_t>(i)] = static_cast<int>(i - 1);
    return parent;
  }
  std::int64_t level_start = 0, level_size = 1, next = 1;
  while (next < nodes) {
    const std::int64_t count = std::min(topk, nodes - next);
    for (std::int64_t c = 0; c < count; ++c) {
      parent[static_cast<std::size_t>(next + c)] = static_cast<int>(level_start + c % level_size);
    }
    level_start = next;
    level_size = count;
    next += count;
  }
  return parent;
}

}  // namespace

double checkTolerance(KvFormat kv, const std::string& dtype) {
  // Three unit roundoffs of the coarsest format on the path (the KV cache, the inputs, and the
  // probabilities P that FlashAttention-style kernels round to the input dtype). Measured worst
  // cases over the catalog: 0.46 (bf16), 0.67 (fp8 e4m3), 0.55 (fp8 e5m2), 0.95 (fp4 e2m1) roundoffs.
  const KvFormat input = dtype == "fp32" ? KvFormat::FP32 : dtype == "fp16" ? KvFormat::FP16 : KvFormat::BF16;
  return 3.0 * std::max(unitRoundoff(kv), unitRoundoff(input));
}

CheckOutcome runCheck(const CheckRequest& rq) {
  const KernelFamily& k = *rq.kernel;
  const AttentionLayerSpec& layer = *rq.layer;
  CheckOutcome out;
  std::mt19937 rng(rq.seed);
  const bool decode_like = rq.phase == Phase::Decode || rq.phase == Phase::Verify;
  const std::int64_t tree_nodes = rq.tree_topk > 1 ? 7 : 4;
  const bool mla = layer.isMla();
  const bool absorbed = mla && (k.algorithm == "mla_absorbed" || k.algorithm == "mla_sparse");
  const int heads = layer.num_heads;
  const int d_pair =
      mla ? (absorbed ? 576 + 512 : layer.head_dim + layer.head_dim_v) : layer.head_dim + layer.head_dim_v;
  const Lengths len = lengthsFor(rq.phase, tree_nodes, 2.0 * heads * d_pair, rq.flop_budget);

  TiledOptions o;
  o.tile_q = k.algorithm == "paged_decode" ? 16 : std::max(1, k.tile_q);
  o.tile_kv = std::max(16, k.tile_kv);
  o.layout = k.paging == "native"     ? KvLayout::PagedNative
             : k.paging == "emulated" ? KvLayout::PagedPerToken
                                      : KvLayout::Contiguous;
  o.page_size = static_cast<int>(std::max<std::int64_t>(1, rq.page_size));
  o.unfused = k.algorithm == "unfused";
  o.round_p_to_bf16 = rq.dtype != "fp32" && !o.unfused;
  o.splits = decode_like && k.split_kv ? 3 : 1;
  o.seed = rq.seed;

  MaskSpec mask;
  mask.causal = layer.causal;
  mask.window = layer.sliding_window;
  std::int64_t top_k = layer.sparse_top_k;
  if (top_k > 0) top_k = std::max<std::int64_t>(8, len.context[0] / 4);  // scaled with the lengths
  auto keySets = [&](std::int64_t q_len, std::int64_t prefix, std::int64_t kv_len) {
    std::vector<std::vector<int>> sets;
    if (top_k <= 0) return sets;
    // Each row's top-k of random indexer scores among the keys it may see.
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (std::int64_t i = 0; i < q_len; ++i) {
      const std::int64_t visible = std::min(kv_len, prefix + i + 1);
      std::vector<std::pair<float, int>> scored;
      for (std::int64_t j = 0; j < visible; ++j) scored.emplace_back(u(rng), static_cast<int>(j));
      const auto keep = static_cast<std::size_t>(std::min<std::int64_t>(top_k, visible));
      std::partial_sort(scored.begin(), scored.begin() + static_cast<long>(keep), scored.end(), std::greater<>());
      std::vector<int> keys;
      for (std::size_t a = 0; a < keep; ++a) keys.push_back(scored[a].second);
      std::sort(keys.begin(), keys.end());
      sets.push_back(std::move(keys));
    }
    return sets;
  };

  MatrixD diff_max;
  double max_abs = 0, max_ref = 0;
  auto compare = [&](const Result& got, const Result& ref) {
    for (std::size_t r = 0; r < ref.out.size(); ++r) {
      max_abs = std::max(max_abs, (got.out[r] - ref.out[r]).cwiseAbs().maxCoeff());
      max_ref = std::max(max_ref, ref.out[r].cwiseAbs().maxCoeff());
    }
  };

  std::vector<std::string> steps;
  if (mla) {
    const MlaGeometry& g = *layer.mla;
    MlaProblem m;
    m.heads = heads;
    m.kv_lora = g.kv_lora_rank;
    m.nope = g.qk_nope_head_dim;
    m.rope = g.qk_rope_head_dim;
    m.v_dim = g.v_head_dim;
    m.mask = mask;
    const float w_sd = 1.0f / std::sqrt(static_cast<float>(g.kv_lora_rank));
    m.w_uk = randomMatrix(rng, static_cast<Eigen::Index>(heads) * m.nope, m.kv_lora, rq.dtype, w_sd);
    m.w_uv = randomMatrix(rng, static_cast<Eigen::Index>(heads) * m.v_dim, m.kv_lora, rq.dtype, w_sd);
    for (int r = 0; r < 2; ++r) {
      MlaProblem::Request req;
      req.prefix = len.context[r] - len.q_len[r];
      req.q_nope = randomMatrix(rng, len.q_len[r], static_cast<Eigen::Index>(heads) * m.nope, rq.dtype);
      req.q_rope = randomMatrix(rng, len.q_len[r], static_cast<Eigen::Index>(heads) * m.rope, rq.dtype);
      req.c_kv = randomMatrix(rng, len.context[r], m.kv_lora, rq.dtype);
      req.k_rope = randomMatrix(rng, len.context[r], m.rope, rq.dtype);
      req.key_sets = keySets(len.q_len[r], req.prefix, len.context[r]);
      m.requests.push_back(std::move(req));
    }
    const Result ref = goldenAttention(naiveMla(m));
    MlaProblem cached = m;  // the latent cache holds the KV format
    for (auto& req : cached.requests) {
      quantize(req.c_kv, 1, m.kv_lora, rq.kv);
      quantize(req.k_rope, 1, m.rope, rq.kv);
    }
    if (absorbed) {
      compare(unabsorb(m, tiledAttention(absorbedMla(cached), o)), ref);
      steps.emplace_back(fmt::format("MLA weight-absorbed ({}-wide keys, {}-wide values, one latent KV head)",
                                     m.kv_lora + m.rope, m.kv_lora));
    } else {
      compare(tiledAttention(naiveMla(cached), o), ref);
      steps.emplace_back("MLA naive (latent up-projected to per-head K and V)");
    }
    out.heads = heads;
    out.kv_heads = absorbed ? 1 : heads;
    out.d_qk = absorbed ? m.kv_lora + m.rope : m.nope + m.rope;
    out.d_v = absorbed ? m.kv_lora : m.v_dim;
  } else {
    Problem p;
    p.geo = {heads, layer.num_kv_heads, layer.head_dim, layer.head_dim_v,
             1.0 / std::sqrt(static_cast<double>(layer.head_dim))};
    p.mask = mask;
    if (layer.sinks) {
      std::normal_distribution<float> n(0.0f, 1.0f);
      for (int h = 0; h < heads; ++h) p.sinks.push_back(n(rng));
    }
    for (int r = 0; r < 2; ++r) {
      RequestData d;
      d.prefix = len.context[r] - len.q_len[r];
      d.q = randomMatrix(rng, len.q_len[r], static_cast<Eigen::Index>(heads) * layer.head_dim, rq.dtype);
      d.k = randomMatrix(rng, len.context[r], static_cast<Eigen::Index>(layer.num_kv_heads) * layer.head_dim, rq.dtype);
      d.v =
          randomMatrix(rng, len.context[r], static_cast<Eigen::Index>(layer.num_kv_heads) * layer.head_dim_v, rq.dtype);
      if (rq.phase == Phase::Verify && rq.tree_topk > 1) d.tree_parent = treeParents(len.q_len[r], rq.tree_topk);
      d.key_sets = keySets(len.q_len[r], d.prefix, len.context[r]);
      p.requests.push_back(std::move(d));
    }
    const Result ref = goldenAttention(p);
    Problem cached = p;
    for (auto& d : cached.requests) {
      quantize(d.k, layer.num_kv_heads, layer.head_dim, rq.kv);
      quantize(d.v, layer.num_kv_heads, layer.head_dim_v, rq.kv);
    }
    compare(tiledAttention(cached, o), ref);
    out.heads = heads;
    out.kv_heads = layer.num_kv_heads;
    out.d_qk = layer.head_dim;
    out.d_v = layer.head_dim_v;
    if (heads != layer.num_kv_heads)
      steps.emplace_back(fmt::format("GQA {} query heads per KV head", heads / layer.num_kv_heads));
    if (layer.sinks) steps.emplace_back("attention sinks");
    if (rq.phase == Phase::Verify)
      steps.emplace_back(rq.tree_topk > 1 ? fmt::format("draft tree (topk {}) mask", rq.tree_topk) : "draft chain");
  }
  steps.insert(steps.begin(), o.unfused ? std::string("unfused (full score matrix)")
                                        : fmt::format("tiled online softmax {}x{}", o.tile_q, o.tile_kv));
  if (o.layout == KvLayout::PagedNative) steps.push_back(fmt::format("paged KV, native pages of {}", o.page_size));
  if (o.layout == KvLayout::PagedPerToken)
    steps.push_back(fmt::format("paged KV emulated by per-token indices (pages of {})", o.page_size));
  if (o.splits > 1) steps.push_back(fmt::format("split-KV x{} + log-sum-exp merge", o.splits));
  if (mask.window > 0) steps.push_back(fmt::format("sliding window {}", mask.window));
  if (top_k > 0) steps.push_back(fmt::format("sparse top-{}", top_k));
  if (isQuantized(rq.kv)) steps.push_back(kvFormatName(rq.kv) + " KV cache round trip");
  if (o.round_p_to_bf16) steps.emplace_back("P rounded to bf16");
  std::string pipeline;
  for (const auto& s : steps) pipeline += (pipeline.empty() ? "" : " · ") + s;

  out.pipeline = pipeline;
  out.batch = 2;
  out.q_len = len.q_len[0];
  out.context = len.context[0];
  out.splits = o.splits;
  out.window = mask.window;
  out.top_k = top_k;
  out.scaled_down = len.scaled || top_k != layer.sparse_top_k;
  if (out.scaled_down) {
    out.scaled_note = fmt::format(
        "lengths scaled to contexts {} and {}{} to fit the time budget", len.context[0], len.context[1],
        top_k != layer.sparse_top_k ? fmt::format(", top-k {} instead of {}", top_k, layer.sparse_top_k) : "");
  }
  out.max_abs_err = max_abs;
  out.max_rel_err = max_ref > 0 ? max_abs / max_ref : max_abs;
  out.tolerance = checkTolerance(rq.kv, rq.dtype);
  out.passed = std::isfinite(out.max_rel_err) && out.max_rel_err <= out.tolerance;
  return out;
}

}  // namespace attnsim
