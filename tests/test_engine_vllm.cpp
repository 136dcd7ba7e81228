// unit: vLLM v0.16.0's selection behaviours that issue 11's audit (docs/engines/vllm.md) found missing
// or wrong. Each test is named after the engine behaviour it pins and cites the vLLM code at 2d5be1dd
// (v0.16.0) that the YAML rule it exercises transcribes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

Scenario vllm(const std::string& hardware, const std::string& model) {
  Scenario s;
  s.hardware = hardware;
  s.model = model;
  s.engine = "vllm";
  return s;
}

Scenario withBackend(Scenario s, const std::string& backend) {
  s.backend = backend;
  return s;
}

Selection select(const Scenario& s) { return selectBackends(defaultCatalog(), s).selection; }

std::string chosen(const Selection& s) {
  if (s.refusal) return "REFUSED " + *s.refusal;
  if (!s.prefill) return "";
  return s.prefill->variant.empty() ? s.prefill->name : s.prefill->name + " [" + s.prefill->variant + "]";
}

std::vector<std::string> reasonsFor(const ReasonList& list, const std::string& backend) {
  for (const auto& [name, reasons] : list) {
    if (name == backend) return reasons;
  }
  return {};
}

bool hasNote(const Selection& s, const std::string& note) {
  return std::find(s.notes.begin(), s.notes.end(), note) != s.notes.end();
}

bool refusedWith(const Selection& s, const std::string& text) {
  return s.refusal && s.refusal->find(text) != std::string::npos;
}

// ---- D1: Gemma-3 is a multimodal prefix-LM ----
// vllm/config/model.py ModelConfig.is_mm_prefix_lm (model_type gemma3) -> use_mm_prefix on every layer
// (vllm/model_executor/layers/attention/attention.py Attention.__init__); FLASH_ATTN and FLASHINFER do not
// support it (vllm/v1/attention/backend.py AttentionBackend.validate_configuration), all @ 2d5be1dd.
const char* const kMmPrefixReason = "partial multimodal token full attention not supported";

TEST(VllmGemma3, MultimodalPrefixLmPicksTritonOnH100) {
  const Selection s = select(vllm("h100-sxm", "gemma-3-27b"));
  EXPECT_EQ(chosen(s), "TRITON_ATTN");
  for (const char* rejected : {"FLASH_ATTN", "FLASHINFER"}) {
    const auto reasons = reasonsFor(s.considered, rejected);
    EXPECT_NE(std::find(reasons.begin(), reasons.end(), kMmPrefixReason), reasons.end()) << rejected;
  }
}

TEST(VllmGemma3, MultimodalPrefixLmPicksTritonOnB200A100AndL40S) {
  for (const char* hw : {"b200", "a100-sxm-80g", "l40s"}) {
    EXPECT_EQ(chosen(select(vllm(hw, "gemma-3-27b"))), "TRITON_ATTN") << hw;
  }
}

TEST(VllmGemma3, PrefixLmRefusesExplicitFlashAttn) {
  const Selection s = select(withBackend(vllm("h100-sxm", "gemma-3-27b"), "FLASH_ATTN"));
  EXPECT_TRUE(refusedWith(s, "Selected backend FLASH_ATTN is not valid for this configuration. Reason: ['" +
                                 std::string(kMmPrefixReason) + "']"))
      << chosen(s);
}

TEST(VllmQwen25Vl, IsNotPrefixLmSoH100PicksFa3) {
  EXPECT_EQ(chosen(select(vllm("h100-sxm", "qwen2.5-vl-7b"))), "FLASH_ATTN [FA3]");
}

// ---- D2: DeepSeek-V3.2 KV-cache spellings ----
// vllm/model_executor/models/config.py DeepseekV32ForCausalLM.verify_and_update_config @ 2d5be1dd runs before
// the platform hook (vllm/config/vllm.py VllmConfig.__post_init__): fp8* -> fp8_ds_mla, bfloat16 -> auto; then
// only FLASHMLA_SPARSE (KV auto, bfloat16, fp8_ds_mla) is valid on SM 9.x/10.x, block 64
// (vllm/platforms/cuda.py CudaPlatformBase.check_and_update_config).
Scenario withKv(Scenario s, const std::string& kv) {
  s.kv_dtype = kv;
  return s;
}

TEST(VllmDeepseekV32, Fp8KvBecomesFp8DsMlaOnHopper) {
  const Selection s = select(withKv(vllm("h100-sxm", "deepseek-v3.2"), "fp8"));
  EXPECT_EQ(chosen(s), "FLASHMLA_SPARSE");
  EXPECT_EQ(s.env.at("kv_dtype"), Value{std::string("fp8_ds_mla")});
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{64}});
  EXPECT_TRUE(hasNote(s, "Using custom fp8 kv-cache format for DeepSeekV3.2"));
  EXPECT_TRUE(hasNote(s, "Forcing kv cache block size to 64 for FlashMLA backend."));
}

TEST(VllmDeepseekV32, Fp8KvBecomesFp8DsMlaOnBlackwell) {
  const Selection s = select(withKv(vllm("b200", "deepseek-v3.2"), "fp8_e4m3"));
  EXPECT_EQ(chosen(s), "FLASHMLA_SPARSE");
  EXPECT_EQ(s.env.at("kv_dtype"), Value{std::string("fp8_ds_mla")});
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{64}});
  EXPECT_TRUE(hasNote(s, "Forcing kv cache block size to 64 for FlashMLASparse backend."));
}

TEST(VllmDeepseekV32, Bfloat16KvIsAuto) {
  const Selection s = select(withKv(vllm("h100-sxm", "deepseek-v3.2"), "bfloat16"));
  EXPECT_EQ(chosen(s), "FLASHMLA_SPARSE");
  EXPECT_EQ(s.env.at("kv_dtype"), Value{std::string("auto")});
  EXPECT_TRUE(hasNote(s, "Using bfloat16 kv-cache for DeepSeekV3.2"));
}

TEST(VllmDeepseekV32, HasNoBackendOnAmpere) {
  const Selection s = select(vllm("a100-sxm-80g", "deepseek-v3.2"));
  EXPECT_TRUE(refusedWith(s, "No valid attention backend found for cuda")) << chosen(s);
}

}  // namespace
}  // namespace attnsim::test
