// The engines' all-reduces beside the step (issue 27): vLLM's and SGLang's custom kernels and NCCL's, fitted to
// AIConfigurator's tables per GPU count, carried over the same link only, and routed as the engines route a call
// (world sizes and links the custom kernel supports, NCCL otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/YamlReader.hpp"
#include "cost/Collective.hpp"
#include "hardware/HardwareProfile.hpp"
#include "hardware/Interconnect.hpp"
#include "hardware/OperatorFits.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

TEST(AllReduceFit, AnAllReduceTransfersOnlyOverTheSameLink) {
  const Catalog& c = defaultCatalog();
  const auto& h100 = *c.hardware("h100-sxm").interconnect_link;
  ASSERT_EQ(h100.all_reduces.size(), 3U);  // vLLM's and SGLang's custom all-reduces and NCCL's
  EXPECT_EQ(h100.allReduceFor("sglang")->engine, "sglang");
  EXPECT_EQ(h100.allReduceFor("vllm")->engine, "vllm");
  // An unmeasured engine: the first engine's custom all-reduce, not NCCL's (whatever the file's order).
  ASSERT_NE(h100.allReduceFor("rtp-llm"), nullptr);
  EXPECT_NE(h100.allReduceFor("rtp-llm")->engine, kNcclAllReduce);
  ASSERT_NE(h100.ncclAllReduce(), nullptr);
  EXPECT_EQ(h100.ncclAllReduce()->engine, kNcclAllReduce);
  EXPECT_EQ(c.hardware("h200").interconnect_link->allReduceFor("vllm")->transferred_from, "h100-sxm");
  EXPECT_EQ(c.hardware("h200").interconnect_link->ncclAllReduce()->transferred_from, "h100-sxm");
  // The H100 PCIe's link is not the SXM's NVSwitch: the ring model on its own figures.
  ASSERT_TRUE(c.hardware("h100-pcie").interconnect_link);
  EXPECT_TRUE(c.hardware("h100-pcie").interconnect_link->all_reduces.empty());
  // Small messages cost the one-shot latency, large ones stream at the two-shot bandwidth: at 8 GPUs
  // those fitted for 8 GPUs, at 6 (not measured) the regimes shared by every GPU count.
  const AllReduceFit& f = *h100.allReduceFor("vllm");
  const auto eight = std::find_if(f.per_ranks.begin(), f.per_ranks.end(), [](const auto& r) { return r.ranks == 8; });
  ASSERT_NE(eight, f.per_ranks.end());
  EXPECT_NEAR(allReduceUs(h100, 256, 8, "vllm"), eight->one_shot_latency_us, 0.1);
  EXPECT_NEAR(allReduceUs(h100, 1e9, 8, "vllm"), eight->two_shot_latency_us + 1.75e9 / (eight->two_shot_gbps * 1e3),
              1e-6);
  EXPECT_NEAR(allReduceUs(h100, 256, 6, "vllm"), f.one_shot_latency_us, 0.1);
}

TEST(AllReduceFit, AMeasuredGpuCountTakesItsOwnRegimesAndTheOthersTheSharedOnes) {
  AllReduceFit f;
  f.engine = "vllm";
  f.one_shot_latency_us = f.two_shot_latency_us = 10;
  f.one_shot_gbps = 100;
  f.two_shot_gbps = 200;
  f.per_ranks = {
      {.ranks = 2, .one_shot_latency_us = 3, .one_shot_gbps = 50, .two_shot_latency_us = 30, .two_shot_gbps = 500}};
  // 2 GPUs, 1 MB: one-shot 3 + 0.5e6 / 50e3 = 13 µs against two-shot 30 + 1e6 / 500e3 = 32.
  EXPECT_DOUBLE_EQ(f.us(1e6, 2), 13);
  // 100 MB: the two-shot regime, 30 + 1e8 / 500e3 = 230 µs.
  EXPECT_DOUBLE_EQ(f.us(1e8, 2), 230);
  // 4 GPUs were not measured: the shared regimes, 10 + 0.75e6 / 100e3 = 17.5 µs.
  EXPECT_DOUBLE_EQ(f.us(1e6, 4), 17.5);
}

