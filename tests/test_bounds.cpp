// bounds: properties every prediction must have. Counts equal closed forms; no prediction beats
// its roofline lower bound; time never falls when context, batch or heads grow.
#include <gtest/gtest.h>

#include <array>

#include "cost/AttentionCost.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

struct Rig {
  const HardwareProfile& hw;
  KernelModel kernel;
  DeviceModel device;
};

Rig setup(const char* hw_id, const char* kernel_id) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware(hw_id);
  return {hw, resolveKernel(c.kernel(kernel_id), hw), resolveDevice(hw, DType::BF16)};
}

AttentionCost predict(const Rig& s, const AttentionShape& shape, Phase phase, RequestGroup g, std::int64_t page = 16) {
  return predictAttention(shape, s.kernel, s.device, phase, std::span<const RequestGroup>(&g, 1), page);
}

TEST(Bounds, CausalPrefillFlopsEqualTheClosedForm) {
  const Rig s = setup("h100-sxm", "fa3");
  const AttentionShape shape = headsShape(32, 8, 128);
  for (const std::int64_t n : {1, 7, 128, 1000, 4096}) {
    const auto cost = predict(s, shape, Phase::Prefill, {2, n, n});
    // Σ_{i=1..n} i keys per row, two GEMMs of width d per key, 32 heads, 2 requests.
    const double expected = 2.0 * 2 * 32 * (static_cast<double>(n * (n + 1)) / 2.0) * (128 + 128);
    EXPECT_DOUBLE_EQ(cost.flops, expected) << n;
    EXPECT_GE(cost.flops_tiled, cost.flops) << n;
  }
}

TEST(Bounds, UnfusedPathsComputeTheWholeRectangleAndAddTheirKernels) {
  const AttentionShape shape = headsShape(32, 8, 128);
  const std::int64_t n = 2048;
  for (const char* id : {"unfused-attention", "sdpa-math"}) {
    const Rig s = setup("h100-sxm", id);
    const auto cost = predict(s, shape, Phase::Prefill, {1, n, n}, 1);
    // The products run over the whole q × kv rectangle, masked or not.
    EXPECT_DOUBLE_EQ(cost.flops_tiled, 2.0 * 32 * static_cast<double>(n) * n * 256) << id;
    // Separate kernels one after another: their times add.
    EXPECT_DOUBLE_EQ(cost.time_us, cost.compute_us + cost.memory_us + cost.fixed_us) << id;
  }
  // PyTorch's math path upcasts to fp32: scores and K/V copies are twice as wide, K/V expanded
  // to every query head and the keys scaled, so it moves several times the bytes of a native path.
  const auto native = predict(setup("h100-sxm", "unfused-attention"), shape, Phase::Decode, {8, 1, 4096}, 1);
  const auto fp32 = predict(setup("h100-sxm", "sdpa-math"), shape, Phase::Decode, {8, 1, 4096}, 1);
  EXPECT_GT(fp32.bytes, 3 * native.bytes);
  // Per K/V element as stored (bf16, 2 bytes), group 4, fp32 copies: read 2 + upcast 4 + expand
  // 4 + 4·4 + keys scaled 2·4·4 (half the elements) + products 4·4 = 58 bytes on average.
  const double kv_elements = 2.0 * 8 * 4096 * 8 * 128;
  EXPECT_NEAR(fp32.bytes / kv_elements, 58.0, 1.0);
}

TEST(Bounds, TileRulesByHeadDimApply) {
  // The memory-efficient kernel steps 64 keys at a time up to head dim 64 (two CTAs per SM) and
  // 128 above: its family tile (128) holds at d 128, the d-64 rule changes the prediction.
  Rig s = setup("h100-sxm", "mem-efficient");
  ASSERT_EQ(s.kernel.tiles_by_head_dim[0].max_head_dim, 64);
  KernelModel plain = s.kernel;
  plain.tiles_by_head_dim = {};
  const RequestGroup g{1, 1, 8192};
  auto call = [&](const KernelModel& k, int d) {
    return predictAttention(headsShape(32, 32, d), k, s.device, Phase::Decode, std::span<const RequestGroup>(&g, 1), 1);
  };
  EXPECT_DOUBLE_EQ(call(s.kernel, 128).time_us, call(plain, 128).time_us);
  EXPECT_NE(call(s.kernel, 64).time_us, call(plain, 64).time_us);
  EXPECT_EQ(call(s.kernel, 64).ctas, call(plain, 64).ctas) << "one unit per head either way";
}

