// unit: the bad-input suite (tests/data/bad_inputs/targets.txt): every malformed catalog file or
// measurements CSV gives exit 2 and a JSON error located at its file and line, never a crash.
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
  int line = 0;
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
    out.push_back({cells[0], cells[1], cells[3], std::stoi(cells[2])});
  }
  return out;
}

TEST(BadInputs, EachIsRefusedWithExitTwoAndItsLocation) {
  const auto cases = readTargets();
  EXPECT_GE(cases.size(), 40U);
  for (const auto& c : cases) {
    OverlayDir dir;
    const fs::path input = kDir / c.file;
    CommandResult r;
    if (c.target == "csv") {
      r = runAttnsim("--json measurements import " + input.string() + " --db " + (dir.path() / "s.db").string());
      EXPECT_FALSE(fs::exists(dir.path() / "s.db")) << c.file << ": a bad file must leave no study behind";
    } else {
      dir.write(c.target, readFile(input));
      r = runAttnsim("--json list hardware --catalog " + dir.path().string());
    }
    ASSERT_EQ(r.exit_code, 2) << c.file << "\n" << r.output;
    const auto error = nlohmann::json::parse(r.output).at("error");
    const auto& where = error.at("location");
    const std::string expected_file = c.target == "csv" ? c.file : fs::path(c.target).filename().string();
    EXPECT_NE(where.at("file").get<std::string>().find(expected_file), std::string::npos) << c.file << " " << where;
    EXPECT_EQ(where.at("line"), c.line) << c.file << ": " << error;
    EXPECT_GE(where.at("column").get<int>(), 1) << c.file;
    EXPECT_NE(error.at("message").get<std::string>().find(c.fragment), std::string::npos) << c.file << ": " << error;
  }
}

}  // namespace
}  // namespace attnsim::test

namespace attnsim::test {
namespace {

// Command lines the fuzzer (fuzz_cli) found answered with exit 3: one argument per line.
TEST(BadInputs, FuzzedCommandLinesAreUsageErrors) {
  for (const char* name : {"cli_invalid_utf8.args"}) {
    std::ifstream in(kDir / name, std::ios::binary);
    std::string arguments;
    for (std::string arg; std::getline(in, arg);) arguments += " '" + arg + "'";
    const auto r = runAttnsim(arguments);
    EXPECT_EQ(r.exit_code, 2) << name << "\n" << r.output;
    const auto error = nlohmann::json::parse(r.output).at("error");  // --json is among the arguments
    EXPECT_EQ(error.at("kind"), "usage") << name;
  }
}

}  // namespace
}  // namespace attnsim::test
