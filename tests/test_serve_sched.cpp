// serve-sim: the engines' schedulers. SGLang admits by a new-token ratio and retracts decoding
// requests when the pool runs out; vLLM preempts the newest running request by recompute.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "TestSupport.hpp"
#include "core/Error.hpp"
#include "simulator/PrefixCache.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

StepTime schedStep(const Workload& w) {
  double us = 1000;
  for (const auto& g : w.groups)
    us += static_cast<double>(g.count) * (10.0 * static_cast<double>(g.q_len) + 0.01 * static_cast<double>(g.context));
  return {us, GraphMode::Eager};
}

// SGLang's scheduler on a small pool: separate prefill and decode steps, page 1, retraction.
SchedulerConfig sglangLike(std::int64_t kv_tokens, double init, double min) {
  SchedulerConfig c;
  c.max_batched_tokens = 8192;
  c.max_running_requests = 256;
  c.kv_tokens = kv_tokens;
  c.page_size = 1;
  c.mixed_batches = false;
  c.preemption = Preemption::Retract;
  NewTokenRatioAdmission n;
  n.init = init;
  n.min = min;
  n.decay = (init - min) / 600;
  c.new_token_ratio = n;
  return c;
}

std::vector<ServeRequest> burst(std::int64_t n, std::int64_t prompt, std::int64_t output) {
  ArrivalSpec a;
  a.rate = 1000;
  a.requests = n;
  a.lengths = "uniform";
  a.prompt_tokens = prompt;
  a.output_tokens = output;
  return generateRequests(a);
}

TEST(SglangScheduler, RetractionNeverDropsARequest) {
  const auto requests = burst(400, 512, 256);
  const ServeResult r = simulateServing(requests, sglangLike(16384, 0.7, 0.098), schedStep, {});
  EXPECT_GT(r.preemptions, 0);  // the pool ran out and requests were retracted
  EXPECT_EQ(r.completed, 400);
  EXPECT_EQ(r.rejected, 0);
  std::int64_t outputs = 0;
  for (const auto& q : requests) outputs += q.output_tokens;
  EXPECT_EQ(r.total_output_tokens, outputs);
  for (const auto& o : r.requests) EXPECT_GE(o.finish_s, o.first_token_s);
}

TEST(SglangScheduler, RetractionTakesTheRequestWithFewestOutputTokens) {
  // A starts alone; B joins once A has about 60 tokens. Both need 215 tokens and the pool holds 350:
  // when it runs out, B (fewer outputs) gives its KV back, A never does.
  const std::vector<ServeRequest> requests = {{0.0, 16, 200}, {0.06, 16, 200}};
  const ServeResult r = simulateServing(requests, sglangLike(350, 0.1, 0.1), schedStep, {});
  ASSERT_EQ(r.completed, 2);
  EXPECT_EQ(r.requests[0].preemptions, 0);
  EXPECT_GE(r.requests[1].preemptions, 1);
  EXPECT_LT(r.requests[1].scheduled_s, r.requests[0].finish_s);  // B was admitted beside A
  EXPECT_GT(r.requests[1].finish_s, r.requests[0].finish_s);
}

TEST(SglangScheduler, AmongEqualOutputsRetractionTakesTheLongestPromptNotTheNewest) {
  // A (64-token prompt) and B (16) start in one prefill step and decode in lockstep; admission clips
  // outputs at 10 tokens, so both fit at first and the 400-token pool runs out near token 160. SGLang
  // retracts the longer prompt, A, though B is the newest (the one vLLM's rule would take).
  SchedulerConfig c = sglangLike(400, 0.1, 0.1);
  c.new_token_ratio->clip_max_new_tokens = 10;
  const std::vector<ServeRequest> requests = {{0.0, 64, 200}, {0.0, 16, 200}};
  const ServeResult r = simulateServing(requests, c, schedStep, {});
  ASSERT_EQ(r.completed, 2);
  EXPECT_DOUBLE_EQ(r.requests[0].scheduled_s, r.requests[1].scheduled_s);
  EXPECT_GE(r.requests[0].preemptions, 1);
  EXPECT_EQ(r.requests[1].preemptions, 0);
}