TEST(Bounds, PagedFlexDecodingSplitsOverItsPagePool) {
  // flex_decode sizes its splits over the KV length it is handed; under PagedAttention that is the
  // whole page pool, so one sequence fills only ceil(splits × sequence / pool) of them.
  Rig s = setup("h100-sxm", "flex-decoding");
  const AttentionShape shape = headsShape(32, 8, 128);
  KernelModel contiguous = s.kernel;
  contiguous.paged_emulated = false;
  auto splits = [&](const KernelModel& k, RequestGroup g) {
    return predictAttention(shape, k, s.device, Phase::Decode, std::span<const RequestGroup>(&g, 1), 128).splits;
  };
  // get_split_k: SMs // (batch x KV heads) x 2, at least 1 (split_rule per_sm), capped by the KV tiles.
  EXPECT_EQ(splits(contiguous, {1, 1, 4096}), 32) << "132 // 8 x 2";
  EXPECT_EQ(splits(contiguous, {8, 1, 4096}), 4) << "132 // 64 x 2 (the profiled grid is 1 x 64 x 4)";
  EXPECT_EQ(splits(contiguous, {32, 1, 4096}), 1) << "132 // 256 = 0: one split";
  EXPECT_EQ(splits(contiguous, {1, 1, 256}), 4) << "32 wanted, 4 tiles of 64 keys";
  KernelModel paged = s.kernel;
  paged.kv_pool_tokens = 8 * 4096;  // the batch's own pages: 2·132/(8·8) = 4 splits of 8,192 pool tokens
  EXPECT_EQ(splits(paged, {8, 1, 4096}), 1);
  paged.kv_pool_tokens = 4096;  // one sequence's pool: its splits are real
  EXPECT_GT(splits(paged, {1, 1, 4096}), 1);
  paged.kv_pool_tokens = 0;  // a serving pool: never split
  EXPECT_EQ(splits(paged, {1, 1, 4096}), 1);
}

TEST(Bounds, RollingWavesStreamBackToBackWithOneSerialTail) {
  // flex-decoding holds 5 latency-bound CTAs per SM: its waves' bytes stream back to back and one
  // unit's serial tail shows once (rolling), where a lockstep schedule pays it after every wave.
  Rig s = setup("h100-sxm", "flex-decoding");
  ASSERT_TRUE(s.kernel.rolling_waves);
  s.kernel.paged_emulated = false;  // contiguous K/V: the per_sm split rule alone
  s.kernel.key_us = 0.013;          // the H100 fit's order (13 ns a key)
  KernelModel lockstep = s.kernel;
  lockstep.rolling_waves = false;
  const AttentionShape shape = headsShape(32, 32, 128);
  auto call = [&](const KernelModel& k, RequestGroup g) {
    return predictAttention(shape, k, s.device, Phase::Decode, std::span<const RequestGroup>(&g, 1), 0);
  };
  // One wave (8 splits x 32 heads = 256 units on 660 slots): nothing follows, the schedules agree.
  EXPECT_DOUBLE_EQ(call(s.kernel, {1, 1, 4096}).time_us, call(lockstep, {1, 1, 4096}).time_us);
  // Two waves (32 x 32 = 1,024 units, one split of 8,192 keys each), bandwidth-bound: lockstep pays
  // the tail twice. A tail is the unit's key loop plus its Q load and O store (0.13 µs here).
  const RequestGroup big{32, 1, 8192};
  const double tail_us = 8192 * s.kernel.key_us;
  EXPECT_NEAR(call(lockstep, big).time_us - call(s.kernel, big).time_us, tail_us, 0.01 * tail_us);
  for (const std::int64_t n : {512, 2048, 16384}) {
    EXPECT_LE(call(s.kernel, {32, 1, n}).time_us, call(lockstep, {32, 1, n}).time_us) << n;
  }
}

