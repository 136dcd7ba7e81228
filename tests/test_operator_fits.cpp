// The step's GEMMs measured (issue 27): efficiency surfaces fitted to AIConfigurator's tables and
// carried to devices of the same architecture, DeepGEMM's kernel classes, and each engine's timing of
// a call around the kernel (test_operator_step.cpp: the surfaces inside a step and one call at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "catalog/Catalog.hpp"
#include "hardware/DeepGemmPick.hpp"
#include "hardware/OperatorFits.hpp"
#include "study/Measurements.hpp"
#include "study/OperatorCalibration.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// A 2 × 2 × 2 surface of one efficiency everywhere, resolved on a device of 1e6 FLOP/µs and 1e3 B/µs.
GemmSurface flatSurface(double efficiency) {
  GemmSurface s;
  s.dtype = "bf16";
  s.log2_m = {0, 10};  // m 1 and 1024
  s.log2_n = {10, 12};
  s.log2_k = {10, 12};
  s.log_efficiency.assign(8, std::log(efficiency));
  s.resolve({.flops_per_us = 1e6, .bytes_per_us = 1e3});
  return s;
}

TEST(GemmSurface, AtANodeTheTimeIsItsOwnAndBetweenNodesItLiesBetweenThem) {
  const GemmSurface s = flatSurface(0.5);
  for (double m : {1.0, 1024.0}) {
    for (double n : {1024.0, 4096.0}) EXPECT_DOUBLE_EQ(s.us(m, n, 4096), s.roofline.us(m, n, 4096) / 0.5);
  }
  for (double m : {2.0, 33.0, 700.0}) {
    EXPECT_GT(s.us(m, 4096, 4096), s.us(1, 4096, 4096)) << m;
    EXPECT_LT(s.us(m, 4096, 4096), s.us(1024, 4096, 4096)) << m;
  }
}

TEST(GemmSurface, BeyondTheGridTheTimeScalesWithTheRoofline) {
  const GemmSurface s = flatSurface(0.5);
  EXPECT_DOUBLE_EQ(s.us(8192, 4096, 4096) / s.us(1024, 4096, 4096),
                   s.roofline.us(8192, 4096, 4096) / s.roofline.us(1024, 4096, 4096));
}

TEST(GemmSurface, AMeasuredOutlierDoesNotMakeMoreRowsFaster) {
  GemmSurface s;
  s.dtype = "bf16";
  s.log2_m = {0, 1, 2, 3};
  s.log2_n = {12};
  s.log2_k = {12};
  // m = 2 measured slower than m = 4 and 8 (the tables' noise).
  s.log_efficiency = {std::log(0.5), std::log(0.2), std::log(1.5), std::log(2.5)};
  s.resolve({.flops_per_us = 1e6, .bytes_per_us = 1e3});
  double previous = 0;
  for (double m = 1; m <= 8; m += 0.25) {
    EXPECT_GE(s.us(m, 4096, 4096), previous - 1e-12) << m;
    previous = s.us(m, 4096, 4096);
  }
}

TEST(GemmSurface, AnMAboveOneTileCostsWhatItsWholeTilesCost) {
  GemmSurface s = flatSurface(0.5);
  s.m_tile = 128;
  EXPECT_DOUBLE_EQ(s.us(129, 4096, 4096), s.us(256, 4096, 4096));    // two tiles of 128 rows
  EXPECT_DOUBLE_EQ(s.us(1000, 4096, 4096), s.us(1024, 4096, 4096));  // eight
  EXPECT_LT(s.us(100, 4096, 4096), s.us(128, 4096, 4096));           // within one tile: its own rows
  const GemmSurface unpadded = flatSurface(0.5);
  EXPECT_LT(unpadded.us(129, 4096, 4096), unpadded.us(256, 4096, 4096));
}

