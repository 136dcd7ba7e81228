// unit: the bad-input suite (tests/data/bad_inputs/targets.txt): every malformed catalog file,
// sweep spec, measurements CSV, serving trace or command line gives exit 2 and a JSON error (located
// at its file and line for files), never a crash, and leaves no store behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(ATTNSIM_TEST_DATA) / "bad_inputs";

struct BadInput {
  std::string file, target, fragment;
  int line = 0;  // 0: a command line, whose errors name the flag rather than a file
};

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  const auto e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<BadInput> readTargets() {
  std::ifstream in(kDir / "targets.txt");
  std::vector<BadInput> out;
  for (std::string row; std::getline(in, row);) {
    if (row.empty() || row[0] == '#') continue;
    std::vector<std::string> cells;
    std::istringstream fields(row);
    for (std::string cell; std::getline(fields, cell, '|');) cells.push_back(trimmed(cell));
    if (cells.size() != 4) {
      ADD_FAILURE() << "targets.txt: " << row;
      continue;
    }
    out.push_back({cells[0], cells[1], cells[3], cells[2] == "-" ? 0 : std::stoi(cells[2])});
  }
  return out;
}

// One argument per line, as they are (the program is called in this process: no shell between).
std::vector<std::string> argumentLines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> arguments;
  for (std::string arg; std::getline(in, arg);) arguments.push_back(arg);
  return arguments;
}

// Runs attnsim on one case as a user would meet it, in this process (the embedded catalog is parsed
// once for all cases); `store` is where a study would appear.
InProcessResult runCase(const BadInput& c, const OverlayDir& dir, const fs::path& store) {
  const std::string input = (kDir / c.file).string();
  std::vector<std::string> args;
  if (c.target == "csv") {
    args = {"measurements", "import", input, "--db", store.string()};
  } else if (c.target == "sweep") {
    args = {"sweep", input, "--db", store.string()};
  } else if (c.target == "trace") {
    args = {"serve-sim", "--engine", "vllm", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--trace", input};
  } else if (c.target == "args") {
    args = argumentLines(kDir / c.file);
  } else {
    dir.write(c.target, readFile(kDir / c.file));
    args = {"list", "hardware", "--catalog", dir.path().string()};
  }
  args.insert(args.begin(), "--json");
  return runAttnsimInProcess(args, suiteScratchDir("bad-inputs"));
}

TEST(BadInputs, EachIsRefusedWithExitTwoAndItsLocation) {
  const auto cases = readTargets();
  EXPECT_GE(cases.size(), 150U);
  for (const auto& c : cases) {
    OverlayDir dir;
    const fs::path store = dir.path() / "s.db";
    const InProcessResult r = runCase(c, dir, store);
    ASSERT_EQ(r.exit_code, 2) << c.file << "\n" << r.out << r.err;
    EXPECT_FALSE(fs::exists(store)) << c.file << ": a bad input must leave no study behind";
    const auto error = nlohmann::json::parse(r.out).at("error");
    EXPECT_NE(error.at("message").get<std::string>().find(c.fragment), std::string::npos) << c.file << ": " << error;
    if (c.line == 0) {
      EXPECT_TRUE(error.at("kind") == "usage" || error.at("kind") == "input") << c.file << ": " << error;
      continue;
    }
    const auto& where = error.at("location");
    const bool own_file = c.target == "csv" || c.target == "sweep" || c.target == "trace";
    const std::string expected_file = own_file ? c.file : fs::path(c.target).filename().string();
    EXPECT_NE(where.at("file").get<std::string>().find(expected_file), std::string::npos) << c.file << " " << where;
    EXPECT_EQ(where.at("line"), c.line) << c.file << ": " << error;
    EXPECT_GE(where.at("column").get<int>(), 1) << c.file;
  }
}

}  // namespace
}  // namespace attnsim::test

namespace attnsim::test {
namespace {

// A what-if copy of a profile may keep its device names, but measurements of that device then
// belong to no one profile: the import refuses them, naming both.
TEST(BadInputs, AMeasuredDeviceClaimedByTwoProfilesIsRefused) {
  OverlayDir overlay;
  const std::string h100 = readFile(fs::path(ATTNSIM_SOURCE_DIR) / "hardware/profiles/h100-sxm.yaml");
  overlay.write("hardware/profiles/h100-copy.yaml", "id: h100-copy" + h100.substr(h100.find('\n')));
  const fs::path store = overlay.path() / "s.db";
  const auto r =
      runAttnsim("--json --catalog " + overlay.path().string() + " measurements import " +
                 (fs::path(ATTNSIM_TEST_DATA) / "measurements_sample.csv").string() + " --db " + store.string());
  ASSERT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is a device name of two hardware profiles (h100-copy and h100-sxm)"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(store));
}

// Each argument in single quotes, for the shell (the files hold no quote characters).
std::string shellQuoted(const std::vector<std::string>& arguments) {
  std::string line;
  for (const auto& arg : arguments) line.append(" '").append(arg).append("'");
  return line;
}

// Command lines the fuzzer (fuzz_cli) found answered with exit 3, run as the installed program is: one
// argument per line.
TEST(BadInputs, FuzzedCommandLinesAreUsageErrors) {
  for (const char* name : {"cli_invalid_utf8.args"}) {
    const auto r = runAttnsim(shellQuoted(argumentLines(kDir / name)));
    EXPECT_EQ(r.exit_code, 2) << name << "\n" << r.output;
    const auto error = nlohmann::json::parse(r.output).at("error");  // --json is among the arguments
    EXPECT_EQ(error.at("kind"), "usage") << name;
  }
}

}  // namespace
}  // namespace attnsim::test
