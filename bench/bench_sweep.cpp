// The two halves of a sweep on one core, so `attnsim sweep throughput --bench` (both, on every
// core) can be read: evaluating points (selection shared, one Predictor::predict per valid
// backend) and storing them (SweepWriter: a point row and its predictions, one transaction per
// iteration). Items are predictions.
#include <benchmark/benchmark.h>

#include <filesystem>

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

// range(0): the model (0: Llama-3.1-8B, 32 layers; 1: DeepSeek-V3, 61 layers).
void BM_SweepEvaluatePoints(benchmark::State& state) {
  const Fixture f;
  SweepBatch batch;
  std::size_t i = 0;
  std::int64_t predictions = 0;
  const auto model = static_cast<std::uint32_t>(state.range(0));
  for (auto _ : state) {
    const PlannedPoint* p = nullptr;
    do {
      p = &f.plan.points[i++ % f.plan.points.size()];
    } while (p->group != model);
    batch.clear();
    PointRow& row = batch.points.emplace_back();
    evaluateSweepPoint(f.groups[p->group], f.spec.workloads[p->workload], row, batch.predictions);
    predictions += row.count;
  }
  state.SetItemsProcessed(predictions);
}
BENCHMARK(BM_SweepEvaluatePoints)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

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
