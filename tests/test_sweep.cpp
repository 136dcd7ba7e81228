// Sweep specs (strict YAML, ranges, filters), the expansion into points and shards, and the
// evaluation agreeing with `rank` point by point.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "TestSupport.hpp"
#include "core/Error.hpp"
#include "study/Store.hpp"
#include "study/Sweep.hpp"
#include "study/SweepGroups.hpp"
#include "study/SweepPlan.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim {
namespace {

using test::defaultCatalog;

const char* kSmallSpec = R"(name: small
hardware: [h100-sxm, mi300x]
models: [llama-3.1-8b, deepseek-v3]
engines: [vllm, sglang]
cuda_graphs: [on, off]
workloads:
  - decode: {batch: 1..64x4, context: [2048, 16384]}
  - prefill: {length: [1024]}
  - extend: {chunk: [512], prefix: [4096]}
  - mixed: ["1x512@4608,7x1@2048"]
  - verify: {batch: [4], context: [4096], draft_tokens: [4], topk: 1, algorithm: eagle}
)";

SweepSpec parse(const std::string& text) { return parseSweepSpec(text, "spec.yaml", defaultCatalog()); }

// The error a spec raises, as "file:line:col ... message".
std::string errorOf(const std::string& text) {
  try {
    parse(text);
  } catch (const CatalogError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SweepSpec, RangesSpellGeometricArithmeticAndSingleValues) {
  EXPECT_EQ(parseIntRange("1..256x2", 1, 1024), (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(parseIntRange("512..2048+512", 1, 4096), (std::vector<std::int64_t>{512, 1024, 1536, 2048}));
  EXPECT_EQ(parseIntRange("3..10x3", 1, 100), (std::vector<std::int64_t>{3, 9}));
  EXPECT_EQ(parseIntRange("64", 1, 100), (std::vector<std::int64_t>{64}));
  EXPECT_THROW(parseIntRange("1..8x1", 1, 100), InputError);  // endless
  EXPECT_THROW(parseIntRange("8..1x2", 1, 100), InputError);  // empty
  EXPECT_THROW(parseIntRange("1..512x2", 1, 100), InputError);
  EXPECT_THROW(parseIntRange("a..b", 1, 100), InputError);
}

TEST(SweepSpec, ExpandsEveryAxisIntoWorkloadsAndCandidates) {
  const SweepSpec s = parse(kSmallSpec);
  EXPECT_EQ(s.hardware.size(), 2U);
  ASSERT_EQ(s.engines.size(), 2U);
  EXPECT_EQ(s.engines[0].backends, backendNames(defaultCatalog().engine("vllm")));
  EXPECT_EQ(s.cuda_graphs, (std::vector<bool>{true, false}));
  ASSERT_EQ(s.workloads.size(), 4U * 2 + 1 + 1 + 1 + 1);
  EXPECT_EQ(s.workloads[0].label, "decode b=1 c=2048");
  EXPECT_EQ(s.workloads[8].workload.phase, Phase::Prefill);
  EXPECT_EQ(s.workloads[9].workload.phase, Phase::Extend);
  EXPECT_EQ(s.workloads[9].workload.groups[0].context, 4608);
  EXPECT_FALSE(s.workloads[10].workload.isUniform());
  const SweepPlan plan = planSweep(s, {});
  EXPECT_EQ(plan.total_points, 2 * 2 * 2 * 2 * 12);
  EXPECT_EQ(plan.points.size(), static_cast<std::size_t>(plan.total_points));
}

TEST(SweepSpec, ExplicitBackendsNameTheirEngineAndVerifyCarriesTheDraftTree) {
  const SweepSpec s = parse(R"(name: b
hardware: [h100-sxm]
models: [llama-3.1-8b]
backends: [vllm:FLASH_ATTN, vllm:FLASHINFER, sglang:fa3]
workloads:
  - verify: {batch: [8], context: [4096], draft_tokens: [4], topk: 2, algorithm: eagle}
)");
  ASSERT_EQ(s.engines.size(), 2U);
  EXPECT_EQ(s.engines[0].backends, (std::vector<std::string>{"FLASH_ATTN", "FLASHINFER"}));
  EXPECT_EQ(s.engines[1].backends, (std::vector<std::string>{"fa3"}));
  ASSERT_EQ(s.workloads.size(), 1U);
  EXPECT_EQ(s.workloads[0].workload.phase, Phase::Verify);
  EXPECT_EQ(s.workloads[0].workload.groups[0].tree_topk, 2);
  EXPECT_EQ(s.workloads[0].spec_algorithm, "eagle");
}

TEST(SweepSpec, MistakesNameFileLineColumnAndTheClosestKey) {
  EXPECT_NE(errorOf("name: x\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\n"
                    "workloads:\n  - decode: {batch: 1, context: 8}\ncuda_graph: [on]\n")
                .find("spec.yaml:7:1"),
            std::string::npos);
  EXPECT_NE(errorOf("name: x\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\n"
                    "workloads:\n  - decode: {batch: 1, context: 8}\ncuda_graph: [on]\n")
                .find("did you mean 'cuda_graphs'"),
            std::string::npos);
  const std::string hw = errorOf("name: x\nhardware: [h100-sx]\nmodels: [llama-3.1-8b]\nengines: [vllm]\n");
  EXPECT_NE(hw.find("spec.yaml:2:"), std::string::npos) << hw;
  EXPECT_NE(hw.find("did you mean 'h100-sxm'"), std::string::npos) << hw;
  const std::string range = errorOf(
      "name: x\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\nworkloads:\n"
      "  - decode: {batch: 0..8+2, context: 8}\n");
  EXPECT_NE(range.find("spec.yaml:6:21"), std::string::npos) << range;
  EXPECT_NE(range.find("out of range"), std::string::npos) << range;
  const std::string type = errorOf("name: x\nhardware: h100-sxm\nmodels: [llama-3.1-8b]\nengines: [vllm]\n");
  EXPECT_NE(type.find("expected a list"), std::string::npos) << type;
  const std::string backend =
      errorOf("name: x\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nbackends: [vllm:FLASH_ATN]\n");
  EXPECT_NE(backend.find("did you mean 'FLASH_ATTN'"), std::string::npos) << backend;
  const std::string filter = errorOf(
      "name: x\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\nworkloads:\n"
      "  - decode: {batch: 1, context: 8}\ndrop: [\"bach > 4\"]\n");
  EXPECT_NE(filter.find("did you mean 'batch'"), std::string::npos) << filter;
}

TEST(SweepSpec, ABadSpecFileIsExitCodeTwoWithItsLocation) {
  test::OverlayDir dir;
  dir.write("bad.yaml",
            "name: x\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\nworkloads:\n"
            "  - decod: {batch: 1, context: 8}\n");
  const auto r =
      test::runAttnsim("sweep " + (dir.path() / "bad.yaml").string() + " --db " + (dir.path() / "x.db").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.yaml:6:5"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean 'decode'"), std::string::npos) << r.output;
  const auto unknown = test::runAttnsim("sweep defalt --db " + (dir.path() / "x.db").string());
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("did you mean 'default'"), std::string::npos) << unknown.output;
}

TEST(SweepSpec, FiltersDropTheCombinationsTheyMatch) {
  const SweepSpec all = parse(kSmallSpec);
  const SweepSpec some = parse(std::string(kSmallSpec) +
                               "drop: [\"hardware == 'mi300x' && model == 'deepseek-v3'\", \"phase == 'decode' && "
                               "batch * context > 100000\"]\n");
  const SweepPlan a = planSweep(all, {}), b = planSweep(some, {});
  std::int64_t expected = 0;
  for (const auto& p : a.points) {
    const Scenario& s = a.groups[p.group].scenario;
    const Workload& w = all.workloads[p.workload].workload;
    const bool big_decode =
        w.isUniform() && w.phase == Phase::Decode && w.groups[0].count * w.groups[0].context > 100000;
    if (!(s.hardware == "mi300x" && s.model == "deepseek-v3") && !big_decode) ++expected;
  }
  EXPECT_EQ(b.total_points, expected);
  EXPECT_LT(b.total_points, a.total_points);
  EXPECT_GT(b.total_points, 0);
}

TEST(SweepSpec, BuiltInSpecsLoad) {
  const auto names = builtinSweepNames();
  for (const char* required : {"default", "priorities-hopper", "throughput"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  for (const auto& name : names) {
    const SweepSpec s = loadSweepSpec(name, defaultCatalog());
    EXPECT_EQ(s.name, name);
    EXPECT_GT(planSweep(s, {}).total_points, 0) << name;
  }
}

TEST(SweepShards, PartitionThePointsByKey) {
  const SweepSpec s = parse(kSmallSpec);
  const SweepPlan whole = planSweep(s, {});
  std::multiset<std::int64_t> seen;
  for (int k = 0; k < 3; ++k) {
    for (const auto& p : planSweep(s, {k, 3}).points) seen.insert(p.id);
  }
  std::multiset<std::int64_t> all;
  for (const auto& p : whole.points) all.insert(p.id);
  EXPECT_EQ(seen, all) << "every point in exactly one shard";
  EXPECT_EQ(parseShard("2/4").index, 1);
  EXPECT_EQ(parseShard("2/4").count, 4);
  for (const char* bad : {"0/4", "5/4", "1/0", "x", "1/4x"}) EXPECT_THROW(parseShard(bad), UsageError) << bad;
}

TEST(SweepShards, ComeFromSlurmOrMpiWhenNotGiven) {
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  EXPECT_EQ(shardFromEnvironment().index, 3);
  EXPECT_EQ(shardFromEnvironment().count, 4);
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  ::unsetenv("SLURM_ARRAY_TASK_COUNT");
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_EQ(shardFromEnvironment().index, 1);
  EXPECT_EQ(shardFromEnvironment().count, 2);
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(shardFromEnvironment().count, 1);
}

// A value the engine's flag parsing rejects makes the engine refuse those points, with its message.
TEST(SweepEvaluation, AnOptionTheEngineSpellsDifferentlyIsItsRefusal) {
  test::OverlayDir dir;
  const SweepSpec spec = parse(R"(name: kv
hardware: [h100-sxm]
models: [llama-3.1-8b]
engines: [vllm, sglang]
kv_dtypes: [fp8]
workloads:
  - decode: {batch: [1, 8], context: [4096]}
)");
  Store store((dir.path() / "kv.db").string());
  const SweepSummary s = runSweep(defaultCatalog(), spec, store, {});
  EXPECT_EQ(s.progress.done, 4);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(),
                               "SELECT g.engine, s.valid, s.refusal, (SELECT count(*) FROM predictions r JOIN points p "
                               "ON p.sweep = r.sweep AND p.id = r.point WHERE p.grp = g.id) FROM sweep_groups g JOIN "
                               "selections s ON s.sweep = g.sweep AND s.grp = g.id ORDER BY g.engine",
                               -1, &q, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)), "sglang");
  EXPECT_EQ(sqlite3_column_int(q, 1), 0);
  EXPECT_NE(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 2))).find("fp8_e4m3"), std::string::npos);
  EXPECT_EQ(sqlite3_column_int(q, 3), 0);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)), "vllm");
  EXPECT_EQ(sqlite3_column_int(q, 1), 1);
  EXPECT_GT(sqlite3_column_int(q, 3), 0);
  sqlite3_finalize(q);
}

