#include "selection/EngineVariables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "backends/EnginePolicy.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

namespace {

Value opt(const std::optional<std::string>& v) { return v ? Value{*v} : Value{}; }
Value opt(const std::optional<std::int64_t>& v) { return v ? Value{*v} : Value{}; }
Value optInt(int v, bool present) { return present ? Value{static_cast<std::int64_t>(v)} : Value{}; }

Value parseOptionValue(const EngineOption& o, const std::string& text, const std::string& engine) {
  if (o.type == "bool") {
    if (text == "true" || text == "1") return Value{true};
    if (text == "false" || text == "0") return Value{false};
    throw UsageError(fmt::format("--option {}={}: expected true or false", o.name, text));
  }
  if (o.type == "int") {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size()) {
      throw UsageError(fmt::format("--option {}={}: expected an integer", o.name, text));
    }
    return Value{v};
  }
  if (o.type == "float") {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
      throw UsageError(fmt::format("--option {}={}: expected a number", o.name, text));
    }
    return Value{v};
  }
  if (!o.allowed.empty() && std::find(o.allowed.begin(), o.allowed.end(), text) == o.allowed.end()) {
    throw UsageError(fmt::format("--option {}={}: {} accepts {}{}", o.name, text, engine, join(o.allowed, ", "),
                                 didYouMean(text, o.allowed)));
  }
  return Value{text};
}

}  // namespace

void refreshDerived(Env& env, const EnginePolicy& policy) {
  const Value& kv_value = env["kv_dtype"];
  const std::string kv = std::holds_alternative<std::string>(kv_value) ? std::get<std::string>(kv_value) : "auto";
  env["kv_fp8"] = kv.rfind("fp8", 0) == 0;
  env["kv_fp4"] = kv == "fp4_e2m1" || kv == "nvfp4";
  env["block_size"] = policy.block_size_filters_selection ? env["page_size"] : Value{};
}

