// serve-sim's per-step host work (cost/HostTime.hpp, serving.host in the engines' YAML): overlapped
// with the GPU a step takes the longer of the two, otherwise their sum, and after an idle engine the
// CPU work always precedes the GPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "TestSupport.hpp"
#include "catalog/Catalog.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

std::vector<Workload> hostLawBatches() {
  std::vector<Workload> out;
  for (const std::int64_t n : {1, 8, 64, 256, 1024}) out.push_back(Workload::uniform(Phase::Decode, n, 1, 2048));
  for (const std::int64_t t : {16, 512, 8192}) out.push_back(Workload::uniform(Phase::Prefill, 1, t, t));
  return out;
}

// `option` is KEY=VALUE of an engine option, or empty for the engine's defaults.
ServeSession hostSession(const std::string& engine, const std::string& option = {}) {
  Scenario s = test::engineScenario(engine, "h100-sxm", "llama-3.1-8b");
  if (const auto eq = option.find('='); eq != std::string::npos)
    s.engine_options[option.substr(0, eq)] = option.substr(eq + 1);
  return {test::defaultCatalog(), s};
}

TEST(ServeHost, AnOverlappedStepIsNeverShorterThanItsGpuOrItsHostTime) {
  for (const auto& [engine, option] :
       {std::pair<std::string, std::string>{"sglang", ""}, {"vllm", ""}, {"vllm", "async_scheduling=true"}}) {
    ServeSession session = hostSession(engine, option);
    for (const Workload& w : hostLawBatches()) {
      const StepTime t = session.stepTime(w);
      EXPECT_TRUE(t.overlapped) << engine;
      EXPECT_GT(t.host_us, 0) << engine;
      EXPECT_GE(t.us, t.gpu_us) << engine;
      EXPECT_GE(t.us, t.host_us) << engine;
      EXPECT_DOUBLE_EQ(t.us, std::max(t.gpu_us, t.host_us)) << engine;
      EXPECT_DOUBLE_EQ(t.fromIdleUs(), t.gpu_us + t.host_us) << engine;
    }
  }
}

TEST(ServeHost, WithoutOverlapTheHostAndGpuTimesAdd) {
  for (const auto& [engine, option] : {std::pair<std::string, std::string>{"vllm", "async_scheduling=false"},
                                       {"sglang", "disable_overlap_schedule=true"}}) {
    ServeSession session = hostSession(engine, option);
    for (const Workload& w : hostLawBatches()) {
      const StepTime t = session.stepTime(w);
      EXPECT_FALSE(t.overlapped) << engine;
      EXPECT_GT(t.host_us, 0) << engine;
      EXPECT_DOUBLE_EQ(t.us, t.gpu_us + t.host_us) << engine;
      EXPECT_DOUBLE_EQ(t.fromIdleUs(), t.us) << engine;
    }
  }
}

TEST(ServeHost, VllmsHostWorkGrowsByItsPerRequestPartWithTheBatch) {
  ServeSession session = hostSession("vllm");
  const HostStepCost& host = session.setup().host;
  ASSERT_GT(host.per_request_us, 0);
  const double one = session.stepTime(Workload::uniform(Phase::Decode, 1, 1, 2048)).host_us;
  const double many = session.stepTime(Workload::uniform(Phase::Decode, 256, 1, 2048)).host_us;
  EXPECT_NEAR(many - one, 255 * host.per_request_us, 1e-9);
  EXPECT_NEAR(one, host.fixed_us + host.per_request_us, 1e-9);
}

// A synthetic engine whose CPU work (3 ms) outlasts a decode step's GPU time (1 ms + a little per request).
StepTime hostBoundStep(const Workload& w) {
  StepTime t;
  t.gpu_us = 1000;
  for (const auto& g : w.groups) t.gpu_us += static_cast<double>(g.count) * 10.0 * static_cast<double>(g.q_len);
  t.host_us = 3000;
  t.overlapped = true;
  t.us = std::max(t.gpu_us, t.host_us);
  return t;
}

TEST(ServeHost, AtVeryLowLoadTtftIsTheFirstStepsWholePathAndLaterStepsOverlap) {
  ArrivalSpec a;
  a.rate = 0.01;  // one request every 100 s on average: never two in flight
  a.requests = 20;
  a.prompt_tokens = 500;
  a.output_tokens = 10;
  SchedulerConfig c;
  c.kv_tokens = 1 << 20;
  const ServeResult r = simulateServing(generateRequests(a), c, hostBoundStep, {});
  const StepTime prefill = hostBoundStep(Workload::uniform(Phase::Prefill, 1, 500, 500));
  // From an idle engine the CPU work precedes the GPU's: TTFT is their sum, not the longer one.
  EXPECT_NEAR(r.ttft.p50, (prefill.gpu_us + prefill.host_us) * 1e-6, 1e-12);
  EXPECT_GT(r.ttft.p50, prefill.us * 1e-6);
  // The decodes that follow run back to back: each takes the longer of the two (the host's 3 ms).
  EXPECT_NEAR(r.tpot.p50, 3e-3, 1e-12);
}

