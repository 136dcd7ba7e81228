#pragma once
// Request-level serving simulation: requests arrive, the engine's scheduler (continuous batching,
// chunked prefill, page allocation, vLLM's recompute preemption or SGLang's new-token-ratio admission
// and retraction) forms each step's batch, and the step
// model times that batch. Step times are memoised by a quantised batch key, so a 10,000-request
// trace runs in well under a second (bench/bench_serve_sim.cpp).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cost/StepModel.hpp"
#include "cost/Workload.hpp"

namespace attnsim {

struct ServeRequest {
  double arrival_s = 0;
  std::int64_t prompt_tokens = 1;
  std::int64_t output_tokens = 1;  // the first comes out of the prefill step
  // The leading prompt tokens every request of the group shares (a system prompt, the random
  // dataset's prefix); group -1: none.
  std::int64_t prefix_tokens = 0;
  std::int64_t prefix_group = -1;
};

// SGLang's admission: a waiting request is admitted while its remaining prompt, its clipped output
// and a page fit the free pool less every running request's clipped remaining output x the ratio;
// the ratio decays per decode step to `min` and is reset by a retraction (docs/CAPACITY.md).
struct NewTokenRatioAdmission {
  double init = 0.7, min = 0.098, decay = 0.00098;  // decay: per decode step
  std::int64_t retract_decode_steps = 20, clip_max_new_tokens = 4096;
};

// When a step's KV does not fit: Recompute, the newest running request frees its pages and waits in
// front (vLLM); Retract, before a decode step the decoding requests with the fewest output tokens
// (then the longest prompt) free theirs and wait at the back (SGLang's retract_decode).
enum class Preemption { Recompute, Retract };

// Speculative decoding (EAGLE, EAGLE-3, MTP) as vLLM and SGLang run a decode step: the draft model
// runs over the step's tokens, then num_steps - 1 more forwards at topk tokens per request, and the
// target verifies draft_tokens per request in one forward, emitting accept_length tokens on average
// (the bonus token included; docs/CAPACITY.md "Speculative decoding"). The step time's drafter part
// is the timer's (simulator/ServeRun); here: the tokens a step schedules, holds in the pool and emits.
struct SpecDecodeConfig {
  std::string algorithm;          // eagle, eagle3 or mtp (servedSpecAlgorithms)
  std::int64_t num_steps = 1;     // draft forwards per step (vLLM num_speculative_tokens)
  std::int64_t topk = 1;          // draft tree branching; 1: a chain
  std::int64_t draft_tokens = 2;  // tokens verified per request (SGLang num_draft_tokens; vLLM k + 1)
  double accept_length = 1;       // mean tokens a verify emits per request, in [1, num_steps + 1]
  // KV slots a verifying request holds beyond its tokens: the verified ones, or topk x num_steps
  // draft slots for a tree (SGLang's _draft_preprocess_decode).
  [[nodiscard]] std::int64_t lookahead() const { return std::max(draft_tokens, topk * num_steps); }
};

// One Python event loop on a token's path outside the engine core (docs/CAPACITY.md "The front end and
// the client as serial resources"): it handles each request once on its way in (per_request_us) and
// each streamed chunk on its way out (per_chunk_us), one at a time, in the order they reach it. When it
// falls behind the steps, chunks wait for it: the client sees its tokens late.
struct SerialStage {
  double per_request_us = 0, per_chunk_us = 0;
  [[nodiscard]] bool costs() const { return per_request_us > 0 || per_chunk_us > 0; }
};

// A micro-batch window on the front end (vLLM's API server tokenizes through AsyncMicrobatchTokenizer,
// docs/CAPACITY.md "The front end and the client as serial resources"): a request that finds no window
// open opens one and waits wait_us for company; up to max_requests join it and all go on when it closes.
// The request waits without holding the front end's loop. A window that fills closes here at its
// deadline, not at its last request (at most wait_us late, and only above max_requests per wait_us).
struct BatchWindow {
  double wait_us = 0;
  std::int64_t max_requests = 1;
};

// The scheduler's limits and the KV pool, per engine (backends/<engine>/engine.yaml serving:).
struct SchedulerConfig {
  std::int64_t max_batched_tokens = 8192;
  // Attention replicas (SGLang DP attention): each request lives on one, dispatched round robin in the
  // order requests reach the scheduler (SGLang server_args.py _handle_load_balance_method: `auto` is
  // round_robin outside PD disaggregation, the default before it); a replica
  // prefills at most replica_batched_tokens a step (its chunked_prefill_size // dp_size), its requests
  // in their order while the others' go on, and a step is costed on its busiest replica
  // (Workload::replica). The pool, the running limit and admission stay the engine's, summed.
  int attention_replicas = 1;
  std::int64_t replica_batched_tokens = 0;
  std::int64_t max_running_requests = 256;
  std::int64_t kv_tokens = 0;  // pool size in tokens (a multiple of page_size)
  std::int64_t page_size = 16;
  // Chunked prefill beside decodes in one step (running requests first, new prefills fill the budget);
  // otherwise a prefill step runs whenever a prefill can start or continue, else a decode step (SGLang).
  bool mixed_batches = true;
  // Prompts split over steps to fill the token budget (vLLM enable_chunked_prefill, SGLang
  // chunked_prefill_size > 0). Off: a prompt starts only when it fits the step's remaining budget
  // whole, or runs alone in a step that has nothing else to prefill.
  bool chunked_prefill = true;
  Preemption preemption = Preemption::Recompute;
  // Shared prefixes stay in the pool once computed (vLLM automatic prefix caching, SGLang radix cache):
  // a request of the group skips the whole pages of its prefix (simulator/PrefixCache.hpp).
  bool prefix_caching = false;
  // vLLM: a preempted request's computed full pages stay cached (with prefix caching) for its
  // recompute, and a step that preempted admits no waiting request (Scheduler.schedule, `if not
  // preempted_reqs`). Off: the pages are freed and admission goes on (SGLang, RTP-LLM).
  bool keep_preempted_pages = false;
  bool admit_after_preemption = true;
  std::optional<NewTokenRatioAdmission> new_token_ratio;  // absent: admission by free pages only
  std::optional<SpecDecodeConfig> spec;                   // absent: one token per decode step
  // The engine's front end (vLLM's API server process, SGLang's tokenizer and detokenizer managers): a
  // request reaches the scheduler after it, and every chunk the client after it (serving.stream).
  SerialStage frontend{};
  BatchWindow tokenizer_window{};  // after the front end's per-request work, before the scheduler
};

// The benchmark client: at most max_concurrency requests in flight (0: no limit), as the semaphore
// of `vllm bench serve --max-concurrency` and `sglang.bench_serving --max-concurrency` holds them.
// A request waits on the client until a slot frees and is sent then; its TTFT and E2E count from
// the send, as the benchmarks' request functions start their clocks after the semaphore. `loop`: the
// client's own asyncio loop, which sends every request and reads every stream's chunks (none: free).
struct ServeClient {
  std::int64_t max_concurrency = 0;
  SerialStage loop{};
};

// A request is good when it meets every target (goodput as `vllm bench serve --goodput` counts it).
struct ServeSlo {
  double ttft_s = 2.0;
  double tpot_s = 0.050;
  double e2e_s = std::numeric_limits<double>::infinity();
};

struct RequestOutcome {
  // arrival_s: when the client sent it (after waiting on --max-concurrency)
  double arrival_s = 0, scheduled_s = 0, first_token_s = 0, finish_s = 0;
  std::int64_t prompt_tokens = 0, output_tokens = 0;
  int preemptions = 0;  // recomputes or retractions
  [[nodiscard]] double ttft() const { return first_token_s - arrival_s; }
  [[nodiscard]] double e2e() const { return finish_s - arrival_s; }
  [[nodiscard]] double queueing() const { return scheduled_s - arrival_s; }
  // Mean time per output token after the first (0 for one-token outputs).
  [[nodiscard]] double tpot() const {
    return output_tokens > 1 ? (finish_s - first_token_s) / static_cast<double>(output_tokens - 1) : 0;
  }
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Percentiles percentilesOf(std::vector<double> values);

struct TimelinePoint {
  double t_s = 0;
  std::int64_t running = 0, waiting = 0, batch_tokens = 0, kv_used_tokens = 0;
};

struct ServeResult {
  std::vector<RequestOutcome> requests;  // in arrival order
  std::vector<TimelinePoint> timeline;   // one point per step
  Percentiles ttft, tpot, e2e, queueing, itl;
  // As `vllm bench serve` reports them: per second of the benchmark's duration (makespan_s).
  double makespan_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0, requests_per_s = 0, goodput_rps = 0,
         slo_attainment = 0;
  std::int64_t completed = 0, total_input_tokens = 0, total_output_tokens = 0;
  double mean_batch = 0, mean_kv_use = 0, peak_kv_use = 0;  // KV use as a fraction of the pool
  double time_avg_in_system = 0;                            // ∫ (waiting + running) dt / makespan
  std::int64_t steps = 0, full_graph_steps = 0, piecewise_steps = 0, preemptions = 0,
               rejected = 0;          // rejected: can never fit the pool
  std::int64_t distinct_batches = 0;  // step-model evaluations (memo misses)
  std::int64_t emitted_tokens = 0;    // tokens the steps emitted (every request's output, none beyond)
  std::int64_t host_bound_steps = 0;  // steps whose engine CPU work outlasted their GPU time
  double in_system_seconds = 0;       // ∫ (waiting + running) dt, summed step by step
  std::vector<double> itl_samples;    // inter-token latencies while simulating (moved into `itl`)
};

// The time of one step for a batch, and whether it replays a CUDA graph.
struct StepTime {
  double us = 0;                      // run back to back with the previous step
  GraphMode mode = GraphMode::Eager;  // full graph replay (padded to a captured size), piecewise, or eager
  // Its parts: the GPU's and the engine's CPU work (cost/HostTime.hpp), and whether that work ran under
  // the previous step's GPU time (us = the longer of the two) or before the GPU's (us = their sum).
  double gpu_us = 0, host_us = 0;
  bool overlapped = false;
  // After an idle engine nothing hides the CPU work: it precedes the GPU's.
  [[nodiscard]] double fromIdleUs() const { return overlapped ? gpu_us + host_us : us; }
};
using StepTimer = std::function<StepTime(const Workload&)>;

ServeResult simulateServing(const std::vector<ServeRequest>& requests, const SchedulerConfig& config,
                            const StepTimer& timer, const ServeSlo& slo, const ServeClient& client = {});

}  // namespace attnsim
