// unit: SGLang's DeepSeek sparse attention (DSA) passes as arg_groups/overrides.py @ 003bbaf9 reads
// (_dsa_kv_cache_dtype_default, _dsa_split_backend_resolution): the audit rows M3 and M4 of
// docs/engines/sglang.md. 003bbaf9 is the newest of the stored copies of overrides.py (the row says why).
#include <gtest/gtest.h>

#include <string>

#include "core/Value.hpp"
#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

std::string variantOf(const std::optional<BackendChoice>& c) { return c ? c->variant : ""; }

// M4. _dsa_split_backend_resolution @ 003bbaf9: on XPU both DSA sub-backends default to intel_xpu;
// M2/M3: page 128 and a bfloat16 KV cache there.
TEST(SglangDsa, XpuRunsIntelXpuSubBackends) {
  const Selection sel = selectionOf(engineScenario("sglang", "intel-max-1550", "deepseek-v3.2"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "dsa");
  EXPECT_EQ(variantOf(sel.prefill), "xpu: intel_xpu/intel_xpu");
  EXPECT_EQ(variantOf(sel.decode), "xpu: intel_xpu/intel_xpu");
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{128}});
  EXPECT_EQ(sel.env.at("kv_dtype"), Value{std::string("bfloat16")});
}

// M4. _dsa_split_backend_resolution @ 003bbaf9: on ROCm each unset sub-backend defaults to triton
// (_check_dsa_backend_constraints allows triton on ROCm only); the auto KV cache is bfloat16 (SM < 10).
TEST(SglangDsa, RocmDefaultsToTritonSubBackends) {
  const Selection sel = selectionOf(engineScenario("sglang", "mi300x", "deepseek-v3.2"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(variantOf(sel.prefill), "rocm: triton/triton");
  EXPECT_EQ(variantOf(sel.decode), "rocm: triton/triton");
  EXPECT_EQ(sel.env.at("kv_dtype"), Value{std::string("bfloat16")});
}

// M3. _dsa_kv_cache_dtype_default @ 003bbaf9 asserts the KV dtype with its own text.
TEST(SglangDsa, KvDtypeAssertHasSglangsText) {
  Scenario s = engineScenario("sglang", "h100-sxm", "deepseek-v3.2");
  s.kv_dtype = "fp8_e5m2";
  EXPECT_EQ(refusalOf(selectionOf(s)), "DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype");
}

// M3, M4. hf_config.learnable_sink @ 003bbaf9: the auto KV cache stays bfloat16 on SM100, any other
// dtype raises, and both sub-backends are flashmla_sparse (CUDA-only: ROCm cannot import it).
TEST(SglangDsa, LearnableSinksTakeFlashmlaSparseAndABfloat16Cache) {
  const Catalog c = catalogWithModelVariant("deepseek-v3.2", "dsa-sink-test", {}, "learnable_sink: true\n");
  Scenario s = engineScenario("sglang", "b200", "dsa-sink-test");
  const Selection sel = selectBackends(c, s).selection;
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(sel.env.at("kv_dtype"), Value{std::string("bfloat16")});
  EXPECT_EQ(variantOf(sel.prefill), "learnable sinks: flashmla_sparse/flashmla_sparse");
  EXPECT_EQ(variantOf(sel.decode), "learnable sinks: flashmla_sparse/flashmla_sparse");
  s.kv_dtype = "fp8_e4m3";
  EXPECT_EQ(refusalOf(selectBackends(c, s).selection),
            "Learnable DSA attention sinks require a bfloat16 KV cache; got kv_cache_dtype=fp8_e4m3.");
  const std::string rocm = refusalOf(selectBackends(c, engineScenario("sglang", "mi300x", "dsa-sink-test")).selection);
  EXPECT_NE(rocm.find("ImportError: flashmla_ops"), std::string::npos) << rocm;
}

// M3. _dsa_kv_cache_dtype_default @ 003bbaf9 returns on XPU after turning auto into bfloat16: an
// explicit bf16 keeps its spelling there and no DSA dtype assert runs (on CUDA bf16 becomes bfloat16).
TEST(SglangDsa, XpuOnlyTurnsAutoIntoBfloat16) {
  Scenario xpu = engineScenario("sglang", "intel-max-1550", "deepseek-v3.2");
  const Selection by_default = selectionOf(xpu);
  ASSERT_FALSE(by_default.refusal) << *by_default.refusal;
  EXPECT_EQ(toDisplay(by_default.env.at("kv_dtype")), "bfloat16");
  xpu.kv_dtype = "bf16";
  const Selection aliased = selectionOf(xpu);
  ASSERT_FALSE(aliased.refusal) << *aliased.refusal;
  EXPECT_EQ(toDisplay(aliased.env.at("kv_dtype")), "bf16");
}

}  // namespace
}  // namespace attnsim::test
