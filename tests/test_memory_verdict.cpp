// Infeasible deployments (issue 29): predict and rank lead with the memory verdict and carry it in
// their JSON for every backend; sweeps store it per point, and the priorities report shows a point
// whose deployment does not fit as not deployable, apart from a refusal, outside its regrets.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "TestSupport.hpp"
#include "study/Store.hpp"

namespace attnsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::runAttnsim;

fs::path memoryScratch() { return test::suiteScratchDir("memory-verdict"); }

json jsonOf(const test::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(r.output);
}

TEST(MemoryVerdict, PredictLeadsWithTheVerdictAndStillExitsZeroForLlama405bOnOneH100) {
  const std::string args = "predict --engine vllm --hardware h100-sxm --model llama-3.1-405b --batch 8 --context 4096";
  const auto text = runAttnsim(args);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(text.output.rfind("memory: does not fit: the weights", 0), 0U) << text.output;
  EXPECT_NE(text.output.find("attention ["), std::string::npos) << "the numbers still follow";
  const json j = jsonOf(runAttnsim("--json " + args));
  EXPECT_FALSE(j["memory"]["fits"].get<bool>());
  EXPECT_EQ(j["memory"]["reason"], "weights");
  EXPECT_EQ(j["memory"]["have_mib"].get<double>(), 0.0);
  EXPECT_GT(j["memory"]["need_mib"].get<double>(), 0.0);
}

TEST(MemoryVerdict, PredictJsonAlwaysCarriesTheVerdict) {
  const json fits = jsonOf(
      runAttnsim("--json predict --engine vllm --hardware h100-sxm --model llama-3.1-8b --batch 8 --context 4096"));
  EXPECT_TRUE(fits["memory"]["fits"].get<bool>());
  EXPECT_TRUE(fits["memory"]["reason"].is_null());
  EXPECT_LT(fits["memory"]["need_mib"].get<double>(), fits["memory"]["have_mib"].get<double>());
  EXPECT_EQ(fits["memory"]["message"].get<std::string>().rfind("fits:", 0), 0U);
  const json kv = jsonOf(
      runAttnsim("--json predict --engine vllm --hardware h100-sxm --model llama-3.1-8b --batch 63 --context 8192"));
  EXPECT_FALSE(kv["memory"]["fits"].get<bool>());
  EXPECT_EQ(kv["memory"]["reason"], "kv_cache");
  EXPECT_GT(kv["memory"]["need_mib"].get<double>(), kv["memory"]["have_mib"].get<double>());
  const json kernel = jsonOf(
      runAttnsim("--json predict --kernel fa3 --hardware h100-sxm --model llama-3.1-8b --batch 8 --context 4096"));
  EXPECT_TRUE(kernel["memory"]["fits"].is_null()) << "a kernel outside any engine has no memory split";
}

