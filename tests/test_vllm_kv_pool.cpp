// vLLM's KV pool as Worker.determine_available_memory sizes it: the reported GPU memory times the
// utilization, less the weights as the MXFP4 Marlin layout pads them and the profiling run's peak (its
// forward or its sampler call over min(max_num_seqs, max_num_batched_tokens) rows of logits).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "TestSupport.hpp"
#include "catalog/Catalog.hpp"
#include "cost/MemoryModel.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/Capacity.hpp"

namespace attnsim {
namespace {

MemorySplit vllmSplit(const std::string& hw, const std::string& model,
                      const std::map<std::string, std::string>& options, int tp = 1) {
  Scenario s = test::engineScenario("vllm", hw, model);
  s.tp = tp;
  s.engine_options = options;
  return capacityOf(test::defaultCatalog(), s).split;
}

double derivedOf(const MemorySplit& s, const std::string& name) {
  for (const auto& [n, v] : s.derived) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no derived variable " << name;
  return 0;
}

TEST(VllmKvPool, UtilizationAppliesToTheMemoryTheDriverReports) {
  const MemorySplit s = vllmSplit("h100-sxm", "llama-3.1-8b", {});
  const HardwareProfile& hw = test::defaultCatalog().hardware("h100-sxm");
  ASSERT_TRUE(hw.reported_memory_mib.has_value());
  EXPECT_DOUBLE_EQ(s.gpu_mib, *hw.reported_memory_mib);
  EXPECT_LT(s.gpu_mib, hw.memory_gb * 1024);  // the driver reports less than the vendor's GB read as GiB
}

TEST(VllmKvPool, SamplerProfileGrowsWithMaxNumSeqsTimesVocab) {
  // Rows of logits are min(max_num_seqs, max_num_batched_tokens); at these sizes the sampler outweighs the forward.
  const MemorySplit few = vllmSplit("h100-sxm", "llama-3.1-8b", {{"max_num_seqs", "256"}});
  const MemorySplit many = vllmSplit("h100-sxm", "llama-3.1-8b", {{"max_num_seqs", "1024"}});
  const double vocab = test::defaultCatalog().model("llama-3.1-8b").vocab_size;
  const double per_logit = derivedOf(many, "sampler_bytes_per_logit");
  EXPECT_NEAR(derivedOf(many, "sampler_mib"), 1024 * vocab * per_logit / kMiB, 1e-6);
  ASSERT_GT(derivedOf(many, "sampler_mib"), many.activation_mib);
  ASSERT_GT(derivedOf(few, "sampler_mib"), few.activation_mib);
  EXPECT_NEAR(few.kv_pool_mib - many.kv_pool_mib, (1024 - 256) * vocab * per_logit / kMiB, 1e-6);
  // A larger vocabulary costs more at the same rows (Qwen3-8B: 151,936 against Llama's 128,256).
  const MemorySplit qwen = vllmSplit("h100-sxm", "qwen3-8b", {});
  EXPECT_GT(derivedOf(qwen, "sampler_mib"), derivedOf(many, "sampler_mib"));
}

TEST(VllmKvPool, SamplerRowsAreCappedByTheTokenBudget) {
  const MemorySplit s =
      vllmSplit("h100-sxm", "llama-3.1-8b", {{"max_num_seqs", "1024"}, {"max_num_batched_tokens", "512"}});
  EXPECT_DOUBLE_EQ(derivedOf(s, "sampler_rows"), 512);
}

TEST(VllmKvPool, FlashInferSamplerLeavesALargerPoolThanTheTorchSort) {
  const MemorySplit sort = vllmSplit("h100-sxm", "llama-3.1-8b", {});
  const MemorySplit fi = vllmSplit("h100-sxm", "llama-3.1-8b", {{"flashinfer_sampler", "true"}});
  EXPECT_GT(derivedOf(sort, "sampler_bytes_per_logit"), derivedOf(fi, "sampler_bytes_per_logit"));
  EXPECT_GT(fi.kv_pool_mib, sort.kv_pool_mib);
}

TEST(VllmKvPool, LargerTokenBudgetLeavesASmallerPool) {
  // With few sequences the forward at max_num_batched_tokens is the profile's peak.
  const std::map<std::string, std::string> base{{"max_num_seqs", "16"}, {"flashinfer_sampler", "true"}};
  auto with = base;
  with["max_num_batched_tokens"] = "32768";
  const MemorySplit small = vllmSplit("h100-sxm", "llama-3.1-8b", base);
  const MemorySplit large = vllmSplit("h100-sxm", "llama-3.1-8b", with);
  ASSERT_GT(large.activation_mib, derivedOf(large, "sampler_mib"));
  EXPECT_GT(large.activation_mib, small.activation_mib);
  EXPECT_LT(large.kv_pool_mib, small.kv_pool_mib);
  // The peak is the larger of the two, not their sum.
  const double peak = std::max(large.activation_mib, derivedOf(large, "sampler_mib"));
  EXPECT_NEAR(large.kv_pool_mib, large.gpu_mib * 0.9 - large.weights_mib - peak, 1e-6);
}

TEST(VllmKvPool, Mxfp4ExpertsArePaddedForMarlinBelowSm10AndForTrtllmOnSm100) {
  const ModelSpec& m = test::defaultCatalog().model("gpt-oss-120b");
  const MemorySplit h100 = vllmSplit("h100-sxm", "gpt-oss-120b", {});
  // Intermediate 2880 -> 2944 (128), hidden 2880 -> 3072 (256), gate/up and down of every expert at 4.25 bits.
  const double layers = m.num_layers - m.moe->first_dense_layers;
  const double pad = layers * m.moe->num_experts * 3 * (2944.0 * 3072 - 2880.0 * 2880) * 17 / 32;
  EXPECT_NEAR(derivedOf(h100, "moe_weight_padding_mib"), pad / kMiB, 1e-6);
  // TP 2 pads each rank's 1440 columns to 1536: relatively more.
  const MemorySplit tp2 = vllmSplit("h100-sxm", "gpt-oss-120b", {}, 2);
  const double pad2 = layers * m.moe->num_experts * 3 * (1536.0 * 3072 - 1440.0 * 2880) * 17 / 32;
  EXPECT_NEAR(derivedOf(tp2, "moe_weight_padding_mib"), pad2 / kMiB, 1e-6);
  // SM 10.0 runs FlashInfer's TRT-LLM MoE, which pads both sizes to 256: 2880 -> 3072 each.
  const double pad_b200 = layers * m.moe->num_experts * 3 * (3072.0 * 3072 - 2880.0 * 2880) * 17 / 32;
  EXPECT_NEAR(derivedOf(vllmSplit("b200", "gpt-oss-120b", {}), "moe_weight_padding_mib"), pad_b200 / kMiB, 1e-6);
  // bf16 and dense models have nothing to pad.
  EXPECT_DOUBLE_EQ(derivedOf(vllmSplit("h100-sxm", "llama-3.1-8b", {}), "moe_weight_padding_mib"), 0);
}

TEST(VllmKvPool, GptOss120bOnOneH100ReproducesTheLoggedBudgets) {
  // vllm-project/vllm issue 23278 (v0.10.1, defaults, no FlashInfer): "Model loading took 65.9651 GiB",
  // "Available KV cache memory: -2.14 GiB"; issue 27508 (utilization 0.95, max_num_batched_tokens 1024):
  // 1.71 GiB. Checked within 0.5 GiB: the non-torch memory (cuBLAS, kernels) is not counted.
  const MemorySplit d = vllmSplit("h100-sxm", "gpt-oss-120b", {});
  EXPECT_NEAR((d.weights_mib + derivedOf(d, "moe_weight_padding_mib")) / 1024, 65.9651, 0.2);
  EXPECT_NEAR(d.kv_pool_mib / 1024, -2.14, 0.5);
  EXPECT_FALSE(d.weightsFit());
  const MemorySplit u95 =
      vllmSplit("h100-sxm", "gpt-oss-120b", {{"gpu_memory_utilization", "0.95"}, {"max_num_batched_tokens", "1024"}});
  EXPECT_NEAR(u95.kv_pool_mib / 1024, 1.71, 0.5);
}

}  // namespace
}  // namespace attnsim
