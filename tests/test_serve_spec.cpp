// serve-sim with speculative decoding: the laws on a synthetic step timer and on the engines' step model
// (drafter priced), and the engines' flags as serve-sim reads them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "TestSupport.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/ServeSpec.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

using nlohmann::json;

// A fixed part plus a part per token and per unit of context (as test_serve_sim.cpp's timer).
StepTime specLinearStep(const Workload& w) {
  double us = 1000;
  for (const auto& g : w.groups)
    us += static_cast<double>(g.count) * (10.0 * static_cast<double>(g.q_len) + 0.01 * static_cast<double>(g.context));
  return {us, GraphMode::Eager};
}

SchedulerConfig specConfig(std::optional<SpecDecodeConfig> spec) {
  SchedulerConfig c;
  c.kv_tokens = 1 << 20;
  c.spec = spec;
  return c;
}

SpecDecodeConfig chain(std::int64_t steps, double accept) {
  SpecDecodeConfig s;
  s.num_steps = steps;
  s.draft_tokens = steps + 1;
  s.accept_length = accept;
  return s;
}

std::vector<ServeRequest> specRequests(double rate, std::int64_t n, std::int64_t prompt, std::int64_t output,
                                       const std::string& lengths = "exponential") {
  ArrivalSpec a;
  a.rate = rate;
  a.requests = n;
  a.lengths = lengths;
  a.prompt_tokens = prompt;
  a.output_tokens = output;
  return generateRequests(a);
}

TEST(ServeSpec, EveryRequestEmitsExactlyItsOutputLengthWhateverTheAcceptance) {
  const auto requests = specRequests(30, 800, 300, 40);
  for (const double accept : {1.0, 1.7, 2.5, 3.3, 4.0}) {
    const ServeResult r = simulateServing(requests, specConfig(chain(3, accept)), specLinearStep, {});
    std::int64_t asked = 0;
    for (const auto& q : requests) asked += q.output_tokens;
    EXPECT_EQ(r.emitted_tokens, asked) << "accept " << accept;
    EXPECT_EQ(r.completed, static_cast<std::int64_t>(requests.size())) << "accept " << accept;
    for (const auto& o : r.requests) ASSERT_GE(o.finish_s, o.first_token_s) << "accept " << accept;
  }
}

TEST(ServeSpec, AVerifyEmitsTheAcceptanceLengthSoTpotIsItsStepOverTheAcceptance) {
  // One request at a time: each verify step emits 2.5 tokens on average (alternately 2 and 3).
  const std::vector<ServeRequest> one{{0, 1000, 201}};
  const ServeResult r = simulateServing(one, specConfig(chain(3, 2.5)), specLinearStep, {});
  const double verify_s = specLinearStep(Workload::uniform(Phase::Verify, 1, 4, 1104)).us * 1e-6;
  EXPECT_NEAR(r.tpot.mean, verify_s / 2.5, 0.02 * verify_s);
  // 200 tokens after the first in 80 verify steps (plus the prefill).
  EXPECT_EQ(r.steps, 81);
}

TEST(ServeSpec, LittlesLawHoldsUnderSpeculativeDecoding) {
  const ServeResult r = simulateServing(specRequests(20, 3000, 512, 64), specConfig(chain(3, 2.4)), specLinearStep, {});
  const double lambda = static_cast<double>(r.requests.size()) / r.makespan_s;
  EXPECT_NEAR(r.time_avg_in_system, lambda * r.e2e.mean, 0.05 * lambda * r.e2e.mean);
}

