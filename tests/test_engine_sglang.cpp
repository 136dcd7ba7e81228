// unit: SGLang's selection path as its source reads, one test per behaviour the audit in
// docs/engines/sglang.md pins (D1-D12). Each test cites the SGLang file and function it checks.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/Error.hpp"
#include "core/Value.hpp"
#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

Scenario sglang(const std::string& hardware, const std::string& model) {
  return engineScenario("sglang", hardware, model);
}

// D1a. attention_registry.py fa4 factory (index id 57943187787) builds the FlashAttentionBackend
// that decodes for fa3 too; overrides.py:_fa4_page_constraint @ 003bbaf9 gives page 128.
TEST(SglangFa4, ServesDecode) {
  Scenario s = sglang("b200", "llama-3.1-8b");
  s.backend = "fa4";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "fa4");
  EXPECT_EQ(nameOf(sel.decode), "fa4");
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{128}});
}

// S2. arg_groups/speculative_hook.py _handle_speculative_decoding @ 6c69756f: topk > 1 with pages
// checks only attention_backend (its default when unset), never the per-phase backends.
TEST(SglangSpec, TopkAboveOneWithPagesChecksOnlyTheAttentionBackend) {
  Scenario s = sglang("h100-sxm", "llama-3.1-8b");
  s.spec.algorithm = "eagle";
  s.spec.topk = 4;
  s.spec.draft_tokens = 8;
  s.page_size = 16;
  s.prefill_backend = "flashinfer";
  s.decode_backend = "triton";
  const Selection mixed = selectionOf(s);
  ASSERT_FALSE(mixed.refusal) << *mixed.refusal;
  EXPECT_EQ(nameOf(mixed.decode), "triton");
  s.prefill_backend.reset();
  s.decode_backend.reset();
  s.backend = "triton";
  EXPECT_NE(refusalOf(selectionOf(s)).find("speculative_eagle_topk > 1 with page_size > 1 is unstable"),
            std::string::npos);
}

// D1b. kv_cache_hook.py:handle_kv4_compatibility @ 003c5589: FA4 prefill restricts the decode
// backend only for an FP4 KV cache.
TEST(SglangFa4, TrtllmMhaDecodeIsRefusedOnlyWithKv4) {
  Scenario s = sglang("b200", "llama-3.1-8b");
  s.prefill_backend = "fa4";
  s.decode_backend = "trtllm_mha";
  const Selection bf16 = selectionOf(s);
  ASSERT_FALSE(bf16.refusal) << *bf16.refusal;
  EXPECT_EQ(nameOf(bf16.prefill), "fa4");
  EXPECT_EQ(nameOf(bf16.decode), "trtllm_mha");
  EXPECT_EQ(bf16.env.at("page_size"), Value{std::int64_t{128}});
  s.kv_dtype = "fp4_e2m1";
  EXPECT_EQ(refusalOf(selectionOf(s)),
            "KV4 FA4 MHA expects decode_attention_backend to be one of ['triton', 'torch_native', "
            "'flex_attention'], but got trtllm_mha");
}

// D1c. overrides.py:_dsa_kv_cache_dtype_default @ 003bbaf9 renames bf16 to bfloat16 first.
TEST(SglangDsa, AcceptsTheBf16Alias) {
  Scenario s = sglang("h100-sxm", "deepseek-v3.2");
  s.kv_dtype = "bf16";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "dsa");
  EXPECT_EQ(sel.prefill->variant, "bf16: flashmla_sparse/fa3");
  EXPECT_EQ(toDisplay(sel.env.at("kv_dtype")), "bfloat16");
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{64}});
}