// SGLang rows of a dtype on the H100 over a grid of M (4 × 4 N, K), each at half its roofline there.
std::vector<MeasurementRow> halfRooflineGemmRows(const Catalog& c, const std::string& dtype = "fp8",
                                                 const std::vector<int>& ms = {16, 64, 256, 1024}) {
  const GemmRoofline rates = c.hardware("h100-sxm").gemmRoofline(dtype);
  std::vector<MeasurementRow> rows;
  for (int m : ms) {
    for (int n : {1024, 2048, 4096, 8192}) {
      for (int k : {1024, 2048, 4096, 8192}) {
        MeasurementRow r;
        r.kind = "gemm", r.engine = "sglang", r.hardware = "h100-sxm", r.dtype = dtype;
        r.batch = m, r.q_len = n, r.kv_len = k;
        r.median_us = 2 * rates.us(m, n, k);
        rows.push_back(r);
      }
    }
  }
  return rows;
}

TEST(GemmCalibration, ANodeMeasuredFarAboveItsNeighboursIsTakenAsAStallNotTheKernel) {
  // A quantized surface (fp8): its nodes above their neighbours are dropped whatever its one-tile calls say.
  const Catalog& c = defaultCatalog();
  std::vector<MeasurementRow> rows = halfRooflineGemmRows(c);
  const OperatorCalibration clean = calibrateOperators(c, rows, "h100-sxm");
  ASSERT_EQ(clean.gemm.size(), 1U);
  const double smooth = clean.gemm[0].surface.us(256, 2048, 2048);
  for (auto& r : rows) {
    if (r.batch == 256 && r.q_len == 2048 && r.kv_len == 2048) r.median_us *= 2;  // one call stalled
  }
  const OperatorCalibration stalled = calibrateOperators(c, rows, "h100-sxm");
  ASSERT_EQ(stalled.gemm.size(), 1U);
  EXPECT_NEAR(stalled.gemm[0].surface.us(256, 2048, 2048) / smooth, 1, 0.11);
  EXPECT_NEAR(stalled.gemm[0].surface.us(1024, 2048, 2048) / clean.gemm[0].surface.us(1024, 2048, 2048), 1, 1e-9);
}

TEST(GemmCalibration, ABf16NodeAboveItsNeighboursIsKeptUnlessTheTablesOneTileCallsShowStalls) {
  // cuBLAS picks a kernel per shape: a bf16 node above its neighbours is dropped only where the table's
  // calls of M 1-16 at one N, K (one tile, one time) show stalls, 5% or more of them lifted 20%.
  const Catalog& c = defaultCatalog();
  std::vector<MeasurementRow> rows = halfRooflineGemmRows(c, "bf16", {1, 2, 4, 8, 16, 64, 256, 1024});
  const OperatorCalibration clean = calibrateOperators(c, rows, "h100-sxm");
  ASSERT_EQ(clean.gemm.size(), 1U);
  const double smooth = clean.gemm[0].surface.us(256, 2048, 2048);
  for (auto& r : rows) {
    if (r.batch == 256 && r.q_len == 2048 && r.kv_len == 2048) r.median_us *= 2;  // a node above its neighbours
  }
  const OperatorCalibration kept = calibrateOperators(c, rows, "h100-sxm");
  ASSERT_EQ(kept.gemm.size(), 1U);
  EXPECT_FALSE(kept.gemm[0].stalls.dropped);
  EXPECT_GT(kept.gemm[0].surface.us(256, 2048, 2048) / smooth, 1.5);
  int lifted = 0;  // M = 2 stalled at one N, K in four: 1 call in 20 of the one-tile calls
  for (auto& r : rows) {
    if (r.batch == 2 && r.q_len == 1024) r.median_us *= 1.5, ++lifted;
  }
  ASSERT_EQ(lifted, 4);
  const OperatorCalibration dropped = calibrateOperators(c, rows, "h100-sxm");
  ASSERT_EQ(dropped.gemm.size(), 1U);
  EXPECT_TRUE(dropped.gemm[0].stalls.dropped);
  EXPECT_NEAR(dropped.gemm[0].stalls.stall_share, 0.05, 1e-9);
  EXPECT_NEAR(dropped.gemm[0].surface.us(256, 2048, 2048) / smooth, 1, 0.11);
}