TEST(Bounds, EmulatedPagingAddsItsLookupToEveryKeyOfAPagedCall) {
  // Under PagedAttention flex-decoding looks each key's logical position up in the page table before
  // masking its score: paged_key_ns more per key a unit visits, and nothing for contiguous K/V.
  Rig s = setup("h100-sxm", "flex-decoding");
  ASSERT_GT(s.kernel.paged_key_us, 0);
  s.kernel.kv_pool_tokens = 4096;  // one sequence's pool: the paged call splits as the contiguous one
  KernelModel no_lookup = s.kernel;
  no_lookup.paged_key_us = 0;
  const AttentionShape shape = headsShape(32, 8, 128);
  const RequestGroup g{1, 1, 4096};
  auto call = [&](const KernelModel& k, std::int64_t page) {
    return predictAttention(shape, k, s.device, Phase::Decode, std::span<const RequestGroup>(&g, 1), page);
  };
  const auto paged = call(s.kernel, 128);
  const auto unpriced = call(no_lookup, 128);
  ASSERT_EQ(paged.splits, unpriced.splits);
  // One wave of units, each visiting 4096 / splits keys: the call's time grows by their lookups.
  const double lookups_us = 4096.0 / paged.splits * s.kernel.paged_key_us;
  EXPECT_NEAR(paged.time_us - unpriced.time_us, lookups_us, 1e-6 * lookups_us);
  EXPECT_DOUBLE_EQ(call(s.kernel, 0).time_us, call(no_lookup, 0).time_us) << "contiguous K/V looks nothing up";
}

TEST(Bounds, ExtendAndDecodeFlopsEqualClosedForms) {
  const Rig s = setup("h100-sxm", "fa3");
  const AttentionShape shape = headsShape(64, 8, 128);
  // Extend: q new tokens over a prefix P: Σ_{i=1..q} (P + i).
  const std::int64_t q = 300, prefix = 5000;
  const std::int64_t attended_pairs = q * prefix + q * (q + 1) / 2;  // q * (q + 1) is even: exact
  EXPECT_DOUBLE_EQ(predict(s, shape, Phase::Extend, {1, q, prefix + q}).flops,
                   2.0 * 64 * static_cast<double>(attended_pairs) * 256);
  // Decode: one row per request over the whole context.
  EXPECT_DOUBLE_EQ(predict(s, shape, Phase::Decode, {16, 1, 8192}).flops, 2.0 * 16 * 64 * 8192 * 256);
}

TEST(Bounds, GqaAndWindowDecodeBytesEqualClosedForms) {
  const Rig s = setup("h100-sxm", "fa3");
  const AttentionShape gqa = headsShape(32, 8, 128);
  // 128 requests fill the machine (no KV split): Q + O + whole pages of K and V + int32 page table.
  const auto cost = predict(s, gqa, Phase::Decode, {128, 1, 1000}, 16);
  ASSERT_EQ(cost.splits, 1);
  const double qo = 2.0 * 128 * 32 * 128 * 2;
  EXPECT_DOUBLE_EQ(cost.bytes, qo + 128.0 * 1008 * 8 * 256 * 2 + 128.0 * 63 * 4);
  EXPECT_DOUBLE_EQ(cost.bytes_min, qo + 128.0 * 1000 * 8 * 256 * 2);
  // A 4096-token window over a 50000-token context reads only the window.
  AttentionShape window = gqa;
  window.window = 4096;
  const auto w = predict(s, window, Phase::Decode, {128, 1, 50000}, 16);
  EXPECT_DOUBLE_EQ(w.bytes, qo + 128.0 * 4096 * 8 * 256 * 2 + 128.0 * 256 * 4);
}