// D3. deepseek_v2.py:_deepseek_family_overrides @ 0bc64389 sets page 64 and
// _dsa_kv_cache_dtype_default @ 003bbaf9 the KV dtype whatever the backend flag says.
TEST(SglangDsa, DefaultsApplyWithAnExplicitBackend) {
  Scenario b200 = sglang("b200", "deepseek-v3.2");
  b200.backend = "dsa";
  const Selection fp8 = selectionOf(b200);
  ASSERT_FALSE(fp8.refusal) << *fp8.refusal;
  EXPECT_EQ(fp8.prefill->variant, "fp8: trtllm/trtllm");
  EXPECT_EQ(toDisplay(fp8.env.at("kv_dtype")), "fp8_e4m3");
  EXPECT_EQ(fp8.env.at("page_size"), Value{std::int64_t{64}});

  Scenario h100 = sglang("h100-sxm", "deepseek-v3.2");
  h100.backend = "dsa";
  h100.page_size = 1;
  const Selection bf16 = selectionOf(h100);
  ASSERT_FALSE(bf16.refusal) << *bf16.refusal;
  EXPECT_EQ(toDisplay(bf16.env.at("kv_dtype")), "bfloat16");
  EXPECT_EQ(bf16.env.at("page_size"), Value{std::int64_t{64}});
}

// D1d. flashattention_backend.py:forward_decode (index ids 66467519829, 684802460) descales FP8
// in the MLA branch; only fp8_e5m2 switches to triton (overrides.py:_attention_backend_fa3_fp8_fallback).
TEST(SglangFa3Mla, AcceptsFp8E4m3KvAndSwitchesE5m2ToTriton) {
  Scenario s = sglang("h100-sxm", "deepseek-v3");
  s.kv_dtype = "fp8_e4m3";
  const Selection e4m3 = selectionOf(s);
  ASSERT_FALSE(e4m3.refusal) << *e4m3.refusal;
  EXPECT_EQ(nameOf(e4m3.prefill), "fa3");
  s.kv_dtype = "fp8_e5m2";
  const Selection e5m2 = selectionOf(s);
  EXPECT_EQ(toDisplay(e5m2.env.at("attention_backend")), "triton");
}

// D2. overrides.py:_mla_kv_cache_dtype_checks @ 003bbaf9: the list holds bf16, not bfloat16.
TEST(SglangTrtllmMla, RejectsTheBfloat16Spelling) {
  Scenario s = sglang("b200", "deepseek-v3");
  s.kv_dtype = "bfloat16";
  EXPECT_EQ(refusalOf(selectionOf(s)),
            "TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, fp4_e2m1, bf16, or auto.");
  s.kv_dtype = "bf16";
  const Selection bf16 = selectionOf(s);
  ASSERT_FALSE(bf16.refusal) << *bf16.refusal;
  EXPECT_EQ(nameOf(bf16.prefill), "trtllm_mla");
}

// D7. flashinfer_backend.py (index id 8997989) imports its wrappers only if
// is_flashinfer_available(), which needs CUDA (utils/common.py, index id 47117906).
TEST(SglangRocm, FlashinferIsNotBuiltOnRocm) {
  Scenario s = sglang("mi300x", "llama-3.1-8b");
  EXPECT_FALSE(ranksBackend(s, "flashinfer"));
  s.backend = "flashinfer";
  EXPECT_NE(refusalOf(selectionOf(s)).find("not available on platform rocm"), std::string::npos);
}

// D4. model_override_base.py:get_default_attn_backend @ 00d56e2c has no XPU arm: MHA models fall
// through to triton (no flashinfer off CUDA).
// P4. arg_groups/platform_hook.py handle_xpu_backends @ 01057c01: the decode graph is opt-in on XPU.
TEST(SglangXpu, DecodeCudaGraphIsOffByDefault) {
  const Selection sel = selectionOf(sglang("intel-max-1550", "qwen3-8b"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(sel.env.at("cuda_graph_disabled"), Value{true});
  const auto r = runAttnsim("predict --engine sglang --hardware intel-max-1550 --model qwen3-8b --context 4096 --json");
  EXPECT_NE(r.output.find("\"graph_mode\": \"eager\""), std::string::npos) << r.output;
  const Selection cuda = selectionOf(sglang("h100-sxm", "qwen3-8b"));
  EXPECT_NE(cuda.env.at("cuda_graph_disabled"), Value{true});
}

TEST(SglangXpu, MhaModelsDefaultToTriton) {
  const Selection sel = selectionOf(sglang("intel-max-1550", "qwen3-8b"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "triton");
  EXPECT_EQ(nameOf(sel.decode), "triton");
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{1}});
}

// D4, M5. gpt_oss.py:_gpt_oss_overrides @ 16ac180d picks intel_xpu on XPU; the intel_xpu page
// constraint (overrides.py:_intel_xpu_page_constraint @ 003bbaf9) gives 128.
TEST(SglangXpu, GptOssOverridePicksIntelXpu) {
  const Selection sel = selectionOf(sglang("intel-max-1550", "gpt-oss-20b"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "intel_xpu");
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{128}});
}