TEST(DeepGemmPick, OnlyOneWaveOfDeepTilesWithoutMulticastIsTheSlowClass) {
  // N 2,048 × K 16,384 on 132 SMs: up to M 2,048 one wave of 256 × 128 tiles (3 stages, no multicast:
  // DeepGEMM never multicasts one wave); from M 2,049 two waves over clusters of two.
  const DeepGemmTiles one = deepGemmSm90Tiles(2048, 2048, 16384, 132);
  EXPECT_EQ(one.waves, 1);
  EXPECT_EQ(one.cluster, 1);
  EXPECT_GE(one.block_m * one.block_n, 128 * 192);
  EXPECT_TRUE(deepGemmSingleWaveDeepTile(one));
  const DeepGemmTiles two = deepGemmSm90Tiles(2049, 2048, 16384, 132);
  EXPECT_GE(two.waves, 2);
  EXPECT_FALSE(deepGemmSingleWaveDeepTile(two));
  EXPECT_FALSE(deepGemmSingleWaveDeepTile(deepGemmSm90Tiles(64, 4096, 4096, 132)));  // small tiles, deep pipeline
  for (double m : {1.0, 17.0, 300.0, 1025.0, 4097.0, 32768.0}) {
    for (double n : {256.0, 3072.0, 16384.0}) {
      const DeepGemmTiles t = deepGemmSm90Tiles(m, n, 7168, 132);
      EXPECT_GE(static_cast<double>(t.blocks) * t.block_m * t.block_n, m * n) << m << " " << n;  // tiles cover C
      EXPECT_GE(t.waves * 132, t.blocks);
      EXPECT_GE(t.stages, 3);
      if (t.waves == 1) {
        EXPECT_EQ(t.cluster, 1) << m << " " << n;
      }
    }
  }
  EXPECT_EQ(deepGemmSm90Tiles(8, 4096, 4096, 132).block_m, 16);  // block M 16 only for M up to 16
}

// The pre-check of deepGemmSingleWaveClass: at M ≤ 64 the pick never is one wave of deep tiles (a 64-row
// tile of the same block N has as many blocks as any taller one and moves fewer bytes).
TEST(DeepGemmPick, NoCallOfAtMost64RowsIsInTheOneWaveClass) {
  int calls = 0;
  for (const int sms : {78, 114, 132}) {
    for (const double n : {16.0,   48.0,   64.0,   96.0,   128.0,  192.0,  256.0,  320.0,  512.0,   576.0,   1024.0,
                           1536.0, 2048.0, 2112.0, 3072.0, 4096.0, 4608.0, 7168.0, 8192.0, 16384.0, 32768.0, 65536.0}) {
      for (const double k : {128.0, 256.0, 512.0, 1536.0, 2048.0, 4096.0, 7168.0, 16384.0}) {
        for (double m = 1; m <= 64; ++m) {
          EXPECT_FALSE(deepGemmSingleWaveDeepTile(deepGemmSm90Tiles(m, n, k, sms))) << m << " " << n << " " << k;
          ++calls;
        }
      }
    }
  }
  EXPECT_EQ(calls, 3 * 22 * 8 * 64);
}

// The per-thread cache answers as the pick does, for every M (one answer per ⌈M/64⌉), on a first pass
// (misses) and on a second in the other order (hits, and slots taken by other shapes).
TEST(DeepGemmPick, TheCachedClassIsThePicksAnswerOverAGrid) {
  std::vector<std::array<double, 4>> grid;
  for (const int sms : {114, 132}) {
    for (const double n : {256.0, 512.0, 1536.0, 2048.0, 2112.0, 3072.0, 4608.0, 7168.0, 16384.0}) {
      for (const double k : {256.0, 1536.0, 2048.0, 7168.0, 16384.0}) {
        for (double m = 1; m <= 4400; m += m < 1100 ? 3 : 37) grid.push_back({m, n, k, static_cast<double>(sms)});
      }
    }
  }
  int in_class = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < grid.size(); ++i) {
      const auto [m, n, k, sms] = grid[pass == 0 ? i : grid.size() - 1 - i];
      const bool picked = deepGemmSingleWaveDeepTile(deepGemmSm90Tiles(m, n, k, static_cast<int>(sms)));
      EXPECT_EQ(deepGemmSingleWaveClass(m, n, k, static_cast<int>(sms)), picked) << m << " " << n << " " << k;
      in_class += picked ? 1 : 0;
    }
  }
  EXPECT_GT(in_class, 100);  // the grid crosses the class's windows
}

