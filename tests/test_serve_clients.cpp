// serve-sim as the benchmarks drive it: closed-loop clients (--max-concurrency, --rate inf), the
// `random` datasets of vllm bench serve and sglang.bench_serving, and the engines' scheduler limits
// given as --option.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "TestSupport.hpp"
#include "core/Error.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

// A fixed part per step plus a part per token and per unit of context (as test_serve_sim.cpp).
StepTime clientStep(const Workload& w) {
  double us = 1000;
  for (const auto& g : w.groups)
    us += static_cast<double>(g.count) * (10.0 * static_cast<double>(g.q_len) + 0.01 * static_cast<double>(g.context));
  return {us, GraphMode::Eager};
}

SchedulerConfig clientConfig() {
  SchedulerConfig c;
  c.max_batched_tokens = 8192;
  c.max_running_requests = 256;
  c.kv_tokens = 1 << 22;
  c.page_size = 16;
  return c;
}

ArrivalSpec allAtOnce(std::int64_t n) { return test::exponentialLoad(std::numeric_limits<double>::infinity(), n); }

std::int64_t peakInSystem(const ServeResult& r) {
  std::int64_t peak = 0;
  for (const auto& p : r.timeline) peak = std::max(peak, p.running + p.waiting);
  return peak;
}

TEST(ServeClients, RateInfSendsEveryRequestAtTimeZero) {
  const auto requests = generateRequests(allAtOnce(100));
  for (const auto& r : requests) EXPECT_EQ(r.arrival_s, 0.0);
}

TEST(ServeClients, ClosedLoopThroughputIsConcurrencyOverMeanE2E) {
  const ServeResult r = simulateServing(generateRequests(allAtOnce(4000)), clientConfig(), clientStep, {}, {16});
  EXPECT_LE(peakInSystem(r), 16);
  EXPECT_NEAR(r.requests_per_s, 16 / r.e2e.mean, 0.02 * r.requests_per_s);
  // Little's law on the engine's queue: the time-average number in the system is λ W (about 16).
  EXPECT_NEAR(r.time_avg_in_system, r.requests_per_s * r.e2e.mean, 0.01 * r.time_avg_in_system);
  EXPECT_NEAR(r.time_avg_in_system, 16, 0.5);
}

TEST(ServeClients, RateInfAtConcurrencyOneServesRequestsOneAfterAnother) {
  const auto requests = generateRequests(allAtOnce(40));
  const ServeResult r = simulateServing(requests, clientConfig(), clientStep, {}, {1});
  double sum = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ServeRequest alone = requests[i];
    alone.arrival_s = 0;
    const ServeResult single = simulateServing({alone}, clientConfig(), clientStep, {});
    EXPECT_NEAR(r.requests[i].e2e(), single.requests[0].e2e(), 1e-9) << i;
    sum += single.requests[0].e2e();
  }
  EXPECT_NEAR(r.makespan_s, sum, 1e-9);
  EXPECT_NEAR(r.queueing.max, 0, 1e-12);  // nobody queues in the engine
}

TEST(ServeClients, ConcurrencyLimitWithARateDelaysSendsButNeverAdvancesThem) {
  ArrivalSpec a = allAtOnce(500);
  a.rate = 200;  // far above what 4 slots carry
  const auto requests = generateRequests(a);
  const ServeResult open = simulateServing(requests, clientConfig(), clientStep, {});
  const ServeResult closed = simulateServing(requests, clientConfig(), clientStep, {}, {4});
  EXPECT_LE(peakInSystem(closed), 4);
  EXPECT_GT(peakInSystem(open), 4);
  for (std::size_t i = 0; i < requests.size(); ++i) EXPECT_GE(closed.requests[i].arrival_s, requests[i].arrival_s);
  EXPECT_LT(closed.ttft.p99, open.ttft.p99);  // the wait happens in the client, outside TTFT
}

TEST(ServeClients, MaxRunningRequestsCapsTheRunningBatch) {
  SchedulerConfig c = clientConfig();
  c.max_running_requests = 8;
  const ServeResult r = simulateServing(generateRequests(allAtOnce(200)), c, clientStep, {});
  std::int64_t peak = 0;
  for (const auto& p : r.timeline) peak = std::max(peak, p.running);
  EXPECT_EQ(peak, 8);
}

