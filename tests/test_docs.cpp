// golden: the support matrices regenerated from the descriptors equal the engines' published
// tables cell for cell (expected cells in tests/data/seed_tables, transcribed from ../shared/seeds).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

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

// docs/KEYS.md is the key schemas' rendering (core/schema/*.yaml): stale when a schema changes.
TEST(GoldenDocs, KeyReferenceIsUpToDate) {
  const std::string path = std::string(ATTNSIM_SOURCE_DIR) + "/docs/KEYS.md";
  const auto r = runAttnsim("docs --keys");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (std::getenv("ATTNSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << r.output;
  }
  EXPECT_EQ(readFile(path), r.output)
      << "run: ATTNSIM_UPDATE_GOLDEN=1 ./build/tests/attnsim_tests --gtest_filter=GoldenDocs.*";
}

// --json answers the key reference as data: one entry per file kind with its keys.
TEST(GoldenDocs, KeyReferenceAnswersInJson) {
  const auto r = runAttnsim("--json docs --keys");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_TRUE(j.is_array());
  bool found = false;
  for (const auto& kind : j) {
    if (kind["kind"] != "hardware_profile") continue;
    for (const auto& k : kind["keys"]) found = found || (k["key"] == "interconnect_link.kind" && k["required"] == true);
  }
  EXPECT_TRUE(found) << r.output.substr(0, 2000);
}

TEST(GoldenDocs, RulesDocumentEveryScenarioVariable) {
  const std::string rules = readFile(std::string(ATTNSIM_SOURCE_DIR) + "/docs/RULES.md");
  for (const auto& [name, meaning] : scenarioVariableDocs()) {
    EXPECT_NE(rules.find(fmt::format("| `{}` | {} |", name, meaning)), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace attnsim::test

namespace attnsim::test {
namespace {

const DocsDiff* findDiff(const std::vector<DocsDiff>& diffs, const std::string& row, const std::string& column) {
  for (const auto& d : diffs) {
    if (d.row == row && d.column == column) return &d;
  }
  return nullptr;
}

// RTP-LLM: the document's speculative-decoding ❌ cells are no condition of prepareModelRun or
// decoderSelfAttention, so no validation check reads them (docs/engines/rtp-llm.md D1).
TEST(DocsDiff, RtpLlmSpecDecodingCrossesAreNotEnforcedByTheCode) {
  const auto diffs = docsDiff(defaultCatalog().engine("rtp-llm"));
  const DocsDiff* d = findDiff(diffs, "TRT_V2", "Spec Decoding");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->doc, "❌");
  EXPECT_NE(d->decision.find("no check reads 'spec_decoding'"), std::string::npos) << d->decision;
  // XQA serves speculative steps: its documented ❌ differs from the descriptor's ✅.
  const DocsDiff* xqa = findDiff(diffs, "XQA", "Spec Decoding");
  ASSERT_NE(xqa, nullptr);
  EXPECT_EQ(xqa->code, "✅");
  EXPECT_NE(xqa->decision.find("XQA.yaml (documented.spec_decoding)"), std::string::npos);
}

// SGLang: triton accepts an FP8 KV cache (the fa3 + fp8_e5m2 switch lands on it), the document says ❌.
TEST(DocsDiff, SglangTritonFp8KvCellDiffersFromTheCode) {
  const auto diffs = docsDiff(defaultCatalog().engine("sglang"));  // d points into it
  const DocsDiff* d = findDiff(diffs, "triton/mha", "FP8 KV Cache");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->doc, "❌");
  EXPECT_EQ(d->code, "✅");
  EXPECT_NE(d->decision.find("check feature fp8_kv"), std::string::npos);
}

// vLLM: the generated document shows FlashAttention's KV dtypes as "auto"; validate_configuration
// accepts bfloat16 too.
TEST(DocsDiff, VllmFlashAttnKvDtypesCellDiffersFromValidateConfiguration) {
  const auto diffs = docsDiff(defaultCatalog().engine("vllm"));  // d points into it
  const DocsDiff* d = findDiff(diffs, "FLASH_ATTN@FA2", "KV Cache Dtypes");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->doc, "auto");
  EXPECT_NE(d->decision.find("validate_configuration"), std::string::npos);
}

// A cell the code follows is not listed, and every listed cell names where the code decides.
TEST(DocsDiff, ListsOnlyDisagreeingCellsEachWithItsDecision) {
  for (const auto& e : defaultCatalog().engines()) {
    const auto diffs = docsDiff(e);
    EXPECT_FALSE(diffs.empty()) << e.policy.engine;
    for (const auto& d : diffs) {
      EXPECT_NE(d.doc, d.code) << e.policy.engine << " " << d.row << " " << d.column;
      EXPECT_FALSE(d.decision.empty());
    }
  }
  EXPECT_EQ(findDiff(docsDiff(defaultCatalog().engine("sglang")), "fa3/mha", "FP8 KV Cache"), nullptr);
}

TEST(DocsDiff, CommandPrintsTheDiffInTextAndJson) {
  const auto text = runAttnsim("docs --engine rtp-llm --diff");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("| TRT_V2 | Spec Decoding | ❌ |"), std::string::npos) << text.output;
  const auto answer = runAttnsim("--json docs --engine sglang --diff");
  const auto j = nlohmann::json::parse(answer.output);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.front()["engine"], "sglang");
  EXPECT_FALSE(j.front()["decided_by"].get<std::string>().empty());
}

}  // namespace
}  // namespace attnsim::test
