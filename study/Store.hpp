#pragma once
// One SQLite file per study: measurements and calibrations, each row with its source.
#include <sqlite3.h>

#include <optional>
#include <string>
#include <vector>

namespace attnsim {

// A measured point as imported (see measurements/README.md for the columns).
struct MeasurementRow {
  std::string source;  // file it came from
  int line = 0;
  std::string device, hardware, date, torch, triton, cuda;
  std::string kind, impl, kernel, phase, dtype, note;
  std::int64_t batch = 0, q_len = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = false;
  double median_us = 0, p20_us = 0, p80_us = 0, flops = 0, bytes = 0;
  std::int64_t runs = 0;
  std::int64_t page_size = 0;  // 0: contiguous K and V; else the KV page (block) size in tokens
  // Schema 5: rows converted from another tool's kernel database (measurements/aic_convert.py).
  std::int64_t window = 0;             // sliding window in keys (0: full attention)
  std::string q_dtype;                 // the query's dtype in the kernel; empty: the compute dtype (bf16)
  bool kv_write = false;               // the timed call also writes the new tokens' K/V into the cache
  bool l2_warm = false;                // timed back to back on the same inputs without flushing the L2
  std::string engine, engine_version;  // the engine the kernel was timed in, where it was
  std::string origin;                  // repository@commit:path of the table the row came from
  // Schema 8: of a moe row, the distinct experts its routing reached (0: balanced, min(experts, tokens · top-k)).
  std::int64_t active_experts = 0;
  // Schema 9: of a moe row, an expert's weight matrices (0: 3, gated; 2: no gate, as Nemotron-H's).
  std::int64_t expert_matrices = 0;
};

struct CalibrationRow {
  std::string hardware, kernel;
  std::string phase;  // prefill (prefill, extend) or decode (decode, verify)
  double compute_efficiency = 0, memory_efficiency = 0, fixed_us = 0, key_ns = 0;
  int points = 0;
  double fit_mape = 0;
  std::string source;   // measurement files and holdout rule
  std::string created;  // ISO date
  std::string catalog_hash;
  // Residuals on the held-out points (schema 4; absent when the calibrate run recorded none).
  std::optional<double> heldout_mape = std::nullopt;
  std::optional<double> heldout_p90_abs_rel_error = std::nullopt;
  std::optional<int> heldout_points = std::nullopt;
};

struct OverheadRow {
  std::string hardware;
  double kernel_launch_us = 0, graph_replay_base_us = 0, graph_node_us = 0;
  int points = 0;
  std::string source, created, catalog_hash;
};

// The schema version this attnsim writes (docs/STORE.md lists each version's changes).
constexpr int kStoreSchemaVersion = 9;
// Creates every table, or migrates a store of an older version; a newer or unknown one is a
// UsageError naming both versions.
void createOrMigrateSchema(sqlite3* db, const std::string& path);

// Whether a command only reads the store (reports, --db calibrations) or also writes to it.
enum class StoreAccess { ReadWrite, ReadOnly };

// A writer's first check, before it reads its input: the store at `path` (or, when new, its folder) is
// writable to this process; the same UsageError as Store's ReadWrite open otherwise. Writes nothing.
void requireWritableStore(const std::string& path);

// When a sweep or capacity study is recorded: now, UTC, ISO 8601 to the second ("2026-11-28T10:15:00Z").
std::string utcTimestamp();

class Store {
 public:
  // ReadWrite: creates the schema when new, migrates an older one (docs/STORE.md), refuses a newer
  // one, and refuses a store the process may not write (a read-only file or folder) before writing
  // anything. ReadOnly: opens an existing store of the current schema without writing to it, so a
  // report runs on a read-only copy; a missing file or another schema version is a UsageError.
  explicit Store(const std::string& path, StoreAccess access = StoreAccess::ReadWrite);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Inserts all rows in one transaction: all or none.
  void insertMeasurements(const std::vector<MeasurementRow>& rows);
  [[nodiscard]] std::vector<MeasurementRow> measurements(const std::string& kind = "") const;
  void insertCalibration(const CalibrationRow& row);
  void insertOverheadFit(const OverheadRow& row);
  // The newest calibration of each (hardware, kernel, phase).
  [[nodiscard]] std::vector<CalibrationRow> latestCalibrations() const;

  // For the store's own writers (study/Sweep*): the connection and the file.
  [[nodiscard]] sqlite3* handle() const { return db_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  void exec(const char* sql) const;
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace attnsim