TEST(ServeClients, WithoutChunkedPrefillAPromptRunsWholeInOneStep) {
  SchedulerConfig c = clientConfig();
  c.max_batched_tokens = 1024;
  const std::vector<ServeRequest> one{{0, 3000, 4}};
  const double whole = clientStep(Workload::uniform(Phase::Prefill, 1, 3000, 3000)).us * 1e-6;
  const ServeResult chunked = simulateServing(one, c, clientStep, {});
  EXPECT_GT(chunked.requests[0].ttft(), whole);  // three chunks of 1000 tokens, three fixed costs
  c.chunked_prefill = false;
  const ServeResult unchunked = simulateServing(one, c, clientStep, {});
  EXPECT_NEAR(unchunked.requests[0].ttft(), whole, 1e-12);
  // Two prompts that together exceed the budget run in separate steps.
  const ServeResult two = simulateServing({{0, 800, 1}, {0, 800, 1}}, c, clientStep, {});
  EXPECT_GT(two.requests[1].ttft(), two.requests[0].ttft());
}

TEST(ServeClients, BenchmarkMetricsFollowTheirDefinitions) {
  const ServeResult r = simulateServing(generateRequests(allAtOnce(300)), clientConfig(), clientStep, {}, {8});
  EXPECT_EQ(r.completed, 300);
  EXPECT_NEAR(r.total_tokens_per_s, static_cast<double>(r.total_input_tokens + r.total_output_tokens) / r.makespan_s,
              1e-9);
  for (const auto& o : r.requests) {
    if (o.output_tokens > 1) {
      EXPECT_NEAR(o.tpot(), (o.e2e() - o.ttft()) / static_cast<double>(o.output_tokens - 1), 1e-12);
    }
  }
}

TEST(ServeClients, GoodputCountsRequestsThatMeetEveryNamedTarget) {
  const auto requests = generateRequests(allAtOnce(400));
  const ServeResult base = simulateServing(requests, clientConfig(), clientStep, {}, {8});
  const double none = std::numeric_limits<double>::infinity();
  const double e2e_target = base.e2e.p50;
  const ServeResult r = simulateServing(requests, clientConfig(), clientStep, {none, none, e2e_target}, {8});
  std::int64_t meet = 0;
  for (const auto& o : r.requests) meet += o.e2e() <= e2e_target ? 1 : 0;
  EXPECT_GT(meet, 0);
  EXPECT_LT(meet, 400);
  EXPECT_NEAR(r.goodput_rps * r.makespan_s, static_cast<double>(meet), 1e-6);
  const auto bad = test::runAttnsim(
      "serve-sim --engine vllm --hardware h100-sxm --model llama-3.1-8b --requests 5 --goodput e2e:100");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("ttft, tpot or e2el"), std::string::npos) << bad.output;
}

TEST(RandomDataset, VllmAndSglangDrawFromTheirOwnRanges) {
  ArrivalSpec a;
  a.requests = 4000;
  a.lengths = "random";
  a.prompt_tokens = 1000;
  a.output_tokens = 100;
  a.range_ratio = 0.5;
  auto span = [&](const std::vector<ServeRequest>& rs) {
    std::int64_t lo = 1 << 30, hi = 0, olo = 1 << 30, ohi = 0;
    for (const auto& r : rs) {
      lo = std::min(lo, r.prompt_tokens);
      hi = std::max(hi, r.prompt_tokens);
      olo = std::min(olo, r.output_tokens);
      ohi = std::max(ohi, r.output_tokens);
    }
    return std::array<std::int64_t, 4>{lo, hi, olo, ohi};
  };
  a.bench = "vllm";  // [len (1 - r), len (1 + r)]
  EXPECT_EQ(span(generateRequests(a)), (std::array<std::int64_t, 4>{500, 1500, 50, 150}));
  a.prefix_len = 200;
  EXPECT_EQ(span(generateRequests(a))[0], 700);
  a.prefix_len = 0;
  a.bench = "sglang";  // [len r, len]
  EXPECT_EQ(span(generateRequests(a)), (std::array<std::int64_t, 4>{500, 1000, 50, 100}));
  a.range_ratio = 0;  // SGLang's default: anywhere from 1 token to len
  const auto wide = span(generateRequests(a));
  EXPECT_LE(wide[0], 5);
  EXPECT_EQ(wide[1], 1000);
  EXPECT_EQ(randomLengthRange("sglang", 100, 0, true).low, 0);  // drawn as 0, run as 1
}

TEST(RandomDataset, RatiosTheBenchmarksRefuseAreUsageErrors) {
  ArrivalSpec a;
  a.lengths = "random";
  a.range_ratio = 1.0;
  EXPECT_THROW((void)generateRequests(a), UsageError);  // vLLM: [0, 1)
  a.bench = "sglang";
  EXPECT_NO_THROW((void)generateRequests(a));
  a.prefix_len = 10;
  EXPECT_THROW((void)generateRequests(a), UsageError);  // SGLang's random has no prefix
}

