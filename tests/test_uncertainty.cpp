// Provenance and uncertainty bands (docs/COST_MODEL.md "Uncertainty"): a calibration's held-out
// residuals give the band, a fit without them its scaled MAPE, published figures and defaults
// their documented bands; rank groups ties; sweeps store the bands and an older store migrates.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "core/Error.hpp"
#include "study/Store.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

const char* kCalibrationPath = "hardware/calibrations/h100-sxm.yaml";

// A calibration of fa3 on the H100: decode with held-out residuals, prefill without.
std::string calibration(const std::string& decode_heldout) {
  return "hardware: h100-sxm\nsource: \"test\"\ncreated: \"2026-11-23\"\nkernels:\n  fa3:\n"
         "    decode: {compute_efficiency: 0.5, memory_efficiency: 0.9, fixed_us: 5.0, points: 40, fit_mape: 0.05" +
         decode_heldout +
         "}\n"
         "    prefill: {compute_efficiency: 0.6, memory_efficiency: 0.8, fixed_us: 8.0, points: 30, fit_mape: 0.05}\n";
}

ScenarioPrediction predictKernel(const Catalog& c, const std::string& hardware, const std::string& kernel,
                                 Phase phase) {
  Scenario s;
  s.hardware = hardware;
  s.model = "llama-3.1-8b";
  s.kernel = kernel;
  s.workload = phase == Phase::Decode ? Workload::uniform(Phase::Decode, 32, 1, 4096)
                                      : Workload::uniform(Phase::Prefill, 1, 2048, 2048);
  return predictScenario(c, s);
}

CatalogError loadError(const OverlayDir& overlay) {
  try {
    (void)overlay.load();
  } catch (const CatalogError& e) {
    return e;
  }
  ADD_FAILURE() << "the catalog loaded without an error";
  return CatalogError({}, "", "");
}

TEST(Uncertainty, HeldOutResidualsOfACalibrationGiveTheBand) {
  OverlayDir overlay;
  overlay.write(kCalibrationPath, calibration(", heldout: {mape: 0.06, p90_abs_rel_error: 0.12, points: 20}"));
  const Catalog c = overlay.load();
  const PredictionUncertainty decode = predictKernel(c, "h100-sxm", "fa3", Phase::Decode).prediction.uncertainty;
  EXPECT_EQ(decode.provenance, Provenance::Measured);
  EXPECT_EQ(decode.basis, BandBasis::HeldOut);
  EXPECT_DOUBLE_EQ(decode.attention_band, 0.12);
  // Prefill was fitted without held-out figures: its in-sample MAPE scaled to a p90 and to new points
  // (30 points for 4 parameters: 30 / 26).
  const PredictionUncertainty prefill = predictKernel(c, "h100-sxm", "fa3", Phase::Prefill).prediction.uncertainty;
  EXPECT_EQ(prefill.provenance, Provenance::Measured);
  EXPECT_EQ(prefill.basis, BandBasis::Fit);
  EXPECT_DOUBLE_EQ(prefill.attention_band, kFitMapeToP90 * 0.05 * 30.0 / 26.0);
}

TEST(Uncertainty, WithoutACalibrationTheProvenanceBandApplies) {
  const Catalog& c = defaultCatalog();
  // FA3's figures are a published table's (marked in backends/kernels/fa3.yaml); the B200 has no fit.
  const PredictionUncertainty fa3 = predictKernel(c, "b200", "fa3", Phase::Prefill).prediction.uncertainty;
  EXPECT_EQ(fa3.provenance, Provenance::Published);
  EXPECT_EQ(fa3.basis, BandBasis::Documented);
  EXPECT_DOUBLE_EQ(fa3.attention_band, kPublishedBand);
  const PredictionUncertainty fi = predictKernel(c, "b200", "flex-decoding", Phase::Decode).prediction.uncertainty;
  EXPECT_EQ(fi.provenance, Provenance::Default);
  EXPECT_DOUBLE_EQ(fi.attention_band, kDefaultBand);
}