TEST(ServeSpec, VerifyingRequestsHoldTheirDraftSlotsInThePool) {
  // One request of 1000 + 100 tokens: a plain decode never holds more than its tokens; a verify of 8
  // tokens holds 7 slots beyond its last one.
  const std::vector<ServeRequest> one{{0, 1000, 100}};
  SchedulerConfig plain = specConfig(std::nullopt);
  plain.page_size = 1;
  SchedulerConfig spec = specConfig(chain(7, 1.0));
  spec.page_size = 1;
  const ServeResult a = simulateServing(one, plain, specLinearStep, {});
  const ServeResult b = simulateServing(one, spec, specLinearStep, {});
  std::int64_t peak_a = 0, peak_b = 0;
  for (const auto& p : a.timeline) peak_a = std::max(peak_a, p.kv_used_tokens);
  for (const auto& p : b.timeline) peak_b = std::max(peak_b, p.kv_used_tokens);
  EXPECT_EQ(peak_b - peak_a, 7);
}

// The engine's step model, with the drafter priced: Llama-3.1-8B on one H100 under vLLM.
ServeResult engineRun(std::optional<double> accept, std::int64_t steps = 3) {
  Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  if (accept) {
    s.spec.algorithm = "eagle3";
    s.spec.num_steps = steps;
    s.spec.accept_length = accept;
  }
  return serveScenario(test::defaultCatalog(), s, specRequests(4, 300, 1000, 200, "fixed"), {}).result;
}

TEST(ServeSpec, NothingAcceptedCostsMoreThanNoSpeculation) {
  const ServeResult off = engineRun(std::nullopt), none = engineRun(1.0);
  EXPECT_GT(none.tpot.mean, off.tpot.mean);
  EXPECT_EQ(none.emitted_tokens, off.emitted_tokens);
}

TEST(ServeSpec, AHigherAcceptanceLowersTpot) {
  const ServeResult off = engineRun(std::nullopt);
  double last = engineRun(1.0).tpot.mean;
  for (const double accept : {1.5, 2.5, 3.5}) {
    const double tpot = engineRun(accept).tpot.mean;
    EXPECT_LT(tpot, last) << "accept " << accept;
    last = tpot;
  }
  // 3.5 of 4 tokens accepted per verify: faster than decoding token by token at this light load.
  EXPECT_LT(last, off.tpot.mean);
}

// SGLang's ServerArgs._handle_speculative_decoding: with EAGLE-style speculation and no
// --max-running-requests, at most 48 requests run, and the overlap scheduler is off.
TEST(ServeSpec, SglangRunsAtMost48RequestsWithoutOverlapWhenSpeculating) {
  Scenario plain = test::engineScenario("sglang", "h100-sxm", "llama-3.1-8b");
  const ServeSetup off = serveSetup(test::defaultCatalog(), plain);
  Scenario spec = plain;
  spec.spec.algorithm = "eagle3";
  spec.spec.num_steps = 3;
  spec.spec.accept_length = 2.5;
  const ServeSetup on = serveSetup(test::defaultCatalog(), spec);
  EXPECT_GT(off.scheduler.max_running_requests, 48);
  EXPECT_TRUE(off.host.overlap);
  EXPECT_EQ(on.scheduler.max_running_requests, 48);
  EXPECT_FALSE(on.host.overlap);
  spec.engine_options["max_running_requests"] = "100";
  EXPECT_EQ(serveSetup(test::defaultCatalog(), spec).scheduler.max_running_requests, 100) << "a given limit stays";
  Scenario vllm = test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  vllm.spec = spec.spec;
  EXPECT_GT(serveSetup(test::defaultCatalog(), vllm).scheduler.max_running_requests, 48) << "vLLM has no such reset";
}

TEST(ServeSpec, TheDraftModelIsOneLayerOfTheTargetsWidth) {
  const ModelSpec& v3 = test::defaultCatalog().model("deepseek-v3");
  const ModelSpec eagle = draftModelOf(v3, "eagle"), mtp = draftModelOf(v3, "mtp");
  EXPECT_EQ(eagle.num_layers, 1);
  EXPECT_EQ(eagle.hidden_size, v3.hidden_size);
  EXPECT_FALSE(eagle.moe.has_value()) << "the EAGLE head is a dense layer";
  ASSERT_TRUE(mtp.moe.has_value()) << "DeepSeek's MTP layer is one of its MoE layers";
  EXPECT_EQ(mtp.moe->first_dense_layers, 0);
  EXPECT_EQ(mtp.num_layers, 1);
}

