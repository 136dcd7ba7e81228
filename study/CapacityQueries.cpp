// The capacity report's read-only queries over the store's capacity tables (docs/STORE.md).
#include "study/CapacityQueries.hpp"

#include <fmt/format.h>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "study/StoreStatement.hpp"

namespace attnsim {

namespace {

constexpr const char* kStudiesSql = R"(
  SELECT id, name, spec_hash, catalog_hash, program_version, arrivals, slo_ttft_ms, slo_tpot_ms,
         IFNULL(target_rate, 0), requests, prompt_tokens, output_tokens
  FROM capacity_studies ORDER BY id)";

constexpr const char* kConfigsSql = R"(
  SELECT id, hardware, model, engine, IFNULL(backend, ''), forced_backend, IFNULL(kv_dtype, ''), tp, cuda_graphs,
         IFNULL(error, ''), gpu_mib IS NOT NULL, gpu_mib, weights_mib, activation_mib, cuda_graph_mib, reserve_mib,
         kv_pool_mib, kv_bytes_per_token, kv_windowed_bytes, sliding_window, page_size, kv_tokens, kv_pages,
         max_batched_tokens, max_running_requests, IFNULL(memory_source, ''), max_rate_rps, IFNULL(target_rate, 0),
         gpus_for_target, simulations
  FROM capacity_configs WHERE study IS ? ORDER BY id)";

MemorySplit readSplit(const Statement& s, int i) {
  MemorySplit m;
  m.gpu_mib = s.real(i++);
  m.weights_mib = s.real(i++);
  m.activation_mib = s.real(i++);
  m.cuda_graph_mib = s.real(i++);
  m.other_mib = s.real(i++);
  m.kv_pool_mib = s.real(i++);
  m.kv.full_bytes = s.real(i++);
  m.kv.windowed_bytes = s.real(i++);
  m.kv.max_window = s.integer(i++);
  m.page_size = s.integer(i++);
  m.kv_tokens = s.integer(i++);
  m.kv_pages = s.integer(i++);
  m.max_batched_tokens = s.integer(i++);
  m.max_running_requests = s.integer(i++);
  m.source = s.text(i);
  return m;
}

StoredConfig readConfig(const Statement& s) {
  StoredConfig c;
  c.id = s.integer(0);
  CapacityConfigRow& r = c.row;
  r.hardware = s.text(1);
  r.model = s.text(2);
  r.engine = s.text(3);
  r.backend = s.text(4);
  r.forced_backend = s.integer(5) != 0;
  r.kv_dtype = s.text(6);
  r.tp = static_cast<int>(s.integer(7));
  r.cuda_graphs = s.integer(8) != 0;
  r.error = s.text(9);
  if (s.integer(10) != 0) r.split = readSplit(s, 11);
  if (!s.isNull(26)) r.max_rate = s.real(26);
  r.target_rate = s.real(27);
  if (!s.isNull(28)) c.gpus_for_target = s.integer(28);
  r.simulations = static_cast<int>(s.integer(29));
  return c;
}

constexpr const char* kRunsSql = R"(
  SELECT r.id, r.config, r.kind, r.arrivals, r.rate, r.requests, r.slo_ttft_ms, r.slo_tpot_ms, r.meets_slo, r.at_max,
         r.ttft_mean_ms, r.ttft_p50_ms, r.ttft_p90_ms, r.ttft_p99_ms, r.tpot_mean_ms, r.tpot_p50_ms, r.tpot_p90_ms,
         r.tpot_p99_ms, r.itl_mean_ms, r.itl_p50_ms, r.itl_p90_ms, r.itl_p99_ms, r.e2e_mean_s, r.e2e_p50_s,
         r.e2e_p90_s, r.e2e_p99_s, r.queue_mean_ms, r.queue_p50_ms, r.queue_p90_ms, r.queue_p99_ms,
         r.output_tokens_per_s, r.requests_per_s, r.goodput_rps, r.slo_attainment, r.mean_batch, r.mean_kv_use,
         r.peak_kv_use, r.steps, r.preemptions, r.rejected
  FROM serve_runs r JOIN capacity_configs c ON c.id = r.config WHERE c.study IS ? ORDER BY r.id)";

Percentiles readPercentiles(const Statement& s, int i) {
  return {s.real(i), s.real(i + 1), s.real(i + 2), s.real(i + 3), 0};
}

