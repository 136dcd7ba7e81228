// unit: each engine's validation and auto-selection, case by case. Every case cites the rule of
// ../shared/research/engines.md (§) it checks; expected answers are derived from those rules.
#include <gtest/gtest.h>

#include "core/Strings.hpp"
#include "selection/Selector.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

struct Case {
  std::string rule;  // the engines.md rule this case checks
  std::string engine, hardware, model;
  ServingOptions options;
  std::string prefill;                    // expected backend (optionally "NAME [VARIANT]"); "" when refused
  std::string decode;                     // "" = same as prefill
  std::string refusal;                    // expected substring of the engine's message when it refuses
  std::optional<std::int64_t> page_size;  // expected page size after the engine's rules

  Case(std::string rule_, std::string engine_, std::string hardware_, std::string model_, ServingOptions options_,
       std::string prefill_, std::string decode_ = "", std::string refusal_ = "",
       std::optional<std::int64_t> page_size_ = std::nullopt)
      : rule(std::move(rule_)),
        engine(std::move(engine_)),
        hardware(std::move(hardware_)),
        model(std::move(model_)),
        options(std::move(options_)),
        prefill(std::move(prefill_)),
        decode(std::move(decode_)),
        refusal(std::move(refusal_)),
        page_size(page_size_) {}
};

std::string label(const std::optional<BackendChoice>& c) {
  if (!c) return "";
  return c->variant.empty() ? c->name : c->name + " [" + c->variant + "]";
}

ServingOptions opts(const std::function<void(ServingOptions&)>& set) {
  ServingOptions o;
  set(o);
  return o;
}

