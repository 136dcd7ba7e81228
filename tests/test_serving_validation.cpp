// report serving: published serving benchmarks beside serve-sim's prediction of each (issue 28).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "TestSupport.hpp"
#include "core/Error.hpp"
#include "study/ServingValidation.hpp"

namespace attnsim {
namespace {

using test::runAttnsim;

std::string fixture(const std::string& name) { return std::string(ATTNSIM_TEST_DATA) + "/serving/" + name; }

nlohmann::json servingReport(const std::string& published) {
  const auto out = test::suiteScratchDir("ServingValidation") / "report";
  const auto r = runAttnsim("--json report serving --published " + published + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

TEST(ServingValidation, EachRunIsPredictedByItsOwnServeSimCommandAndComparedMetricByMetric) {
  const nlohmann::json j = servingReport(fixture("good"));
  ASSERT_EQ(j["runs"].size(), 1U);
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["id"], "fixture-vllm-llama8b-h100-c4");
  EXPECT_EQ(run["backend"], "vllm:FLASH_ATTN");
  // The command the report prints answers the same numbers when run on its own.
  const std::string command = run["command"];
  ASSERT_EQ(command.rfind("attnsim serve-sim ", 0), 0U) << command;
  const auto alone = runAttnsim("--json " + command.substr(std::string("attnsim ").size()));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const auto sim = nlohmann::json::parse(alone.output);
  EXPECT_DOUBLE_EQ(run["predicted"]["ttft_mean_ms"].get<double>(), sim["ttft_ms"]["mean"].get<double>());
  EXPECT_DOUBLE_EQ(run["predicted"]["output_throughput"].get<double>(), sim["output_tokens_per_s"].get<double>());
  // Error = (predicted - published) / published, for every metric the source states.
  for (const char* metric : {"ttft_mean_ms", "tpot_mean_ms", "itl_mean_ms", "output_throughput", "e2e_mean_ms"}) {
    const double pub = run["published"][metric], pred = run["predicted"][metric];
    EXPECT_NEAR(run["error"][metric].get<double>(), (pred - pub) / pub, 1e-12) << metric;
  }
  // The summary of one run is that run's |error|.
  const auto& all = j["groups"][0];
  EXPECT_EQ(all["group"], "all");
  EXPECT_NEAR(all["metrics"]["tpot_mean_ms"]["mape"].get<double>(),
              std::abs(run["error"]["tpot_mean_ms"].get<double>()), 1e-12);
}

TEST(ServingValidation, ARunIsBeyondATargetExactlyWhereItsErrorExceedsItAndTheReportSaysWhy) {
  const nlohmann::json j = servingReport(fixture("good"));
  const auto& run = j["runs"][0];
  std::vector<std::string> expected;
  for (const auto& t : kServingTargets) {
    if (run["error"].contains(t.column) && std::abs(run["error"][t.column].get<double>()) > t.max_abs_error) {
      expected.emplace_back(t.column);
    }
  }
  EXPECT_EQ(run["beyond_target"].get<std::vector<std::string>>(), expected);
  // The targets table counts the run once per metric it publishes.
  for (const auto& t : j["targets"]) {
    const std::string metric = t["metric"];
    EXPECT_EQ(t["runs"].get<int>(), run["error"].contains(metric) ? 1 : 0) << metric;
    const bool missed = std::find(expected.begin(), expected.end(), metric) != expected.end();
    EXPECT_EQ(t["within"].get<int>(), run["error"].contains(metric) && !missed ? 1 : 0) << metric;
  }
  // The markdown lists a run beyond a target with the cause its setup names.
  const auto md = test::readFile(test::suiteScratchDir("ServingValidation") / "report" / "serving-validation.md");
  const bool listed = md.find("- **fixture-vllm-llama8b-h100-c4**:") != std::string::npos;
  EXPECT_EQ(listed, !expected.empty());
  if (listed) {
    EXPECT_NE(md.find("Why: API server overhead"), std::string::npos);
  }
}

// A cause several setups name is stated once, labelled; adjacent clauses the same runs name are one cause.
TEST(ServingValidation, ACauseSeveralRunsNameIsStatedOnceAndTheRunsNameItByLabel) {
  const nlohmann::json j = servingReport(fixture("shared"));
  ASSERT_EQ(j["runs"].size(), 3U);
  EXPECT_EQ(j["runs"][0]["not_modelled"],
            "card speed: the page (x; y) states one card; no form factor fits; the run's "
            "own stall");  // the JSON keeps each run's own text
  const auto md = test::readFile(test::suiteScratchDir("ServingValidation") / "report" / "serving-validation.md");
  EXPECT_NE(md.find("- **C1** (2 runs): card speed: the page (x; y) states one card\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- **C2** (3 runs): no form factor fits\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("C3"), std::string::npos) << md;  // the run's own stall is named by one run only
  auto count = [&md](const std::string& s) {
    std::size_t n = 0;
    for (auto at = md.find(s); at != std::string::npos; at = md.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("states one card"), 1U);
  EXPECT_EQ(count("| C1 (card speed); C2 (no form factor fits); the run's own stall |"), 1U) << md;
  EXPECT_EQ(count("| C1 (card speed); C2 (no form factor fits) |"), 1U) << md;
  EXPECT_EQ(count("| C2 (no form factor fits) |"), 1U) << md;
}

TEST(ServingValidation, ARunServeSimCannotExpressAndACompleteRunWithoutSetupAreListedWithWhy) {
  const nlohmann::json j = servingReport(fixture("good"));
  std::map<std::string, std::string> why;
  for (const auto& n : j["not_run"]) why[n["id"]] = n["why"];
  EXPECT_EQ(why["fixture-sglang-unknown-gpu"], "TPU v5 has no profile");
  EXPECT_EQ(why["fixture-vllm-no-setup"], "no setup");
  EXPECT_EQ(why.count("fixture-incomplete"), 0U) << "an incomplete run is not part of the check";
}

TEST(ServingValidation, ABadFlagInASetupNamesTheFileLineAndRun) {
  const auto r = runAttnsim("report serving --published " + fixture("bad_flag") + " --out " +
                            (test::suiteScratchDir("ServingValidation") / "bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("setups.csv:2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fixture-vllm-llama8b-h100-c4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--max-concurency"), std::string::npos) << r.output;
}

TEST(ServingValidation, ASetupForNoPublishedRunIsAnErrorWithTheNearestId) {
  const auto r = runAttnsim("report serving --published " + fixture("unknown_id") + " --out " +
                            (test::suiteScratchDir("ServingValidation") / "unknown").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("did you mean 'fixture-vllm-llama8b-h100-c4'"), std::string::npos) << r.output;
}

TEST(ServingValidation, ServingReportReadsPublishedNotDb) {
  const auto r = runAttnsim("report serving --db x.db --out /tmp/never");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--published"), std::string::npos) << r.output;
}

TEST(ServingValidation, AReadingReplacesTheSameFlagsValueAndAppendsAFlagTheSetupLacks) {
  const std::vector<std::string> flags{"--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--ignore-eos"};
  EXPECT_EQ(flagsUnderReading(flags, {"--hardware", "h100-pcie"}),
            (std::vector<std::string>{"--hardware", "h100-pcie", "--model", "llama-3.1-8b", "--ignore-eos"}));
  EXPECT_EQ(
      flagsUnderReading(flags, {"--tp", "2", "--hardware", "a100-sxm-80g"}),
      (std::vector<std::string>{"--hardware", "a100-sxm-80g", "--model", "llama-3.1-8b", "--ignore-eos", "--tp", "2"}));
  EXPECT_EQ(flagsUnderReading(flags, {}), flags);
  EXPECT_THROW((void)flagsUnderReading(flags, {"--hardware"}), InputError);
  EXPECT_THROW((void)flagsUnderReading(flags, {"h100-pcie"}), InputError);
  EXPECT_THROW((void)flagsUnderReading(flags, {"--hardware", "--tp"}), InputError);
}

// A setup the source leaves ambiguous carries other readings: the report predicts the run under each
// (the same numbers as serve-sim run with the reading's command), beside the stated setup.
TEST(ServingValidation, EachOtherReadingIsPredictedByItsOwnCommandBesideTheStatedSetup) {
  const auto out = test::suiteScratchDir("ServingValidation") / "readings";
  const auto r = runAttnsim("--json report serving --published " + fixture("readings") + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["runs"].size(), 1U);
  const auto& run = j["runs"][0];
  ASSERT_EQ(run["other_readings"].size(), 2U);
  EXPECT_EQ(run["other_readings"][0]["reading"], "--hardware h100-pcie");
  EXPECT_EQ(run["other_readings"][1]["reading"], "--hardware a100-sxm-80g --max-concurrency 8");
  const std::string stated = run["command"];
  EXPECT_NE(stated.find("--hardware h100-sxm"), std::string::npos) << stated;
  for (const auto& reading : run["other_readings"]) {
    const std::string command = reading["command"];
    EXPECT_EQ(command.find("h100-sxm"), std::string::npos) << command;
    const auto alone = runAttnsim("--json " + command.substr(std::string("attnsim ").size()));
    ASSERT_EQ(alone.exit_code, 0) << alone.output;
    const auto sim = nlohmann::json::parse(alone.output);
    EXPECT_DOUBLE_EQ(reading["predicted"]["output_throughput"].get<double>(), sim["output_tokens_per_s"].get<double>());
    const double pub = run["published"]["tpot_mean_ms"], pred = reading["predicted"]["tpot_mean_ms"];
    EXPECT_NEAR(reading["error"]["tpot_mean_ms"].get<double>(), (pred - pub) / pub, 1e-12);
  }
  EXPECT_EQ(run["other_readings"][1]["command"].get<std::string>().find("--max-concurrency 4"), std::string::npos);
  // A slower card predicts a slower decode: the reading changes the prediction, not just the command.
  EXPECT_GT(run["other_readings"][0]["predicted"]["tpot_mean_ms"].get<double>(),
            run["predicted"]["tpot_mean_ms"].get<double>());
  // The summaries stay those of the stated setup; the markdown tables the runs read two ways.
  EXPECT_NEAR(j["groups"][0]["metrics"]["tpot_mean_ms"]["mape"].get<double>(),
              std::abs(run["error"]["tpot_mean_ms"].get<double>()), 1e-12);
  const auto md = test::readFile(out / "serving-validation.md");
  EXPECT_NE(md.find("## Runs whose own figures contradict their stated setup"), std::string::npos);
  EXPECT_NE(md.find("| `--hardware h100-pcie` | 1 |"), std::string::npos);
}

TEST(ServingValidation, AReadingThatIsNotFlagsAndValuesNamesTheFileLineAndColumn) {
  const auto r = runAttnsim("report serving --published " + fixture("bad_reading") + " --out " +
                            (test::suiteScratchDir("ServingValidation") / "bad_reading").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("setups.csv:2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("other_readings"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fixture-vllm-llama8b-h100-c4"), std::string::npos) << r.output;
}

// The shipped set (measurements/data/serving): every complete run has a setup, at least 30 of them
// run, and each runs (the report exits 0 only when every setup's flags parse and simulate).
TEST(ServingValidation, TheShippedSetIsExpressibleRunByRun) {
  const std::string dir = std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/serving";
  const auto published = readPublishedServing(dir + "/published.csv");
  const auto setups = readServingSetups(dir + "/setups.csv", published);
  for (const auto& run : published) {
    if (!run.complete()) continue;
    const bool has = std::any_of(setups.begin(), setups.end(), [&](const ServingSetup& s) { return s.id == run.id; });
    EXPECT_TRUE(has) << run.id << " (published.csv:" << run.line << ") has no setup";
  }
  const nlohmann::json j = servingReport(dir);
  EXPECT_GE(j["runs"].size(), 30U);
  for (const auto& run : j["runs"]) EXPECT_GT(run["predicted"]["output_throughput"].get<double>(), 0) << run["id"];
}

}  // namespace
}  // namespace attnsim
