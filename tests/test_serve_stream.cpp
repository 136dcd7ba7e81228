// The token path outside the engine core (simulator/ServeSim.hpp SerialStage): the engine's front end and
// the benchmark client are each one serial loop that handles every request on its way in and every
// streamed chunk on its way out. A loop slower than the steps delays tokens in proportion to the streams;
// with few streams it adds only its own path to the first token.
#include <gtest/gtest.h>

#include <limits>

#include "TestSupport.hpp"
#include "catalog/Catalog.hpp"
#include "simulator/ServeBenchmark.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

constexpr double kStepUs = 10000;

// A synthetic engine: every step takes 10 ms on the GPU, nothing on the CPU.
StepTime tenMsStep(const Workload&) {
  StepTime t;
  t.gpu_us = kStepUs;
  t.us = kStepUs;
  return t;
}

SchedulerConfig roomyScheduler() {
  SchedulerConfig c;
  c.kv_tokens = 1 << 24;
  c.max_running_requests = 4096;
  c.max_batched_tokens = 1 << 20;
  return c;
}

// `n` requests sent together, 10-token prompts and 40-token outputs: one prefill step, then 39 decode steps.
std::vector<ServeRequest> burst(std::size_t n) { return std::vector<ServeRequest>(n, ServeRequest{0, 10, 40}); }

TEST(ServeStream, AFrontEndSlowerThanTheStepDelaysTokensInProportionToTheStreams) {
  SchedulerConfig c = roomyScheduler();
  c.frontend.per_chunk_us = 100;  // 100 streams' chunks take as long as a step
  const double free_itl = simulateServing(burst(400), roomyScheduler(), tenMsStep, {}).itl.mean;
  EXPECT_NEAR(free_itl, kStepUs * 1e-6, 1e-12);
  // Fewer streams than a step's worth: tokens come at the step's pace.
  EXPECT_NEAR(simulateServing(burst(50), c, tenMsStep, {}).itl.mean, kStepUs * 1e-6, 1e-9);
  // More: at the front end's, one chunk per stream each round, so the interval grows with the streams.
  for (const std::size_t n : {200, 400, 800}) {
    const ServeResult r = simulateServing(burst(n), c, tenMsStep, {});
    const double round = static_cast<double>(n) * c.frontend.per_chunk_us * 1e-6;
    EXPECT_NEAR(r.itl.mean, round, 0.01 * round) << n;
    EXPECT_NEAR(r.tpot.mean, round, 0.01 * round) << n;
    // The engine ran at its pace; the benchmark ends when the client has the last token.
    EXPECT_NEAR(r.makespan_s, static_cast<double>(n * 40) * c.frontend.per_chunk_us * 1e-6, 0.02 * r.makespan_s) << n;
  }
}

TEST(ServeStream, TheClientsLoopFollowsTheFrontEndsAndTheSlowerSetsThePace) {
  ServeClient client;
  client.loop.per_chunk_us = 150;
  SchedulerConfig c = roomyScheduler();
  c.frontend.per_chunk_us = 100;
  const ServeResult r = simulateServing(burst(200), c, tenMsStep, {}, client);
  EXPECT_NEAR(r.itl.mean, 200 * 150e-6, 0.01 * 200 * 150e-6);
}

TEST(ServeStream, WithFewStreamsTheFrontEndAddsOnlyItsPerRequestPathToTtft) {
  ArrivalSpec a;
  a.rate = 0.01;  // one request every 100 s on average: never two in flight
  a.requests = 20;
  a.prompt_tokens = 500;
  a.output_tokens = 10;
  SchedulerConfig c = roomyScheduler();
  c.frontend = {800, 40};
  c.tokenizer_window = {2000, 32};
  ServeClient client;
  client.loop = {450, 19};
  const ServeResult r = simulateServing(generateRequests(a), c, tenMsStep, {}, client);
  // The first step's path: the client sends, the front end takes the request in, the request alone waits
  // the tokenizer's whole window, the step, then the chunk through the front end and the client.
  const double path = (450 + 800 + 2000 + kStepUs + 40 + 19) * 1e-6;
  for (const RequestOutcome& o : r.requests) EXPECT_NEAR(o.ttft(), path, 1e-9);
  // Later tokens: each loop keeps up with the steps, so they come at the step's pace.
  EXPECT_NEAR(r.tpot.mean, kStepUs * 1e-6, 1e-9);
}

