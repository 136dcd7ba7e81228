// serve-sim as JSON and text: the names and definitions of `vllm bench serve` (TPOT excludes the
// first token; ITL pools every gap).
#include <algorithm>

#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "reports/Answers.hpp"
#include "reports/TextOut.hpp"

namespace attnsim {

using nlohmann::json;

namespace {

json servePercentilesJson(const Percentiles& p, double scale) {
  return {{"mean", p.mean * scale}, {"median", p.p50 * scale}, {"p50", p.p50 * scale},
          {"p90", p.p90 * scale},   {"p99", p.p99 * scale},    {"max", p.max * scale}};
}

json serveTimelineJson(const ServeResult& r) {
  json timeline = json::array();
  const std::size_t stride = std::max<std::size_t>(1, r.timeline.size() / 200);
  for (std::size_t i = 0; i < r.timeline.size(); i += stride) {
    const auto& p = r.timeline[i];
    timeline.push_back({{"t_s", p.t_s},
                        {"running", p.running},
                        {"waiting", p.waiting},
                        {"batch_tokens", p.batch_tokens},
                        {"kv_used_tokens", p.kv_used_tokens}});
  }
  return timeline;
}

json serveRequestsJson(const ServeResult& r) {
  json requests = json::array();
  for (const auto& o : r.requests) {
    requests.push_back({{"arrival_s", o.arrival_s},
                        {"ttft_ms", o.ttft() * 1e3},
                        {"tpot_ms", o.tpot() * 1e3},
                        {"e2e_s", o.e2e()},
                        {"queue_ms", o.queueing() * 1e3},
                        {"preemptions", o.preemptions},
                        {"prompt_tokens", o.prompt_tokens},
                        {"output_tokens", o.output_tokens}});
  }
  return requests;
}

void appendServeLatencies(std::string& out, const ServeResult& r) {
  appendf(out, "{:<12}{:>10}{:>10}{:>10}{:>10}\n", "", "mean", "median", "p90", "p99");
  auto row = [&out](const char* name, const Percentiles& p, double scale) {
    appendf(out, "{:<12}{:>10.1f}{:>10.1f}{:>10.1f}{:>10.1f}\n", name, p.mean * scale, p.p50 * scale, p.p90 * scale,
            p.p99 * scale);
  };
  row("TTFT (ms)", r.ttft, 1e3);
  row("TPOT (ms)", r.tpot, 1e3);
  row("ITL (ms)", r.itl, 1e3);
  row("E2EL (ms)", r.e2e, 1e3);
  row("queue (ms)", r.queueing, 1e3);
}

// The speculative decoding the run used: null when off.
json serveSpecJson(const std::optional<SpecDecodeConfig>& spec) {
  if (!spec) return nullptr;
  return {{"algorithm", spec->algorithm},
          {"num_steps", spec->num_steps},
          {"topk", spec->topk},
          {"draft_tokens", spec->draft_tokens},
          {"accept_length", spec->accept_length}};
}

// The engine's CPU work per step and how many steps it outlasted the GPU's.
json serveHostJson(const HostStepCost& h, const ServeResult& r) {
  return {{"fixed_us", h.fixed_us},
          {"per_request_us", h.per_request_us},
          {"per_token_us", h.per_token_us},
          {"overlap", h.overlap},
          {"host_bound_steps", r.host_bound_steps}};
}

// A token's path outside the engine: the front end's loop and window, the benchmark client's loop.
json serveStreamJson(const SchedulerConfig& s, const SerialStage& client) {
  return {{"frontend",
           {{"per_request_us", s.frontend.per_request_us},
            {"per_chunk_us", s.frontend.per_chunk_us},
            {"tokenizer_window_us", s.tokenizer_window.wait_us},
            {"tokenizer_window_requests", s.tokenizer_window.max_requests}}},
          {"client", {{"per_request_us", client.per_request_us}, {"per_chunk_us", client.per_chunk_us}}}};
}

}  // namespace

json serveBenchmarkJson(const ServeBenchmarkRun& b) {
  const ServeResult& r = b.run.result;
  const CapacityReport& c = b.run.setup.capacity;
  const SchedulerConfig& s = b.run.setup.scheduler;
  return {{"hardware", c.hardware->id},
          {"model", c.model->id},
          {"engine", c.engine},
          {"backend", c.backend},
          {"tp", c.tp},
          {"kv_tokens", s.kv_tokens},
          {"max_batched_tokens", s.max_batched_tokens},
          {"max_running_requests", s.max_running_requests},
          {"attention_replicas", s.attention_replicas},
          {"replica_batched_tokens", s.attention_replicas > 1 ? json(s.replica_batched_tokens) : json()},
          {"chunked_prefill", s.chunked_prefill},
          {"meets_slo", b.meets_slo},
          {"ttft_ms", servePercentilesJson(r.ttft, 1e3)},
          {"tpot_ms", servePercentilesJson(r.tpot, 1e3)},
          {"itl_ms", servePercentilesJson(r.itl, 1e3)},
          {"e2e_s", servePercentilesJson(r.e2e, 1)},
          {"queue_ms", servePercentilesJson(r.queueing, 1e3)},
          {"makespan_s", r.makespan_s},
          {"completed", r.completed},
          {"total_input_tokens", r.total_input_tokens},
          {"total_output_tokens", r.total_output_tokens},
          {"total_tokens_per_s", r.total_tokens_per_s},
          {"output_tokens_per_s", r.output_tokens_per_s},
          {"requests_per_s", r.requests_per_s},
          {"goodput_rps", r.goodput_rps},
          {"slo_attainment", r.slo_attainment},
          {"mean_batch", r.mean_batch},
          {"mean_kv_use", r.mean_kv_use},
          {"peak_kv_use", r.peak_kv_use},
          {"steps", r.steps},
          {"full_graph_steps", r.full_graph_steps},
          {"piecewise_steps", r.piecewise_steps},
          {"preemptions", r.preemptions},
          {"rejected", r.rejected},
          {"step_model_evaluations", r.distinct_batches},
          {"host", serveHostJson(b.run.setup.host, r)},
          {"stream", serveStreamJson(s, b.client)},
          {"speculative", serveSpecJson(s.spec)},
          {"simulation_wall_s", b.wall_s},
          {"max_concurrency", b.max_concurrency > 0 ? json(b.max_concurrency) : json()},
          {"warmup_requests", b.warmup_requests},
          {"warmup_s", b.warmup_s},
          {"ignore_eos", b.ignore_eos},
          {"timeline", serveTimelineJson(r)},
          {"requests", serveRequestsJson(r)}};
}

std::string serveBenchmarkText(const ServeBenchmarkRun& b) {
  const ServeResult& r = b.run.result;
  const CapacityReport& c = b.run.setup.capacity;
  const SchedulerConfig& s = b.run.setup.scheduler;
  std::string out = fmt::format("{} · {} · {}:{} · TP {} · {} requests\n", c.hardware->id, c.model->id, c.engine,
                                c.backend, c.tp, b.requests);
  appendf(out,
          "KV pool {} tokens (page {}), {} tokens per step, {} running requests, {} batches, chunked prefill {}\n\n",
          s.kv_tokens, s.page_size, s.max_batched_tokens, s.max_running_requests,
          s.mixed_batches ? "mixed prefill+decode" : "separate prefill and decode", s.chunked_prefill ? "on" : "off");
  if (s.attention_replicas > 1) {
    out.pop_back();  // the blank line after the scheduler's goes after the replicas'
    appendf(out,
            "{} attention replicas, requests round robin, each prefilling up to {} tokens a step; a step takes its "
            "busiest replica's time\n\n",
            s.attention_replicas, s.replica_batched_tokens);
  }
  appendf(out, "{:<34}{}\n{:<34}{:.2f}\n{:<34}{}\n{:<34}{}\n", "Successful requests:", r.completed,
          "Benchmark duration (s):", r.makespan_s, "Total input tokens:", r.total_input_tokens,
          "Total generated tokens:", r.total_output_tokens);
  appendf(out, "{:<34}{:.2f}\n{:<34}{:.2f} ({:.1f}% meet the SLO)\n{:<34}{:.2f}\n{:<34}{:.2f}\n\n",
          "Request throughput (req/s):", r.requests_per_s, "Request goodput (req/s):", r.goodput_rps,
          100 * r.slo_attainment, "Output token throughput (tok/s):", r.output_tokens_per_s,
          "Total token throughput (tok/s):", r.total_tokens_per_s);
  appendServeLatencies(out, r);
  appendf(out, "\nmean batch {:.1f} requests; KV use mean {:.1f}%, peak {:.1f}%; {} preemptions, {} rejected\n",
          r.mean_batch, 100 * r.mean_kv_use, 100 * r.peak_kv_use, r.preemptions, r.rejected);
  appendf(out, "{} steps: {} full CUDA-graph replays, {} piecewise, {} eager; {} step-model evaluations\n", r.steps,
          r.full_graph_steps, r.piecewise_steps, r.steps - r.full_graph_steps - r.piecewise_steps, r.distinct_batches);
  const HostStepCost& h = b.run.setup.host;
  appendf(out,
          "engine CPU work per step {:.0f} us + {:.2f} us per request + {:.2f} us per token, {}; {} steps host-bound\n",
          h.fixed_us, h.per_request_us, h.per_token_us, h.overlap ? "under the GPU's" : "added to the GPU's",
          r.host_bound_steps);
  appendf(out,
          "front end {:.0f} us per request + {:.1f} us per chunk; client {:.0f} us per request + {:.1f} us per chunk\n",
          s.frontend.per_request_us, s.frontend.per_chunk_us, b.client.per_request_us, b.client.per_chunk_us);
  if (s.tokenizer_window.wait_us > 0) {
    appendf(out, "front end tokenizer micro-batch window {:.0f} us (up to {} requests) before the scheduler\n",
            s.tokenizer_window.wait_us, s.tokenizer_window.max_requests);
  }
  if (s.spec) {
    appendf(out,
            "speculative decoding: {}, {} draft steps (topk {}), {} tokens verified and {:.2f} emitted per request "
            "per verify step\n",
            s.spec->algorithm, s.spec->num_steps, s.spec->topk, s.spec->draft_tokens, s.spec->accept_length);
  }
  appendf(out, "SLO (p99 TTFT and TPOT, nothing rejected): {}\n", b.meets_slo ? "met" : "not met");
  appendf(out, "simulated {:.1f} s of serving in {:.3f} s\n", r.makespan_s, b.wall_s);
  if (b.warmup_requests > 0) {
    appendf(out, "warm-up: {} requests, {:.2f} s before the benchmark (outside its metrics)\n", b.warmup_requests,
            b.warmup_s);
  }
  if (!b.ignore_eos && b.generated) {
    out.append("outputs run to their drawn lengths: a model that stops at EOS ends some sooner (--ignore-eos)\n");
  }
  return out;
}

}  // namespace attnsim
