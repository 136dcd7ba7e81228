// golden: the support matrices regenerated from the descriptors equal the engines' published
// tables cell for cell (expected cells in tests/data/seed_tables, transcribed from ../shared/seeds).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "reports/SupportTables.hpp"
#include "selection/EngineVariables.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

class SeedTables : public ::testing::TestWithParam<std::string> {};

TEST_P(SeedTables, GeneratedTablesMatchTheSeedCellForCell) {
  const std::string engine = GetParam();
  const MarkdownTables expected =
      parseMarkdownTables(readFile(std::string(ATTNSIM_TEST_DATA) + "/seed_tables/" + engine + ".md"));
  const MarkdownTables generated = parseMarkdownTables(renderSupportTables(defaultCatalog().engine(engine)));
  ASSERT_FALSE(expected.empty());
  for (const auto& [title, rows] : expected) {
    const auto it = generated.find(title);
    ASSERT_NE(it, generated.end()) << "no generated table titled '" << title << "'";
    const auto& got = it->second;
    ASSERT_EQ(got.size(), rows.size()) << title;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      ASSERT_EQ(got[r].size(), rows[r].size()) << title << " row " << r;
      for (std::size_t col = 0; col < rows[r].size(); ++col) {
        EXPECT_EQ(normalizeCell(got[r][col]), normalizeCell(rows[r][col]))
            << title << ", row " << r << " (" << rows[r][0] << "), column " << col << " (" << rows[0][col] << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, SeedTables, ::testing::Values("vllm", "sglang", "rtp-llm"));

TEST(SeedTables, AChangedDescriptorShowsInTheTable) {
  // The tables come from the descriptors, not from stored text: change a capability, see the cell change.
  OverlayDir overlay;
  const std::string path = "backends/vllm/TRITON_ATTN.yaml";
  std::string text = embeddedFile(path);
  text.replace(text.find("{sink: true, mm_prefix: true}"), 29, "{sink: false, mm_prefix: true}");
  overlay.write(path, text);
  const MarkdownTables tables = parseMarkdownTables(renderSupportTables(overlay.load().engine("vllm")));
  const auto& rows = tables.at("Standard Attention (MHA, MQA, GQA) Backends");
  EXPECT_EQ(normalizeCell(rows.back()[0]), "TRITON_ATTN");
  EXPECT_EQ(normalizeCell(rows.back()[6]), "❌");
}

TEST(SeedTables, DocumentedCellsDoNotChangeWhatTheSelectorChecks) {
  // engines.md §1.4: the vLLM document shows FLASH_ATTN head sizes as "Any"; the code needs %8 and <= 256.
  const Engine& vllm = defaultCatalog().engine("vllm");
  const Backend* fa = findBackends(vllm, "FLASH_ATTN").front();
  EXPECT_EQ(fa->caps.documented.at("head_sizes"), "Any");
  EXPECT_FALSE(fa->caps.head_sizes.contains(264));
  EXPECT_FALSE(fa->caps.head_sizes.contains(20));
  EXPECT_TRUE(fa->caps.head_sizes.contains(256));
}

// golden: docs/support-matrix.md is what `attnsim docs` prints; ATTNSIM_UPDATE_GOLDEN=1 rewrites it.
TEST(GoldenDocs, SupportMatrixIsUpToDate) {
  const std::string path = std::string(ATTNSIM_SOURCE_DIR) + "/docs/support-matrix.md";
  const auto r = runAttnsim("docs");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (std::getenv("ATTNSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << r.output;
  }
  EXPECT_EQ(readFile(path), r.output)
      << "run: ATTNSIM_UPDATE_GOLDEN=1 ./build/tests/attnsim_tests --gtest_filter=GoldenDocs.*";
}

TEST(GoldenDocs, RulesDocumentEveryScenarioVariable) {
  const std::string rules = readFile(std::string(ATTNSIM_SOURCE_DIR) + "/docs/RULES.md");
  for (const auto& [name, meaning] : scenarioVariableDocs()) {
    EXPECT_NE(rules.find(fmt::format("| `{}` | {} |", name, meaning)), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace attnsim::test
