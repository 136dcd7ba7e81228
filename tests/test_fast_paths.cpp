// The sweep's fast paths give the straightforward paths' numbers bit for bit: the step timeline
// without predecessors and with lanes walked together (against the literal DAG walk), and
// Predictor::predictSteps (against Predictor::predict on each backend) over a sample of the catalog.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <map>
#include <string>

#include "SanitizerSample.hpp"
#include "TestSupport.hpp"
#include "cost/Predictor.hpp"
#include "study/SweepGroups.hpp"
#include "study/SweepPlan.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim {
namespace {

using test::defaultCatalog;

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void expectSameTimeline(const StepTimeline& a, const StepTimeline& b, const std::string& what) {
  EXPECT_EQ(bits(a.step_us), bits(b.step_us)) << what;
  EXPECT_EQ(bits(a.gpu_busy_us), bits(b.gpu_busy_us)) << what;
  EXPECT_EQ(bits(a.cpu_us), bits(b.cpu_us)) << what;
  EXPECT_EQ(a.launches, b.launches) << what;
  EXPECT_EQ(a.nodes, b.nodes) << what;
  for (std::size_t c = 0; c < a.by_category.size(); ++c)
    EXPECT_EQ(bits(a.by_category[c]), bits(b.by_category[c])) << what;
}

// Durations spread over six decades, some zero, and attention split in two launches now and then, so
// the CPU and the stream each lead in turn.
StepCosts syntheticCosts(std::size_t attention_types, unsigned seed) {
  StepCosts c;
  unsigned x = seed * 2654435761U + 1;
  auto next = [&x] {
    x = x * 1664525U + 1013904223U;
    return x >> 8;
  };
  for (std::size_t i = 0; i < c.op_us.size(); ++i) {
    c.op_us[i] = next() % 7 == 0 ? 0.0 : static_cast<double>(next() % 1000000) / 997.0;
    c.op_launches[i] = 1;
  }
  for (std::size_t a = 0; a < attention_types; ++a) {
    c.attention_us.push_back(static_cast<double>(next() % 100000) / 31.0);
    c.attention_launches.push_back(next() % 2 == 0 ? 2 : 1);
    c.attention_gapped_launches.push_back(
        c.attention_launches.back() == 2 && next() % 2 == 0 ? 1 : c.attention_launches.back());
  }
  c.host_plan_us = static_cast<double>(next() % 100) / 7.0;
  return c;
}

TEST(FastPaths, StepTimelineWithoutPredecessorsIsTheDagWalk) {
  const Catalog& c = defaultCatalog();
  const LaunchCosts launch{
      .kernel_launch_us = 5.3, .graph_replay_base_us = 11.0, .graph_replay_per_node_us = 0.7, .eager_gap_us = 1.9};
  const std::array modes{GraphMode::Eager, GraphMode::Full, GraphMode::Piecewise};
  for (const char* model : {"llama-3.1-8b", "gpt-oss-120b", "deepseek-v3", "gemma-3-27b", "qwen3-30b-a3b"}) {
    const ModelSpec& m = c.model(model);
    for (const bool decode : {true, false}) {
      const StepGraph g(m, decode);
      std::vector<StepCosts> costs;
      std::vector<StepLane> lanes;
      for (unsigned seed = 0; seed < 12; ++seed) costs.push_back(syntheticCosts(m.attention_layers.size(), seed));
      // One negative duration: the stream no longer bounds the predecessors; both must still agree.
      costs[5].op_us[static_cast<std::size_t>(StepOp::Act)] = -3.0;
      for (std::size_t i = 0; i < costs.size(); ++i) lanes.push_back({&costs[i], modes.at(i % 3)});
      std::vector<double> times(lanes.size());
      simulateStepTimes(g, lanes, launch, times);
      for (std::size_t i = 0; i < lanes.size(); ++i) {
        const std::string what =
            fmt::format("{} decode={} lane {} mode {}", model, decode, i, graphModeName(lanes[i].mode));
        const StepTimeline reference = simulateStepReference(g, costs[i], lanes[i].mode, launch);
        expectSameTimeline(simulateStep(g, costs[i], lanes[i].mode, launch), reference, what);
        EXPECT_EQ(bits(times[i]), bits(reference.step_us)) << what;
      }
    }
  }
}

TEST(FastPaths, NegativeDurationMakesTheDagWalkDifferFromStreamOrder) {
  // The case the fallback exists for: a node whose predecessor ends after the stream is free again.
  const StepGraph g(defaultCatalog().model("deepseek-v3"), true);
  StepCosts c = syntheticCosts(1, 3);
  c.op_us[static_cast<std::size_t>(StepOp::SharedDown)] = -50.0;
  const LaunchCosts launch{
      .kernel_launch_us = 0, .graph_replay_base_us = 0, .graph_replay_per_node_us = 0, .eager_gap_us = 0};
  const StepTimeline reference = simulateStepReference(g, c, GraphMode::Full, launch);
  double serial = 0;  // each node starts when the previous one ends
  for (const ScheduledNode n : g.schedule()) {
    serial += n.launch == NodeLaunch::Attention ? c.attention_us[0] : c.op_us[n.slot];
  }
  EXPECT_NE(reference.step_us, serial);
  EXPECT_EQ(bits(simulateStep(g, c, GraphMode::Full, launch).step_us), bits(reference.step_us));
}

// Hardware × models × engines × KV dtypes × TP × graphs on and off, every workload class, batches on,
// between and above the engines' capture sizes.
const char* kSample = R"(name: sample
hardware: [a100-sxm-80g, b200, mi300x]
models: [llama-3.1-8b, gpt-oss-120b, deepseek-v3, gemma-3-27b, qwen3-30b-a3b]
engines: [vllm, sglang, rtp-llm]
kv_dtypes: [default, fp8]
tp: [1, 8]
cuda_graphs: [on, off]
workloads:
  - decode: {batch: [1, 3, 48, 200, 513, 1000], context: [700, 32768]}
  - prefill: {length: [100, 8192], batch: 2}
  - extend: {chunk: [512], prefix: [4096]}
  - mixed: ["1x2048@10240,31x1@4096"]
  - verify: {batch: [5], context: [4096], draft_tokens: [4], topk: 2, algorithm: eagle}
drop:
  - "tp == 8 && model != 'deepseek-v3' && model != 'gpt-oss-120b'"
)";

