// unit: the embedded catalog is parsed once per process and shared by every command line run in
// it (the command-line fuzzer runs thousands); a --catalog overlay is still loaded per command.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "catalog/Catalog.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// Runs the program in this process, as the fuzzer does; only its exit code matters here.
int runInProcess(const std::vector<std::string>& args) {
  return runAttnsimInProcess(args, suiteScratchDir("shared-catalog")).exit_code;
}

TEST(SharedCatalog, EmbeddedCatalogIsParsedOnceHoweverManyCommandsRun) {
  ASSERT_EQ(runInProcess({"list", "hardware"}), 0);  // the first use in this process may parse it
  const std::int64_t loads = Catalog::loadCount();
  const std::vector<std::vector<std::string>> commands{
      {"list", "models"},
      {"--json", "select", "--engine", "vllm", "--hardware", "h100-sxm", "--model", "llama-3.1-8b"},
      {"predict", "--engine", "sglang", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
       "--batch", "8", "--context", "4096"},
      {"rank", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode", "--batch", "8", "--context",
       "4096"},
      {"select", "--engine", "vllm", "--hardware", "h100", "--model", "llama-3.1-8b"},  // an input error
  };
  std::vector<int> codes;
  codes.reserve(commands.size());
  for (const auto& args : commands) codes.push_back(runInProcess(args));
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0, 0, 2}));
  EXPECT_EQ(Catalog::loadCount(), loads);
  EXPECT_EQ(Catalog::embedded().get(), Catalog::embedded().get());
}

TEST(SharedCatalog, OverlayCatalogIsLoadedForEachCommandLine) {
  const std::string overlay = std::string(ATTNSIM_TEST_DATA) + "/overlays/no-link";
  ASSERT_EQ(runInProcess({"list", "hardware"}), 0);
  const std::int64_t loads = Catalog::loadCount();
  EXPECT_EQ(runInProcess({"--catalog", overlay, "list", "hardware"}), 0);
  EXPECT_EQ(runInProcess({"list", "hardware", "--catalog", overlay}), 0);
  EXPECT_EQ(Catalog::loadCount(), loads + 2);
}

}  // namespace
}  // namespace attnsim::test
