// unit: RTP-LLM's MLA paths (alibaba/rtp-llm @ 44027b7e): the context FMHA without a prefix, the absorb
// path with one (FlashInfer, or FlashMLA for an MTP verify batch), the decode kernels by mla_ops_type.
// Split from test_engine_rtp_llm.cpp; each test cites the RTP-LLM file and function it checks.
#include <gtest/gtest.h>

#include <string>

#include "core/Value.hpp"
#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// (Not `rtp` as in test_engine_rtp_llm.cpp: unity builds put both files in one unit.)
Scenario mlaScenario(const std::string& hardware, const std::string& model) {
  return engineScenario("rtp-llm", hardware, model);
}

//---------------------------------------------------------------------------------------------
// D5. MlaAttentionLayer.cc:mlaAttentionLayer; CudaMlaAttentionOp.cc:CudaDevice::mlaContextAttention
// @ 44027b7e: MLA prefill without a prefix runs the context FMHA of C5 at head nope + rope (192).
TEST(RtpLlmMla, MlaPrefillWithoutPrefixRunsContextFmha) {
  for (const char* hw : {"h100-sxm", "a100-sxm-80g"}) {
    const Selection sel = selectionOf(mlaScenario(hw, "deepseek-v3"));
    ASSERT_FALSE(sel.refusal) << *sel.refusal;
    EXPECT_EQ(nameOf(sel.prefill), "TRT_V2") << hw;
  }
  // OPEN_SOURCE checks the expanded head (192 is in its list), not the latent 576.
  Scenario s = mlaScenario("a100-sxm-80g", "deepseek-v3");
  s.engine_options["enable_trt_fmha"] = "false";
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "OPEN_SOURCE");
}

// D5. mlaContextAttention on SM 10.x: no fused context FMHA (C5), so NONE.
TEST(RtpLlmMla, MlaPrefillWithoutPrefixOnSm100IsUnfused) {
  const Selection sel = selectionOf(mlaScenario("b200", "deepseek-v3"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "NONE");
}

// D5. MlaAttentionLayer.cc:mlaAttentionLayer (C9): with a prefix, mlaAbsorbAttention runs on the
// prefill FlashInfer params.
// C9. CudaFlashInfer.cc:FlashInferAttnParams::prepare @ 44027b7e: with FLASH_MLA (SM >= 9) an absorbed
// prefill of equal input lengths <= 32 (the MTP verify batch) stays on FlashMLA.
TEST(RtpLlmMla, MtpVerifyOverAPrefixRunsFlashMlaOnSm9) {
  Scenario s = mlaScenario("h100-sxm", "deepseek-v3");
  s.has_prefix = true;
  s.spec.algorithm = "mtp";
  s.spec.draft_tokens = 3;
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "FlashMLA");
  s.spec.draft_tokens = 40;  // 41 tokens per request: above FlashMLA's 32
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "FlashInfer");
  Scenario a100 = mlaScenario("a100-sxm-80g", "deepseek-v3");  // FLASH_INFER ops below SM 9
  a100.has_prefix = true;
  a100.spec.algorithm = "mtp";
  a100.spec.draft_tokens = 3;
  EXPECT_EQ(nameOf(selectionOf(a100).prefill), "FlashInfer");
}

TEST(RtpLlmMla, MlaPrefillWithPrefixRunsFlashInferAbsorb) {
  Scenario s = mlaScenario("h100-sxm", "deepseek-v3");
  s.has_prefix = true;
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "FlashInfer");
}

//---------------------------------------------------------------------------------------------
// D6. CudaDevice.cc:CudaDevice::CudaDevice @ 44027b7e: mla_ops_type AUTO resolves to FLASH_MLA on
// SM major >= 9; the bundled FlashMLA is built for sm_90/sm_90a only (flashmla.BUILD), hence the note.
TEST(RtpLlmMla, MlaDecodeAutoPicksFlashMlaOnSm9AndUp) {
  Scenario s = mlaScenario("b200", "deepseek-v3");
  Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.decode), "FlashMLA");
  EXPECT_TRUE(mentions(sel.notes, "sm_90/sm_90a only"));
  s.engine_options["mla_ops_type"] = "flash_infer";
  sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.decode), "FlashInfer");
  EXPECT_EQ(nameOf(selectionOf(mlaScenario("h100-sxm", "deepseek-v3")).decode), "FlashMLA");
}

// D6. CudaDevice::CudaDevice @ 44027b7e: AUTO is FLASH_INFER below SM 9.
TEST(RtpLlmMla, MlaDecodeOnSm8xIsFlashInfer) {
  const Selection sel = selectionOf(mlaScenario("a100-sxm-80g", "deepseek-v3"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.decode), "FlashInfer");
}

// M3. deepseek_v2.py @ 44027b7e (l. 625): size_per_head = qk_nope + qk_rope (192), the head the context
// FMHA of mlaContextAttention runs at; head_size stays the latent width the MLA kernels validate.
TEST(RtpLlmMla, MlaContextFmhaSeesNopePlusRopeHead) {
  const Selection sel = selectionOf(mlaScenario("a100-sxm-80g", "deepseek-v3"));
  EXPECT_EQ(toDisplay(sel.env.at("qk_head_size")), "192");
  EXPECT_EQ(toDisplay(sel.env.at("head_size")), "576");
  Scenario s = mlaScenario("a100-sxm-80g", "deepseek-v3");
  s.engine_options["enable_trt_fmha"] = "false";
  const Selection open_source = selectionOf(s);
  EXPECT_EQ(nameOf(open_source.prefill), "OPEN_SOURCE");
  EXPECT_FALSE(anyReasonMentions(open_source, "head size not in 64, 96, 128, 192"));
}

}  // namespace
}  // namespace attnsim::test
