// serve-sim: the scheduler's laws on a synthetic step timer, the trace readers, and the engine run.
#include <gtest/gtest.h>

#include <cmath>

#include "TestSupport.hpp"
#include "core/Error.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

// A step costs a fixed part plus a part per token and per unit of context: enough structure for
// the laws, and exact to reason about.
StepTime linearStep(const Workload& w) {
  double us = 1000;
  for (const auto& g : w.groups)
    us += static_cast<double>(g.count) * (10.0 * static_cast<double>(g.q_len) + 0.01 * static_cast<double>(g.context));
  return {us, GraphMode::Eager};
}

SchedulerConfig config(std::int64_t kv_tokens = 1 << 20) {
  SchedulerConfig c;
  c.max_batched_tokens = 8192;
  c.max_running_requests = 256;
  c.kv_tokens = kv_tokens;
  c.page_size = 16;
  return c;
}

TEST(ServeSim, AtVeryLowLoadTtftIsThePrefillStep) {
  ArrivalSpec a;
  a.rate = 0.01;  // one request every 100 s on average: never two in flight
  a.requests = 20;
  a.prompt_tokens = 2000;
  a.output_tokens = 10;
  const ServeResult r = simulateServing(generateRequests(a), config(), linearStep, {});
  const double prefill_s = linearStep(Workload::uniform(Phase::Prefill, 1, 2000, 2000)).us * 1e-6;
  EXPECT_NEAR(r.ttft.p50, prefill_s, 1e-12);
  EXPECT_NEAR(r.ttft.max, prefill_s, 1e-12);
  EXPECT_NEAR(r.queueing.max, 0, 1e-12);
  // Each later token is one decode step over the growing context.
  EXPECT_NEAR(r.tpot.p50, linearStep(Workload::uniform(Phase::Decode, 1, 1, 2005)).us * 1e-6, 1e-7);
}

TEST(ServeSim, LittlesLawHoldsOnTheSimulatedQueue) {
  const ServeResult r = simulateServing(generateRequests(test::exponentialLoad(20, 3000)), config(), linearStep, {});
  // L (time-average requests in the system, integrated step by step) = λ W.
  const double lambda = static_cast<double>(r.requests.size()) / r.makespan_s;
  EXPECT_NEAR(r.time_avg_in_system, lambda * r.e2e.mean, 0.05 * lambda * r.e2e.mean);
}

TEST(ServeSim, ThroughputSaturatesAtTheBatchTheKvCacheAllows) {
  // Each request holds 1024 prompt + up to 128 output tokens; a 32,768-token pool admits 32 prompts
  // and keeps about 28 whole requests, far below the 256 the scheduler would run.
  ArrivalSpec a;
  a.requests = 600;
  a.prompt_tokens = 1024;
  a.output_tokens = 128;
  auto run = [&](double rate) {
    a.rate = rate;
    return simulateServing(generateRequests(a), config(32768), linearStep, {});
  };
  const ServeResult light = run(1);
  EXPECT_NEAR(light.output_tokens_per_s, 128.0, 10.0);  // below saturation it carries the offered load
  const ServeResult heavy = run(1000);
  std::int64_t peak = 0;
  double running = 0;
  for (const auto& p : heavy.timeline) {
    peak = std::max(peak, p.running);
    running += static_cast<double>(p.running);
  }
  EXPECT_LE(peak, 32);
  EXPECT_GE(running / static_cast<double>(heavy.timeline.size()), 20);
  EXPECT_GE(heavy.peak_kv_use, 0.9);
  // Ten times the rate again does not raise throughput: the pool is the limit.
  const ServeResult heavier = run(10000);
  EXPECT_NEAR(heavier.output_tokens_per_s, heavy.output_tokens_per_s, 0.05 * heavy.output_tokens_per_s);
  EXPECT_GT(heavy.output_tokens_per_s, 5 * light.output_tokens_per_s);
}

TEST(ServeSim, PreemptsWhenDecodesOutgrowThePool) {
  ArrivalSpec a;
  a.rate = 1000;
  a.requests = 64;
  a.prompt_tokens = 256;
  a.output_tokens = 2048;
  const ServeResult r = simulateServing(generateRequests(a), config(16384), linearStep, {});
  EXPECT_GT(r.preemptions, 0);
  for (const auto& o : r.requests) EXPECT_GT(o.finish_s, o.first_token_s);  // every request still finishes
}

TEST(ServeSim, RequestsThatCanNeverFitArerejected) {
  std::vector<ServeRequest> reqs{{0, 100, 10}, {0.1, 40000, 10}};
  const ServeResult r = simulateServing(reqs, config(32768), linearStep, {});
  EXPECT_EQ(r.rejected, 1);
  EXPECT_GT(r.requests[0].finish_s, 0);
}

TEST(Traces, ReadsAzureMooncakeAndPlainFormats) {
  const auto azure = parseTrace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 "
      "18:15:50.9951690,396,109\n",
      "azure.csv");
  ASSERT_EQ(azure.size(), 2U);
  EXPECT_NEAR(azure[1].arrival_s, 4.314579, 1e-6);
  EXPECT_EQ(azure[1].prompt_tokens, 396);
  const auto moon = parseTrace(
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 3}\n"
      "{\"timestamp\": 3500, \"input_length\": 20, \"output_length\": 4}\n",
      "m.jsonl");
  EXPECT_NEAR(moon[1].arrival_s, 2.5, 1e-12);
  const auto plain = parseTrace("arrival_s,prompt_tokens,output_tokens\n0.5,10,2\n1.5,11,3\n", "p.csv");
  EXPECT_NEAR(plain[1].arrival_s, 1.0, 1e-12);
}

