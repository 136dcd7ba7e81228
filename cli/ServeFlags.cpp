// serve-sim's flags and the run they describe (shared by serve-sim and report serving).
#include "cli/ServeFlags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/Error.hpp"
#include "simulator/GoodputTargets.hpp"

namespace attnsim::cli {

// The SLO: --goodput as `vllm bench serve` reads it (vllm/benchmarks/serve.py parse_goodput: a request is
// good when it meets every target named; the unnamed are not checked), else --slo-ttft-ms / --slo-tpot-ms.
ServeSlo sloOf(const ServeFlags& f) {
  if (f.goodput.empty()) return {f.slo_ttft_ms / 1e3, f.slo_tpot_ms / 1e3, std::numeric_limits<double>::infinity()};
  return goodputSlo(f.goodput, "--goodput");
}

CLI::Validator rateOrInf() {
  return {[](const std::string& text) -> std::string {
            if (text == "inf") return {};
            return positiveNumber()(text);
          },
          "NUMBER > 0 or inf"};
}

namespace {

// A length in tokens, as the benchmarks' length flags take it.
void addTokensOption(CLI::App& app, const std::string& name, std::int64_t& tokens, const std::string& help,
                     std::int64_t least = 1) {
  app.add_option(name, tokens, help)->check(CLI::Range(least, std::int64_t{1} << 24));
}

}  // namespace

void addArrivalFlags(CLI::App& app, ArrivalSpec& a, bool rate_inf) {
  app.add_option("--rate,--request-rate", a.rate,
                 rate_inf ? "generated arrivals: requests per second, or inf (all at t = 0)"
                          : "generated arrivals: requests per second")
      ->check(rate_inf ? rateOrInf() : positiveNumber());
  app.add_option("--requests,--num-prompts", a.requests, "generated arrivals: how many")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--arrival", a.process, "poisson or gamma")->check(CLI::IsMember({"poisson", "gamma"}));
  app.add_option("--cv", a.cv, "gamma arrivals: coefficient of variation of the gaps")->check(positiveNumber());
  addTokensOption(app, "--prompt-len,--random-input-len", a.prompt_tokens, "mean prompt tokens");
  addTokensOption(app, "--output-len,--random-output-len", a.output_tokens, "mean output tokens");
  auto* lengths = app.add_option("--lengths", a.lengths, "fixed, uniform, exponential or random (--dataset-name)")
                      ->check(CLI::IsMember({"fixed", "uniform", "exponential", "random"}));
  app.add_option_function<std::string>(
         "--dataset-name", [&a](const std::string& name) { a.lengths = name; },
         "random: the random dataset of vllm bench serve / sglang.bench_serving (see --backend-bench); "
         "generated-shared-prefix: sglang.bench_serving's groups sharing a system prompt (--gsp-*); "
         "sonnet: vllm bench serve's poem lines, one shared prefix (--sonnet-*)")
      ->check(CLI::IsMember({"random", "generated-shared-prefix", "sonnet"}))
      ->excludes(lengths);
  addTokensOption(app, "--sonnet-input-len", a.sonnet_input_len, "sonnet: prompt tokens (550)");
  addTokensOption(app, "--sonnet-output-len", a.sonnet_output_len, "sonnet: output tokens (150)");
  addTokensOption(app, "--sonnet-prefix-len", a.sonnet_prefix_len, "sonnet: prompt tokens every request shares (200)",
                  0);
  app.add_option("--gsp-num-groups", a.gsp_num_groups, "generated-shared-prefix: groups (64)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--gsp-prompts-per-group", a.gsp_prompts_per_group, "generated-shared-prefix: prompts per group (16)")
      ->check(CLI::Range(1, 1 << 20));
  addTokensOption(app, "--gsp-system-prompt-len", a.gsp_system_prompt_len,
                  "generated-shared-prefix: shared tokens (2048)");
  addTokensOption(app, "--gsp-question-len", a.gsp_question_len, "generated-shared-prefix: own tokens (128)");
  addTokensOption(app, "--gsp-output-len", a.gsp_output_len, "generated-shared-prefix: output tokens (256)");
  app.add_option("--gsp-range-ratio", a.gsp_range_ratio, "generated-shared-prefix: lengths from [len x r, len] (1)");
  app.add_flag("--gsp-ordered", a.gsp_ordered, "generated-shared-prefix: keep the groups in order (no shuffle)");
  app.add_option("--random-range-ratio", a.range_ratio, "random dataset: the length range (vLLM and SGLang differ)");
  addTokensOption(app, "--random-prefix-len", a.prefix_len, "random dataset (vLLM): tokens before every prompt", 0);
  app.add_option("--backend-bench", a.bench,
                 "whose benchmark: its random dataset and its client (vllm or sglang; default: the engine's)")
      ->check(CLI::IsMember({"vllm", "sglang"}));
  app.add_option("--seed", a.seed, "random seed");
}

namespace {

// SGLang's and vLLM's speculative-decoding flags, spelled as their servers take them.
void addSpeculativeFlags(CLI::App& app, ServeFlags& f) {
  auto* sglang = app.add_option("--speculative-algorithm", f.speculative_algorithm,
                                "SGLang: EAGLE, EAGLE3 or NEXTN (the model's MTP layer)")
                     ->transform(CLI::IsMember({"eagle", "eagle3", "nextn"}, CLI::ignore_case));
  app.add_option("--speculative-num-steps", f.speculative_num_steps, "SGLang: draft steps per decode step")
      ->check(CLI::Range(1, 64));
  app.add_option("--speculative-eagle-topk", f.speculative_eagle_topk, "SGLang: draft tree branching (1: a chain)")
      ->check(CLI::Range(1, 64));
  app.add_option("--speculative-num-draft-tokens", f.speculative_num_draft_tokens,
                 "SGLang: tokens verified per request (topk 1: num_steps + 1)")
      ->check(CLI::Range(2, 1024));
  app.add_option("--speculative-config", f.speculative_config,
                 "vLLM: JSON with method (eagle, eagle3, mtp, deepseek_mtp) and num_speculative_tokens")
      ->excludes(sglang);
  app.add_option("--spec-accept-length", f.spec_accept_length,
                 "speculative decoding: mean tokens a verify step emits per request, the bonus token included")
      ->check(positiveNumber());
}

// vLLM's --speculative-config, the keys serve-sim reads: method, num_speculative_tokens, and model
// (the draft checkpoint, whose shape serve-sim takes from the method).
void readSpeculativeConfig(const std::string& text, SpecDecoding& spec) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("--speculative-config {}: not JSON ({})", text, e.what()));
  }
  if (!j.is_object()) throw UsageError(fmt::format("--speculative-config {}: expected a JSON object", text));
  for (const auto& [key, value] : j.items()) {
    if (key == "method" && value.is_string()) {
      const auto method = value.get<std::string>();
      if (method != "eagle" && method != "eagle3" && method != "mtp" && method != "deepseek_mtp") {
        throw UsageError(
            fmt::format("--speculative-config method '{}': serve-sim runs eagle, eagle3, mtp and "
                        "deepseek_mtp",
                        method));
      }
      spec.algorithm = method == "deepseek_mtp" ? "mtp" : method;
    } else if (key == "num_speculative_tokens" && value.is_number_integer()) {
      spec.num_steps = value.get<std::int64_t>();
    } else if (key != "model") {
      throw UsageError(
          fmt::format("--speculative-config key '{}' ({}): serve-sim reads method (a string), "
                      "num_speculative_tokens (an integer) and model",
                      key, value.dump()));
    }
  }
  if (!spec.algorithm) throw UsageError(fmt::format("--speculative-config {}: give \"method\"", text));
  spec.topk = 1;
}

}  // namespace

