// unit: a full disk gives a clear error (exit 2) and leaves the store usable: integrity_check is ok
// and the same command run again finishes the work (issue 16). The disk is made full with a
// file-size limit (ulimit -f), which holds for root too. A read-only store is read by the reports
// and refused by the writers before they write.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

namespace fs = std::filesystem;
const std::string kCsv = std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/h100/measurements.csv";

// attnsim with every file it writes limited to `kib` KiB (bash counts ulimit -f in KiB).
CommandResult runWithFileLimit(std::uintmax_t kib, const std::string& arguments) {
  return runShell("bash -c 'ulimit -f " + std::to_string(kib) + " && exec " + ATTNSIM_BINARY + " " + arguments + "'");
}

// The first column of the first row of `sql` (read-only connection), or the error.
std::string scalar(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  std::string out;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    } else {
      out = sqlite3_errmsg(h);
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return out;
}

void expectFullDiskError(const CommandResult& r) {
  ASSERT_EQ(r.exit_code, 2) << r.output;
  const auto error = nlohmann::json::parse(r.output).at("error");
  const std::string message = error.at("message");
  EXPECT_NE(message.find("could not write the store"), std::string::npos) << message;
}

// The size of the store `arguments` + " --db FILE" writes, unlimited: the limits below are fractions
// of it, so the test follows the catalog and the schema as they grow.
std::uintmax_t storeKib(const std::string& arguments) {
  OverlayDir dir;
  const fs::path db = dir.path() / "full.db";
  const auto r = runAttnsim(arguments + db.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return fs::file_size(db) / 1024;
}

TEST(RobustStore, FullDiskDuringImportIsExitTwoAndTheImportCanBeRepeated) {
  OverlayDir dir;
  const fs::path db = dir.path() / "s.db";
  const std::string import = "--json measurements import " + kCsv + " --db ";
  expectFullDiskError(runWithFileLimit(storeKib(import) / 2, import + db.string()));
  ASSERT_TRUE(fs::exists(db));
  EXPECT_EQ(scalar(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), "0") << "the import is one transaction";

  const auto again = runAttnsim(import + db.string());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const auto imported = nlohmann::json::parse(again.output).at("imported").get<std::int64_t>();
  EXPECT_GT(imported, 500);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), std::to_string(imported));
  EXPECT_EQ(scalar(db, "PRAGMA integrity_check"), "ok");
}

