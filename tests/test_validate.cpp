// unit: vLLM's per-backend validation (the reasons it gives, in its order and phrasing) and the
// refusal that lists every candidate's reasons (../shared/research/engines.md §1.6.2).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "selection/Selector.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

TEST(Validate, ReasonsComeInTheEnginesOrderAndPhrases) {
  const Catalog& c = defaultCatalog();
  const Selector selector(c);
  const Engine& vllm = c.engine("vllm");
  Env env = buildEnv({&c.hardware("a100-sxm-80g"), &c.model("gpt-oss-20b"), &vllm.policy, {}, std::nullopt});
  // FA2 on SM 8.0 with sinks: the sink check (7th) comes before supports_combination (11th).
  EXPECT_EQ(selector.validate(vllm, "FLASH_ATTN", env),
            (std::vector<std::string>{"sink setting not supported", "sink not supported on compute capability < 9.0"}));
  EXPECT_EQ(selector.validate(vllm, "CUTLASS_MLA", env),
            (std::vector<std::string>{"head_size not supported", "non-MLA not supported", "sink setting not supported",
                                      "compute capability not supported"}));
  EXPECT_TRUE(selector.validate(vllm, "TRITON_ATTN", env).empty());
}

TEST(Validate, RejectedListsEveryInvalidBackendWithReasons) {
  const Catalog& c = defaultCatalog();
  const Selection s = Selector(c).select(
      {&c.hardware("h100-sxm"), &c.model("llama-3.1-8b"), &c.engine("vllm").policy, {}, std::nullopt});
  std::map<std::string, std::vector<std::string>> rejected(s.rejected.begin(), s.rejected.end());
  EXPECT_EQ(rejected.count("FLASH_ATTN"), 0U);
  EXPECT_EQ(rejected.count("FLASHINFER"), 0U);
  ASSERT_EQ(rejected.count("CUTLASS_MLA"), 1U);
  EXPECT_EQ(rejected["CUTLASS_MLA"].back(), "compute capability not supported");
  EXPECT_EQ(rejected["ROCM_ATTN"], (std::vector<std::string>{"platform cuda not supported"}));
}

TEST(Validate, NoValidBackendListsAllReasons) {
  // fp32, head size 20 and an fp8 KV cache: no entry of the CUDA list takes all three (§1.6.2 step 3).
  const Catalog c = catalogWithModelVariant("llama-3.1-8b", "odd-heads",
                                            {{"head_dim: 128", "head_dim: 20"}, {"dtype: bf16", "dtype: fp32"}});
  ServingOptions o;
  o.kv_dtype = "fp8";
  const Selection s = Selector(c).select(
      {&c.hardware("a100-sxm-80g"), &c.model("odd-heads"), &c.engine("vllm").policy, o, std::nullopt});
  ASSERT_TRUE(s.refusal.has_value());
  EXPECT_NE(s.refusal->find("No valid attention backend found for cuda with AttentionSelectorConfig(head_size=20"),
            std::string::npos)
      << *s.refusal;
  EXPECT_NE(s.refusal->find("FLASH_ATTN: [head_size not supported, dtype not supported, kv_cache_dtype not supported]"),
            std::string::npos)
      << *s.refusal;
  EXPECT_NE(s.refusal->find("FLEX_ATTENTION: [kv_cache_dtype not supported]"), std::string::npos) << *s.refusal;
}

}  // namespace
}  // namespace attnsim::test
