// smoke: the embedded catalog holds what the project promises and every combination answers.
#include <gtest/gtest.h>

#include "selection/Selector.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

TEST(Catalog, HasTheRequiredHardwareProfiles) {
  for (const char* id :
       {"a100-sxm-40g", "a100-sxm-80g", "a10g", "l40s", "h100-sxm", "h100-pcie", "h200", "h20", "b200", "gb200",
        "mi250x", "mi300x", "mi325x", "mi355x", "ascend-910b", "intel-max-1550", "xeon-spr-amx"}) {
    const HardwareProfile& h = defaultCatalog().hardware(id);
    EXPECT_FALSE(h.source.empty()) << id;
    EXPECT_GT(h.memory_bandwidth_gbps, 0) << id;
    EXPECT_TRUE(h.peak.bf16_tflops || h.peak.fp16_tflops) << id;
  }
}

TEST(Catalog, HasTheRequiredModels) {
  for (const char* id :
       {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "mistral-7b",
        "gemma-3-27b", "gpt-oss-20b", "gpt-oss-120b", "deepseek-v3", "deepseek-r1", "deepseek-v3.2", "qwen2.5-vl-7b"}) {
    const ModelSpec& m = defaultCatalog().model(id);
    int layers = 0;
    for (const auto& [spec, n] : m.layerCounts()) layers += n;
    EXPECT_EQ(layers, m.num_layers) << id;
  }
}

TEST(Catalog, ModelGeometryIsRead) {
  const Catalog& c = defaultCatalog();
  const ModelSpec& gemma = c.model("gemma-3-27b");
  const auto counts = gemma.layerCounts();
  ASSERT_EQ(counts.size(), 2U);
  EXPECT_EQ(counts[0].first->name, "local");
  EXPECT_EQ(counts[0].second, 52);  // 62 layers, 5 local : 1 global, starting with local
  EXPECT_EQ(counts[1].second, 10);
  EXPECT_EQ(gemma.layerAt(5).name, "global");
  EXPECT_TRUE(gemma.isMultimodal());
  const AttentionLayerSpec& mla = c.model("deepseek-v3").primaryLayer();
  EXPECT_EQ(mla.validatedHeadSize(), 576);
  EXPECT_EQ(mla.head_dim, 192);
  EXPECT_EQ(mla.head_dim_v, 128);
  EXPECT_TRUE(c.model("deepseek-v3.2").isSparse());
  EXPECT_TRUE(c.model("gpt-oss-120b").hasSinks());
  EXPECT_EQ(c.model("gpt-oss-120b").layerAt(0).sliding_window, 128);
  EXPECT_EQ(c.model("gpt-oss-120b").layerAt(1).sliding_window, 0);
  EXPECT_DOUBLE_EQ(c.model("llama-3.1-8b").parameterBytes(), 8.03e9 * 2);
  EXPECT_DOUBLE_EQ(c.model("deepseek-v3").parameterBytes(), 671e9);
}

TEST(Catalog, Mxfp4CoversTheRoutedExpertsOnlyTheRestIsBf16) {
  const ModelSpec& m = defaultCatalog().model("gpt-oss-120b");
  // 128 experts x (gate, up, down) of 2880 x 2880 in 36 layers; the other 2.13 B parameters in bf16.
  const double experts = 128.0 * 3 * 2880 * 2880 * 36;
  EXPECT_NEAR(m.parameterBytes(), experts * 4.25 / 8 + (116.8e9 - experts) * 2, 1e3);
  EXPECT_GT(m.parameterBytes(), 116.8e9 * 4.25 / 8);  // more than if all of it were MXFP4
}

TEST(Catalog, EveryEngineHasItsSeedBackends) {
  const Catalog& c = defaultCatalog();
  EXPECT_EQ(backendNames(c.engine("rtp-llm")).size(), 13U);  // the seed's 11, NONE (unfused fallback), ROCmTorchMLA
  EXPECT_EQ(backendNames(c.engine("vllm")).size(), 19U);     // 10 standard (FA2/FA3 are variants) + 9 MLA
  for (const auto& e : c.engines()) {
    for (const auto& b : e.backends) {
      EXPECT_FALSE(b.source.empty()) << b.id();
      EXPECT_TRUE(!b.caps.prefill_kernel.empty() || !b.caps.decode_kernel.empty()) << b.id();
    }
  }
}

TEST(Catalog, KernelFamiliesAreEntriesOfTheirOwn) {
  const Catalog& c = defaultCatalog();
  EXPECT_EQ(c.kernel("fa3").algorithm, "tiled_online_softmax");
  EXPECT_EQ(c.kernel("flashmla").algorithm, "mla_absorbed");
  EXPECT_EQ(c.kernel("triton-sglang").paging, Paging::Emulated);
  EXPECT_THROW((void)c.kernel("fa5"), UsageError);
}

// Every engine x hardware x model answers: a chosen backend for each phase, or the engine's refusal.
TEST(Smoke, EveryCombinationGivesAnAnswer) {
  const Catalog& c = defaultCatalog();
  const Selector selector(c);
  int answered = 0;
  for (const auto& e : c.engines()) {
    for (const auto& h : c.hardwareProfiles()) {
      for (const auto& m : c.models()) {
        const Selection s = selector.select({&h, &m, &e.policy, {}, std::nullopt});
        if (s.refusal) {
          EXPECT_FALSE(s.refusal->empty());
        } else {
          ASSERT_TRUE(s.prefill && s.decode) << e.policy.engine << " " << h.id << " " << m.id;
          EXPECT_NE(s.prefill->caps, nullptr);
        }
        ++answered;
      }
    }
  }
  EXPECT_EQ(answered, 3 * 18 * 16);  // 15 published models and the harness's synthetic decoder
}

TEST(Catalog, ContentHashIsStable) {
  EXPECT_EQ(Catalog::loadDefault().contentHash(), defaultCatalog().contentHash());
  EXPECT_EQ(defaultCatalog().contentHash().size(), 16U);
}

}  // namespace
}  // namespace attnsim::test
