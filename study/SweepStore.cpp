#include "study/SweepStore.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "core/Error.hpp"

namespace attnsim {

void writeSweepHeader(Store& store, std::int64_t sweep, const SweepSpec& spec, const std::string& catalog_hash,
                      const std::string& program_version, std::int64_t points) {
  WriteTransaction t(store.handle(), store.path());
  Statement s(store.handle(),
              "INSERT OR IGNORE INTO sweeps (id, name, spec_text, spec_hash, catalog_hash, calibration, "
              "program_version, points) VALUES (?,?,?,?,?,?,?,?)");
  s.bind(1, sweep);
  s.bind(2, spec.name);
  s.bind(3, spec.text);
  s.bind(4, fmt::format("{:016x}", stableHash(spec.text)));
  s.bind(5, catalog_hash);
  s.bind(6, spec.calibration_study.empty() ? std::string("catalog") : "study:" + spec.calibration_study);
  s.bind(7, program_version);
  s.bind(8, points);
  s.run();
  t.commit();
}

std::vector<char> storedPoints(const Store& store, std::int64_t sweep, std::int64_t id_space) {
  std::vector<char> out(static_cast<std::size_t>(id_space), 0);
  Statement s(store.handle(), "SELECT id FROM points WHERE sweep = ?");
  s.bind(1, sweep);
  while (s.step()) {
    const std::int64_t id = s.integer(0);
    if (id < 0 || id >= id_space) {
      throw InputError(
          fmt::format("{}: sweep {} holds point {} outside this spec's {} points", store.path(), sweep, id, id_space));
    }
    out[static_cast<std::size_t>(id)] = 1;
  }
  return out;
}

namespace {

void writeGroup(Statement& group, Statement& selection, std::int64_t sweep, const SweepGroup& g) {
  const Scenario& s = g.scenario;
  group.bind(1, sweep);
  group.bind(2, g.id);
  group.bind(3, s.hardware);
  group.bind(4, s.model);
  group.bind(5, s.engine);
  group.bind(6, s.kv_dtype);
  group.bind(7, s.page_size);
  group.bind(8, s.tp);
  group.bind(9, static_cast<std::int64_t>(s.cuda_graphs));
  group.bind(10, g.workload_class);
  group.bind(11, s.weight_dtype);
  group.run();
  selection.bind(1, sweep);
  selection.bind(2, g.id);
  selection.bind(3, static_cast<std::int64_t>(!g.refusal));
  selection.bind(4, g.refusal);
  for (int i = 0; const auto* v : {&g.backend, &g.variant, &g.prefill_backend, &g.decode_backend, &g.kv_dtype}) {
    selection.bind(5 + i++, v->empty() ? std::nullopt : std::optional<std::string>(*v));
  }
  selection.bind(10, g.page_size);
  selection.bind(11, g.notes);
  selection.run();
}

}  // namespace

void writeGroups(Store& store, std::int64_t sweep, const SweepPlan& plan, const std::vector<SweepGroup>& groups,
                 const std::vector<char>& evaluated) {
  sqlite3* db = store.handle();
  WriteTransaction t(db, store.path());
  Statement group(db,
                  "INSERT OR IGNORE INTO sweep_groups (sweep, id, hardware, model, engine, kv_dtype, page_size, tp, "
                  "cuda_graphs, workload_class, weight_dtype) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  Statement selection(db,
                      "INSERT OR IGNORE INTO selections (sweep, grp, valid, refusal, backend, variant, "
                      "prefill_backend, decode_backend, kv_dtype, page_size, notes) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  Statement candidate(db,
                      "INSERT OR IGNORE INTO candidates (sweep, grp, slot, engine, backend, variant, valid, reason, "
                      "engine_default) VALUES (?,?,?,?,?,?,?,?,?)");
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    if (!evaluated[i]) continue;
    const SweepGroup& g = groups[i];
    writeGroup(group, selection, sweep, g);
    for (std::size_t slot = 0; slot < g.candidates.size(); ++slot) {
      const SweepCandidate& c = g.candidates[slot];
      candidate.bind(1, sweep);
      candidate.bind(2, g.id);
      candidate.bind(3, static_cast<std::int64_t>(slot));
      candidate.bind(4, c.engine);
      candidate.bind(5, c.backend);
      candidate.bind(6, c.variant.empty() ? std::nullopt : std::optional<std::string>(c.variant));
      candidate.bind(7, static_cast<std::int64_t>(!c.refusal));
      candidate.bind(8, c.refusal);
      candidate.bind(9, static_cast<std::int64_t>(c.engine_default));
      candidate.run();
    }
  }
  t.commit();
}

std::int64_t beginRun(Store& store, std::int64_t sweep, SweepShard shard, int jobs, const std::string& version) {
  WriteTransaction t(store.handle(), store.path());
  Statement s(store.handle(),
              "INSERT INTO sweep_runs (sweep, shard, shards, jobs, program_version, started, status) "
              "VALUES (?,?,?,?,?,?,'running')");
  s.bind(1, sweep);
  s.bind(2, shard.index + 1);
  s.bind(3, shard.count);
  s.bind(4, jobs);
  s.bind(5, version);
  s.bind(6, utcTimestamp());
  s.run();
  const std::int64_t id = sqlite3_last_insert_rowid(store.handle());
  t.commit();
  return id;
}

void endRun(Store& store, std::int64_t run, std::int64_t points_written, const std::string& status) {
  WriteTransaction t(store.handle(), store.path());
  Statement s(store.handle(), "UPDATE sweep_runs SET finished = ?, points_written = ?, status = ? WHERE id = ?");
  s.bind(1, utcTimestamp());
  s.bind(2, points_written);
  s.bind(3, status);
  s.bind(4, run);
  s.run();
  t.commit();
}

