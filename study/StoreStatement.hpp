#pragma once
// A prepared SQLite statement and a write transaction, for the store's own code (study/Store*,
// study/Sweep*). Errors become InputErrors naming SQLite's message.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnsim {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql);
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int i, const std::string& v) { sqlite3_bind_text(stmt_, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  // Text that outlives the statement's next step (a string literal, a catalog name).
  void bindStatic(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, int v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, const std::optional<std::string>& v) {
    if (v) {
      bind(i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  void bind(int i, const std::optional<std::int64_t>& v) {
    if (v) {
      bind(i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  void bind(int i, const std::optional<double>& v) {
    if (v) {
      bind(i, *v);
    } else {
      sqlite3_bind_null(stmt_, i);
    }
  }
  // Runs one step: true while it yields rows.
  bool step();
  // Runs an insert or update to completion and makes the statement ready for the next bindings.
  void run() {
    step();
    sqlite3_reset(stmt_);
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  [[nodiscard]] std::string text(int i) const {
    const auto* t = sqlite3_column_text(stmt_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  [[nodiscard]] double real(int i) const { return sqlite3_column_double(stmt_, i); }
  [[nodiscard]] std::int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  [[nodiscard]] bool isNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs SQL text (several statements); throws InputError naming `path` on failure.
void execSql(sqlite3* db, const char* sql, const std::string& path);

// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed uncommitted. Waits for another writer
// through the connection's busy timeout.
class WriteTransaction {
 public:
  WriteTransaction(sqlite3* db, std::string path);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  sqlite3* db_;
  std::string path_;
  bool open_ = true;
};

}  // namespace attnsim
