// property + golden: every reference-kernel variant equals the golden attention over many random
// shapes and seeds (fp32 inputs, P not rounded: only float accumulation differs), and a planted
// bug is caught.
#include <gtest/gtest.h>

#include <random>

#include "kernels/Attention.hpp"
#include "kernels/Mla.hpp"

namespace attnsim::kernels {
namespace {

constexpr double kFp32Tolerance = 2e-5;  // normalized max error of float vs double accumulation

Matrix randn(std::mt19937& rng, Eigen::Index rows, Eigen::Index cols) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

struct Shape {
  std::int64_t prefix, q_len;
};

Problem makeProblem(unsigned seed, Geometry g, MaskSpec mask, const std::vector<Shape>& shapes, bool sinks = false) {
  std::mt19937 rng(seed);
  Problem p;
  p.geo = g;
  p.mask = mask;
  if (sinks) {
    std::normal_distribution<float> n(0.0f, 2.0f);
    for (int h = 0; h < g.num_heads; ++h) p.sinks.push_back(n(rng));
  }
  for (const auto& s : shapes) {
    RequestData r;
    r.prefix = s.prefix;
    r.q = randn(rng, s.q_len, static_cast<Eigen::Index>(g.num_heads) * g.d_qk);
    r.k = randn(rng, s.prefix + s.q_len, static_cast<Eigen::Index>(g.num_kv_heads) * g.d_qk);
    r.v = randn(rng, s.prefix + s.q_len, static_cast<Eigen::Index>(g.num_kv_heads) * g.d_v);
    p.requests.push_back(std::move(r));
  }
  return p;
}

double normalizedError(const Result& got, const Result& ref) {
  double err = 0, mag = 0;
  for (std::size_t r = 0; r < ref.out.size(); ++r) {
    err = std::max(err, (got.out[r] - ref.out[r]).cwiseAbs().maxCoeff());
    mag = std::max(mag, ref.out[r].cwiseAbs().maxCoeff());
    for (Eigen::Index i = 0; i < ref.lse[r].size(); ++i) {
      const double a = ref.lse[r].data()[i];
      const double b = got.lse[r].data()[i];
      if (std::isfinite(a)) err = std::max(err, std::fabs(a - b) * 1e-2);  // LSE within 1e-3 absolute
    }
  }
  return mag > 0 ? err / mag : err;
}

TiledOptions exact(int tq, int tkv) {
  TiledOptions o;
  o.tile_q = tq;
  o.tile_kv = tkv;
  o.round_p_to_bf16 = false;
  return o;
}

// Odd lengths, lengths not multiples of pages or tiles, empty prefixes, q_len > 1 decodes.
const std::vector<std::vector<Shape>> kShapes{
    {{0, 1}},   {{0, 37}, {0, 64}}, {{100, 1}, {7, 1}, {255, 1}}, {{63, 3}, {200, 5}}, {{0, 130}, {129, 17}},
    {{1000, 1}}};

TEST(Kernels, TiledEqualsGoldenOverShapesTilesAndGqa) {
  unsigned seed = 1;
  for (const Geometry g : {Geometry{4, 4, 32, 32, 0.17}, Geometry{8, 2, 64, 48, 0.125}, Geometry{6, 1, 16, 16, 0.25}}) {
    for (const auto& shapes : kShapes) {
      const Problem p = makeProblem(seed++, g, {}, shapes);
      const Result ref = goldenAttention(p);
      for (const auto& [tq, tkv] : std::vector<std::pair<int, int>>{{16, 16}, {64, 32}, {128, 128}, {7, 13}}) {
        EXPECT_LT(normalizedError(tiledAttention(p, exact(tq, tkv)), ref), kFp32Tolerance)
            << "heads " << g.num_heads << "/" << g.num_kv_heads << " tiles " << tq << "x" << tkv << " seed " << seed;
      }
    }
  }
}

TEST(Kernels, PagedNativeAndPerTokenEqualGolden) {
  unsigned seed = 100;
  for (const int page : {1, 7, 16, 64}) {
    for (const auto layout : {KvLayout::PagedNative, KvLayout::PagedPerToken}) {
      const Problem p = makeProblem(seed++, {8, 2, 32, 32, 0.2}, {}, {{300, 1}, {17, 9}, {0, 45}});
      TiledOptions o = exact(32, 32);
      o.layout = layout;
      o.page_size = page;
      o.seed = seed;
      EXPECT_LT(normalizedError(tiledAttention(p, o), goldenAttention(p)), kFp32Tolerance) << "page " << page;
    }
  }
}

TEST(Kernels, SplitKvWithLseMergeEqualsGolden) {
  unsigned seed = 200;
  for (const int splits : {2, 3, 5, 16}) {
    for (const auto& shapes : kShapes) {
      const Problem p = makeProblem(seed++, {8, 4, 32, 32, 0.18}, {}, shapes);
      TiledOptions o = exact(16, 16);
      o.splits = splits;
      EXPECT_LT(normalizedError(tiledAttention(p, o), goldenAttention(p)), kFp32Tolerance) << "splits " << splits;
    }
  }
}

TEST(Kernels, MasksWindowChunkAndNonCausal) {
  unsigned seed = 300;
  const std::vector<MaskSpec> masks{{true, 32, 0}, {true, 500, 0}, {true, 1, 0},
                                    {true, 0, 24}, {true, 16, 24}, {false, 0, 0}};
  for (const MaskSpec& mask : masks) {
    for (const auto& shapes : kShapes) {
      const Problem p = makeProblem(seed++, {4, 2, 32, 32, 0.2}, mask, shapes);
      TiledOptions o = exact(16, 16);
      o.splits = 2;
      o.layout = KvLayout::PagedNative;
      o.page_size = 7;
      EXPECT_LT(normalizedError(tiledAttention(p, o), goldenAttention(p)), kFp32Tolerance)
          << "window " << mask.window << " chunk " << mask.chunk << " causal " << mask.causal;
    }
  }
}

TEST(Kernels, SinksEnterTheDenominatorOnce) {
  for (const int splits : {1, 3}) {
    const Problem p = makeProblem(400 + splits, {8, 2, 32, 32, 0.18}, {true, 16, 0}, {{40, 1}, {0, 33}}, true);
    TiledOptions o = exact(16, 16);
    o.splits = splits;
    const Result ref = goldenAttention(p);
    EXPECT_LT(normalizedError(tiledAttention(p, o), ref), kFp32Tolerance);
    // And the sinks matter: without them the answer differs.
    Problem no_sinks = p;
    no_sinks.sinks.clear();
    EXPECT_GT(normalizedError(goldenAttention(no_sinks), ref), 1e-3);
  }
}

TEST(Kernels, SpeculativeChainAndTreeVerification) {
  for (const int topk : {1, 2, 3}) {
    Problem p = makeProblem(500 + topk, {8, 2, 32, 32, 0.2}, {}, {{120, 7}, {33, 10}});
    for (auto& r : p.requests) {
      r.tree_parent.assign(static_cast<std::size_t>(r.qLen()), -1);
      // Levels of topk children: node n's parent is on the level above.
      for (std::int64_t n = 1; n < r.qLen(); ++n)
        r.tree_parent[static_cast<std::size_t>(n)] = static_cast<int>((n - 1) / topk);
    }
    TiledOptions o = exact(16, 16);
    o.splits = 2;
    EXPECT_LT(normalizedError(tiledAttention(p, o), goldenAttention(p)), kFp32Tolerance) << "topk " << topk;
  }
  // A chain tree equals plain causal attention over the drafts.
  Problem chain = makeProblem(510, {4, 4, 16, 16, 0.25}, {}, {{50, 6}});
  const Result causal = goldenAttention(chain);
  chain.requests[0].tree_parent = {-1, 0, 1, 2, 3, 4};
  EXPECT_LT(normalizedError(goldenAttention(chain), causal), 1e-12);
}

TEST(Kernels, SparseTopKAttendsOnlyItsKeys) {
  Problem p = makeProblem(600, {8, 1, 32, 32, 0.2}, {}, {{200, 3}, {50, 1}});
  std::mt19937 rng(9);
  for (auto& r : p.requests) {
    for (std::int64_t i = 0; i < r.qLen(); ++i) {
      std::vector<int> keys;
      for (std::int64_t j = 0; j <= r.prefix + i; ++j) {
        if (rng() % 4 == 0 || j == r.prefix + i) keys.push_back(static_cast<int>(j));
      }
      r.key_sets.push_back(keys);
    }
  }
  TiledOptions o = exact(16, 32);
  o.splits = 3;
  o.layout = KvLayout::PagedNative;
  o.page_size = 64;
  EXPECT_LT(normalizedError(tiledAttention(p, o), goldenAttention(p)), kFp32Tolerance);
}

TEST(Kernels, MlaAbsorbedEqualsNaive) {
  std::mt19937 rng(700);
  MlaProblem m;
  m.heads = 4;
  m.kv_lora = 64;
  m.nope = 16;
  m.rope = 8;
  m.v_dim = 16;
  m.w_uk = randn(rng, static_cast<Eigen::Index>(m.heads) * m.nope, m.kv_lora) * 0.125f;
  m.w_uv = randn(rng, static_cast<Eigen::Index>(m.heads) * m.v_dim, m.kv_lora) * 0.125f;
  for (const auto& [prefix, q] : std::vector<std::pair<int, int>>{{0, 9}, {77, 1}, {30, 4}}) {
    MlaProblem::Request r;
    r.prefix = prefix;
    r.q_nope = randn(rng, q, static_cast<Eigen::Index>(m.heads) * m.nope);
    r.q_rope = randn(rng, q, static_cast<Eigen::Index>(m.heads) * m.rope);
    r.c_kv = randn(rng, prefix + q, m.kv_lora);
    r.k_rope = randn(rng, prefix + q, m.rope);
    m.requests.push_back(r);
  }
  const Result naive = goldenAttention(naiveMla(m));
  const Result absorbed = unabsorb(m, goldenAttention(absorbedMla(m)));
  EXPECT_LT(normalizedError(absorbed, naive), kFp32Tolerance);  // the same function (projections in float)
  TiledOptions o = exact(16, 16);
  o.splits = 2;
  o.layout = KvLayout::PagedNative;
  o.page_size = 64;
  EXPECT_LT(normalizedError(unabsorb(m, tiledAttention(absorbedMla(m), o)), naive), kFp32Tolerance);
  EXPECT_EQ(absorbedMla(m).geo.d_qk, 72);  // kv_lora + rope; DeepSeek: 512 + 64 = 576
}

TEST(Kernels, CascadeMergesASharedPrefixComputedOnce) {
  Problem p = makeProblem(800, {8, 2, 32, 32, 0.2}, {}, {{96, 5}, {96, 1}, {96, 12}});
  // Give every request the same first 96 KV rows.
  for (std::size_t r = 1; r < p.requests.size(); ++r) {
    p.requests[r].k.topRows(96) = p.requests[0].k.topRows(96);
    p.requests[r].v.topRows(96) = p.requests[0].v.topRows(96);
  }
  EXPECT_LT(normalizedError(cascadeAttention(p, 96, exact(16, 16)), goldenAttention(p)), kFp32Tolerance);
}

TEST(Kernels, UnfusedAndBf16RoundedPathsStayClose) {
  const Problem p = makeProblem(900, {8, 2, 64, 64, 0.125}, {}, {{0, 50}, {300, 1}});
  TiledOptions unfused = exact(16, 16);
  unfused.unfused = true;
  EXPECT_LT(normalizedError(tiledAttention(p, unfused), goldenAttention(p)), kFp32Tolerance);
  TiledOptions bf16 = exact(64, 64);
  bf16.round_p_to_bf16 = true;
  const double err = normalizedError(tiledAttention(p, bf16), goldenAttention(p));
  EXPECT_GT(err, kFp32Tolerance);           // rounding P is visible
  EXPECT_LT(err, 3 * std::ldexp(1.0, -8));  // and within three bf16 roundoffs
}

// A planted bug: merging split partials by plain averaging instead of by log-sum-exp weights.
TEST(Kernels, APlantedMergeBugIsCaught) {
  const Problem p = makeProblem(1000, {4, 2, 32, 32, 0.2}, {}, {{255, 1}, {100, 1}});
  TiledOptions o = exact(16, 16);
  std::vector<Result> parts;
  for (int s = 0; s < 2; ++s) {
    Problem half = p;
    for (auto& r : half.requests) {
      const std::int64_t mid = r.kvLen() / 2;
      std::vector<std::vector<int>> sets(static_cast<std::size_t>(r.qLen()));
      for (std::int64_t j = s == 0 ? 0 : mid; j < (s == 0 ? mid : r.kvLen()); ++j)
        sets[0].push_back(static_cast<int>(j));
      r.key_sets = sets;
    }
    parts.push_back(tiledAttention(half, o));
  }
  Result correct;
  mergePartials({&parts[0], &parts[1]}, correct);
  const Result ref = goldenAttention(p);
  EXPECT_LT(normalizedError(correct, ref), kFp32Tolerance);
  Result buggy = parts[0];
  for (std::size_t r = 0; r < buggy.out.size(); ++r) buggy.out[r] = (parts[0].out[r] + parts[1].out[r]) / 2;
  EXPECT_GT(normalizedError(buggy, ref), 100 * kFp32Tolerance) << "the comparison must catch a wrong merge";
  // An off-by-one sliding window is caught too.
  Problem window = p;
  window.mask.window = 64;
  Problem off_by_one = window;
  off_by_one.mask.window = 65;
  EXPECT_GT(normalizedError(tiledAttention(off_by_one, o), goldenAttention(window)), 100 * kFp32Tolerance);
}

}  // namespace
}  // namespace attnsim::kernels