TEST(MemoryVerdict, RankSaysForEachBackendWhetherItsDeploymentFits) {
  const std::string args = "rank --engine vllm,sglang --hardware h100-sxm --model deepseek-v3 --batch 8 --context 4096";
  const auto text = runAttnsim(args);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(text.output.rfind("memory: ", 0), 0U) << text.output;
  EXPECT_NE(text.output.find("does not fit for 8 of 8"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("no (W)"), std::string::npos) << text.output;
  const json j = jsonOf(runAttnsim("--json " + args));
  EXPECT_FALSE(j["memory"]["fits"].get<bool>());
  ASSERT_FALSE(j["ranked"].empty());
  for (const auto& b : j["ranked"]) EXPECT_FALSE(b["memory"]["fits"].get<bool>()) << b["backend"];
  const json small =
      jsonOf(runAttnsim("--json rank --hardware h100-sxm --model llama-3.1-8b --batch 8 --context 4096"));
  EXPECT_TRUE(small["memory"]["fits"].get<bool>());
  for (const auto& b : small["ranked"]) EXPECT_TRUE(b["memory"]["fits"].get<bool>()) << b["backend"];
}

// rank over a list answers per point what rank of each point answers: each backend's own deployment.
TEST(MemoryVerdict, ListRankSaysForEachBackendWhetherItsDeploymentFits) {
  const std::string scenario = "--engine sglang --hardware h100-sxm --model llama-3.1-8b --context 32768";
  const json rows = jsonOf(runAttnsim("--json rank " + scenario + " --batch 8,16"));
  ASSERT_FALSE(rows.empty());
  std::map<std::int64_t, json> single;
  std::set<double> pools;  // backends differ in page size, workspace and graph memory
  int compared = 0;
  for (const auto& row : rows) {
    if (!row.contains("rank")) continue;
    const std::int64_t batch = row["batch"].get<std::int64_t>();
    if (!single.count(batch))
      single[batch] = jsonOf(runAttnsim(fmt::format("--json rank {} --batch {}", scenario, batch)));
    const json* own = nullptr;
    for (const auto& b : single[batch]["ranked"]) {
      if (b["backend"] == row["backend"]) own = &b;
    }
    ASSERT_NE(own, nullptr) << row.dump();
    EXPECT_EQ(row["memory"]["fits"], (*own)["memory"]["fits"]) << row.dump();
    EXPECT_NEAR(row["memory"]["have_mib"].get<double>(), (*own)["memory"]["have_mib"].get<double>(), 1e-6);
    EXPECT_NEAR(row["memory"]["need_mib"].get<double>(), (*own)["memory"]["need_mib"].get<double>(), 1e-6);
    pools.insert(row["memory"]["have_mib"].get<double>());
    ++compared;
  }
  EXPECT_GT(compared, 2);
  EXPECT_GT(pools.size(), 1U) << "each backend's own pool, not the engine's one";
  const auto text = runAttnsim("rank " + scenario + " --batch 8,16");
  EXPECT_NE(text.output.find("fits: whether this backend's deployment holds"), std::string::npos) << text.output;
}

// One H100 at TP 1: Llama-3.1-8B fits at batch 1, DeepSeek-V3's weights do not.
constexpr const char* kMemoryVerdictSpec = R"(name: memory-verdict
hardware: [h100-sxm]
models: [llama-3.1-8b, deepseek-v3]
engines: [vllm]
tp: [1]
workloads:
  - decode: {batch: [1], context: [1024]}
)";

long long count(const fs::path& db, const std::string& query) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(db.string().c_str(), &h), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, query.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  const long long n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(h);
  return n;
}

fs::path sweptStore(const std::string& name) {
  const fs::path spec = memoryScratch() / "spec.yaml";
  if (!fs::exists(spec)) std::ofstream(spec) << kMemoryVerdictSpec;
  const fs::path db = memoryScratch() / name;
  const auto sweep = runAttnsim("sweep " + spec.string() + " --db " + db.string());
  EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
  return db;
}

json prioritiesJson(const fs::path& db, const std::string& out) {
  const fs::path dir = memoryScratch() / out;
  const auto r = runAttnsim("report priorities --db " + db.string() + " --out " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(test::readFile(dir / "priorities.json"));
}

TEST(StudyMemory, SweepStoresEveryPointsVerdictWithItsReasonAndShortfall) {
  const fs::path db = sweptStore("verdict.db");
  EXPECT_EQ(count(db, "SELECT memory_fits FROM points WHERE key LIKE '%llama-3.1-8b%'"), 1);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM points WHERE key LIKE '%deepseek-v3%' AND memory_fits = 0 AND "
                  "memory_reason = 'weights' AND memory_have_mib = 0 AND memory_need_mib > 0"),
            1);
}

TEST(StudyMemory, SweepStoresEachPredictionsVerdictForItsOwnBackend) {
  const fs::path db = sweptStore("per-backend.db");
  EXPECT_GT(count(db, "SELECT count(*) FROM predictions"), 0);
  EXPECT_EQ(count(db, "SELECT count(*) FROM predictions WHERE memory_fits IS NULL"), 0);
  // DeepSeek-V3's weights leave no pool on one H100 whichever backend runs it.
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM predictions r JOIN points p ON p.sweep = r.sweep AND p.id = r.point "
                  "WHERE p.key LIKE '%deepseek-v3%' AND NOT (r.memory_fits = 0 AND r.memory_reason = 'weights')"),
            0);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM predictions r JOIN points p ON p.sweep = r.sweep AND p.id = r.point "
                  "WHERE p.key LIKE '%llama-3.1-8b%' AND (r.memory_fits != 1 OR r.memory_have_mib <= 0)"),
            0);
}