TEST(GemmSurface, DeepGemmsOneWaveLaunchesTakeTheirKTimeWhereItIsLongerThanTheSurface) {
  GemmSurface s = flatSurface(0.5);
  s.single_wave = GemmSingleWave{"sglang", 10, 2, 8};
  s.resolve({.flops_per_us = 1e6, .bytes_per_us = 1e3, .sms = 132});
  ASSERT_TRUE(deepGemmSingleWaveDeepTile(deepGemmSm90Tiles(2048, 2048, 4096, 132)));
  EXPECT_DOUBLE_EQ(s.us(2048, 2048, 4096), std::max(s.surfaceUs(2048, 2048, 4096), 10 + 2 * 32.0));
  EXPECT_DOUBLE_EQ(s.us(2048, 2048, 4000), std::max(s.surfaceUs(2048, 2048, 4000), 10 + 2 * 32.0));  // ⌈K/128⌉
  EXPECT_DOUBLE_EQ(s.us(2049, 2048, 4096), s.surfaceUs(2049, 2048, 4096));  // two waves: the surface
  EXPECT_DOUBLE_EQ(s.kernelUs("sglang", 2048, 2048, 4096), s.us(2048, 2048, 4096));
  EXPECT_DOUBLE_EQ(s.kernelUs("vllm", 2048, 2048, 4096), s.surfaceUs(2048, 2048, 4096));  // its own DeepGEMM
  s.resolve({.flops_per_us = 1e6, .bytes_per_us = 1e3});                                  // SMs unknown: the surface
  EXPECT_DOUBLE_EQ(s.us(2048, 2048, 4096), s.surfaceUs(2048, 2048, 4096));
}

TEST(GemmCalibration, HopperBlockFp8OneWaveLaunchesFitTheirOwnTimeAndStayOffTheSurface) {
  const Catalog& c = defaultCatalog();
  const int sms = c.hardware("h100-sxm").compute_units;
  std::vector<MeasurementRow> rows = halfRooflineGemmRows(c, "fp8_block", {16, 64, 256, 1024, 2048});
  int slow = 0;
  for (auto& r : rows) {
    if (!gemmSingleWaveRow(r, sms)) continue;
    r.median_us = 5 + 1.5 * std::ceil(static_cast<double>(r.kv_len) / 128);
    ++slow;
  }
  ASSERT_GE(slow, 4);
  const OperatorCalibration fit = calibrateOperators(c, rows, "h100-sxm");
  ASSERT_EQ(fit.gemm.size(), 1U);
  const GemmSurface& s = fit.gemm[0].surface;
  ASSERT_TRUE(s.single_wave.has_value());
  EXPECT_NEAR(s.single_wave->fixed_us, 5, 1e-6);
  EXPECT_NEAR(s.single_wave->per_k_block_us, 1.5, 1e-6);
  for (const auto& r : rows) {
    const auto m = static_cast<double>(r.batch), n = static_cast<double>(r.q_len), k = static_cast<double>(r.kv_len);
    const double at = gemmSingleWaveRow(r, sms) ? std::max(r.median_us, s.surfaceUs(m, n, k)) : r.median_us;
    EXPECT_NEAR(s.us(m, n, k) / at, 1, 1e-6) << m << " " << n << " " << k;  // the slow rows left the others alone
  }
  // Per-tensor FP8 (CUTLASS) has no such class.
  EXPECT_FALSE(calibrateOperators(c, halfRooflineGemmRows(c, "fp8"), "h100-sxm").gemm[0].surface.single_wave);
}

