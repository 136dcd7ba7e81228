// attnsim serve-sim: a request-level serving simulation of one engine on one GPU (or TP group).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "cli/ServeFlags.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/CapacitySearch.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"
#include "study/CapacityStore.hpp"

namespace attnsim::cli {

namespace {

nlohmann::json percentilesJson(const Percentiles& p, double scale) {
  return {{"mean", p.mean * scale}, {"median", p.p50 * scale}, {"p50", p.p50 * scale},
          {"p90", p.p90 * scale},   {"p99", p.p99 * scale},    {"max", p.max * scale}};
}

nlohmann::json resultJson(const ServeRun& run, double wall_s) {
  const ServeResult& r = run.result;
  const CapacityReport& c = run.setup.capacity;
  nlohmann::json timeline = nlohmann::json::array();
  const std::size_t stride = std::max<std::size_t>(1, r.timeline.size() / 200);
  for (std::size_t i = 0; i < r.timeline.size(); i += stride) {
    const auto& p = r.timeline[i];
    timeline.push_back({{"t_s", p.t_s},
                        {"running", p.running},
                        {"waiting", p.waiting},
                        {"batch_tokens", p.batch_tokens},
                        {"kv_used_tokens", p.kv_used_tokens}});
  }
  nlohmann::json requests = nlohmann::json::array();
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
  return {{"hardware", c.hardware->id},
          {"model", c.model->id},
          {"engine", c.engine},
          {"backend", c.backend},
          {"tp", c.tp},
          {"kv_tokens", run.setup.scheduler.kv_tokens},
          {"max_batched_tokens", run.setup.scheduler.max_batched_tokens},
          {"max_running_requests", run.setup.scheduler.max_running_requests},
          {"chunked_prefill", run.setup.scheduler.chunked_prefill},
          {"ttft_ms", percentilesJson(r.ttft, 1e3)},
          {"tpot_ms", percentilesJson(r.tpot, 1e3)},
          {"itl_ms", percentilesJson(r.itl, 1e3)},
          {"e2e_s", percentilesJson(r.e2e, 1)},
          {"queue_ms", percentilesJson(r.queueing, 1e3)},
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
          {"simulation_wall_s", wall_s},
          {"timeline", timeline},
          {"requests", requests}};
}

void printResult(const ServeRun& run, std::size_t n, double wall_s) {
  const ServeResult& r = run.result;
  const CapacityReport& c = run.setup.capacity;
  const SchedulerConfig& s = run.setup.scheduler;
  fmt::print("{} · {} · {}:{} · TP {} · {} requests\n", c.hardware->id, c.model->id, c.engine, c.backend, c.tp, n);
  fmt::print("KV pool {} tokens (page {}), {} tokens per step, {} running requests, {} batches, chunked prefill {}\n\n",
             s.kv_tokens, s.page_size, s.max_batched_tokens, s.max_running_requests,
             s.mixed_batches ? "mixed prefill+decode" : "separate prefill and decode",
             s.chunked_prefill ? "on" : "off");
  // The names and definitions of `vllm bench serve` (TPOT excludes the first token; ITL pools every gap).
  fmt::print("{:<34}{}\n{:<34}{:.2f}\n{:<34}{}\n{:<34}{}\n", "Successful requests:", r.completed,
             "Benchmark duration (s):", r.makespan_s, "Total input tokens:", r.total_input_tokens,
             "Total generated tokens:", r.total_output_tokens);
  fmt::print("{:<34}{:.2f}\n{:<34}{:.2f} ({:.1f}% meet the SLO)\n{:<34}{:.2f}\n{:<34}{:.2f}\n\n",
             "Request throughput (req/s):", r.requests_per_s, "Request goodput (req/s):", r.goodput_rps,
             100 * r.slo_attainment, "Output token throughput (tok/s):", r.output_tokens_per_s,
             "Total token throughput (tok/s):", r.total_tokens_per_s);
  fmt::print("{:<12}{:>10}{:>10}{:>10}{:>10}\n", "", "mean", "median", "p90", "p99");
  auto row = [](const char* name, const Percentiles& p, double scale) {
    fmt::print("{:<12}{:>10.1f}{:>10.1f}{:>10.1f}{:>10.1f}\n", name, p.mean * scale, p.p50 * scale, p.p90 * scale,
               p.p99 * scale);
  };
  row("TTFT (ms)", r.ttft, 1e3);
  row("TPOT (ms)", r.tpot, 1e3);
  row("ITL (ms)", r.itl, 1e3);
  row("E2EL (ms)", r.e2e, 1e3);
  row("queue (ms)", r.queueing, 1e3);
  fmt::print("\n");
  fmt::print("mean batch {:.1f} requests; KV use mean {:.1f}%, peak {:.1f}%; {} preemptions, {} rejected\n",
             r.mean_batch, 100 * r.mean_kv_use, 100 * r.peak_kv_use, r.preemptions, r.rejected);
  fmt::print("{} steps: {} full CUDA-graph replays, {} piecewise, {} eager; {} step-model evaluations\n", r.steps,
             r.full_graph_steps, r.piecewise_steps, r.steps - r.full_graph_steps - r.piecewise_steps,
             r.distinct_batches);
  fmt::print("simulated {:.1f} s of serving in {:.3f} s\n", r.makespan_s, wall_s);
}

// The run in the study file: its configuration (memory split), aggregates, requests and timeline.
std::int64_t storeRun(const ServeFlags& f, const ServeRun& run, const std::vector<ServeRequest>& requests) {
  Store store(f.db);
  CapacityStore out(store);
  const CapacityReport& c = run.setup.capacity;
  CapacityConfigRow config{c.hardware->id,
                           c.model->id,
                           c.engine,
                           c.backend,
                           c.kv_dtype,
                           !f.scenario.backend.empty(),
                           c.tp,
                           f.scenario.cuda_graph != "off",
                           c.split,
                           "",
                           std::nullopt,
                           0,
                           1};
  const std::int64_t id = out.addConfig(std::nullopt, config);
  const ServeSlo slo = sloOf(f);
  const double last = requests.empty() ? 0 : requests.back().arrival_s;
  const double rate = f.trace.empty() ? f.arrivals.rate : last > 0 ? static_cast<double>(requests.size()) / last : 0;
  std::string arrivals =
      f.trace.empty() ? describeArrivals(f.arrivals) : fmt::format("trace {} ({} requests)", f.trace, requests.size());
  if (f.client.max_concurrency > 0) arrivals.append(fmt::format(", at most {} in flight", f.client.max_concurrency));
  return out.addRun(id, {"serve-sim", arrivals, rate, slo, meetsSlo(run.result, slo), false}, run.result, true);
}

int runServeSim(const GlobalOptions& global, const ServeFlags& f) {
  const Catalog c = global.loadCatalog();
  const auto start = std::chrono::steady_clock::now();
  const ServeOutcome out = simulateServe(c, f);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!f.write_trace.empty()) {
    std::string text = "arrival_s,prompt_tokens,output_tokens\n";
    for (const auto& r : out.requests) {
      text.append(fmt::format("{:.6f},{},{}\n", r.arrival_s, r.prompt_tokens, r.output_tokens));
    }
    writeFileAtomically(f.write_trace, text);
  }
  if (!f.db.empty()) storeRun(f, out.run, out.requests);
  if (global.json) {
    nlohmann::json j = resultJson(out.run, wall);
    j["max_concurrency"] = f.client.max_concurrency > 0 ? nlohmann::json(f.client.max_concurrency) : nlohmann::json();
    j["warmup_requests"] = out.warmup_requests;
    j["warmup_s"] = out.warmup_s;
    j["ignore_eos"] = f.ignore_eos;
    std::cout << j.dump(2) << "\n";
  } else {
    printResult(out.run, out.requests.size(), wall);
    if (out.warmup_requests > 0) {
      fmt::print("warm-up: {} requests, {:.2f} s before the benchmark (outside its metrics)\n", out.warmup_requests,
                 out.warmup_s);
    }
    if (!f.ignore_eos && f.trace.empty()) {
      fmt::print("outputs run to their drawn lengths: a model that stops at EOS ends some sooner (--ignore-eos)\n");
    }
  }
  return 0;
}

}  // namespace

Runner addServeSimCommand(CLI::App& app, const GlobalOptions& global) {
  auto f = std::make_shared<ServeFlags>();
  addServeFlags(app, *f);
  return [&global, f, &app]() {
    finishServeFlags(app, *f);
    return runServeSim(global, *f);
  };
}

}  // namespace attnsim::cli