TEST(StudyMemory, AVersionSevenStoreGainsThePredictionColumnsAndKeepsItsRows) {
  const fs::path db = sweptStore("v7.db");
  const long long predictions = count(db, "SELECT count(*) FROM predictions");
  test::runSql(
      db,
      "ALTER TABLE predictions DROP COLUMN memory_fits; ALTER TABLE predictions DROP COLUMN memory_reason; "
      "ALTER TABLE predictions DROP COLUMN memory_need_mib; ALTER TABLE predictions DROP COLUMN memory_have_mib; "
      "UPDATE meta SET value = '7' WHERE key = 'schema_version';");
  sweptStore("v7.db");
  EXPECT_EQ(count(db, "SELECT value FROM meta WHERE key = 'schema_version'"), kStoreSchemaVersion);
  EXPECT_EQ(count(db, "SELECT count(*) FROM predictions WHERE memory_fits IS NULL"), predictions);
}

TEST(StudyMemory, PrioritiesShowsAnUndeployablePointApartFromARefusalAndOutsideTheRegrets) {
  const json j = prioritiesJson(sweptStore("report.db"), "report");
  bool saw_mla = false;
  for (const auto& row : j["rows"]) {
    if (row["models"].dump().find("deepseek-v3") == std::string::npos) continue;
    saw_mla = true;
    EXPECT_EQ(row["not_deployable"], 1) << row.dump();
    EXPECT_EQ(row["refused"], 0) << row.dump();
    EXPECT_EQ(row["ranked"], 0) << "no regret from a deployment that does not fit";
    EXPECT_TRUE(row["mean_regret"].is_null());
  }
  EXPECT_TRUE(saw_mla);
  const std::string html = test::readFile(memoryScratch() / "report" / "priorities.html");
  EXPECT_NE(html.find("h100-sxm · deepseek-v3"), std::string::npos);
  EXPECT_NE(html.find("not deployable (memory): the weights leave no KV cache"), std::string::npos);
}

TEST(StudyMemory, WhatIfAndMatrixShowAnUndeployablePointApartFromARefusal) {
  const fs::path db = sweptStore("others.db");
  const fs::path whatif = memoryScratch() / "whatif";
  const auto w = runAttnsim("report whatif --db " + db.string() + " --out " + whatif.string() +
                            " --compare vllm:FLASH_ATTN_MLA,vllm:TRITON_MLA");
  ASSERT_EQ(w.exit_code, 0) << w.output;
  const json wj = json::parse(test::readFile(whatif / "whatif.json"));
  EXPECT_NE(wj.dump().find("\"not_deployable\":true"), std::string::npos);
  const std::string md = test::readFile(whatif / "whatif.md");
  EXPECT_NE(md.find("not deployable (memory) (1)"), std::string::npos) << md;
  EXPECT_EQ(md.find("refused because"), md.rfind("refused because")) << "not listed as an engine refusal";
  const fs::path matrix = memoryScratch() / "matrix";
  const auto m = runAttnsim("report matrix --db " + db.string() + " --out " + matrix.string());
  ASSERT_EQ(m.exit_code, 0) << m.output;
  const json mj = json::parse(test::readFile(matrix / "matrix.json"));
  int undeployable = 0;
  for (const auto& cell : mj["accepted"]["vllm"]["cells"]) {
    if (cell["not_deployable"].get<int>() == 0) continue;
    ++undeployable;
    EXPECT_NE(cell["where"].get<std::string>().find("deepseek-v3"), std::string::npos) << cell.dump();
    EXPECT_EQ(cell["valid"], cell["not_deployable"]) << "accepted by the engine, not deployable";
  }
  EXPECT_GT(undeployable, 0);
}

TEST(StudyMemory, AVersionFiveStoreGainsTheColumnsAndItsOldPointsCountAsBefore) {
  const fs::path db = sweptStore("v5.db");
  test::runSql(db,
               "ALTER TABLE points DROP COLUMN memory_fits; ALTER TABLE points DROP COLUMN memory_reason; "
               "ALTER TABLE points DROP COLUMN memory_need_mib; ALTER TABLE points DROP COLUMN memory_have_mib; "
               "UPDATE meta SET value = '5' WHERE key = 'schema_version';");
  sweptStore("v5.db");  // a writer migrates it; every point is stored, so none is re-evaluated
  EXPECT_EQ(count(db, "SELECT value FROM meta WHERE key = 'schema_version'"), kStoreSchemaVersion);
  EXPECT_EQ(count(db, "SELECT count(*) FROM points WHERE memory_fits IS NULL"), 2);
  const auto report = prioritiesJson(db, "v5");  // kept alive: the loop reads into it
  for (const auto& row : report["rows"]) EXPECT_EQ(row["not_deployable"], 0) << row.dump();
}

}  // namespace
}  // namespace attnsim
