#pragma once
// GPU memory per rank as an engine splits it: weights, activation peak, CUDA graphs, the engine's
// reserve, and the KV pool left over in tokens and pages; and whether a batch's KV fits in it.
// The engine's rule is data (backends/<engine>/engine.yaml `serving:`); the model's sizes come
// from its spec.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/Formats.hpp"
#include "core/Value.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

struct ModelSpec;
struct HardwareProfile;
struct ServingPolicy;
struct CudaGraphPolicy;

constexpr double kMiB = 1024.0 * 1024.0;

// KV bytes one token costs on one TP rank, split by attention kind.
struct KvFootprint {
  double full_bytes = 0;        // layers that keep every token (full attention, MLA latent)
  double windowed_bytes = 0;    // sliding-window layers (each keeps at most its window)
  std::int64_t max_window = 0;  // the largest window among them
  int full_layers = 0, windowed_layers = 0;
  [[nodiscard]] double perToken() const { return full_bytes + windowed_bytes; }
  // KV bytes of one request holding `context` tokens in pages of `page` tokens.
  [[nodiscard]] double requestBytes(std::int64_t context, std::int64_t page) const;
};
// MHA/GQA: K and V of the rank's KV heads (replicated when TP exceeds them); MLA: the latent
// (kv_lora_rank + rope dim), the same on every rank. Sinks are per-head logits, not KV.
KvFootprint kvFootprint(const ModelSpec& m, KvCacheDtype kv, DType dtype, int tp);

// Weights on one TP rank: every parameter sharded over TP (MoE experts included, no EP). With
// `attention_dp` attention replicas (SGLang DP attention) the attention projections are sharded over
// tp / attention_dp ranks only: each replica holds them whole.
double weightBytesPerRank(const ModelSpec& m, int tp, int attention_dp = 1);
// Parameters of every layer's attention projections (QKV or MLA's low-rank chain, and the output).
double attentionParameters(const ModelSpec& m);
// attnsim's estimate of the forward's activation peak at `tokens` tokens on one rank: the
// residual stream, the QKV and gated-MLP outputs of one layer, and `logit_rows` fp32 logits (none
// when 0: an engine whose expression sizes its sampler's profile itself).
double activationPeakBytes(const ModelSpec& m, std::int64_t tokens, std::int64_t logit_rows, int tp);

struct MemoryInput {
  const ModelSpec* model = nullptr;
  const HardwareProfile* hardware = nullptr;
  const ServingPolicy* serving = nullptr;
  const CudaGraphPolicy* graphs = nullptr;  // null: no graphs captured
  Env env;                                  // the scenario's variables after the engine's rules
  KvCacheDtype kv_dtype = KvCacheDtype::Auto;
  DType dtype = DType::BF16;
  std::int64_t page_size = 16;
  int tp = 1;
  int attention_dp = 1;  // attention replicas (ServingPolicy::attention_dp): attention at tp / attention_dp
  bool cuda_graphs = true;
};

struct MemorySplit {
  double gpu_mib = 0, weights_mib = 0, activation_mib = 0, cuda_graph_mib = 0, kv_pool_mib = 0;
  double other_mib = 0;  // the engine's reserve: GPU − weights − KV (activations, graphs, runtime live in it)
  KvFootprint kv;
  std::int64_t page_size = 16;
  std::int64_t kv_tokens = 0;  // tokens of full-attention KV the pool holds (0 when the pool is negative)
  std::int64_t kv_pages = 0;
  std::int64_t max_batched_tokens = 0, max_running_requests = 0;
  bool chunked_prefill = true;  // the scheduler splits prompts over steps
  bool mixed_batches = true;    // prefills run in the same step as decodes
  bool prefix_caching = false;  // computed prompt prefixes stay in the pool for later requests
  bool host_overlap = false;    // the engine's per-step CPU work runs under the GPU's (serving.host.overlap)
  std::int64_t decode_graph_sizes = 0, prefill_graph_sizes = 0;
  // Attention replicas: every GPU's pool holds its own replica's requests, so the engine holds
  // attention_dp × kv_tokens distinct tokens (without DP attention the TP ranks hold the same ones).
  int attention_dp = 1;
  [[nodiscard]] std::int64_t engineKvTokens() const { return kv_tokens * attention_dp; }
  std::vector<std::pair<std::string, double>> derived;  // the engine's derived variables, for display
  std::string note, source;
  [[nodiscard]] bool weightsFit() const { return kv_pool_mib > 0; }
};
MemorySplit splitMemory(const MemoryInput& in);

// Whether a batch's KV (every group's requests at their context, rounded up to pages) fits the pool;
// with attention replicas, one replica's share of the requests (rounded up) against one GPU's pool.
struct FitCheck {
  bool fits = true;
  double need_mib = 0, have_mib = 0;  // the batch's KV against the pool (0 when the weights leave none)
  std::string reason;                 // "weights" (no pool left), "kv_cache" (the batch's KV); empty when it fits
  std::string message;                // "does not fit: ..." and by how much, or "fits: ..." and how full
};
FitCheck checkFit(const MemorySplit& split, const Workload& w);
// The MiB of KV one GPU needs for the batch (checkFit's need_mib, without its message: the sweep's hot path).
double batchKvMib(const MemorySplit& split, const Workload& w);

}  // namespace attnsim
