// laws: what a serving engineer checks first about a forward step, as properties over every
// hardware profile of the catalog, several models and every engine. No timing threshold: each law
// compares two predictions of the model with each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "cost/Predictor.hpp"
#include "cost/StepModel.hpp"
#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// Dense GQA, MoE, sinks + sliding window, and MLA + MoE over 8 ranks (DeepSeek-V3's smallest
// usual deployment).
struct ModelCase {
  const char* model;
  int tp;
};
const std::vector<ModelCase> kModels{{"llama-3.1-8b", 1}, {"qwen3-30b-a3b", 1}, {"gpt-oss-20b", 1}, {"deepseek-v3", 8}};
const std::vector<std::string> kEngines{"vllm", "sglang", "rtp-llm"};

// The engine's own backend for decode on this profile and a reusable predictor for it (the
// prediction owns the model the predictor points at); none when the engine refuses the scenario
// (no backend for the device, say).
struct EngineStep {
  ScenarioPrediction scenario;
  Predictor predictor;
};

std::optional<EngineStep> enginePredictor(const std::string& engine, const std::string& hw, const ModelCase& m,
                                          std::int64_t context) {
  // A profile without an interconnect_link cannot cost a tensor-parallel step (Extending.*): its
  // DeepSeek-V3 at TP 8 is refused, not predicted.
  if (m.tp > 1 && !defaultCatalog().hardware(hw).interconnect_link) return std::nullopt;
  Scenario s = engineScenario(engine, hw, m.model);
  s.tp = m.tp;
  s.workload = Workload::uniform(Phase::Decode, 1, 1, context);
  try {
    ScenarioPrediction sp = predictScenario(defaultCatalog(), s);
    Predictor p(defaultCatalog(), sp.input);
    return EngineStep{std::move(sp), std::move(p)};
  } catch (const EngineRefusal&) {
    return std::nullopt;
  }
}

template <class Body>
int forEveryScenario(Body body) {
  int evaluated = 0;
  for (const auto& hw : defaultCatalog().hardwareProfiles()) {
    for (const auto& engine : kEngines) {
      for (const auto& m : kModels) {
        const auto step = enginePredictor(engine, hw.id, m, 2048);
        if (!step) continue;
        SCOPED_TRACE(hw.id + " · " + engine + " · " + m.model);
        body(step->predictor);
        ++evaluated;
      }
    }
  }
  return evaluated;
}

// Wherever the engine replays a graph for a small decode batch, the replay is faster than eager:
// it saves the host's dispatch of every op (24.5 µs each on the platform data, against one 1.4 µs
// graph launch) and, when the GPU sets the pace, the gap before each stream-launched kernel (0.94
// against 0.256 µs per replayed node). Strict: both timelines are the model's own, so there is no
// noise to allow for.
//
// One exception, kept on purpose: padding a batch of an MoE model to the captured size adds a
// dummy token that routes to up to top-k more experts (Workload::paddedTo, costMoe), whose weights
// the replay must read. Where the GPU's time is close to the host's, that can cost more than
// replay saves (worst here: qwen3-30b-a3b on an A10G at batch 3, padded to 4: +19%). Those cases
// are counted, not asserted; the lead has the list (the report of issue 12).
TEST(StepLaws, GraphReplayBeatsEagerForSmallDecodeBatches) {
  int replayed = 0, padded_moe = 0;
  const int evaluated = forEveryScenario([&](const Predictor& p) {
    const bool moe = p.input().model->moe.has_value();
    for (std::int64_t batch = 1; batch <= 8; ++batch) {
      const Prediction r = p.predict(Workload::uniform(Phase::Decode, batch, 1, 2048));
      if (r.graph_decision.mode == GraphMode::Eager) continue;  // this engine does not capture here
      if (moe && r.graph_decision.padded_batch != batch) {
        ++padded_moe;
        continue;
      }
      ++replayed;
      EXPECT_LT(r.graph.step_us, r.eager.step_us) << "batch " << batch << ": " << r.graph_decision.why;
    }
  });
  // Every profile answers for some engine and model, and most capture graphs.
  EXPECT_GE(evaluated, static_cast<int>(defaultCatalog().hardwareProfiles().size()));
  EXPECT_GE(replayed, evaluated * 3);
  EXPECT_LT(padded_moe, replayed);
}

