#pragma once
// A model's attention geometry per layer type, plus what capacity planning needs later.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/Formats.hpp"
#include "core/YamlReader.hpp"

namespace attnsim {

struct MlaGeometry {
  int q_lora_rank = 0;  // 0: queries are not low-rank
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

// One kind of attention layer (a model may interleave several, e.g. local and global).
struct AttentionLayerSpec {
  std::string name;
  std::string kind = "mha";  // mha (covers GQA/MQA) or mla
  int num_heads = 0;
  int num_kv_heads = 0;  // MLA: 1 latent "head"
  int head_dim = 0;      // query/key head dim (MLA: qk_nope + qk_rope)
  int head_dim_v = 0;
  int sliding_window = 0;  // left window in tokens; 0 = full attention
  bool sinks = false;      // learned per-head sink logits (gpt-oss)
  bool causal = true;      // false for encoders
  std::optional<MlaGeometry> mla;
  int sparse_top_k = 0;  // DeepSeek sparse attention (DSA) index top-k; 0 = dense

  [[nodiscard]] bool isMla() const { return kind == "mla"; }
  // The head size the engines validate: MLA uses the latent width kv_lora_rank + rope dim (576).
  [[nodiscard]] int validatedHeadSize() const;
};

struct MoeSpec {
  int num_experts = 0;
  int experts_per_token = 0;
  int shared_experts = 0;
  int expert_intermediate_size = 0;
  int first_dense_layers = 0;
};

// SGLang's and vLLM's dual chunk attention (hf_config.dual_chunk_attention_config, Qwen2.5-1M).
struct DualChunkSpec {
  int chunk_size = 0;
  int local_size = 0;
  int original_max_position_embeddings = 0;
};

struct EncoderSpec {
  std::string layer;  // name of an attention layer spec
  int num_layers = 0;
  int hidden_size = 0;
};

struct ModelSpec {
  std::string id;
  std::string name;
  std::string hf_id;
  std::string family;         // engine model-specific rules key on it (deepseek, gpt_oss, llama ...)
  std::string architecture;   // the HF architecture class
  DType dtype = DType::BF16;  // activations
  std::string
      weight_dtype;  // bf16, fp8 (per-tensor or per-channel scales), fp8_block (128×128 block scales), mxfp4 ...
  int num_layers = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  double parameters_b = 0;
  std::optional<double> active_parameters_b;
  std::optional<MoeSpec> moe;
  // The longest position the model was trained for (HF config.json); a longer context is refused
  // unless the scenario explicitly allows it (Scenario::allow_context_beyond_max_position).
  std::int64_t max_position_embeddings = 0;
  std::string max_position_embeddings_source;
  std::vector<AttentionLayerSpec> attention_layers;
  std::vector<std::string> layer_pattern;  // repeated over num_layers
  std::optional<EncoderSpec> encoder;      // multimodal vision encoder
  bool mm_prefix_lm = false;               // bidirectional attention over multimodal prefix tokens
  // The rotary embedding style, named as RTP-LLM's RopeStyle enum (rtp_llm/cpp/model_utils/RopeConfig.h
  // @ 44027b7e) spells it, lower case: what config.json's rope_scaling makes of the model (no
  // rope_scaling: base; "linear": base with a scale; "llama3", "yarn", "dynamic" (dynamicntk), "mrope").
  std::string rope_style = "base";
  std::optional<DualChunkSpec> dual_chunk;  // hf_config.dual_chunk_attention_config
  // hf_config.learnable_sink: DSA attention sinks, which SGLang reads in its DSA KV-dtype and sub-backend passes
  // (arg_groups/overrides.py @ 003bbaf9); not the GPT-OSS sinks of the attention layers (has_sink).
  bool learnable_sink = false;
  std::string source;

  [[nodiscard]] const AttentionLayerSpec& layer(const std::string& name) const;
  // The layer type of decoder layer i.
  [[nodiscard]] const AttentionLayerSpec& layerAt(int index) const;
  // Layer count per attention layer type.
  [[nodiscard]] std::vector<std::pair<const AttentionLayerSpec*, int>> layerCounts() const;
  // The layer type that decides engine-wide questions (the first pattern entry's kind; any sink, MLA or
  // sparse layer makes the model count as such).
  [[nodiscard]] const AttentionLayerSpec& primaryLayer() const;
  [[nodiscard]] bool usesMla() const;
  [[nodiscard]] bool hasSinks() const;
  [[nodiscard]] bool isSparse() const;
  [[nodiscard]] bool hasSlidingWindow() const;
  [[nodiscard]] bool isMultimodal() const { return encoder.has_value(); }
  // Weight bytes: parameters × the storage width of weight_dtype (MXFP4/NVFP4 count their block
  // scales: 4.25 and 4.5 bits; int4 its group scales and zeros, kInt4WeightBits). MXFP4 MoE checkpoints (gpt-oss) count
  // it for the routed experts only, bf16 for attention, router and embeddings. The checkpoint's bytes, not an engine's
  // layout.
  [[nodiscard]] double parameterBytes() const;
};

// The values rope_style accepts (RopeStyle's enumerators, lower case).
const std::vector<std::string>& ropeStyles();
// The weight dtypes a model file (weight_dtype) or a scenario (--weight-dtype) may name.
const std::vector<std::string>& weightDtypes();

// int4: weight-only 4-bit checkpoints as AWQ and GPTQ store them, per group of 128 weights one fp16 scale and
// one 4-bit zero point (quantization_config bits 4, group_size 128, zero_point true: the Qwen3 AWQ checkpoints,
// e.g. Qwen/Qwen3-32B-AWQ config.json); the math runs in 16 bits (Marlin, AWQ kernels).
inline constexpr double kInt4WeightBits = 4.0 + (16.0 + 4.0) / 128.0;

// Bytes per weight element of a checkpoint's dtype as the step reads it; `experts`: the routed experts'
// (MXFP4/NVFP4 quantize only those and count their block scales; int4 every linear).
double weightBytesPerElement(const std::string& weight_dtype, bool experts);

ModelSpec parseModelSpec(const YamlReader& r);

// Why the engines cannot shard this model over `tp` ranks, or nothing when they can. vLLM and SGLang
// split every attention layer's heads the same way (QKVParallelLinear.__init__ in
// vllm/model_executor/layers/linear.py and sglang/srt/layers/linear.py; vLLM's
// ModelConfig.verify_with_parallel_config checks the query heads up front): query heads
// divide(num_heads, tp); KV heads divide(num_kv_heads, tp) when tp < num_kv_heads, otherwise one
// per rank, replicated divide(tp, num_kv_heads) times. `divide` asserts an exact division. MLA's
// latent KV is replicated on every rank, so only its query heads are split.
std::optional<std::string> tensorParallelProblem(const ModelSpec& model, std::int64_t tp);
// Every tp the engines accept for the model (each divides the smallest query-head count).
std::vector<std::string> validTensorParallelSizes(const ModelSpec& model);

}  // namespace attnsim
