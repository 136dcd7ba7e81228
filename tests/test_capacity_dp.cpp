// SGLang's data-parallel attention (--enable-dp-attention, --dp-size): the memory split against
// hand-computed cases, its constraints, the step model's split of attention and MLP, and serve-sim's
// engine-wide pool.
#include <gtest/gtest.h>

#include "TestSupport.hpp"
#include "catalog/Catalog.hpp"
#include "cost/Collective.hpp"
#include "cost/MemoryModel.hpp"
#include "cost/Predictor.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/Capacity.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/ServeSim.hpp"

namespace attnsim {
namespace {

using test::defaultCatalog;

Scenario sglang(const std::string& hw, const std::string& model, int tp, int dp) {
  Scenario s = test::engineScenario("sglang", hw, model);
  s.tp = tp;
  if (dp > 0) {
    s.engine_options["enable_dp_attention"] = "true";
    s.engine_options["dp_size"] = std::to_string(dp);
  }
  return s;
}

TEST(DpAttention, DeepSeekV3AttentionParametersAreTheMlaChainOfEveryLayer) {
  const ModelSpec& m = defaultCatalog().model("deepseek-v3");
  // q_a 7168·1536 + q_b 1536·128·(128+64) + kv_a 7168·(512+64) + kv_b 512·128·(128+128) + o 128·128·7168.
  const double per_layer = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
  EXPECT_DOUBLE_EQ(attentionParameters(m), 61 * per_layer);
  // Llama-3.1-8B: 32 layers of q 4096·4096, k and v 4096·1024 each, o 4096·4096.
  EXPECT_DOUBLE_EQ(attentionParameters(defaultCatalog().model("llama-3.1-8b")),
                   32.0 * (4096.0 * (32 + 16) * 128 + 32.0 * 128 * 4096));
}

TEST(DpAttention, DeepSeekV3Tp8KvCapacityGrowsAgainstPlainTp) {
  const ModelSpec& m = defaultCatalog().model("deepseek-v3");
  const MemorySplit tp = capacityOf(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 0)).split;
  const MemorySplit dp = capacityOf(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 8)).split;
  EXPECT_EQ(tp.attention_dp, 1);
  EXPECT_EQ(dp.attention_dp, 8);
  // The latent is the same per token; each GPU now holds whole attention weights.
  EXPECT_DOUBLE_EQ(dp.kv.full_bytes, tp.kv.full_bytes);
  const double attention_bytes = attentionParameters(m) * m.parameterBytes() / (m.parameters_b * 1e9);
  EXPECT_NEAR(dp.weights_mib - tp.weights_mib, attention_bytes * (1 - 1.0 / 8) / kMiB, 1e-6);
  // H200 (141 GB): cuda_graph_max_bs 512 at TP 8, so DP attention reserves 512·8·3 + 512·8·1.5 MiB more.
  double reserved_dp = -1;
  for (const auto& [name, value] : dp.derived) {
    if (name == "reserved_dp_mib") reserved_dp = value;
  }
  EXPECT_DOUBLE_EQ(reserved_dp, 512.0 * 8 * 3 + 512.0 * 8 * 1.5);
  // Each GPU's pool is smaller, but it holds its own replica's requests: the engine holds 8 of them,
  // where plain TP repeats one latent pool on all eight GPUs.
  EXPECT_LT(dp.kv_tokens, tp.kv_tokens);
  EXPECT_EQ(dp.engineKvTokens(), 8 * dp.kv_tokens);
  EXPECT_EQ(tp.engineKvTokens(), tp.kv_tokens);
  EXPECT_GT(dp.engineKvTokens(), 3 * tp.engineKvTokens());
  // _handle_data_parallelism: the chunk is divided among the replicas (8192 // 8).
  EXPECT_EQ(tp.max_batched_tokens, 8192);
  EXPECT_EQ(dp.max_batched_tokens, 1024);
}

