// The step's operators beside attention measured (issue 27): GEMM efficiency surfaces and the engines'
// custom all-reduces fitted to AIConfigurator's tables, carried to devices of the same architecture,
// and predicted one call at a time (`predict --gemm`, `predict --allreduce`).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/YamlReader.hpp"
#include "cost/Collective.hpp"
#include "cost/OperatorSources.hpp"
#include "cost/StepModel.hpp"
#include "hardware/DeepGemmPick.hpp"
#include "simulator/Evaluation.hpp"
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

TEST(OperatorFits, TheFitsBeatTheRooflineDefaultsOnHeldOutCalls) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  OverlayDir dir;
  const std::string db = (dir.path() / "aic.db").string();
  importMeasurements({root + "/measurements/data/aic/h100_sxm.csv.gz"}, db, defaultCatalog());
  const OperatorCalibration ops = calibrateOperators(defaultCatalog(), Store(db).measurements(), "h100-sxm");
  int checked = 0;
  for (const auto& e : ops.heldOutErrors()) {
    // The fitted grid's engine (vLLM's fp8_block rows are eager) and NCCL's all-reduce; MoE has tests of its own.
    if ((e.engine != "sglang" && e.engine != "nccl") || e.op.rfind("moe:", 0) == 0) continue;
    EXPECT_GE(e.points, 20) << e.op;
    EXPECT_LT(e.mape, e.default_mape) << e.op;
    ++checked;
  }
  EXPECT_EQ(checked, 5);  // bf16, fp8, fp8_block GEMMs, SGLang's all-reduce and NCCL's
}

TEST(OperatorFits, ADeepSeekStepRunsItsProjectionsOnTheBlockScaledFp8Surface) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const LinearKernels k = resolveLinearKernels(c, hw, c.model("deepseek-v3"));
  ASSERT_NE(k.gemm_weights, nullptr);
  EXPECT_EQ(k.gemm_weights->dtype, "fp8_block");
  EXPECT_EQ(k.gemm_bf16->dtype, "bf16");
  EXPECT_EQ(k.gemm.provenance, Provenance::Measured);
  const LinearKernels llama = resolveLinearKernels(c, hw, c.model("llama-3.1-8b"));
  EXPECT_EQ(llama.gemm_weights, llama.gemm_bf16);
}

// The step prices a linear against block-FP8 weights as `predict --gemm --engine E` prices the call: in
// SGLang (DeepGEMM on Hopper) with the one-wave class, in vLLM with the surface alone. DeepSeek-V3's output
// projection at TP 8 (N the hidden size, K 16 heads' values) at an M inside one of its one-wave windows.
TEST(OperatorFits, TheStepsBlockFp8LinearIsPredictGemmsPriceForTheSameEngine) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const ModelSpec& model = c.model("deepseek-v3");
  ASSERT_EQ(model.weight_dtype, "fp8_block");
  const LinearKernels sglang = resolveLinearKernels(c, hw, model, "sglang");
  const LinearKernels vllm = resolveLinearKernels(c, hw, model, "vllm");
  ASSERT_NE(sglang.gemm_weights, nullptr);
  const GemmSurface& s = *sglang.gemm_weights;
  ASSERT_TRUE(s.single_wave.has_value());
  const int tp = 8;
  const AttentionLayerSpec& attn = model.primaryLayer();
  ASSERT_TRUE(attn.mla.has_value());
  const double n = model.hidden_size, k = attn.num_heads / tp * attn.mla->v_head_dim;
  double m = 0;
  for (double rows = 65; rows <= 2048 && m == 0; ++rows) {
    if (s.kernelUs("sglang", rows, n, k) > s.surfaceUs(rows, n, k)) m = rows;
  }
  ASSERT_GT(m, 0) << "no M of a one-wave window where the class is dearer than the surface";
  const auto step = [&](const LinearKernels& kernels) {
    StepCosts costs;
    costLinearOps(model, kernels, Workload::uniform(Phase::Decode, static_cast<std::int64_t>(m), 1, 2048), tp, 2,
                  costs);
    return costs.op_us[static_cast<std::size_t>(StepOp::OProj)];
  };
  const auto predicted = [&](const std::string& engine) {
    const CommandResult r = runAttnsim(
        fmt::format("--json predict --hardware h100-sxm --gemm {:.0f},{:.0f},{:.0f} --gemm-dtype fp8_block{}", m, n, k,
                    engine.empty() ? std::string{} : " --engine " + engine));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output);
    return std::pair{j.at("us").get<double>(), j.at("source").get<std::string>()};
  };
  const auto [sglang_us, sglang_source] = predicted("sglang");
  const auto [vllm_us, vllm_source] = predicted("vllm");
  const auto [default_us, default_source] = predicted("");
  EXPECT_DOUBLE_EQ(step(sglang), s.kernelUs("sglang", m, n, k));
  EXPECT_DOUBLE_EQ(step(sglang), sglang_us);
  EXPECT_DOUBLE_EQ(step(vllm), s.surfaceUs(m, n, k));
  EXPECT_DOUBLE_EQ(step(vllm), vllm_us);
  EXPECT_GT(sglang_us, vllm_us);
  EXPECT_DOUBLE_EQ(default_us, sglang_us);  // no engine named: as before, with the class
  EXPECT_NE(sglang_source.find("as sglang runs it"), std::string::npos) << sglang_source;
  EXPECT_NE(vllm_source.find("the surface alone"), std::string::npos) << vllm_source;
  EXPECT_NE(default_source.find("--engine names another engine"), std::string::npos) << default_source;
  // The step's own provenance says which price its linears took.
  const auto gemm_source = [&](const std::string& engine) {
    return stepOperatorSources(c, hw, model, engine, tp).front().source;
  };
  EXPECT_NE(gemm_source("sglang").find("sglang's linears that DeepGEMM launches as one wave"), std::string::npos)
      << gemm_source("sglang");
  EXPECT_EQ(gemm_source("vllm").find("one wave"), std::string::npos) << gemm_source("vllm");
}