TEST(SglangScheduler, AtRatioOneAdmissionReservesEveryOutputSoNothingIsRetracted) {
  const auto requests = burst(300, 512, 256);
  const ServeResult r = simulateServing(requests, sglangLike(16384, 1.0, 1.0), schedStep, {});
  EXPECT_EQ(r.completed, 300);
  EXPECT_EQ(r.preemptions, 0);
  // The optimistic default admits more at once, and pays for it in retractions.
  const ServeResult eager = simulateServing(requests, sglangLike(16384, 0.7, 0.098), schedStep, {});
  std::int64_t peak = 0, peak_eager = 0;
  for (const auto& p : r.timeline) peak = std::max(peak, p.running);
  for (const auto& p : eager.timeline) peak_eager = std::max(peak_eager, p.running);
  EXPECT_GT(peak_eager, peak);
  EXPECT_GT(eager.preemptions, 0);
}

TEST(SglangScheduler, WithoutTheRatioAnEnginePreemptsByRecompute) {
  // The same burst under vLLM's rule: the newest running request is preempted, none lost.
  SchedulerConfig c = sglangLike(16384, 0.7, 0.098);
  c.preemption = Preemption::Recompute;
  c.new_token_ratio.reset();
  const ServeResult r = simulateServing(burst(400, 512, 256), c, schedStep, {});
  EXPECT_EQ(r.completed, 400);
  EXPECT_GT(r.preemptions, 0);
}

TEST(SglangScheduler, EngineDataChoosesRetractionForSglangAndRecomputeForVllm) {
  const Scenario vllm = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  const ServeSetup v = serveSetup(test::defaultCatalog(), vllm);
  EXPECT_EQ(v.scheduler.preemption, Preemption::Recompute);
  EXPECT_FALSE(v.scheduler.new_token_ratio.has_value());
  Scenario sglang = test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  const ServeSetup s = serveSetup(test::defaultCatalog(), sglang);
  EXPECT_EQ(s.scheduler.preemption, Preemption::Retract);
  ASSERT_TRUE(s.scheduler.new_token_ratio.has_value());
  EXPECT_DOUBLE_EQ(s.scheduler.new_token_ratio->init, 0.7);
  EXPECT_NEAR(s.scheduler.new_token_ratio->min, 0.7 * 0.14, 1e-12);
  EXPECT_NEAR(s.scheduler.new_token_ratio->decay, (0.7 - 0.098) / 600, 1e-12);
}

TEST(SglangScheduler, ScheduleConservativenessScalesTheRatioUpToOne) {
  Scenario s = test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  s.engine_options["schedule_conservativeness"] = "0.3";
  EXPECT_NEAR(serveSetup(test::defaultCatalog(), s).scheduler.new_token_ratio->init, 0.21, 1e-12);
  s.engine_options["schedule_conservativeness"] = "2";
  EXPECT_DOUBLE_EQ(serveSetup(test::defaultCatalog(), s).scheduler.new_token_ratio->init, 1.0);
  s.engine_options["schedule_conservativeness"] = "1";
  s.engine_options["enable_dp_attention"] = "true";
  s.engine_options["dp_size"] = "2";
  s.tp = 2;  // DP attention: ServerArgs._handle_data_parallelism scales conservativeness by 0.3
  EXPECT_NEAR(serveSetup(test::defaultCatalog(), s).scheduler.new_token_ratio->init, 0.21, 1e-12);
  for (const char* bad : {"0", "-1", "abc", "1.5x"}) {
    s.engine_options["schedule_conservativeness"] = bad;
    EXPECT_THROW((void)serveSetup(test::defaultCatalog(), s), UsageError) << bad;
  }
}