TEST(DpAttention, ABatchFitsWhenOneReplicasShareFitsOneGpu) {
  const MemorySplit dp = capacityOf(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 8)).split;
  const std::int64_t per_request = 16384;
  const std::int64_t fit_one_gpu = dp.kv_tokens / per_request;  // requests of 16k one GPU's pool holds
  ASSERT_GT(fit_one_gpu, 1);
  EXPECT_TRUE(checkFit(dp, Workload::uniform(Phase::Decode, 8 * fit_one_gpu, 1, per_request)).fits);
  EXPECT_FALSE(checkFit(dp, Workload::uniform(Phase::Decode, 8 * fit_one_gpu + 1, 1, per_request)).fits);
}

TEST(DpAttention, GqaModelsAreAcceptedAndShardKvHeadsOverTheReplicaOnly) {
  // SGLang does not refuse DP attention for non-MLA models: Llama-3.1-70B at TP 8, dp 2 runs attention
  // at TP 4, two of its eight KV heads per GPU.
  const MemorySplit s = capacityOf(defaultCatalog(), sglang("h100-sxm", "llama-3.1-70b", 8, 2)).split;
  EXPECT_EQ(s.attention_dp, 2);
  EXPECT_DOUBLE_EQ(s.kv.full_bytes, 2.0 * 80 * 2 * 128 * 2);
  EXPECT_EQ(s.engineKvTokens(), 2 * s.kv_tokens);
}

TEST(DpAttention, DpSizeOneTurnsItOffAndADpSizeThatDoesNotDivideTpIsRefused) {
  const MemorySplit off = capacityOf(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 1)).split;
  const MemorySplit plain = capacityOf(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 0)).split;
  EXPECT_EQ(off.attention_dp, 1);
  EXPECT_DOUBLE_EQ(off.kv_pool_mib, plain.kv_pool_mib);
  EXPECT_THROW(capacityOf(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 3)), EngineRefusal);
  const auto r = test::runAttnsim(
      "capacity memory --hardware h200 --model deepseek-v3 --engine sglang --tp 8 --option enable_dp_attention=true "
      "--option dp_size=3");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // an engine refusal, as every rule's error
  EXPECT_NE(r.output.find("--dp-size 3 must divide --tp-size 8"), std::string::npos) << r.output;
}

TEST(DpAttention, DecodeStepRunsAttentionOnOneReplicasShareWithEveryHeadAndGathersForTheMlp) {
  Scenario dp = sglang("h200", "deepseek-v3", 8, 8);
  dp.workload = Workload::uniform(Phase::Decode, 64, 1, 4096);
  Scenario tp = sglang("h200", "deepseek-v3", 8, 0);
  tp.workload = dp.workload;
  const ScenarioPrediction with = predictScenario(defaultCatalog(), dp);
  const ScenarioPrediction without = predictScenario(defaultCatalog(), tp);
  // One replica's 8 requests with all 128 heads: the attention call of TP 1 at batch 8.
  Scenario one = sglang("h200", "deepseek-v3", 1, 0);
  one.workload = Workload::uniform(Phase::Decode, 8, 1, 4096);
  EXPECT_DOUBLE_EQ(with.prediction.attention_us, predictScenario(defaultCatalog(), one).prediction.attention_us);
  EXPECT_NE(with.prediction.attention_us, without.prediction.attention_us);
  // The collectives: per layer a gather of 8 × 8 tokens and a scatter back over the 8 GPUs.
  const ModelSpec& m = *with.model;
  const double expected = dpAttentionCommunicationUs(m, with.hardware->interconnect_link, 8, 64, true, 8, 8, 2);
  EXPECT_DOUBLE_EQ(with.prediction.tp_comm_us, expected);
  const double gathered = 64.0 * m.hidden_size * 2;
  EXPECT_DOUBLE_EQ(expected, m.num_layers * 2 * allGatherUs(*with.hardware->interconnect_link, gathered, 8));
  EXPECT_NE(with.prediction.eager.step_us, without.prediction.eager.step_us);
}