// int4 (AWQ, GPTQ) checkpoints: 4-bit weights with their group scales and zeros, read by every linear; no measured
// surface stands for their GEMMs, so they take the dense-gemm family's roofline and say so.
TEST(OperatorFits, Int4WeightsReadTheirGroupScalesAndTakeTheDenseFamilysRoofline) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("a100-sxm-80g");
  const ModelSpec& bf16 = c.model("qwen3-32b");
  ASSERT_EQ(bf16.weight_dtype, "bf16");
  ModelSpec int4 = bf16;
  int4.weight_dtype = "int4";
  EXPECT_DOUBLE_EQ(kInt4WeightBits, 4.15625);  // 4 bits, and an fp16 scale and a 4-bit zero per 128 weights
  EXPECT_DOUBLE_EQ(int4.parameterBytes(), bf16.parameterBytes() * kInt4WeightBits / 16);
  EXPECT_DOUBLE_EQ(weightBytesPerElement("int4", false), kInt4WeightBits / 8);
  EXPECT_DOUBLE_EQ(weightBytesPerElement("int4", true), kInt4WeightBits / 8);
  const LinearKernels k_bf16 = resolveLinearKernels(c, hw, bf16, "vllm");
  const LinearKernels k_int4 = resolveLinearKernels(c, hw, int4, "vllm");
  EXPECT_EQ(k_int4.gemm_weights, nullptr);
  EXPECT_EQ(k_int4.gemm.provenance, Provenance::Default);
  EXPECT_EQ(stepOperatorSources(c, hw, int4, "vllm", 1).front().provenance, Provenance::Default);
  // A decode step's projections read a quarter of the bytes: far below bf16's at one request.
  const auto oproj = [&](const ModelSpec& m, const LinearKernels& k) {
    StepCosts costs;
    costLinearOps(m, k, Workload::uniform(Phase::Decode, 1, 1, 2048), 1, 2, costs);
    return costs.op_us[static_cast<std::size_t>(StepOp::OProj)];
  };
  EXPECT_LT(oproj(int4, k_int4), 0.5 * oproj(bf16, k_bf16));
}

// The catalog error an MI300X calibration file with this `gemm:` section gives ("" when it loads).
std::string gemmSectionError(const std::string& gemm) {
  OverlayDir overlay;
  overlay.write("hardware/calibrations/mi300x.yaml",
                "hardware: mi300x\nsource: \"test\"\ncreated: \"2026-11-27\"\ngemm:\n" + gemm + "kernels: {}\n");
  try {
    (void)overlay.load();
  } catch (const CatalogError& e) {
    return e.what();
  }
  return {};
}