// vLLM's scheduler: mixed batches, 16-token blocks, recompute preemption.
SchedulerConfig vllmLike(std::int64_t kv_tokens, bool caching) {
  SchedulerConfig c;
  c.max_batched_tokens = 8192;
  c.max_running_requests = 256;
  c.kv_tokens = kv_tokens;
  c.page_size = 16;
  c.prefix_caching = caching;
  return c;
}

std::vector<ServeRequest> sharing(std::int64_t prefix, std::int64_t group, double rate = 4) {
  ArrivalSpec a;
  a.rate = rate;
  a.requests = 300;
  a.prompt_tokens = 2048;
  a.output_tokens = 32;
  std::vector<ServeRequest> out = generateRequests(a);
  for (auto& r : out) {
    r.prefix_tokens = prefix;
    r.prefix_group = group;
  }
  return out;
}

TEST(PrefixCaching, LowersTtftOnlyOnSharedPrefixes) {
  const auto shared = sharing(1536, 0);
  const ServeResult on = simulateServing(shared, vllmLike(1 << 20, true), schedStep, {});
  const ServeResult off = simulateServing(shared, vllmLike(1 << 20, false), schedStep, {});
  EXPECT_LT(on.ttft.mean, 0.5 * off.ttft.mean);  // three quarters of every prompt after the first is cached
  EXPECT_EQ(on.completed, 300);
  const auto own = sharing(0, -1);  // nothing shared: caching changes nothing
  const ServeResult own_on = simulateServing(own, vllmLike(1 << 20, true), schedStep, {});
  const ServeResult own_off = simulateServing(own, vllmLike(1 << 20, false), schedStep, {});
  EXPECT_DOUBLE_EQ(own_on.ttft.mean, own_off.ttft.mean);
  EXPECT_EQ(own_on.steps, own_off.steps);
}

TEST(PrefixCaching, VllmReusesWholeBlocksOnly) {
  // A 15-token prefix fills no 16-token block: nothing to reuse. At 16 it is one block.
  const auto partial = sharing(15, 0);
  EXPECT_DOUBLE_EQ(simulateServing(partial, vllmLike(1 << 20, true), schedStep, {}).ttft.mean,
                   simulateServing(partial, vllmLike(1 << 20, false), schedStep, {}).ttft.mean);
  const auto block = sharing(16, 0);
  EXPECT_LT(simulateServing(block, vllmLike(1 << 20, true), schedStep, {}).ttft.mean,
            simulateServing(block, vllmLike(1 << 20, false), schedStep, {}).ttft.mean);
}

TEST(PrefixCaching, ASharedPrefixOccupiesThePoolOnce) {
  const auto shared = sharing(1536, 0, 40);  // several in flight at once
  const ServeResult on = simulateServing(shared, vllmLike(1 << 20, true), schedStep, {});
  const ServeResult off = simulateServing(shared, vllmLike(1 << 20, false), schedStep, {});
  EXPECT_LT(on.peak_kv_use, off.peak_kv_use);
  EXPECT_LT(on.mean_kv_use, off.mean_kv_use);
}

TEST(PrefixCaching, RetractionAndEvictionUnderATightPoolDropNothing) {
  ArrivalSpec a;
  a.lengths = "generated-shared-prefix";
  a.gsp_num_groups = 8;
  a.gsp_prompts_per_group = 25;
  a.gsp_system_prompt_len = 1024;
  a.gsp_question_len = 256;
  a.gsp_output_len = 256;
  a.gsp_range_ratio = 0.5;
  a.rate = 1000;
  const auto requests = generateRequests(a);
  SchedulerConfig c = sglangLike(12000, 0.7, 0.098);
  c.prefix_caching = true;
  const ServeResult r = simulateServing(requests, c, schedStep, {});
  EXPECT_EQ(r.completed, 200);
  EXPECT_GT(r.preemptions, 0);
  std::int64_t outputs = 0;
  for (const auto& q : requests) outputs += q.output_tokens;
  EXPECT_EQ(r.total_output_tokens, outputs);
  // The pool ends holding only cached prefixes, at most one per group.
  EXPECT_LE(r.timeline.back().kv_used_tokens, 8 * 1024 + 256 + 256);
}

