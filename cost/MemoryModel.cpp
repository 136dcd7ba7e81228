#include "cost/MemoryModel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backends/EnginePolicy.hpp"
#include "backends/ServingPolicy.hpp"
#include "core/Error.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

namespace {

double evalNumber(const Expr& e, const Env& env, const std::string& what) {
  const auto v = asNumber(e.evaluate(env));
  if (!v) throw InputError(fmt::format("serving.{}: '{}' is not a number here", what, e.text()));
  return *v;
}

std::int64_t pagesFor(std::int64_t tokens, std::int64_t page) { return (tokens + page - 1) / page; }

// The model's and device's sizes the engines' memory expressions read (kServingMemoryVariables).
void setServingSizeVariables(Env& env, const ModelSpec& m, const HardwareProfile& hw, int tp) {
  env["device_memory_mib"] = hw.reported_memory_mib.value_or(hw.memory_gb * 1024);
  env["vocab_size"] = static_cast<std::int64_t>(m.vocab_size);
  const bool moe = m.moe.has_value();
  env["mxfp4_moe"] = moe && m.weight_dtype == "mxfp4";
  env["moe_experts"] = static_cast<std::int64_t>(moe ? m.moe->num_experts : 0);
  env["moe_layers"] = static_cast<std::int64_t>(moe ? std::max(0, m.num_layers - m.moe->first_dense_layers) : 0);
  env["moe_hidden"] = static_cast<std::int64_t>(m.hidden_size);
  // Experts sharded over TP (no EP): each rank holds intermediate / tp columns of every expert.
  env["moe_intermediate"] = static_cast<std::int64_t>(moe ? m.moe->expert_intermediate_size / std::max(1, tp) : 0);
}

// One pool for every layer: a sliding-window layer keeps every token as a full-attention one does.
KvFootprint holdEveryToken(KvFootprint f) {
  f.full_bytes += f.windowed_bytes;
  f.full_layers += f.windowed_layers;
  f.windowed_bytes = 0;
  f.windowed_layers = 0;
  f.max_window = 0;
  return f;
}

}  // namespace

double KvFootprint::requestBytes(std::int64_t context, std::int64_t page) const {
  const std::int64_t full = pagesFor(context, page) * page;
  const std::int64_t windowed = pagesFor(std::min(context, max_window + page), page) * page;
  return full_bytes * static_cast<double>(full) + windowed_bytes * static_cast<double>(windowed);
}

KvFootprint kvFootprint(const ModelSpec& m, KvCacheDtype kv, DType dtype, int tp) {
  KvFootprint f;
  const double elem = kvElementBytes(kv, dtype);
  for (const auto& [layer, count] : m.layerCounts()) {
    double per_layer = 0;
    if (layer->mla) {
      per_layer = (layer->mla->kv_lora_rank + layer->mla->qk_rope_head_dim) * elem;
    } else {
      const int heads = std::max(1, layer->num_kv_heads / tp);
      const int dv = layer->head_dim_v > 0 ? layer->head_dim_v : layer->head_dim;
      per_layer = heads * (layer->head_dim + dv) * elem;
    }
    if (layer->sliding_window > 0) {
      f.windowed_bytes += per_layer * count;
      f.windowed_layers += count;
      f.max_window = std::max<std::int64_t>(f.max_window, layer->sliding_window);
    } else {
      f.full_bytes += per_layer * count;
      f.full_layers += count;
    }
  }
  return f;
}

double attentionParameters(const ModelSpec& m) {
  const double hidden = m.hidden_size;
  double total = 0;
  for (const auto& [layer, count] : m.layerCounts()) {
    const double hq = layer->num_heads;
    double per_layer = 0;
    if (layer->mla) {
      const MlaGeometry& g = *layer->mla;
      const double q_head = g.qk_nope_head_dim + g.qk_rope_head_dim;
      const double q = g.q_lora_rank > 0 ? hidden * g.q_lora_rank + g.q_lora_rank * hq * q_head : hidden * hq * q_head;
      per_layer = q + hidden * (g.kv_lora_rank + g.qk_rope_head_dim) +
                  g.kv_lora_rank * hq * (g.qk_nope_head_dim + g.v_head_dim) + hq * g.v_head_dim * hidden;
    } else {
      const double dv = layer->head_dim_v > 0 ? layer->head_dim_v : layer->head_dim;
      per_layer = hidden * (hq + 2.0 * layer->num_kv_heads) * layer->head_dim + hq * dv * hidden;
    }
    total += per_layer * count;
  }
  return total;
}

