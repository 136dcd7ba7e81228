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

struct ServeFlags {
  ScenarioFlags scenario;
  std::string trace, write_trace, db;
  ArrivalSpec arrivals;
  ServeClient client;
  std::int64_t warmup_requests = 0;
  bool ignore_eos = false;
  double slo_ttft_ms = 2000, slo_tpot_ms = 50;
  std::vector<std::string> goodput;  // vllm bench serve --goodput KEY:MS (ttft, tpot, e2el)
};

// The SLO: --goodput as `vllm bench serve` reads it (vllm/benchmarks/serve.py parse_goodput: a request is
// good when it meets every target named; the unnamed are not checked), else --slo-ttft-ms / --slo-tpot-ms.
ServeSlo sloOf(const ServeFlags& f) {
  if (f.goodput.empty()) return {f.slo_ttft_ms / 1e3, f.slo_tpot_ms / 1e3, std::numeric_limits<double>::infinity()};
  const double none = std::numeric_limits<double>::infinity();
  ServeSlo slo{none, none, none};
  for (const auto& item : f.goodput) {
    const auto colon = item.find(':');
    const std::string key = item.substr(0, colon);
    double ms = 0;
    const bool number = colon != std::string::npos && CLI::detail::lexical_cast(item.substr(colon + 1), ms) &&
                        std::isfinite(ms) && ms >= 0;
    double* target = key == "ttft" ? &slo.ttft_s : key == "tpot" ? &slo.tpot_s : key == "e2el" ? &slo.e2e_s : nullptr;
    if (!target || !number) {
      throw UsageError(fmt::format("--goodput {}: expected KEY:MS with KEY ttft, tpot or e2el and MS >= 0", item));
    }
    *target = ms / 1e3;
  }
  return slo;
}

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

// Warm-up as sglang.bench_serving runs it (benchmark(), @ 0033168f): copies of the first request with
// at most 32 output tokens, sent together before the benchmark starts; they stay out of the metrics.
std::vector<ServeRequest> warmupRequests(const std::vector<ServeRequest>& requests, std::int64_t n) {
  if (requests.empty() || n <= 0) return {};
  const ServeRequest first = requests.front();
  return std::vector<ServeRequest>(static_cast<std::size_t>(n),
                                   {0, first.prompt_tokens, std::min<std::int64_t>(first.output_tokens, 32)});
}

int runServeSim(const GlobalOptions& global, const ServeFlags& f) {
  const Catalog c = global.loadCatalog();
  const std::vector<ServeRequest> requests = f.trace.empty() ? generateRequests(f.arrivals) : readTrace(f.trace);
  if (!f.write_trace.empty()) {
    std::string text = "arrival_s,prompt_tokens,output_tokens\n";
    for (const auto& r : requests) text += fmt::format("{:.6f},{},{}\n", r.arrival_s, r.prompt_tokens, r.output_tokens);
    writeFileAtomically(f.write_trace, text);
  }
  const ServeSlo slo = sloOf(f);
  const auto start = std::chrono::steady_clock::now();
  ServeSession session(c, f.scenario.scenario(f.scenario.hardware, f.scenario.models, f.scenario.engines));
  const std::vector<ServeRequest> warmup = warmupRequests(requests, f.warmup_requests);
  const double warmup_s = warmup.empty() ? 0 : session.run(warmup, slo).makespan_s;
  const ServeRun run{session.setup(), session.run(requests, slo, f.client)};
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!f.db.empty()) storeRun(f, run, requests);
  if (global.json) {
    nlohmann::json j = resultJson(run, wall);
    j["max_concurrency"] = f.client.max_concurrency > 0 ? nlohmann::json(f.client.max_concurrency) : nlohmann::json();
    j["warmup_requests"] = warmup.size();
    j["warmup_s"] = warmup_s;
    j["ignore_eos"] = f.ignore_eos;
    std::cout << j.dump(2) << "\n";
  } else {
    printResult(run, requests.size(), wall);
    if (!warmup.empty())
      fmt::print("warm-up: {} requests, {:.2f} s before the benchmark (outside its metrics)\n", warmup.size(),
                 warmup_s);
    if (!f.ignore_eos && f.trace.empty()) {
      fmt::print("outputs run to their drawn lengths: a model that stops at EOS ends some sooner (--ignore-eos)\n");
    }
  }
  return 0;
}

}  // namespace

CLI::Validator rateOrInf() {
  return {[](const std::string& text) -> std::string {
            if (text == "inf") return {};
            return positiveNumber()(text);
          },
          "NUMBER > 0 or inf"};
}