TEST(OperatorFits, TheH100AndB200CarryMeasuredSurfacesAndSameArchitectureDevicesTakeThem) {
  const Catalog& c = defaultCatalog();
  for (const char* dtype : {"bf16", "fp8", "fp8_block"}) {
    const GemmSurface* own = c.hardware("h100-sxm").gemmSurface(dtype);
    ASSERT_NE(own, nullptr) << dtype;
    EXPECT_TRUE(own->transferred_from.empty());
    EXPECT_EQ(bandOf(*own).basis, BandBasis::HeldOut);
    const GemmSurface* h200 = c.hardware("h200").gemmSurface(dtype);
    ASSERT_NE(h200, nullptr) << dtype;
    EXPECT_EQ(h200->transferred_from, "h100-sxm");
    EXPECT_GE(bandOf(*h200).band, kNonAttentionDefaultBand);
    EXPECT_NE(h200->source.find("measured on h100-sxm"), std::string::npos) << h200->source;
  }
  EXPECT_EQ(c.hardware("gb200").gemmSurface("nvfp4")->transferred_from, "b200");
  // DeepGEMM's one-wave launches: measured on the H100, carried to the H200 (the same SM90 kernel and
  // 132 SMs); the B200 runs DeepGEMM's SM100 kernel, whose picks differ.
  EXPECT_TRUE(c.hardware("h100-sxm").gemmSurface("fp8_block")->single_wave.has_value());
  EXPECT_TRUE(c.hardware("h200").gemmSurface("fp8_block")->single_wave.has_value());
  EXPECT_FALSE(c.hardware("b200").gemmSurface("fp8_block")->single_wave.has_value());
  // The H100 has no FP4 peak: no nvfp4 surface; other architectures keep the roofline defaults.
  EXPECT_EQ(c.hardware("h100-sxm").gemmSurface("nvfp4"), nullptr);
  EXPECT_EQ(c.hardware("mi300x").gemmSurface("bf16"), nullptr);
  EXPECT_EQ(c.hardware("a100-sxm-80g").gemmSurface("bf16"), nullptr);
}

TEST(GemmEngineTiming, ShapeClassesFollowDeepGemmsLimitsTheSmallBatchSwitchAndScaleAlignment) {
  EXPECT_EQ(gemmShapeClass(17, 32, 4096), 0U);    // N % 64: no DeepGEMM
  EXPECT_EQ(gemmShapeClass(4096, 4096, 64), 0U);  // K % 128
  EXPECT_EQ(gemmShapeClass(16, 4096, 4096), 1U);  // M < 32, M % 4 == 0
  EXPECT_EQ(gemmShapeClass(17, 4096, 4096), 2U);
  EXPECT_EQ(gemmShapeClass(17, 4096, 128), 1U);  // one 128-wide group: nothing to realign
  EXPECT_EQ(gemmShapeClass(2048, 4096, 4096), 3U);
  EXPECT_EQ(gemmShapeClass(2049, 4096, 4096), 4U);
}

TEST(GemmEngineTiming, PerTensorFp8ClassesFollowCutlassConfigsByMAloneWithMOneApart) {
  EXPECT_EQ(gemmPerTensorFp8Class(1), 0U);
  EXPECT_EQ(gemmPerTensorFp8Class(2), 1U);  // one swap-AB tile up to M 16
  EXPECT_EQ(gemmPerTensorFp8Class(16), 1U);
  EXPECT_EQ(gemmPerTensorFp8Class(17), 2U);
  EXPECT_EQ(gemmPerTensorFp8Class(256), 2U);
  EXPECT_EQ(gemmPerTensorFp8Class(512), 3U);  // whole 256-row tiles
  EXPECT_EQ(gemmPerTensorFp8Class(513), 4U);  // the last one part-filled
  // N and K do not move a per-tensor call's class, where they do a block-FP8 one's.
  GemmEngineTiming t;
  t.per_tensor_fp8 = true;
  EXPECT_EQ(t.shapeClass(17, 32, 4096), t.shapeClass(17, 4096, 4096));
  t.per_tensor_fp8 = false;
  EXPECT_NE(t.shapeClass(17, 32, 4096), t.shapeClass(17, 4096, 4096));
}

TEST(GemmEngineTiming, PerTensorFp8AddsItsQuantizationPerElementOfAToEveryClass) {
  GemmSurface s = flatSurface(0.5);
  GemmEngineTiming t;
  t.engine = "vllm";
  t.per_tensor_fp8 = true;
  t.per_element_us = 1e-6;
  s.engines.push_back(t);
  for (const double m : {1.0, 8.0, 300.0, 4096.0}) {
    EXPECT_DOUBLE_EQ(s.engineUs("vllm", m, 4096, 2048), s.us(m, 4096, 2048) + 1e-6 * m * 2048) << m;
  }
}

