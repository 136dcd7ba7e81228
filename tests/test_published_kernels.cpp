// Published kernel tables, reproduced point by point: each table is data under tests/data/published
// with its citation, and every point must fall within the stated tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/Catalog.hpp"
#include "cost/AttentionCost.hpp"
#include "hardware/HardwareProfile.hpp"
#include "study/Calibration.hpp"
#include "study/Measurements.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// Rows of a CSV whose lines starting with '#' carry the citation; the first other line is the header.
std::vector<std::vector<double>> readTable(const std::string& name) {
  std::ifstream in(std::string(ATTNSIM_TEST_DATA) + "/published/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::vector<double>> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<double> row;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  return rows;
}

// FA3 Figure 5 setup: 16k tokens per call (batch = 16384 / seqlen), hidden 2048 (heads = 2048 / d),
// contiguous K/V (the benchmark is not paged), FLOPs 4·s²·d·heads·batch, halved when causal.
double fa3PaperTflops(int d, bool causal, std::int64_t seqlen) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  KernelModel kernel = resolveKernel(c.kernel("fa3"), hw, Phase::Prefill);
  kernel.paged_native = false;
  // The family's published figures, not the device's calibration: that one is fitted to the engines'
  // own calls (paged, in their builds of FA3, AIConfigurator's tables), and checked on their held-out shapes.
  const KernelEfficiency& published = c.kernel("fa3").efficiencyFor(hw.architecture);
  kernel.compute_efficiency = published.compute_efficiency;
  kernel.memory_efficiency = published.memory_efficiency;
  kernel.fixed_us = published.fixed_us;
  kernel.key_us = published.key_ns / 1000.0;
  kernel.surface = nullptr;
  const DeviceModel device = resolveDevice(hw, DType::BF16);
  AttentionShape s;
  s.num_heads = s.num_kv_heads = 2048 / d;
  s.d_qk = s.d_v = d;
  s.kv_token_width = 2 * d;
  s.causal = causal;
  const RequestGroup g{16384 / seqlen, seqlen, seqlen};
  const auto cost = predictAttention(s, kernel, device, Phase::Prefill, std::span<const RequestGroup>(&g, 1), 1);
  const double flops = 4.0 * static_cast<double>(seqlen) * static_cast<double>(seqlen) * d * s.num_heads *
                       static_cast<double>(g.count) * (causal ? 0.5 : 1.0);
  return flops / cost.time_us / 1e6;
}

// Tolerance 15% per point: the figure's bars are single runs of a kernel whose tile shapes and
// scheduling change with head dim and masking (FA3 picks 192×128, 128×176 or 128×80 tiles and a
// different schedule when causal); attnsim models one 128×128 tile and the exponential's throughput,
// so a few percent of tile quantisation remain unmodelled at every point.
constexpr double kTableTolerance = 0.15;

TEST(PublishedKernels, FlashAttention3ForwardFigure5) {
  const auto rows = readTable("fa3_h100_forward_bf16.csv");
  ASSERT_EQ(rows.size(), 35U);
  double worst = 0;
  for (const auto& r : rows) {
    const int d = static_cast<int>(r[0]);
    const bool causal = r[1] != 0;
    const auto seqlen = static_cast<std::int64_t>(r[2]);
    const double predicted = fa3PaperTflops(d, causal, seqlen);
    const double error = predicted / r[3] - 1;
    worst = std::max(worst, std::abs(error));
    EXPECT_LE(std::abs(error), kTableTolerance)
        << "d " << d << (causal ? " causal" : " non-causal") << " seqlen " << seqlen << ": predicted " << predicted
        << " TFLOP/s, published " << r[3];
  }
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("FA3 Figure 5: %zu points, worst relative error %.3f\n", rows.size(), worst);
}

// FlashMLA's README figures are the best of its benchmark grid. H800 SXM5 is an H100 SXM5 with
// NVLink cut to 400 GB/s: the same 132 SMs, 989 dense BF16 TFLOP/s and 3.35 TB/s HBM3, and a
// single-GPU decode kernel does not touch NVLink, so the h100-sxm profile stands for it.
struct MlaPoint {
  double tflops = 0;
  double gbps = 0;
};

MlaPoint flashMlaPoint(std::int64_t batch, std::int64_t cache, int heads, std::int64_t s_q) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const KernelModel kernel = resolveKernel(c.kernel("flashmla"), hw, Phase::Decode);
  const DeviceModel device = resolveDevice(hw, DType::BF16);
  AttentionShape s;
  s.num_heads = heads;
  s.num_kv_heads = 1;
  s.d_qk = 576;
  s.d_v = 512;
  s.kv_token_width = 576;
  const Phase phase = s_q == 1 ? Phase::Decode : Phase::Verify;
  const RequestGroup g{batch, s_q, cache};
  const auto cost = predictAttention(s, kernel, device, phase, std::span<const RequestGroup>(&g, 1), 64);
  const auto n = static_cast<double>(batch);
  const double keys = n * static_cast<double>(cache);
  const double flops = 2.0 * static_cast<double>(s_q) * keys * heads * (576 + 512);
  const double bytes = 2.0 * (keys * 576 + n * static_cast<double>(s_q) * heads * (576 + 512));
  return {flops / cost.time_us / 1e6, bytes / cost.time_us / 1e3};
}

