#pragma once
// How an engine serves, as data (the `serving:` section of backends/<engine>/engine.yaml): the
// variables it derives from the GPU and the scenario (chunked-prefill size, graph maximum, memory
// fraction), how it splits GPU memory between weights, activations, CUDA graphs and the KV pool,
// and its scheduler's limits. The capacity model (cost/MemoryModel) and serve-sim read it.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/Expr.hpp"
#include "core/YamlReader.hpp"

namespace attnsim {

struct ServingMemory {
  // The KV pool per GPU in MiB: an expression of the scenario, the derived variables and the
  // quantities attnsim computes (kServingMemoryVariables).
  Expr kv_pool_mib;
  // Rows of logits the engine's profiling run materialises (vLLM: max_num_seqs); 0 when unset.
  std::optional<Expr> logit_rows;
  // Whether sliding-window layers keep only their window in a pool of their own (a hybrid pool); false:
  // the engine lays every layer out alike, so each token costs every layer's KV (SGLang with
  // disable_hybrid_swa_memory). Unset: true.
  std::optional<Expr> sliding_window_pool;
  std::string note;  // what the engine counts and what it leaves out
  std::string source;
};

// SGLang's admission by a new-token ratio and its retraction of decoding requests when the KV pool
// runs out (schedule_policy.py PrefillAdder, schedule_batch.py retract_decode, environ.py constants).
struct NewTokenRatioPolicy {
  double init = 0.7;                        // SGLANG_INIT_NEW_TOKEN_RATIO, times schedule_conservativeness, at most 1
  double min_factor = 0.14;                 // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR: the floor is init x this
  std::int64_t decay_steps = 600;           // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS: init to floor
  std::int64_t retract_decode_steps = 20;   // SGLANG_RETRACT_DECODE_STEPS: headroom in the reset ratio
  std::int64_t clip_max_new_tokens = 4096;  // SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
  double dp_attention_factor = 1;           // conservativeness x this with attention replicas (DP attention)
  std::string source;
};

struct ServingScheduler {
  Expr max_batched_tokens;    // token budget of one step (prefill chunk plus decodes)
  Expr max_running_requests;  // may also read kv_tokens
  // Whether prefills run in the same step as decodes (an expression: vLLM's V0 mixes them only with
  // chunked prefill on).
  Expr mixed_batches;
  // Whether prompts are split over steps (vLLM enable_chunked_prefill); absent: always.
  std::optional<Expr> chunked_prefill;
  std::string policy;  // decode-first (vLLM) or prefill-first (SGLang, RTP-LLM)
  // When the pool runs out: recompute (the newest running request gives its KV back and waits in
  // front: vLLM) or retract (decoding requests by SGLang's order, to the back of the queue).
  std::string preemption = "recompute";
  std::optional<NewTokenRatioPolicy> new_token_ratio;  // SGLang's admission; absent: pages only
  // Whether computed prompt prefixes stay in the pool for later requests (vLLM enable_prefix_caching,
  // SGLang's radix cache); absent: never.
  std::optional<Expr> prefix_caching;
  // Whether a preempted request's computed pages stay in the prefix cache for its recompute, and
  // whether a step that preempted still admits waiting requests (vLLM: kept; not admitted).
  bool keep_preempted_pages = false;
  bool admit_after_preemption = true;
  std::string source;
};

// One part of an engine's CPU work per step (scheduling, input preparation, output processing): a
// fixed part and parts per request and per token of the step's batch, each with its source. `when`:
// an expression of the scenario and the engine's options (an engine version's terms); absent: always.
struct HostWorkTerm {
  std::string what;
  double fixed_us = 0, per_request_us = 0, per_token_us = 0;
  std::optional<Expr> when;
  std::string source;
};

// The engine's per-step CPU work and whether it overlaps the GPU (vLLM --async-scheduling, SGLang's
// overlap scheduler): overlapped, a step takes the longer of the two; otherwise their sum
// (docs/CAPACITY.md "Per-step host work").
struct ServingHost {
  Expr overlap;  // an expression of the scenario, the engine's options and the derived variables
  std::vector<HostWorkTerm> terms;
  std::string source;
};

// A cost on a token's path outside the engine core, in one serial loop: per request and per streamed
// chunk, with its source. `when` as for HostWorkTerm. batch_wait_us / batch_max: a micro-batch window the
// request waits in on its way in without holding the loop (vLLM's AsyncMicrobatchTokenizer: the first
// request of a window waits batch_wait_us for up to batch_max - 1 others; 0: none).
struct StreamCostTerm {
  std::string what;
  double per_request_us = 0, per_chunk_us = 0;
  double batch_wait_us = 0;
  std::int64_t batch_max = 1;
  std::optional<Expr> when;
  std::string source;
};

// serving.stream: the engine's front end (the API server or tokenizer/detokenizer processes a request and
// every chunk pass through) and the engine's own benchmark client (`vllm bench serve`,
// `sglang.bench_serving`: one asyncio loop that sends every request and reads every stream), each a
// serial resource whose terms add up (docs/CAPACITY.md "The front end and the client as serial resources").
struct ServingStream {
  std::vector<StreamCostTerm> frontend, client;
  std::string source;
};

struct ServingPolicy {
  std::vector<std::pair<std::string, Expr>> derive;  // evaluated in order
  // Attention replicas (SGLang's DP attention): each runs attention at tp / attention_dp ranks on its
  // own requests and keeps their KV in its own pool, the MLP staying sharded over tp. An expression
  // of the scenario and the engine's options; absent: 1.
  std::optional<Expr> attention_dp;
  ServingMemory memory;
  ServingScheduler scheduler;
  std::optional<ServingHost> host;      // absent: a step is its GPU time
  std::optional<ServingStream> stream;  // absent: tokens reach the client as the step ends
  std::string source;
};

// Quantities attnsim computes before the memory expression runs.
extern const std::vector<std::string> kServingMemoryVariables;
// Quantities known after the KV pool is sized (for max_running_requests).
extern const std::vector<std::string> kServingSchedulerVariables;

// `known` holds the scenario variables and the engine's options.
ServingPolicy parseServingPolicy(const YamlReader& r, const std::vector<std::string>& known);

}  // namespace attnsim