// The linears of a decode step of `tokens` rows that the engine's DeepGEMM runs in one wave of deep tiles
// at a dearer price than the surface's (GemmSurface::kernelUs, SGLang's block-FP8 linears on Hopper): one
// bit per StepOp, found by costing the step's linears again with the surface alone. 0 wherever the
// engine's surface has no single-wave class.
std::uint32_t oneWaveLinears(const Predictor& p, std::int64_t tokens) {
  const PredictionInput& in = p.input();
  const LinearKernels as_run = resolveLinearKernels(defaultCatalog(), *in.hardware, *in.model, in.engine);
  if (!as_run.gemm_weights || !as_run.gemm_weights->single_wave) return 0;
  EXPECT_EQ(in.attention_dp, 1) << "the check costs the linears of one replica";
  LinearKernels surface = as_run;
  surface.engine.clear();  // a step outside any engine: the surface alone
  StepCosts run, alone;
  const Workload w = Workload::uniform(Phase::Decode, tokens, 1, 2048);
  costLinearOps(*in.model, as_run, w, in.tp, 2, run);
  costLinearOps(*in.model, surface, w, in.tp, 2, alone);
  std::uint32_t mask = 0;
  for (const StepOp op :
       {StepOp::QkvProj, StepOp::QbProj, StepOp::QAbsorb, StepOp::OAbsorb, StepOp::OProj, StepOp::GateUp, StepOp::Down,
        StepOp::Router, StepOp::SharedGateUp, StepOp::SharedDown, StepOp::LmHead}) {
    const auto i = static_cast<std::size_t>(op);
    if (run.op_us[i] != alone.op_us[i]) mask |= 1U << i;
  }
  return mask;
}

// More requests or more context never make a step faster, eager or replayed. Batches run densely
// to 64 (capture sizes and kernel tiles change there) and then by steps; the graph step may jump
// where padding or the end of the captured sizes changes the mode, but never downwards.
//
// One exception, kept on purpose: a decode kernel with a split rule (the engines' Triton kernels:
// vLLM's 3D/2D switch at 128 / KV heads sequences, SGLang's get_num_kv_splits_triton) launches the
// split count its engine's heuristic picks, not the fastest, so where that count changes with the
// batch the step may get faster. Only such a change of split count is exempt.
//
// A second, also on purpose: DeepGEMM's one-wave launches (SGLang's block-FP8 linears on Hopper) take
// longer than the launch of a larger M just past their window, which leaves one wave for two over pairs of
// SMs (docs/MEASUREMENTS.md: SGLang's own rows, N 2,048 K 2,048, take 56.2 µs at M 2,048 and 41.4 at
// 4,096). A decrease is allowed only where one of the step's linears enters or leaves such a window between
// the two batches (the timeline's own rows: the eager batch, the graph's padded batch); each is counted.
TEST(StepLaws, StepTimeNeverDecreasesWithBatch) {
  int exempted = 0;
  forEveryScenario([&](const Predictor& p) {
    double eager = 0, graph = 0;
    std::vector<int> splits;
    std::uint32_t eager_class = 0, graph_class = 0;
    for (std::int64_t batch = 1; batch <= 600; batch += batch < 64 ? 1 : 24) {
      const Prediction r = p.predict(Workload::uniform(Phase::Decode, batch, 1, 2048));
      const bool ruled = p.input().decode_kernel->split_policy.rule != SplitRule::Search;
      std::vector<int> now;
      for (const auto& a : r.attention) now.push_back(a.cost.splits);
      const std::uint32_t eager_now = oneWaveLinears(p, batch);
      const std::uint32_t graph_now =
          r.graph_decision.mode == GraphMode::Eager ? eager_now : oneWaveLinears(p, r.graph_decision.padded_batch);
      // A step may take less than the previous batch's only where its set of one-wave linears changed.
      auto check = [&](const char* mode, double now_us, double before_us, bool class_changed, const std::string& why) {
        if (now_us < before_us && class_changed) {
          ++exempted;
          std::cout << "exempt (one-wave window): " << p.input().hardware->id << " " << p.input().engine << " "
                    << p.input().model->id << " " << mode << ", batch " << batch << ", " << now_us << " < " << before_us
                    << " µs\n";
        } else {
          EXPECT_GE(now_us, before_us) << mode << ", batch " << batch << why;
        }
      };
      if (!(ruled && !splits.empty() && now != splits)) {
        check("eager", r.eager.step_us, eager, eager_now != eager_class, "");
        check("graph", r.graph.step_us, graph, graph_now != graph_class, ": " + r.graph_decision.why);
      }
      eager = r.eager.step_us;
      graph = r.graph.step_us;
      splits = now;
      eager_class = eager_now;
      graph_class = graph_now;
    }
  });
  std::cout << exempted << " decreases exempted: a linear entered or left DeepGEMM's one-wave class\n";
  EXPECT_LE(exempted, 40);  // a handful of windows crossed, not a general decrease
}

// The same exemption as for the batch: a split rule that cuts the keys into fixed partitions (the
// ROCm paged-attention kernels) runs a longer context in more, shorter units, which can finish first.
TEST(StepLaws, StepTimeNeverDecreasesWithContext) {
  forEveryScenario([](const Predictor& p) {
    const bool ruled = p.input().decode_kernel->split_policy.rule != SplitRule::Search;
    for (const std::int64_t batch : {1, 8, 64}) {
      double eager = 0, graph = 0;
      std::vector<int> splits;
      for (std::int64_t context = 128; context <= 32768; context += context / 4) {
        const Prediction r = p.predict(Workload::uniform(Phase::Decode, batch, 1, context));
        std::vector<int> now;
        for (const auto& a : r.attention) now.push_back(a.cost.splits);
        if (!(ruled && !splits.empty() && now != splits)) {
          EXPECT_GE(r.eager.step_us, eager) << "eager, batch " << batch << ", context " << context;
          EXPECT_GE(r.graph.step_us, graph) << "graph, batch " << batch << ", context " << context;
        }
        eager = r.eager.step_us;
        graph = r.graph.step_us;
        splits = now;
      }
    }
  });
}

