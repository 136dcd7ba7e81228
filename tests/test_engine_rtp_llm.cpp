// unit: RTP-LLM's legacy C++ selection (alibaba/rtp-llm @ 44027b7e) as its source reads, one test
// per behaviour the audit in docs/engines/rtp-llm.md pins (D1-D11). Each test cites the RTP-LLM
// file and function it checks.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/Error.hpp"
#include "core/Value.hpp"
#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

Scenario rtp(const std::string& hardware, const std::string& model) {
  return engineScenario("rtp-llm", hardware, model);
}

//---------------------------------------------------------------------------------------------
// D1. CudaDevice.cc:prepareModelRun, checkSpecDecode; CudaAttentionOp.cc:decoderSelfAttention
// @ 44027b7e: no speculative condition anywhere in the selection. The first prefill has no
// prefix (TRT_V2); decode launches XQA with gen_num_per_cycle + 1 queries.
TEST(RtpLlmSpecDecoding, SpecDecodingIsNotAValidationFailure) {
  Scenario s = rtp("h100-sxm", "llama-3.1-8b");
  s.spec.algorithm = "eagle";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "TRT_V2");
  EXPECT_EQ(nameOf(sel.decode), "XQA");
  EXPECT_FALSE(anyReasonMentions(sel, "speculative decoding not supported"));
}

// D1. prepareModelRun's spec-verify branch: XQA when use_xqa && use_fp8_fmha_ (FP8 KV on SM 9.0,
// checkSupportTrtFp8FMHA) and supportXqa.
TEST(RtpLlmSpecDecoding, SpecVerifyUsesXqaWithFp8KvOnSm90) {
  Scenario s = rtp("h100-sxm", "qwen3-8b");
  s.spec.algorithm = "eagle";
  s.has_prefix = true;
  s.kv_dtype = "fp8";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "XQA");
  EXPECT_EQ(nameOf(sel.decode), "XQA");
}

// D1. prepareModelRun's spec-verify branch without FP8 FMHA: FlashInfer when its prefill params
// were prepared (FlashInferAttnParams::check).
TEST(RtpLlmSpecDecoding, SpecVerifyUsesFlashInferWithBaseKv) {
  Scenario s = rtp("h100-sxm", "qwen3-8b");
  s.spec.algorithm = "eagle";
  s.has_prefix = true;
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "FlashInfer");
  EXPECT_EQ(nameOf(sel.decode), "XQA");
}

//---------------------------------------------------------------------------------------------
// D2. models/llama.py:register_model('mistral', Llama) @ 44027b7e: the Llama class reads no
// sliding_window, and the attention configs have no window; Mistral runs full attention.
TEST(RtpLlmSlidingWindow, MistralSlidingWindowIsIgnored) {
  const Selection sel = selectionOf(rtp("h100-sxm", "mistral-7b"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "TRT_V2");
  EXPECT_EQ(nameOf(sel.decode), "XQA");
  EXPECT_TRUE(mentions(sel.notes, "every layer runs full attention"));
  EXPECT_FALSE(anyReasonMentions(sel, "sliding window not supported"));
}

// D2. config/server_config_setup.py:setup_default_args @ 44027b7e: an architecture without a
// register_model fails before any kernel is chosen.
TEST(RtpLlmSlidingWindow, UnregisteredArchitectureFails) {
  for (const char* model : {"gemma-3-27b", "gpt-oss-20b", "gpt-oss-120b"}) {
    const Selection sel = selectionOf(rtp("h100-sxm", model));
    EXPECT_EQ(refusalOf(sel), std::string("model_type is not set and could not be inferred from checkpoint path: ") +
                                  model + ". Please provide --model_type or MODEL_TYPE environment variable.")
        << model;
  }
}

//---------------------------------------------------------------------------------------------
// D3. CudaDevice.cc:CudaDevice::prepareModelRun @ 44027b7e (C4): a prefix-cache context is longer
// than gen_num_per_cycle + 1, fails checkSpecDecode and takes the paged branch: PAGED_TRT_V2.
TEST(RtpLlmPrefixCache, PrefixCacheUsesPagedTrtV2NotFlashInfer) {
  for (const char* hw : {"h100-sxm", "a100-sxm-80g"}) {
    Scenario s = rtp(hw, "qwen3-8b");
    s.has_prefix = true;
    const Selection sel = selectionOf(s);
    ASSERT_FALSE(sel.refusal) << *sel.refusal;
    EXPECT_EQ(nameOf(sel.prefill), "PAGED_TRT_V2") << hw;
  }
}

// D3. prepareModelRun (C4): no paged kernel on SM 10.x, so fmha_type_ stays NONE.
TEST(RtpLlmPrefixCache, PrefixCacheOnSm100FallsBackToUnfused) {
  Scenario s = rtp("b200", "qwen3-8b");
  s.has_prefix = true;
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "NONE");
  EXPECT_EQ(nameOf(sel.decode), "FlashInfer");
}

