// unit: extending the catalog never fails silently (issue 30): an input a prediction needs is
// required where it is needed, and the error names the file's key.
#include <gtest/gtest.h>

#include <string>

#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// The H100 profile copied under another id, without its interconnect_link and device names.
std::string profileWithoutLink() {
  std::string profile = embeddedFile("hardware/profiles/h100-sxm.yaml");
  std::string out;
  std::size_t start = 0;
  while (start < profile.size()) {
    const std::size_t end = profile.find('\n', start);
    const std::string line = profile.substr(start, end == std::string::npos ? std::string::npos : end - start + 1);
    start = end == std::string::npos ? profile.size() : end + 1;
    if (line.starts_with("interconnect_link:") || line.starts_with("device_names:")) continue;
    out += line.starts_with("id:") ? "id: h100-nolink\n" : line;
  }
  return out;
}

TEST(Extending, AProfileWithoutALinkRefusesTensorParallelPredictionsNamingTheKey) {
  OverlayDir dir;
  dir.write("hardware/profiles/h100-nolink.yaml", profileWithoutLink());
  const std::string base = "--catalog " + dir.path().string() +
                           " predict --hardware h100-nolink --model llama-3.1-70b --engine vllm --phase decode "
                           "--batch 8 --context 2048";
  const auto tp2 = runAttnsim(base + " --tp 2");
  EXPECT_EQ(tp2.exit_code, 2) << tp2.output;
  EXPECT_NE(tp2.output.find("has no interconnect_link"), std::string::npos) << tp2.output;
  EXPECT_NE(tp2.output.find("--tp 1"), std::string::npos) << tp2.output;
  // One GPU communicates nothing: the profile serves it as before.
  const auto tp1 = runAttnsim("--catalog " + dir.path().string() +
                              " predict --hardware h100-nolink --model llama-3.1-8b --engine vllm --phase decode "
                              "--batch 8 --context 2048");
  EXPECT_EQ(tp1.exit_code, 0) << tp1.output;
  // The same GPU with its link predicts TP 2, with the all-reduces in the step.
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --model llama-3.1-70b --engine vllm --phase decode --batch 8 "
                       "--context 2048 --tp 2")
                .exit_code,
            0);
}

TEST(Extending, AMisplacedOverlayFileIsAnErrorWithTheNearestFolder) {
  OverlayDir dir;
  dir.write("hardware/profile/h100-nolink.yaml", profileWithoutLink());  // "profile", one letter off
  const auto r = runAttnsim("--catalog " + dir.path().string() + " list hardware");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'hardware/profile/h100-nolink.yaml' is in no catalog folder"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("did you mean 'hardware/profiles'"), std::string::npos) << r.output;
  // A file that is not YAML in a catalog folder would be skipped just the same.
  OverlayDir notes;
  notes.write("model/configs/README.md", "my models\n");
  const auto md = runAttnsim("--catalog " + notes.path().string() + " list models");
  EXPECT_EQ(md.exit_code, 2) << md.output;
  EXPECT_NE(md.output.find("is not a .yaml file"), std::string::npos) << md.output;
  // In its folder the same profile loads.
  OverlayDir right;
  right.write("hardware/profiles/h100-nolink.yaml", profileWithoutLink());
  const auto ok = runAttnsim("--catalog " + right.path().string() + " list hardware");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("h100-nolink"), std::string::npos) << ok.output;
}

}  // namespace
}  // namespace attnsim::test