TEST(RobustStore, FullDiskDuringSweepIsExitTwoAndTheRerunFinishesIt) {
  OverlayDir dir;
  const fs::path db = dir.path() / "s.db";
  const std::string sweep = "--json sweep default --jobs 1 --commit-points 50 --db ";
  // The first commits hold the catalog files and the groups (about 3/4 of the store): 9/10 lets some
  // points in before the disk fills.
  expectFullDiskError(runWithFileLimit(storeKib(sweep) * 9 / 10, sweep + db.string()));
  EXPECT_EQ(scalar(db, "PRAGMA integrity_check"), "ok");

  const auto resumed = runAttnsim(sweep + db.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto summary = nlohmann::json::parse(resumed.output);
  EXPECT_GT(summary.at("already_stored").get<std::int64_t>(), 0) << "the points written before the disk filled stay";
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM points"), std::to_string(summary.at("points").get<std::int64_t>()));
  EXPECT_EQ(scalar(db, "PRAGMA integrity_check"), "ok");
}

// A folder user 65534 may enter and read but not write, whatever the clone's folder (a 0700 home or
// temporary folder): the attnsim program, the measurement file and the store this test gives it are
// copies in here, owned by root, so the unprivileged run reads them all and writes none.
class ReadableFolder {
 public:
  ReadableFolder() : dir_(fs::temp_directory_path() / ("attnsim-readonly-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    binary_ = copy(ATTNSIM_BINARY, "attnsim");
    csv_ = copy(kCsv, "measurements.csv");
  }
  ~ReadableFolder() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ReadableFolder(const ReadableFolder&) = delete;
  ReadableFolder& operator=(const ReadableFolder&) = delete;
  [[nodiscard]] const fs::path& path() const { return dir_; }
  [[nodiscard]] const fs::path& csv() const { return csv_; }
  // The copied attnsim run as the unprivileged user 65534 (setpriv).
  [[nodiscard]] std::string asNobody(const std::string& arguments) const {
    return "setpriv --reuid=65534 --regid=65534 --clear-groups " + binary_.string() + " " + arguments;
  }

 private:
  fs::path copy(const fs::path& from, const std::string& name) const {
    const fs::path to = dir_ / name;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    fs::permissions(to, fs::perms::others_read | fs::perms::group_read, fs::perm_options::add);
    return to;
  }

  fs::path dir_, binary_, csv_;
};

TEST(RobustStore, ReadOnlyStoreIsReadByReportsAndRefusedByWritersWithoutAWrite) {
  const ReadableFolder folder;
  const auto probe = runShell(folder.asNobody("--version"));
  if (probe.exit_code != 0) GTEST_SKIP() << "cannot run attnsim as user 65534 here (not root?): " << probe.output;
  const fs::path db = folder.path() / "s.db";
  const std::string csv = folder.csv().string();
  ASSERT_EQ(runAttnsim("measurements import " + csv + " --db " + db.string()).exit_code, 0);
  ASSERT_EQ(runAttnsim("sweep default --db " + db.string()).exit_code, 0);
  fs::permissions(db, fs::perms::others_read | fs::perms::group_read, fs::perm_options::add);
  const std::string rows = scalar(db, "SELECT count(*) FROM measurements");
  const fs::path out = fs::temp_directory_path() / ("attnsim-readonly-out-" + std::to_string(::getpid()));
  fs::create_directories(out);
  fs::permissions(out, fs::perms::all);

  for (const std::string report : {"validation", "priorities", "matrix", "whatif --compare-engines"}) {
    const auto r =
        runShell(folder.asNobody("--json report " + report + " --db " + db.string() + " --out " + out.string()));
    EXPECT_EQ(r.exit_code, 0) << report << ": " << r.output;
  }
  const auto predicted =
      runShell(folder.asNobody("--json predict --hardware h100-sxm --model llama-3.1-8b --engine vllm "
                               "--phase decode --batch 8 --context 4096 --db " +
                               db.string()));
  EXPECT_EQ(predicted.exit_code, 0) << predicted.output;

  for (const std::string& writer : {"measurements import " + csv, std::string("sweep default")}) {
    const auto r = runShell(folder.asNobody("--json " + writer + " --db " + db.string()));
    ASSERT_EQ(r.exit_code, 2) << writer << ": " << r.output;
    const std::string message = nlohmann::json::parse(r.output).at("error").at("message");
    EXPECT_NE(message.find("read-only"), std::string::npos) << message;
  }
  EXPECT_EQ(scalar(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), rows);
  fs::remove_all(out);
}

// A writer checks that its store is writable before it reads its input: an unreadable measurement
// file does not hide a read-only store.
TEST(RobustStore, WriterRefusesAReadOnlyStoreBeforeReadingItsInput) {
  const ReadableFolder folder;
  const auto probe = runShell(folder.asNobody("--version"));
  if (probe.exit_code != 0) GTEST_SKIP() << "cannot run attnsim as user 65534 here (not root?): " << probe.output;
  const fs::path db = folder.path() / "s.db";
  ASSERT_EQ(runAttnsim("measurements import " + folder.csv().string() + " --db " + db.string()).exit_code, 0);
  fs::permissions(db, fs::perms::others_read | fs::perms::group_read, fs::perm_options::add);
  const fs::path hidden = folder.path() / "hidden.csv";
  fs::copy_file(folder.csv(), hidden);
  fs::permissions(hidden, fs::perms::owner_read | fs::perms::owner_write);  // 0600: user 65534 cannot read it
  for (const fs::path& target : {db, folder.path() / "new.db"}) {
    const auto r =
        runShell(folder.asNobody("--json measurements import " + hidden.string() + " --db " + target.string()));
    ASSERT_EQ(r.exit_code, 2) << target << ": " << r.output;
    const std::string message = nlohmann::json::parse(r.output).at("error").at("message");
    EXPECT_NE(message.find("read-only"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(folder.path() / "new.db"));
  }
}

// A reader asks for the current schema and never upgrades: an older store is named as such.
TEST(RobustStore, ReaderRefusesAStoreOfAnotherSchemaVersionWithoutChangingIt) {
  OverlayDir dir;
  const fs::path db = dir.path() / "s.db";
  ASSERT_EQ(runAttnsim("measurements import " + kCsv + " --db " + db.string()).exit_code, 0);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(h, "UPDATE meta SET value = '3' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  const auto r = runAttnsim("--json report validation --db " + db.string() + " --out " + (dir.path() / "r").string());
  ASSERT_EQ(r.exit_code, 2) << r.output;
  const std::string message = nlohmann::json::parse(r.output).at("error").at("message");
  EXPECT_NE(message.find("schema version 3"), std::string::npos) << message;
  EXPECT_EQ(scalar(db, "SELECT value FROM meta WHERE key = 'schema_version'"), "3");
}

}  // namespace
}  // namespace attnsim::test