// The tokenizer's micro-batch window (vLLM's AsyncMicrobatchTokenizer): requests that reach it within the
// window of the first go on together when it closes; one more than the window holds opens the next.
TEST(ServeStream, RequestsThatReachTheTokenizerWithinOneWindowGoOnTogether) {
  std::vector<ServeRequest> requests;
  for (const double ms : {0.0, 0.4, 0.8, 1.2, 1.6, 2.4}) requests.push_back({ms * 1e-3, 10, 3});
  const auto firstTokens = [&](double wait_us, std::int64_t max_requests) {
    SchedulerConfig c = roomyScheduler();
    c.tokenizer_window = {wait_us, max_requests};
    std::vector<double> out;
    for (const RequestOutcome& o : simulateServing(requests, c, tenMsStep, {}).requests) {
      out.push_back(o.first_token_s);
    }
    return out;
  };
  const double step = kStepUs * 1e-6;
  // Room for 32: the first five share the window that closes at 2 ms and prefill in the step after it; the
  // sixth comes after it closed and waits for its own (4.4 ms), then for the engine (busy to 12 ms).
  const std::vector<double> roomy = firstTokens(2000, 32);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(roomy[i], 2e-3 + step, 1e-9) << i;
  EXPECT_NEAR(roomy[5], 2e-3 + 2 * step, 1e-9);
  // Room for 4: the fifth opens a window of its own (closing at 3.6 ms) that the sixth joins.
  const std::vector<double> four = firstTokens(2000, 4);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(four[i], 2e-3 + step, 1e-9) << i;
  EXPECT_NEAR(four[4], 2e-3 + 2 * step, 1e-9);
  EXPECT_NEAR(four[5], 2e-3 + 2 * step, 1e-9);
  // No window: the first prefills at once.
  EXPECT_NEAR(firstTokens(0, 1)[0], step, 1e-9);
}

// Little's law with both loops: a request on its way in, in the engine, or done but with chunks still on
// their way out is in the system.
TEST(ServeStream, LittlesLawHoldsWithTheFrontEndAndTheClient) {
  SchedulerConfig c = roomyScheduler();
  c.frontend = {800, 60};
  c.tokenizer_window = {2000, 32};
  ServeClient client;
  client.loop = {450, 40};
  const ServeResult r = simulateServing(generateRequests(test::exponentialLoad(20, 3000)), c, tenMsStep, {}, client);
  const double lambda = static_cast<double>(r.requests.size()) / r.makespan_s;
  EXPECT_NEAR(r.time_avg_in_system, lambda * r.e2e.mean, 0.05 * lambda * r.e2e.mean);
}

// A synthetic engine whose every step takes 3 ms: the closed loop's requests turn over quickly.
StepTime threeMsStep(const Workload&) {
  StepTime t;
  t.gpu_us = 3000;
  t.us = 3000;
  return t;
}

// The closed loop: a slot frees when the client has read the last chunk, so throughput is still
// concurrency over mean E2E and the client's requests are always in the system.
TEST(ServeStream, ClosedLoopLawsHoldWithTheFrontEndAndTheClient) {
  SchedulerConfig c = roomyScheduler();
  c.frontend = {800, 60};
  ServeClient client{64, {450, 40}};  // 64 streams' chunks (3.8 ms at the front end) outlast a 3 ms step
  // Fixed lengths: no long output left alone at the end to hold fewer than 64 in flight for long.
  ArrivalSpec a = test::exponentialLoad(std::numeric_limits<double>::infinity(), 8000);
  a.lengths = "fixed";
  const ServeResult r = simulateServing(generateRequests(a), c, threeMsStep, {}, client);
  EXPECT_GT(r.tpot.mean, 1.1 * 3e-3);  // the loops set the pace, not the 3 ms step
  EXPECT_NEAR(r.requests_per_s, 64 / r.e2e.mean, 0.02 * r.requests_per_s);
  EXPECT_NEAR(r.time_avg_in_system, r.requests_per_s * r.e2e.mean, 0.01 * r.time_avg_in_system);
  EXPECT_NEAR(r.time_avg_in_system, 64, 1.0);
}