TEST(EngineSchedulerOptions, VllmLimitsReachTheScheduler) {
  Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  const ServeSetup defaults = serveSetup(test::defaultCatalog(), s);
  EXPECT_EQ(defaults.scheduler.max_running_requests, 1024);
  EXPECT_EQ(defaults.scheduler.max_batched_tokens, 8192);
  EXPECT_TRUE(defaults.scheduler.chunked_prefill);
  s.engine_options["max_num_seqs"] = "64";
  s.engine_options["max_num_batched_tokens"] = "4096";
  const ServeSetup set = serveSetup(test::defaultCatalog(), s);
  EXPECT_EQ(set.scheduler.max_running_requests, 64);
  EXPECT_EQ(set.scheduler.max_batched_tokens, 4096);
  s.engine_options.clear();
  s.engine_options["enable_chunked_prefill"] = "false";
  const ServeSetup unchunked = serveSetup(test::defaultCatalog(), s);
  EXPECT_FALSE(unchunked.scheduler.chunked_prefill);
  EXPECT_GE(unchunked.scheduler.max_batched_tokens, unchunked.capacity.model->max_position_embeddings);
  // The profiling run over a larger budget leaves a smaller KV pool.
  EXPECT_LT(unchunked.scheduler.kv_tokens, defaults.scheduler.kv_tokens);
}

TEST(EngineSchedulerOptions, SglangLimitsReachTheScheduler) {
  Scenario s = test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  const ServeSetup defaults = serveSetup(test::defaultCatalog(), s);
  EXPECT_EQ(defaults.scheduler.max_batched_tokens, 8192);
  s.engine_options["max_running_requests"] = "32";
  s.engine_options["chunked_prefill_size"] = "-1";
  const ServeSetup set = serveSetup(test::defaultCatalog(), s);
  EXPECT_EQ(set.scheduler.max_running_requests, 32);
  EXPECT_FALSE(set.scheduler.chunked_prefill);
  EXPECT_EQ(set.scheduler.max_batched_tokens, 16384);    // max_prefill_tokens
  s.engine_options["schedule_conservativness"] = "0.3";  // misspelt: refused by name
  EXPECT_THROW((void)serveSetup(test::defaultCatalog(), s), UsageError);
}

// SGLang's graph flags reach the steps: --cuda-graph-max-bs bounds the decode batches replayed as graphs, and
// without piecewise graphs (the 0.5.x releases' default) prefill steps run eager.
TEST(EngineSchedulerOptions, SglangGraphFlagsDecideWhichStepsReplayAGraph) {
  const std::string run =
      "--json serve-sim --engine sglang --hardware h100-sxm --model llama-3.1-8b --dataset-name random "
      "--random-input-len 300 --random-output-len 64 --random-range-ratio 1 --num-prompts 20 --request-rate inf ";
  const auto steps = [&](const std::string& options) {
    const auto out = test::runAttnsim(run + options);
    EXPECT_EQ(out.exit_code, 0) << out.output;
    return nlohmann::json::parse(out.output);
  };
  const auto defaults = steps("");
  const auto eager_prefill = steps("--option disable_piecewise_cuda_graph=true");
  const auto small_graphs = steps("--option cuda_graph_max_bs=8");
  EXPECT_GT(defaults["piecewise_steps"].get<std::int64_t>(), 0);
  EXPECT_EQ(eager_prefill["piecewise_steps"], 0);
  EXPECT_EQ(eager_prefill["full_graph_steps"], defaults["full_graph_steps"]);
  // 20 requests decode together: above a graph maximum of 8 those steps run eager.
  EXPECT_LT(small_graphs["full_graph_steps"].get<std::int64_t>(), defaults["full_graph_steps"].get<std::int64_t>());
}

TEST(EngineSchedulerOptions, ServeSimCommandTakesTheBenchmarkFlags) {
  const auto out = test::runAttnsim(
      "--json serve-sim --engine vllm --hardware h100-sxm --model llama-3.1-8b --option max_num_seqs=4 "
      "--dataset-name random --random-input-len 256 --random-output-len 16 --random-range-ratio 0.5 "
      "--num-prompts 40 --request-rate inf --max-concurrency 8 --warmup-requests 2 --ignore-eos");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto j = nlohmann::json::parse(out.output);
  EXPECT_EQ(j["completed"], 40);
  EXPECT_EQ(j["max_running_requests"], 4);
  EXPECT_EQ(j["max_concurrency"], 8);
  EXPECT_EQ(j["warmup_requests"], 2);
  std::int64_t peak = 0;
  for (const auto& p : j["timeline"]) peak = std::max(peak, p["running"].get<std::int64_t>());
  EXPECT_EQ(peak, 4);
}

}  // namespace
}  // namespace attnsim
