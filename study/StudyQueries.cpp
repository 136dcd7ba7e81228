// The reports' read-only queries over the sweep tables (docs/STORE.md).
#include "study/StudyQueries.hpp"

#include <fmt/format.h>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "study/StoreStatement.hpp"

namespace attnsim {

namespace {

std::optional<std::string> optionalText(const Statement& s, int i) {
  return s.isNull(i) ? std::nullopt : std::optional<std::string>(s.text(i));
}

std::optional<std::int64_t> optionalInteger(const Statement& s, int i) {
  return s.isNull(i) ? std::nullopt : std::optional<std::int64_t>(s.integer(i));
}

std::optional<double> optionalReal(const Statement& s, int i) {
  return s.isNull(i) ? std::nullopt : std::optional<double>(s.real(i));
}

constexpr const char* kPointsSql = R"(
  SELECT p.id, p.grp, g.hardware, g.model, g.engine, g.kv_dtype, g.page_size, g.tp, g.cuda_graphs,
         g.workload_class, p.phase, p.workload, p.batch, p.q_len, p.context, p.tokens, p.valid,
         s.refusal, s.kv_dtype, p.best_slot, p.default_slot, p.default_rank, p.regret, p.regret_us,
         p.default_within_band, p.memory_fits, p.memory_reason, p.memory_need_mib, p.memory_have_mib,
         g.weight_dtype
  FROM points p JOIN sweep_groups g ON g.sweep = p.sweep AND g.id = p.grp
  LEFT JOIN selections s ON s.sweep = p.sweep AND s.grp = p.grp
  WHERE p.sweep = ? ORDER BY p.id)";

StudyPoint readPoint(const Statement& s) {
  StudyPoint p;
  p.id = s.integer(0);
  p.group = s.integer(1);
  p.hardware = s.text(2);
  p.model = s.text(3);
  p.engine = s.text(4);
  p.kv_dtype = optionalText(s, 5);
  p.page_size = optionalInteger(s, 6);
  p.tp = s.integer(7);
  p.cuda_graphs = s.integer(8) != 0;
  p.workload_class = s.text(9);
  p.phase = s.text(10);
  p.workload = s.text(11);
  p.batch = s.integer(12);
  p.q_len = s.integer(13);
  p.context = s.integer(14);
  p.tokens = s.integer(15);
  p.valid = s.integer(16) != 0;
  p.refusal = s.text(17);
  p.selected_kv_dtype = s.text(18);
  p.best_slot = optionalInteger(s, 19);
  p.default_slot = optionalInteger(s, 20);
  p.default_rank = optionalInteger(s, 21);
  p.regret = optionalReal(s, 22);
  p.regret_us = optionalReal(s, 23);
  if (!s.isNull(24)) p.default_within_band = s.integer(24) != 0;
  if (!s.isNull(25)) p.memory_fits = s.integer(25) != 0;
  p.memory_reason = s.isNull(26) ? "" : s.text(26);
  p.memory_need_mib = optionalReal(s, 27);
  p.memory_have_mib = optionalReal(s, 28);
  p.weight_dtype = optionalText(s, 29);
  return p;
}

constexpr const char* kCandidatesSql = R"(
  SELECT p.id, c.slot, c.engine, c.backend, c.variant, c.valid, c.engine_default, c.reason,
         r.point IS NOT NULL, r.attention_us, r.eager_us, r.graph_us, r.step_us, r.bound, r.graph_mode, r.rank,
         r.band, r.tie_band, r.provenance
  FROM points p JOIN candidates c ON c.sweep = p.sweep AND c.grp = p.grp
  LEFT JOIN predictions r ON r.sweep = p.sweep AND r.point = p.id AND r.slot = c.slot
  WHERE p.sweep = ? ORDER BY p.id, c.slot)";

StudyCandidate readCandidate(const Statement& s) {
  StudyCandidate c;
  c.point = s.integer(0);
  c.slot = s.integer(1);
  c.engine = s.text(2);
  c.backend = s.text(3);
  c.variant = s.text(4);
  c.valid = s.integer(5) != 0;
  c.engine_default = s.integer(6) != 0;
  c.reason = s.text(7);
  c.predicted = s.integer(8) != 0;
  if (c.predicted) {
    c.attention_us = s.real(9);
    c.eager_us = s.real(10);
    c.graph_us = s.real(11);
    c.step_us = s.real(12);
    c.bound = s.text(13);
    c.graph_mode = s.text(14);
    c.rank = s.integer(15);
    c.band = s.real(16);  // NULL reads as 0
    c.tie_band = s.real(17);
    c.provenance = s.text(18);
  }
  return c;
}

}  // namespace