TEST(AllReduceFit, AFileWithPerGpuCountRegimesReadsThemAndRejectsABadCount) {
  const auto text = [](const std::string& ranks) {
    return "vllm: {one_shot: {latency_us: 4, bandwidth_gbps: 80}, two_shot: {latency_us: 9, bandwidth_gbps: 350}, "
           "ranks: {" +
           ranks + "}, points: 45, fit_mape: 0.05}";
  };
  const auto read = [&](const std::string& ranks) {
    return parseAllReduceFits(YamlReader::parseDocument(text(ranks), "cal.yaml"), "cal.yaml");
  };
  const auto fits = read(
      "2: {one_shot: {latency_us: 2, bandwidth_gbps: 60}, two_shot: {latency_us: 7, "
      "bandwidth_gbps: 300}}, 8: {one_shot: {latency_us: 5, bandwidth_gbps: 90}, two_shot: "
      "{latency_us: 12, bandwidth_gbps: 400}}");
  ASSERT_EQ(fits.size(), 1U);
  ASSERT_EQ(fits[0].per_ranks.size(), 2U);
  EXPECT_EQ(fits[0].per_ranks[1].ranks, 8);
  EXPECT_DOUBLE_EQ(fits[0].per_ranks[1].two_shot_gbps, 400);
  try {
    (void)read("one: {one_shot: {latency_us: 2, bandwidth_gbps: 60}, two_shot: {latency_us: 7, bandwidth_gbps: 300}}");
    FAIL() << "a GPU count that is not a number was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cal.yaml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GPU count"), std::string::npos) << e.what();
  }
}

// A link with one engine's all-reduce and NCCL's, each a single regime: vLLM 5 µs + 100 GB/s, NCCL 20 µs + 50.
InterconnectLink linkWithNccl(const std::string& kind) {
  InterconnectLink l;
  l.kind = kind;
  l.bandwidth_gbps = 400;
  l.latency_us = 10;
  l.max_gpus = 8;
  for (const auto& [engine, latency, gbps] : {std::tuple{"vllm", 5.0, 100.0}, std::tuple{"nccl", 20.0, 50.0}}) {
    AllReduceFit f;
    f.engine = engine;
    f.one_shot_latency_us = f.two_shot_latency_us = latency;
    f.one_shot_gbps = gbps;
    f.two_shot_gbps = 2 * gbps;  // the two regimes tie: one line
    l.all_reduces.push_back(f);
  }
  return l;
}

TEST(AllReduceRouting, TheEnginesCustomAllReduceRunsOnlyOverTheWorldSizesAndLinksItSupports) {
  const InterconnectLink nvswitch = linkWithNccl("nvswitch");
  const double bytes = 1e6;
  const auto vllm = [&](int n) { return 5 + (n - 1.0) / n * bytes / 100e3; };
  const auto nccl = [&](int n) { return 20 + (n - 1.0) / n * bytes / 50e3; };
  for (int n : {2, 4, 6, 8}) EXPECT_DOUBLE_EQ(allReduceUs(nvswitch, bytes, n, "vllm"), vllm(n)) << n;
  // vLLM and SGLang support world sizes 2, 4, 6 and 8 only: any other goes to NCCL.
  for (int n : {3, 5, 7}) EXPECT_DOUBLE_EQ(allReduceUs(nvswitch, bytes, n, "vllm"), nccl(n)) << n;
  // Asked for NCCL by name: NCCL's at any size.
  EXPECT_DOUBLE_EQ(allReduceUs(nvswitch, bytes, 8, "nccl"), nccl(8));
  EXPECT_EQ(allReduceFitFor(nvswitch, 8, "nccl"), nvswitch.ncclAllReduce());
  // PCIe is not fully connected: the custom kernel runs over two GPUs only.
  const InterconnectLink pcie = linkWithNccl("pcie");
  EXPECT_DOUBLE_EQ(allReduceUs(pcie, bytes, 2, "vllm"), vllm(2));
  EXPECT_DOUBLE_EQ(allReduceUs(pcie, bytes, 4, "vllm"), nccl(4));
  // Without a measured NCCL, a call the custom kernel cannot take is the ring model on the link's figures.
  InterconnectLink engine_only = nvswitch;
  engine_only.all_reduces.pop_back();
  EXPECT_DOUBLE_EQ(allReduceUs(engine_only, bytes, 3, "vllm"), 10 + 2 * (2.0 / 3) * bytes / 400e3);
  EXPECT_EQ(allReduceFitFor(engine_only, 3, "vllm"), nullptr);
}

TEST(AllReduceRouting, AnUnmeasuredEngineTakesAnEnginesFitBeforeNcclsAndNcclsOnlyWhenAlone) {
  InterconnectLink l = linkWithNccl("nvswitch");
  std::swap(l.all_reduces[0], l.all_reduces[1]);  // NCCL first, as the calibration file's order has it
  EXPECT_EQ(l.allReduceFor("rtp-llm")->engine, "vllm");
  l.all_reduces.pop_back();
  EXPECT_EQ(l.allReduceFor("rtp-llm")->engine, "nccl");
}

}  // namespace
}  // namespace attnsim::test