const std::string kSpecServe =
    "--json serve-sim --hardware h100-sxm --model llama-3.1-8b --requests 40 --rate 2 --prompt-len 500 "
    "--output-len 100 --lengths fixed ";

TEST(ServeSpec, EnginesSpeculativeFlagsAreReadAsTheirServersTakeThem) {
  const auto vllm = test::runAttnsim(kSpecServe +
                                     "--engine vllm --speculative-config "
                                     "'{\"method\":\"eagle3\",\"num_speculative_tokens\":3}' "
                                     "--spec-accept-length 2.8");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.output;
  const auto sglang =
      test::runAttnsim(kSpecServe +
                       "--engine sglang --speculative-algorithm EAGLE3 --speculative-num-steps 3 "
                       "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --spec-accept-length 2.8");
  ASSERT_EQ(sglang.exit_code, 0) << sglang.output;
  const auto plain = test::runAttnsim(kSpecServe + "--engine vllm");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(json::parse(vllm.output), json::parse(plain.output)) << "the speculative run differs";
  // Both engines' spellings come to the same settings, and the answer says which it ran.
  const json vllm_spec = json::parse(vllm.output).at("speculative");
  EXPECT_EQ(vllm_spec, json::parse(sglang.output).at("speculative"));
  EXPECT_EQ(vllm_spec.at("algorithm"), "eagle3");
  EXPECT_EQ(vllm_spec.at("num_steps"), 3);
  EXPECT_EQ(vllm_spec.at("draft_tokens"), 4);
  EXPECT_DOUBLE_EQ(vllm_spec.at("accept_length").get<double>(), 2.8);
  EXPECT_TRUE(json::parse(plain.output).at("speculative").is_null());
}

TEST(ServeSpec, TheTextAnswerSaysWhichSpeculationItRan) {
  const auto r = test::runAttnsim(
      "serve-sim --hardware h200 --model deepseek-v3 --tp 8 --requests 20 --rate 2 --prompt-len 500 --output-len 50 "
      "--engine sglang --speculative-algorithm NEXTN --speculative-num-steps 2 --spec-accept-length 1.9");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("speculative decoding: mtp, 2 draft steps (topk 1), 3 tokens verified and 1.90 emitted"),
            std::string::npos)
      << r.output;
}

TEST(ServeSpec, MalformedSpeculativeSettingsAreUsageErrorsNamingWhatIsAccepted) {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {R"(--engine vllm --speculative-config '{"method":"eagle","num_speculative_tokens":3}')",
            "give --spec-accept-length"},
           {"--engine vllm --speculative-config '{\"method\":\"eagle\",\"num_speculative_tokens\":3}' "
            "--spec-accept-length 4.5",
            "in [1, 4]"},
           {R"(--engine vllm --speculative-config '{"method":"eagle","prompt_lookup_max":3}' --spec-accept-length 2)",
            "key 'prompt_lookup_max'"},
           {"--engine vllm --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3}' "
            "--spec-accept-length 2",
            "serve-sim runs eagle, eagle3, mtp"},
           {"--engine vllm --speculative-config 'eagle'", "not JSON"},
           {"--engine sglang --speculative-algorithm EAGLE --spec-accept-length 2", "--speculative-num-steps"},
           {"--engine sglang --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 4 "
            "--spec-accept-length 2",
            "--speculative-num-draft-tokens"}}) {
    const auto r = test::runAttnsim(kSpecServe + args);
    ASSERT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    const json e = json::parse(r.output).at("error");
    EXPECT_NE(e["message"].get<std::string>().find(message), std::string::npos) << args << "\n" << e["message"];
  }
}

}  // namespace
}  // namespace attnsim