StoredRun readRun(const Statement& s) {
  StoredRun r;
  r.id = s.integer(0);
  r.config = s.integer(1);
  r.row.kind = s.text(2);
  r.row.arrivals = s.text(3);
  r.row.rate = s.real(4);
  r.requests = s.integer(5);
  r.row.slo = {s.real(6) / 1e3, s.real(7) / 1e3};
  r.row.meets_slo = s.integer(8) != 0;
  r.row.at_max = s.integer(9) != 0;
  r.ttft_ms = readPercentiles(s, 10);
  r.tpot_ms = readPercentiles(s, 14);
  r.itl_ms = readPercentiles(s, 18);
  r.e2e_s = readPercentiles(s, 22);
  r.queue_ms = readPercentiles(s, 26);
  r.output_tokens_per_s = s.real(30);
  r.requests_per_s = s.real(31);
  r.goodput_rps = s.real(32);
  r.slo_attainment = s.real(33);
  r.mean_batch = s.real(34);
  r.mean_kv_use = s.real(35);
  r.peak_kv_use = s.real(36);
  r.steps = s.integer(37);
  r.preemptions = s.integer(38);
  r.rejected = s.integer(39);
  return r;
}

constexpr const char* kTimelineSql = R"(
  SELECT t.run, t.t_s, t.running, t.waiting, t.batch_tokens, t.kv_used_tokens
  FROM serve_timeline t JOIN serve_runs r ON r.id = t.run JOIN capacity_configs c ON c.id = r.config
  WHERE c.study IS ? ORDER BY t.run, t.idx)";

void bindStudy(Statement& s, const std::optional<StoredStudy>& study) {
  s.bind(1, study ? std::optional<std::int64_t>(study->id) : std::nullopt);
}

StoredStudy chooseStudy(const std::vector<StoredStudy>& studies, const std::string& name, const Store& store) {
  std::vector<std::string> names;
  for (const auto& s : studies) {
    if (s.name == name || std::to_string(s.id) == name) return s;
    names.push_back(fmt::format("{} (id {})", s.name, s.id));
  }
  if (name.empty() && studies.size() == 1) return studies.front();
  if (name.empty()) {
    throw UsageError(fmt::format("--db {}: {} capacity studies ({}); name one with --study", store.path(),
                                 studies.size(), join(names, ", ")));
  }
  throw UsageError(fmt::format("--study {}: no such capacity study in {} (it has: {})", name, store.path(),
                               names.empty() ? "none" : join(names, ", ")));
}

}  // namespace

std::vector<StoredStudy> capacityStudies(const Store& store) {
  std::vector<StoredStudy> out;
  Statement s(store.handle(), kStudiesSql);
  while (s.step()) {
    StoredStudy t;
    t.id = s.integer(0);
    t.name = s.text(1);
    t.spec_hash = s.text(2);
    t.catalog_hash = s.text(3);
    t.program_version = s.text(4);
    t.arrivals = s.text(5);
    t.slo_ttft_ms = s.real(6);
    t.slo_tpot_ms = s.real(7);
    t.target_rate = s.real(8);
    t.requests = s.integer(9);
    t.prompt_tokens = s.integer(10);
    t.output_tokens = s.integer(11);
    out.push_back(std::move(t));
  }
  return out;
}

CapacityData loadCapacityData(const Store& store, const std::string& study) {
  CapacityData data;
  data.path = store.path();
  const auto studies = capacityStudies(store);
  if (!study.empty() || !studies.empty()) data.study = chooseStudy(studies, study, store);
  Statement configs(store.handle(), kConfigsSql);
  bindStudy(configs, data.study);
  while (configs.step()) data.configs.push_back(readConfig(configs));
  if (data.configs.empty()) {
    throw UsageError(
        fmt::format("--db {}: no serving results (run attnsim capacity study, capacity search --db or "
                    "serve-sim --db first)",
                    store.path()));
  }
  Statement runs(store.handle(), kRunsSql);
  bindStudy(runs, data.study);
  while (runs.step()) data.runs.push_back(readRun(runs));
  Statement timeline(store.handle(), kTimelineSql);
  bindStudy(timeline, data.study);
  while (timeline.step()) {
    data.timeline.emplace_back(timeline.integer(0),
                               TimelinePoint{timeline.real(1), timeline.integer(2), timeline.integer(3),
                                             timeline.integer(4), timeline.integer(5)});
  }
  return data;
}

}  // namespace attnsim