void addArrivalFlags(CLI::App& app, ArrivalSpec& a, bool rate_inf) {
  app.add_option("--rate,--request-rate", a.rate,
                 rate_inf ? "generated arrivals: requests per second, or inf (all at t = 0)"
                          : "generated arrivals: requests per second")
      ->check(rate_inf ? rateOrInf() : positiveNumber());
  app.add_option("--requests,--num-prompts", a.requests, "generated arrivals: how many")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--arrival", a.process, "poisson or gamma")->check(CLI::IsMember({"poisson", "gamma"}));
  app.add_option("--cv", a.cv, "gamma arrivals: coefficient of variation of the gaps")->check(positiveNumber());
  app.add_option("--prompt-len,--random-input-len", a.prompt_tokens, "mean prompt tokens")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--output-len,--random-output-len", a.output_tokens, "mean output tokens")
      ->check(CLI::Range(1, 1 << 24));
  auto* lengths = app.add_option("--lengths", a.lengths, "fixed, uniform, exponential or random (--dataset-name)")
                      ->check(CLI::IsMember({"fixed", "uniform", "exponential", "random"}));
  app.add_option_function<std::string>(
         "--dataset-name", [&a](const std::string& name) { a.lengths = name; },
         "random: the random dataset of vllm bench serve / sglang.bench_serving (see --backend-bench); "
         "generated-shared-prefix: sglang.bench_serving's groups sharing a system prompt (--gsp-*)")
      ->check(CLI::IsMember({"random", "generated-shared-prefix"}))
      ->excludes(lengths);
  app.add_option("--gsp-num-groups", a.gsp_num_groups, "generated-shared-prefix: groups (64)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--gsp-prompts-per-group", a.gsp_prompts_per_group, "generated-shared-prefix: prompts per group (16)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--gsp-system-prompt-len", a.gsp_system_prompt_len, "generated-shared-prefix: shared tokens (2048)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--gsp-question-len", a.gsp_question_len, "generated-shared-prefix: own tokens (128)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--gsp-output-len", a.gsp_output_len, "generated-shared-prefix: output tokens (256)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--gsp-range-ratio", a.gsp_range_ratio, "generated-shared-prefix: lengths from [len x r, len] (1)");
  app.add_flag("--gsp-ordered", a.gsp_ordered, "generated-shared-prefix: keep the groups in order (no shuffle)");
  app.add_option("--random-range-ratio", a.range_ratio, "random dataset: the length range (vLLM and SGLang differ)");
  app.add_option("--random-prefix-len", a.prefix_len, "random dataset (vLLM): tokens before every prompt")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--backend-bench", a.bench, "whose random dataset: vllm or sglang (default: the engine's)")
      ->check(CLI::IsMember({"vllm", "sglang"}));
  app.add_option("--seed", a.seed, "random seed");
}

Runner addServeSimCommand(CLI::App& app, const GlobalOptions& global) {
  auto f = std::make_shared<ServeFlags>();
  app.add_option("--hardware", f->scenario.hardware, "hardware profile id")->required();
  app.add_option("--model", f->scenario.models, "model id")->required();
  app.add_option("--engine", f->scenario.engines, "engine id")->required();
  app.add_option("--backend", f->scenario.backend, "engine:NAME (default: the engine's own choice)");
  app.add_option("--trace", f->trace, "trace file: Azure CSV, Mooncake JSONL or arrival_s,prompt_tokens,output_tokens");
  addArrivalFlags(app, f->arrivals, true);
  app.add_option("--max-concurrency", f->client.max_concurrency,
                 "closed loop: at most N requests in flight (the benchmarks' --max-concurrency)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--warmup-requests", f->warmup_requests, "requests run before the benchmark, outside its metrics")
      ->check(CLI::Range(0, 10000));
  app.add_flag("--ignore-eos", f->ignore_eos, "outputs run to their length (serve-sim always does: see docs)");
  app.add_option("--write-trace", f->write_trace, "also write the requests as arrival_s,prompt_tokens,output_tokens");
  app.add_option("--db", f->db, "study file: also store the run (aggregates, requests, timeline)");
  auto* ttft = app.add_option("--slo-ttft-ms", f->slo_ttft_ms, "SLO on time to first token")->check(positiveNumber());
  auto* tpot = app.add_option("--slo-tpot-ms", f->slo_tpot_ms, "SLO on time per output token")->check(positiveNumber());
  app.add_option("--goodput", f->goodput, "goodput targets as vllm bench serve takes them: ttft:MS tpot:MS e2el:MS")
      ->excludes(ttft)
      ->excludes(tpot);
  f->scenario.addServing(app);
  app.add_option("--cuda-graph", f->scenario.cuda_graph, "on or off")->check(CLI::IsMember({"on", "off"}));
  const CLI::Option* bench = app.get_option("--backend-bench");
  return [&global, f, bench]() {
    // The random dataset follows the engine's own benchmark unless --backend-bench names one.
    if (bench->count() == 0) f->arrivals.bench = f->scenario.engines == "sglang" ? "sglang" : "vllm";
    return runServeSim(global, *f);
  };
}

}  // namespace attnsim::cli