std::vector<StudySweep> studySweeps(const Store& store) {
  Statement s(store.handle(),
              "SELECT w.id, w.name, w.spec_hash, w.catalog_hash, w.calibration, w.program_version, w.points, "
              "(SELECT COUNT(*) FROM points p WHERE p.sweep = w.id) FROM sweeps w ORDER BY w.id");
  std::vector<StudySweep> out;
  while (s.step()) {
    out.push_back({s.integer(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.integer(6), s.integer(7)});
  }
  return out;
}

namespace {

// Several sweeps of one name (the same spec swept under another catalog or calibration, as when the
// README's command runs again after an update): the one of the running catalog is the one meant.
const StudySweep* onlyOneOfThisCatalog(const std::vector<StudySweep>& candidates, const std::string& catalog_hash) {
  if (candidates.empty() || catalog_hash.empty()) return nullptr;
  const StudySweep* found = nullptr;
  for (const auto& w : candidates) {
    if (w.name != candidates.front().name) return nullptr;
    if (w.catalog_hash != catalog_hash) continue;
    if (found != nullptr) return nullptr;
    found = &w;
  }
  return found;
}

}  // namespace

StudySweep chooseSweep(const Store& store, const std::string& name, const std::string& catalog_hash) {
  const auto sweeps = studySweeps(store);
  std::vector<std::string> names;
  names.reserve(sweeps.size());
  for (const auto& w : sweeps) names.push_back(w.name);
  if (sweeps.empty())
    throw UsageError(fmt::format("--db {}: no sweep in this store (run attnsim sweep)", store.path()));
  if (name.empty()) {
    if (sweeps.size() == 1) return sweeps.front();
    if (const auto* w = onlyOneOfThisCatalog(sweeps, catalog_hash)) return *w;
    throw UsageError(fmt::format("--db {}: {} sweeps in this store ({}): name one with --sweep NAME", store.path(),
                                 sweeps.size(), join(names, ", ")));
  }
  std::vector<StudySweep> named;
  for (const auto& w : sweeps) {
    if (w.name == name || std::to_string(w.id) == name) named.push_back(w);
  }
  if (named.empty()) {
    throw UsageError(fmt::format("--sweep: no sweep '{}' in {}{} (stored: {})", name, store.path(),
                                 didYouMean(name, names), join(names, ", ")));
  }
  if (named.size() > 1) {
    if (const auto* w = onlyOneOfThisCatalog(named, catalog_hash)) return *w;
    std::vector<std::string> ids;
    ids.reserve(named.size());
    for (const auto& w : named) ids.push_back(std::to_string(w.id));
    throw UsageError(
        fmt::format("--sweep: {} sweeps named '{}' in {} (other catalogs or calibrations): give its id "
                    "instead, one of {}",
                    named.size(), name, store.path(), join(ids, ", ")));
  }
  return named.front();
}

std::vector<CatalogFile> storedCatalogFiles(const Store& store, const std::string& catalog_hash) {
  Statement s(store.handle(), "SELECT path, content FROM catalog_files WHERE catalog_hash = ? ORDER BY path");
  s.bind(1, catalog_hash);
  std::vector<CatalogFile> out;
  while (s.step()) out.push_back({s.text(0), "study catalog " + catalog_hash + ": " + s.text(0), s.text(1)});
  return out;
}

std::vector<StudyPoint> studyPoints(const Store& store, std::int64_t sweep) {
  Statement s(store.handle(), kPointsSql);
  s.bind(1, sweep);
  std::vector<StudyPoint> out;
  while (s.step()) out.push_back(readPoint(s));
  return out;
}

std::vector<StudyCandidate> studyCandidates(const Store& store, std::int64_t sweep) {
  Statement s(store.handle(), kCandidatesSql);
  s.bind(1, sweep);
  std::vector<StudyCandidate> out;
  while (s.step()) out.push_back(readCandidate(s));
  return out;
}

std::string StudyPoint::memoryNote() const {
  if (memory_fits.value_or(true)) return "";
  if (memory_reason == "weights") return "not deployable (memory): the weights leave no KV cache on one GPU";
  const double need = memory_need_mib.value_or(0), have = memory_have_mib.value_or(0);
  return fmt::format(
      "not deployable (memory): the batch's KV cache needs {:.1f} GiB per GPU, the pool holds {:.1f} GiB", need / 1024,
      have / 1024);
}

}  // namespace attnsim
