#pragma once
// Read-only queries over a study's sweep tables (docs/STORE.md) for the reports: the sweeps with
// their provenance, the catalog they ran with, every point with the engine's choice, and every
// candidate at every point with its prediction. Rows come in a fixed order, so a report built
// from one store is the same every time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/CatalogSource.hpp"
#include "study/Store.hpp"

namespace attnsim {

struct StudySweep {
  std::int64_t id = 0;
  std::string name, spec_hash, catalog_hash, calibration, program_version;
  std::int64_t points = 0;         // of the whole sweep, after filters
  std::int64_t stored_points = 0;  // in this store
};
// Every sweep of the store, by id.
std::vector<StudySweep> studySweeps(const Store& store);
// The sweep a report reads: `name` (a sweep's name or id) when given (UsageError listing the names when absent), else
// the one sweep of the store (UsageError when there is none or several). Where several sweeps share the name, the
// one swept under `catalog_hash` (the running catalog's) is taken when there is exactly one.
StudySweep chooseSweep(const Store& store, const std::string& name, const std::string& catalog_hash = "");

// The catalog files the sweep stored (empty when the store has none for that hash).
std::vector<CatalogFile> storedCatalogFiles(const Store& store, const std::string& catalog_hash);

struct StudyPoint {
  std::int64_t id = 0, group = 0;
  std::string hardware, model, engine;
  std::optional<std::string> kv_dtype;  // as the spec asked; nullopt: the engine's default
  std::optional<std::int64_t> page_size;
  std::optional<std::string> weight_dtype;  // as the spec asked; nullopt: the model's own
  std::int64_t tp = 1;
  bool cuda_graphs = true;
  std::string workload_class, phase, workload;
  std::int64_t batch = 0, q_len = 0, context = 0, tokens = 0;
  bool valid = false;
  std::string refusal;            // the engine's message when it refuses the configuration
  std::string selected_kv_dtype;  // after the engine's rules ("" when refused)
  std::optional<std::int64_t> best_slot, default_slot, default_rank;
  std::optional<double> regret, regret_us;
  // The default is tied with the fastest within their tie bands (nullopt: no default, or a
  // point written before schema 4).
  std::optional<bool> default_within_band;
  // The engine's deployment holds the batch in its KV pool (nullopt: not assessed, a point written
  // before schema 6 or an engine without a serving model); the reason ("weights", "kv_cache") and
  // the KV MiB per GPU it needs against the pool's.
  std::optional<bool> memory_fits;
  std::string memory_reason;
  std::optional<double> memory_need_mib, memory_have_mib;
  // The engine accepts the point and its deployment is not known not to fit.
  [[nodiscard]] bool deployable() const { return valid && memory_fits.value_or(true); }
  // "not deployable (memory): ..." with by how much; "" when it fits or was not assessed.
  [[nodiscard]] std::string memoryNote() const;
};
// Every point of the sweep with its group and the engine's selection, by point id.
std::vector<StudyPoint> studyPoints(const Store& store, std::int64_t sweep);

struct StudyCandidate {
  std::int64_t point = 0, slot = 0;
  std::string engine, backend, variant;
  bool valid = false, engine_default = false;
  std::string reason;      // the engine's refusal when forced
  bool predicted = false;  // false: no prediction row (refused, or the point refused as a whole)
  double attention_us = 0, eager_us = 0, graph_us = 0, step_us = 0;
  std::string bound, graph_mode;
  std::int64_t rank = 0;
  double band = 0;         // relative band of step_us (0 for a row written before schema 4)
  double tie_band = 0;     // the attention part's alone, for comparing backends at one point
  std::string provenance;  // measured, published, default ("" before schema 4)
};
// Every candidate at every point, with its prediction where there is one, by point and slot.
std::vector<StudyCandidate> studyCandidates(const Store& store, std::int64_t sweep);

}  // namespace attnsim