// A table, one entry per engine rule, grouped by engine; splitting it would only scatter the rules.
std::vector<Case> cases() {  // NOLINT(readability-function-size): data, not logic
  auto backend = [](const char* b) { return opts([b](ServingOptions& o) { o.backend = b; }); };
  auto option = [](const char* k, const char* v) {
    return opts([k, v](ServingOptions& o) { o.engine_options[k] = v; });
  };
  return {
      // ---------------- vLLM v0.16.0 ----------------
      {"§1.6.1 standard list on SM 9.x; §1.6.4 FA3 on SM 9.x",
       "vllm",
       "h100-sxm",
       "llama-3.1-8b",
       {},
       "FLASH_ATTN [FA3]"},
      {"§1.6.4 FA2 off SM 9.x", "vllm", "a100-sxm-80g", "llama-3.1-8b", {}, "FLASH_ATTN [FA2]"},
      {"§1.6.4 FA2 on Ada", "vllm", "l40s", "qwen3-8b", {}, "FLASH_ATTN [FA2]"},
      {"§1.6.1 SM 10.x list starts with FLASHINFER (TRTLLM path)",
       "vllm",
       "b200",
       "llama-3.1-8b",
       {},
       "FLASHINFER [TRTLLM]"},
      {"§1.4 FA2 has no sinks and rejects sinks below CC 9.0; FLASHINFER sinks only on SM 10.x; TRITON_ATTN has sinks",
       "vllm",
       "a100-sxm-80g",
       "gpt-oss-20b",
       {},
       "TRITON_ATTN"},
      {"§1.4 FA3 supports sinks", "vllm", "h100-sxm", "gpt-oss-120b", {}, "FLASH_ATTN [FA3]"},
      {"§1.4 FLASHINFER sinks through TRTLLM on SM 10.x", "vllm", "b200", "gpt-oss-120b", {}, "FLASHINFER [TRTLLM]"},
      {"§1.6.4 flash_attn_version=2 forces FA2: no sinks, so TRITON_ATTN", "vllm", "h100-sxm", "gpt-oss-20b",
       option("fa_version", "2"), "TRITON_ATTN"},
      {"§1.6.1 MLA list on SM 9.x; §1.6.3 block forced to 64 for FlashMLA on Hopper",
       "vllm",
       "h100-sxm",
       "deepseek-v3",
       {},
       "FLASH_ATTN_MLA",
       "",
       "",
       64},
      {"§1.4 FLASH_ATTN_MLA/FLASHMLA need Hopper, FLASHINFER_MLA SM 10.x: TRITON_MLA on Ampere",
       "vllm",
       "a100-sxm-80g",
       "deepseek-v3",
       {},
       "TRITON_MLA",
       "",
       "",
       16},
      {"§1.6.3 SM 10.x, qk_nope 128: FLASHINFER_MLA preset, block 64",
       "vllm",
       "b200",
       "deepseek-r1",
       {},
       "FLASHINFER_MLA",
       "",
       "",
       64},
      {"§1.6.3 explicit CUTLASS_MLA forces block 128", "vllm", "b200", "deepseek-v3", backend("CUTLASS_MLA"),
       "CUTLASS_MLA", "", "", 128},
      {"§1.4 only FLASHMLA_SPARSE is sparse; §1.6.3 sparse block 64",
       "vllm",
       "h200",
       "deepseek-v3.2",
       {},
       "FLASHMLA_SPARSE",
       "",
       "",
       64},
      {"§1.4 FLASH_ATTN_MLA has no fp8 KV; FLASHMLA does", "vllm", "h200", "deepseek-v3",
       opts([](ServingOptions& o) { o.kv_dtype = "fp8"; }), "FLASHMLA"},
      {"§1.4 FA3 accepts fp8 KV", "vllm", "h100-sxm", "llama-3.1-70b",
       opts([](ServingOptions& o) { o.kv_dtype = "fp8"; }), "FLASH_ATTN [FA3]"},
      {"§1.4 FA2 rejects fp8 KV; FLASHINFER accepts it", "vllm", "a100-sxm-80g", "llama-3.1-70b",
       opts([](ServingOptions& o) { o.kv_dtype = "fp8_e5m2"; }), "FLASHINFER"},
      {"§1.6.2 explicit backend validated alone, no fallback", "vllm", "h100-sxm", "llama-3.1-8b", backend("FLASHMLA"),
       "", "",
       "Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. Reason: ['head_size not "
       "supported', 'non-MLA "
       "not supported']"},
      {"§1.4 dense FlashMLA is Hopper only (supports_combination)", "vllm", "a100-sxm-80g", "deepseek-v3",
       backend("FLASHMLA"), "", "",
       "Reason: ['compute capability not supported', 'FlashMLA Dense is only supported on Hopper devices.']"},
      {"§1.6.2 explicit valid backend is used", "vllm", "h100-sxm", "llama-3.1-8b", backend("TRITON_ATTN"),
       "TRITON_ATTN"},
      {"§1.7 ROCm MHA default TRITON_ATTN", "vllm", "mi300x", "llama-3.1-8b", {}, "TRITON_ATTN"},
      {"§1.7 ROCm MHA with AITER on gfx9: ROCM_AITER_FA", "vllm", "mi355x", "qwen3-32b",
       option("rocm_use_aiter", "true"), "ROCM_AITER_FA"},
      {"§1.7 ROCm MLA: TRITON_MLA unless AITER MLA is enabled", "vllm", "mi300x", "deepseek-v3", {}, "TRITON_MLA"},
      {"§1.7 ROCm MLA with AITER: ROCM_AITER_MLA", "vllm", "mi325x", "deepseek-r1", option("rocm_use_aiter", "true"),
       "ROCM_AITER_MLA"},
      {"§1.7 ROCm sparse MLA rejects fp8 KV", "vllm", "mi300x", "deepseek-v3.2",
       opts([](ServingOptions& o) { o.kv_dtype = "fp8"; }), "", "", "ROCMAiterMLASparseBackend doesn't support fp8"},
      {"§1.3 CPU platform uses CPU_ATTN", "vllm", "xeon-spr-amx", "llama-3.1-8b", {}, "CPU_ATTN"},
      {"§1.6.1 only CUDA/ROCm/CPU have vLLM selection in-tree",
       "vllm",
       "ascend-910b",
       "llama-3.1-8b",
       {},
       "",
       "",
       "out-of-tree plugin"},
      // Gemma-3 is a multimodal prefix-LM in vLLM (FA3 refuses it): test_engine_vllm.cpp VllmGemma3.
      {"§1.4 head size 128 and sliding window pass FA3 (mistral-7b)",
       "vllm",
       "h100-sxm",
       "mistral-7b",
       {},
       "FLASH_ATTN [FA3]"},
      // ---------------- SGLang ----------------
      {"§2.2 MHA on Hopper with CUDA >= 12.3: fa3", "sglang", "h100-sxm", "llama-3.1-8b", {}, "fa3", "", "", 1},
      {"§2.2 Hopper needs CUDA 12.3 for fa3, else flashinfer", "sglang", "h20", "llama-3.1-8b",
       opts([](ServingOptions& o) { o.cuda_version = 12.2; }), "flashinfer"},
      {"§2.2 other architectures: flashinfer", "sglang", "a100-sxm-40g", "qwen3-8b", {}, "flashinfer"},
      {"§2.2 GPT-OSS override on Ampere: triton", "sglang", "a100-sxm-80g", "gpt-oss-20b", {}, "triton"},
      {"§2.2 MHA on SM100: trtllm_mha; §2.3 page snapped to 64",
       "sglang",
       "b200",
       "llama-3.1-8b",
       {},
       "trtllm_mha",
       "",
       "",
       64},
      {"§2.2 spec topk>1 blocks the trtllm_mha default: flashinfer", "sglang", "b200", "llama-3.1-8b",
       opts([](ServingOptions& o) {
         o.spec_algorithm = "eagle";
         o.spec_topk = 4;
       }),
       "flashinfer [SM100 cutlass prefill: flashinfer-cutlass/flashinfer]"},
      {"§2.2 is_no_spec_infer_or_topk_one: topk 1 with page > 1 blocks fa3", "sglang", "h100-sxm", "llama-3.1-8b",
       opts([](ServingOptions& o) {
         o.spec_topk = 1;
         o.page_size = 16;
       }),
       "flashinfer", "", "", 16},
      {"§2.2 DeepSeek on SM100: trtllm_mla; §2.3 page 64",
       "sglang",
       "gb200",
       "deepseek-v3",
       {},
       "trtllm_mla",
       "",
       "",
       64},
      {"§2.2 MLA on Hopper: fa3", "sglang", "h200", "deepseek-r1", {}, "fa3"},
      {"§2.2 MLA elsewhere: triton", "sglang", "a100-sxm-80g", "deepseek-v3", {}, "triton"},
      {"§2.2 DSA: dsa, page 64, bf16 KV on Hopper",
       "sglang",
       "h200",
       "deepseek-v3.2",
       {},
       "dsa [bf16: flashmla_sparse/fa3]",
       "",
       "",
       64},
      {"§2.2 DSA: fp8_e4m3 KV on SM >= 10", "sglang", "b200", "deepseek-v3.2", {}, "dsa [fp8: trtllm/trtllm]"},
      {"§2.2 HIP MLA: aiter for 16 or 128 KV heads per rank", "sglang", "mi300x", "deepseek-v3",
       opts([](ServingOptions& o) { o.tp = 8; }), "aiter"},
      {"§2.2 HIP MLA: triton otherwise (128 heads / tp 4 = 32)", "sglang", "mi300x", "deepseek-v3",
       opts([](ServingOptions& o) { o.tp = 4; }), "triton"},
      {"§2.3 fa3 with fp8_e5m2 switches to triton", "sglang", "h100-sxm", "qwen3-32b", opts([](ServingOptions& o) {
         o.backend = "fa3";
         o.kv_dtype = "fp8_e5m2";
       }),
       "triton"},
      {"§2.5 fa3 factory: SM80-SM90 only", "sglang", "b200", "llama-3.1-8b", backend("fa3"), "", "",
       "FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use --attention-backend flashinfer."},
      {"§2.4 trtllm_mha supports only topk = 1", "sglang", "b200", "llama-3.1-8b", opts([](ServingOptions& o) {
         o.backend = "trtllm_mha";
         o.spec_topk = 2;
       }),
       "", "", "trtllm_mha backend only supports topk = 1 for speculative decoding."},
      {"§2.4 topk > 1 with page > 1 only for flashinfer/fa3", "sglang", "a100-sxm-80g", "llama-3.1-8b",
       opts([](ServingOptions& o) {
         o.backend = "triton";
         o.spec_topk = 2;
         o.page_size = 16;
       }),
       "", "", "speculative_eagle_topk > 1 with page_size > 1 is unstable"},
      {"§2.5 hybrid prefill/decode backends", "sglang", "h100-sxm", "llama-3.1-8b", opts([](ServingOptions& o) {
         o.prefill_backend = "fa3";
         o.decode_backend = "flashinfer";
       }),
       "fa3", "flashinfer"},
      {"§2.5 a phase flag alone inherits the default for the other phase", "sglang", "h100-sxm", "llama-3.1-8b",
       opts([](ServingOptions& o) { o.decode_backend = "triton"; }), "fa3", "triton"},
      {"§2.3 flashmla page forced to 64", "sglang", "h100-sxm", "deepseek-v3", opts([](ServingOptions& o) {
         o.backend = "flashmla";
         o.page_size = 16;
       }),
       "flashmla", "", "", 64},
      {"§2.3 trtllm_mla is Blackwell only", "sglang", "h100-sxm", "deepseek-v3", backend("trtllm_mla"), "", "",
       "TRTLLM MLA backend is only supported on Blackwell GPUs"},
      {"§2.5 trtllm_mha is for non-MLA models", "sglang", "b200", "deepseek-v3", backend("trtllm_mha"), "", "",
       "trtllm_mha backend can only be used with non-MLA models."},
      {"attention_registry.py fa4 factory: FA4 serves decode too (docs/engines/sglang.md D1a)", "sglang", "b200",
       "llama-3.1-8b", backend("fa4"), "fa4", "", "", 128},
      {"kv_cache_hook.py: FA4 prefill with trtllm_mha decode is refused only with KV4 (docs/engines/sglang.md D1b)",
       "sglang", "b200", "qwen3-8b", opts([](ServingOptions& o) {
         o.prefill_backend = "fa4";
         o.decode_backend = "trtllm_mha";
       }),
       "fa4", "trtllm_mha", "", 128},
      {"§2.3 fa4 prefill on SM100 forces page 128", "sglang", "b200", "qwen3-8b", opts([](ServingOptions& o) {
         o.prefill_backend = "fa4";
         o.decode_backend = "flashinfer";
       }),
       "fa4", "flashinfer [SM100 cutlass prefill: flashinfer-cutlass/flashinfer]", "", 128},
      {"§2.5 verify runs on the prefill backend by default: FA4 lacks spec support", "sglang", "h100-sxm", "qwen3-8b",
       opts([](ServingOptions& o) {
         o.prefill_backend = "fa4";
         o.decode_backend = "fa3";
         o.spec_algorithm = "eagle";
         o.spec_topk = 1;
       }),
       "", "", "fa4 cannot serve the prefill phase: ['speculative decoding (topk=1) not supported']"},
      {"§2.5 --speculative-attention-mode decode moves verify to the decode backend", "sglang", "h100-sxm", "qwen3-8b",
       opts([](ServingOptions& o) {
         o.prefill_backend = "fa4";
         o.decode_backend = "fa3";
         o.spec_algorithm = "eagle";
         o.spec_topk = 1;
         o.speculative_attention_mode = "decode";
       }),
       "fa4", "fa3"},
      {"§2.2 HIP MHA default aiter", "sglang", "mi355x", "llama-3.1-70b", {}, "aiter"},
      {"seed: Ascend native page 128", "sglang", "ascend-910b", "qwen3-8b", {}, "ascend", "", "", 128},
      {"§2.3 intel_xpu decode pages 64/128", "sglang", "intel-max-1550", "llama-3.1-8b", backend("intel_xpu"),
       "intel_xpu", "", "", 128},
      {"§2.3 intel_amx on an AMX CPU", "sglang", "xeon-spr-amx", "llama-3.1-8b", {}, "intel_amx"},
      // ---------------- RTP-LLM (legacy C++) ----------------
      {"§3.3 no prefix: TRT_V2; decode: XQA on SM 90", "rtp-llm", "h100-sxm", "llama-3.1-8b", {}, "TRT_V2", "XQA"},
      // A Base-RoPE model: FlashInferAttnParams::check refuses Llama-3.1's Llama3 RoPE (docs/engines/rtp-llm.md D9a).
      {"§3.3 XQA is SM 90 only: FlashInfer decode on Ampere",
       "rtp-llm",
       "a100-sxm-80g",
       "qwen3-8b",
       {},
       "TRT_V2",
       "FlashInfer"},
      // docs/engines/rtp-llm.md D3: FlashInfer prefills MHA only in the spec-verify branch.
      {"prepareModelRun: a prefix context takes the paged branch, PAGED_TRT_V2", "rtp-llm", "h100-sxm", "qwen3-32b",
       opts([](ServingOptions& o) { o.has_prefix = true; }), "PAGED_TRT_V2", "XQA"},
      {"§3.2 --enable_xqa=0: FlashInfer decode", "rtp-llm", "h200", "qwen3-32b", option("enable_xqa", "false"),
       "TRT_V2", "FlashInfer"},
      {"§3.3 FlashInfer disabled: MMHA decode fallback", "rtp-llm", "a100-sxm-40g", "llama-3.1-8b",
       option("disable_flash_infer", "true"), "TRT_V2", "MMHA"},
      {"§3.3 prefix without FlashInfer: PAGED_TRT_V2", "rtp-llm", "a100-sxm-80g", "llama-3.1-8b",
       opts([](ServingOptions& o) {
         o.has_prefix = true;
         o.engine_options["disable_flash_infer"] = "true";
       }),
       "PAGED_TRT_V2", "MMHA"},
      {"§3.3 PAGED_OPEN_SOURCE needs SM 8.x and 256-token blocks", "rtp-llm", "a100-sxm-80g", "llama-3.1-8b",
       opts([](ServingOptions& o) {
         o.has_prefix = true;
         o.page_size = 256;
         o.engine_options["disable_flash_infer"] = "true";
         o.engine_options["enable_paged_trt_fmha"] = "false";
       }),
       "PAGED_OPEN_SOURCE", "MMHA"},
      {"§3.3 no fused context kernel on SM 10.x in the legacy path: NONE",
       "rtp-llm",
       "b200",
       "qwen3-8b",
       {},
       "NONE",
       "FlashInfer"},
      // docs/engines/rtp-llm.md D5: MLA without a prefix runs mlaContextAttention on the context FMHA.
      {"mlaContextAttention: TRT_V2 prefill at head 192, FlashMLA decode on Hopper",
       "rtp-llm",
       "h100-sxm",
       "deepseek-v3",
       {},
       "TRT_V2",
       "FlashMLA"},
      {"§3.3 ROCm: CK FMHA prefill, AiterPA decode", "rtp-llm", "mi300x", "llama-3.1-8b", {}, "CKFMHA", "AiterPA"},
      // docs/engines/rtp-llm.md D2: GptOssForCausalLM has no register_model at 44027b7e.
      {"setup_default_args: an unregistered architecture fails (not a sliding-window rejection)",
       "rtp-llm",
       "h100-sxm",
       "gpt-oss-120b",
       {},
       "",
       "",
       "model_type is not set and could not be inferred from checkpoint path: gpt-oss-120b"},
  };
}

