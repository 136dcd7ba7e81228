// unit: the command line as users type it: global flags anywhere, every outcome in JSON with
// --json (errors as an `error` object on stdout), exit codes 0/1/2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

using nlohmann::json;

TEST(CliErrors, GlobalFlagsWorkAfterTheSubcommand) {
  const auto r = runAttnsim("select --engine vllm --hardware h100-sxm --model llama-3.1-8b --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["backend"], "FLASH_ATTN");

  OverlayDir overlay;  // a catalog overlay given after the subcommand is read
  overlay.write("hardware/profiles/h100-sxm.yaml", embeddedFile("hardware/profiles/h100-sxm.yaml") + "bogus: 1\n");
  const auto bad =
      runAttnsim("select --engine vllm --hardware h100-sxm --model llama-3.1-8b --catalog " + overlay.path().string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("unknown key 'bogus'"), std::string::npos) << bad.output;
}

TEST(CliErrors, RefusalIsAJsonErrorWithExitOne) {
  const auto r = runAttnsim(
      "--json predict --engine vllm --hardware a100-sxm-80g --model llama-3.1-8b --phase decode --batch 8 "
      "--context 100 --backend vllm:FLASHMLA");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const json e = json::parse(r.output).at("error");
  EXPECT_EQ(e["exit_code"], 1);
  EXPECT_EQ(e["kind"], "refusal");
  EXPECT_NE(e["message"].get<std::string>().find("FLASHMLA is not valid"), std::string::npos);
}

TEST(CliErrors, BadFlagsAreJsonErrorsWithExitTwo) {
  for (const char* args : {"select --engine vllm --hardware h100-sxm --model llama-3.1-8b --bogus --json",
                           "--json predict --hardware h100-sxm --model llama-3.1-8b --engine vllm --batch x",
                           "--json select --engine vllm --hardware h100 --model llama-3.1-8b"}) {
    const auto r = runAttnsim(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    const json e = json::parse(r.output).at("error");
    EXPECT_EQ(e["exit_code"], 2) << args;
    EXPECT_EQ(e["kind"], "usage") << args;
    EXPECT_FALSE(e["message"].get<std::string>().empty()) << args;
  }
}

TEST(CliErrors, CatalogErrorsCarryTheirLocation) {
  OverlayDir overlay;
  const std::string base = embeddedFile("hardware/profiles/h100-sxm.yaml");
  overlay.write("hardware/profiles/h100-sxm.yaml", base + "memory_gb: 81\n");
  const auto r = runAttnsim("list hardware --json --catalog " + overlay.path().string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const json e = json::parse(r.output).at("error");
  EXPECT_EQ(e["kind"], "catalog");
  EXPECT_EQ(e["location"]["line"], std::count(base.begin(), base.end(), '\n') + 1);
  EXPECT_EQ(e["location"]["column"], 1);
  EXPECT_EQ(e["location"]["key"], "memory_gb");
  EXPECT_NE(e["location"]["file"].get<std::string>().find("h100-sxm.yaml"), std::string::npos);
}

TEST(CliErrors, UnknownHardwareSuggestsWhatStartsWithTheTypedId) {
  const auto r = runAttnsim("select --engine vllm --hardware h100 --model llama-3.1-8b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("did you mean 'h100-pcie' or 'h100-sxm'?"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace attnsim::test