TEST(SharedPrefixDataset, GroupsShareTheirSystemPromptAsSglangBenchServingMakesThem) {
  ArrivalSpec a;
  a.lengths = "generated-shared-prefix";
  a.gsp_num_groups = 4;
  a.gsp_prompts_per_group = 5;
  a.rate = std::numeric_limits<double>::infinity();
  const auto exact = generateRequests(a);  // range ratio 1: every length as given
  ASSERT_EQ(exact.size(), 20U);
  std::vector<int> per_group(4, 0);
  for (const auto& r : exact) {
    EXPECT_EQ(r.prompt_tokens, 2048 + 128);
    EXPECT_EQ(r.prefix_tokens, 2048);
    EXPECT_EQ(r.output_tokens, 256);
    ASSERT_GE(r.prefix_group, 0);
    ++per_group[static_cast<std::size_t>(r.prefix_group)];
  }
  for (const int n : per_group) EXPECT_EQ(n, 5);
  a.gsp_ordered = true;
  a.gsp_range_ratio = 0.5;
  const auto ordered = generateRequests(a);
  for (std::size_t i = 1; i < ordered.size(); ++i) {
    EXPECT_GE(ordered[i].prefix_group, ordered[i - 1].prefix_group);
    if (ordered[i].prefix_group == ordered[i - 1].prefix_group) {
      EXPECT_EQ(ordered[i].prefix_tokens, ordered[i - 1].prefix_tokens);
    }
    EXPECT_GE(ordered[i].prefix_tokens, 1024);
    EXPECT_LE(ordered[i].prefix_tokens, 2048);
  }
  a.gsp_range_ratio = 1.5;
  EXPECT_THROW((void)generateRequests(a), UsageError);
}

TEST(SharedPrefixDataset, VllmRandomPrefixIsOneGroup) {
  ArrivalSpec a;
  a.lengths = "random";
  a.prefix_len = 100;
  a.requests = 10;
  for (const auto& r : generateRequests(a)) {
    EXPECT_EQ(r.prefix_group, 0);
    EXPECT_EQ(r.prefix_tokens, 100);
    EXPECT_GT(r.prompt_tokens, 100);
  }
}

TEST(PrefixCaching, EngineOptionsTurnItOff) {
  Scenario v = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  EXPECT_TRUE(serveSetup(test::defaultCatalog(), v).scheduler.prefix_caching);
  v.engine_options["enable_prefix_caching"] = "false";
  EXPECT_FALSE(serveSetup(test::defaultCatalog(), v).scheduler.prefix_caching);
  Scenario s = test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  EXPECT_TRUE(serveSetup(test::defaultCatalog(), s).scheduler.prefix_caching);
  s.engine_options["disable_radix_cache"] = "true";
  EXPECT_FALSE(serveSetup(test::defaultCatalog(), s).scheduler.prefix_caching);
}