// C10. attention_hook.py:handle_attention_backend_compatibility @ 03a70bf3: intel_xpu may decode an
// MLA model, but as its prefill backend (own flag or --attention-backend) it raises.
TEST(SglangXpu, IntelXpuDecodesMlaButDoesNotPrefillIt) {
  Scenario s = sglang("intel-max-1550", "deepseek-v3");
  s.decode_backend = "intel_xpu";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "triton");
  EXPECT_EQ(nameOf(sel.decode), "intel_xpu");
  const std::string raise =
      "intel_xpu backend is only supported on decode for MLA models, please set --decode-attention-backend to "
      "intel_xpu and do not set --attention-backend or --prefill-attention-backend to intel_xpu for prefill "
      "instead use triton.";
  Scenario prefill = sglang("intel-max-1550", "deepseek-v3");
  prefill.prefill_backend = "intel_xpu";
  EXPECT_EQ(refusalOf(selectionOf(prefill)), raise);
  Scenario both = sglang("intel-max-1550", "deepseek-v3");
  both.backend = "intel_xpu";
  EXPECT_EQ(refusalOf(selectionOf(both)), raise);
  EXPECT_FALSE(ranksBackend(sglang("intel-max-1550", "deepseek-v3"), "intel_xpu"));
}

// C11. overrides.py:_intel_xpu_page_constraint @ 003bbaf9: intel_xpu in either phase keeps pages
// 64/128 (MHA) or 16/32/64/128 (MLA); any other page becomes 128.
TEST(SglangXpu, IntelXpuPageSnapsInEitherPhase) {
  const auto pageOf = [](const std::string& model, std::optional<std::int64_t> page, bool prefill) {
    Scenario s = sglang("intel-max-1550", model);
    (prefill ? s.prefill_backend : s.decode_backend) = "intel_xpu";
    s.page_size = page;
    const Selection sel = selectionOf(s);
    EXPECT_FALSE(sel.refusal) << model;
    return sel.env.at("page_size");
  };
  EXPECT_EQ(pageOf("qwen3-8b", std::nullopt, true), Value{std::int64_t{128}});
  EXPECT_EQ(pageOf("qwen3-8b", 32, false), Value{std::int64_t{128}});
  EXPECT_EQ(pageOf("qwen3-8b", 64, true), Value{std::int64_t{64}});
  EXPECT_EQ(pageOf("deepseek-v3", std::nullopt, false), Value{std::int64_t{128}});
  EXPECT_EQ(pageOf("deepseek-v3", 16, false), Value{std::int64_t{16}});
  EXPECT_EQ(pageOf("deepseek-v3", 32, false), Value{std::int64_t{32}});
  EXPECT_EQ(pageOf("deepseek-v3", 8, false), Value{std::int64_t{128}});
}

// D8. gpt_oss.py @ 16ac180d runs only when all three flags are unset (is_attention_backend_not_set).
TEST(SglangGptOss, OverrideNeedsAllThreeFlagsUnset) {
  Scenario s = sglang("intel-max-1550", "gpt-oss-20b");
  s.decode_backend = "intel_xpu";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "triton");
  EXPECT_EQ(nameOf(sel.decode), "intel_xpu");
}