TEST(Uncertainty, TheStepBandWeighsAttentionAndTheRestByTime) {
  // The A100 has no measured GEMM surface (an architecture no calibrated device shares).
  const ScenarioPrediction sp = predictKernel(defaultCatalog(), "a100-sxm-80g", "flashinfer", Phase::Decode);
  const Prediction& p = sp.prediction;
  const PredictionUncertainty& u = p.uncertainty;
  double kernels = 0;
  for (const double t : p.eager.by_category) kernels += t;
  const double total = std::max(kernels, p.eager.step_us);
  ASSERT_GT(p.eager.by_category[0], 0);
  // GEMMs, elementwise kernels and host time all run on defaults: ±25% each; attention ±50%.
  const double expected = (p.eager.by_category[0] * kDefaultBand + (total - p.eager.by_category[0]) * 0.25) / total;
  EXPECT_NEAR(u.eager_band, expected, 1e-12);
  EXPECT_GT(u.eager_band, kNonAttentionDefaultBand);
  EXPECT_LT(u.eager_band, kDefaultBand);
  EXPECT_NEAR(u.non_attention_band, kNonAttentionDefaultBand, 1e-12);
  EXPECT_NEAR(u.eager_tie_band, p.eager.by_category[0] * kDefaultBand / total, 1e-12);
}

TEST(Uncertainty, HeldOutEntriesAreValidated) {
  for (const std::string& bad : {std::string(", heldout: {mape: 0.06, p90_abs_rel_error: -0.1, points: 20}"),
                                 std::string(", heldout: {mape: 0.06, p90_abs_rel_error: 0.1, points: 0}"),
                                 std::string(", heldout: {mape: 0.06, p90: 0.1, points: 3}")}) {
    OverlayDir overlay;
    overlay.write(kCalibrationPath, calibration(bad));
    const CatalogError e = loadError(overlay);
    EXPECT_NE(std::string(e.what()).find("heldout"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("h100-sxm.yaml:"), std::string::npos) << e.what();
  }
}

TEST(Uncertainty, AKernelFileCannotClaimMeasuredFigures) {
  OverlayDir overlay;
  const std::string path = "backends/kernels/fa3.yaml";
  std::string text = embeddedFile(path);
  const std::string from = "provenance: published";
  ASSERT_NE(text.find(from), std::string::npos);
  overlay.write(path, text.replace(text.find(from), from.size(), "provenance: measured"));
  const CatalogError e = loadError(overlay);
  EXPECT_NE(std::string(e.what()).find("provenance"), std::string::npos) << e.what();
}

// Rank's groups follow the rule: a backend joins the open group when it is within the tie bands
// of the group's fastest, and a group of one is not marked tied.
void expectGroupsFollowTheRule(const Ranking& r) {
  std::size_t leader = 0;
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    const RankedBackend& lead = r.ranked[leader];
    const bool joins = withinBands(lead.step_us, lead.tie_band, r.ranked[i].step_us, r.ranked[i].tie_band);
    EXPECT_EQ(r.ranked[i].tie_group, joins ? lead.tie_group : lead.tie_group + 1) << r.ranked[i].backend;
    if (!joins) leader = i;
  }
  for (const auto& b : r.ranked) {
    const auto members = std::count_if(r.ranked.begin(), r.ranked.end(),
                                       [&](const RankedBackend& o) { return o.tie_group == b.tie_group; });
    EXPECT_EQ(b.tied, members > 1) << b.backend;
  }
}

Scenario issueScenario() {
  Scenario s = engineScenario("vllm", "h100-sxm", "llama-3.1-8b");
  s.engine.clear();
  s.workload = Workload::uniform(Phase::Decode, 32, 1, 4096);
  return s;
}

TEST(RankTies, BackendsOnDefaultsAreTiedNotOrdered) {
  // Issue 14's example: several vLLM backends run on catalog defaults.
  const Ranking r = rankBackends(defaultCatalog(), issueScenario(), {"vllm"});
  ASSERT_GT(r.ranked.size(), 2U);
  expectGroupsFollowTheRule(r);
  EXPECT_TRUE(std::any_of(r.ranked.begin(), r.ranked.end(), [](const RankedBackend& b) { return b.tied; }));
  for (const auto& d : r.defaults) {
    const auto best = std::find_if(r.ranked.begin(), r.ranked.end(),
                                   [&](const RankedBackend& b) { return b.backend == d.best_backend; });
    const auto chosen =
        std::find_if(r.ranked.begin(), r.ranked.end(), [&](const RankedBackend& b) { return b.backend == d.backend; });
    EXPECT_EQ(d.within_band, withinBands(best->step_us, best->tie_band, chosen->step_us, chosen->tie_band));
  }
}