namespace {

void addHardwareVariables(Env& env, const HardwareProfile& hw) {
  env["hardware"] = hw.id;
  env["platform"] = hw.platform;
  env["vendor"] = hw.vendor;
  env["arch"] = hw.architecture;
  env["cc"] = hw.compute_capability ? Value{*hw.compute_capability} : Value{};
  env["cc_major"] = hw.compute_capability ? Value{static_cast<std::int64_t>(hw.ccMajor())} : Value{};
  env["cc_minor"] =
      hw.compute_capability ? Value{static_cast<std::int64_t>(std::lround(*hw.compute_capability * 10)) % 10} : Value{};
  env["gfx"] = hw.gfx_target;
  env["memory_gb"] = hw.memory_gb;
  env["compute_units"] = static_cast<std::int64_t>(hw.compute_units);
  env["has_amx"] = hw.hasFeature("amx");
  env["has_xmx"] = hw.hasFeature("xmx");
}

// The layer that decides validity: the MLA layer when the model has one, else the primary layer.
void addModelVariables(Env& env, const ModelSpec& m, std::int64_t tp) {
  const AttentionLayerSpec& layer = m.primaryLayer();
  const bool mla = m.usesMla();
  const AttentionLayerSpec* mla_layer = nullptr;
  for (const auto& l : m.attention_layers) {
    if (l.isMla()) mla_layer = &l;
  }
  const AttentionLayerSpec& decisive = mla_layer ? *mla_layer : layer;
  env["model"] = m.id;
  env["family"] = m.family;
  env["architecture"] = m.architecture;
  env["dtype"] = std::string(dtypeName(m.dtype));
  env["use_mla"] = mla;
  env["use_sparse"] = m.isSparse();
  env["has_sink"] = m.hasSinks();
  env["has_sliding_window"] = m.hasSlidingWindow();
  env["head_size"] = static_cast<std::int64_t>(decisive.validatedHeadSize());
  env["head_size_v"] = static_cast<std::int64_t>(decisive.head_dim_v);
  // AttentionLayerSpec::head_dim is qk_nope + qk_rope for MLA: the head RTP-LLM's mlaContextAttention
  // expands K/V to (rtp_llm/models/deepseek_v2.py size_per_head @ 44027b7e l. 625).
  env["qk_head_size"] = static_cast<std::int64_t>(decisive.head_dim);
  env["num_heads"] = static_cast<std::int64_t>(decisive.num_heads);
  env["num_kv_heads"] = static_cast<std::int64_t>(decisive.num_kv_heads);
  env["gqa_group"] = static_cast<std::int64_t>(decisive.num_heads / decisive.num_kv_heads);
  const std::int64_t kv_heads_sglang = mla ? decisive.num_heads : decisive.num_kv_heads;
  env["num_kv_heads_per_rank"] = std::max<std::int64_t>(1, kv_heads_sglang / tp);
  env["qk_nope_head_dim"] = optInt(mla_layer ? mla_layer->mla->qk_nope_head_dim : 0, mla_layer != nullptr);
  env["qk_rope_head_dim"] = optInt(mla_layer ? mla_layer->mla->qk_rope_head_dim : 0, mla_layer != nullptr);
  env["kv_lora_rank"] = optInt(mla_layer ? mla_layer->mla->kv_lora_rank : 0, mla_layer != nullptr);
  env["multimodal"] = m.isMultimodal();
  env["mm_prefix"] = m.mm_prefix_lm;
  env["rope_style"] = m.rope_style;
  env["has_dual_chunk"] = m.dual_chunk.has_value();
  env["learnable_sink"] = m.learnable_sink;
  env["attn_type"] = std::string("decoder");
}

void checkServingOptions(const EnginePolicy& policy, const ServingOptions& o) {
  if (o.kv_dtype &&
      std::find(policy.kv_dtypes.begin(), policy.kv_dtypes.end(), *o.kv_dtype) == policy.kv_dtypes.end()) {
    throw UsageError(fmt::format("--kv-dtype {}: {} accepts {}{}", *o.kv_dtype, policy.engine,
                                 join(policy.kv_dtypes, ", "), didYouMean(*o.kv_dtype, policy.kv_dtypes)));
  }
  if (o.page_size && *o.page_size < 1) throw UsageError("--page-size must be at least 1");
  if (o.spec_topk && *o.spec_topk < 1) throw UsageError("--spec-topk must be at least 1");
  if (o.speculative_attention_mode && *o.speculative_attention_mode != "prefill" &&
      *o.speculative_attention_mode != "decode") {
    throw UsageError("--speculative-attention-mode must be prefill or decode");
  }
}

void addServingVariables(Env& env, const HardwareProfile& hw, const ServingOptions& o, std::int64_t tp) {
  env["kv_dtype"] = opt(o.kv_dtype);
  env["page_size"] = opt(o.page_size);
  env["page_size_user"] = opt(o.page_size);
  const bool spec = o.spec_algorithm.has_value() || o.spec_topk.has_value() || o.spec_draft_tokens.has_value();
  env["spec_algorithm"] = spec ? Value{o.spec_algorithm.value_or("eagle")} : Value{};
  env["spec_enabled"] = spec;
  env["spec_topk"] = spec ? Value{o.spec_topk.value_or(1)} : Value{};
  env["spec_draft_tokens"] = opt(o.spec_draft_tokens);
  env["cuda_version"] = hw.platform == "cuda" ? Value{o.cuda_version.value_or(kDefaultCudaVersion)} : Value{};
  env["has_prefix"] = o.has_prefix;
  env["tp"] = tp;
  env["stage"] = Value{};
  env["attention_backend"] = opt(o.backend);
  env["prefill_attention_backend"] = opt(o.prefill_backend);
  env["decode_attention_backend"] = opt(o.decode_backend);
  env["speculative_attention_mode"] = opt(o.speculative_attention_mode);
  env["cuda_graph_disabled"] = false;
}

// The engine's own flags: declared defaults, then what the user set, then the policy's defaults.
void addEngineOptions(Env& env, const EnginePolicy& policy, const ServingOptions& o) {
  for (const auto& opt_decl : policy.options) env[opt_decl.name] = opt_decl.default_value;
  for (const auto& [name, text] : o.engine_options) {
    const EngineOption* decl = policy.option(name);
    if (!decl) {
      std::vector<std::string> names;
      for (const auto& d : policy.options) names.push_back(d.name);
      throw UsageError(fmt::format("--option {}: {} has no such option{}; options: {}", name, policy.engine,
                                   didYouMean(name, names), names.empty() ? "none" : join(names, ", ")));
    }
    env[name] = parseOptionValue(*decl, text, policy.engine);
  }
  for (const auto& [name, value] : policy.defaults) {
    if (isNull(env[name])) env[name] = value;
  }
}

}  // namespace

Env buildEnv(const SelectionInput& s) {
  const EnginePolicy& policy = *s.engine;
  const ServingOptions& o = s.options;
  const std::int64_t tp = std::max<std::int64_t>(1, o.tp);
  Env env;
  addHardwareVariables(env, *s.hardware);
  addModelVariables(env, *s.model, tp);
  env["engine"] = policy.engine;
  checkServingOptions(policy, o);
  addServingVariables(env, *s.hardware, o, tp);
  addEngineOptions(env, policy, o);
  if (!std::holds_alternative<std::string>(env["kv_dtype"])) env["kv_dtype"] = std::string("auto");
  refreshDerived(env, policy);
  return env;
}

}  // namespace attnsim
