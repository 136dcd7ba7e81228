// bounds + unit: the forward-step DAG, eager and CUDA-graph timelines, capture sizes and padding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backends/KernelFamily.hpp"
#include "cost/Predictor.hpp"
#include "selection/Selector.hpp"
#include "simulator/EngineRun.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

TEST(StepGraph, HasOneNodePerKernelOfTheForward) {
  const Catalog& c = defaultCatalog();
  // Llama: 10 kernels a layer (norm, qkv, rope, kv write, attention, o, norm, gate_up, act, down) + 3 at the end.
  EXPECT_EQ(StepGraph(c.model("llama-3.1-8b"), true).nodes().size(), 32U * 10 + 3);
  // DeepSeek-V3 decode: 10 attention-side kernels (MLA adds q_b, q_absorb, o_absorb); 3 dense MLP layers
  // of 3 kernels; 58 MoE layers of 9 (router, topk, experts x3, shared expert x3, combine).
  EXPECT_EQ(StepGraph(c.model("deepseek-v3"), true).nodes().size(), 61U * 10 + 3 * 3 + 58 * 9 + 3);
}

TEST(StepGraph, SharedExpertIsAParallelBranch) {
  const StepGraph g(defaultCatalog().model("deepseek-v3"), true);
  int combines = 0;
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    for (const int p : g.predecessors(i)) EXPECT_LT(static_cast<std::size_t>(p), i) << "topological order";
    if (g.nodes()[i].op == StepOp::MoeCombine) {
      EXPECT_EQ(g.predecessors(i).size(), 2U);
      ++combines;
    }
  }
  EXPECT_EQ(combines, 58);
}

Predictor engineBackend(const Catalog& c, const char* engine, const char* hw, const char* model, const char* backend,
                        const HardwareProfile* hw_override = nullptr) {
  const Engine& e = c.engine(engine);
  const HardwareProfile& h = hw_override ? *hw_override : c.hardware(hw);
  const EngineRun run = runEngine(c, h, c.model(model), e, {}, std::string(backend), Phase::Decode);
  EXPECT_FALSE(run.selection.refusal.has_value()) << *run.selection.refusal;
  return {c, predictionInputFor(c, h, c.model(model), e, run, true)};
}

TEST(CudaGraphs, CaptureSizesFollowTheEngines) {
  const Catalog& c = defaultCatalog();
  Env env = buildEnv({&c.hardware("h200"), &c.model("llama-3.1-8b"), &c.engine("sglang").policy, {}, std::nullopt});
  EXPECT_EQ(c.engine("vllm").policy.cuda_graph->captureSizes(env).size(), 51U);    // engines.md §1.9
  EXPECT_EQ(c.engine("sglang").policy.cuda_graph->captureSizes(env).size(), 36U);  // max 256: §2.7
  env["memory_gb"] = 180.0;
  EXPECT_EQ(c.engine("sglang").policy.cuda_graph->captureSizes(env).size(), 52U);  // max 512: §2.7
  Env rtp =
      buildEnv({&c.hardware("h100-sxm"), &c.model("llama-3.1-8b"), &c.engine("rtp-llm").policy, {}, std::nullopt});
  EXPECT_EQ(c.engine("rtp-llm").policy.cuda_graph->captureSizes(rtp), (std::vector<std::int64_t>{1, 8, 16, 24, 32}));
  rtp["concurrency_limit"] = std::int64_t{128};
  EXPECT_EQ(c.engine("rtp-llm").policy.cuda_graph->captureSizes(rtp).size(), 11U);  // §3.5
  env["memory_gb"] = 80.0;
  EXPECT_EQ(c.engine("sglang").policy.cuda_graph->prefillCaptureSizes(env).size(), 58U);  // 8192 tokens: §2.7
}

TEST(CudaGraphs, BatchIsPaddedToTheNextCapturedSize) {
  const Catalog& c = defaultCatalog();
  const Predictor vllm = engineBackend(c, "vllm", "h100-sxm", "llama-3.1-8b", "FLASH_ATTN");
  EXPECT_EQ(vllm.predict(Workload::uniform(Phase::Decode, 33, 1, 2048)).graph_decision.padded_batch, 40);
  EXPECT_EQ(vllm.predict(Workload::uniform(Phase::Decode, 257, 1, 2048)).graph_decision.padded_batch, 272);
  EXPECT_EQ(vllm.predict(Workload::uniform(Phase::Decode, 40, 1, 2048)).graph_decision.padded_batch, 40);
  const Prediction above = vllm.predict(Workload::uniform(Phase::Decode, 600, 1, 2048));
  EXPECT_EQ(above.graph_decision.mode, GraphMode::Eager);
  EXPECT_DOUBLE_EQ(above.graph.step_us, above.eager.step_us);
  const Predictor sglang = engineBackend(c, "sglang", "h100-sxm", "llama-3.1-8b", "fa3");
  EXPECT_EQ(sglang.predict(Workload::uniform(Phase::Decode, 13, 1, 2048)).graph_decision.padded_batch, 16);
  // A padded batch runs the linear kernels over the padded requests, but the engines give padded
  // slots no context (seq_lens filled with 0), so its attention is the real batch's.
  const Prediction p = vllm.predict(Workload::uniform(Phase::Decode, 33, 1, 2048));
  const Prediction full = vllm.predict(Workload::uniform(Phase::Decode, 40, 1, 2048));
  EXPECT_DOUBLE_EQ(p.graph.by_category[1], full.graph.by_category[1]);  // GEMMs over 40 rows
  EXPECT_DOUBLE_EQ(p.graph.by_category[0], p.eager.by_category[0]);     // attention over 33
  EXPECT_LT(p.graph.by_category[0], full.graph.by_category[0]);
  EXPECT_LT(p.eager.gpu_busy_us, full.eager.gpu_busy_us);
}

