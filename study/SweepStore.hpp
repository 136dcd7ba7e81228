#pragma once
// The sweep tables of a store (docs/STORE.md): the sweep and its runs, groups with the engine's
// selection and every candidate's verdict, points and predictions; and merging shard stores.
#include <cstdint>
#include <string>
#include <vector>

#include "catalog/CatalogSource.hpp"
#include "study/Store.hpp"
#include "study/StoreStatement.hpp"
#include "study/SweepGroups.hpp"
#include "study/SweepPlan.hpp"

namespace attnsim {

// The sweeps row (kept when present: its id is the spec, catalog and calibration).
void writeSweepHeader(Store& store, std::int64_t sweep, const SweepSpec& spec, const std::string& catalog_hash,
                      const std::string& program_version, std::int64_t points);
// Which point ids below `id_space` the store holds for the sweep (1: done).
std::vector<char> storedPoints(const Store& store, std::int64_t sweep, std::int64_t id_space);
// Groups, selections and candidates of the evaluated groups (`evaluated` marks them), in one transaction.
void writeGroups(Store& store, std::int64_t sweep, const SweepPlan& plan, const std::vector<SweepGroup>& groups,
                 const std::vector<char>& evaluated);
std::int64_t beginRun(Store& store, std::int64_t sweep, SweepShard shard, int jobs, const std::string& version);
void endRun(Store& store, std::int64_t run, std::int64_t points_written, const std::string& status);
// The catalog's YAML files, so reports can rebuild it from the store (kept once per hash).
void storeCatalogFiles(Store& store, const std::string& catalog_hash, const std::vector<CatalogFile>& files);

// Points and their predictions, batch after batch inside one open transaction.
class SweepWriter {
 public:
  SweepWriter(Store& store, std::int64_t sweep, const SweepSpec& spec, const SweepPlan& plan);
  void begin();
  void write(const SweepBatch& batch);
  void commit();
  [[nodiscard]] bool open() const { return open_; }

 private:
  Store& store_;
  std::int64_t sweep_;
  const SweepSpec& spec_;
  const SweepPlan& plan_;
  Statement point_, prediction_;
  std::string key_;
  bool open_ = false;
};

// Copies every sweep, run, group, point and prediction, and the measurements and calibrations,
// of `inputs` into `out` (created when new). Rows with the same key are the same row.
void mergeStores(const std::string& out, const std::vector<std::string>& inputs);

}  // namespace attnsim
