// The store's schema (docs/STORE.md), its migrations, and the statement helpers.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <thread>

#include "core/Error.hpp"
#include "study/CapacityStore.hpp"
#include "study/Store.hpp"
#include "study/StoreStatement.hpp"

namespace attnsim {

namespace {

std::string sqliteError(sqlite3* db) {
  std::string msg = sqlite3_errmsg(db);
  // A full disk or a file-size limit (ulimit -f) shows as SQLITE_FULL or as a failed write: say so,
  // and that the open transaction is rolled back, so the store keeps what was committed before.
  const int code = sqlite3_errcode(db);
  if (code == SQLITE_FULL || code == SQLITE_IOERR) {
    msg +=
        ": could not write the store (is the disk full, or the file size limited?); it keeps what was committed "
        "before, and the same command resumes once there is room";
  }
  return msg;
}

}  // namespace

Statement::Statement(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
    throw InputError(fmt::format("SQLite: {}", sqlite3_errmsg(db)));
  }
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) {
    const std::string msg = sqliteError(db_);
    sqlite3_reset(stmt_);
    throw InputError(fmt::format("SQLite: {}", msg));
  }
  return false;
}

void execSql(sqlite3* db, const char* sql, const std::string& path) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string msg =
        error && sqlite3_errcode(db) != SQLITE_FULL && sqlite3_errcode(db) != SQLITE_IOERR ? error : sqliteError(db);
    sqlite3_free(error);
    throw InputError(fmt::format("SQLite ({}): {}", path, msg));
  }
}

WriteTransaction::WriteTransaction(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {
  execSql(db_, "BEGIN IMMEDIATE;", path_);
}

WriteTransaction::~WriteTransaction() {
  if (open_) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
  execSql(db_, "COMMIT;", path_);
  open_ = false;
}

namespace {

// Version 2: measurements, calibrations, overhead fits (attnsim measurements / calibrate).
constexpr const char* kStudyTables = R"(
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
  CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, source TEXT, line INTEGER, device TEXT, hardware TEXT, date TEXT, torch TEXT,
    triton TEXT, cuda TEXT, kind TEXT, impl TEXT, kernel TEXT, phase TEXT, batch INTEGER, q_len INTEGER,
    kv_len INTEGER, heads INTEGER, kv_heads INTEGER, head_dim INTEGER, causal INTEGER, dtype TEXT,
    median_us REAL, p20_us REAL, p80_us REAL, runs INTEGER, flops REAL, bytes REAL, note TEXT,
    page_size INTEGER NOT NULL DEFAULT 0, UNIQUE (source, line));
  CREATE TABLE IF NOT EXISTS calibrations (
    id INTEGER PRIMARY KEY, hardware TEXT, kernel TEXT, phase TEXT, compute_efficiency REAL, memory_efficiency REAL,
    fixed_us REAL, key_ns REAL, points INTEGER, fit_mape REAL, source TEXT, created TEXT, catalog_hash TEXT,
    heldout_mape REAL, heldout_p90_abs_rel_error REAL, heldout_points INTEGER);
  CREATE TABLE IF NOT EXISTS overhead_fits (
    id INTEGER PRIMARY KEY, hardware TEXT, kernel_launch_us REAL, graph_replay_base_us REAL,
    graph_node_us REAL, points INTEGER, source TEXT, created TEXT, catalog_hash TEXT);)";