TEST(CudaGraphs, SupportLevelDecidesWhichBatchesReplayWhole) {
  const Catalog& c = defaultCatalog();
  // vLLM FLASHINFER off SM 10.x: UNIFORM_SINGLE_TOKEN_DECODE. Verify batches (q > 1) run piecewise.
  const Predictor fi = engineBackend(c, "vllm", "h100-sxm", "llama-3.1-8b", "FLASHINFER");
  EXPECT_EQ(fi.predict(Workload::uniform(Phase::Decode, 8, 1, 2048)).graph_decision.mode, GraphMode::Full);
  EXPECT_EQ(fi.predict(Workload::uniform(Phase::Verify, 8, 4, 2048)).graph_decision.mode, GraphMode::Piecewise);
  // FA3 is ALWAYS: verify batches replay whole.
  const Predictor fa3 = engineBackend(c, "vllm", "h100-sxm", "llama-3.1-8b", "FLASH_ATTN");
  EXPECT_EQ(fa3.predict(Workload::uniform(Phase::Verify, 8, 4, 2048)).graph_decision.mode, GraphMode::Full);
  // SGLang turns graphs off for torch_native.
  const Predictor sdpa = engineBackend(c, "sglang", "h100-sxm", "llama-3.1-8b", "torch_native");
  EXPECT_EQ(sdpa.predict(Workload::uniform(Phase::Decode, 8, 1, 2048)).graph_decision.mode, GraphMode::Eager);
}

TEST(StepTimeline, EagerIsBoundByTheGpuAndByTheLaunches) {
  const Catalog& c = defaultCatalog();
  const Predictor p = engineBackend(c, "vllm", "h100-sxm", "qwen3-8b", "FLASH_ATTN");
  for (const std::int64_t batch : {1, 8, 64, 256}) {
    const Prediction r = p.predict(Workload::uniform(Phase::Decode, batch, 1, 4096));
    EXPECT_GE(r.eager.step_us, r.eager.gpu_busy_us);
    EXPECT_GE(r.eager.step_us, r.eager.cpu_us);
    // One launch a kernel, and a second for the split-KV merge of every attention call that splits.
    const int merges = r.attention.front().cost.splits > 1 ? 36 : 0;
    EXPECT_EQ(r.eager.launches, r.eager.nodes + merges) << batch;
    EXPECT_GT(r.attention_us, 0);
  }
}

// What replay saves over eager, as a share of the eager step.
double replaySaving(const Predictor& p, std::int64_t batch) {
  const Prediction r = p.predict(Workload::uniform(Phase::Decode, batch, 1, 512));
  return (r.eager.step_us - r.graph.step_us) / r.eager.step_us;
}

TEST(StepTimeline, GraphsWinSmallBatchesMoreTheCostlierTheLaunch) {
  const Catalog& c = defaultCatalog();
  HardwareProfile fast_launch = c.hardware("h100-sxm");
  fast_launch.overheads.kernel_launch_us = 2;
  HardwareProfile slow_launch = fast_launch;
  slow_launch.overheads.kernel_launch_us = 30;
  const Predictor slow = engineBackend(c, "vllm", "h100-sxm", "qwen3-8b", "FLASH_ATTN", &slow_launch);
  const Predictor fast = engineBackend(c, "vllm", "h100-sxm", "qwen3-8b", "FLASH_ATTN", &fast_launch);
  const Prediction small = slow.predict(Workload::uniform(Phase::Decode, 1, 1, 512));
  EXPECT_LT(small.graph.step_us, small.eager.step_us);
  EXPECT_GE(small.eager.step_us, small.eager.cpu_us);  // launch-bound: the CPU sets the pace
  EXPECT_GT(replaySaving(slow, 1), replaySaving(fast, 1)) << "a costlier launch gives replay more to save";
  EXPECT_GT(replaySaving(slow, 1), replaySaving(slow, 512)) << "the GPU's own time dominates large batches";
  // A fast host leaves only the GPU-side gaps: replay still wins, by the eager gap it avoids.
  EXPECT_GT(replaySaving(fast, 1), 0);
  HardwareProfile equal_gaps = fast_launch;
  equal_gaps.overheads.eager_gap_us = equal_gaps.overheads.graph_replay_per_node_us;
  const Predictor same = engineBackend(c, "vllm", "h100-sxm", "qwen3-8b", "FLASH_ATTN", &equal_gaps);
  EXPECT_LT(replaySaving(same, 1), replaySaving(fast, 1)) << "the eager gap is part of what replay saves";
}