double weightBytesPerRank(const ModelSpec& m, int tp, int attention_dp) {
  const double all = m.parameterBytes();
  if (attention_dp <= 1 || m.parameters_b <= 0) return all / tp;
  const double attention = std::min(all, attentionParameters(m) * all / (m.parameters_b * 1e9));
  const int attention_tp = tp / attention_dp;  // the engine's rules make attention_dp divide tp
  return (all - attention) / tp + attention / attention_tp;
}

double activationPeakBytes(const ModelSpec& m, std::int64_t tokens, std::int64_t logit_rows, int tp) {
  const AttentionLayerSpec& a = m.primaryLayer();
  const double qkv = static_cast<double>(a.num_heads + 2 * a.num_kv_heads) * a.head_dim / tp;
  const int mlp = m.moe ? m.moe->expert_intermediate_size * std::max(1, m.moe->experts_per_token) : m.intermediate_size;
  const double per_token = 2.0 * m.hidden_size + qkv + 3.0 * mlp / tp;  // gate_up output and its activation
  const double rows = static_cast<double>(std::clamp<std::int64_t>(logit_rows, 0, tokens));
  return static_cast<double>(tokens) * per_token * bytesOf(m.dtype) + rows * m.vocab_size * 4.0;
}

MemorySplit splitMemory(const MemoryInput& in) {
  const ModelSpec& m = *in.model;
  const ServingPolicy& sp = *in.serving;
  MemorySplit s;
  Env env = in.env;
  s.page_size = in.page_size;
  s.attention_dp = std::max(1, in.attention_dp);
  const int attention_tp = std::max(1, in.tp / s.attention_dp);
  s.kv = kvFootprint(m, in.kv_dtype, in.dtype, attention_tp);
  s.weights_mib = weightBytesPerRank(m, in.tp, s.attention_dp) / kMiB;
  if (in.graphs && in.cuda_graphs && (!in.graphs->enabled_when || in.graphs->enabled_when->test(env))) {
    s.decode_graph_sizes = static_cast<std::int64_t>(in.graphs->captureSizes(env).size());
    s.prefill_graph_sizes = static_cast<std::int64_t>(in.graphs->prefillCaptureSizes(env).size());
    s.cuda_graph_mib =
        static_cast<double>(s.decode_graph_sizes + s.prefill_graph_sizes) * in.graphs->capture_memory_mib_per_size;
  }
  env["weights_mib"] = s.weights_mib;
  env["cuda_graph_mib"] = s.cuda_graph_mib;
  // The engine sizes its reserve by the graph maximum whether or not graphs are captured.
  env["cuda_graph_max_batch"] = in.graphs ? in.graphs->max_batch.evaluate(env) : Value{};
  env["decode_graph_sizes"] = s.decode_graph_sizes;
  env["prefill_graph_sizes"] = s.prefill_graph_sizes;
  env["context_len"] = static_cast<std::int64_t>(m.max_position_embeddings);
  setServingSizeVariables(env, m, *in.hardware, in.tp);
  for (const auto& [name, expr] : sp.derive) {
    const double v = evalNumber(expr, env, "derive." + name);
    env[name] = v;
    s.derived.emplace_back(name, v);
  }
  const auto gpu = env.find("gpu_mem_mib");  // the engine's view of the GPU; else the vendor's GB as GiB
  s.gpu_mib = gpu != env.end() && asNumber(gpu->second) ? *asNumber(gpu->second) : in.hardware->memory_gb * 1024;
  s.max_batched_tokens = std::llround(evalNumber(sp.scheduler.max_batched_tokens, env, "scheduler.max_batched_tokens"));
  const double rows = sp.memory.logit_rows ? evalNumber(*sp.memory.logit_rows, env, "memory.logit_rows") : 0;
  s.activation_mib = activationPeakBytes(m, s.max_batched_tokens, std::llround(rows), in.tp) / kMiB;
  env["activation_mib"] = s.activation_mib;
  s.kv_pool_mib = evalNumber(sp.memory.kv_pool_mib, env, "memory.kv_pool_mib");
  if (sp.memory.sliding_window_pool && !truthy(sp.memory.sliding_window_pool->evaluate(env))) {
    s.kv = holdEveryToken(s.kv);
  }
  if (s.kv_pool_mib > 0 && s.kv.perToken() > 0) {
    // Every token costs its full-attention KV; windowed layers are sized per request (checkFit).
    const double per_token = s.kv.full_bytes > 0 ? s.kv.full_bytes : s.kv.windowed_bytes;
    s.kv_pages = static_cast<std::int64_t>(s.kv_pool_mib * kMiB / (per_token * static_cast<double>(s.page_size)));
    s.kv_tokens = s.kv_pages * s.page_size;
  }
  env["kv_tokens"] = s.kv_tokens;
  s.max_running_requests =
      std::llround(evalNumber(sp.scheduler.max_running_requests, env, "scheduler.max_running_requests"));
  if (sp.scheduler.chunked_prefill) {
    s.chunked_prefill = truthy(sp.scheduler.chunked_prefill->evaluate(env));
  }
  s.mixed_batches = truthy(sp.scheduler.mixed_batches.evaluate(env));
  s.prefix_caching = sp.scheduler.prefix_caching && truthy(sp.scheduler.prefix_caching->evaluate(env));
  s.host_overlap = sp.host && truthy(sp.host->overlap.evaluate(env));
  s.other_mib = s.gpu_mib - s.weights_mib - s.kv_pool_mib;  // also right when the pool is negative
  s.note = sp.memory.note;
  s.source = sp.memory.source;
  return s;
}