TEST(Bounds, SlidingWindowCapsAttendedKeys) {
  AttentionShape shape = headsShape(32, 8, 128);
  shape.window = 4096;
  // Prefill of 10000 tokens: rows 1..4096 ramp, the remaining 5904 rows see 4096 keys each.
  EXPECT_DOUBLE_EQ(attendedKeys({1, 10000, 10000}, shape), 4096.0 * 4097 / 2 + 5904.0 * 4096);
  EXPECT_DOUBLE_EQ(attendedKeys({1, 1, 50000}, shape), 4096.0);
  EXPECT_EQ(uniqueKvTokens({1, 1, 50000}, shape), 4096);
  EXPECT_DOUBLE_EQ(attendedKeys({1, 1, 100}, shape), 100.0);  // context shorter than the window
}

TEST(Bounds, SparseTopKCapsAttendedKeys) {
  AttentionShape shape = headsShape(128, 1, 576);
  shape.top_k = 2048;
  EXPECT_DOUBLE_EQ(attendedKeys({1, 1, 100000}, shape), 2048.0);
  EXPECT_EQ(uniqueKvTokens({1, 1, 100000}, shape), 2048);
  EXPECT_DOUBLE_EQ(attendedKeys({1, 1, 1000}, shape), 1000.0);
}

TEST(Bounds, SinksAddBytesNotFlops) {
  const Rig s = setup("h100-sxm", "fa3");
  AttentionShape plain = headsShape(64, 8, 64);
  AttentionShape sinks = plain;
  sinks.sinks = true;
  const auto a = predict(s, plain, Phase::Decode, {8, 1, 4096});
  const auto b = predict(s, sinks, Phase::Decode, {8, 1, 4096});
  EXPECT_DOUBLE_EQ(a.flops, b.flops);
  EXPECT_DOUBLE_EQ(b.bytes - a.bytes, 64 * 4.0);
}

TEST(Bounds, VerifyChainIsAnExtendAndATreeSeesItsPath) {
  const AttentionShape shape = headsShape(32, 8, 128);
  // Chain of 4 draft tokens over 1000 cached: rows see 1001..1004 keys.
  EXPECT_DOUBLE_EQ(attendedKeys({1, 4, 1004}, shape), 1001.0 + 1002 + 1003 + 1004);
  // Tree of 7 nodes, topk 3: root sees 1001, level 1 (3 nodes) 1002, level 2 (3 nodes) 1003.
  EXPECT_DOUBLE_EQ(attendedKeys({1, 7, 1007, 3}, shape), 1001.0 + 3 * 1002 + 3 * 1003);
}

TEST(Bounds, MlaAbsorbedDecodeUsesTheLatentWidths) {
  const Catalog& c = defaultCatalog();
  const AttentionLayerSpec& layer = c.model("deepseek-v3").primaryLayer();
  const AttentionShape decode =
      resolveShape(layer, c.kernel("flashmla"), Phase::Decode, KvCacheDtype::Auto, DType::BF16, 1);
  EXPECT_EQ(decode.num_kv_heads, 1);
  EXPECT_EQ(decode.d_qk, 576);
  EXPECT_EQ(decode.d_v, 512);
  const AttentionShape prefill =
      resolveShape(layer, c.kernel("fa3"), Phase::Prefill, KvCacheDtype::Auto, DType::BF16, 1);
  EXPECT_EQ(prefill.num_kv_heads, 128);
  EXPECT_EQ(prefill.d_qk, 192);
  EXPECT_EQ(prefill.d_v, 128);
  const Rig s = setup("h100-sxm", "flashmla");
  const auto cost = predict(s, decode, Phase::Decode, {4, 1, 2048}, 64);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 4 * 128 * 2048 * (576 + 512));
  // One latent row per token: 576 bf16 values, page granular (2048 is a multiple of 64).
  EXPECT_DOUBLE_EQ(cost.bytes_min, 4 * (128 * 576 * 2.0 + 128 * 512 * 2.0 + 2048 * 576 * 2.0));
}