void storeCatalogFiles(Store& store, const std::string& catalog_hash, const std::vector<CatalogFile>& files) {
  WriteTransaction t(store.handle(), store.path());
  Statement s(store.handle(), "INSERT OR IGNORE INTO catalog_files (catalog_hash, path, content) VALUES (?,?,?)");
  for (const auto& f : files) {
    s.bind(1, catalog_hash);
    s.bind(2, f.path);
    s.bind(3, f.content);
    s.run();
  }
  t.commit();
}

SweepWriter::SweepWriter(Store& store, std::int64_t sweep, const SweepSpec& spec, const SweepPlan& plan)
    : store_(store),
      sweep_(sweep),
      spec_(spec),
      plan_(plan),
      point_(store.handle(),
             "INSERT OR IGNORE INTO points (sweep, id, grp, key, phase, batch, q_len, context, tokens, workload, "
             "valid, best_slot, default_slot, default_rank, regret, regret_us, default_within_band, memory_fits, "
             "memory_reason, memory_need_mib, memory_have_mib) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
      prediction_(store.handle(),
                  "INSERT OR IGNORE INTO predictions (sweep, point, slot, attention_us, eager_us, graph_us, step_us, "
                  "bound, graph_mode, rank, band, tie_band, provenance, memory_fits, memory_reason, memory_need_mib, "
                  "memory_have_mib) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") {
  // WAL with NORMAL sync survives a killed process (kill -9); only an OS crash can lose the last commits.
  execSql(store.handle(), "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536;", store.path());
}

void SweepWriter::begin() {
  execSql(store_.handle(), "BEGIN IMMEDIATE;", store_.path());
  open_ = true;
}

void SweepWriter::commit() {
  execSql(store_.handle(), "COMMIT;", store_.path());
  open_ = false;
}

namespace {

void bindSlot(Statement& s, int i, std::int32_t slot) {
  if (slot < 0) {
    s.bind(i, std::optional<std::int64_t>{});
  } else {
    s.bind(i, static_cast<std::int64_t>(slot));
  }
}

// Columns first..first+3: a memory verdict (all NULL when not assessed): the point's (the engine's
// deployment, columns 18-21) or a prediction's (its backend's, columns 14-17).
template <class Row>
void bindMemory(Statement& s, const Row& p, int first) {
  if (p.memory_fits < 0) {
    for (int i = first; i <= first + 3; ++i) s.bind(i, std::optional<std::int64_t>{});
    return;
  }
  s.bind(first, static_cast<std::int64_t>(p.memory_fits));
  if (p.memory_reason) {
    s.bindStatic(first + 1, p.memory_reason);
  } else {
    s.bind(first + 1, std::optional<std::int64_t>{});
  }
  s.bind(first + 2, p.memory_need_mib);
  s.bind(first + 3, p.memory_have_mib);
}

}  // namespace

void SweepWriter::write(const SweepBatch& batch) {
  for (const PointRow& p : batch.points) {
    const PlannedGroup& g = plan_.groups[p.group];
    const SweepWorkload& w = spec_.workloads[p.workload];
    const Workload& wl = w.workload;
    key_.assign(g.key_prefix).append("|").append(w.label);
    std::int64_t q_len = 0, context = 0;
    for (const auto& rg : wl.groups) q_len = std::max(q_len, rg.q_len), context = std::max(context, rg.context);
    point_.bind(1, sweep_);
    point_.bind(2, p.id);
    point_.bind(3, g.id);
    point_.bindStatic(4, key_);
    point_.bindStatic(5, wl.isUniform() ? phaseName(wl.phase) : "mixed");
    point_.bind(6, wl.requests());
    point_.bind(7, q_len);
    point_.bind(8, context);
    point_.bind(9, wl.tokens());
    point_.bindStatic(10, w.label);
    point_.bind(11, static_cast<std::int64_t>(p.valid));
    bindSlot(point_, 12, p.best_slot);
    bindSlot(point_, 13, p.default_slot);
    if (p.default_slot < 0) {
      for (int i = 14; i <= 17; ++i) point_.bind(i, std::optional<std::int64_t>{});
    } else {
      point_.bind(14, static_cast<std::int64_t>(p.default_rank));
      point_.bind(15, p.regret);
      point_.bind(16, p.regret_us);
      point_.bind(17, static_cast<std::int64_t>(p.default_within_band));
    }
    bindMemory(point_, p, 18);
    point_.run();
    for (std::uint32_t i = p.first; i < p.first + p.count; ++i) {
      const PredictionRow& r = batch.predictions[i];
      prediction_.bind(1, sweep_);
      prediction_.bind(2, p.id);
      prediction_.bind(3, static_cast<std::int64_t>(r.slot));
      prediction_.bind(4, r.attention_us);
      prediction_.bind(5, r.eager_us);
      prediction_.bind(6, r.graph_us);
      prediction_.bind(7, r.step_us);
      prediction_.bindStatic(8, r.bound);
      prediction_.bindStatic(9, r.graph_mode);
      prediction_.bind(10, static_cast<std::int64_t>(r.rank));
      prediction_.bind(11, r.band);
      prediction_.bind(12, r.tie_band);
      prediction_.bindStatic(13, provenanceName(r.provenance));
      bindMemory(prediction_, r, 14);
      prediction_.run();
    }
  }
}

}  // namespace attnsim
