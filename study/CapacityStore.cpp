// The capacity tables of the study store (docs/STORE.md, "Capacity") and their writers.
#include "study/CapacityStore.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "study/StoreStatement.hpp"

namespace attnsim {

namespace {

// Added beside the versioned schema with CREATE ... IF NOT EXISTS, so they need no version number:
// a file without them gains them when opened, and nothing older changes.
constexpr const char* kCapacityTables = R"(
  CREATE TABLE IF NOT EXISTS capacity_studies (id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec_text TEXT NOT NULL,
    spec_hash TEXT NOT NULL, catalog_hash TEXT NOT NULL, program_version TEXT NOT NULL, created TEXT NOT NULL,
    slo_ttft_ms REAL NOT NULL, slo_tpot_ms REAL NOT NULL, arrivals TEXT NOT NULL, requests INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, target_rate REAL);
  CREATE TABLE IF NOT EXISTS capacity_configs (id INTEGER PRIMARY KEY, study INTEGER, hardware TEXT NOT NULL,
    model TEXT NOT NULL, engine TEXT NOT NULL, backend TEXT, forced_backend INTEGER NOT NULL, kv_dtype TEXT,
    tp INTEGER NOT NULL, cuda_graphs INTEGER NOT NULL, error TEXT, gpu_mib REAL, weights_mib REAL,
    activation_mib REAL, cuda_graph_mib REAL, reserve_mib REAL, kv_pool_mib REAL, kv_bytes_per_token REAL,
    kv_windowed_bytes REAL, sliding_window INTEGER, page_size INTEGER, kv_tokens INTEGER, kv_pages INTEGER,
    max_batched_tokens INTEGER, max_running_requests INTEGER, memory_source TEXT, max_rate_rps REAL,
    target_rate REAL, gpus_for_target INTEGER, simulations INTEGER NOT NULL DEFAULT 0);
  CREATE TABLE IF NOT EXISTS serve_runs (id INTEGER PRIMARY KEY, config INTEGER NOT NULL, kind TEXT NOT NULL,
    arrivals TEXT NOT NULL, rate REAL NOT NULL, requests INTEGER NOT NULL, slo_ttft_ms REAL NOT NULL,
    slo_tpot_ms REAL NOT NULL, meets_slo INTEGER NOT NULL, at_max INTEGER NOT NULL,
    ttft_mean_ms REAL, ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL,
    tpot_mean_ms REAL, tpot_p50_ms REAL, tpot_p90_ms REAL, tpot_p99_ms REAL,
    itl_mean_ms REAL, itl_p50_ms REAL, itl_p90_ms REAL, itl_p99_ms REAL,
    e2e_mean_s REAL, e2e_p50_s REAL, e2e_p90_s REAL, e2e_p99_s REAL,
    queue_mean_ms REAL, queue_p50_ms REAL, queue_p90_ms REAL, queue_p99_ms REAL,
    makespan_s REAL, output_tokens_per_s REAL, requests_per_s REAL, goodput_rps REAL, slo_attainment REAL,
    mean_batch REAL, mean_kv_use REAL, peak_kv_use REAL, steps INTEGER, full_graph_steps INTEGER,
    piecewise_steps INTEGER, preemptions INTEGER, rejected INTEGER);
  CREATE TABLE IF NOT EXISTS serve_requests (run INTEGER, idx INTEGER, arrival_s REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, ttft_ms REAL NOT NULL, tpot_ms REAL NOT NULL,
    e2e_s REAL NOT NULL, queue_ms REAL NOT NULL, preemptions INTEGER NOT NULL, PRIMARY KEY (run, idx)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS serve_timeline (run INTEGER, idx INTEGER, t_s REAL NOT NULL, running INTEGER NOT NULL,
    waiting INTEGER NOT NULL, batch_tokens INTEGER NOT NULL, kv_used_tokens INTEGER NOT NULL,
    PRIMARY KEY (run, idx)) WITHOUT ROWID;)";

void bindSplit(Statement& s, int i, const MemorySplit& m) {
  for (const double v : {m.gpu_mib, m.weights_mib, m.activation_mib, m.cuda_graph_mib, m.other_mib, m.kv_pool_mib,
                         m.kv.full_bytes, m.kv.windowed_bytes}) {
    s.bind(i++, v);
  }
  for (const std::int64_t v :
       {m.kv.max_window, m.page_size, m.kv_tokens, m.kv_pages, m.max_batched_tokens, m.max_running_requests}) {
    s.bind(i++, v);
  }
  s.bind(i, m.source);
}

void bindPercentiles(Statement& s, int& i, const Percentiles& p, double scale) {
  for (const double v : {p.mean, p.p50, p.p90, p.p99}) s.bind(i++, v * scale);
}

void addRequests(sqlite3* db, std::int64_t run, const ServeResult& r) {
  Statement s(db, "INSERT INTO serve_requests VALUES (?,?,?,?,?,?,?,?,?,?)");
  std::int64_t idx = 0;
  for (const auto& o : r.requests) {
    s.bind(1, run);
    s.bind(2, idx++);
    s.bind(3, o.arrival_s);
    s.bind(4, o.prompt_tokens);
    s.bind(5, o.output_tokens);
    s.bind(6, o.ttft() * 1e3);
    s.bind(7, o.tpot() * 1e3);
    s.bind(8, o.e2e());
    s.bind(9, o.queueing() * 1e3);
    s.bind(10, o.preemptions);
    s.run();
  }
}

void addTimeline(sqlite3* db, std::int64_t run, const ServeResult& r, std::size_t points) {
  Statement s(db, "INSERT INTO serve_timeline VALUES (?,?,?,?,?,?,?)");
  const std::size_t stride =
      std::max<std::size_t>(1, (r.timeline.size() + points - 1) / std::max<std::size_t>(1, points));
  std::int64_t idx = 0;
  for (std::size_t i = 0; i < r.timeline.size(); i += stride) {
    const TimelinePoint& p = r.timeline[i];
    s.bind(1, run);
    s.bind(2, idx++);
    s.bind(3, p.t_s);
    s.bind(4, p.running);
    s.bind(5, p.waiting);
    s.bind(6, p.batch_tokens);
    s.bind(7, p.kv_used_tokens);
    s.run();
  }
}

std::int64_t insertRun(sqlite3* db, std::int64_t config, const ServeRunRow& row, const ServeResult& r) {
  Statement s(db, R"(INSERT INTO serve_runs VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,
      ?,?,?,?,?,?,?,?,?,?,?,?))");
  int i = 1;
  s.bind(i++, config);
  s.bind(i++, row.kind);
  s.bind(i++, row.arrivals);
  s.bind(i++, row.rate);
  s.bind(i++, static_cast<std::int64_t>(r.requests.size()));
  s.bind(i++, row.slo.ttft_s * 1e3);
  s.bind(i++, row.slo.tpot_s * 1e3);
  s.bind(i++, static_cast<int>(row.meets_slo));
  s.bind(i++, static_cast<int>(row.at_max));
  bindPercentiles(s, i, r.ttft, 1e3);
  bindPercentiles(s, i, r.tpot, 1e3);
  bindPercentiles(s, i, r.itl, 1e3);
  bindPercentiles(s, i, r.e2e, 1);
  bindPercentiles(s, i, r.queueing, 1e3);
  for (const double v : {r.makespan_s, r.output_tokens_per_s, r.requests_per_s, r.goodput_rps, r.slo_attainment,
                         r.mean_batch, r.mean_kv_use, r.peak_kv_use}) {
    s.bind(i++, v);
  }
  for (const std::int64_t v : {r.steps, r.full_graph_steps, r.piecewise_steps, r.preemptions, r.rejected}) {
    s.bind(i++, v);
  }
  s.run();
  return sqlite3_last_insert_rowid(db);
}

}  // namespace

