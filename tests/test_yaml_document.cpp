// unit: YamlReader::parseDocument keeps each parsed text for the rest of the process (a catalog overlay
// parses the untouched files again); a kept document must read exactly as a fresh parse would, each
// reader naming its own file and auditing its own keys.
#include <gtest/gtest.h>

#include <string>

#include "core/Error.hpp"
#include "core/YamlReader.hpp"

namespace attnsim::test {
namespace {

std::string finishError(const YamlReader& r) {
  try {
    r.finish();
  } catch (const CatalogError& e) {
    return e.what();
  }
  return "no error";
}

TEST(YamlDocument, TheSameTextParsedUnderTwoNamesReadsAlikeAndEachErrorNamesItsOwnFile) {
  const std::string text = "alpha: 1\nbeta: two\n";
  const YamlReader first = YamlReader::parseDocument(text, "first.yaml");
  const YamlReader second = YamlReader::parseDocument(text, "second.yaml");
  EXPECT_EQ(first.getInt("alpha", 0, 10), 1);
  EXPECT_EQ(second.getInt("alpha", 0, 10), 1);
  try {
    (void)second.getInt("beta", 0, 10);
    ADD_FAILURE() << "beta is not a number";
  } catch (const CatalogError& e) {
    EXPECT_NE(std::string(e.what()).find("second.yaml:2"), std::string::npos) << e.what();
  }
}

TEST(YamlDocument, AChangedTextIsReadAsChanged) {
  EXPECT_EQ(YamlReader::parseDocument("size: 1\n", "grid.yaml").getInt("size", 0, 10), 1);
  EXPECT_EQ(YamlReader::parseDocument("size: 2\n", "grid.yaml").getInt("size", 0, 10), 2);
}

TEST(YamlDocument, EachReaderOfOneTextAuditsItsOwnUnreadKeys) {
  const std::string text = "read: 1\nunread: 2\n";
  const YamlReader thorough = YamlReader::parseDocument(text, "keys.yaml");
  (void)thorough.getInt("read", 0, 10);
  (void)thorough.getInt("unread", 0, 10);
  EXPECT_EQ(finishError(thorough), "no error");
  const YamlReader partial = YamlReader::parseDocument(text, "keys.yaml");
  (void)partial.getInt("read", 0, 10);
  EXPECT_NE(finishError(partial).find("unread"), std::string::npos) << finishError(partial);
}

TEST(YamlDocument, ADuplicateKeyIsRefusedEveryTimeTheTextIsParsed) {
  const std::string text = "key: 1\nkey: 2\n";
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_THROW((void)YamlReader::parseDocument(text, "twice.yaml"), CatalogError) << "attempt " << attempt;
  }
}

}  // namespace
}  // namespace attnsim::test
