// The split and tile rules the engines' kernels follow where AIConfigurator's H100 rows showed the
// model missing them (backends/kernels/{fa4,mmha,triton-sglang}.yaml cite the engines' code), and
// how a measured surface follows a model that falls where such a rule changes its count.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

#include "cost/AttentionCost.hpp"
#include "hardware/AttentionSurface.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

AttentionCost callOn(const char* hw_id, const char* kernel_id, Phase phase, const AttentionShape& s, RequestGroup g,
                     std::int64_t page) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware(hw_id);
  const KernelModel k = resolveKernel(c.kernel(kernel_id), hw, phase);
  return predictAttention(s, k, resolveDevice(hw, DType::BF16), phase, std::span<const RequestGroup>(&g, 1), page);
}

TEST(SplitRules, VllmFa4RunsThirtyTwoSplitsWhileACallFitsTheGraphCaptureSizeAndItsOwnHeuristicBeyond) {
  const AttentionShape s = headsShape(8, 1, 512);
  EXPECT_EQ(callOn("h100-sxm", "fa4", Phase::Decode, s, {1, 1, 2}, 64).splits, 32);    // even over 2 keys
  EXPECT_EQ(callOn("h100-sxm", "fa4", Phase::Decode, s, {512, 1, 8}, 64).splits, 32);  // 512 tokens: still in
  // 1,024 tokens: past the capture size; FA4's heuristic leaves 1,024 query tiles on 132 SMs unsplit
  EXPECT_EQ(callOn("h100-sxm", "fa4", Phase::Decode, s, {1024, 1, 8}, 64).splits, 1);
}

