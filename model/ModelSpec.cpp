#include "model/ModelSpec.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/Strings.hpp"

namespace attnsim {

namespace {

const std::vector<std::string> kDtypes{"fp32", "fp16", "bf16"};
const std::vector<std::string> kWeightDtypes{"fp32", "fp16", "bf16", "fp8", "fp8_block", "mxfp4", "nvfp4", "int4"};

DualChunkSpec parseDualChunk(const YamlReader& r) {
  DualChunkSpec d;
  d.chunk_size = static_cast<int>(r.getInt("chunk_size", 1, 1 << 30));
  d.local_size = static_cast<int>(r.getInt("local_size", 1, 1 << 30));
  d.original_max_position_embeddings = static_cast<int>(r.getInt("original_max_position_embeddings", 1, 1 << 30));
  r.finish();
  return d;
}

MlaGeometry parseMla(const YamlReader& r) {
  MlaGeometry m;
  m.q_lora_rank = static_cast<int>(r.getInt("q_lora_rank", 0, 65536));
  m.kv_lora_rank = static_cast<int>(r.getInt("kv_lora_rank", 1, 65536));
  m.qk_nope_head_dim = static_cast<int>(r.getInt("qk_nope_head_dim", 1, 4096));
  m.qk_rope_head_dim = static_cast<int>(r.getInt("qk_rope_head_dim", 0, 4096));
  m.v_head_dim = static_cast<int>(r.getInt("v_head_dim", 1, 4096));
  r.finish();
  return m;
}

AttentionLayerSpec parseLayer(const std::string& name, const YamlReader& r) {
  AttentionLayerSpec l;
  l.name = name;
  l.kind = r.get<std::string>("kind", "mha");
  if (l.kind != "mha" && l.kind != "mla") r.fail("kind", "'" + l.kind + "' is not one of: mha, mla");
  l.num_heads = static_cast<int>(r.getInt("num_heads", 1, 4096));
  l.sliding_window = static_cast<int>(r.findInt("sliding_window", 0, 1 << 30).value_or(0));
  l.sinks = r.get<bool>("sinks", false);
  l.causal = r.get<bool>("causal", true);
  l.sparse_top_k = static_cast<int>(r.findInt("sparse_top_k", 0, 1 << 20).value_or(0));
  if (l.isMla()) {
    l.mla = parseMla(r.map("mla"));
    l.num_kv_heads = 1;
    l.head_dim = l.mla->qk_nope_head_dim + l.mla->qk_rope_head_dim;
    l.head_dim_v = l.mla->v_head_dim;
  } else {
    l.num_kv_heads = static_cast<int>(r.getInt("num_kv_heads", 1, 4096));
    l.head_dim = static_cast<int>(r.getInt("head_dim", 1, 4096));
    l.head_dim_v = static_cast<int>(r.get<std::int64_t>("head_dim_v", l.head_dim));
    if (l.num_heads % l.num_kv_heads != 0) {
      r.fail("num_kv_heads",
             fmt::format("num_heads {} is not a multiple of num_kv_heads {}", l.num_heads, l.num_kv_heads));
    }
  }
  r.finish();
  return l;
}

}  // namespace

const std::vector<std::string>& weightDtypes() { return kWeightDtypes; }

const std::vector<std::string>& ropeStyles() {
  // rtp_llm/cpp/model_utils/RopeConfig.h:RopeStyle @ 44027b7e: No, Base, Glm2, DynamicNTK, QwenDynamicNTK,
  // Yarn, Llama3, Mrope.
  static const std::vector<std::string> styles{"no",   "base",   "glm2", "dynamicntk", "qwendynamicntk",
                                               "yarn", "llama3", "mrope"};
  return styles;
}

namespace {

// Parameters of the routed experts: gate, up and down of every expert in every MoE layer.
double routedExpertParameterCount(const ModelSpec& m) {
  const double per_expert = 3.0 * m.hidden_size * m.moe->expert_intermediate_size;
  return per_expert * m.moe->num_experts * std::max(0, m.num_layers - m.moe->first_dense_layers);
}

}  // namespace

double ModelSpec::parameterBytes() const {
  double bits = 16;
  if (weight_dtype == "fp32") bits = 32;
  if (weight_dtype == "fp8" || weight_dtype == "fp8_block") bits = 8;  // a block's fp32 scale: 1/4096 bit
  if (weight_dtype == "mxfp4") bits = 4.25;                            // 4-bit values + one 8-bit scale per 32
  if (weight_dtype == "nvfp4") bits = 4.5;                             // 4-bit values + one 8-bit scale per 16
  if (weight_dtype == "int4") bits = kInt4WeightBits;
  const double all = parameters_b * 1e9;
  if (weight_dtype == "mxfp4" && moe) {
    // MXFP4 checkpoints (gpt-oss) quantize the routed experts only; attention, router and embeddings
    // stay bf16 (huggingface.co/openai/gpt-oss-120b model card and config.json quantization_config:
    // MXFP4 for the MoE weights), as the step model reads them (weightBytesPerElement).
    const double routed = std::min(all, routedExpertParameterCount(*this));
    return routed * bits / 8.0 + (all - routed) * 2.0;
  }
  return all * bits / 8.0;
}

double weightBytesPerElement(const std::string& weight_dtype, bool experts) {
  if (weight_dtype == "fp8" || weight_dtype == "fp8_block") return 1.0;
  if (weight_dtype == "int4") return kInt4WeightBits / 8;
  if (experts && weight_dtype == "mxfp4") return 4.25 / 8;
  if (experts && weight_dtype == "nvfp4") return 4.5 / 8;
  if (weight_dtype == "fp32") return 4.0;
  return 2.0;
}

int AttentionLayerSpec::validatedHeadSize() const {
  if (mla) return mla->kv_lora_rank + mla->qk_rope_head_dim;
  return head_dim;
}

const AttentionLayerSpec& ModelSpec::layer(const std::string& layer_name) const {
  for (const auto& l : attention_layers) {
    if (l.name == layer_name) return l;
  }
  throw std::logic_error("unknown layer type " + layer_name);  // parse() guarantees names exist
}

const AttentionLayerSpec& ModelSpec::layerAt(int index) const {
  return layer(layer_pattern[static_cast<std::size_t>(index) % layer_pattern.size()]);
}

std::vector<std::pair<const AttentionLayerSpec*, int>> ModelSpec::layerCounts() const {
  std::vector<std::pair<const AttentionLayerSpec*, int>> counts;
  for (const auto& l : attention_layers) counts.emplace_back(&l, 0);
  for (int i = 0; i < num_layers; ++i) {
    const auto& type = layer_pattern[static_cast<std::size_t>(i) % layer_pattern.size()];
    for (auto& [spec, n] : counts) n += spec->name == type ? 1 : 0;
  }
  std::erase_if(counts, [](const auto& c) { return c.second == 0; });
  return counts;
}

const AttentionLayerSpec& ModelSpec::primaryLayer() const { return layer(layer_pattern.front()); }

bool ModelSpec::usesMla() const {
  return std::any_of(attention_layers.begin(), attention_layers.end(), [](const auto& l) { return l.isMla(); });
}
bool ModelSpec::hasSinks() const {
  return std::any_of(attention_layers.begin(), attention_layers.end(), [](const auto& l) { return l.sinks; });
}
bool ModelSpec::isSparse() const {
  return std::any_of(attention_layers.begin(), attention_layers.end(),
                     [](const auto& l) { return l.sparse_top_k > 0; });
}
bool ModelSpec::hasSlidingWindow() const {
  return std::any_of(attention_layers.begin(), attention_layers.end(),
                     [](const auto& l) { return l.sliding_window > 0; });
}

ModelSpec parseModelSpec(const YamlReader& r) {
  ModelSpec m;
  m.id = r.get<std::string>("id");
  m.name = r.get<std::string>("name");
  m.hf_id = r.get<std::string>("hf_id");
  m.family = r.get<std::string>("family");
  m.architecture = r.get<std::string>("architecture");
  m.dtype = parseDType(r.getOneOf("dtype", kDtypes));
  m.weight_dtype = r.getOneOf("weight_dtype", kWeightDtypes);
  m.num_layers = static_cast<int>(r.getInt("num_layers", 1, 10000));
  m.hidden_size = static_cast<int>(r.getInt("hidden_size", 1, 1 << 20));
  m.intermediate_size = static_cast<int>(r.getInt("intermediate_size", 1, 1 << 22));
  m.vocab_size = static_cast<int>(r.getInt("vocab_size", 1, 1 << 24));
  m.parameters_b = r.getNumber("parameters_b", 0.001, 100000);
  m.active_parameters_b = r.findNumber("active_parameters_b", 0.001, 100000);
  if (auto moe = r.findMap("moe")) {
    MoeSpec s;
    s.num_experts = static_cast<int>(moe->getInt("num_experts", 1, 100000));
    s.experts_per_token = static_cast<int>(moe->getInt("experts_per_token", 1, s.num_experts));
    s.shared_experts = static_cast<int>(moe->get<std::int64_t>("shared_experts", 0));
    s.expert_intermediate_size = static_cast<int>(moe->getInt("expert_intermediate_size", 1, 1 << 22));
    s.first_dense_layers = static_cast<int>(moe->get<std::int64_t>("first_dense_layers", 0));
    moe->finish();
    m.moe = s;
  }
  const YamlReader positions = r.map("max_position_embeddings");
  m.max_position_embeddings = positions.getInt("value", 1, std::int64_t{1} << 30);
  m.max_position_embeddings_source = positions.get<std::string>("source");
  positions.finish();
  const YamlReader layers = r.map("attention_layers");
  for (const auto& name : layers.keysOf()) m.attention_layers.push_back(parseLayer(name, layers.map(name)));
  layers.finish();
  if (m.attention_layers.empty()) r.fail("attention_layers", "at least one attention layer type is required");
  std::vector<std::string> names;
  for (const auto& l : m.attention_layers) names.push_back(l.name);
  m.layer_pattern = r.get<std::vector<std::string>>("layer_pattern");
  if (m.layer_pattern.empty()) r.fail("layer_pattern", "must name at least one layer type");
  for (const auto& p : m.layer_pattern) {
    if (std::find(names.begin(), names.end(), p) == names.end()) {
      r.fail("layer_pattern", fmt::format("'{}' is not a layer type in attention_layers ({}){}", p, join(names, ", "),
                                          didYouMean(p, names)));
    }
  }
  if (auto enc = r.findMap("encoder")) {
    EncoderSpec e;
    e.layer = enc->getOneOf("layer", names);
    e.num_layers = static_cast<int>(enc->getInt("num_layers", 1, 10000));
    e.hidden_size = static_cast<int>(enc->getInt("hidden_size", 1, 1 << 20));
    enc->finish();
    m.encoder = e;
  }
  m.mm_prefix_lm = r.get<bool>("mm_prefix_lm", false);
  m.rope_style = r.findOneOf("rope_style", ropeStyles()).value_or("base");
  if (auto dual = r.findMap("dual_chunk_attention_config")) m.dual_chunk = parseDualChunk(*dual);
  m.learnable_sink = r.get<bool>("learnable_sink", false);
  m.source = r.get<std::string>("source");
  r.finish();
  return m;
}

std::optional<std::string> tensorParallelProblem(const ModelSpec& model, std::int64_t tp) {
  if (tp < 1) return "the tensor-parallel size must be at least 1";
  for (const auto& l : model.attention_layers) {
    const std::string heads = l.isMla() ? fmt::format(
                                              "layer type '{}' has {} query heads (MLA: one latent KV head, "
                                              "replicated on every rank)",
                                              l.name, l.num_heads)
                                        : fmt::format("layer type '{}' has {} query heads and {} KV heads", l.name,
                                                      l.num_heads, l.num_kv_heads);
    if (l.num_heads % tp != 0) return fmt::format("{}: {} ranks cannot split the query heads evenly", heads, tp);
    if (l.isMla()) continue;
    const bool replicated = tp >= l.num_kv_heads;
    if ((replicated && tp % l.num_kv_heads != 0) || (!replicated && l.num_kv_heads % tp != 0)) {
      return fmt::format("{}: {} ranks neither split the KV heads evenly nor replicate each on a whole number of ranks",
                         heads, tp);
    }
  }
  return std::nullopt;
}

std::vector<std::string> validTensorParallelSizes(const ModelSpec& model) {
  int heads = 0;
  for (const auto& l : model.attention_layers) heads = heads == 0 ? l.num_heads : std::min(heads, l.num_heads);
  std::vector<std::string> out;
  for (int tp = 1; tp <= heads; ++tp) {
    if (!tensorParallelProblem(model, tp)) out.push_back(std::to_string(tp));
  }
  return out;
}

}  // namespace attnsim
