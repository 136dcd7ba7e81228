// golden: every command's answers over a few hundred scenarios, compared with the recorded ones.
// Guards refactoring (outputs must not change by accident) and makes intended changes visible:
// run with ATTNSIM_UPDATE_GOLDEN=1 to rewrite tests/data/cli_golden/expected.jsonl, then review
// the diff. JSON answers are compared field by field, numbers to a relative 1e-9; text exactly.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(ATTNSIM_TEST_DATA) / "cli_golden";

struct Case {
  std::string arguments;           // with {src} and {tmp} placeholders
  std::vector<std::string> files;  // written under {tmp}, compared too
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<Case> readCases() {
  std::ifstream in(kGoldenDir / "cases.txt");
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty() || line[0] == '#') continue;
    Case c;
    const auto arrow = line.find(" => ");
    c.arguments = trim(line.substr(0, arrow));
    if (arrow != std::string::npos) {
      std::istringstream files(line.substr(arrow + 4));
      std::string f;
      while (std::getline(files, f, ',')) c.files.push_back(trim(f));
    }
    cases.push_back(c);
  }
  return cases;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::array<char, 16> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%d", std::gmtime(&now));
  return buf.data();
}

// One case's command line, run in this process (runAttnsimInProcess): the cases hold no shell quoting,
// so its arguments are its words.
InProcessResult run(const std::string& arguments, const fs::path& tmp) {
  std::vector<std::string> words;
  std::istringstream in(arguments);
  for (std::string word; in >> word;) {
    EXPECT_EQ(word.find_first_of("'\"\\$|;&<>`"), std::string::npos) << "a golden case is plain words: " << arguments;
    words.push_back(word);
  }
  return runAttnsimInProcess(words, tmp);
}

// Output with the run's folders and date replaced by placeholders, JSON parsed when it is JSON.
json recorded(const std::string& text, const fs::path& tmp) {
  std::string t = replaceAll(replaceAll(text, tmp.string(), "{tmp}"), ATTNSIM_SOURCE_DIR, "{src}");
  t = replaceAll(t, today(), "{today}");
  const auto first = t.find_first_not_of(" \n");
  if (first != std::string::npos && (t[first] == '{' || t[first] == '[')) {
    json j = json::parse(t, nullptr, false);
    if (!j.is_discarded()) return j;
  }
  return t;
}

// Differences between two JSON values, as "path: expected vs actual" lines.
void diff(const json& want, const json& got, const std::string& path, std::vector<std::string>& out) {
  if (out.size() > 10) return;
  if (want.is_number() && got.is_number()) {
    const double a = want.get<double>(), b = got.get<double>();
    if (std::fabs(a - b) > 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)})) {
      out.push_back(path + ": " + want.dump() + " vs " + got.dump());
    }
    return;
  }
  if (want.type() != got.type()) {
    out.push_back(path + ": " + want.dump().substr(0, 200) + " vs " + got.dump().substr(0, 200));
    return;
  }
  if (want.is_object()) {
    for (const auto& [k, v] : want.items()) {
      if (!got.contains(k)) {
        out.push_back(fmt::format("{}/{}: missing", path, k));
      } else {
        diff(v, got[k], fmt::format("{}/{}", path, k), out);
      }
    }
    for (const auto& [k, v] : got.items()) {
      if (!want.contains(k)) out.push_back(fmt::format("{}/{}: unexpected", path, k));
    }
  } else if (want.is_array()) {
    if (want.size() != got.size()) {
      out.push_back(path + ": " + std::to_string(want.size()) + " items vs " + std::to_string(got.size()));
      return;
    }
    for (std::size_t i = 0; i < want.size(); ++i) diff(want[i], got[i], path + "/" + std::to_string(i), out);
  } else if (want != got) {
    out.push_back(path + ":\n--- expected\n" + want.dump().substr(0, 2000) + "\n--- actual\n" +
                  got.dump().substr(0, 2000));
  }
}

std::map<std::string, json> recordedAnswers() {
  std::map<std::string, json> expected;
  std::ifstream in(kGoldenDir / "expected.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line);
    expected[j["arguments"].get<std::string>()] = j;
  }
  return expected;
}

json answerOf(const Case& c, const fs::path& tmp) {
  const std::string args = replaceAll(replaceAll(c.arguments, "{src}", ATTNSIM_SOURCE_DIR), "{tmp}", tmp.string());
  const InProcessResult o = run(args, tmp);
  json got = {{"arguments", c.arguments},
              {"exit_code", o.exit_code},
              {"stdout", recorded(o.out, tmp)},
              {"stderr", recorded(o.err, tmp)}};
  for (const auto& f : c.files) got["files"][f] = recorded(readFile(tmp / f), tmp);
  return got;
}

// The cases run in shards so that ctest spreads them over the cores (the sanitizer build runs
// each invocation several times slower). Cases that share the {tmp} folder are steps of one
// study and stay together, in order, in shard 0. With ATTNSIM_UPDATE_GOLDEN, shard 0 rewrites
// every answer and the others do nothing.
constexpr int kShards = 6;

class GoldenShard : public ::testing::TestWithParam<int> {};

TEST_P(GoldenShard, AnswersAsRecorded) {
  const int shard = GetParam();
  const bool update = std::getenv("ATTNSIM_UPDATE_GOLDEN") != nullptr;
  if (update && shard != 0) GTEST_SKIP() << "shard 0 rewrites every answer";
  const fs::path tmp =
      fs::temp_directory_path() / ("attnsim-golden-" + std::to_string(::getpid()) + "-" + std::to_string(shard));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const auto cases = readCases();
  ASSERT_GT(cases.size(), 300U);
  const std::map<std::string, json> expected = update ? std::map<std::string, json>{} : recordedAnswers();
  std::ofstream rewrite;
  if (update) rewrite.open(kGoldenDir / "expected.jsonl");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const bool study_step = c.arguments.find("{tmp}") != std::string::npos;
    if (!update && (study_step ? 0 : static_cast<int>(i % kShards)) != shard) continue;
    const json got = answerOf(c, tmp);
    if (update) {
      rewrite << got.dump() << "\n";
      continue;
    }
    const auto it = expected.find(c.arguments);
    if (it == expected.end()) {
      ADD_FAILURE() << "no recorded answer for: attnsim " << c.arguments;
      continue;
    }
    std::vector<std::string> differences;
    diff(it->second, got, "", differences);
    std::string listed;
    for (const auto& d : differences) listed += "  " + d + "\n";
    EXPECT_TRUE(differences.empty()) << "attnsim " << c.arguments << "\n" << listed;
  }
  fs::remove_all(tmp);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenShard, ::testing::Range(0, kShards));

}  // namespace
}  // namespace attnsim::test