// Each stored point says what `rank` says for the same scenario: validity, order, times, regret.
TEST(SweepEvaluation, AgreesWithRankPointByPoint) {
  test::OverlayDir dir;
  const std::string db = (dir.path() / "s.db").string();
  const SweepSpec spec = parse(kSmallSpec);
  Store store(db);
  SweepOptions o;
  o.jobs = 2;
  const SweepSummary summary = runSweep(defaultCatalog(), spec, store, o);
  EXPECT_EQ(summary.progress.done, summary.points);
  const SweepPlan plan = planSweep(spec, {});
  sqlite3* h = store.handle();
  int compared = 0;
  for (std::size_t i = 0; i < plan.points.size(); i += 7) {
    const PlannedPoint& p = plan.points[i];
    Scenario s = plan.groups[p.group].scenario;
    s.workload = spec.workloads[p.workload].workload;
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(h,
                           "SELECT c.backend, r.step_us, r.attention_us, r.bound, c.engine_default FROM "
                           "predictions r JOIN points p ON p.sweep = r.sweep AND p.id = r.point JOIN candidates c "
                           "ON c.sweep = r.sweep AND c.grp = p.grp AND c.slot = r.slot WHERE r.point = ? ORDER "
                           "BY r.rank",
                           -1, &q, nullptr),
        SQLITE_OK);
    sqlite3_bind_int64(q, 1, p.id);
    std::vector<RankedBackend> stored;
    while (sqlite3_step(q) == SQLITE_ROW) {
      stored.push_back({s.engine, reinterpret_cast<const char*>(sqlite3_column_text(q, 0)), "",
                        sqlite3_column_double(q, 1), sqlite3_column_double(q, 2),
                        reinterpret_cast<const char*>(sqlite3_column_text(q, 3)), 0, sqlite3_column_int(q, 4) != 0});
    }
    sqlite3_finalize(q);
    sqlite3_stmt* pq = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT regret, regret_us FROM points WHERE id = ? AND regret IS NOT NULL", -1, &pq,
                                 nullptr),
              SQLITE_OK);
    sqlite3_bind_int64(pq, 1, p.id);
    const bool has_regret = sqlite3_step(pq) == SQLITE_ROW;
    const double regret = has_regret ? sqlite3_column_double(pq, 0) : -1;
    sqlite3_finalize(pq);
    try {
      const Ranking r = rankBackends(defaultCatalog(), s, {s.engine});
      ASSERT_EQ(has_regret, !r.defaults.empty());
      if (has_regret) {
        EXPECT_DOUBLE_EQ(regret, r.defaults[0].regret);
      }
      ASSERT_EQ(stored.size(), r.ranked.size()) << s.hardware << " " << s.model << " " << s.engine;
      for (std::size_t k = 0; k < stored.size(); ++k) {
        EXPECT_EQ(stored[k].backend, r.ranked[k].backend);
        EXPECT_DOUBLE_EQ(stored[k].step_us, r.ranked[k].step_us);
        EXPECT_DOUBLE_EQ(stored[k].attention_us, r.ranked[k].attention_us);
        EXPECT_EQ(stored[k].bound, r.ranked[k].bound);
        EXPECT_EQ(stored[k].engine_default, r.ranked[k].engine_default);
      }
    } catch (const EngineRefusal&) {
      EXPECT_TRUE(stored.empty());
    }
    ++compared;
  }
  EXPECT_GT(compared, 20);
}

}  // namespace
}  // namespace attnsim

