// The store under a sweep: schema versions, resuming after a real kill -9 or Ctrl-C, two
// processes writing one file, and shards merged into what one run writes. The runs are real
// attnsim processes (fork/exec); stores are compared table by table, row by row.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "TestSupport.hpp"
#include "core/Error.hpp"
#include "study/Store.hpp"

namespace attnsim {
namespace {

using test::OverlayDir;

// Decode over 16 × 256 (batch, context) for two GPUs and two engines: long enough to be killed
// in the middle when committing every 100 points.
const char* kResumeSpec = R"(name: resume
hardware: [h100-sxm, b200]
models: [llama-3.1-8b]
engines: [vllm, sglang]
workloads:
  - decode: {batch: 1..256+1, context: 1024..16384+1024}
  - prefill: {length: [512, 2048]}
)";
constexpr std::int64_t kSpecPoints = std::int64_t{2} * 2 * (256 * 16 + 2);

pid_t spawn(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(ATTNSIM_BINARY));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(ATTNSIM_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

int exitCode(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::int64_t query(const std::string& db, const char* sql) {
  sqlite3* h = nullptr;
  std::int64_t n = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(h, 5000);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(h, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      n = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return n;
}

std::int64_t storedPoints(const std::string& db) { return query(db, "SELECT count(*) FROM points"); }

// Every row of the sweep tables, in key order, as text.
std::vector<std::string> dump(const std::string& db) {
  std::vector<std::string> rows;
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  for (const char* table : {"sweeps", "sweep_groups", "selections", "candidates", "points", "predictions"}) {
    sqlite3_stmt* s = nullptr;
    const std::string sql = std::string("SELECT * FROM ") + table + " ORDER BY 1, 2, 3";
    EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string row = table;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const auto* t = sqlite3_column_text(s, i);
        row += "|" + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return rows;
}

class StoreRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new OverlayDir();
    dir_->write("resume.yaml", kResumeSpec);
    const auto r = test::runAttnsim("sweep " + spec() + " --jobs 2 --db " + path("reference.db"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    reference_ = new std::vector<std::string>(dump(path("reference.db")));
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete dir_;
  }
  static std::string path(const std::string& name) { return (dir_->path() / name).string(); }
  static std::string spec() { return path("resume.yaml"); }
  // Starts a sweep and stops it with `signal` once some points are stored; returns its exit code.
  static int interrupt(const std::string& db, int signal) {
    const pid_t pid = spawn({"sweep", spec(), "--jobs", "2", "--commit-points", "100", "--db", db});
    while (storedPoints(db) <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    kill(pid, signal);
    return exitCode(pid);
  }

  static OverlayDir* dir_;
  static std::vector<std::string>* reference_;
};
OverlayDir* StoreRuns::dir_ = nullptr;
std::vector<std::string>* StoreRuns::reference_ = nullptr;

TEST_F(StoreRuns, TheReferenceRunStoresEveryPoint) {
  EXPECT_EQ(storedPoints(path("reference.db")), kSpecPoints);
  EXPECT_EQ(query(path("reference.db"), "SELECT count(*) FROM predictions WHERE rank = 1"),
            query(path("reference.db"), "SELECT count(*) FROM points WHERE best_slot IS NOT NULL"));
  EXPECT_EQ(query(path("reference.db"), "SELECT count(*) FROM sweep_runs WHERE status = 'done'"), 1);
}

TEST_F(StoreRuns, AKilledSweepResumesWithNoPointLostOrDuplicated) {
  const std::string db = path("killed.db");
  EXPECT_EQ(interrupt(db, SIGKILL), 128 + SIGKILL);
  const std::int64_t after_kill = storedPoints(db);
  EXPECT_GT(after_kill, 0);
  EXPECT_LT(after_kill, kSpecPoints) << "the kill landed after the sweep had finished; the test proves nothing";
  // Every stored point has all its predictions: it was committed with them.
  EXPECT_EQ(query(db,
                  "SELECT count(*) FROM points p WHERE valid = 1 AND best_slot IS NOT NULL AND NOT EXISTS "
                  "(SELECT 1 FROM predictions r WHERE r.sweep = p.sweep AND r.point = p.id AND r.rank = 1)"),
            0);
  const auto r = test::runAttnsim("sweep " + spec() + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(after_kill) + " stored before"), std::string::npos) << r.output;
  EXPECT_EQ(dump(db), *reference_);
}

TEST_F(StoreRuns, CtrlCCommitsWhatIsDoneAndTheRerunFinishes) {
  const std::string db = path("interrupted.db");
  EXPECT_EQ(interrupt(db, SIGINT), 130);
  const std::int64_t stopped = storedPoints(db);
  EXPECT_GT(stopped, 0);
  EXPECT_LT(stopped, kSpecPoints);
  EXPECT_EQ(query(db, "SELECT count(*) FROM sweep_runs WHERE status = 'interrupted'"), 1);
  const auto r = test::runAttnsim("sweep " + spec() + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(dump(db), *reference_);
}

TEST_F(StoreRuns, TwoProcessesWritingOneFileBothFinish) {
  const std::string db = path("shared.db");
  const pid_t a = spawn({"sweep", spec(), "--jobs", "1", "--commit-points", "200", "--db", db});
  const pid_t b = spawn({"sweep", spec(), "--jobs", "1", "--commit-points", "300", "--db", db});
  EXPECT_EQ(exitCode(a), 0);
  EXPECT_EQ(exitCode(b), 0);
  EXPECT_EQ(query(db, "SELECT count(*) FROM sweep_runs WHERE status = 'done'"), 2);
  EXPECT_EQ(dump(db), *reference_);
}

TEST_F(StoreRuns, ShardsMergedEqualOneRun) {
  const std::string a = path("shard1.db"), b = path("shard2.db"), merged = path("merged.db");
  ASSERT_EQ(exitCode(spawn({"sweep", spec(), "--shard", "1/2", "--db", a})), 0);
  // The second shard takes its place in the job array from Slurm's variables.
  ASSERT_EQ(
      exitCode(spawn({"sweep", spec(), "--db", b}, {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "2"}})),
      0);
  EXPECT_GT(storedPoints(a), 0);
  EXPECT_GT(storedPoints(b), 0);
  EXPECT_EQ(storedPoints(a) + storedPoints(b), kSpecPoints);
  EXPECT_EQ(query(b, "SELECT shard * 10 + shards FROM sweep_runs"), 22);
  const auto r = test::runAttnsim("store merge " + merged + " " + a + " " + b);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(dump(merged), *reference_);
  EXPECT_EQ(query(merged, "SELECT count(*) FROM sweep_runs"), 2);
  // Merging again changes nothing.
  ASSERT_EQ(test::runAttnsim("store merge " + merged + " " + a).exit_code, 0);
  EXPECT_EQ(dump(merged), *reference_);
}

TEST_F(StoreRuns, MpirunGivesEachRankItsShard) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is absent (Debian: apt-get install openmpi-bin; scripts/install-deps.sh installs it)";
  }
  const std::string cmd = "mpirun --allow-run-as-root --oversubscribe -n 2 sh -c '" + std::string(ATTNSIM_BINARY) +
                          " sweep " + spec() + " --jobs 1 --db " + path("mpi-$OMPI_COMM_WORLD_RANK.db") +
                          "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string merged = path("mpi-merged.db");
  ASSERT_EQ(test::runAttnsim("store merge " + merged + " " + path("mpi-0.db") + " " + path("mpi-1.db")).exit_code, 0);
  EXPECT_EQ(query(path("mpi-1.db"), "SELECT shard * 10 + shards FROM sweep_runs"), 22);
  EXPECT_EQ(dump(merged), *reference_);
}

// calibration: {study: FILE} takes that study's fitted efficiencies over the catalog's.
TEST(SweepCalibration, AStudysFitsChangeThePredictions) {
  OverlayDir dir;
  const std::string fits = (dir.path() / "fits.db").string();
  {
    Store store(fits);
    for (const auto& k : test::defaultCatalog().kernels()) {
      CalibrationRow row;
      row.hardware = "h100-sxm";
      row.kernel = k.id;
      row.phase = "decode";
      row.compute_efficiency = row.memory_efficiency = 0.01;
      row.fixed_us = 50;
      row.points = 10;
      row.source = "test";
      store.insertCalibration(row);
    }
  }
  const std::string spec =
      "name: c\nhardware: [h100-sxm]\nmodels: [llama-3.1-8b]\nengines: [vllm]\nworkloads:\n"
      "  - decode: {batch: [1, 64], context: [4096]}\n";
  dir.write("catalog.yaml", spec);
  dir.write("fitted.yaml", spec + "calibration: {study: fits.db}\n");
  const std::string a = (dir.path() / "a.db").string(), b = (dir.path() / "b.db").string();
  ASSERT_EQ(test::runAttnsim("sweep " + (dir.path() / "catalog.yaml").string() + " --db " + a).exit_code, 0);
  ASSERT_EQ(test::runAttnsim("sweep " + (dir.path() / "fitted.yaml").string() + " --db " + b).exit_code, 0);
  const std::int64_t rows = query(a, "SELECT count(*) FROM predictions");
  EXPECT_GT(rows, 0);
  EXPECT_EQ(query(b, "SELECT count(*) FROM predictions"), rows);
  EXPECT_EQ(query(b, "SELECT count(*) FROM sweeps WHERE calibration LIKE 'study:%fits.db'"), 1);
  const std::string attention_sum = "SELECT CAST(SUM(attention_us) AS INTEGER) FROM predictions";
  EXPECT_GT(query(b, attention_sum.c_str()), 2 * query(a, attention_sum.c_str()));
}

TEST(StoreSchema, AVersionTwoStoreIsMigratedAndKeepsItsMeasurements) {
  OverlayDir dir;
  const std::string db = (dir.path() / "v2.db").string();
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                         "INSERT INTO meta VALUES ('schema_version', '2');"
                         "CREATE TABLE measurements (id INTEGER PRIMARY KEY, source TEXT, line INTEGER, device TEXT,"
                         " hardware TEXT, date TEXT, torch TEXT, triton TEXT, cuda TEXT, kind TEXT, impl TEXT, kernel"
                         " TEXT, phase TEXT, batch INTEGER, q_len INTEGER, kv_len INTEGER, heads INTEGER, kv_heads "
                         "INTEGER, head_dim INTEGER, causal INTEGER, dtype TEXT, median_us REAL, p20_us REAL, p80_us "
                         "REAL, runs INTEGER, flops REAL, bytes REAL, note TEXT, page_size INTEGER NOT NULL DEFAULT 0,"
                         " UNIQUE (source, line));"
                         "INSERT INTO measurements (source, line, hardware, kind, median_us) VALUES "
                         "('m.csv', 2, 'h100-sxm', 'attention', 12.5);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  {
    Store store(db);
    ASSERT_EQ(store.measurements().size(), 1U);
    EXPECT_DOUBLE_EQ(store.measurements()[0].median_us, 12.5);
  }
  EXPECT_EQ(query(db, "SELECT value FROM meta WHERE key = 'schema_version'"), kStoreSchemaVersion);
  const auto r = test::runAttnsim("sweep default --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(storedPoints(db), 0);
}

TEST(StoreSchema, ANewerStoreIsRefusedWithExitCodeTwo) {
  OverlayDir dir;
  const std::string db = (dir.path() / "v99.db").string();
  { Store store(db); }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  EXPECT_THROW(Store{db}, UsageError);
  const auto r = test::runAttnsim("sweep default --db " + db);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("schema version 99"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace attnsim
