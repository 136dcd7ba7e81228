// unit: the attnsim program's contract: exit codes, --json fields, error messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

using nlohmann::json;

TEST(Cli, SelectJsonHasTheContractFields) {
  const auto r = runAttnsim("--json select --engine vllm --hardware h100-sxm --model llama-3.1-8b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_EQ(j["engine"], "vllm");
  EXPECT_EQ(j["backend"], "FLASH_ATTN");
  EXPECT_EQ(j["prefill_backend"], "FLASH_ATTN");
  EXPECT_EQ(j["decode_backend"], "FLASH_ATTN");
  EXPECT_EQ(j["prefill"]["variant"], "FA3");
  EXPECT_EQ(j["prefill"]["cuda_graph"], "always");
  EXPECT_TRUE(j["rejected"].is_object());
  EXPECT_EQ(j["rejected"]["CUTLASS_MLA"].back(), "compute capability not supported");
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["catalog_hash"].get<std::string>().size(), 16U);
}

TEST(Cli, PerStageEnginesHaveNoCommonBackend) {
  const auto r = runAttnsim("--json select --engine rtp-llm --hardware h100-sxm --model llama-3.1-8b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_TRUE(j["backend"].is_null());
  EXPECT_EQ(j["prefill_backend"], "TRT_V2");
  EXPECT_EQ(j["decode_backend"], "XQA");
}

TEST(Cli, InvalidExplicitBackendExitsOneWithTheEnginesMessage) {
  const auto r = runAttnsim("select --engine vllm --hardware a100-sxm-80g --model deepseek-v3 --backend vllm:FLASHMLA");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(
      r.output.find("Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. Reason: "),
      std::string::npos)
      << r.output;
  const auto j =
      runAttnsim("--json select --engine vllm --hardware a100-sxm-80g --model deepseek-v3 --backend FLASHMLA");
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_TRUE(json::parse(j.output)["backend"].is_null());
}

TEST(Cli, UnknownIdsExitTwoWithSuggestions) {
  auto r = runAttnsim("select --engine vllm --hardware h100 --model llama-3.1-8b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown hardware 'h100'"), std::string::npos) << r.output;
  r = runAttnsim("select --engine vllm --hardware h100-sxm --model llama-3.1-8B");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'llama-3.1-8b'"), std::string::npos) << r.output;
  r = runAttnsim("select --engine sglng --hardware h100-sxm --model llama-3.1-8b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'sglang'"), std::string::npos) << r.output;
  r = runAttnsim("select --engine vllm --hardware h100-sxm --model llama-3.1-8b --backend FLASH_ATN");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'FLASH_ATTN'"), std::string::npos) << r.output;
}

TEST(Cli, BadOptionValuesExitTwo) {
  auto r = runAttnsim("select --engine sglang --hardware h100-sxm --model llama-3.1-8b --kv-dtype fp8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("sglang accepts auto, fp8_e4m3"), std::string::npos) << r.output;
  r = runAttnsim("select --engine rtp-llm --hardware h100-sxm --model llama-3.1-8b --option enable_xqaa=false");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'enable_xqa'"), std::string::npos) << r.output;
  r = runAttnsim("select --engine rtp-llm --hardware h100-sxm --model llama-3.1-8b --option enable_xqa=maybe");
  EXPECT_EQ(r.exit_code, 2);
  r = runAttnsim("select --engine vllm --hardware h100-sxm --model llama-3.1-8b --backend sglang:fa3");
  EXPECT_EQ(r.exit_code, 2);
  r = runAttnsim("select --engine vllm --hardware h100-sxm");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = runAttnsim("list gadgets");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(Cli, BrokenCatalogOverlayExitsTwoWithTheLocation) {
  OverlayDir overlay;
  overlay.write("model/configs/tiny.yaml", "id: tiny\nnum_layerz: 2\nname: tiny\n");
  const auto r = runAttnsim("--catalog " + overlay.path().string() + " list models");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("tiny.yaml:1:1: 'hf_id': required key 'hf_id' is missing"), std::string::npos) << r.output;
  overlay.write("model/configs/tiny.yaml", embeddedFile("model/configs/llama-3.1-8b.yaml"));
  const auto typo = runAttnsim("--catalog " + overlay.path().string() + " list models");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("tiny.yaml:1:5: 'id': id 'llama-3.1-8b' must match the file name 'tiny'"),
            std::string::npos)
      << typo.output;
}

TEST(Cli, MatrixSelectionPrintsOneRowPerCombination) {
  const auto r = runAttnsim("--json select --engine vllm,sglang --hardware h100-sxm,b200 --model llama-3.1-8b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output).size(), 4U);
}

TEST(Cli, DocsOutWritesTheFileOrNothing) {
  OverlayDir dir;
  const auto file = dir.path() / "matrix.md";
  auto r = runAttnsim("docs --engine rtp-llm --out " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(readFile(file).find("| XQA |"), std::string::npos);
  const auto missing = dir.path() / "no" / "such" / "dir" / "matrix.md";
  r = runAttnsim("docs --out " + missing.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(std::filesystem::exists(missing));
  EXPECT_FALSE(std::filesystem::exists(missing.string() + ".tmp"));
}

TEST(Cli, CheckReportsErrorsAgainstTheToleranceAndRefusesInvalidBackends) {
  auto r =
      runAttnsim("--json check --backend sglang:trtllm_mha --model gpt-oss-20b --kv-dtype fp8_e4m3 --hardware b200");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_LE(j["max_rel_err"].get<double>(), j["tolerance"].get<double>());
  EXPECT_GT(j["max_abs_err"].get<double>(), 0.0);
  EXPECT_EQ(j["layers"].size(), 2U);  // gpt-oss: sliding and full layer types
  EXPECT_EQ(j["shape"]["heads"], 64);
  EXPECT_NE(j["pipeline"].get<std::string>().find("fp8_e4m3 KV cache round trip"), std::string::npos);
  r = runAttnsim("check --backend vllm:FLASHMLA --model deepseek-v3 --hardware a100-sxm-80g");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FlashMLA Dense is only supported on Hopper devices."), std::string::npos) << r.output;
  r = runAttnsim("check --backend vllm:FLASHMLA");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(Cli, ListCommandsAnswer) {
  for (const char* what : {"hardware", "models", "backends", "kernels", "engines"}) {
    const auto r = runAttnsim(std::string("--json list ") + what);
    ASSERT_EQ(r.exit_code, 0) << what << r.output;
    EXPECT_FALSE(json::parse(r.output).empty()) << what;
  }
}

}  // namespace
}  // namespace attnsim::test