TEST(Traces, BadRowsAreReportedByFileAndLine) {
  auto message = [](const std::string& text, const std::string& name) {
    try {
      (void)parseTrace(text, name);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("arrival_s,prompt_tokens,output_tokens\n0,10,2\n1,x,2\n", "t.csv").find("t.csv:3"),
            std::string::npos);
  EXPECT_NE(message("arrival_s,prompt_tokens,output_tokens\n0,10\n", "t.csv").find("t.csv:2:1: expected 3 columns"),
            std::string::npos);
  EXPECT_NE(message("{\"timestamp\": 1}\n", "t.jsonl").find("t.jsonl:1:1: needs a number 'input_length'"),
            std::string::npos);
  EXPECT_NE(message("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,2\n", "a.csv").find("a.csv:2"),
            std::string::npos);
  EXPECT_NE(message("a,b,c\n", "x.csv").find("x.csv:1:1: unknown header"), std::string::npos);
  EXPECT_NE(message("arrival_s,prompt_tokens,output_tokens\n2,1,1\n1,1,1\n", "t.csv").find("back in time"),
            std::string::npos);
  const auto cli = test::runAttnsim("serve-sim --engine vllm --hardware h100-sxm --model llama-3.1-8b --trace " +
                                    std::string(ATTNSIM_TEST_DATA) + "/traces/bad_row.csv");
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.output.find("bad_row.csv:4"), std::string::npos) << cli.output;
}

TEST(Traces, GeneratedArrivalsHaveTheAskedRate) {
  ArrivalSpec a;
  a.rate = 5;
  a.requests = 20000;
  for (const char* process : {"poisson", "gamma"}) {
    a.process = process;
    a.cv = 2;
    const auto r = generateRequests(a);
    EXPECT_NEAR(r.back().arrival_s / static_cast<double>(r.size() - 1), 0.2, 0.01) << process;
  }
}

TEST(ServeRun, BuiltInTraceRunsOnTheEngineStepModel) {
  Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  const auto requests = readTrace(std::string(ATTNSIM_TEST_DATA) + "/traces/synthetic-chat-300.csv");
  const ServeRun run = serveScenario(test::defaultCatalog(), s, requests, {});
  EXPECT_EQ(run.result.requests.size(), 300U);
  EXPECT_EQ(run.result.rejected, 0);
  EXPECT_GT(run.result.output_tokens_per_s, 0);
  EXPECT_EQ(run.setup.scheduler.kv_tokens, capacityOf(test::defaultCatalog(), s).split.kv_tokens);
  // The first request meets an empty engine: its TTFT is the engine's prefill step for its prompt.
  const ServeRequest& first = requests.front();
  EXPECT_GT(run.result.requests.front().ttft(), 0);
  EXPECT_LT(run.result.requests.front().ttft(), 0.5 + 1e-3 * static_cast<double>(first.prompt_tokens));
}

TEST(ServeRun, TwoBatchesOfDifferentBucketsNeverShareAMemoEntry) {
  // One prefill chunk beside 8 decodes against three of the same length: the packed 64-bit key this
  // memo once used shifted the first group's count bits out and gave both the one step time.
  ServeSession session(test::defaultCatalog(), test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b"));
  Workload one{.phase = Phase::Extend, .groups = {{1, 200, 300}, {8, 1, 400}}, .padding = 0, .replica = {}};
  Workload three = one;
  three.groups[0].count = 3;
  EXPECT_LT(session.stepTime(one).gpu_us, session.stepTime(three).gpu_us);
}

TEST(ServeRun, MemoKeyBucketsAreExactToSixteenThenWithinFourPercent) {
  for (std::int64_t x = 0; x <= 16; ++x) EXPECT_EQ(BatchTimer::representative(BatchTimer::bucket(x)), x);
  for (std::int64_t x : {17, 100, 1000, 4096, 100000, 1 << 24}) {
    const auto rep = static_cast<double>(BatchTimer::representative(BatchTimer::bucket(x)));
    EXPECT_NEAR(rep / static_cast<double>(x), 1.0, 0.045) << x;
  }
}

}  // namespace
}  // namespace attnsim

#include "simulator/CapacitySearch.hpp"

namespace attnsim {
namespace {

TEST(CapacitySearch, FindsTheHighestRateWithinTheSloAndTheGpusForATarget) {
  ServeSession session(test::defaultCatalog(), test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b"));
  ArrivalSpec a;
  a.requests = 300;
  a.prompt_tokens = 1024;
  a.output_tokens = 128;
  const ServeSlo slo{2.0, 0.030};
  const RateSearch r = searchRate(session, a, slo);
  ASSERT_GT(r.max_rate, 0);
  EXPECT_TRUE(meetsSlo(r.at_max, slo));
  a.rate = r.max_rate * 1.02;  // just above: the SLO fails (the bisection stops within 1%)
  EXPECT_FALSE(meetsSlo(session.run(generateRequests(a), slo), slo));
  EXPECT_EQ(r.gpusFor(r.max_rate * 2.5, 2), 6);  // three replicas of TP 2
  EXPECT_EQ(r.gpusFor(r.max_rate, 1), 1);
  // A tighter TPOT target admits a lower rate.
  EXPECT_LT(searchRate(session, a, {2.0, 0.015}).max_rate, r.max_rate);
}

TEST(CapacitySearch, CommandReportsConfigurationsThatDoNotFit) {
  const auto out =
      test::runAttnsim("--json capacity search --hardware h100-sxm --model llama-3.1-405b --engine vllm --requests 50");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("leave no KV cache"), std::string::npos) << out.output;
}

}  // namespace
}  // namespace attnsim
