// Serving results in the study store (serve-sim --db, capacity search --db, capacity study) and
// attnsim report capacity: rows against the command's own JSON, the search's probes, the spec's
// errors, the golden report (numbers with tolerances), and the HTML drawn by headless Chromium.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "TestSupport.hpp"
#include "simulator/Capacity.hpp"
#include "study/CapacityQueries.hpp"
#include "study/CapacitySpec.hpp"

namespace attnsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::readFile;
using test::runAttnsim;

const fs::path kCapacityStoreData = fs::path(ATTNSIM_TEST_DATA);

// This suite's scratch folder (a name of its own: the tests build as unity batches).
fs::path capacityStoreScratch() { return test::suiteScratchDir("capacity"); }

// Rows of one query, each a list of column texts.
std::vector<std::vector<std::string>> query(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(db.string().c_str(), &h), SQLITE_OK);
  std::vector<std::vector<std::string>> rows;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  while (s && sqlite3_step(s) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const auto* t = sqlite3_column_text(s, i);
      row.emplace_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return rows;
}

double number(const fs::path& db, const std::string& sql) { return std::stod(query(db, sql).at(0).at(0)); }

TEST(CapacityStore, ServeSimRunIsStoredAsItsJsonSays) {
  const fs::path db = capacityStoreScratch() / "serve.db";
  const std::string cmd =
      "serve-sim --hardware h100-sxm --model llama-3.1-8b --engine vllm --requests 300 "
      "--lengths exponential --db " +
      db.string();
  const auto out = runAttnsim(cmd + " --rate 4 --json");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const json j = json::parse(out.output);
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM serve_requests"), 300);
  EXPECT_LE(number(db, "SELECT COUNT(*) FROM serve_timeline"), 200);
  EXPECT_GT(number(db, "SELECT COUNT(*) FROM serve_timeline"), 50);
  EXPECT_NEAR(number(db, "SELECT ttft_p99_ms FROM serve_runs"), j["ttft_ms"]["p99"].get<double>(), 1e-9);
  EXPECT_NEAR(number(db, "SELECT tpot_p50_ms FROM serve_runs"), j["tpot_ms"]["p50"].get<double>(), 1e-9);
  EXPECT_NEAR(number(db, "SELECT goodput_rps FROM serve_runs"), j["goodput_rps"].get<double>(), 1e-9);
  EXPECT_EQ(number(db, "SELECT kv_tokens FROM capacity_configs"), j["kv_tokens"].get<double>());
  // Each request row is the JSON's request.
  const auto rows = query(db, "SELECT ttft_ms, output_tokens FROM serve_requests WHERE idx = 17");
  EXPECT_NEAR(std::stod(rows.at(0).at(0)), j["requests"][17]["ttft_ms"].get<double>(), 1e-9);
  EXPECT_EQ(std::stoll(rows.at(0).at(1)), j["requests"][17]["output_tokens"].get<std::int64_t>());
  // A second run appends; nothing of the first changes.
  ASSERT_EQ(runAttnsim(cmd + " --rate 8").exit_code, 0);
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM serve_runs"), 2);
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM serve_requests"), 600);
}