// A request sent while the client's loop is busy with chunks waits for it: the burst of a rate-inf run is
// sent one request after another.
TEST(ServeStream, TheClientSendsABurstOneRequestAtATime) {
  ServeClient client;
  client.loop.per_request_us = 500;
  const ServeResult r = simulateServing(burst(100), roomyScheduler(), tenMsStep, {}, client);
  const ServeResult free = simulateServing(burst(100), roomyScheduler(), tenMsStep, {});
  EXPECT_GT(r.ttft.max, free.ttft.max + 99 * 500e-6 - 1e-9);
}

TEST(ServeStream, VllmsBenchmarkClientIsTheMeasuredOneAndSglangHasNone) {
  const Catalog& cat = test::defaultCatalog();
  const SerialStage vllm = benchmarkClientOf(cat, "vllm");
  EXPECT_DOUBLE_EQ(vllm.per_request_us, 450);
  EXPECT_DOUBLE_EQ(vllm.per_chunk_us, 19);
  EXPECT_FALSE(benchmarkClientOf(cat, "sglang").costs());
}

// vLLM's API server tokenizes through the micro-batch window from v0.10 on (V1), except gpt-oss's chat
// prompts, which Harmony renders into token ids.
TEST(ServeStream, VllmsTokenizerWindowAppliesToItsReleasesThatHaveIt) {
  const auto windowUs = [](const std::string& model, const std::string& option) {
    Scenario s = test::engineScenario("vllm", "h100-sxm", model);
    if (const auto eq = option.find('='); eq != std::string::npos) {
      s.engine_options[option.substr(0, eq)] = option.substr(eq + 1);
    }
    return serveSetup(test::defaultCatalog(), s).scheduler.tokenizer_window.wait_us;
  };
  EXPECT_DOUBLE_EQ(windowUs("llama-3.1-8b", ""), 2000);
  EXPECT_DOUBLE_EQ(windowUs("llama-3.1-8b", "tokenizer_microbatch=false"), 0);
  EXPECT_DOUBLE_EQ(windowUs("llama-3.1-8b", "engine_core=v0.5"), 0);
  EXPECT_DOUBLE_EQ(windowUs("gpt-oss-20b", ""), 0);
  EXPECT_DOUBLE_EQ(serveSetup(test::defaultCatalog(), test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b"))
                       .scheduler.tokenizer_window.wait_us,
                   0);
}

TEST(ServeStream, TheBenchmarkNamedByBackendBenchChargesItsClient) {
  const Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  ServeBenchmark b;
  for (int i = 0; i < 5; ++i) b.requests.push_back({100.0 * i, 1000, 8});  // never two in flight
  const ServeBenchmarkRun free = runServeBenchmark(test::defaultCatalog(), s, b);
  b.client_of = "vllm";
  const ServeBenchmarkRun charged = runServeBenchmark(test::defaultCatalog(), s, b);
  const SerialStage loop = benchmarkClientOf(test::defaultCatalog(), "vllm");
  EXPECT_DOUBLE_EQ(charged.client.per_chunk_us, loop.per_chunk_us);
  EXPECT_FALSE(free.client.costs());
  // At low load the client adds its own path to the first token: sending the request, reading the chunk.
  for (std::size_t i = 0; i < b.requests.size(); ++i) {
    EXPECT_NEAR(charged.run.result.requests[i].ttft() - free.run.result.requests[i].ttft(),
                (loop.per_request_us + loop.per_chunk_us) * 1e-6, 1e-9);
  }
  EXPECT_NEAR(charged.run.result.tpot.mean, free.run.result.tpot.mean, 1e-9);
}

}  // namespace
}  // namespace attnsim
