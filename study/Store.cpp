#include "study/Store.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "core/Error.hpp"
#include "study/StoreStatement.hpp"

namespace attnsim {

namespace {

sqlite3* openConnection(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw UsageError(fmt::format("--db {}: cannot open: {}", path, msg));
  }
  // Another process writing the same file holds the lock for one transaction at a time: wait.
  sqlite3_busy_timeout(db, 600000);
  return db;
}

// The schema version a reader finds, or nullopt where the file holds no attnsim store. A WAL store
// in a folder this process may not write has no -shm file to read through; such a store is read
// as immutable, which is what it is to this process.
std::optional<int> readerSchemaVersion(sqlite3*& db, const std::string& path) {
  const char* sql = "SELECT value FROM meta WHERE key = 'schema_version'";
  for (int attempt = 0; attempt < 2; ++attempt) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
    const int step = rc == SQLITE_OK ? sqlite3_step(s) : rc;
    const std::optional<int> version = step == SQLITE_ROW ? std::optional<int>(sqlite3_column_int(s, 0)) : std::nullopt;
    sqlite3_finalize(s);
    if (step == SQLITE_ROW || step == SQLITE_DONE) return version;
    if (attempt == 0 && (step & 0xff) == SQLITE_CANTOPEN) {
      sqlite3_close(db);
      db = openConnection("file:" + path + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
      continue;
    }
    if (std::string(sqlite3_errmsg(db)).starts_with("no such table")) return std::nullopt;
    throw UsageError(fmt::format("--db {}: cannot read: {}", path, sqlite3_errmsg(db)));
  }
  return std::nullopt;
}

UsageError readOnlyStore(const std::string& path) {
  return UsageError{
      fmt::format("--db {}: the store is read-only to this process (the file or its folder is not writable) and this "
                  "command writes to it; reports read a read-only store",
                  path)};
}

}  // namespace

void requireWritableStore(const std::string& path) {
  if (path == ":memory:") return;
  if (!std::filesystem::exists(path)) {
    std::filesystem::path folder = std::filesystem::path(path).parent_path();
    if (folder.empty()) folder = ".";
    // A missing folder is Store's own "cannot open" error; an existing one must take a new file.
    if (std::filesystem::is_directory(folder) && ::access(folder.c_str(), W_OK | X_OK) != 0) throw readOnlyStore(path);
    return;
  }
  // Opened without creating or writing: SQLite says whether it would write the file.
  sqlite3* db = openConnection(path, SQLITE_OPEN_READWRITE);
  const bool read_only = sqlite3_db_readonly(db, "main") == 1;
  sqlite3_close(db);
  if (read_only) throw readOnlyStore(path);
}

