#include "backends/RuleVariables.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "hardware/HardwareProfile.hpp"

namespace attnsim {

namespace {

// Every variable a rule expression may read, with what it means (`attnsim list variables`).
constexpr auto kScenarioVariableDocs = std::to_array<std::pair<const char*, const char*>>({
    {"hardware", "hardware profile id"},
    {"platform", "cuda, rocm, npu, xpu or cpu"},
    {"vendor", "nvidia, amd, huawei or intel"},
    {"arch", "architecture family (ampere, hopper, blackwell, cdna3, ...)"},
    {"cc", "CUDA compute capability as a number (9.0); null off CUDA"},
    {"cc_major", "CUDA compute capability major (9); null off CUDA"},
    {"cc_minor", "CUDA compute capability minor; null off CUDA"},
    {"gfx", "ROCm gfx target (gfx942); '' off ROCm"},
    {"memory_gb", "device memory in GB"},
    {"compute_units", "SMs / CUs / cores"},
    {"has_amx", "CPU has Intel AMX"},
    {"has_xmx", "GPU has Intel XMX engines"},
    {"model", "model id"},
    {"family", "model family (llama, qwen, deepseek, gpt_oss, gemma, mistral, ...)"},
    {"architecture", "HF architecture class"},
    {"dtype", "model dtype: fp16, bf16, fp32"},
    {"use_mla", "model uses multi-head latent attention"},
    {"use_sparse", "model uses sparse (top-k indexed) attention"},
    {"has_sink", "model has attention sinks"},
    {"has_sliding_window", "some layer uses a sliding window"},
    {"head_size", "validated head size (MLA: kv_lora_rank + rope dim = 576)"},
    {"head_size_v", "value head size"},
    {"qk_head_size", "query/key head size a context FMHA runs at (MLA: qk_nope + qk_rope = 192)"},
    {"num_heads", "query heads (whole model, before TP)"},
    {"num_kv_heads", "KV heads (whole model, before TP)"},
    {"num_kv_heads_per_rank", "KV heads per TP rank as SGLang counts them (MLA: query heads)"},
    {"gqa_group", "query heads per KV head"},
    {"qk_nope_head_dim", "MLA non-rotary query/key dim; null for MHA"},
    {"qk_rope_head_dim", "MLA rotary dim; null for MHA"},
    {"kv_lora_rank", "MLA latent rank; null for MHA"},
    {"multimodal", "model has a vision encoder"},
    {"mm_prefix", "bidirectional attention over multimodal prefix tokens"},
    {"rope_style",
     "rotary style as RTP-LLM's RopeStyle names it: no, base, glm2, dynamicntk, qwendynamicntk, yarn, llama3, mrope"},
    {"has_dual_chunk", "model has a dual_chunk_attention_config (Qwen2.5-1M)"},
    {"learnable_sink", "model config sets learnable_sink (DSA attention sinks, as SGLang reads them)"},
    {"attn_type", "attention type: decoder"},
    {"engine", "engine id"},
    {"kv_dtype", "KV-cache dtype as the engine spells it"},
    {"kv_fp8", "KV cache is an FP8 format"},
    {"kv_fp4", "KV cache is an FP4 format"},
    {"page_size", "KV page (block) size in tokens after defaults and rules"},
    {"page_size_user", "page size as the user gave it; null when not given"},
    {"block_size", "block size that validation checks (null when the engine ignores it in selection)"},
    {"spec_algorithm", "speculative decoding algorithm; null when off"},
    {"spec_enabled", "speculative decoding is on"},
    {"spec_topk", "speculative tree branching (topk); null when off"},
    {"spec_draft_tokens", "draft tokens verified per step"},
    {"cuda_version", "CUDA toolkit version (default 12.9 on CUDA); null off CUDA"},
    {"has_prefix", "prefill runs over a cached prefix (prefix cache, chunked prefill, spec verify)"},
    {"tp", "tensor-parallel size"},
    {"stage", "prefill or decode while an engine that selects per stage chooses; null otherwise"},
    {"attention_backend", "explicit backend for both phases; null for auto"},
    {"prefill_attention_backend", "explicit prefill backend; null for auto"},
    {"decode_attention_backend", "explicit decode backend; null for auto"},
    {"speculative_attention_mode", "SGLang: which backend verifies drafts (prefill or decode)"},
    {"cuda_graph_disabled", "set by rules when the chosen backend cannot run CUDA graphs"},
});

}  // namespace

const std::vector<std::pair<std::string, std::string>>& scenarioVariableDocs() {
  static const std::vector<std::pair<std::string, std::string>> docs(kScenarioVariableDocs.begin(),
                                                                     kScenarioVariableDocs.end());
  return docs;
}

const std::vector<std::string>& scenarioVariables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [name, doc] : scenarioVariableDocs()) n.push_back(name);
    return n;
  }();
  return names;
}

VariableType scenarioVariableType(std::string_view name) {
  static constexpr std::array<std::string_view, 15> kFlags{"has_amx",
                                                           "has_xmx",
                                                           "learnable_sink",
                                                           "use_mla",
                                                           "use_sparse",
                                                           "has_sink",
                                                           "has_sliding_window",
                                                           "multimodal",
                                                           "mm_prefix",
                                                           "has_dual_chunk",
                                                           "kv_fp8",
                                                           "kv_fp4",
                                                           "spec_enabled",
                                                           "has_prefix",
                                                           "cuda_graph_disabled"};
  static constexpr std::array<std::string_view, 22> kNumbers{"cc",
                                                             "cc_major",
                                                             "cc_minor",
                                                             "memory_gb",
                                                             "compute_units",
                                                             "head_size",
                                                             "head_size_v",
                                                             "qk_head_size",
                                                             "num_heads",
                                                             "num_kv_heads",
                                                             "num_kv_heads_per_rank",
                                                             "gqa_group",
                                                             "qk_nope_head_dim",
                                                             "qk_rope_head_dim",
                                                             "kv_lora_rank",
                                                             "page_size",
                                                             "page_size_user",
                                                             "block_size",
                                                             "spec_topk",
                                                             "spec_draft_tokens",
                                                             "cuda_version",
                                                             "tp"};
  const auto& names = scenarioVariables();
  if (std::find(names.begin(), names.end(), name) == names.end()) return {};
  if (std::find(kFlags.begin(), kFlags.end(), name) != kFlags.end()) return {ValueType::Bool, {}};
  if (std::find(kNumbers.begin(), kNumbers.end(), name) != kNumbers.end()) return {ValueType::Number, {}};
  if (name == "platform") return {ValueType::String, platformNames()};
  if (name == "vendor") return {ValueType::String, {"nvidia", "amd", "huawei", "intel"}};
  if (name == "dtype") return {ValueType::String, {"fp16", "bf16", "fp32"}};
  if (name == "stage") return {ValueType::String, {"prefill", "decode"}};
  return {ValueType::String, {}};
}

}  // namespace attnsim
