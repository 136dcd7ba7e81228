// unit: capacity search refuses nonsense flags and says why when no rate meets the SLO (issue 29).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "simulator/CapacitySearch.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

using nlohmann::json;

// Llama-3.1-70B on two H100s under SGLang at --mem-fraction-static 0.844 leaves a KV pool of a few thousand
// tokens (3,706): one 2,256-token request at a time. (Its default fraction leaves none: docs/CAPACITY.md.)
const std::string kSmallPoolOption = "--option mem_fraction_static=0.844 ";
const std::string kSmallPool =
    "capacity search --hardware h100-sxm --model llama-3.1-70b --engine sglang --tp 2 --prompt-len 2000 "
    "--output-len 256 --target-rate 20 --requests 200 " +
    kSmallPoolOption;

TEST(CapacitySearch, NonsenseTpAndRatesAreUsageErrorsNamingTheFlagAndItsRange) {
  const std::string search = "--json capacity search --hardware h100-sxm --model llama-3.1-8b --engine vllm ";
  const std::string serve = "--json serve-sim --hardware h100-sxm --model llama-3.1-8b --engine vllm --requests 5 ";
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {search + "--tp 0", "--tp: '0': 0 is out of range"},
           {search + "--tp 2,0", "each in [1, 1024]"},
           {search + "--tp x", "--tp: 'x': not an integer"},
           {search + "--target-rate -5", "--target-rate: '-5' is not a number above 0"},
           {search + "--target-rate 0", "--target-rate: '0' is not a number above 0"},
           {search + "--rate -1", "--rate: '-1' is not a number above 0"},
           {serve + "--tp 0", "--tp: Value 0 not in range 1 to 1024"},
           {serve + "--rate 0", "--rate: '0' is not a number above 0"}}) {
    const auto r = runAttnsim(args);
    ASSERT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    const json e = json::parse(r.output).at("error");
    EXPECT_EQ(e["kind"], "usage") << args;
    EXPECT_NE(e["message"].get<std::string>().find(message), std::string::npos) << args << "\n" << e["message"];
  }
}

TEST(CapacitySearch, NoRateMeetingTheSloIsSaidWithTheReasonInTextAndJson) {
  const auto text = runAttnsim(kSmallPool);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("sglang:fa3                   2  the SLO is not met at any rate searched"),
            std::string::npos)
      << text.output;
  EXPECT_EQ(text.output.find(" 0.00 "), std::string::npos) << "no rate's figures: " << text.output;

  const auto r = runAttnsim("--json " + kSmallPool);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json row = json::parse(r.output).at(0);
  EXPECT_EQ(row["max_rate_rps"], 0.0);
  EXPECT_TRUE(row["gpus_for_target"].is_null()) << row;
  EXPECT_TRUE(row["p99_ttft_ms"].is_null()) << row;
  const std::string why = row.at("slo_unmet");
  EXPECT_NE(why.find("even at 0.05 req/s, p99 TTFT"), std::string::npos) << why;
  EXPECT_NE(why.find("holds 1 request(s) of 2256 tokens"), std::string::npos) << why;
}

TEST(CapacitySearch, RequestsThatNeverFitThePoolMeanNoRateAtAll) {
  Scenario s = engineScenario("sglang", "h100-sxm", "llama-3.1-70b");
  s.tp = 2;
  s.engine_options["mem_fraction_static"] = "0.844";  // the pool of kSmallPool
  ServeSession session(defaultCatalog(), s);
  ArrivalSpec a;
  a.requests = 50;
  a.prompt_tokens = 2000;
  a.output_tokens = 2000;
  const RateSearch r = searchRate(session, a, {2.0, 0.050});
  EXPECT_EQ(r.max_rate, 0);
  EXPECT_EQ(r.simulations, 1);
  EXPECT_EQ(r.gpusFor(20, 2), 0);
  EXPECT_NE(r.slo_unmet.find("50 of 50 requests never fit the KV pool of"), std::string::npos) << r.slo_unmet;
  EXPECT_NE(r.slo_unmet.find("prompt + output up to 4000 tokens), so the SLO cannot be met at any rate"),
            std::string::npos)
      << r.slo_unmet;
}

TEST(CapacitySearch, ASearchThatMeetsTheSloSaysNothingIsUnmet) {
  ServeSession session(defaultCatalog(), engineScenario("vllm", "h100-sxm", "llama-3.1-8b"));
  ArrivalSpec a;
  a.requests = 100;
  const RateSearch r = searchRate(session, a, {2.0, 0.050});
  EXPECT_GT(r.max_rate, 0);
  EXPECT_TRUE(r.slo_unmet.empty()) << r.slo_unmet;
}

TEST(CapacitySearch, TextShowsTheRatesBandBesideTheRateAsTheJsonGivesIt) {
  const std::string args =
      "capacity search --hardware h100-sxm --model llama-3.1-8b --engine vllm --requests 60 --output-len 64";
  const auto text = runAttnsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  const auto r = runAttnsim("--json " + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json row = json::parse(r.output).at(0);
  const double slow = row.at("max_rate_band_rps").at(0), fast = row.at("max_rate_band_rps").at(1);
  EXPECT_LE(slow, row.at("max_rate_rps").get<double>());
  EXPECT_GE(fast, row.at("max_rate_rps").get<double>());
  EXPECT_NE(text.output.find("band req/s: the highest rate with every step at the slow and the fast end"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find(fmt::format("{:.2f}-{:.2f}", slow, fast)), std::string::npos) << text.output;
}

}  // namespace
}  // namespace attnsim::test