// D5. platform_hook.py:handle_cpu_backends @ 01057c01 sets intel_amx for MLA models too, and
// IntelAMXAttnBackend @ 00e61ac6 has no MLA refusal.
TEST(SglangCpu, IntelAmxRunsMlaModels) {
  const Selection sel = selectionOf(sglang("xeon-spr-amx", "deepseek-v3"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "intel_amx");
  EXPECT_EQ(nameOf(sel.decode), "intel_amx");
}

// D5, F4. IntelAMXAttnBackend @ 00e61ac6 passes the sliding window and the sinks to its kernels.
TEST(SglangCpu, IntelAmxRunsSlidingWindowsAndSinks) {
  const Selection sel = selectionOf(sglang("xeon-spr-amx", "gpt-oss-20b"));
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "intel_amx");
}

// D6. overrides.py:_attention_backend_platform_fallbacks @ 003bbaf9 falls back to torch_native
// only on the CPU; on a GPU intel_amx binds a CPU-only sgl-kernel op.
TEST(SglangCpu, IntelAmxIsNotAChoiceOffTheCpu) {
  Scenario s = sglang("b200", "llama-3.1-8b");
  EXPECT_FALSE(ranksBackend(s, "intel_amx"));
  s.backend = "intel_amx";
  EXPECT_NE(refusalOf(selectionOf(s)).find("not available on platform cuda"), std::string::npos);
}

// D12, F3. DualChunkFlashAttentionBackend.__init__ (index id 803149873) asserts the model's
// dual_chunk_attention_config, which no catalog model has.
TEST(SglangDualChunk, NeedsADualChunkConfig) {
  for (const char* hw : {"h100-sxm", "b200", "a100-sxm-80g"}) {
    EXPECT_FALSE(ranksBackend(sglang(hw, "llama-3.1-8b"), "dual_chunk_flash_attn")) << hw;
  }
  Scenario s = sglang("h100-sxm", "llama-3.1-8b");
  s.backend = "dual_chunk_flash_attn";
  EXPECT_NE(refusalOf(selectionOf(s)).find("dual_chunk_attention_config"), std::string::npos);
}

// C12. server_args.py _handle_attention_backend_compatibility (monolithic, index id 271536807): a model
// with dual_chunk_attention_config runs dual_chunk_flash_attn and any other backend raises. The check runs
// after the default pick, so the default (fa3 on H100) raises too and only the explicit name serves.
TEST(SglangDualChunk, DualChunkModelRunsOnlyDualChunkFlashAttn) {
  const Catalog c = catalogWithModelVariant("qwen3-8b", "dual-chunk-test", {},
                                            "dual_chunk_attention_config: {chunk_size: 262144, local_size: 8192, "
                                            "original_max_position_embeddings: 262144}\n");
  Scenario s = sglang("h100-sxm", "dual-chunk-test");
  const std::string by_default = refusalOf(selectBackends(c, s).selection);
  EXPECT_NE(by_default.find("Dual chunk attention is enabled, but attention backend is set to fa3. Please set it to "
                            "'dual_chunk_flash_attn'."),
            std::string::npos)
      << by_default;
  s.backend = "flashinfer";
  EXPECT_NE(refusalOf(selectBackends(c, s).selection).find("attention backend is set to flashinfer"),
            std::string::npos);
  s.backend = "dual_chunk_flash_attn";
  const Selection sel = selectBackends(c, s).selection;
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "dual_chunk_flash_attn");
  EXPECT_EQ(nameOf(sel.decode), "dual_chunk_flash_attn");
  const Ranking r = rankBackends(c, sglang("h100-sxm", "dual-chunk-test"), {"sglang"});
  ASSERT_FALSE(r.ranked.empty());
  for (const auto& b : r.ranked) EXPECT_EQ(b.backend, "dual_chunk_flash_attn");
}

