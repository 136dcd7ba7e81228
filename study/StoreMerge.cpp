// attnsim store merge: shard stores into one. Every sweep key is stable (docs/STORE.md), so a
// row present in two inputs is the same row and is kept once. The capacity tables' ids are local
// to each file: study/CapacityMerge remaps them.
#include <fmt/format.h>

#include "study/CapacityStore.hpp"
#include "study/StoreStatement.hpp"
#include "study/SweepStore.hpp"

namespace attnsim {

namespace {

constexpr const char* kMergeSql = R"(
  INSERT OR IGNORE INTO main.catalog_files SELECT * FROM src.catalog_files;
  INSERT OR IGNORE INTO main.sweeps SELECT * FROM src.sweeps;
  INSERT OR IGNORE INTO main.sweep_groups SELECT * FROM src.sweep_groups;
  INSERT OR IGNORE INTO main.selections SELECT * FROM src.selections;
  INSERT OR IGNORE INTO main.candidates SELECT * FROM src.candidates;
  INSERT OR IGNORE INTO main.points SELECT * FROM src.points;
  INSERT OR IGNORE INTO main.predictions SELECT * FROM src.predictions;
  INSERT INTO main.sweep_runs (sweep, shard, shards, jobs, program_version, started, finished, points_written, status)
    SELECT sweep, shard, shards, jobs, program_version, started, finished, points_written, status FROM src.sweep_runs;
  INSERT OR IGNORE INTO main.measurements (source, line, device, hardware, date, torch, triton, cuda, kind, impl,
    kernel, phase, batch, q_len, kv_len, heads, kv_heads, head_dim, causal, dtype, median_us, p20_us, p80_us, runs,
    flops, bytes, note, page_size)
    SELECT source, line, device, hardware, date, torch, triton, cuda, kind, impl, kernel, phase, batch, q_len, kv_len,
    heads, kv_heads, head_dim, causal, dtype, median_us, p20_us, p80_us, runs, flops, bytes, note, page_size
    FROM src.measurements;
  INSERT INTO main.calibrations (hardware, kernel, phase, compute_efficiency, memory_efficiency, fixed_us, key_ns,
    points, fit_mape, source, created, catalog_hash, heldout_mape, heldout_p90_abs_rel_error, heldout_points)
    SELECT hardware, kernel, phase, compute_efficiency, memory_efficiency, fixed_us, key_ns, points, fit_mape, source,
    created, catalog_hash, heldout_mape, heldout_p90_abs_rel_error, heldout_points FROM src.calibrations
    EXCEPT SELECT hardware, kernel, phase, compute_efficiency, memory_efficiency, fixed_us, key_ns, points, fit_mape,
    source, created, catalog_hash, heldout_mape, heldout_p90_abs_rel_error, heldout_points FROM main.calibrations;
  INSERT INTO main.overhead_fits (hardware, kernel_launch_us, graph_replay_base_us, graph_node_us, points, source,
    created, catalog_hash)
    SELECT hardware, kernel_launch_us, graph_replay_base_us, graph_node_us, points, source, created, catalog_hash
    FROM src.overhead_fits
    EXCEPT SELECT hardware, kernel_launch_us, graph_replay_base_us, graph_node_us, points, source, created,
    catalog_hash FROM main.overhead_fits;)";

}  // namespace

void mergeStores(const std::string& out, const std::vector<std::string>& inputs) {
  for (const auto& in : inputs) {
    // Opening checks the input's schema version (and brings a version-2 store up to date).
    const Store check(in);
  }
  Store dst(out);
  sqlite3* db = dst.handle();
  for (const auto& in : inputs) {
    Statement attach(db, "ATTACH DATABASE ? AS src");
    attach.bind(1, in);
    attach.run();
    try {
      WriteTransaction t(db, out);
      const std::string label = fmt::format("{} (merging {})", out, in);
      execSql(db, kMergeSql, label);
      mergeCapacityTables(db, label);
      t.commit();
    } catch (...) {
      execSql(db, "DETACH DATABASE src;", out);
      throw;
    }
    execSql(db, "DETACH DATABASE src;", out);
  }
}

}  // namespace attnsim