TEST(PrefixCaching, ServeSimTakesTheSharedPrefixDatasetFlags) {
  const auto out = test::runAttnsim(
      "--json serve-sim --engine sglang --hardware h100-sxm --model llama-3.1-8b --dataset-name "
      "generated-shared-prefix --gsp-num-groups 4 --gsp-prompts-per-group 8 --gsp-system-prompt-len 1024 "
      "--gsp-question-len 64 --gsp-output-len 16 --request-rate inf --max-concurrency 8");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto j = nlohmann::json::parse(out.output);
  EXPECT_EQ(j["completed"], 32);
  const auto bad = test::runAttnsim(
      "serve-sim --engine sglang --hardware h100-sxm --model llama-3.1-8b --dataset-name generated-shared-prefix "
      "--gsp-range-ratio 2");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

// vllm bench serve --dataset-name sonnet: every prompt input_len tokens, its first prefix_len shared by all.
TEST(SonnetDataset, EveryPromptIsInputLenWithOneSharedPrefixAndOutputLenOutputs) {
  ArrivalSpec a;
  a.lengths = "sonnet";
  a.requests = 12;
  a.rate = std::numeric_limits<double>::infinity();
  const auto defaults = generateRequests(a);
  ASSERT_EQ(defaults.size(), 12U);
  for (const auto& r : defaults) {
    EXPECT_EQ(r.prompt_tokens, 550);  // vLLM's DEFAULT_INPUT_LEN, DEFAULT_PREFIX_LEN, DEFAULT_OUTPUT_LEN
    EXPECT_EQ(r.prefix_tokens, 200);
    EXPECT_EQ(r.prefix_group, 0);
    EXPECT_EQ(r.output_tokens, 150);
    EXPECT_EQ(r.arrival_s, 0.0);
  }
  a.sonnet_prefix_len = 0;
  for (const auto& r : generateRequests(a)) EXPECT_EQ(r.prefix_tokens, 0);
  a.sonnet_prefix_len = 600;  // more than the prompt: vLLM's sampler would never accept one
  EXPECT_THROW((void)generateRequests(a), UsageError);
}

TEST(SonnetDataset, ServeSimTakesTheSonnetFlagsAndItsSharedPrefixIsCached) {
  const std::string base =
      "--json serve-sim --engine vllm --hardware h100-sxm --model llama-3.1-8b --num-prompts 32 --request-rate inf "
      "--max-concurrency 8 --dataset-name sonnet --sonnet-input-len 1024 --sonnet-output-len 32";
  const auto shared = test::runAttnsim(base + " --sonnet-prefix-len 768");
  ASSERT_EQ(shared.exit_code, 0) << shared.output;
  const auto none = test::runAttnsim(base + " --sonnet-prefix-len 0");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  const auto j_shared = nlohmann::json::parse(shared.output), j_none = nlohmann::json::parse(none.output);
  EXPECT_EQ(j_shared["completed"], 32);
  EXPECT_EQ(j_shared["total_input_tokens"], 32 * 1024);
  EXPECT_EQ(j_shared["total_output_tokens"], 32 * 32);
  // With vLLM's prefix caching on, the shared 768 tokens are computed once: the first token comes sooner.
  EXPECT_LT(j_shared["ttft_ms"]["mean"].get<double>(), j_none["ttft_ms"]["mean"].get<double>());
  const auto bad = test::runAttnsim(
      "serve-sim --engine vllm --hardware h100-sxm --model llama-3.1-8b --dataset-name sonnet --sonnet-input-len 100 "
      "--sonnet-prefix-len 200");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--sonnet-prefix-len 200: at most --sonnet-input-len (100)"), std::string::npos)
      << bad.output;
}

}  // namespace
TEST(PrefixCacheEviction, TheLeastRecentEntryGivesUpPagesFromItsTailOneAtATime) {
  PrefixCache cache;
  cache.keep(-2, 10, /*tick=*/1);  // older
  cache.keep(-3, 6, /*tick=*/5);
  EXPECT_EQ(cache.evictable(), 16);
  EXPECT_EQ(cache.evict(4), 4);  // four pages off the older entry's tail, the rest stays cached
  EXPECT_EQ(cache.pages(-2), 6);
  EXPECT_EQ(cache.pages(-3), 6);
  EXPECT_EQ(cache.evict(8), 8);  // the older one's last six, then two of the newer
  EXPECT_EQ(cache.pages(-2), 0);
  EXPECT_EQ(cache.pages(-3), 4);
  cache.acquire(-3);  // in use: not evictable
  EXPECT_EQ(cache.evict(4), 0);
  cache.release(-3, 9);
  EXPECT_EQ(cache.drop(-3), 4);
  EXPECT_EQ(cache.evictable(), 0);
}