Store::Store(const std::string& path, StoreAccess access) : path_(path) {
  if (access == StoreAccess::ReadOnly) {
    if (path != ":memory:" && !std::filesystem::exists(path)) throw UsageError("--db " + path + ": no such file");
    db_ = openConnection(path, SQLITE_OPEN_READONLY);
    try {
      const auto version = readerSchemaVersion(db_, path);
      if (!version) throw UsageError(fmt::format("--db {}: not an attnsim store (no schema version)", path));
      if (*version != kStoreSchemaVersion) {
        throw UsageError(fmt::format(
            "--db {}: a store of schema version {}, this attnsim reads version {} without writing; any writing "
            "command (measurements import, sweep, calibrate) on a writable copy upgrades it",
            path, *version, kStoreSchemaVersion));
      }
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
    return;
  }
  // One thread uses a connection at a time (a sweep's writer owns its own): no per-call mutex.
  db_ = openConnection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  try {
    // SQLite opens a file it may not write read-only without a word; say so before any write fails.
    if (sqlite3_db_readonly(db_, "main") == 1) throw readOnlyStore(path);
    createOrMigrateSchema(db_, path);
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const char* sql) const { execSql(db_, sql, path_); }

void Store::insertMeasurements(const std::vector<MeasurementRow>& rows) {
  exec("BEGIN IMMEDIATE;");
  try {
    Statement s(db_, R"(INSERT OR REPLACE INTO measurements (source, line, device, hardware, date, torch, triton, cuda,
        kind, impl, kernel, phase, batch, q_len, kv_len, heads, kv_heads, head_dim, causal, dtype, median_us, p20_us,
        p80_us, runs, flops, bytes, note, page_size, window, q_dtype, kv_write, l2_warm, engine, engine_version,
        origin, active_experts, expert_matrices) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,
        ?,?))");
    for (const auto& r : rows) {
      int i = 1;
      s.bind(i++, r.source);
      s.bind(i++, static_cast<std::int64_t>(r.line));
      for (const auto* t :
           {&r.device, &r.hardware, &r.date, &r.torch, &r.triton, &r.cuda, &r.kind, &r.impl, &r.kernel, &r.phase}) {
        s.bind(i++, *t);
      }
      for (const auto v : {r.batch, r.q_len, r.kv_len, r.heads, r.kv_heads, r.head_dim}) s.bind(i++, v);
      s.bind(i++, static_cast<std::int64_t>(r.causal));
      s.bind(i++, r.dtype);
      for (const auto v : {r.median_us, r.p20_us, r.p80_us}) s.bind(i++, v);
      s.bind(i++, r.runs);
      s.bind(i++, r.flops);
      s.bind(i++, r.bytes);
      s.bind(i++, r.note);
      s.bind(i++, r.page_size);
      s.bind(i++, r.window);
      s.bind(i++, r.q_dtype);
      s.bind(i++, static_cast<std::int64_t>(r.kv_write));
      s.bind(i++, static_cast<std::int64_t>(r.l2_warm));
      for (const auto* t : {&r.engine, &r.engine_version, &r.origin}) s.bind(i++, *t);
      s.bind(i++, r.active_experts);
      s.bind(i++, r.expert_matrices);
      s.step();
      s.reset();
    }
    exec("COMMIT;");
  } catch (...) {
    // SQLite has already rolled back after a full disk or an I/O error; a ROLLBACK then would fail
    // and replace the error that says what happened.
    if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<MeasurementRow> Store::measurements(const std::string& kind) const {
  Statement s(db_,
              R"(SELECT source, line, device, hardware, date, torch, triton, cuda, kind, impl, kernel, phase, batch,
      q_len, kv_len, heads, kv_heads, head_dim, causal, dtype, median_us, p20_us, p80_us, runs, flops, bytes, note,
      page_size, window, q_dtype, kv_write, l2_warm, engine, engine_version, origin, active_experts, expert_matrices FROM measurements WHERE (?1 = '' OR kind = ?1) ORDER BY source, line)");
  s.bind(1, kind);
  std::vector<MeasurementRow> out;
  while (s.step()) {
    MeasurementRow r;
    int i = 0;
    r.source = s.text(i++);
    r.line = static_cast<int>(s.integer(i++));
    for (auto* t :
         {&r.device, &r.hardware, &r.date, &r.torch, &r.triton, &r.cuda, &r.kind, &r.impl, &r.kernel, &r.phase}) {
      *t = s.text(i++);
    }
    for (auto* v : {&r.batch, &r.q_len, &r.kv_len, &r.heads, &r.kv_heads, &r.head_dim}) *v = s.integer(i++);
    r.causal = s.integer(i++) != 0;
    r.dtype = s.text(i++);
    r.median_us = s.real(i++);
    r.p20_us = s.real(i++);
    r.p80_us = s.real(i++);
    r.runs = s.integer(i++);
    r.flops = s.real(i++);
    r.bytes = s.real(i++);
    r.note = s.text(i++);
    r.page_size = s.integer(i++);
    r.window = s.integer(i++);
    r.q_dtype = s.text(i++);
    r.kv_write = s.integer(i++) != 0;
    r.l2_warm = s.integer(i++) != 0;
    for (auto* t : {&r.engine, &r.engine_version, &r.origin}) *t = s.text(i++);
    r.active_experts = s.integer(i++);
    r.expert_matrices = s.integer(i++);
    out.push_back(std::move(r));
  }
  return out;
}

void Store::insertCalibration(const CalibrationRow& c) {
  Statement s(db_,
              R"(INSERT INTO calibrations (hardware, kernel, phase, compute_efficiency, memory_efficiency, fixed_us,
      key_ns, points, fit_mape, source, created, catalog_hash, heldout_mape, heldout_p90_abs_rel_error,
      heldout_points) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?))");
  s.bind(1, c.hardware);
  s.bind(2, c.kernel);
  s.bind(3, c.phase);
  s.bind(4, c.compute_efficiency);
  s.bind(5, c.memory_efficiency);
  s.bind(6, c.fixed_us);
  s.bind(7, c.key_ns);
  s.bind(8, static_cast<std::int64_t>(c.points));
  s.bind(9, c.fit_mape);
  s.bind(10, c.source);
  s.bind(11, c.created);
  s.bind(12, c.catalog_hash);
  s.bind(13, c.heldout_mape);
  s.bind(14, c.heldout_p90_abs_rel_error);
  s.bind(15, c.heldout_points ? std::optional<std::int64_t>(*c.heldout_points) : std::nullopt);
  s.step();
}

void Store::insertOverheadFit(const OverheadRow& o) {
  Statement s(db_,
              R"(INSERT INTO overhead_fits (hardware, kernel_launch_us, graph_replay_base_us, graph_node_us, points,
      source, created, catalog_hash) VALUES (?,?,?,?,?,?,?,?))");
  s.bind(1, o.hardware);
  s.bind(2, o.kernel_launch_us);
  s.bind(3, o.graph_replay_base_us);
  s.bind(4, o.graph_node_us);
  s.bind(5, static_cast<std::int64_t>(o.points));
  s.bind(6, o.source);
  s.bind(7, o.created);
  s.bind(8, o.catalog_hash);
  s.step();
}

std::vector<CalibrationRow> Store::latestCalibrations() const {
  Statement s(
      db_, R"(SELECT hardware, kernel, phase, compute_efficiency, memory_efficiency, fixed_us, key_ns, points, fit_mape,
      source, created, catalog_hash, heldout_mape, heldout_p90_abs_rel_error, heldout_points FROM calibrations c WHERE id = (SELECT MAX(id) FROM calibrations d
      WHERE d.hardware = c.hardware AND d.kernel = c.kernel AND d.phase = c.phase) ORDER BY hardware, kernel, phase)");
  std::vector<CalibrationRow> out;
  while (s.step()) {
    CalibrationRow c;
    c.hardware = s.text(0);
    c.kernel = s.text(1);
    c.phase = s.text(2);
    c.compute_efficiency = s.real(3);
    c.memory_efficiency = s.real(4);
    c.fixed_us = s.real(5);
    c.key_ns = s.real(6);
    c.points = static_cast<int>(s.integer(7));
    c.fit_mape = s.real(8);
    c.source = s.text(9);
    c.created = s.text(10);
    c.catalog_hash = s.text(11);
    if (!s.isNull(12)) c.heldout_mape = s.real(12);
    if (!s.isNull(13)) c.heldout_p90_abs_rel_error = s.real(13);
    if (!s.isNull(14)) c.heldout_points = static_cast<int>(s.integer(14));
    out.push_back(std::move(c));
  }
  return out;
}

std::string utcTimestamp() {
  const auto t = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", t);
}

}  // namespace attnsim