TEST(ServeHost, OnTheEngineTheLowLoadTtftIsThePrefillStepFromIdle) {
  for (const std::string engine : {"vllm", "sglang"}) {
    ServeSession session = hostSession(engine);
    std::vector<ServeRequest> requests(3);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      requests[i].arrival_s = 100.0 * static_cast<double>(i);
      requests[i].prompt_tokens = 1000;
      requests[i].output_tokens = 4;
    }
    const ServeResult r = session.run(requests, {});
    const StepTime first = session.stepTime(Workload::uniform(Phase::Prefill, 1, 1000, 1000));
    // The first token's path: the front end's per-request work and the tokenizer's window (a request alone
    // waits all of it), the prefill step from idle, the chunk out through the front end.
    const SchedulerConfig& c = session.setup().scheduler;
    const double path_us =
        c.frontend.per_request_us + c.tokenizer_window.wait_us + first.fromIdleUs() + c.frontend.per_chunk_us;
    for (const RequestOutcome& o : r.requests) EXPECT_NEAR(o.ttft(), path_us * 1e-6, 1e-9) << engine;
    EXPECT_GT(first.fromIdleUs(), first.gpu_us) << engine;
  }
}

// A synthetic engine whose every step takes 10 ms on the GPU and nothing on the CPU, overlapped or not: the
// two differ only in when the scheduler forms a step.
StepTime flatStep(bool overlapped) {
  StepTime t;
  t.gpu_us = 10000;
  t.us = 10000;
  t.overlapped = overlapped;
  return t;
}

// vLLM's async scheduling (two batches in flight: vllm/v1/executor/uniproc_executor.py max_concurrent_batches)
// and SGLang's event_loop_overlap form step n+1 while step n runs: a request sent during step n is received
// after it and first runs in step n+2, one step later than under a scheduler that forms each step after the last.
TEST(ServeHost, AnOverlappingSchedulerRunsARequestSentDuringAStepOneStepLater) {
  const std::vector<ServeRequest> requests{{0, 100, 50}, {0.0155, 100, 5}};  // the second comes mid-step
  SchedulerConfig c;
  c.kv_tokens = 1 << 20;
  const ServeResult plain = simulateServing(requests, c, [](const Workload&) { return flatStep(false); }, {});
  const ServeResult ahead = simulateServing(requests, c, [](const Workload&) { return flatStep(true); }, {});
  // Steps run 0-10, 10-20, 20-30 ms...: formed at 20 ms, the plain step takes it; the overlapped one was formed
  // at 10 ms, so it waits for the step formed at 20 ms, which runs 30-40 ms.
  EXPECT_NEAR(plain.requests[1].ttft(), 0.030 - 0.0155, 1e-12);
  EXPECT_NEAR(ahead.requests[1].ttft(), 0.040 - 0.0155, 1e-12);
  // The request that found the engine idle is not delayed.
  EXPECT_NEAR(ahead.requests[0].ttft(), plain.requests[0].ttft(), 1e-12);
}

// Little's law on an overlapping scheduler: a request sent but not yet seen by the scheduler is in the system.
TEST(ServeHost, LittlesLawHoldsUnderAnOverlappingScheduler) {
  SchedulerConfig c;
  c.kv_tokens = 1 << 20;
  const ServeResult r = simulateServing(generateRequests(test::exponentialLoad(20, 3000)), c, hostBoundStep, {});
  const double lambda = static_cast<double>(r.requests.size()) / r.makespan_s;
  EXPECT_NEAR(r.time_avg_in_system, lambda * r.e2e.mean, 0.05 * lambda * r.e2e.mean);
}