TEST(RankTies, ZeroHeldOutErrorSeparatesDifferentTimes) {
  // Every family calibrated on the H100 with no held-out error (on enough points not to be a thin fit):
  // ties only between equal times.
  std::string yaml = "hardware: h100-sxm\nsource: \"test\"\ncreated: \"2026-11-23\"\nkernels:\n";
  for (const auto& k : defaultCatalog().kernels()) {
    yaml +=
        "  " + k.id +
        ":\n    decode: {compute_efficiency: 0.5, memory_efficiency: 0.8, fixed_us: 3.0, points: 40, fit_mape: 0.01, "
        "heldout: {mape: 0, p90_abs_rel_error: 0, points: 5}}\n";
  }
  OverlayDir overlay;
  overlay.write(kCalibrationPath, yaml);
  const Ranking r = rankBackends(overlay.load(), issueScenario(), {"vllm"});
  expectGroupsFollowTheRule(r);
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    EXPECT_DOUBLE_EQ(r.ranked[i].tie_band, 0);
    EXPECT_EQ(r.ranked[i].tie_group == r.ranked[i - 1].tie_group, r.ranked[i].step_us == r.ranked[i - 1].step_us);
  }
}

TEST(RankTies, JsonCarriesBandsGroupsAndTheDefaultsVerdict) {
  const auto r = runAttnsim(
      "rank --json --engine vllm --hardware h100-sxm --model llama-3.1-8b --phase decode --batch 32 --context 4096");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_FALSE(j["tie_groups"].empty());
  std::size_t listed = 0;
  for (const auto& g : j["tie_groups"]) listed += g.size();
  EXPECT_EQ(listed, j["ranked"].size());
  for (const auto& row : j["ranked"]) {
    EXPECT_TRUE(row.contains("band") && row.contains("tie_band") && row.contains("provenance")) << row.dump();
    EXPECT_LE(row["step_us_low"].get<double>(), row["step_us"].get<double>());
    EXPECT_GE(row["step_us_high"].get<double>(), row["step_us"].get<double>());
  }
  EXPECT_TRUE(j["engine_defaults"]["vllm"].contains("within_band"));
}

std::int64_t count(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  std::int64_t n = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      n = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return n;
}

const char* kSmallSpec =
    "name: bands\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\nworkloads:\n"
    "  - decode: {batch: [1, 64], context: [4096]}\n";

TEST(SweepBands, EveryPredictionStoresItsBandAndProvenance) {
  OverlayDir dir;
  dir.write("spec.yaml", kSmallSpec);
  const std::string db = (dir.path() / "s.db").string();
  ASSERT_EQ(runAttnsim("sweep " + (dir.path() / "spec.yaml").string() + " --db " + db).exit_code, 0);
  EXPECT_GT(count(db, "SELECT count(*) FROM predictions"), 0);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM predictions WHERE band IS NULL OR tie_band IS NULL OR band < tie_band OR "
                  "provenance NOT IN ('measured', 'published', 'default')"),
            0);
  EXPECT_EQ(count(db, "SELECT count(*) FROM points WHERE (default_rank IS NULL) <> (default_within_band IS NULL)"), 0);
}

// The version-3 tables whose columns version 4 extends, as version 3 wrote them.
const char* kVersion3 = R"(
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
  INSERT INTO meta VALUES ('schema_version', '3');
  CREATE TABLE calibrations (
    id INTEGER PRIMARY KEY, hardware TEXT, kernel TEXT, phase TEXT, compute_efficiency REAL, memory_efficiency REAL,
    fixed_us REAL, key_ns REAL, points INTEGER, fit_mape REAL, source TEXT, created TEXT, catalog_hash TEXT);
  CREATE TABLE points (sweep INTEGER, id INTEGER, grp INTEGER NOT NULL, key TEXT NOT NULL,
    phase TEXT NOT NULL, batch INTEGER NOT NULL, q_len INTEGER NOT NULL, context INTEGER NOT NULL,
    tokens INTEGER NOT NULL, workload TEXT NOT NULL, valid INTEGER NOT NULL, best_slot INTEGER,
    default_slot INTEGER, default_rank INTEGER, regret REAL, regret_us REAL, PRIMARY KEY (sweep, id)) WITHOUT ROWID;
  CREATE TABLE predictions (sweep INTEGER, point INTEGER, slot INTEGER, attention_us REAL NOT NULL,
    eager_us REAL NOT NULL, graph_us REAL NOT NULL, step_us REAL NOT NULL, bound TEXT NOT NULL,
    graph_mode TEXT NOT NULL, rank INTEGER NOT NULL, PRIMARY KEY (sweep, point, slot)) WITHOUT ROWID;
  INSERT INTO calibrations (hardware, kernel, phase, points, fit_mape) VALUES ('h100-sxm', 'fa3', 'decode', 9, 0.1);
  INSERT INTO points VALUES (7, 0, 0, 'k', 'decode', 1, 1, 4096, 1, 'w', 1, 0, 0, 1, 0, 0);
  INSERT INTO predictions VALUES (7, 0, 0, 1.0, 2.0, 2.0, 2.0, 'memory', 'full', 1);)";