// Long prompts whose chunks overrun a pool that holds one of them and part of the next: the next is
// preempted while it prefills, as on one GPU serving 32k-token prompts.
std::vector<ServeRequest> longPrompts() { return {{0, 800, 40}, {0, 800, 40}, {0, 800, 40}}; }

SchedulerConfig tightVllm(bool keep) {
  SchedulerConfig c = vllmLike(1000, true);
  c.max_batched_tokens = 128;
  c.keep_preempted_pages = keep;
  c.admit_after_preemption = false;  // vLLM's: only the kept pages differ
  return c;
}

std::int64_t computedTokens(const ServeResult& r) {
  std::int64_t n = 0;
  for (const auto& p : r.timeline) n += p.batch_tokens;
  return n;
}

TEST(VllmPreemption, ARecomputeStartsFromThePagesItKeptCachedSoLessIsComputedAgain) {
  const ServeResult kept = simulateServing(longPrompts(), tightVllm(true), schedStep, {});
  const ServeResult lost = simulateServing(longPrompts(), tightVllm(false), schedStep, {});
  for (const ServeResult* r : {&kept, &lost}) {
    EXPECT_EQ(r->completed, 3);
    EXPECT_EQ(r->total_output_tokens, 120);
    EXPECT_GT(r->preemptions, 0);
  }
  // Every prompt once and every decode once, plus what preemptions threw away.
  const std::int64_t once = 3 * 800 + 3 * 39;
  EXPECT_GE(computedTokens(lost), once);
  EXPECT_GE(computedTokens(kept), once);
  EXPECT_LT(computedTokens(kept) - once, computedTokens(lost) - once);
  EXPECT_LT(kept.makespan_s, lost.makespan_s);
  // Nothing but the cache of finished requests' prefixes is left: own pages go with their request.
  EXPECT_EQ(kept.timeline.back().kv_used_tokens, lost.timeline.back().kv_used_tokens);
}

TEST(VllmPreemption, AStepThatPreemptedAdmitsNoWaitingRequest) {
  // Admitting in the step that preempted hands the preempted request its chunk straight back: more
  // wasted prefill than waiting a step, as vLLM does.
  SchedulerConfig hold = tightVllm(false);
  SchedulerConfig admit = tightVllm(false);
  admit.admit_after_preemption = true;
  const ServeResult held = simulateServing(longPrompts(), hold, schedStep, {});
  const ServeResult admitted = simulateServing(longPrompts(), admit, schedStep, {});
  EXPECT_EQ(held.completed, 3);
  EXPECT_EQ(admitted.completed, 3);
  EXPECT_GT(admitted.preemptions, held.preemptions);
}

TEST(VllmPreemption, WithoutPrefixCachingNothingIsKept) {
  SchedulerConfig off = tightVllm(true);
  off.prefix_caching = false;
  SchedulerConfig plain = tightVllm(false);
  plain.prefix_caching = false;
  const ServeResult a = simulateServing(longPrompts(), off, schedStep, {});
  const ServeResult b = simulateServing(longPrompts(), plain, schedStep, {});
  EXPECT_EQ(computedTokens(a), computedTokens(b));
  EXPECT_EQ(a.steps, b.steps);
}

TEST(VllmPreemption, EngineDataKeepsPreemptedPagesAndHoldsAdmissionForVllmOnly) {
  const ServeSetup v = serveSetup(test::defaultCatalog(), test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b"));
  EXPECT_TRUE(v.scheduler.keep_preempted_pages);
  EXPECT_FALSE(v.scheduler.admit_after_preemption);
  const ServeSetup s = serveSetup(test::defaultCatalog(), test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b"));
  EXPECT_FALSE(s.scheduler.keep_preempted_pages);
  EXPECT_TRUE(s.scheduler.admit_after_preemption);
}

}  // namespace attnsim
