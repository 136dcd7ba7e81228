// The priorities report at any size (issue 29): a store of many points gives an HTML page of
// tables and maps of groups that fits the page, while its JSON carries every point.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "TestSupport.hpp"

namespace attnsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The many-point study swept once for the suite: tests/data/reports/many.yaml.
const fs::path& manyPointStore() {
  static const fs::path db = [] {
    const fs::path path = test::suiteScratchDir("priorities-scale") / "many.db";
    const auto sweep =
        test::runAttnsim("sweep " + std::string(ATTNSIM_TEST_DATA) + "/reports/many.yaml --db " + path.string());
    EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
    return path;
  }();
  return db;
}

const fs::path& manyPointReport() {
  static const fs::path out = [] {
    const fs::path dir = test::suiteScratchDir("priorities-scale") / "report";
    const auto r = test::runAttnsim("report priorities --db " + manyPointStore().string() + " --out " + dir.string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir;
  }();
  return out;
}

// The page's body is 1100 px wide (reports/HtmlDocument's style); a figure wider scrolls sideways.
constexpr double kPageWidth = 1100;
// A page of tables and one map of groups per engine: its size follows the groups (devices × models ×
// options × phases), not the points. Drawn per point, this store's maps alone would take ~0.6 MB (a
// titled cell per point) and the hopper sweep's 5 MB; 256 KB still opens at once and reads top to bottom.
constexpr std::size_t kMaxHtmlBytes = 256 * 1024;

TEST(PrioritiesScale, HtmlOfAManyPointStoreStaysSmallWithNoSvgWiderThanThePage) {
  const json j = json::parse(test::readFile(manyPointReport() / "priorities.json"));
  ASSERT_GT(j["provenance"]["stored_points"].get<std::int64_t>(), 1000) << "a many-point store";
  const std::string html = test::readFile(manyPointReport() / "priorities.html");
  EXPECT_LT(html.size(), kMaxHtmlBytes);
  const std::regex svg_width(R"re(<svg [^>]*width="([0-9.]+)")re");
  int svgs = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), svg_width); it != std::sregex_iterator(); ++it) {
    ++svgs;
    EXPECT_LE(std::stod((*it)[1].str()), kPageWidth) << (*it)[0].str();
  }
  EXPECT_EQ(svgs, 2) << "one map per engine";
  EXPECT_NE(html.find("per group of points"), std::string::npos);
  EXPECT_NE(html.find("The largest regrets beyond the bands"), std::string::npos);
}

TEST(PrioritiesScale, JsonCarriesEveryPointWithItsPickFastestRegretAndVerdict) {
  const json j = json::parse(test::readFile(manyPointReport() / "priorities.json"));
  const json& points = j["points"];
  EXPECT_EQ(points.size(), j["provenance"]["stored_points"].get<std::size_t>());
  std::set<std::string> verdicts, keys;
  for (const auto& p : points) {
    verdicts.insert(p["verdict"].get<std::string>());
    keys.insert(p["engine"].get<std::string>() + p["hardware"].get<std::string>() + p["model"].get<std::string>() +
                p["options"].get<std::string>() + p["workload"].get<std::string>());
    if (p["verdict"] == "refused") {
      EXPECT_FALSE(p["refusal"].get<std::string>().empty());
      continue;
    }
    if (p["verdict"] == "not_deployable") {
      EXPECT_FALSE(p["deployable"].get<bool>());
      EXPECT_NE(p["memory"].get<std::string>().find("not deployable (memory)"), std::string::npos);
      continue;
    }
    if (p["engine_pick"].is_null()) continue;
    EXPECT_GE(p["engine_pick"]["step_us"].get<double>(), p["fastest"]["step_us"].get<double>()) << p.dump();
    EXPECT_NEAR(p["regret"].get<double>(),
                p["engine_pick"]["step_us"].get<double>() / p["fastest"]["step_us"].get<double>() - 1, 1e-9);
    EXPECT_GT(p["engine_pick"]["band"].get<double>(), 0.0);
  }
  EXPECT_EQ(keys.size(), points.size()) << "each point once";
  EXPECT_TRUE(verdicts.count("fastest")) << "the engine's pick wins somewhere";
  EXPECT_TRUE(verdicts.count("not_deployable")) << "DeepSeek-V3 on one GPU";
}

TEST(PrioritiesScale, ASmallStoreKeepsItsPerPointMaps) {
  const fs::path dir = test::suiteScratchDir("priorities-scale") / "small";
  const fs::path db = test::suiteScratchDir("priorities-scale") / "small.db";
  ASSERT_EQ(
      test::runAttnsim("sweep " + std::string(ATTNSIM_TEST_DATA) + "/reports/small.yaml --db " + db.string()).exit_code,
      0);
  ASSERT_EQ(test::runAttnsim("report priorities --db " + db.string() + " --out " + dir.string()).exit_code, 0);
  const std::string html = test::readFile(dir / "priorities.html");
  EXPECT_NE(html.find(", per point"), std::string::npos);
  EXPECT_EQ(html.find("per group of points"), std::string::npos);
}

}  // namespace
}  // namespace attnsim