TEST(DpAttention, ALonePrefillRunsOnOneReplicaAndTheMlpOnItsTokensOnly) {
  // SUM_LEN gathering: the other replicas add no tokens to the MLP, so the step's MoE time is the
  // plain TP step's; attention runs at TP 1 with all 128 heads on the one request.
  Scenario dp = sglang("h200", "deepseek-v3", 8, 8);
  dp.workload = Workload::uniform(Phase::Prefill, 1, 1024, 1024);
  Scenario tp = sglang("h200", "deepseek-v3", 8, 0);
  tp.workload = dp.workload;
  const ScenarioPrediction with = predictScenario(defaultCatalog(), dp);
  const ScenarioPrediction without = predictScenario(defaultCatalog(), tp);
  EXPECT_DOUBLE_EQ(with.prediction.eager.by_category[2], without.prediction.eager.by_category[2]);
  const double expected =
      dpAttentionCommunicationUs(*with.model, with.hardware->interconnect_link, 1024, 1024, false, 8, 8, 2);
  const double gathered = 1024.0 * with.model->hidden_size * 2;
  EXPECT_DOUBLE_EQ(expected, with.model->num_layers * (allReduceUs(*with.hardware->interconnect_link, gathered, 8) +
                                                       allGatherUs(*with.hardware->interconnect_link, gathered, 8)));
  EXPECT_DOUBLE_EQ(with.prediction.tp_comm_us, expected);
}

TEST(DpAttention, SweepsFastPathGivesPredictsNumbers) {
  // Predictor::predictSteps (rank, sweeps) beside a plain predictor: predict()'s numbers bit for bit.
  Scenario dp = sglang("h200", "deepseek-v3", 8, 8);
  dp.workload = Workload::uniform(Phase::Decode, 100, 1, 2048);
  Scenario tp = sglang("h200", "deepseek-v3", 8, 0);
  tp.workload = dp.workload;
  const ScenarioPrediction dp_scenario = predictScenario(defaultCatalog(), dp);  // owns the model
  const ScenarioPrediction tp_scenario = predictScenario(defaultCatalog(), tp);
  const Predictor with(defaultCatalog(), dp_scenario.input);
  const Predictor without(defaultCatalog(), tp_scenario.input);
  ASSERT_EQ(with.input().attention_dp, 8);
  const std::vector<const Predictor*> predictors{&without, &with};
  std::vector<StepPrediction> fast(2);
  Predictor::predictSteps(predictors, dp.workload, fast);
  for (std::size_t i = 0; i < 2; ++i) {
    const Prediction p = predictors[i]->predict(dp.workload);
    EXPECT_EQ(fast[i].eager_us, p.eager.step_us) << i;
    EXPECT_EQ(fast[i].graph_us, p.graph.step_us) << i;
    EXPECT_EQ(fast[i].attention_us, p.attention_us) << i;
    EXPECT_EQ(fast[i].graph_band, p.uncertainty.graph_band) << i;
  }
  EXPECT_NE(fast[0].graph_us, fast[1].graph_us);
}

TEST(DpAttention, ServeSimSchedulesEveryReplicasPool) {
  const Scenario s = sglang("h200", "deepseek-v3", 8, 8);
  const ServeSetup setup = serveSetup(defaultCatalog(), s);
  EXPECT_EQ(setup.scheduler.kv_tokens, setup.capacity.split.engineKvTokens());
  EXPECT_EQ(setup.scheduler.max_batched_tokens, 8 * 1024);
  EXPECT_EQ(setup.scheduler.attention_replicas, 8);
  EXPECT_EQ(setup.scheduler.replica_batched_tokens, 1024);  // each replica prefills at its own budget
  const ServeSetup plain = serveSetup(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 0));
  EXPECT_EQ(plain.scheduler.attention_replicas, 1);
  EXPECT_GT(setup.scheduler.kv_tokens, plain.scheduler.kv_tokens);
  // serve-sim and capacity search take the option like every engine flag.
  const auto r = test::runAttnsim(
      "serve-sim --hardware h200 --model deepseek-v3 --engine sglang --tp 8 --option enable_dp_attention=true "
      "--option dp_size=8 --rate 2 --requests 100 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"kv_tokens\": " + std::to_string(setup.scheduler.kv_tokens)), std::string::npos);
  EXPECT_NE(r.output.find("\"attention_replicas\": 8"), std::string::npos);
  EXPECT_NE(r.output.find("\"replica_batched_tokens\": 1024"), std::string::npos);
}