// D3. prepareModelRun (C4) and CudaDevice.cc:checkUseOpenSourceFMHA @ 44027b7e: PAGED_OPEN_SOURCE
// needs kernel_tokens_per_block % 256 == 0; otherwise NONE.
TEST(RtpLlmPrefixCache, PagedOpenSourceNeeds256TokenBlocks) {
  Scenario s = rtp("a100-sxm-80g", "qwen3-8b");
  s.has_prefix = true;
  s.engine_options["enable_paged_trt_fmha"] = "false";
  s.page_size = 256;
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "PAGED_OPEN_SOURCE");
  s.page_size = 64;
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "NONE");
}

//---------------------------------------------------------------------------------------------
// D4. CudaXqa.cc:supportXqa and CudaFlashInfer.cc:FlashInferAttnParams::check @ 44027b7e reject an
// INT8 KV cache; decoderSelfAttention falls to MMHA. Prefill without a prefix stays on TRT_V2.
TEST(RtpLlmInt8Kv, Int8KvDecodeFallsToMmha) {
  for (const char* hw : {"h100-sxm", "a100-sxm-80g"}) {
    Scenario s = rtp(hw, "qwen3-8b");
    s.kv_dtype = "int8";
    const Selection sel = selectionOf(s);
    ASSERT_FALSE(sel.refusal) << *sel.refusal;
    EXPECT_EQ(nameOf(sel.prefill), "TRT_V2") << hw;
    EXPECT_EQ(nameOf(sel.decode), "MMHA") << hw;
  }
}

// D4. prepareModelRun (C2): paged_kv_fmha needs kv_cache_dtype != INT8, so a prefix runs unfused.
TEST(RtpLlmInt8Kv, Int8KvPrefixPrefillIsUnfused) {
  Scenario s = rtp("h100-sxm", "qwen3-8b");
  s.kv_dtype = "int8";
  s.has_prefix = true;
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "NONE");
  EXPECT_EQ(nameOf(sel.decode), "MMHA");
}

//---------------------------------------------------------------------------------------------
// D7. config/server_config_setup.py:setup_default_args @ 44027b7e: on ROCm with SEQ_SIZE_PER_BLOCK
// unset, seq_size_per_block is 16; a given size is kept.
TEST(RtpLlmRocm, RocmDefaultPageSizeIs16) {
  Scenario s = rtp("mi300x", "llama-3.1-8b");
  Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{16}});
  EXPECT_TRUE(mentions(sel.notes, "set SEQ_SIZE_PER_BLOCK 16 by default"));
  s.page_size = 64;
  EXPECT_EQ(selectionOf(s).env.at("page_size"), Value{std::int64_t{64}});
  EXPECT_EQ(selectionOf(rtp("h100-sxm", "llama-3.1-8b")).env.at("page_size"), Value{std::int64_t{64}});
}

// D8. ROCmAttentionOp.cc:ROCmDevice::decoderSelfAttention @ 44027b7e: AiterPA when use_aiter_pa,
// else MMHA; no FlashInfer branch.
TEST(RtpLlmRocm, RocmDecodeWithoutAiterIsMmha) {
  Scenario s = rtp("mi300x", "llama-3.1-8b");
  EXPECT_EQ(nameOf(selectionOf(s).decode), "AiterPA");
  s.engine_options["use_aiter_pa"] = "false";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.decode), "MMHA");
}

// D8. ROCmAttentionOp.cc:ROCmDevice::contextAttention @ 44027b7e: a prefix loads the cached K/V and
// runs runCKFmhaV2.
TEST(RtpLlmRocm, RocmPrefixPrefillStaysOnCk) {
  Scenario s = rtp("mi300x", "qwen3-8b");
  s.has_prefix = true;
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "CKFMHA");
}