Scenario serveScenarioOf(const ServeFlags& f) {
  Scenario s = f.scenario.scenario(f.scenario.hardware, f.scenario.models, f.scenario.engines);
  if (f.speculative_config) readSpeculativeConfig(*f.speculative_config, s.spec);
  if (f.speculative_algorithm)
    s.spec.algorithm = *f.speculative_algorithm == "nextn" ? "mtp" : *f.speculative_algorithm;
  if (f.speculative_num_steps) s.spec.num_steps = f.speculative_num_steps;
  if (f.speculative_eagle_topk) s.spec.topk = f.speculative_eagle_topk;
  if (f.speculative_num_draft_tokens) s.spec.draft_tokens = f.speculative_num_draft_tokens;
  if (f.spec_accept_length) s.spec.accept_length = f.spec_accept_length;
  return s;
}

void addServeFlags(CLI::App& app, ServeFlags& f) {
  app.add_option("--hardware", f.scenario.hardware, "hardware profile id")->required();
  app.add_option("--model", f.scenario.models, "model id")->required();
  app.add_option("--engine", f.scenario.engines, "engine id")->required();
  app.add_option("--backend", f.scenario.backend, "engine:NAME (default: the engine's own choice)");
  app.add_option("--trace", f.trace, "trace file: Azure CSV, Mooncake JSONL or arrival_s,prompt_tokens,output_tokens");
  addArrivalFlags(app, f.arrivals, true);
  app.add_option("--max-concurrency", f.client.max_concurrency,
                 "closed loop: at most N requests in flight (the benchmarks' --max-concurrency)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--warmup-requests", f.warmup_requests, "requests run before the benchmark, outside its metrics")
      ->check(CLI::Range(0, 10000));
  app.add_flag("--ignore-eos", f.ignore_eos, "outputs run to their length (serve-sim always does: see docs)");
  app.add_option("--write-trace", f.write_trace, "also write the requests as arrival_s,prompt_tokens,output_tokens");
  app.add_option("--db", f.db, "study file: also store the run (aggregates, requests, timeline)");
  auto* ttft = app.add_option("--slo-ttft-ms", f.slo_ttft_ms, "SLO on time to first token")->check(positiveNumber());
  auto* tpot = app.add_option("--slo-tpot-ms", f.slo_tpot_ms, "SLO on time per output token")->check(positiveNumber());
  app.add_option("--goodput", f.goodput, "goodput targets as vllm bench serve takes them: ttft:MS tpot:MS e2el:MS")
      ->excludes(ttft)
      ->excludes(tpot);
  f.scenario.addServing(app);
  app.add_option("--cuda-graph", f.scenario.cuda_graph, "on or off")->check(CLI::IsMember({"on", "off"}));
  addSpeculativeFlags(app, f);
}

void finishServeFlags(const CLI::App& app, ServeFlags& f) {
  // The random dataset and the client follow the engine's own benchmark unless --backend-bench names one.
  if (app.get_option("--backend-bench")->count() == 0)
    f.arrivals.bench = f.scenario.engines == "sglang" ? "sglang" : "vllm";
}

ServeOutcome simulateServe(const Catalog& c, const ServeFlags& f) {
  ServeOutcome out;
  out.requests = f.trace.empty() ? generateRequests(f.arrivals) : readTrace(f.trace);
  const ServeBenchmark bench{out.requests, sloOf(f),        f.client,        f.warmup_requests,
                             f.ignore_eos, f.trace.empty(), f.arrivals.bench};
  out.bench = runServeBenchmark(c, serveScenarioOf(f), bench);
  return out;
}

}  // namespace attnsim::cli