TEST(StoreSchema, AVersionThreeStoreIsMigratedToTheCurrentSchema) {
  OverlayDir dir;
  const std::string db = (dir.path() / "v3.db").string();
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, kVersion3, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
  {
    const Store store(db);
    const auto fits = store.latestCalibrations();
    ASSERT_EQ(fits.size(), 1U);
    EXPECT_FALSE(fits[0].heldout_p90_abs_rel_error.has_value());
  }
  EXPECT_EQ(count(db, "SELECT value FROM meta WHERE key = 'schema_version'"), kStoreSchemaVersion);
  // Version 5's measurement columns (converted kernel databases) are there, with their defaults.
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM pragma_table_info('measurements') WHERE name IN ('window', 'q_dtype', "
                  "'kv_write', 'l2_warm', 'engine', 'engine_version', 'origin')"),
            7);
  // The old rows are kept, with no band.
  EXPECT_EQ(count(db, "SELECT count(*) FROM predictions WHERE sweep = 7 AND band IS NULL AND provenance IS NULL"), 1);
  EXPECT_EQ(count(db, "SELECT count(*) FROM points WHERE sweep = 7 AND default_within_band IS NULL"), 1);
  // New sweeps write bands into it, and it merges with a store created at version 4.
  dir.write("spec.yaml", kSmallSpec);
  ASSERT_EQ(runAttnsim("sweep " + (dir.path() / "spec.yaml").string() + " --db " + db).exit_code, 0);
  EXPECT_EQ(count(db, "SELECT count(*) FROM predictions WHERE sweep <> 7 AND band IS NULL"), 0);
  const std::string fresh = (dir.path() / "v4.db").string(), merged = (dir.path() / "merged.db").string();
  ASSERT_EQ(runAttnsim("sweep " + (dir.path() / "spec.yaml").string() + " --db " + fresh).exit_code, 0);
  const auto r = runAttnsim("store merge " + merged + " " + db + " " + fresh);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(merged, "SELECT count(*) FROM predictions"), count(db, "SELECT count(*) FROM predictions"));
}

TEST(StoreSchema, HeldOutResidualsOfAStudysFitReachItsPredictions) {
  OverlayDir dir;
  const std::string db = (dir.path() / "fits.db").string();
  {
    Store store(db);
    CalibrationRow row;
    row.hardware = "h100-sxm";
    row.kernel = "fa3";
    row.phase = "decode";
    row.compute_efficiency = 0.5;
    row.memory_efficiency = 0.9;
    row.fixed_us = 5;
    row.points = 12;
    row.fit_mape = 0.04;
    row.heldout_mape = 0.05;
    row.heldout_p90_abs_rel_error = 0.09;
    row.heldout_points = 6;
    store.insertCalibration(row);
  }
  const auto r = runAttnsim(
      "predict --json --kernel fa3 --hardware h100-sxm --model llama-3.1-8b --phase decode "
      "--batch 8 --context 2048 --db " +
      db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto u = nlohmann::json::parse(r.output)["uncertainty"];
  EXPECT_EQ(u["provenance"], "measured");
  EXPECT_EQ(u["band_basis"], "heldout");
  EXPECT_DOUBLE_EQ(u["attention_band"].get<double>(), 0.09);
}

}  // namespace
}  // namespace attnsim::test