// Version 3: sweeps (attnsim sweep). Every key is stable across runs, shards and machines, so
// shard files merge by plain INSERT OR IGNORE.
constexpr const char* kSweepTables = R"(
  CREATE TABLE IF NOT EXISTS catalog_files (catalog_hash TEXT, path TEXT, content TEXT,
    PRIMARY KEY (catalog_hash, path)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS sweeps (id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec_text TEXT NOT NULL,
    spec_hash TEXT NOT NULL, catalog_hash TEXT NOT NULL, calibration TEXT NOT NULL, program_version TEXT NOT NULL,
    points INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS sweep_runs (id INTEGER PRIMARY KEY, sweep INTEGER NOT NULL, shard INTEGER NOT NULL,
    shards INTEGER NOT NULL, jobs INTEGER NOT NULL, program_version TEXT NOT NULL, started TEXT NOT NULL,
    finished TEXT, points_written INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS sweep_groups (sweep INTEGER, id INTEGER, hardware TEXT NOT NULL, model TEXT NOT NULL,
    engine TEXT NOT NULL, kv_dtype TEXT, page_size INTEGER, tp INTEGER NOT NULL, cuda_graphs INTEGER NOT NULL,
    workload_class TEXT NOT NULL, PRIMARY KEY (sweep, id)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS selections (sweep INTEGER, grp INTEGER, valid INTEGER NOT NULL, refusal TEXT,
    backend TEXT, variant TEXT, prefill_backend TEXT, decode_backend TEXT, kv_dtype TEXT, page_size INTEGER,
    notes TEXT NOT NULL, PRIMARY KEY (sweep, grp)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS candidates (sweep INTEGER, grp INTEGER, slot INTEGER, engine TEXT NOT NULL,
    backend TEXT NOT NULL, variant TEXT, valid INTEGER NOT NULL, reason TEXT, engine_default INTEGER NOT NULL,
    PRIMARY KEY (sweep, grp, slot)) WITHOUT ROWID;
  CREATE VIEW IF NOT EXISTS rejections AS
    SELECT sweep, grp, engine, backend, reason FROM candidates WHERE valid = 0;
  CREATE TABLE IF NOT EXISTS points (sweep INTEGER, id INTEGER, grp INTEGER NOT NULL, key TEXT NOT NULL,
    phase TEXT NOT NULL, batch INTEGER NOT NULL, q_len INTEGER NOT NULL, context INTEGER NOT NULL,
    tokens INTEGER NOT NULL, workload TEXT NOT NULL, valid INTEGER NOT NULL, best_slot INTEGER,
    default_slot INTEGER, default_rank INTEGER, regret REAL, regret_us REAL, default_within_band INTEGER,
    PRIMARY KEY (sweep, id)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS predictions (sweep INTEGER, point INTEGER, slot INTEGER, attention_us REAL NOT NULL,
    eager_us REAL NOT NULL, graph_us REAL NOT NULL, step_us REAL NOT NULL, bound TEXT NOT NULL,
    graph_mode TEXT NOT NULL, rank INTEGER NOT NULL, band REAL, tie_band REAL, provenance TEXT,
    PRIMARY KEY (sweep, point, slot)) WITHOUT ROWID;)";

// Version 4: provenance and uncertainty bands (docs/STORE.md). Columns a version-4 store has that
// an older one lacks, added at the end of their table (so SELECT * orders agree for merges); rows
// written before the migration hold NULL in them.
struct AddedColumn {
  const char* table;
  const char* column;
  const char* type;
};
// Version 5 adds the measurement columns of converted kernel databases (window, query dtype, KV write,
// engine, origin); version 6 the memory verdict of every sweep point (NULL: written before it, not assessed);
// version 7 a sweep group's weight dtype (NULL: the model's own, as every group written before it);
// version 8 the memory verdict of every prediction, its backend's own deployment (NULL: written before it),
// and a moe measurement's active experts (0: balanced routing, as every row written before it); version 9 a
// moe measurement's weight matrices per expert (0: three, gated, as every row written before it).
constexpr std::array<AddedColumn, 25> kAddedColumns{{
    {"calibrations", "heldout_mape", "REAL"},
    {"calibrations", "heldout_p90_abs_rel_error", "REAL"},
    {"calibrations", "heldout_points", "INTEGER"},
    {"points", "default_within_band", "INTEGER"},
    {"predictions", "band", "REAL"},
    {"predictions", "tie_band", "REAL"},
    {"predictions", "provenance", "TEXT"},
    {"measurements", "window", "INTEGER NOT NULL DEFAULT 0"},
    {"measurements", "q_dtype", "TEXT NOT NULL DEFAULT ''"},
    {"measurements", "kv_write", "INTEGER NOT NULL DEFAULT 0"},
    {"measurements", "l2_warm", "INTEGER NOT NULL DEFAULT 0"},
    {"measurements", "engine", "TEXT NOT NULL DEFAULT ''"},
    {"measurements", "engine_version", "TEXT NOT NULL DEFAULT ''"},
    {"measurements", "origin", "TEXT NOT NULL DEFAULT ''"},
    {"points", "memory_fits", "INTEGER"},
    {"points", "memory_reason", "TEXT"},
    {"points", "memory_need_mib", "REAL"},
    {"points", "memory_have_mib", "REAL"},
    {"sweep_groups", "weight_dtype", "TEXT"},
    {"predictions", "memory_fits", "INTEGER"},
    {"predictions", "memory_reason", "TEXT"},
    {"predictions", "memory_need_mib", "REAL"},
    {"predictions", "memory_have_mib", "REAL"},
    {"measurements", "active_experts", "INTEGER NOT NULL DEFAULT 0"},
    {"measurements", "expert_matrices", "INTEGER NOT NULL DEFAULT 0"},
}};

void addMissingColumns(sqlite3* db, const std::string& path) {
  for (const auto& c : kAddedColumns) {
    Statement has(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?");
    has.bind(1, std::string(c.table));
    has.bind(2, std::string(c.column));
    if (has.step()) continue;
    execSql(db, fmt::format("ALTER TABLE {} ADD COLUMN {} {};", c.table, c.column, c.type).c_str(), path);
  }
}

std::optional<std::string> schemaVersion(sqlite3* db) {
  Statement has(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!has.step()) return std::nullopt;
  Statement version(db, "SELECT value FROM meta WHERE key = 'schema_version'");
  return version.step() ? std::optional<std::string>(version.text(0)) : std::nullopt;
}

// Switching a new file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once,
// without the busy handler, while another process opening the same new file holds a lock (two sweeps
// started together on one --db): retry for up to a minute, then fail with SQLite's message.
void enableWal(sqlite3* db, const std::string& path) {
  constexpr int kAttempts = 6000;
  int rc = SQLITE_BUSY;
  for (int attempt = 0; attempt < kAttempts && rc == SQLITE_BUSY; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL;", nullptr, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) execSql(db, "PRAGMA journal_mode=WAL;", path);  // fails again, with SQLite's message
}

}  // namespace

void createOrMigrateSchema(sqlite3* db, const std::string& path) {
  enableWal(db, path);
  WriteTransaction t(db, path);
  const auto found = schemaVersion(db);
  const std::string current = std::to_string(kStoreSchemaVersion);
  // Version 1 measured without page sizes: its rows cannot be told apart, so it is refused.
  if (found && *found != "2" && *found != "3" && *found != "4" && *found != "5" && *found != "6" && *found != "7" &&
      *found != current) {
    throw UsageError(fmt::format(
        "--db {}: a store of schema version {}, this attnsim reads versions 2 to {}; import the measurements "
        "into a new store (or use the attnsim that wrote it)",
        path, *found, kStoreSchemaVersion));
  }
  // 2 -> 3: the sweep tables, added alongside; nothing of version 2 changes.
  execSql(db, kStudyTables, path);
  execSql(db, kSweepTables, path);
  // 3 -> 4: band and provenance columns (NULL on the rows already there); 4 -> 5: the converted
  // measurement columns (their defaults on the rows already there); 5 -> 6: the points' memory
  // verdict (NULL on the points already there); 6 -> 7: the groups' weight dtype (NULL: the model's own);
  // 7 -> 8: the moe rows' active experts (0 on the rows already there: balanced routing).
  addMissingColumns(db, path);
  createCapacityTables(db, path);  // versionless: CREATE TABLE IF NOT EXISTS (study/CapacityStore)
  Statement set(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)");
  set.bind(1, current);
  set.run();
  t.commit();
}

}  // namespace attnsim
