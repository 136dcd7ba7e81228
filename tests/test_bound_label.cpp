// unit: a prediction's bound label says which roof sets its time, decided by comparing the call's
// time with each roof's time (issue 29): compute or memory when that roof takes at least half the
// call's time, latency when neither does (a serial per-key loop, a launch). docs/COST_MODEL.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>

#include "cost/AttentionCost.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

constexpr double kRoofShare = 0.5;

AttentionCost attentionOf(const std::string& hardware, const std::string& model, const std::string& backend,
                          const Workload& w, std::int64_t tp = 1) {
  Scenario s;
  s.hardware = hardware;
  s.model = model;
  s.backend = backend;
  s.workload = w;
  s.tp = tp;
  qualifyBackends(s);
  return predictScenario(defaultCatalog(), s).prediction.attention.front().cost;
}

void expectLabelFollowsTheRoofs(const AttentionCost& c, const std::string& what) {
  const double roof = std::max(c.compute_us, c.memory_us);
  const char* expected = roof < kRoofShare * c.time_us ? "latency" : c.compute_us >= c.memory_us ? "compute" : "memory";
  EXPECT_STREQ(boundName(c.bound), expected)
      << what << ": time " << c.time_us << " µs, compute " << c.compute_us << " µs, memory " << c.memory_us << " µs";
}

TEST(BoundLabel, FlexAttentionPrefillWhoseKeyLoopSetsTheTimeIsLatencyBound) {
  // Both roofs are a small part of the time: the per-key loop, not the FLOP/s or the bandwidth, sets it.
  const AttentionCost c =
      attentionOf("h100-sxm", "llama-3.1-8b", "vllm:FLEX_ATTENTION", Workload::uniform(Phase::Prefill, 1, 8192, 8192));
  ASSERT_LT(std::max(c.compute_us, c.memory_us), kRoofShare * c.time_us);
  EXPECT_EQ(c.bound, Bound::Latency);
}

TEST(BoundLabel, MlaExtendNearItsComputeRoofIsComputeBound) {
  // SGLang fa3 over a 32k prefix: hundreds of TFLOP/s and a few tens of GB/s.
  const AttentionCost c =
      attentionOf("h100-sxm", "deepseek-v3", "sglang:fa3", Workload::uniform(Phase::Extend, 1, 2048, 34816), 8);
  ASSERT_GT(c.compute_us, 10 * c.memory_us);
  EXPECT_EQ(c.bound, Bound::Compute);
}

TEST(BoundLabel, EveryLabelFollowsTheComparisonOfTheTimeWithEachRoof) {
  struct LabelCase {
    const char* hardware;
    const char* model;
    const char* backend;
    Workload workload;
  };
  const std::array<LabelCase, 7> cases{{
      {"h100-sxm", "llama-3.1-8b", "vllm:FLASH_ATTN", Workload::uniform(Phase::Decode, 1, 1, 512)},
      {"h100-sxm", "llama-3.1-8b", "vllm:FLASH_ATTN", Workload::uniform(Phase::Decode, 64, 1, 4096)},
      {"h100-sxm", "llama-3.1-8b", "vllm:FLASH_ATTN", Workload::uniform(Phase::Prefill, 1, 4096, 4096)},
      {"h100-sxm", "llama-3.1-8b", "vllm:FLEX_ATTENTION", Workload::uniform(Phase::Decode, 16, 1, 2048)},
      {"h100-sxm", "llama-3.1-8b", "vllm:TRITON_ATTN", Workload::uniform(Phase::Prefill, 2, 2048, 2048)},
      {"h200", "llama-3.1-8b", "sglang:flashinfer", Workload::uniform(Phase::Decode, 256, 1, 8192)},
      {"h200", "llama-3.1-8b", "sglang:triton", Workload::uniform(Phase::Extend, 4, 512, 4096)},
  }};
  for (const auto& k : cases) {
    const std::string what = std::string(k.backend) + " " + describe(k.workload);
    expectLabelFollowsTheRoofs(attentionOf(k.hardware, k.model, k.backend, k.workload), what);
  }
}

}  // namespace
}  // namespace attnsim::test
