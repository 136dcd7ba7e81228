// attnsim capacity study and report capacity on a small study: what the study stores, the golden
// report (numbers within a rounding step), determinism, errors, and headless Chromium drawing it.
// ATTNSIM_UPDATE_GOLDEN=1 rewrites tests/data/reports/capacity.md.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "TestSupport.hpp"
#include "study/Store.hpp"

namespace attnsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readFile;
using test::runAttnsim;

const fs::path kCapacityReportData = fs::path(ATTNSIM_TEST_DATA);

// This suite's scratch folder (a name of its own: the tests build as unity batches).
fs::path capacityReportScratch() { return test::suiteScratchDir("capreport"); }

const fs::path& smallStudy() {
  static const fs::path db = [] {
    fs::path path = capacityReportScratch() / "small.db";
    const auto r = runAttnsim("capacity study " + (kCapacityReportData / "capacity/small.yaml").string() + " --db " +
                              path.string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return path;
  }();
  return db;
}

test::CommandResult report(const fs::path& out, const std::string& extra = "") {
  return runAttnsim("report capacity --db " + smallStudy().string() + " --out " + out.string() + " " + extra);
}

// The store's path, the hashes and the program version differ between machines and catalogs.
std::string normalized(std::string text, const json& provenance) {
  auto replace = [&text](const std::string& from, const std::string& to) {
    for (auto at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  replace(provenance.at("db").get<std::string>(), "STUDY.db");
  replace(capacityReportScratch().string(), "SCRATCH");
  replace(provenance.at("catalog_hash").get<std::string>(), "CATALOG_HASH");
  replace("attnsim " + provenance.at("report_version").get<std::string>(), "attnsim VERSION");
  replace("version " + provenance.at("program_version").get<std::string>(), "version VERSION");
  return text;
}

// The same text but for numbers, which may differ by a rounding step or a tenth of a percent.
void expectSameText(const std::string& got, const std::string& want) {
  static const std::regex number(R"(-?\d+(\.\d+)?)");
  auto split = [](const std::string& s, std::string& words, std::vector<double>& numbers) {
    std::size_t last = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), number); it != std::sregex_iterator(); ++it) {
      words += s.substr(last, static_cast<std::size_t>(it->position()) - last) + "#";
      numbers.push_back(std::stod(it->str()));
      last = static_cast<std::size_t>(it->position() + it->length());
    }
    words += s.substr(last);
  };
  std::string got_words, want_words;
  std::vector<double> got_numbers, want_numbers;
  split(got, got_words, got_numbers);
  split(want, want_words, want_numbers);
  ASSERT_EQ(got_words, want_words) << "the text around the numbers differs";
  ASSERT_EQ(got_numbers.size(), want_numbers.size());
  for (std::size_t i = 0; i < got_numbers.size(); ++i) {
    EXPECT_NEAR(got_numbers[i], want_numbers[i], 0.1 + 1e-3 * std::abs(want_numbers[i])) << "number " << i;
  }
}

TEST(CapacityStudy, StoresEveryConfigurationWithItsSearch) {
  const auto rows = [](const std::string& sql) {
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open(smallStudy().string().c_str(), &h), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr);
    double v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_double(s, 0) : -1;
    sqlite3_finalize(s);
    sqlite3_close(h);
    return v;
  };
  EXPECT_EQ(rows("SELECT COUNT(*) FROM capacity_studies"), 1);
  EXPECT_EQ(rows("SELECT COUNT(*) FROM capacity_configs WHERE study = 1"), 3);
  EXPECT_EQ(rows("SELECT COUNT(*) FROM capacity_configs WHERE max_rate_rps > 0"), 3);
  EXPECT_EQ(rows("SELECT SUM(simulations) FROM capacity_configs"), rows("SELECT COUNT(*) FROM serve_runs"));
  EXPECT_EQ(rows("SELECT COUNT(*) FROM serve_runs WHERE at_max = 1"), 3);
  EXPECT_EQ(rows("SELECT COUNT(*) FROM serve_requests"), 3 * 200);
  // GPUs for 50 req/s: whole replicas of one GPU each.
  EXPECT_EQ(rows("SELECT COUNT(*) FROM capacity_configs WHERE gpus_for_target != "
                 "CAST(ceil(50.0 / max_rate_rps - 1e-9) AS INTEGER)"),
            0);
}