void expectSameStep(const StepPrediction& fast, const Prediction& p, const std::string& what) {
  EXPECT_EQ(bits(fast.attention_us), bits(p.attention_us)) << what;
  EXPECT_EQ(fast.bound, p.attention.front().cost.bound) << what;
  EXPECT_EQ(bits(fast.eager_us), bits(p.eager.step_us)) << what;
  EXPECT_EQ(bits(fast.graph_us), bits(p.graph.step_us)) << what;
  EXPECT_EQ(fast.graph_mode, p.graph_decision.mode) << what;
  EXPECT_EQ(bits(fast.eager_band), bits(p.uncertainty.eager_band)) << what;
  EXPECT_EQ(bits(fast.graph_band), bits(p.uncertainty.graph_band)) << what;
  EXPECT_EQ(bits(fast.eager_tie_band), bits(p.uncertainty.eager_tie_band)) << what;
  EXPECT_EQ(bits(fast.graph_tie_band), bits(p.uncertainty.graph_tie_band)) << what;
  EXPECT_EQ(fast.provenance, p.uncertainty.provenance) << what;
}

TEST(FastPaths, PredictStepsIsPredictOnEveryBackendOverACatalogSample) {
  const Catalog& c = defaultCatalog();
  const SweepSpec spec = parseSweepSpec(kSample, "sample.yaml", c);
  const SweepPlan plan = planSweep(spec, {});
  std::map<std::string, std::shared_ptr<const ModelSpec>> models;
  for (const auto& id : spec.models) models[id] = std::make_shared<const ModelSpec>(c.model(id));
  std::vector<SweepGroup> groups;
  for (const auto& g : plan.groups) {
    groups.push_back(evaluateGroup(c, g.scenario, models.at(g.scenario.model), g.engine->backends));
  }
  // Per workload, every valid backend of every group at once: one call spans models, hardware,
  // engines, KV dtypes and TP sizes, as well as one group's backends.
  std::size_t compared = 0;
  for (const SweepWorkload& w : spec.workloads) {
    std::vector<const Predictor*> predictors;
    std::vector<std::string> names;
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      if (plan.groups[gi].workload_class != workloadClass(w.workload, w.spec_algorithm)) continue;
      for (const auto& cand : groups[gi].candidates) {
        if (!cand.predictor) continue;
        predictors.push_back(&*cand.predictor);
        names.push_back(plan.groups[gi].key_prefix + "|" + cand.backend + "|" + w.label);
      }
    }
    std::vector<StepPrediction> fast(predictors.size());
    Predictor::predictSteps(predictors, w.workload, fast);
    for (std::size_t i = 0; i < predictors.size(); ++i) {
      if (!test::checkedInThisBuild(i)) continue;
      expectSameStep(fast[i], predictors[i]->predict(w.workload), names[i]);
      ++compared;
    }
  }
  EXPECT_GT(compared, test::sweepFloor(3000)) << "the sample covers the catalog";
  RecordProperty("predictions_compared", static_cast<int>(compared));
}

}  // namespace
}  // namespace attnsim