void createCapacityTables(sqlite3* db, const std::string& path) { execSql(db, kCapacityTables, path); }

std::int64_t CapacityStore::addStudy(const CapacityStudyRow& row) {
  sqlite3* db = store_.handle();
  WriteTransaction t(db, store_.path());
  Statement s(db, "INSERT INTO capacity_studies VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  int i = 1;
  for (const auto* v :
       {&row.name, &row.spec_text, &row.spec_hash, &row.catalog_hash, &row.program_version, &row.created}) {
    s.bind(i++, *v);
  }
  s.bind(i++, row.slo.ttft_s * 1e3);
  s.bind(i++, row.slo.tpot_s * 1e3);
  s.bind(i++, describeArrivals(row.arrivals));
  s.bind(i++, row.arrivals.requests);
  s.bind(i++, row.arrivals.prompt_tokens);
  s.bind(i++, row.arrivals.output_tokens);
  s.bind(i, row.target_rate);
  s.run();
  const std::int64_t id = sqlite3_last_insert_rowid(db);
  t.commit();
  return id;
}

std::int64_t CapacityStore::addConfig(std::optional<std::int64_t> study, const CapacityConfigRow& row) {
  sqlite3* db = store_.handle();
  WriteTransaction t(db, store_.path());
  Statement s(db, R"(INSERT INTO capacity_configs VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,
      ?,?))");
  s.bind(1, study);
  s.bind(2, row.hardware);
  s.bind(3, row.model);
  s.bind(4, row.engine);
  s.bind(5, row.backend.empty() ? std::nullopt : std::optional<std::string>(row.backend));
  s.bind(6, static_cast<int>(row.forced_backend));
  s.bind(7, row.kv_dtype.empty() ? std::nullopt : std::optional<std::string>(row.kv_dtype));
  s.bind(8, row.tp);
  s.bind(9, static_cast<int>(row.cuda_graphs));
  s.bind(10, row.error.empty() ? std::nullopt : std::optional<std::string>(row.error));
  if (row.split) bindSplit(s, 11, *row.split);  // 11..25; NULL otherwise
  if (row.max_rate) {
    s.bind(26, *row.max_rate);
    if (row.target_rate > 0) {
      RateSearch r;
      r.max_rate = *row.max_rate;
      s.bind(28, r.gpusFor(row.target_rate, row.tp));
    }
  }
  if (row.target_rate > 0) s.bind(27, row.target_rate);
  s.bind(29, row.simulations);
  s.run();
  const std::int64_t id = sqlite3_last_insert_rowid(db);
  t.commit();
  return id;
}