namespace attnsim {
namespace {

nlohmann::json jsonOf(const std::string& arguments) {
  const auto r = test::runAttnsim("--json " + arguments);
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  return nlohmann::json::parse(r.output);
}

// predict over lists prints, row by row, what predict says for each scenario alone.
TEST(ListStudies, PredictRowsAreTheSinglePredictions) {
  const auto rows = jsonOf(
      "predict --engine vllm --hardware h100-sxm,mi300x --model llama-3.1-8b --batch 1..64x8 "
      "--context 2048,8192");
  ASSERT_EQ(rows.size(), 2U * 3 * 2);
  for (const auto& row : rows) {
    const auto one =
        jsonOf(fmt::format("predict --engine vllm --hardware {} --model llama-3.1-8b --batch {} --context {}",
                           row["hardware"].get<std::string>(), row["batch"].get<int>(), row["context"].get<int>()));
    EXPECT_DOUBLE_EQ(row["step_us"].get<double>(), one["step_us_graph"].get<double>());
    EXPECT_DOUBLE_EQ(row["attention_us"].get<double>(), one["attention_us"].get<double>());
    EXPECT_EQ(row["backend"], one["selection"]["backend"]) << one["selection"].dump();
  }
}

TEST(ListStudies, RankRowsAreTheSingleRankingsAndGoToTheStudy) {
  test::OverlayDir dir;
  const std::string db = (dir.path() / "r.db").string();
  const auto rows =
      jsonOf("rank --engine sglang --hardware b200 --model deepseek-v3 --prefill-length 1024,4096 --db " + db);
  for (const int n : {1024, 4096}) {
    const auto one =
        jsonOf(fmt::format("rank --engine sglang --hardware b200 --model deepseek-v3 --phase prefill --context {}", n));
    std::vector<std::string> listed;
    for (const auto& row : rows) {
      if (row["context"] == n) listed.push_back(row["backend"]);
    }
    std::vector<std::string> ranked;
    for (const auto& r : one["ranked"]) ranked.push_back(r["backend"]);
    EXPECT_FALSE(listed.empty());
    EXPECT_EQ(listed, ranked) << n;
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT count(*) FROM points", -1, &q, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 2);
  sqlite3_finalize(q);
  sqlite3_close(h);
}

TEST(ListStudies, FlagsALineCannotTakeAreUsageErrors) {
  EXPECT_EQ(test::runAttnsim("predict --kernel fa3 --hardware h100-sxm --model llama-3.1-8b --batch 1,2").exit_code, 2);
  EXPECT_EQ(test::runAttnsim("predict --engine vllm --hardware h100-sxm --model llama-3.1-8b --batch 0,2").exit_code,
            2);
  EXPECT_EQ(test::runAttnsim("rank --hardware h100-sxm --model llama-3.1-8b --batch 2..1x2").exit_code, 2);
}

}  // namespace
}  // namespace attnsim