// D9. hardware_backend/npu/utils.py:set_default_server_args (index id 886924877) overwrites the
// three backend flags with ascend, and sets page 128 only when the page is unset.
TEST(SglangNpu, ForcesAscendAndKeepsAGivenPageSize) {
  Scenario s = sglang("ascend-910b", "llama-3.1-8b");
  s.backend = "torch_native";
  const Selection forced = selectionOf(s);
  ASSERT_FALSE(forced.refusal) << *forced.refusal;
  EXPECT_EQ(nameOf(forced.prefill), "ascend");
  EXPECT_EQ(nameOf(forced.decode), "ascend");
  EXPECT_EQ(forced.env.at("page_size"), Value{std::int64_t{128}});
  Scenario paged = sglang("ascend-910b", "llama-3.1-8b");
  paged.page_size = 64;
  EXPECT_EQ(selectionOf(paged).env.at("page_size"), Value{std::int64_t{64}});
}

// D10. kv_cache_hook.py:handle_kv4_compatibility @ 003c5589 raises off CUDA first.
TEST(SglangKv4, IsRefusedOffCuda) {
  Scenario s = sglang("mi300x", "llama-3.1-8b");
  s.backend = "triton";
  s.kv_dtype = "fp4_e2m1";
  EXPECT_EQ(refusalOf(selectionOf(s)), "KV4 is not tested on non-CUDA platforms.");
}

// K1. server_args.py _handle_kv4_compatibility (monolithic, index id 271536807): with one backend for
// both phases (not FA4 prefill), attention_backend must be in SGLang's KV4 list, asserted with its text;
// a hybrid prefill/decode pair is only warned about.
TEST(SglangKv4, OneBackendForBothPhasesMustBeInSglangsList) {
  Scenario mha = sglang("h100-sxm", "llama-3.1-8b");
  mha.kv_dtype = "fp4_e2m1";
  EXPECT_EQ(refusalOf(selectionOf(mha)),
            "KV4 MHA expects attention_backend to be one of ['triton', 'torch_native', 'flex_attention', "
            "'trtllm_mha'], but got fa3");
  mha.backend = "triton";
  EXPECT_FALSE(selectionOf(mha).refusal);
  Scenario mla = sglang("b200", "deepseek-v3");
  mla.kv_dtype = "fp4_e2m1";
  mla.backend = "triton";
  EXPECT_EQ(refusalOf(selectionOf(mla)),
            "KV4 MLA expects attention_backend to be one of ['cutlass_mla', 'flashinfer', 'trtllm_mla', "
            "'flashmla'], but got triton");
  mla.backend = "cutlass_mla";
  EXPECT_FALSE(selectionOf(mla).refusal);
  // flashmla is in this version's list (the newest drops it), but FlashMLA reads a BF16 or FP8 cache
  // only: the engine accepts it and the kernel cannot run it (selection/KernelLimits.hpp).
  mla.backend = "flashmla";
  EXPECT_NE(refusalOf(selectionOf(mla)).find("kernel limit: decode kernel flashmla reads a KV cache of bf16, fp8_e4m3"),
            std::string::npos)
      << refusalOf(selectionOf(mla));
}

TEST(SglangKv4, AHybridPairIsOnlyWarnedAbout) {
  Scenario s = sglang("h100-sxm", "llama-3.1-8b");
  s.kv_dtype = "fp4_e2m1";
  s.prefill_backend = "fa3";
  s.decode_backend = "triton";
  const Selection sel = selectionOf(s);
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.prefill), "fa3");
  EXPECT_EQ(nameOf(sel.decode), "triton");
  // SGLang accepts a pair that decodes with fa3 too, but FA3 cannot read an FP4 cache: the kernel's limit.
  s.prefill_backend = "triton";
  s.decode_backend = "fa3";
  EXPECT_NE(refusalOf(selectionOf(s)).find("kernel limit: decode kernel fa3"), std::string::npos)
      << refusalOf(selectionOf(s));
}

