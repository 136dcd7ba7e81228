#include "simulator/Checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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

float roundTo(DType dtype, float x) {
  if (dtype == DType::BF16) return roundToBf16(x);
  if (dtype == DType::FP16) return roundToFp16(x);
  return x;
}

Matrix randomMatrix(std::mt19937& rng, Eigen::Index rows, Eigen::Index cols, DType dtype, float sd = 1.0f) {
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
  std::array<std::int64_t, 2> q_len{};
  std::array<std::int64_t, 2> context{};
  bool scaled = false;
};

Lengths lengthsFor(Phase phase, std::int64_t tree_nodes, double flops_per_pair, double budget) {
  const std::array<std::int64_t, 2> base{300, 173};  // odd lengths, not multiples of pages or tiles
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

// The algorithm the kernel family computes with, as the tiled reference kernel runs it.
TiledOptions tiledOptionsFor(const CheckRequest& rq) {
  const KernelFamily& k = *rq.kernel;
  const bool decode_like = rq.phase == Phase::Decode || rq.phase == Phase::Verify;
  TiledOptions o;
  o.tile_q = k.algorithm == "paged_decode" ? 16 : std::max(1, k.tile_q);
  o.tile_kv = std::max(16, k.tile_kv);
  o.layout = k.paging == Paging::Native     ? KvLayout::PagedNative
             : k.paging == Paging::Emulated ? KvLayout::PagedPerToken
                                            : KvLayout::Contiguous;
  o.page_size = static_cast<int>(std::max<std::int64_t>(1, rq.page_size));
  o.unfused = k.algorithm == "unfused";
  o.round_p_to_bf16 = rq.dtype != DType::FP32 && !o.unfused;
  o.splits = decode_like && k.split_kv ? 3 : 1;
  o.seed = rq.seed;
  return o;
}

// What the random inputs are drawn for. Every draw comes from one generator in a fixed order, so a
// seed reproduces a check exactly.
struct Inputs {
  std::mt19937& rng;
  const CheckRequest& rq;
  const AttentionLayerSpec& layer;
  const Lengths& len;
  MaskSpec mask;
  std::int64_t top_k = 0;  // scaled with the lengths
};

// Each row's top-k of random indexer scores among the keys it may see; none for dense attention.
std::vector<std::vector<int>> keySets(const Inputs& in, std::int64_t q_len, std::int64_t prefix, std::int64_t kv_len) {
  std::vector<std::vector<int>> sets;
  if (in.top_k <= 0) return sets;
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (std::int64_t i = 0; i < q_len; ++i) {
    const std::int64_t visible = std::min(kv_len, prefix + i + 1);
    std::vector<std::pair<float, int>> scored;
    for (std::int64_t j = 0; j < visible; ++j) scored.emplace_back(u(in.rng), static_cast<int>(j));
    const auto keep = static_cast<std::size_t>(std::min<std::int64_t>(in.top_k, visible));
    std::partial_sort(scored.begin(), scored.begin() + static_cast<long>(keep), scored.end(), std::greater<>());
    std::vector<int> keys;
    for (std::size_t a = 0; a < keep; ++a) keys.push_back(scored[a].second);
    std::sort(keys.begin(), keys.end());
    sets.push_back(std::move(keys));
  }
  return sets;
}

MlaProblem randomMlaProblem(const Inputs& in) {
  const MlaGeometry& g = *in.layer.mla;
  const int heads = in.layer.num_heads;
  const DType dtype = in.rq.dtype;
  MlaProblem m;
  m.heads = heads;
  m.kv_lora = g.kv_lora_rank;
  m.nope = g.qk_nope_head_dim;
  m.rope = g.qk_rope_head_dim;
  m.v_dim = g.v_head_dim;
  m.mask = in.mask;
  const float w_sd = 1.0f / std::sqrt(static_cast<float>(g.kv_lora_rank));
  m.w_uk = randomMatrix(in.rng, static_cast<Eigen::Index>(heads) * m.nope, m.kv_lora, dtype, w_sd);
  m.w_uv = randomMatrix(in.rng, static_cast<Eigen::Index>(heads) * m.v_dim, m.kv_lora, dtype, w_sd);
  for (int r = 0; r < 2; ++r) {
    MlaProblem::Request req;
    req.prefix = in.len.context[r] - in.len.q_len[r];
    req.q_nope = randomMatrix(in.rng, in.len.q_len[r], static_cast<Eigen::Index>(heads) * m.nope, dtype);
    req.q_rope = randomMatrix(in.rng, in.len.q_len[r], static_cast<Eigen::Index>(heads) * m.rope, dtype);
    req.c_kv = randomMatrix(in.rng, in.len.context[r], m.kv_lora, dtype);
    req.k_rope = randomMatrix(in.rng, in.len.context[r], m.rope, dtype);
    req.key_sets = keySets(in, in.len.q_len[r], req.prefix, in.len.context[r]);
    m.requests.push_back(std::move(req));
  }
  return m;
}

Problem randomProblem(const Inputs& in) {
  const AttentionLayerSpec& layer = in.layer;
  const CheckRequest& rq = in.rq;
  const int heads = layer.num_heads;
  Problem p;
  p.geo = {heads, layer.num_kv_heads, layer.head_dim, layer.head_dim_v,
           1.0 / std::sqrt(static_cast<double>(layer.head_dim))};
  p.mask = in.mask;
  if (layer.sinks) {
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (int h = 0; h < heads; ++h) p.sinks.push_back(n(in.rng));
  }
  for (int r = 0; r < 2; ++r) {
    const std::int64_t q_len = in.len.q_len[r];
    const std::int64_t context = in.len.context[r];
    RequestData d;
    d.prefix = context - q_len;
    d.q = randomMatrix(in.rng, q_len, static_cast<Eigen::Index>(heads) * layer.head_dim, rq.dtype);
    d.k = randomMatrix(in.rng, context, static_cast<Eigen::Index>(layer.num_kv_heads) * layer.head_dim, rq.dtype);
    d.v = randomMatrix(in.rng, context, static_cast<Eigen::Index>(layer.num_kv_heads) * layer.head_dim_v, rq.dtype);
    if (rq.phase == Phase::Verify && rq.tree_topk > 1) d.tree_parent = treeParents(q_len, rq.tree_topk);
    d.key_sets = keySets(in, q_len, d.prefix, context);
    p.requests.push_back(std::move(d));
  }
  return p;
}

// The error is judged against the size of the golden output, over every request.
struct ErrorStats {
  double max_abs = 0;
  double max_ref = 0;

  void add(const Result& got, const Result& ref) {
    for (std::size_t r = 0; r < ref.out.size(); ++r) {
      max_abs = std::max(max_abs, (got.out[r] - ref.out[r]).cwiseAbs().maxCoeff());
      max_ref = std::max(max_ref, ref.out[r].cwiseAbs().maxCoeff());
    }
  }
};

// The golden runs the naive form in full precision; the kernel reads the latent cache in the KV
// format, weight-absorbed or up-projected per head. Returns the form's pipeline steps.
std::vector<std::string> checkMla(const Inputs& in, const TiledOptions& o, bool absorbed, ErrorStats& err,
                                  CheckOutcome& out) {
  const MlaProblem m = randomMlaProblem(in);
  const Result ref = goldenAttention(naiveMla(m));
  MlaProblem cached = m;  // the latent cache holds the KV format
  for (auto& req : cached.requests) {
    quantize(req.c_kv, 1, m.kv_lora, in.rq.kv);
    quantize(req.k_rope, 1, m.rope, in.rq.kv);
  }
  std::vector<std::string> steps;
  if (absorbed) {
    err.add(unabsorb(m, tiledAttention(absorbedMla(cached), o)), ref);
    steps.emplace_back(fmt::format("MLA weight-absorbed ({}-wide keys, {}-wide values, one latent KV head)",
                                   m.kv_lora + m.rope, m.kv_lora));
  } else {
    err.add(tiledAttention(naiveMla(cached), o), ref);
    steps.emplace_back("MLA naive (latent up-projected to per-head K and V)");
  }
  out.heads = m.heads;
  out.kv_heads = absorbed ? 1 : m.heads;
  out.d_qk = absorbed ? m.kv_lora + m.rope : m.nope + m.rope;
  out.d_v = absorbed ? m.kv_lora : m.v_dim;
  return steps;
}

// MHA, GQA, MQA: the golden on the inputs as drawn, the kernel on K and V in the KV format.
std::vector<std::string> checkMha(const Inputs& in, const TiledOptions& o, ErrorStats& err, CheckOutcome& out) {
  const AttentionLayerSpec& layer = in.layer;
  const Problem p = randomProblem(in);
  const Result ref = goldenAttention(p);
  Problem cached = p;
  for (auto& d : cached.requests) {
    quantize(d.k, layer.num_kv_heads, layer.head_dim, in.rq.kv);
    quantize(d.v, layer.num_kv_heads, layer.head_dim_v, in.rq.kv);
  }
  err.add(tiledAttention(cached, o), ref);
  out.heads = layer.num_heads;
  out.kv_heads = layer.num_kv_heads;
  out.d_qk = layer.head_dim;
  out.d_v = layer.head_dim_v;
  std::vector<std::string> steps;
  if (layer.num_heads != layer.num_kv_heads)
    steps.emplace_back(fmt::format("GQA {} query heads per KV head", layer.num_heads / layer.num_kv_heads));
  if (layer.sinks) steps.emplace_back("attention sinks");
  if (in.rq.phase == Phase::Verify)
    steps.emplace_back(in.rq.tree_topk > 1 ? fmt::format("draft tree (topk {}) mask", in.rq.tree_topk) : "draft chain");
  return steps;
}

// The form's steps framed by the algorithm before and the paging, splits, masks and formats after.
std::string pipelineText(std::vector<std::string> steps, const Inputs& in, const TiledOptions& o) {
  steps.insert(steps.begin(), o.unfused ? std::string("unfused (full score matrix)")
                                        : fmt::format("tiled online softmax {}x{}", o.tile_q, o.tile_kv));
  if (o.layout == KvLayout::PagedNative) steps.push_back(fmt::format("paged KV, native pages of {}", o.page_size));
  if (o.layout == KvLayout::PagedPerToken)
    steps.push_back(fmt::format("paged KV emulated by per-token indices (pages of {})", o.page_size));
  if (o.splits > 1) steps.push_back(fmt::format("split-KV x{} + log-sum-exp merge", o.splits));
  if (in.mask.window > 0) steps.push_back(fmt::format("sliding window {}", in.mask.window));
  if (in.top_k > 0) steps.push_back(fmt::format("sparse top-{}", in.top_k));
  if (isQuantized(in.rq.kv)) steps.push_back(kvFormatName(in.rq.kv) + " KV cache round trip");
  if (o.round_p_to_bf16) steps.emplace_back("P rounded to bf16");
  std::string pipeline;
  for (const auto& s : steps) pipeline += (pipeline.empty() ? "" : " · ") + s;
  return pipeline;
}

// The first request's shape, and how far the lengths and top-k were shrunk from the model's.
void describeShape(CheckOutcome& out, const Inputs& in, const TiledOptions& o) {
  const Lengths& len = in.len;
  const std::int64_t model_top_k = in.layer.sparse_top_k;
  out.batch = 2;
  out.q_len = len.q_len[0];
  out.context = len.context[0];
  out.splits = o.splits;
  out.window = in.mask.window;
  out.top_k = in.top_k;
  out.scaled_down = len.scaled || in.top_k != model_top_k;
  if (out.scaled_down) {
    out.scaled_note =
        fmt::format("lengths scaled to contexts {} and {}{} to fit the time budget", len.context[0], len.context[1],
                    in.top_k != model_top_k ? fmt::format(", top-k {} instead of {}", in.top_k, model_top_k) : "");
  }
}

}  // namespace

