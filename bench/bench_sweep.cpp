// The two halves of a sweep on one core, so `attnsim sweep throughput --bench` (both, on every
// core) can be read: evaluating points (selection shared, one Predictor::predict per valid
// backend) and storing them (SweepWriter: a point row and its predictions, one transaction per
// iteration). Items are predictions; allocs_per_prediction counts heap allocations in the loop.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "AllocationCounter.hpp"
#include "catalog/Catalog.hpp"
#include "study/Store.hpp"
#include "study/SweepGroups.hpp"
#include "study/SweepPlan.hpp"
#include "study/SweepStore.hpp"

namespace attnsim {
namespace {

const char* kSpec = R"(name: bench
hardware: [h100-sxm]
models: [llama-3.1-8b, deepseek-v3]
engines: [vllm]
workloads:
  - decode: {batch: 1..256x2, context: 1024..65536x2}
)";

struct Fixture {
  Catalog catalog = Catalog::loadDefault();
  SweepSpec spec = parseSweepSpec(kSpec, "bench.yaml", catalog);
  SweepPlan plan = planSweep(spec, {});
  std::vector<SweepGroup> groups;
  Fixture() {
    for (const auto& g : plan.groups) {
      groups.push_back(evaluateGroup(
          catalog, g.scenario, std::make_shared<const ModelSpec>(catalog.model(g.scenario.model)), g.engine->backends));
    }
  }
};

void reportPerPrediction(benchmark::State& state, std::int64_t predictions, std::int64_t allocations) {
  state.SetItemsProcessed(predictions);
  state.counters["allocs_per_prediction"] =
      predictions ? static_cast<double>(allocations) / static_cast<double>(predictions) : 0.0;
}

// The next point of the fixture's group `model`, round robin.
const PlannedPoint& nextPoint(const Fixture& f, std::uint32_t model, std::size_t& i) {
  const PlannedPoint* p = nullptr;
  do {
    p = &f.plan.points[i++ % f.plan.points.size()];
  } while (p->group != model);
  return *p;
}

// range(0): the model (0: Llama-3.1-8B, 32 layers; 1: DeepSeek-V3, 61 layers).
void BM_SweepEvaluatePoints(benchmark::State& state) {
  const Fixture f;
  SweepBatch batch;
  std::size_t i = 0;
  std::int64_t predictions = 0;
  const auto model = static_cast<std::uint32_t>(state.range(0));
  auto evaluate = [&] {
    const PlannedPoint& p = nextPoint(f, model, i);
    batch.clear();
    PointRow& row = batch.points.emplace_back();
    evaluateSweepPoint(f.groups[p.group], f.spec.workloads[p.workload], row, batch.predictions);
    return row.count;
  };
  for (std::size_t n = 0; n < f.plan.points.size(); ++n) evaluate();  // buffers grown
  const std::int64_t before = bench::allocations();
  for (auto _ : state) predictions += evaluate();
  reportPerPrediction(state, predictions, bench::allocations() - before);
}
BENCHMARK(BM_SweepEvaluatePoints)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// The per-prediction cost, each valid backend of a point predicted apart (Predictor::predict) or
// together (Predictor::predictSteps, what sweeps run). range(0): the model, as above.
void BM_PredictionEach(benchmark::State& state) {
  const Fixture f;
  std::size_t i = 0;
  std::int64_t predictions = 0;
  const auto model = static_cast<std::uint32_t>(state.range(0));
  const std::int64_t before = bench::allocations();
  for (auto _ : state) {
    const PlannedPoint& p = nextPoint(f, model, i);
    for (const auto& cand : f.groups[p.group].candidates) {
      if (!cand.predictor) continue;
      benchmark::DoNotOptimize(cand.predictor->predict(f.spec.workloads[p.workload].workload));
      ++predictions;
    }
  }
  reportPerPrediction(state, predictions, bench::allocations() - before);
}
BENCHMARK(BM_PredictionEach)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_PredictionSteps(benchmark::State& state) {
  const Fixture f;
  std::size_t i = 0;
  std::int64_t predictions = 0;
  const auto model = static_cast<std::uint32_t>(state.range(0));
  std::vector<const Predictor*> predictors;
  for (const auto& cand : f.groups[model].candidates) {
    if (cand.predictor) predictors.push_back(&*cand.predictor);
  }
  std::vector<StepPrediction> out(predictors.size());
  auto predict = [&] {
    Predictor::predictSteps(predictors, f.spec.workloads[nextPoint(f, model, i).workload].workload, out);
    benchmark::DoNotOptimize(out.data());
  };
  for (std::size_t n = 0; n < f.plan.points.size(); ++n) predict();  // per-thread buffers grown
  const std::int64_t before = bench::allocations();
  for (auto _ : state) {
    predict();
    predictions += static_cast<std::int64_t>(out.size());
  }
  reportPerPrediction(state, predictions, bench::allocations() - before);
}
BENCHMARK(BM_PredictionSteps)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_SweepStorePoints(benchmark::State& state) {
  const Fixture f;
  const auto path = std::filesystem::temp_directory_path() / "attnsim-bench-store.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  Store store(path.string());
  SweepWriter writer(store, 1, f.spec, f.plan);
  SweepBatch batch;
  for (std::uint32_t i = 0; i < f.plan.points.size(); ++i) {
    const PlannedPoint& p = f.plan.points[i];
    PointRow& row = batch.points.emplace_back();
    row.group = p.group;
    row.workload = p.workload;
    evaluateSweepPoint(f.groups[p.group], f.spec.workloads[p.workload], row, batch.predictions);
  }
  std::int64_t next_id = 0, predictions = 0;
  for (auto _ : state) {
    writer.begin();
    for (auto& row : batch.points) row.id = next_id++;  // new points each time, as a sweep writes
    writer.write(batch);
    writer.commit();
    predictions += static_cast<std::int64_t>(batch.predictions.size());
  }
  state.SetItemsProcessed(predictions);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}
BENCHMARK(BM_SweepStorePoints)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attnsim