// The closed loop under an overlapping scheduler: the client's 16 requests are always in the system, those
// sent but not yet seen included, and throughput stays concurrency over mean E2E (E2E counts from the send).
TEST(ServeHost, ClosedLoopLawsHoldUnderAnOverlappingScheduler) {
  SchedulerConfig c;
  c.kv_tokens = 1 << 22;
  const ServeResult r =
      simulateServing(generateRequests(test::exponentialLoad(std::numeric_limits<double>::infinity(), 4000)), c,
                      hostBoundStep, {}, {16});
  EXPECT_NEAR(r.requests_per_s, 16 / r.e2e.mean, 0.02 * r.requests_per_s);
  EXPECT_NEAR(r.time_avg_in_system, r.requests_per_s * r.e2e.mean, 0.01 * r.time_avg_in_system);
  EXPECT_NEAR(r.time_avg_in_system, 16, 0.5);
}

// The engine core of the release (option engine_core) sets the per-step CPU work: V0 of v0.5.x processes the
// step's outputs in it (growing with the batch) and rebuilds its inputs every step; v0.6's asynchronous output
// processing takes the outputs off the step's path; V1 leaves a fraction of either. None of V0 overlaps the GPU.
TEST(ServeHost, LaterVllmEngineCoresGiveAShorterStepAtTheSameBatch) {
  const std::vector<std::int64_t> batches{1, 32, 256};
  std::vector<std::vector<double>> host;  // per core: v0.5, v0.6, v1
  for (const std::string core : {"v0.5", "v0.6", "v1"}) {
    ServeSession session = hostSession("vllm", "engine_core=" + core);
    host.emplace_back();
    for (const std::int64_t n : batches) {
      const StepTime t = session.stepTime(Workload::uniform(Phase::Decode, n, 1, 2048));
      if (core != "v1") {
        EXPECT_FALSE(t.overlapped) << core << " (async_scheduling is on by default, a V1 flag)";
        EXPECT_DOUBLE_EQ(t.us, t.gpu_us + t.host_us) << core;
      }
      host.back().push_back(t.host_us);
    }
  }
  for (std::size_t i = 0; i < batches.size(); ++i) {
    EXPECT_GT(host[0][i], host[1][i]) << "batch " << batches[i];
    EXPECT_GT(host[1][i], host[2][i]) << "batch " << batches[i];
  }
  // Only v0.5's output processing grows with the batch among the V0 terms.
  EXPECT_GT(host[0][2] - host[0][0], 100 * (host[1][2] - host[1][0]));
  EXPECT_DOUBLE_EQ(host[1][2], host[1][0]);
}

// V0's scheduler (engine_core v0.5, v0.6) as its defaults leave it: chunked prefill off up to a 32K
// max_model_len, whole prompts within max(max_model_len, 2048) tokens a step, 256 sequences, no prefix
// caching, and prefill steps apart from decode steps; above 32K chunked prefill comes on with a
// 512-token budget and mixed steps, as in V1.
TEST(VllmV0Scheduler, DefaultsFollowTheEngineCoreAndMaxModelLen) {
  const auto setupOf = [](const std::string& core, std::int64_t max_model_len) {
    Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
    s.engine_options["engine_core"] = core;
    s.engine_options["max_model_len"] = std::to_string(max_model_len);
    return serveSetup(test::defaultCatalog(), s).scheduler;
  };
  for (const std::string core : {"v0.5", "v0.6"}) {
    const SchedulerConfig shortCtx = setupOf(core, 2000);
    EXPECT_FALSE(shortCtx.chunked_prefill) << core;
    EXPECT_FALSE(shortCtx.mixed_batches) << core;
    EXPECT_FALSE(shortCtx.prefix_caching) << core;
    EXPECT_EQ(shortCtx.max_batched_tokens, 2048) << core;
    EXPECT_EQ(shortCtx.max_running_requests, 256) << core;
    EXPECT_EQ(setupOf(core, 16000).max_batched_tokens, 16000) << core;
    const SchedulerConfig longCtx = setupOf(core, 65536);
    EXPECT_TRUE(longCtx.chunked_prefill) << core;
    EXPECT_TRUE(longCtx.mixed_batches) << core;
    EXPECT_EQ(longCtx.max_batched_tokens, 512) << core;
  }
  const SchedulerConfig v1 = setupOf("v1", 2000);
  EXPECT_TRUE(v1.chunked_prefill);
  EXPECT_TRUE(v1.mixed_batches);
  EXPECT_TRUE(v1.prefix_caching);
  EXPECT_EQ(v1.max_running_requests, 1024);
}

