#pragma once
// A sweep spec expanded into numbered groups and points, and the rows evaluation produces: shared
// by the sweep runner (study/Sweep.cpp) and its writer (study/SweepStore.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/KernelEfficiency.hpp"
#include "study/Sweep.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim {

struct PlannedGroup {
  std::int64_t id = 0;  // combination × workload class: stable for one spec
  Scenario scenario;
  std::string workload_class;
  const SweepEngine* engine = nullptr;
  std::string key_prefix;  // "h100-sxm|llama-3.1-8b|vllm|kv=default|page=default|tp=1|graphs=on"
};

struct PlannedPoint {
  std::int64_t id = 0;         // combination × workload: stable for one spec
  std::uint32_t group = 0;     // index into SweepPlan::groups
  std::uint32_t workload = 0;  // index into SweepSpec::workloads
};

struct SweepPlan {
  std::int64_t total_points = 0;     // the whole sweep, after filters
  std::int64_t id_space = 0;         // point ids are below this
  std::vector<PlannedGroup> groups;  // the groups this shard's points use
  std::vector<PlannedPoint> points;  // this shard's points, by id
};

SweepPlan planSweep(const SweepSpec& spec, SweepShard shard);
std::string pointKey(const PlannedGroup& g, const SweepWorkload& w);

struct PredictionRow {
  std::int32_t slot = 0;
  std::int32_t rank = 0;  // 1: fastest valid candidate of the point
  double attention_us = 0, eager_us = 0, graph_us = 0, step_us = 0;
  const char* bound = "";
  const char* graph_mode = "";
  double band = 0;      // relative band of step_us
  double tie_band = 0;  // the attention part's alone (PredictionUncertainty)
  Provenance provenance = Provenance::Default;
  // This backend's own deployment (SweepCandidate::memory), as PointRow's verdict is the engine's.
  std::int8_t memory_fits = -1;
  const char* memory_reason = nullptr;
  double memory_need_mib = 0, memory_have_mib = 0;
};

struct PointRow {
  std::int64_t id = 0;
  std::uint32_t group = 0, workload = 0;
  bool valid = false;  // the engine's own selection accepts the point
  std::int32_t best_slot = -1, default_slot = -1, default_rank = 0;
  double regret = 0, regret_us = 0;
  bool default_within_band = false;  // the default's band overlaps the fastest one's (withinBands)
  // The memory verdict of the engine's deployment (SweepGroup::memory): -1 not assessed, 0 does not fit, 1 fits;
  // the reason ("weights": no KV pool left, "kv_cache": the batch's KV exceeds it) and the KV MiB per GPU.
  std::int8_t memory_fits = -1;
  const char* memory_reason = nullptr;
  double memory_need_mib = 0, memory_have_mib = 0;
  std::uint32_t first = 0, count = 0;  // its rows in SweepBatch::predictions
};

struct SweepBatch {
  std::vector<PointRow> points;
  std::vector<PredictionRow> predictions;
  void clear() {
    points.clear();
    predictions.clear();
  }
};

struct SweepGroup;
// One point: every valid candidate predicted, ranked by step time (ties by name, as rank does);
// appends its predictions to `out` (no allocation once `out` has grown).
void evaluateSweepPoint(const SweepGroup& g, const SweepWorkload& w, PointRow& row, std::vector<PredictionRow>& out);

}  // namespace attnsim