// The 32 graph splits are vLLM's wrapper's (it passes max_num_splits); SGLang's FlashAttentionBackend
// passes num_splits 0, so the same kernel under SGLang runs FA4's own heuristic.
TEST(SplitRules, OnlyVllmsCallsOfFa4RunTheGraphSplitCount) {
  const auto s = headsShape(32, 8, 128);
  ASSERT_EQ(callOn("h100-sxm", "fa4", Phase::Decode, s, {1, 1, 2048}, 64).splits, 32) << "the family's rule";
  const auto r = runAttnsimInProcess(
      {"--json", "predict", "--engine", "sglang", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--backend",
       "fa4", "--phase", "decode", "--batch", "1", "--context", "2048"},
      suiteScratchDir("split-rules"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto layer = nlohmann::json::parse(r.out).at("attention_layers").at(0);
  EXPECT_EQ(layer.at("kernel"), "fa4");
  EXPECT_NE(layer.at("splits").get<int>(), 32) << "SGLang's call runs FA4's heuristic";
}

TEST(SplitRules, TensorRtLlmMmhaSplitsEveryQueryHeadOverOneWaveOfTheSms) {
  // 2 requests of one head on 132 SMs: 66 blocks each, over the 32 a search would stop at
  EXPECT_EQ(callOn("h100-sxm", "mmha", Phase::Decode, headsShape(1, 1, 128), {2, 1, 65536}, 64).splits, 66);
  // 8 requests of 32 heads fill the SMs: one block each
  EXPECT_EQ(callOn("h100-sxm", "mmha", Phase::Decode, headsShape(32, 32, 128), {8, 1, 4096}, 64).splits, 1);
  // a short history: one split per 128 keys at most (head dim 128), 256 keys with the new token
  EXPECT_EQ(callOn("h100-sxm", "mmha", Phase::Decode, headsShape(1, 1, 128), {1, 1, 255}, 64).splits, 2);
}

TEST(TileRules, SglangTritonPrefillOnHopperRunsItsHeadDimsBlocksWhileDecodeAndBlackwellKeepTheirOwn) {
  const AttentionShape d512 = headsShape(1, 1, 512);
  const AttentionCost hopper = callOn("h100-sxm", "triton-sglang", Phase::Prefill, d512, {1, 4096, 4096}, 1);
  EXPECT_DOUBLE_EQ(hopper.ctas, 4096.0 / 32);  // BLOCK_M 32 above head dim 256
  EXPECT_DOUBLE_EQ(hopper.slots, 132);         // one CTA per SM
  const AttentionCost d128 =
      callOn("h100-sxm", "triton-sglang", Phase::Prefill, headsShape(1, 1, 128), {1, 4096, 4096}, 1);
  EXPECT_DOUBLE_EQ(d128.ctas, 4096.0 / 64);  // the family's tile, as the harness's d128 rows were fitted
  EXPECT_DOUBLE_EQ(d128.slots, 2 * 132);     // two CTAs per SM at head dim 128
  const AttentionCost d256 =
      callOn("h100-sxm", "triton-sglang", Phase::Prefill, headsShape(1, 1, 256), {1, 4096, 4096}, 1);
  EXPECT_DOUBLE_EQ(d256.ctas, 4096.0 / 128);  // BLOCK_M 128 up to head dim 256
  EXPECT_DOUBLE_EQ(d256.slots, 132);
  const AttentionCost blackwell = callOn("b200", "triton-sglang", Phase::Prefill, d512, {1, 4096, 4096}, 1);
  EXPECT_DOUBLE_EQ(blackwell.ctas, 4096.0 / 64);  // the family's own tile: the rules hold on Hopper only
  const AttentionCost decode = callOn("h100-sxm", "triton-sglang", Phase::Decode, d512, {64, 1, 4096}, 1);
  EXPECT_DOUBLE_EQ(decode.slots, 4 * 132);  // the decode kernel's occupancy: the extend kernel's rules do not reach it
}

TEST(AttentionSurfaceGrid, ACorrectedTimeFallsOnlyWhereTheModelFallsAndNoFurther) {
  SurfaceSlice slice;
  slice.log2_batch = {0, 1, 2};
  slice.log2_length = {0};
  slice.log_ratio = {0, -1, -1};
  // The model rises, then falls where a split rule changes its count (20 µs to 5 µs).
  const CorrectedGrid g = correctedGrid(slice, {10, 20, 5});
  EXPECT_NEAR(std::exp(g.log_time[0]), 10, 1e-9);
  EXPECT_NEAR(std::exp(g.log_time[1]), 10, 1e-9);   // 20 / e lifted to 10: more work never takes less time
  EXPECT_NEAR(std::exp(g.log_time[2]), 2.5, 1e-9);  // 5 / e: falls with the model (to a quarter), no further
}

SurfaceSlice sliceOf(int heads, int kv_heads, std::vector<double> log2_batch, std::vector<double> log_ratio) {
  SurfaceSlice s;
  s.engine = "vllm";
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = 192;
  s.log2_batch = std::move(log2_batch);
  s.log2_length = {5};
  s.log_ratio = std::move(log_ratio);
  return s;
}

TEST(AttentionSurfaceSlices, AUnifiedAttentionSliceIsMatchedAtTheCallsProgramCountNotItsBatch) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& b200 = c.hardware("b200");
  const KernelModel unified = resolveKernel(c.kernel("triton-unified"), b200, Phase::Decode);
  const SurfaceSlice slice = sliceOf(64, 4, {0, 1, 2, 3}, {0.1, 0.2, 0.3, 0.4});
  // 32/2 heads: half the (request, KV head) programs per request, so batch 2b launches what the slice's b did.
  const SurfaceSlice fewer = surfaceSliceFor(slice, headsShape(32, 2, 192), unified, Phase::Decode);
  EXPECT_EQ(fewer.log2_batch, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(fewer.log_ratio, slice.log_ratio);
  // 64/8 heads: twice the programs; the slice's batch 1 would be half a request and is dropped.
  const SurfaceSlice more = surfaceSliceFor(slice, headsShape(64, 8, 192), unified, Phase::Decode);
  EXPECT_EQ(more.log2_batch, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(more.log_ratio, (std::vector<double>{0.2, 0.3, 0.4}));
  // A prefill's programs follow the packed query rows: 1/1 heads run an eighth of 8/1's.
  const KernelModel prefill = resolveKernel(c.kernel("triton-unified"), b200, Phase::Prefill);
  const SurfaceSlice rows =
      surfaceSliceFor(sliceOf(8, 1, {0, 1}, {0.1, 0.2}), headsShape(1, 1, 192), prefill, Phase::Prefill);
  EXPECT_EQ(rows.log2_batch, (std::vector<double>{3, 4}));
  // A family without the rule keeps matching at the batch.
  const KernelModel fa3 = resolveKernel(c.kernel("fa3"), c.hardware("h100-sxm"), Phase::Decode);
  EXPECT_EQ(surfaceSliceFor(slice, headsShape(32, 2, 192), fa3, Phase::Decode).log2_batch, slice.log2_batch);
}

TEST(AttentionSurfaceSlices, MatchedAtTheProgramCountTheNearestSliceIsTheNearestInGqaGroup) {
  AttentionSurface surface;
  surface.slices = {sliceOf(8, 1, {0}, {0}), sliceOf(64, 4, {0}, {0})};
  SurfaceShape shape{"vllm", 16, 1, 192};
  EXPECT_EQ(surface.nearest(shape)->heads, 8);  // nearest in heads and KV heads
  shape.by_group = true;
  EXPECT_EQ(surface.nearest(shape)->heads, 64);  // the same group of 16 query heads per KV head
  shape.heads = 2;
  EXPECT_EQ(surface.nearest(shape)->heads, 8);  // group 2 is nearer 8 than 16
}

}  // namespace
// SGLang's decode of one query head per KV head runs its non-grouped kernel (_fwd_kernel_stage1), whose time the
// family gives as a multiple of the grouped kernel's at the same programs (performance.group1_decode, Hopper).
TEST(Group1Decode, SglangTritonDecodeOfOneQueryHeadPerKvHeadRunsTheNonGroupedKernelOnHopperOnly) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& h100 = c.hardware("h100-sxm");
  const KernelModel k = resolveKernel(c.kernel("triton-sglang"), h100, Phase::Decode);
  KernelModel grouped = k;
  grouped.group1_rules = {};
  const DeviceModel dev = resolveDevice(h100, DType::BF16);
  const RequestGroup g{64, 1, 4096, 1};
  const AttentionShape mha = headsShape(1, 1, 256);
  const Group1DecodeRule* rule = group1RuleFor(mha, k, Phase::Decode);
  ASSERT_NE(rule, nullptr);
  EXPECT_GT(rule->factor, 1.0) << "at head size 256 over a 16-bit cache the group-1 kernel is the slower";
  const double one = predictAttention(mha, k, dev, Phase::Decode, std::span(&g, 1), 1).time_us;
  const double base = predictAttention(mha, grouped, dev, Phase::Decode, std::span(&g, 1), 1).time_us;
  EXPECT_NEAR(one, rule->factor * base + rule->fixed_us, 1e-9 * one);
  // A group of two runs the grouped kernel; a prefill, the extend kernel; the rules hold on Hopper only.
  const AttentionShape gqa = headsShape(2, 1, 256);
  EXPECT_EQ(group1RuleFor(gqa, k, Phase::Decode), nullptr);
  EXPECT_DOUBLE_EQ(predictAttention(gqa, k, dev, Phase::Decode, std::span(&g, 1), 1).time_us,
                   predictAttention(gqa, grouped, dev, Phase::Decode, std::span(&g, 1), 1).time_us);
  EXPECT_EQ(group1RuleFor(mha, resolveKernel(c.kernel("triton-sglang"), h100, Phase::Prefill), Phase::Prefill),
            nullptr);
  EXPECT_EQ(
      group1RuleFor(mha, resolveKernel(c.kernel("triton-sglang"), c.hardware("b200"), Phase::Decode), Phase::Decode),
      nullptr);
  // The rule follows the cache's width: FP8 at head size 512 has its own.
  AttentionShape fp8 = headsShape(1, 1, 512);
  fp8.kv_elem_bytes = 1;
  const Group1DecodeRule* narrow = group1RuleFor(fp8, k, Phase::Decode);
  ASSERT_NE(narrow, nullptr);
  EXPECT_NE(narrow, group1RuleFor(headsShape(1, 1, 512), k, Phase::Decode));
}

TEST(Group1Decode, ThroughASliceOfTheGroupedKernelItTakesThatKernelsCorrectedTimeAtTheSamePrograms) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& h100 = c.hardware("h100-sxm");
  AttentionSurface surface;
  SurfaceSlice slice;
  slice.engine = "sglang";
  slice.heads = 2;
  slice.kv_heads = 1;
  slice.head_dim = 256;
  slice.log2_batch = {0, 2, 4};
  slice.log2_length = {8, 12};
  slice.log_ratio = {0.3, -0.2, 0.1, 0.25, -0.4, 0.05};
  surface.slices = {slice};
  KernelModel k = resolveKernel(c.kernel("triton-sglang"), h100, Phase::Decode);
  k.surface = &surface;
  const DeviceModel dev = resolveDevice(h100, DType::BF16);
  const auto one = correctedGridFor(headsShape(1, 1, 256), k, dev, Phase::Decode, 1, "sglang");
  const auto two = correctedGridFor(headsShape(2, 1, 256), k, dev, Phase::Decode, 1, "sglang");
  ASSERT_TRUE(one && two);
  const Group1DecodeRule* rule = group1RuleFor(headsShape(1, 1, 256), k, Phase::Decode);
  ASSERT_NE(rule, nullptr);
  ASSERT_EQ(one->log_time.size(), two->log_time.size());
  for (std::size_t i = 0; i < one->log_time.size(); ++i) {
    EXPECT_NEAR(std::exp(one->log_time[i]), rule->factor * std::exp(two->log_time[i]) + rule->fixed_us, 1e-9)
        << "node " << i;
  }
}

}  // namespace attnsim::test