TEST(CapacityStore, SearchStoresEveryProbeAndTheRunAtTheHighestRate) {
  const fs::path db = capacityStoreScratch() / "search.db";
  const auto out = runAttnsim(
      "capacity search --hardware h100-sxm --model llama-3.1-8b --engine vllm --requests 200 --target-rate 30 "
      "--json --db " +
      db.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const json j = json::parse(out.output).at(0);
  const double max_rate = j["max_rate_rps"].get<double>();
  EXPECT_NEAR(number(db, "SELECT max_rate_rps FROM capacity_configs"), max_rate, 1e-12);
  EXPECT_EQ(number(db, "SELECT gpus_for_target FROM capacity_configs"), j["gpus_for_target"].get<double>());
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM serve_runs"), j["simulations"].get<double>());
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM serve_runs WHERE at_max = 1"), 1);
  EXPECT_NEAR(number(db, "SELECT rate FROM serve_runs WHERE at_max = 1"), max_rate, 1e-12);
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM serve_requests"), 200);  // only the run at the highest rate
  // Every rate that met the SLO is at most the maximum; every one above it failed.
  // (The bound is written with every digit: std::to_string keeps six decimals and may round below the maximum.)
  EXPECT_EQ(number(db, fmt::format("SELECT COUNT(*) FROM serve_runs WHERE kind = 'search' AND meets_slo = 1 AND "
                                   "rate > {:.17g}",
                                   max_rate)),
            0);
  // The band's ends, searched on the same arrivals and stored as their own probes, bracket the rate: with
  // every step at its slow end no rate above the maximum meets the SLO, at its fast end the maximum does.
  const double slow = j["max_rate_band_rps"][0].get<double>(), fast = j["max_rate_band_rps"][1].get<double>();
  EXPECT_LT(slow, max_rate);
  EXPECT_GT(fast, max_rate);
  EXPECT_NEAR(number(db, "SELECT MAX(rate) FROM serve_runs WHERE kind = 'search-slow' AND meets_slo = 1"), slow, 1e-9);
  EXPECT_NEAR(number(db, "SELECT MAX(rate) FROM serve_runs WHERE kind = 'search-fast' AND meets_slo = 1"), fast, 1e-9);
  EXPECT_EQ(number(db, fmt::format("SELECT COUNT(*) FROM serve_runs WHERE kind = 'search-slow' AND meets_slo = 1 AND "
                                   "rate > {:.17g}",
                                   max_rate)),
            0);
  EXPECT_GT(number(db, "SELECT COUNT(*) FROM serve_runs WHERE meets_slo = 0"), 0);
  EXPECT_NEAR(number(db, "SELECT p99 FROM (SELECT tpot_p99_ms AS p99 FROM serve_runs WHERE at_max = 1)"),
              j["p99_tpot_ms"].get<double>(), 1e-9);
}

TEST(CapacityStore, TablesAreAddedToAStoreThatLacksThem) {
  const fs::path db = capacityStoreScratch() / "old.db";
  { Store s(db.string()); }
  query(db, "DROP TABLE serve_runs");
  { Store s(db.string()); }
  EXPECT_EQ(number(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'serve_runs'"), 1);
  EXPECT_EQ(query(db, "SELECT value FROM meta WHERE key = 'schema_version'").at(0).at(0),
            std::to_string(kStoreSchemaVersion));
}

// Each run with its configuration and the sum of its requests' TTFT and timeline points: what the
// merge must carry over with the ids remapped.
std::vector<std::vector<std::string>> runSignatures(const fs::path& db) {
  return query(db,
               "SELECT c.engine, c.kv_tokens, u.rate, u.requests, u.at_max, "
               "(SELECT printf('%.6f', coalesce(sum(ttft_ms), 0)) FROM serve_requests r WHERE r.run = u.id), "
               "(SELECT count(*) FROM serve_timeline t WHERE t.run = u.id), "
               "(SELECT name FROM capacity_studies s WHERE s.id = c.study) "
               "FROM serve_runs u JOIN capacity_configs c ON c.id = u.config ORDER BY 1, 2, 3, 4, 5, 6, 7, 8");
}

TEST(CapacityStore, MergeCopiesTheCapacityTablesWithTheirIdsRemappedOnce) {
  const fs::path dir = capacityStoreScratch();
  const fs::path a = dir / "merge-a.db", b = dir / "merge-b.db", merged = dir / "merge-out.db";
  for (const auto& p : {a, b, merged}) fs::remove(p);
  ASSERT_EQ(runAttnsim("capacity search --hardware h100-sxm --model llama-3.1-8b --engine vllm --requests 100 --db " +
                       a.string())
                .exit_code,
            0);
  ASSERT_EQ(runAttnsim("serve-sim --hardware h100-sxm --model llama-3.1-8b --engine sglang --requests 150 --rate 3 "
                       "--db " +
                       b.string())
                .exit_code,
            0);
  // Both inputs number their rows from 1: the merge has to renumber one of them.
  EXPECT_EQ(number(a, "SELECT min(id) FROM capacity_configs"), 1);
  EXPECT_EQ(number(b, "SELECT min(id) FROM capacity_configs"), 1);
  auto expected = runSignatures(a);
  for (auto& row : runSignatures(b)) expected.push_back(row);
  std::sort(expected.begin(), expected.end());
  const auto r = runAttnsim("store merge " + merged.string() + " " + a.string() + " " + b.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto got = runSignatures(merged);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
  const auto count = [&](const fs::path& db, const char* table) {
    return number(db, std::string("SELECT count(*) FROM ") + table);
  };
  for (const char* t : {"capacity_studies", "capacity_configs", "serve_runs", "serve_requests", "serve_timeline"}) {
    EXPECT_EQ(count(merged, t), count(a, t) + count(b, t)) << t;
  }
  EXPECT_GT(count(merged, "serve_timeline"), 0);
  // Merging the inputs again adds nothing.
  ASSERT_EQ(runAttnsim("store merge " + merged.string() + " " + b.string() + " " + a.string()).exit_code, 0);
  for (const char* t : {"capacity_studies", "capacity_configs", "serve_runs", "serve_requests", "serve_timeline"}) {
    EXPECT_EQ(count(merged, t), count(a, t) + count(b, t)) << t;
  }
  // A store merged into a copy of itself is unchanged, and a new run in an input is added alone.
  ASSERT_EQ(runAttnsim("serve-sim --hardware h100-sxm --model llama-3.1-8b --engine sglang --requests 150 --rate 5 "
                       "--db " +
                       b.string())
                .exit_code,
            0);
  ASSERT_EQ(runAttnsim("store merge " + merged.string() + " " + b.string()).exit_code, 0);
  EXPECT_EQ(count(merged, "serve_runs"), count(a, "serve_runs") + count(b, "serve_runs"));
  EXPECT_EQ(count(merged, "capacity_configs"), count(a, "capacity_configs") + count(b, "capacity_configs") - 1)
      << "the new run's configuration equals the one already merged";
  EXPECT_EQ(count(merged, "serve_requests"), count(a, "serve_requests") + count(b, "serve_requests"));
}

TEST(CapacityStore, RequestsThatFitAreThePoolOverOneRequestsPages) {
  // Llama-3.1-8B bf16 on one H100 with vLLM: 131,072 B of KV per token, pages of 16 tokens.
  const CapacityReport c = capacityOf(test::defaultCatalog(), test::engineScenario("vllm", "h100-sxm", "llama-3.1-8b"));
  ASSERT_DOUBLE_EQ(c.split.kv.full_bytes, 131072);
  const double pool = c.split.kv_pool_mib * 1024 * 1024;
  EXPECT_EQ(requestsThatFit(c.split, 4096), static_cast<std::int64_t>(std::floor(pool / (4096.0 * 131072))));
  EXPECT_EQ(requestsThatFit(c.split, 4097), static_cast<std::int64_t>(std::floor(pool / (4112.0 * 131072))));
}

TEST(CapacitySpec, BuiltInSpecLoadsAndIsNotASweep) {
  const auto names = builtinCapacitySpecNames();
  ASSERT_NE(std::find(names.begin(), names.end(), "capacity-70b"), names.end());
  const CapacitySpec s = loadCapacitySpec("capacity-70b", test::defaultCatalog());
  EXPECT_EQ(s.hardware, (std::vector<std::string>{"h100-sxm", "h200", "b200", "mi300x"}));
  EXPECT_EQ(s.tp, (std::vector<std::int64_t>{4, 8}));
  EXPECT_DOUBLE_EQ(s.slo.ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(s.slo.tpot_s, 0.05);
  EXPECT_EQ(capacityConfigs(s).size(), 4U * 2 * 2 * 9);
  const auto sweeps = builtinSweepNames();
  EXPECT_EQ(std::find(sweeps.begin(), sweeps.end(), "capacity-70b"), sweeps.end());
}

TEST(CapacitySpec, BadSpecsNameTheFileLineAndKey) {
  const std::string good = readFile(kCapacityStoreData / "capacity/small.yaml");
  auto error = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    const fs::path p = capacityStoreScratch() / "bad.yaml";
    std::ofstream(p) << text;
    return runAttnsim("capacity study " + p.string() + " --db " + (capacityStoreScratch() / "bad.db").string());
  };
  const auto backend = error("vllm:FLASHINFER", "vllm:FLASHINFR");
  EXPECT_EQ(backend.exit_code, 2);
  EXPECT_NE(backend.output.find("bad.yaml:7"), std::string::npos) << backend.output;
  EXPECT_NE(backend.output.find("did you mean"), std::string::npos) << backend.output;
  const auto slo = error("p99_tpot_ms: 50", "p99_tpot: 50");
  EXPECT_EQ(slo.exit_code, 2);
  EXPECT_NE(slo.output.find("p99_tpot_ms"), std::string::npos) << slo.output;
  const auto lengths = error("lengths: exponential", "lengths: zipf");
  EXPECT_EQ(lengths.exit_code, 2);
  EXPECT_NE(lengths.output.find("uniform"), std::string::npos) << lengths.output;
  const auto options = error("tp: [1]", "tp: [1]\nengine_options: {trtllm: {max_batch_size: 8}}");
  EXPECT_EQ(options.exit_code, 2);
  EXPECT_NE(options.output.find("bad.yaml:9"), std::string::npos) << options.output;
  EXPECT_NE(options.output.find("not one of the spec's engines"), std::string::npos) << options.output;
  EXPECT_EQ(runAttnsim("capacity study no-such-spec --db " + (capacityStoreScratch() / "bad.db").string()).exit_code,
            2);
}

// engine_options reach the configurations of their engine only, as --option would give them.
TEST(CapacitySpec, EngineOptionsReachTheirEnginesConfigurations) {
  std::string text = readFile(kCapacityStoreData / "capacity/small.yaml");
  text.replace(text.find("tp: [1]"), 7, "tp: [1]\nengine_options: {sglang: {mem_fraction_static: 0.8}}");
  const CapacitySpec spec = parseCapacitySpec(text, "small.yaml", test::defaultCatalog());
  int sglang = 0;
  for (const CapacityConfig& c : capacityConfigs(spec)) {
    const auto& options = c.scenario.engine_options;
    if (c.scenario.engine == "sglang") {
      ++sglang;
      ASSERT_EQ(options.count("mem_fraction_static"), 1U);
      EXPECT_EQ(options.at("mem_fraction_static"), "0.8");
    } else {
      EXPECT_TRUE(options.empty());
    }
  }
  EXPECT_EQ(sglang, 1);
}

}  // namespace
}  // namespace attnsim