std::int64_t CapacityStore::addRun(std::int64_t config, const ServeRunRow& row, const ServeResult& result, bool full,
                                   std::size_t timeline_points) {
  sqlite3* db = store_.handle();
  WriteTransaction t(db, store_.path());
  const std::int64_t run = insertRun(db, config, row, result);
  if (full) {
    addRequests(db, run, result);
    addTimeline(db, run, result, timeline_points);
  }
  t.commit();
  return run;
}

void CapacityStore::addSearch(std::int64_t config, const std::string& arrivals, const ServeSlo& slo,
                              const RateSearch& search) {
  sqlite3* db = store_.handle();
  WriteTransaction t(db, store_.path());  // one transaction: a search is stored whole or not at all
  for (const RateProbe& p : search.probes) {
    const bool at_max = p.band_end == 0 && p.meets_slo && p.rate == search.max_rate;
    const char* kind = p.band_end == 0 ? "search" : p.band_end > 0 ? "search-slow" : "search-fast";
    const std::int64_t run = insertRun(db, config, {kind, arrivals, p.rate, slo, p.meets_slo, at_max}, p.result);
    if (at_max) {
      addRequests(db, run, p.result);
      addTimeline(db, run, p.result, kTimelinePoints);
    }
  }
  t.commit();
}

std::int64_t requestsThatFit(const MemorySplit& split, std::int64_t context) {
  if (!split.weightsFit()) return 0;
  const double one = split.kv.requestBytes(context, split.page_size);
  if (one <= 0) return 0;
  return static_cast<std::int64_t>(std::floor(split.kv_pool_mib * kMiB / one));
}

std::string describeArrivals(const ArrivalSpec& a) {
  std::string process = a.process == "gamma" ? fmt::format("gamma (cv {:g})", a.cv) : a.process;
  if (std::isinf(a.rate)) process = "rate inf (all at t = 0)";
  const std::string lengths =
      a.lengths == "random" ? fmt::format("{} bench random, range ratio {:g}", a.bench, a.range_ratio) : a.lengths;
  return fmt::format("{} arrivals, {} requests, prompt {} / output {} tokens ({} lengths), seed {}", process,
                     a.requests, a.prompt_tokens, a.output_tokens, lengths, a.seed);
}

}  // namespace attnsim
