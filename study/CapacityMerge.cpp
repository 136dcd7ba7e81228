// `attnsim store merge` for the capacity tables (docs/STORE.md, "Capacity"). Their ids are local
// to each file, so every row gets an id in the merged store and its children follow it; a row equal
// in every column (its parent ids mapped) to one already there is that row, so merging a store again
// adds nothing.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "study/CapacityStore.hpp"
#include "study/StoreStatement.hpp"

namespace attnsim {

namespace {

struct Remap {
  const char* column;  // a column holding a parent id
  const char* map;     // the parent's temp map table
};

// A table with an id: its rows map to an equal row of the merged store or to a fresh id.
struct IdTable {
  const char* name;
  const char* map;
  std::vector<Remap> remaps;
};

std::vector<std::string> columnsOf(sqlite3* db, const char* table) {
  Statement s(db, "SELECT name FROM pragma_table_info(?, 'src') WHERE name != 'id' ORDER BY cid");
  s.bindStatic(1, table);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

// The source row's value of `column`, its parent id mapped into the merged store.
std::string sourceValue(const std::string& column, const std::vector<Remap>& remaps) {
  for (const auto& r : remaps) {
    if (column == r.column) return fmt::format("(SELECT new FROM temp.{} WHERE old = s.{})", r.map, column);
  }
  return "s." + column;
}

std::string mapIdTableSql(sqlite3* db, const IdTable& t) {
  const std::vector<std::string> columns = columnsOf(db, t.name);
  std::vector<std::string> equal, values;
  equal.reserve(columns.size());
  values.reserve(columns.size());
  for (const auto& c : columns) {
    values.push_back(sourceValue(c, t.remaps));
    equal.push_back(fmt::format("m.{} IS {}", c, values.back()));
  }
  return fmt::format(
      "DROP TABLE IF EXISTS temp.{map};"
      "CREATE TEMP TABLE {map} (old INTEGER PRIMARY KEY, new INTEGER, fresh INTEGER NOT NULL);"
      "INSERT INTO temp.{map} (old, new, fresh) SELECT s.id, "
      "(SELECT m.id FROM main.{t} m WHERE {eq} ORDER BY m.id LIMIT 1), 0 FROM src.{t} s;"
      "INSERT OR REPLACE INTO temp.{map} (old, new, fresh) SELECT old, "
      "(SELECT coalesce(max(id), 0) FROM main.{t}) + row_number() OVER (ORDER BY old), 1 "
      "FROM temp.{map} WHERE new IS NULL;"
      "INSERT INTO main.{t} (id, {cols}) SELECT map.new, {vals} FROM src.{t} s "
      "JOIN temp.{map} map ON map.old = s.id WHERE map.fresh = 1;",
      fmt::arg("map", t.map), fmt::arg("t", t.name), fmt::arg("eq", fmt::join(equal, " AND ")),
      fmt::arg("cols", fmt::join(columns, ", ")), fmt::arg("vals", fmt::join(values, ", ")));
}

// Rows of a run's child table, copied only for runs new to the merged store.
std::string copyRunChildrenSql(sqlite3* db, const char* table) {
  const std::vector<std::string> columns = columnsOf(db, table);
  std::vector<std::string> values;
  values.reserve(columns.size());
  for (const auto& c : columns) values.push_back(c == "run" ? "map.new" : "s." + c);
  return fmt::format(
      "INSERT INTO main.{t} ({cols}) SELECT {vals} FROM src.{t} s JOIN temp.serve_run_map map ON map.old = s.run "
      "WHERE map.fresh = 1;",
      fmt::arg("t", table), fmt::arg("cols", fmt::join(columns, ", ")), fmt::arg("vals", fmt::join(values, ", ")));
}

}  // namespace

void mergeCapacityTables(sqlite3* db, const std::string& label) {
  const std::vector<IdTable> tables = {
      {"capacity_studies", "capacity_study_map", {}},
      {"capacity_configs", "capacity_config_map", {{"study", "capacity_study_map"}}},
      {"serve_runs", "serve_run_map", {{"config", "capacity_config_map"}}},
  };
  for (const auto& t : tables) execSql(db, mapIdTableSql(db, t).c_str(), label);
  for (const char* child : {"serve_requests", "serve_timeline"}) {
    execSql(db, copyRunChildrenSql(db, child).c_str(), label);
  }
  execSql(db, "DROP TABLE temp.capacity_study_map; DROP TABLE temp.capacity_config_map; DROP TABLE temp.serve_run_map;",
          label);
}

}  // namespace attnsim