// F1. attention_registry.py (index id 57943187787): fa3 allows SM80 for non-MLA models only.
TEST(SglangFa3, AllowedOnSm80ForMhaModelsOnly) {
  Scenario mha = sglang("a100-sxm-80g", "llama-3.1-8b");
  mha.backend = "fa3";
  EXPECT_FALSE(selectionOf(mha).refusal);
  Scenario mla = sglang("a100-sxm-80g", "deepseek-v3");
  mla.backend = "fa3";
  EXPECT_NE(
      refusalOf(selectionOf(mla))
          .find("FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use --attention-backend flashinfer."),
      std::string::npos);
}

// R1. get_default_attn_backend (model_override_base.py, index id 57685658290): on SM100 an MHA model
// whose K and V rows differ in width (has_asymmetric_kv) defaults to fa4, since trtllm_mha needs equal
// rows; symmetric models keep trtllm_mha.
TEST(SglangDefault, AsymmetricKvOnSm100DefaultsToFa4) {
  const Catalog c = catalogWithModelVariant("llama-3.1-8b", "asymmetric-kv-test",
                                            {{"head_dim: 128}", "head_dim: 128, head_dim_v: 64}"}});
  const Selection asymmetric = selectBackends(c, sglang("b200", "asymmetric-kv-test")).selection;
  ASSERT_FALSE(asymmetric.refusal) << *asymmetric.refusal;
  EXPECT_EQ(nameOf(asymmetric.prefill), "fa4");
  const Selection symmetric = selectionOf(sglang("b200", "llama-3.1-8b"));
  ASSERT_FALSE(symmetric.refusal) << *symmetric.refusal;
  EXPECT_EQ(nameOf(symmetric.prefill), "trtllm_mha");
}

}  // namespace
}  // namespace attnsim::test

namespace attnsim::test {
namespace {

// Issue 29: SGLang picks a backend per stage; a question about one phase (predict, rank, sweeps) chooses
// only that phase's stage, so a decode is not refused for the prefill backend it would pair with, while
// `select` (a deployment, both stages) still is. trtllm_mha prefills only on SM100 (the catalog's
// requirement) but decodes on the H100.
TEST(SglangStages, ADecodeQueryIsNotRefusedForThePrefillBackendItWouldPairWith) {
  Scenario s = sglang("h100-sxm", "llama-3.1-8b");
  s.workload = Workload::uniform(Phase::Decode, 8, 1, 4096);
  EXPECT_TRUE(ranksBackend(s, "trtllm_mha"));
  s.backend = "trtllm_mha";
  ASSERT_TRUE(predictScenario(defaultCatalog(), s).backend.has_value());
  EXPECT_EQ(predictScenario(defaultCatalog(), s).backend->backend, "trtllm_mha");
  EXPECT_NE(refusalOf(selectionOf(s)).find("trtllm_mha cannot serve the prefill phase"), std::string::npos)
      << refusalOf(selectionOf(s));
  s.workload = Workload::uniform(Phase::Prefill, 1, 4096, 4096);
  try {
    (void)predictScenario(defaultCatalog(), s);
    ADD_FAILURE() << "a prefill on trtllm_mha is refused on the H100";
  } catch (const EngineRefusal& e) {
    EXPECT_NE(std::string(e.what()).find("cannot serve the prefill phase"), std::string::npos) << e.what();
  }
}

TEST(SglangStages, ADecodeQuerysRefusalsNameTheDecodePhase) {
  Scenario s = sglang("h200", "deepseek-v3");
  s.tp = 8;
  s.workload = Workload::uniform(Phase::Decode, 64, 1, 8192);
  const Ranking r = rankBackends(defaultCatalog(), s, {"sglang"});
  ASSERT_FALSE(r.invalid.empty());
  for (const auto& [name, why] : r.invalid)
    EXPECT_EQ(why.find("prefill phase"), std::string::npos) << name << ": " << why;
  EXPECT_NE(r.invalid.at("sglang:cutlass_mla").find("cutlass_mla cannot serve the decode phase"), std::string::npos);
}

}  // namespace
}  // namespace attnsim::test
