// docs/ADDING.md is a walk-through whose every shell command runs here: each line of a ```sh block
// that starts with `attnsim` runs (from a scratch folder holding a link to tests/, so the guide's
// relative paths and the files it writes both work), and the `# expect: TEXT` / `# exit: N` comments
// under it say what it must print and return. Each ```yaml block that starts with
// `# tests/data/overlays/adding/...` shows that overlay file byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

struct GuideCommand {
  std::string line;  // as the guide writes it
  int exit_code = 0;
  std::vector<std::string> expected;
};

struct GuideBlock {
  std::string language;
  std::vector<std::string> lines;
};

std::vector<GuideBlock> fencedBlocks(const std::string& text) {
  std::vector<GuideBlock> blocks;
  std::istringstream in(text);
  std::string line;
  GuideBlock* open = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (open != nullptr) {
        open = nullptr;
      } else {
        blocks.push_back({line.substr(3), {}});
        open = &blocks.back();
      }
    } else if (open != nullptr) {
      open->lines.push_back(line);
    }
  }
  return blocks;
}

std::vector<GuideCommand> guideCommands(const std::vector<GuideBlock>& blocks) {
  std::vector<GuideCommand> commands;
  for (const auto& b : blocks) {
    if (b.language != "sh") continue;
    for (const auto& line : b.lines) {
      if (line.rfind("attnsim ", 0) == 0) {
        commands.push_back({line, 0, {}});
      } else if (line.rfind("# expect: ", 0) == 0 && !commands.empty()) {
        commands.back().expected.push_back(line.substr(10));
      } else if (line.rfind("# exit: ", 0) == 0 && !commands.empty()) {
        commands.back().exit_code = std::stoi(line.substr(8));
      }
    }
  }
  return commands;
}

std::string addingGuide() { return readFile(std::string(ATTNSIM_SOURCE_DIR) + "/docs/ADDING.md"); }

TEST(AddingGuide, EveryCommandItShowsRuns) {
  const auto commands = guideCommands(fencedBlocks(addingGuide()));
  ASSERT_GE(commands.size(), 8U) << "docs/ADDING.md shows fewer commands than its walk-through has";
  const auto& scratch = suiteScratchDir("adding-guide");
  std::filesystem::create_symlink(std::filesystem::path(ATTNSIM_SOURCE_DIR) / "tests", scratch / "tests");
  for (const auto& c : commands) {
    SCOPED_TRACE(c.line);
    EXPECT_FALSE(c.expected.empty()) << "give the command an '# expect: TEXT' line saying what it prints";
    const auto r = runShell("cd '" + scratch.string() + "' && " + ATTNSIM_BINARY + c.line.substr(7));
    EXPECT_EQ(r.exit_code, c.exit_code) << r.output;
    for (const auto& text : c.expected) EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
}

TEST(AddingGuide, EveryFileItShowsIsTheOverlaysFile) {
  int shown = 0;
  for (const auto& b : fencedBlocks(addingGuide())) {
    const std::string prefix = "# tests/data/overlays/adding/";
    if (b.language != "yaml" || b.lines.empty() || b.lines.front().rfind(prefix, 0) != 0) continue;
    std::string body;
    for (std::size_t i = 1; i < b.lines.size(); ++i) body.append(b.lines[i]).append("\n");
    const std::string path = b.lines.front().substr(2);
    EXPECT_EQ(readFile(std::string(ATTNSIM_SOURCE_DIR) + "/" + path), body) << path;
    ++shown;
  }
  EXPECT_GE(shown, 2) << "the guide shows the GPU and the model it adds";
}

}  // namespace
}  // namespace attnsim::test