double checkTolerance(KvFormat kv, DType dtype) {
  // Three unit roundoffs of the coarsest format on the path (the KV cache, the inputs, and the
  // probabilities P that FlashAttention-style kernels round to the input dtype). Measured worst
  // cases over the catalog: 0.46 (bf16), 0.67 (fp8 e4m3), 0.55 (fp8 e5m2), 0.95 (fp4 e2m1) roundoffs.
  return 3.0 * std::max(unitRoundoff(kv), unitRoundoff(inputFormat(dtype)));
}

CheckOutcome runCheck(const CheckRequest& rq) {
  const KernelFamily& k = *rq.kernel;
  const AttentionLayerSpec& layer = *rq.layer;
  std::mt19937 rng(rq.seed);
  const std::int64_t tree_nodes = rq.tree_topk > 1 ? 7 : 4;
  const bool mla = layer.isMla();
  const bool absorbed = mla && k.attendsLatentCache();
  const int d_pair =
      mla ? (absorbed ? 576 + 512 : layer.head_dim + layer.head_dim_v) : layer.head_dim + layer.head_dim_v;
  const Lengths len = lengthsFor(rq.phase, tree_nodes, 2.0 * layer.num_heads * d_pair, rq.flop_budget);
  const TiledOptions o = tiledOptionsFor(rq);
  Inputs in{rng, rq, layer, len, {}, layer.sparse_top_k};
  in.mask.causal = layer.causal;
  in.mask.window = layer.sliding_window;
  if (in.top_k > 0) in.top_k = std::max<std::int64_t>(8, len.context[0] / 4);  // scaled with the lengths

  CheckOutcome out;
  ErrorStats err;
  std::vector<std::string> steps = mla ? checkMla(in, o, absorbed, err, out) : checkMha(in, o, err, out);
  out.pipeline = pipelineText(std::move(steps), in, o);
  describeShape(out, in, o);
  out.max_abs_err = err.max_abs;
  out.max_rel_err = err.max_ref > 0 ? err.max_abs / err.max_ref : err.max_abs;
  out.tolerance = checkTolerance(rq.kv, rq.dtype);
  out.passed = std::isfinite(out.max_rel_err) && out.max_rel_err <= out.tolerance;
  return out;
}

}  // namespace attnsim