TEST(Bounds, QuantizedKvReadsFewerBytes) {
  const Rig s = setup("h100-sxm", "fa3");
  AttentionShape bf16 = headsShape(32, 8, 128);
  AttentionShape fp8 = bf16;
  fp8.kv_elem_bytes = kvElementBytes(KvCacheDtype::FP8_E4M3, DType::BF16);
  fp8.kv_quantized = true;
  AttentionShape fp4 = bf16;
  fp4.kv_elem_bytes = kvElementBytes(KvCacheDtype::FP4_E2M1, DType::BF16);
  const auto a = predict(s, bf16, Phase::Decode, {64, 1, 16384});
  const auto b = predict(s, fp8, Phase::Decode, {64, 1, 16384});
  const auto f = predict(s, fp4, Phase::Decode, {64, 1, 16384});
  EXPECT_LT(b.bytes, a.bytes);
  EXPECT_LT(f.bytes, b.bytes);
  EXPECT_DOUBLE_EQ(fp4.kv_elem_bytes, 0.5625);
  EXPECT_LT(b.time_us, a.time_us);
}

TEST(Bounds, PagesAreReadWhole) {
  const Rig s = setup("h100-sxm", "fa3");
  const AttentionShape shape = headsShape(32, 8, 128);
  // 128 requests fill the machine, so neither call splits the KV.
  const auto exact = predict(s, shape, Phase::Decode, {128, 1, 4096}, 64);
  const auto ragged = predict(s, shape, Phase::Decode, {128, 1, 4097}, 64);
  ASSERT_EQ(exact.splits, 1);
  ASSERT_EQ(ragged.splits, 1);
  const double kv_token = 8 * 256 * 2.0;
  // 4097 tokens need 65 pages of 64: 63 extra tokens' bytes beyond the exact need, plus one more page-table entry.
  EXPECT_DOUBLE_EQ(ragged.bytes - exact.bytes - (ragged.bytes_min - exact.bytes_min), 128 * (63 * kv_token + 4));
}

// No prediction is faster than its roofline: FLOPs at peak or needed bytes at full bandwidth.
TEST(Bounds, NeverBeatsTheRooflineLowerBound) {
  const Catalog& c = defaultCatalog();
  for (const char* hw_id : {"a100-sxm-80g", "h100-sxm", "b200", "mi300x", "l40s"}) {
    const HardwareProfile& hw = c.hardware(hw_id);
    const DeviceModel device = resolveDevice(hw, DType::BF16);
    for (const auto& family : c.kernels()) {
      const KernelModel kernel = resolveKernel(family, hw);
      for (const Phase phase : {Phase::Prefill, Phase::Extend, Phase::Decode, Phase::Verify}) {
        for (const std::int64_t context : {17, 1024, 32768}) {
          for (const std::int64_t batch : {1, 9, 256}) {
            const std::int64_t q = phase == Phase::Prefill  ? context
                                   : phase == Phase::Decode ? 1
                                                            : std::min<std::int64_t>(context, 5);
            const RequestGroup g{batch, q, context};
            const AttentionShape shape = headsShape(32, 8, 128);
            const auto cost = predictAttention(shape, kernel, device, phase, std::span<const RequestGroup>(&g, 1), 16);
            const double peak = kernel.tensor_math ? device.tensor_flops_per_us : device.vector_flops_per_us;
            const double lower = std::max(cost.flops / peak, cost.bytes_min / device.bytes_per_us);
            EXPECT_GE(cost.time_us, lower) << family.id << " " << hw_id << " " << phaseName(phase) << " " << context;
            EXPECT_TRUE(std::isfinite(cost.time_us) && cost.time_us > 0);
          }
        }
      }
    }
  }
}