// C12. base_impl/MlaAttentionLayer.cc @ 44027b7e: MLA prefill over a prefix runs mlaAbsorbAttention; on
// ROCm it needs the decode FlashInfer params, which a prefill batch does not have, and throws.
TEST(RtpLlmRocm, MlaPrefillOverAPrefixThrowsForMissingDecodeParams) {
  Scenario s = rtp("mi300x", "deepseek-v3");
  s.has_prefix = true;
  EXPECT_EQ(refusalOf(selectionOf(s)), "flash_infer_attn must be setting when using mla");
  s.has_prefix = false;
  EXPECT_FALSE(selectionOf(s).refusal);
}

//---------------------------------------------------------------------------------------------
// D10. CudaDevice.cc:CudaDevice::CudaDevice @ 44027b7e: use_xqa is set inside the enable_fmha
// branch, so enable_fmha=false leaves decode to FlashInfer and prefill to NONE.
TEST(RtpLlmFlags, EnableFmhaFalseDisablesXqa) {
  Scenario s = rtp("h100-sxm", "qwen3-8b");
  s.engine_options["enable_fmha"] = "false";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "NONE");
  EXPECT_EQ(nameOf(sel.decode), "FlashInfer");
}

// D11. CudaDevice.cc:CudaDevice::prepareModelRun @ 44027b7e: deterministic_attn removes TRT_V2 and
// PAGED_TRT_V2; TRT_V1 needs mla_ops_type MHA.
TEST(RtpLlmFlags, DeterministicAttnSkipsTrtV2) {
  Scenario s = rtp("a100-sxm-80g", "qwen3-8b");
  s.engine_options["deterministic_attn"] = "true";
  Selection sel = selectionOf(s);
  EXPECT_EQ(nameOf(sel.prefill), "OPEN_SOURCE");
  s.has_prefix = true;
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "NONE");
  s = rtp("h100-sxm", "qwen3-8b");
  s.engine_options["use_old_trt_fmha"] = "true";
  EXPECT_TRUE(anyReasonMentions(selectionOf(s), "chosen only when mla_ops_type is MHA"));
}

// D6/D8/D9. Rank lists only what select can reach: FlashInfer is no MLA decode on SM 9 under AUTO,
// and no ROCm MHA decode.
TEST(RtpLlmRank, RankNeverListsUnreachableFlashInfer) {
  EXPECT_FALSE(ranksBackend(rtp("h100-sxm", "deepseek-v3"), "FlashInfer"));
  EXPECT_FALSE(ranksBackend(rtp("b200", "deepseek-v3"), "FlashInfer"));
  EXPECT_FALSE(ranksBackend(rtp("mi300x", "llama-3.1-8b"), "FlashInfer"));
  EXPECT_TRUE(ranksBackend(rtp("a100-sxm-80g", "deepseek-v3"), "FlashInfer"));
}

//---------------------------------------------------------------------------------------------
// D9a. CudaFlashInfer.cc:FlashInferAttnParams::check @ 44027b7e: an MHA model needs RoPE style Base or
// No. Llama-3.1 loads as Llama3 (models/llama.py:Llama._from_hf), so its decode falls past FlashInfer
// to MMHA; Qwen3 (Base) keeps FlashInfer.
TEST(RtpLlmRope, Llama3RopeDisablesFlashInfer) {
  for (const char* hw : {"a100-sxm-80g", "b200"}) {
    const Selection llama = selectionOf(rtp(hw, "llama-3.1-8b"));
    ASSERT_FALSE(llama.refusal) << *llama.refusal;
    EXPECT_EQ(nameOf(llama.decode), "MMHA") << hw;
    EXPECT_TRUE(anyReasonMentions(llama, "RoPE style must be Base or No")) << hw;
    EXPECT_FALSE(ranksBackend(rtp(hw, "llama-3.1-8b"), "FlashInfer")) << hw;
    EXPECT_EQ(nameOf(selectionOf(rtp(hw, "qwen3-8b")).decode), "FlashInfer") << hw;
  }
}

// D9a. rtp_llm/models/qwen2_vl/qwen2_vl.py @ 44027b7e (l. 287): Qwen2-VL's RoPE is Mrope, which
// FlashInferAttnParams::check rejects.
TEST(RtpLlmRope, MropeDisablesFlashInfer) {
  const Selection sel = selectionOf(rtp("a100-sxm-80g", "qwen2.5-vl-7b"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.decode), "MMHA");
}