TEST(StepTimeline, MonotoneInBatchAndContext) {
  const Catalog& c = defaultCatalog();
  const Predictor p = engineBackend(c, "sglang", "b200", "deepseek-v3", "trtllm_mla");
  double previous = 0;
  for (std::int64_t b = 1; b <= 512; b = b * 3 / 2 + 1) {
    const double t = p.predict(Workload::uniform(Phase::Decode, b, 1, 4096)).eager.step_us;
    EXPECT_GE(t, previous) << b;
    previous = t;
  }
  previous = 0;
  for (std::int64_t ctx = 16; ctx <= 131072; ctx *= 2) {
    const double t = p.predict(Workload::uniform(Phase::Decode, 16, 1, ctx)).graph.step_us;
    EXPECT_GE(t, previous) << ctx;
    previous = t;
  }
}

TEST(PredictCli, JsonHasTheContractFields) {
  const auto r = runAttnsim(
      "--json predict --hardware h100-sxm --model llama-3.1-8b --backend vllm:FLASH_ATTN --phase decode --batch 32 "
      "--context 4096");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  for (const char* key : {"attention_us", "step_us_eager", "step_us_graph", "bound", "flops", "bytes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j["attention_us"].get<double>(), 0);
  EXPECT_EQ(j["selection"]["variant"], "FA3");
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), 2.0 * 32 * 32 * 4096 * 256);
  EXPECT_FALSE(j["parameters"][0]["source"].get<std::string>().empty());
}

TEST(PredictCli, InvalidBackendRefusesAndKernelOrGeometryNeedNoEngine) {
  auto r = runAttnsim("predict --hardware a100-sxm-80g --model deepseek-v3 --backend vllm:FLASHMLA --context 4096");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FlashMLA Dense is only supported on Hopper devices."), std::string::npos) << r.output;
  r = runAttnsim(
      "--json predict --hardware b200 --kernel fa4 --num-heads 40 --num-kv-heads 8 --head-dim 128 --phase prefill "
      "--context 8192");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["attention_layers"][0]["kernel"], "fa4");
  r = runAttnsim("predict --hardware b200 --model llama-3.1-8b --kernel fa4 --backend vllm:FLASH_ATTN --context 4096");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = runAttnsim("predict --hardware b200 --model llama-3.1-8b --kernel fa44 --context 4096");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("did you mean 'fa4'"), std::string::npos) << r.output;
}

TEST(PredictCli, MixedBatchesRunPiecewiseAndCostEveryGroup) {
  const auto mixed =
      runAttnsim("--json predict --hardware h100-sxm --model llama-3.1-8b --engine vllm --mix 1x2048@2048,31x1@4096");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  const auto j = nlohmann::json::parse(mixed.output);
  EXPECT_TRUE(j["scenario"]["mixed"].get<bool>());
  EXPECT_EQ(j["graph_mode"], "eager");  // 2079 tokens is above vLLM's largest piecewise size (512)
  // FLOPs: the chunk's causal 2048 rows plus 31 decode rows over 4096 keys.
  const double expected = 2.0 * 32 * (2048.0 * 2049 / 2 + 31.0 * 4096) * 256;
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), expected);
  const auto small =
      runAttnsim("--json predict --hardware h100-sxm --model llama-3.1-8b --engine vllm --mix 1x64@64,31x1@4096");
  EXPECT_EQ(nlohmann::json::parse(small.output)["graph_mode"], "piecewise");
  const auto bad = runAttnsim("predict --hardware h100-sxm --model llama-3.1-8b --engine vllm --mix 3x9@4");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("COUNTxQ_LEN@CONTEXT"), std::string::npos) << bad.output;
}

TEST(RankCli, RanksFastestFirstWithTheDefaultsRegret) {
  const auto r =
      runAttnsim("--json rank --hardware h100-sxm --model llama-3.1-8b --phase decode --batch 64 --context 8192");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  const auto& ranked = j["ranked"];
  ASSERT_GE(ranked.size(), 10U);
  for (std::size_t i = 1; i < ranked.size(); ++i) {
    EXPECT_LE(ranked[i - 1]["step_us"].get<double>(), ranked[i]["step_us"].get<double>());
  }
  for (const char* engine : {"vllm", "sglang", "rtp-llm"}) {
    ASSERT_TRUE(j["engine_defaults"].contains(engine)) << engine;
    EXPECT_GE(j["engine_defaults"][engine]["regret"].get<double>(), 0.0);
  }
  EXPECT_TRUE(j["invalid"].contains("vllm:FLASHMLA"));
}

}  // namespace
}  // namespace attnsim::test