TEST(CapacityReport, GoldenMarkdownAndJson) {
  const fs::path out = capacityReportScratch() / "golden";
  const auto r = report(out, "--json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  ASSERT_EQ(j["configs"].size(), 3U);
  for (const auto& c : j["configs"]) {
    EXPECT_GT(c["max_rate_rps"].get<double>(), 0);
    EXPECT_FALSE(c["runs"].empty());
    // The step model's band carried through: its slow end serves less, its fast end more.
    EXPECT_LT(c["max_rate_band_rps"][0].get<double>(), c["max_rate_rps"].get<double>()) << c["max_rate_band_rps"];
    EXPECT_GT(c["max_rate_band_rps"][1].get<double>(), c["max_rate_rps"].get<double>()) << c["max_rate_band_rps"];
  }
  const std::string got = normalized(readFile(out / "capacity.md"), j["provenance"]);
  const fs::path golden = kCapacityReportData / "reports/capacity.md";
  if (std::getenv("ATTNSIM_UPDATE_GOLDEN") != nullptr) std::ofstream(golden) << got;
  expectSameText(got, readFile(golden));
  for (const char* section : {"## Highest request rate within the SLO", "## GPUs for 50 requests/s",
                              "## Memory split per GPU and KV capacity", "### Requests that fit the KV pool at once",
                              "## Latency against the offered rate: the knee", "## Assumptions"}) {
    EXPECT_NE(got.find(section), std::string::npos) << section;
  }
}

TEST(CapacityReport, SameStoreSameReport) {
  const fs::path out = capacityReportScratch() / "twice";
  ASSERT_EQ(report(out).exit_code, 0);
  const std::string html = readFile(out / "capacity.html"), json_text = readFile(out / "capacity.json");
  ASSERT_EQ(report(out).exit_code, 0);
  EXPECT_EQ(readFile(out / "capacity.html"), html);
  EXPECT_EQ(readFile(out / "capacity.json"), json_text);
}

TEST(CapacityReport, BadRequestsExitTwo) {
  const auto missing = runAttnsim("report capacity --db " + (capacityReportScratch() / "none.db").string() + " --out " +
                                  (capacityReportScratch() / "x").string());
  EXPECT_EQ(missing.exit_code, 2);
  const fs::path empty = capacityReportScratch() / "empty.db";
  { Store s(empty.string()); }
  const auto none =
      runAttnsim("report capacity --db " + empty.string() + " --out " + (capacityReportScratch() / "x").string());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("no serving results"), std::string::npos) << none.output;
  const auto study = report(capacityReportScratch() / "x", "--study nope");
  EXPECT_EQ(study.exit_code, 2);
  EXPECT_NE(study.output.find("capacity-small"), std::string::npos) << study.output;
}