// D9a on H100 (SM 9.0): neither XQA (CudaXqa.cc:supportXqa) nor the context FMHAs (prepareModelRun,
// TrtV2FmhaRunner) read the RoPE style, so Llama-3.1 prefills on TRT_V2 (PAGED_TRT_V2 over a prefix)
// and decodes on XQA. The spec-verify batch with a BASE KV cache skips FlashInfer (C3) and takes the
// paged branch; with enable_xqa=false the decode is MMHA, not FlashInfer.
TEST(RtpLlmRope, Llama31OnH100RunsTrtV2AndXqaNeverFlashInfer) {
  Scenario s = rtp("h100-sxm", "llama-3.1-8b");
  Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "TRT_V2");
  EXPECT_EQ(nameOf(sel.decode), "XQA");
  s.has_prefix = true;
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "PAGED_TRT_V2");
  s.spec.algorithm = "eagle";
  sel = selectionOf(s);
  EXPECT_EQ(nameOf(sel.prefill), "PAGED_TRT_V2");
  EXPECT_EQ(nameOf(sel.decode), "XQA");
  s.kv_dtype = "fp8";
  EXPECT_EQ(nameOf(selectionOf(s).prefill), "XQA");
  s = rtp("h100-sxm", "llama-3.1-8b");
  s.engine_options["enable_xqa"] = "false";
  EXPECT_EQ(nameOf(selectionOf(s).decode), "MMHA");
}

// M2. rtp_llm/models/deepseek_v2.py @ 44027b7e (l. 631-634): DeepSeek MLA loads with RoPE style No,
// and Yarn only when mla_ops_type is MHA; config.json's yarn stays the model's attribute.
TEST(RtpLlmRope, DeepSeekMlaRopeIsNoUnlessMlaOpsTypeIsMha) {
  Scenario s = rtp("h100-sxm", "deepseek-v3");
  EXPECT_EQ(toDisplay(selectionOf(s).env.at("rope_style")), "no");
  s.engine_options["mla_ops_type"] = "mha";
  EXPECT_EQ(toDisplay(selectionOf(s).env.at("rope_style")), "yarn");
  EXPECT_EQ(toDisplay(selectionOf(rtp("h100-sxm", "llama-3.1-8b")).env.at("rope_style")), "llama3");
}

// M1. The model attribute takes RopeStyle's names only (rtp_llm/cpp/model_utils/RopeConfig.h @ 44027b7e):
// a misspelt style is a load error at its key, listing the allowed values.
TEST(RtpLlmRope, UnknownRopeStyleIsALoadErrorListingTheStyles) {
  OverlayDir overlay;
  std::string yaml = embeddedFile("model/configs/llama-3.1-8b.yaml");
  const std::string from = "rope_style: llama3";
  yaml.replace(yaml.find(from), from.size(), "rope_style: llama31");
  overlay.write("model/configs/llama-3.1-8b.yaml", yaml);
  try {
    (void)overlay.load();
    FAIL() << "an unknown rope_style loads";
  } catch (const CatalogError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rope_style"), std::string::npos) << what;
    EXPECT_NE(what.find("no, base, glm2, dynamicntk, qwendynamicntk, yarn, llama3, mrope"), std::string::npos) << what;
  }
}

// D8 (2). ROCmMlaAttentionOp.cc:ROCmDevice::mlaAbsorbAttention @ 44027b7e: ROCm MLA decode is a torch
// reference loop over prepareDecodeFlashInferAttnParams' page arrays, never FlashInfer; those params
// need a BASE KV cache, so an FP8 KV cache leaves no decode ("flash_infer_attn must be setting").
TEST(RtpLlmRocm, RocmMlaDecodeIsTorchReference) {
  Scenario s = rtp("mi300x", "deepseek-v3");
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "CKFMHA");
  EXPECT_EQ(nameOf(sel.decode), "ROCmTorchMLA");
  EXPECT_FALSE(ranksBackend(s, "FlashInfer"));
  EXPECT_FALSE(ranksBackend(rtp("mi300x", "llama-3.1-8b"), "ROCmTorchMLA"));
  s.kv_dtype = "fp8";
  const Selection fp8 = selectionOf(s);
  EXPECT_NE(refusalOf(fp8).find("KV cache must be BASE"), std::string::npos) << refusalOf(fp8);
}

}  // namespace
}  // namespace attnsim::test