TEST(PublishedKernels, FlashMlaReadmeFigures) {
  const auto rows = readTable("flashmla_h800_readme.csv");
  ASSERT_EQ(rows.size(), 2U);
  MlaPoint best;
  for (const std::int64_t cache : {4096, 8192, 16384}) {
    for (const int heads : {16, 32, 64, 128}) {
      for (const std::int64_t s_q : {1, 2}) {
        const MlaPoint p = flashMlaPoint(128, cache, heads, s_q);
        best.tflops = std::max(best.tflops, p.tflops);
        best.gbps = std::max(best.gbps, p.gbps);
      }
    }
  }
  EXPECT_NEAR(best.tflops / rows[0][1], 1.0, kTableTolerance) << "best TFLOP/s " << best.tflops;
  EXPECT_NEAR(best.gbps / rows[1][1], 1.0, kTableTolerance) << "best GB/s " << best.gbps;
  // DeepSeek-V3 at 128 heads per GPU (TP 1, one token per request) is the compute-bound case the
  // update targets (h_q × s_q >= 64): it reaches the figure, not the memory-bound share of it.
  const MlaPoint v3 = flashMlaPoint(128, 16384, 128, 1);
  EXPECT_NEAR(v3.tflops / rows[0][1], 1.0, kTableTolerance) << "DeepSeek-V3, 128 heads: " << v3.tflops;
  // At 16 heads per GPU (TP 8) the kernel is memory-bound: it streams near the bandwidth figure.
  const MlaPoint tp8 = flashMlaPoint(128, 16384, 16, 1);
  EXPECT_NEAR(tp8.gbps / rows[1][1], 1.0, kTableTolerance) << "16 heads: " << tp8.gbps;
  std::printf(
      "FlashMLA README (%.0f TFLOP/s, %.0f GB/s): best %.0f TFLOP/s, %.0f GB/s; DeepSeek-V3 128 heads %.0f "
      "TFLOP/s; 16 heads %.0f GB/s\n",
      rows[0][1], rows[1][1], best.tflops, best.gbps, v3.tflops, tp8.gbps);
}

// The measured wave edges (measurements/data/{h100,h200}/wave_edges.csv: SDPA decode, 32/8 heads of
// 128, 8k and 16k keys, at batches whose units sit just below and past one and two waves of the 132
// SMs): from each batch to the next, the model's step (with the committed calibration) matches the
// measured one within 15% of the ratio. FA2 steps 1.08-1.20x at 16 -> 17 requests and 1.46-1.57x at
// 33 -> 34; a model with one CTA per SM for FA2 decode predicted 1.97x for the first (issue 12).
TEST(PublishedKernels, MeasuredWaveEdgesOfSdpaDecode) {
  constexpr double kStepTolerance = 0.15;
  const Catalog& catalog = defaultCatalog();
  double worst = 0;
  std::string worst_case;
  int steps = 0;
  for (const char* device : {"h100", "h200"}) {
    const std::string path = std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/" + device + "/wave_edges.csv";
    const std::vector<MeasurementRow> rows = readMeasurementCsv(path, catalog);
    ASSERT_GE(rows.size(), 32U) << path;
    std::map<std::string, std::pair<const MeasurementRow*, double>> previous;  // impl and context -> row, prediction
    for (const auto& row : rows) {
      const KernelModel k = measuredKernelModel(catalog, row.kernel, row.hardware, Phase::Decode);
      const FitParams params{k.compute_efficiency, k.memory_efficiency, k.fixed_us, k.key_us * 1000};
      const double predicted =
          predictPoint(fitPointFrom(row), k, resolveDevice(catalog.hardware(row.hardware), DType::BF16), params);
      const std::string key = row.impl + " " + std::to_string(row.kv_len);
      const auto before = previous.find(key);
      if (before != previous.end() && before->second.first->batch + 1 == row.batch) {
        const double measured_step = row.median_us / before->second.first->median_us;
        const double predicted_step = predicted / before->second.second;
        const double error = predicted_step / measured_step - 1;
        const std::string what = row.hardware + " " + key + " batch " + std::to_string(row.batch);
        EXPECT_NEAR(error, 0.0, kStepTolerance)
            << what << ": measured " << measured_step << "x, predicted " << predicted_step << "x";
        if (std::abs(error) > std::abs(worst)) {
          worst = error;
          worst_case = what;
        }
        ++steps;
      }
      previous[key] = {&row, predicted};
    }
  }
  EXPECT_GE(steps, 48);
  std::printf("wave edges: %d steps, worst step error %+.3f (%s)\n", steps, worst, worst_case.c_str());
}

}  // namespace
}  // namespace attnsim::test