class SelectionRules : public ::testing::TestWithParam<Case> {};

TEST_P(SelectionRules, MatchesTheEngineRule) {
  const Case& c = GetParam();
  const Catalog& catalog = defaultCatalog();
  const Selector selector(catalog);
  const Selection s = selector.select({&catalog.hardware(c.hardware), &catalog.model(c.model),
                                       &catalog.engine(c.engine).policy, c.options, std::nullopt});
  SCOPED_TRACE(c.rule);
  if (!c.refusal.empty()) {
    ASSERT_TRUE(s.refusal.has_value()) << "chose " << label(s.prefill) << " / " << label(s.decode);
    EXPECT_NE(s.refusal->find(c.refusal), std::string::npos) << *s.refusal;
    return;
  }
  ASSERT_FALSE(s.refusal.has_value()) << *s.refusal;
  EXPECT_EQ(label(s.prefill), c.prefill);
  EXPECT_EQ(label(s.decode), c.decode.empty() ? c.prefill : c.decode);
  if (c.page_size) {
    EXPECT_EQ(s.env.at("page_size"), Value{*c.page_size});
  }
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name =
      info.param.engine + "_" + info.param.hardware + "_" + info.param.model + "_" + std::to_string(info.index);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(EngineRules, SelectionRules, ::testing::ValuesIn(cases()), caseName);

TEST(SelectionCoverage, AtLeastFortyCasesOverSixHardwareFamilies) {
  std::set<std::string> engines, architectures;
  for (const auto& c : cases()) {
    engines.insert(c.engine);
    architectures.insert(defaultCatalog().hardware(c.hardware).architecture);
  }
  EXPECT_GE(cases().size(), 40U);
  EXPECT_EQ(engines.size(), 3U);
  EXPECT_GE(architectures.size(), 6U);
}

}  // namespace
}  // namespace attnsim::test