TEST(Bounds, TimeIsMonotoneInContextBatchAndHeads) {
  const Catalog& c = defaultCatalog();
  for (const char* kernel_id : {"fa2", "fa3", "flashinfer", "triton-sglang", "mmha", "xqa", "flashmla", "trtllm-gen"}) {
    const Rig s = setup("h100-sxm", kernel_id);
    for (const Phase phase : {Phase::Prefill, Phase::Decode, Phase::Verify}) {
      double previous = 0;
      for (std::int64_t context = 4; context <= 65536; context = context * 5 / 4 + 1) {
        const std::int64_t q = phase == Phase::Prefill ? context : phase == Phase::Decode ? 1 : 4;
        const double t = predict(s, headsShape(32, 8, 128), phase, {8, q, std::max(context, q)}).time_us;
        // Prefill reads whole KV pages: a prompt that fills more of its last page spreads the same
        // page bytes over more keys, so the first query tile's share of them may fall by a little
        // (worst here 0.7%; the catalog-wide bound and its reasons: test_cost_laws_attention.cpp).
        const double tolerance = phase == Phase::Prefill ? 0.025 : 0.0;
        EXPECT_GE(t, previous * (1 - tolerance)) << kernel_id << " " << phaseName(phase) << " context " << context;
        previous = t;
      }
      previous = 0;
      for (std::int64_t batch = 1; batch <= 1024; batch = batch * 3 / 2 + 1) {
        const std::int64_t context = phase == Phase::Prefill ? 512 : 4096;
        const std::int64_t q = phase == Phase::Prefill ? context : phase == Phase::Decode ? 1 : 4;
        const double t = predict(s, headsShape(32, 8, 128), phase, {batch, q, context}).time_us;
        EXPECT_GE(t, previous) << kernel_id << " " << phaseName(phase) << " batch " << batch;
        previous = t;
      }
      previous = 0;
      for (const int kv_heads : {1, 2, 4, 8, 16}) {
        const std::int64_t q = phase == Phase::Prefill ? 2048 : phase == Phase::Decode ? 1 : 4;
        const double t = predict(s, headsShape(kv_heads * 4, kv_heads, 128), phase, {8, q, 2048}).time_us;
        EXPECT_GE(t, previous) << kernel_id << " " << phaseName(phase) << " kv heads " << kv_heads;
        previous = t;
      }
    }
  }
  (void)c;
}

TEST(Bounds, ABatchSplitIntoIdenticalGroupsPredictsTheSame) {
  const Rig s = setup("h100-sxm", "fa3");
  const AttentionShape shape = headsShape(32, 8, 128);
  for (const Phase phase : {Phase::Decode, Phase::Prefill}) {
    const std::int64_t q = phase == Phase::Decode ? 1 : 1000;
    const RequestGroup one{6, q, 3000};
    const std::array<RequestGroup, 2> two{RequestGroup{2, q, 3000}, RequestGroup{4, q, 3000}};
    const auto a = predictAttention(shape, s.kernel, s.device, phase, std::span(&one, 1), 16);
    const auto b = predictAttention(shape, s.kernel, s.device, phase, two, 16);
    EXPECT_DOUBLE_EQ(a.time_us, b.time_us) << phaseName(phase);
    EXPECT_DOUBLE_EQ(a.bytes, b.bytes) << phaseName(phase);
    EXPECT_EQ(a.splits, b.splits) << phaseName(phase);
  }
}

TEST(Bounds, SmallDecodeIsLatencyBoundLargePrefillComputeBound) {
  const Rig s = setup("h100-sxm", "fa3");
  EXPECT_EQ(predict(s, headsShape(32, 8, 128), Phase::Decode, {1, 1, 64}).bound, Bound::Latency);
  EXPECT_EQ(predict(s, headsShape(32, 8, 128), Phase::Prefill, {4, 8192, 8192}).bound, Bound::Compute);
  EXPECT_EQ(predict(s, headsShape(32, 8, 128), Phase::Decode, {256, 1, 8192}).bound, Bound::Memory);
}

}  // namespace
}  // namespace attnsim::test