TEST(CapacityReport, LoneServeSimRunsAreReportedWithTheirTimeline) {
  const fs::path db = capacityReportScratch() / "lone.db", out = capacityReportScratch() / "lone";
  ASSERT_EQ(runAttnsim("serve-sim --hardware h100-sxm --model llama-3.1-8b --engine sglang --rate 3 --requests 150 "
                       "--db " +
                       db.string())
                .exit_code,
            0);
  const auto r = runAttnsim("report capacity --db " + db.string() + " --out " + out.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = readFile(out / "capacity.md");
  EXPECT_NE(md.find("## serve-sim runs"), std::string::npos);
  EXPECT_NE(md.find("capacity-run-1.svg"), std::string::npos);
  EXPECT_EQ(md.find("## Highest request rate"), std::string::npos);  // nothing was searched
  EXPECT_LT(md.find("## serve-sim runs"), md.find("capacity-run-1.svg"));
  const json j = json::parse(r.output);
  ASSERT_EQ(j["configs"].size(), 1U);
  EXPECT_EQ(j["configs"][0]["runs"][0]["kind"], "serve-sim");
  EXPECT_TRUE(fs::exists(out / "capacity-run-1.svg"));
}

std::string capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buffer{};
  for (std::size_t n = 0; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A configuration no rate serves within the SLO (SGLang's 3,706-token pool for Llama-3.1-70B on two H100s at
// mem_fraction_static 0.844, the spec's engine_options) is
// said as such, with why, in the study's table and JSON and in the report, and never picked for the target.
TEST(CapacityReport, AConfigurationNoRateServesIsSaidWhyAndNeverPicked) {
  const fs::path db = capacityReportScratch() / "unmet.db", out = capacityReportScratch() / "unmet";
  const std::string spec = (kCapacityReportData / "capacity/unmet.yaml").string();
  const auto text = runAttnsim("capacity study " + spec + " --db " + db.string());
  ASSERT_EQ(text.exit_code, 0) << text.output;
  // The engine's own pick and the same backend forced are told apart; the unmet rows show no rate.
  EXPECT_NE(text.output.find("sglang:fa3 (own)                   2        none  the SLO is not met at any rate"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("sglang:fa3                         2        none  the SLO is not met"), std::string::npos)
      << text.output;
  EXPECT_EQ(text.output.find(" 0.00 "), std::string::npos) << text.output;
  const auto study =
      runAttnsim("--json capacity study " + spec + " --db " + (capacityReportScratch() / "unmet2.db").string());
  ASSERT_EQ(study.exit_code, 0) << study.output;
  int unmet = 0;
  const json rows = json::parse(study.output);  // kept alive while its rows are read
  for (const auto& c : rows.at("configs")) {
    if (!c.contains("slo_unmet")) continue;
    ++unmet;
    EXPECT_EQ(c["engine"], "sglang") << c;
    EXPECT_NE(c["slo_unmet"].get<std::string>().find("holds 1 request(s) of 2256 tokens"), std::string::npos) << c;
  }
  EXPECT_EQ(unmet, 2);

  const auto r = runAttnsim("report capacity --db " + db.string() + " --out " + out.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json report = json::parse(r.output);
  for (const auto& c : report.at("configs")) {
    const bool sglang = c["engine"] == "sglang";
    EXPECT_EQ(c["slo_unmet"].is_string(), sglang) << c;
    EXPECT_EQ(c["gpus_for_target"].is_null(), sglang) << c;
  }
  const std::string md = readFile(out / "capacity.md");
  EXPECT_NE(
      md.find("| llama-3.1-70b | h100-sxm | 2 | sglang:fa3 (own) | none | - | - | the SLO is not met at any rate"),
      std::string::npos)
      << md;
  // The vLLM configuration meets the SLO, so the report sizes it for the target (how many GPUs follows its KV pool).
  EXPECT_TRUE(std::regex_search(
      md, std::regex(R"(\| llama-3\.1-70b \| h100-sxm \| [0-9]+ \| vllm:FLASH_ATTN \(own\) at TP 2 \|)")))
      << md;
}

// capacity search --db keeps why no rate met the SLO, as a study does: the report says it in place of a 0.
TEST(CapacityReport, ASearchNoRateServesKeepsItsReasonInTheStore) {
  const fs::path db = capacityReportScratch() / "unmet-search.db", out = capacityReportScratch() / "unmet-search";
  ASSERT_EQ(runAttnsim("capacity search --hardware h100-sxm --model llama-3.1-70b --engine sglang --tp 2 "
                       "--prompt-len 2000 --output-len 256 --requests 50 --option mem_fraction_static=0.844 --db " +
                       db.string())
                .exit_code,
            0);
  const auto r = runAttnsim("report capacity --db " + db.string() + " --out " + out.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json c = json::parse(r.output).at("configs").at(0);
  EXPECT_NE(c["slo_unmet"].get<std::string>().find("even at 0.05 req/s, p99 TTFT"), std::string::npos) << c;
  EXPECT_NE(readFile(out / "capacity.md").find("| sglang:fa3 (own) | none | - | - | the SLO is not met"),
            std::string::npos);
}

// A serve-sim run stored beside a rate search is one of the serve-sim runs, not a rate row without a rate.
TEST(CapacityReport, AServeSimRunBesideASearchIsNoRowOfTheRateTable) {
  const fs::path db = capacityReportScratch() / "beside.db", out = capacityReportScratch() / "beside";
  const std::string scenario =
      "--hardware h100-sxm --model llama-3.1-8b --engine vllm --requests 60 --db " + db.string();
  ASSERT_EQ(runAttnsim("capacity search " + scenario).exit_code, 0);
  ASSERT_EQ(runAttnsim("serve-sim --rate 5 " + scenario).exit_code, 0);
  const auto r = runAttnsim("report capacity --db " + db.string() + " --out " + out.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(json::parse(r.output).at("configs").size(), 2U);
  const std::string md = readFile(out / "capacity.md");
  const auto table = md.find("| model | hardware | TP | engine:backend | max req/s");
  ASSERT_NE(table, std::string::npos) << md;
  const std::string rates = md.substr(table, md.find("\n\n", table) - table);
  EXPECT_EQ(count(rates, "\n| llama-3.1-8b"), 1U) << rates;
  EXPECT_EQ(rates.find("| - | - |"), std::string::npos) << rates;
  EXPECT_NE(md.find("## serve-sim runs"), std::string::npos);
}

TEST(CapacityReport, ChromiumDrawsThePlots) {
  if (std::system("command -v chromium > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium): render test skipped";
  }
  const fs::path out = capacityReportScratch() / "render";
  ASSERT_EQ(report(out).exit_code, 0);
  const std::string dom = capture(
      "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir=" +
      (capacityReportScratch() / "chromium-profile").string() + " --dump-dom file://" +
      (out / "capacity.html").string() + " 2>/dev/null");
  // The rate heat map, the memory bars and the two knee charts.
  EXPECT_EQ(count(dom, "<svg"), 4U);
  EXPECT_EQ(count(dom, "class=\"cell\""), 3U);
  EXPECT_EQ(count(dom, "class=\"bar\""), 2U * 3);
  EXPECT_EQ(count(dom, "class=\"series\""), 2U * 2);
  EXPECT_GE(count(dom, "<circle"), 20U);
}

}  // namespace
}  // namespace attnsim