TEST(GemmEngineTiming, AnotherEnginesCallIsAtLeastItsFloorElseItsScaledKernelPlusItsAddedTimes) {
  GemmSurface s = flatSurface(0.5);
  GemmEngineTiming t;
  t.engine = "vllm";
  t.floor_us = {20000, 10000, 12000, 16000, 18000};  // the flat surface's device is slow (ms per call)
  t.extra_us = {0, 0, 0, 2, 0};
  t.per_row_us = {0, 0, 0, 0.001, 0};
  t.kernel_scale = {1, 1, 1, 0.5, 1};
  s.engines.push_back(t);
  // A small call: the class's floor.
  ASSERT_LT(s.us(5, 1024, 1024), 10000);
  EXPECT_DOUBLE_EQ(s.engineUs("vllm", 4, 1024, 1024), 10000);  // M < 32, M % 4 == 0: class 1
  EXPECT_DOUBLE_EQ(s.engineUs("vllm", 5, 1024, 1024), 12000);  // M % 4 != 0: class 2
  EXPECT_DOUBLE_EQ(s.engineUs("vllm", 1, 1000, 1024), 20000);  // N % 64: class 0
  // A large one: half the kernel plus 2 µs and 1 ns per row.
  const double kernel = s.us(1024, 4096, 4096);
  ASSERT_GT(0.5 * kernel, 16000);
  EXPECT_DOUBLE_EQ(s.engineUs("vllm", 1024, 4096, 4096), 0.5 * kernel + 2 + 1.024);
  // The surface's own engine, and any other, is the kernel.
  EXPECT_DOUBLE_EQ(s.engineUs("sglang", 1, 1024, 1024), s.us(1, 1024, 1024));
}

TEST(GemmEngineTiming, VllmsEagerBlockFp8RowsCarryTheHostFloorTheKernelSurfaceDoesNot) {
  // vLLM's block-FP8 rows are timed eagerly (collector/vllm/collect_gemm.py: use_cuda_graph is off for
  // fp8_block): a tiny call costs the host's issue time, tens of µs, where the kernel takes a few.
  const Catalog& c = defaultCatalog();
  for (const char* hw : {"h100-sxm", "b200"}) {
    const GemmSurface* s = c.hardware(hw).gemmSurface("fp8_block");
    ASSERT_NE(s, nullptr) << hw;
    EXPECT_LT(s->us(32, 4096, 4096), 40) << hw;
    EXPECT_GT(s->engineUs("vllm", 32, 4096, 4096), std::max(50.0, 2 * s->us(32, 4096, 4096))) << hw;
    EXPECT_DOUBLE_EQ(s->engineUs("sglang", 32, 4096, 4096), s->us(32, 4096, 4096)) << hw;
  }
}

TEST(GemmEngineTiming, OnlyTheFp8DtypesSplitTheirTermsByShapeClass) {
  // The classes are vLLM's FP8 dispatch paths; bf16 (F.linear) and nvfp4 (one FlashInfer kernel) take one
  // path at every shape, so their terms are one fit over all classes.
  const Catalog& c = defaultCatalog();
  auto oneFit = [](const GemmEngineTiming& t) {
    for (std::size_t i = 1; i < kGemmShapeClasses; ++i) {
      if (t.floor_us[i] != t.floor_us[0] || t.extra_us[i] != t.extra_us[0] || t.per_row_us[i] != t.per_row_us[0] ||
          t.kernel_scale[i] != t.kernel_scale[0])
        return false;
    }
    return true;
  };
  int checked = 0;
  for (const char* hw : {"h100-sxm", "b200"}) {
    for (const char* dtype : {"bf16", "nvfp4", "fp8_block"}) {
      const GemmSurface* s = c.hardware(hw).gemmSurface(dtype);
      if (!s || s->transferred_from.size() > 0) continue;
      for (const auto& t : s->engines) {
        EXPECT_EQ(oneFit(t), std::string(dtype) != "fp8_block") << hw << " " << dtype << " " << t.engine;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5);  // vLLM's bf16 and fp8_block on both GPUs, nvfp4 on the B200
}

}  // namespace
}  // namespace attnsim::test