// serve-sim's replicas with every step 1 ms, recording each step's tokens and its busiest replica's share.
struct ReplicaRun {
  std::vector<std::int64_t> tokens;
  std::vector<std::vector<RequestGroup>> shares;
  ServeResult result;
};
ReplicaRun runReplicas(int replicas, const std::vector<ServeRequest>& requests) {
  SchedulerConfig c;
  c.attention_replicas = replicas;
  c.replica_batched_tokens = 1024;
  c.max_batched_tokens = 1024 * replicas;
  c.kv_tokens = 1 << 20;
  c.page_size = 1;
  c.mixed_batches = false;  // SGLang: prefill and decode steps apart
  ReplicaRun run;
  const StepTimer timer = [&](const Workload& w) {
    run.tokens.push_back(w.tokens());
    run.shares.push_back(w.replica);
    return StepTime{.us = 1000, .gpu_us = 1000};
  };
  run.result = simulateServing(requests, c, timer, {});
  return run;
}

TEST(DpAttention, ARequestIsPrefilledInItsReplicasChunksWhileTheOtherReplicasGoOn) {
  // SGLang pins a request to one attention replica, whose scheduler chunks it at chunked_prefill_size
  // // dp_size: a lone 4096-token prompt takes four steps of 1024 tokens, not one of the engine's 8192.
  const ReplicaRun lone = runReplicas(8, {{0, 4096, 1}});
  EXPECT_EQ(lone.tokens, (std::vector<std::int64_t>{1024, 1024, 1024, 1024}));
  EXPECT_DOUBLE_EQ(lone.result.requests[0].ttft(), 4e-3);
  // Round robin over 2 replicas: requests 0 and 2 share replica 0, which prefills one of them a step
  // while replica 1 takes request 1 beside it; the engine's summed budget alone would run 2 steps.
  const ReplicaRun shared = runReplicas(2, {{0, 2048, 1}, {0, 1024, 1}, {0, 1024, 1}});
  EXPECT_EQ(shared.tokens, (std::vector<std::int64_t>{2048, 1024, 1024}));
  ASSERT_EQ(shared.shares.front().size(), 1U);
  EXPECT_EQ(shared.shares.front()[0].count, 1);  // one request a replica
  EXPECT_EQ(shared.shares.front()[0].q_len, 1024);
  EXPECT_DOUBLE_EQ(shared.result.requests[2].ttft(), 3e-3);
}

TEST(DpAttention, AStepIsCostedOnTheBusiestReplicaAsTheDispatchLeftIt) {
  // Round robin over 2 replicas: requests 0 and 2 (replica 0) end after their first token, 1 and 3
  // (replica 1) decode on, so the decode steps hold both on replica 1: a share of 2, where an even
  // spread would give ceil(2 / 2) = 1.
  const ReplicaRun run = runReplicas(2, {{0, 16, 1}, {0, 16, 4}, {0, 16, 1}, {0, 16, 4}});
  ASSERT_GE(run.shares.size(), 2U);
  const auto& decode = run.shares.back();
  ASSERT_EQ(decode.size(), 1U);
  EXPECT_EQ(decode[0].count, 2);
  EXPECT_EQ(run.tokens.back(), 2);
}

TEST(DpAttention, AnExplicitReplicaShareIsCostedAsThatShareOfAnEvenBatch) {
  // A decode batch of 16 whose busiest replica holds 10 costs what 80 spread evenly over 8 replicas
  // cost: attention on 10 requests, the MLP on 8 x 10 gathered (MAX_LEN padding).
  const ScenarioPrediction scenario = predictScenario(defaultCatalog(), sglang("h200", "deepseek-v3", 8, 8));
  const Predictor p(defaultCatalog(), scenario.input);
  Workload skewed = Workload::uniform(Phase::Decode, 16, 1, 2048);
  skewed.replica = {{.count = 10, .q_len = 1, .context = 2048}};
  const Prediction a = p.predict(skewed);
  const Prediction b = p.predict(Workload::uniform(Phase::Decode, 80, 1, 2048));
  EXPECT_DOUBLE_EQ(a.eager.step_us, b.eager.step_us);
  EXPECT_DOUBLE_EQ(a.graph.step_us, b.graph.step_us);
  EXPECT_GT(a.eager.step_us, p.predict(Workload::uniform(Phase::Decode, 16, 1, 2048)).eager.step_us);
}

}  // namespace
}  // namespace attnsim