// --tp splits heads as vLLM's and SGLang's QKVParallelLinear do: query heads evenly, KV heads
// evenly below their count and by whole replicas above it.
std::string tpError(const std::string& model, std::int64_t tp) {
  Scenario s = engineScenario("vllm", "h100-sxm", model);
  s.tp = tp;
  try {
    (void)resolveModel(defaultCatalog(), s);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioLaws, TensorParallelSplitsHeadsAsTheEnginesDo) {
  // Llama-3.1-8B: 32 query heads, 8 KV heads.
  for (const std::int64_t tp : {1, 2, 4, 8}) EXPECT_EQ(tpError("llama-3.1-8b", tp), "") << tp;
  EXPECT_EQ(tpError("llama-3.1-8b", 16), "") << "16 ranks: each KV head replicated on 2";
  EXPECT_EQ(tpError("llama-3.1-8b", 32), "");
  const std::string three = tpError("llama-3.1-8b", 3);
  for (const char* part :
       {"--tp 3", "32 query heads", "8 KV heads", "valid --tp for llama-3.1-8b: 1, 2, 4, 8, 16, 32"}) {
    EXPECT_NE(three.find(part), std::string::npos) << part << " in: " << three;
  }
  EXPECT_NE(tpError("llama-3.1-8b", 64), "") << "64 ranks cannot split 32 query heads";
  // gpt-oss-20b: 64 query heads, 8 KV heads: 16 ranks replicate each KV head twice.
  EXPECT_EQ(tpError("gpt-oss-20b", 16), "");
  EXPECT_NE(tpError("gpt-oss-20b", 12), "");
  // MLA: one latent KV head replicated on every rank, so only the 128 query heads must divide.
  EXPECT_EQ(tpError("deepseek-v3", 8), "");
  EXPECT_EQ(tpError("deepseek-v3", 128), "");
  EXPECT_NE(tpError("deepseek-v3", 3).find("MLA"), std::string::npos);
  // Gemma 3's vision encoder (16 heads) is sharded too: 32 decoder heads alone would allow 32.
  EXPECT_NE(tpError("gemma-3-27b", 32).find("vision"), std::string::npos);
}

TEST(ScenarioLaws, EveryAcceptedTensorParallelSizeGivesEachRankWholeHeads) {
  for (const auto& model : defaultCatalog().models()) {
    const auto valid = validTensorParallelSizes(model);
    ASSERT_FALSE(valid.empty()) << model.id;
    EXPECT_EQ(valid.front(), "1") << model.id;
    for (const auto& text : valid) {
      const int tp = std::stoi(text);
      for (const auto& l : model.attention_layers) {
        EXPECT_EQ(l.num_heads % tp, 0) << model.id << " " << l.name << " tp " << tp;
        if (l.isMla()) continue;
        EXPECT_TRUE(l.num_kv_heads % tp == 0 || tp % l.num_kv_heads == 0) << model.id << " tp " << tp;
      }
    }
  }
}

TEST(ScenarioLaws, InvalidScenariosAreUsageErrorsOnEveryCommand) {
  for (const char* command : {"predict --engine vllm --phase decode --batch 1 --context 2048",
                              "rank --phase decode --batch 1 --context 2048", "select --engine vllm"}) {
    const auto r = runAttnsim(std::string(command) + " --hardware h100-sxm --model llama-3.1-8b --tp 3");
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
    EXPECT_NE(r.output.find("--tp 3"), std::string::npos) << r.output;
  }
}

TEST(ScenarioLaws, ContextBeyondMaxPositionEmbeddingsNeedsTheOverride) {
  const std::string base = "predict --engine vllm --hardware h100-sxm --model qwen3-8b --phase decode --batch 1 ";
  const auto refused = runAttnsim(base + "--context 40961");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  for (const char* part : {"--context 40961", "max_position_embeddings 40960", "--allow-context-beyond-max-position"}) {
    EXPECT_NE(refused.output.find(part), std::string::npos) << part << " in: " << refused.output;
  }
  EXPECT_EQ(runAttnsim(base + "--context 40960").exit_code, 0);
  EXPECT_EQ(runAttnsim(base + "--context 40961 --allow-context-beyond-max-position").exit_code, 0);
  // A mixed batch is checked group by group.
  const auto mixed =
      runAttnsim("predict --engine vllm --hardware h100-sxm --model qwen3-8b --mix 1x2048@8192,3x1@50000");
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
}

}  // namespace
}  // namespace attnsim::test