// A burst under V0 without chunked prefill: every admissible request is prefilled (prefill-only steps,
// two 1,000-token prompts within the 2,048-token budget) before any decodes, so every first token comes
// before any request's second. V1 decodes the first prompts while it prefills the next.
TEST(VllmV0Scheduler, ABurstIsPrefilledBeforeAnyRequestDecodes) {
  const std::vector<ServeRequest> burst(64, ServeRequest{0, 1000, 2});
  const auto run = [&](const std::string& core) {
    Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
    s.engine_options["engine_core"] = core;
    s.engine_options["max_model_len"] = "2000";
    ServeSession session(test::defaultCatalog(), s);
    const ServeResult r = session.run(burst, {});
    double last_first = 0, first_second = std::numeric_limits<double>::infinity();
    for (const RequestOutcome& o : r.requests) {
      last_first = std::max(last_first, o.first_token_s);
      first_second = std::min(first_second, o.finish_s);  // two tokens: the second ends it
    }
    return std::pair{last_first, first_second};
  };
  const auto [v0_last_first, v0_first_second] = run("v0.5");
  EXPECT_LT(v0_last_first, v0_first_second);
  const auto [v1_last_first, v1_first_second] = run("v1");
  EXPECT_GT(v1_last_first, v1_first_second);
}

// V0 replays CUDA graphs for decode steps only: its prefill steps run eager where V1 replays piecewise graphs.
TEST(VllmV0Scheduler, PrefillStepsRunEagerAndDecodeStepsReplayGraphs) {
  const std::vector<ServeRequest> few(4, ServeRequest{0, 100, 20});  // a 400-token prefill
  for (const std::string core : {"v0.5", "v1"}) {
    Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
    s.engine_options["engine_core"] = core;
    ServeSession session(test::defaultCatalog(), s);
    const ServeResult r = session.run(few, {});
    EXPECT_GT(r.full_graph_steps, 0) << core;
    if (core == "v1") {
      EXPECT_GT(r.piecewise_steps, 0);
    } else {
      EXPECT_EQ(r.piecewise_steps, 0);
      EXPECT_LT(r.full_graph_steps, r.steps);
    }
  }
}

TEST(ServeHost, AnUnknownEngineCoreIsRefusedWithTheAllowedValues) {
  const auto run = test::runAttnsim(
      "serve-sim --engine vllm --hardware h100-sxm --model llama-3.1-8b --rate 5 --requests 20 --option "
      "engine_core=v0.4");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("v0.5"), std::string::npos) << run.output;
}

// The engines' input-copy term is the measured figure: the median of the pinned host-to-device rows.
TEST(ServeHost, TheInputCopyTermIsTheMeasuredMedian) {
  std::ifstream in(std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/h100/host_step.csv");
  ASSERT_TRUE(in) << "measurements/data/h100/host_step.csv";
  std::string line;
  std::getline(in, line);
  std::vector<double> pinned;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (cells.size() > 10 && cells[4] == "h2d" && cells[5] == "pinned") pinned.push_back(std::stod(cells[10]));
  }
  ASSERT_GE(pinned.size(), 5U);
  std::sort(pinned.begin(), pinned.end());
  const double median = pinned[pinned.size() / 2];
  for (const std::string engine : {"vllm", "sglang"}) {
    const auto& host = test::defaultCatalog().engine(engine).policy.serving->host;
    ASSERT_TRUE(host.has_value()) << engine;
    int found = 0;
    for (const HostWorkTerm& t : host->terms) {
      if (t.source.find("host_step.csv") == std::string::npos) continue;
      ++found;
      EXPECT_NEAR(t.fixed_us, median, 0.05 * median) << engine << ": " << t.what;
    }
    EXPECT_EQ(found, 1) << engine;
  }
}

// serve-sim answers the engine's host work and whether the option overlaps it, in text and JSON.
TEST(ServeHost, ServeSimAnswersTheHostWorkAndItsOverlap) {
  const std::string base = "serve-sim --engine sglang --hardware h100-sxm --model llama-3.1-8b --rate 5 --requests 20";
  for (const bool disabled : {false, true}) {
    const std::string option = disabled ? " --option disable_overlap_schedule=true" : "";
    const auto json_run = test::runAttnsim("--json " + base + option);
    ASSERT_EQ(json_run.exit_code, 0) << json_run.output;
    const auto j = nlohmann::json::parse(json_run.output);
    EXPECT_EQ(j["host"]["overlap"], !disabled);
    EXPECT_GT(j["host"]["fixed_us"].get<double>(), 0);
    EXPECT_GE(j["host"]["host_bound_steps"].get<std::int64_t>(), 0);
    const auto text = test::runAttnsim(base + option);
    ASSERT_EQ(text.exit_code, 0) << text.output;
    EXPECT_NE(text.output.find(disabled ? "added to the GPU's" : "under the GPU's"), std::string::npos) << text.output;
  }
}

}  // namespace
}  // namespace attnsim