double batchKvMib(const MemorySplit& split, const Workload& w) {
  double mib = 0;
  for (const auto& g : w.groups) {
    // With attention replicas each GPU holds its replica's share of the requests.
    const std::int64_t count = (g.count + split.attention_dp - 1) / split.attention_dp;
    mib += static_cast<double>(count) * split.kv.requestBytes(g.context, split.page_size) / kMiB;
  }
  return mib;
}

FitCheck checkFit(const MemorySplit& split, const Workload& w) {
  FitCheck f;
  f.have_mib = std::max(0.0, split.kv_pool_mib);
  f.need_mib = batchKvMib(split, w);
  if (!split.weightsFit()) {
    f.fits = false;
    f.reason = "weights";
    f.message = fmt::format(
        "does not fit: the weights ({:.1f} GiB per GPU) leave no KV cache; the engine's budget is short by {:.1f} GiB",
        split.weights_mib / 1024, -split.kv_pool_mib / 1024);
  } else if (f.need_mib > f.have_mib) {
    f.fits = false;
    f.reason = "kv_cache";
    f.message = fmt::format(
        "does not fit: the batch's KV cache needs {:.1f} GiB per GPU, the pool holds {:.1f} GiB "
        "({:.1f} GiB or {:.0f}% short)",
        f.need_mib / 1024, f.have_mib / 1024, (f.need_mib - f.have_mib) / 1024, 100 * (f.need_mib / f.have_mib - 1));
  } else {
    f.message = fmt::format("fits: the batch's KV cache needs {:.1f} GiB per GPU of the pool's {:.1f} GiB ({:.0f}%)",
                            f.need_mib / 1024, f.have_mib / 1024, f.have_mib > 0 ? 100 * f.need_mib / f.have_mib : 0);
  }
  return f;
}

}  // namespace attnsim