TEST(OperatorFits, ASurfaceWhoseValuesDoNotFillItsGridIsACatalogErrorNamingTheKey) {
  const std::string short_grid =
      gemmSectionError("  bf16: {m: [1, 2], n: [64], k: [64], efficiency: [0.5], points: 1}\n");
  EXPECT_NE(short_grid.find("mi300x.yaml:"), std::string::npos) << short_grid;
  EXPECT_NE(short_grid.find("efficiency"), std::string::npos) << short_grid;
  EXPECT_NE(short_grid.find("2 × 1 × 1"), std::string::npos) << short_grid;
  const std::string bad_dtype = gemmSectionError("  int3: {m: [1], n: [64], k: [64], efficiency: [0.5], points: 1}\n");
  EXPECT_NE(bad_dtype.find("fp8_block"), std::string::npos) << bad_dtype;
}

TEST(WeightDtype, AScenarioOverridesTheCheckpointsWeightDtypeForItsGemmsAndMemory) {
  Scenario s = engineScenario("vllm", "h100-sxm", "llama-3.1-70b");
  s.workload = Workload::uniform(Phase::Decode, 64, 1, 4096);
  s.tp = 4;
  const ScenarioPrediction bf16 = predictScenario(defaultCatalog(), s);
  s.weight_dtype = "fp8";
  const ScenarioPrediction fp8 = predictScenario(defaultCatalog(), s);
  EXPECT_EQ(fp8.model->weight_dtype, "fp8");
  EXPECT_DOUBLE_EQ(fp8.model->parameterBytes(), bf16.model->parameterBytes() / 2);
  // Decode GEMMs stream the weights: half the bytes, less time, on the fp8 surface.
  EXPECT_LT(fp8.prediction.eager.by_category[1], 0.8 * bf16.prediction.eager.by_category[1]);
  EXPECT_DOUBLE_EQ(fp8.prediction.attention_us, bf16.prediction.attention_us);
  s.weight_dtype = "fp9";
  EXPECT_THROW((void)predictScenario(defaultCatalog(), s), UsageError);
}

TEST(PredictOperator, OneGemmAndOneAllReduceWithTheirProvenance) {
  const CommandResult gemm = runAttnsim("--json predict --hardware h100-sxm --gemm 4096,4096,4096");
  ASSERT_EQ(gemm.exit_code, 0) << gemm.output;
  EXPECT_NE(gemm.output.find("\"provenance\": \"measured fit\""), std::string::npos) << gemm.output;
  EXPECT_NE(gemm.output.find("\"band_basis\": \"heldout\""), std::string::npos) << gemm.output;
  const CommandResult ar = runAttnsim("predict --hardware mi300x --allreduce 1048576 --tp 8");
  ASSERT_EQ(ar.exit_code, 0) << ar.output;
  EXPECT_NE(ar.output.find("catalog default"), std::string::npos) << ar.output;
  const CommandResult bad = runAttnsim("predict --hardware h100-sxm --gemm 4096,4096 --model llama-3.1-8b");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --gemm 8,8,8 --gemm-dtype nvfp4").exit_code, 2);
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --allreduce 1024").exit_code, 2);  // --tp 1
  // Three GPUs: vLLM's custom all-reduce does not run, NCCL's measured all-reduce answers and says why.
  const CommandResult tp3 = runAttnsim("predict --hardware h100-sxm --allreduce 1048576 --tp 3 --engine vllm");
  ASSERT_EQ(tp3.exit_code, 0) << tp3.output;
  EXPECT_NE(tp3.output.find("NCCL's all-reduce"), std::string::npos) << tp3.output;
  EXPECT_NE(tp3.output.find("does not run over 3 GPUs"), std::string::npos) << tp3.output;
  const CommandResult nccl = runAttnsim("--json predict --hardware b200 --allreduce 1048576 --tp 8 --engine nccl");
  ASSERT_EQ(nccl.exit_code, 0) << nccl.output;
  EXPECT_NE(nccl.output.find("NCCL's all-reduce"), std::string::npos) << nccl.output;
  EXPECT_NE(nccl.output.find("\"band_basis\": \"heldout\""), std::string::npos) << nccl.output;
}

}  // namespace
}  // namespace attnsim::test
