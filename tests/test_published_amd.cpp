// Published kernel figures of GPUs attnsim has no measurements of (measurements/data/amd): read with
// their sources, each predicted as `predict --kernel` would, and refused with the place of a bad cell.
#include <gtest/gtest.h>

#include <set>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "reports/ValidationReport.hpp"
#include "study/PublishedKernels.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

const std::string kPublishedAmd = std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/amd/published.csv";

TEST(PublishedAmdKernels, EveryCommittedAmdFigureNamesItsSourceAndIsPredictedOnCatalogDefaults) {
  const Catalog& c = defaultCatalog();
  const auto points = readPublishedKernels(c, kPublishedAmd);
  ASSERT_GE(points.size(), 30U);
  std::set<std::string> gpus;
  for (const auto& p : points) {
    EXPECT_EQ(p.source_url.rfind("https://github.com/", 0), 0U) << p.id;
    EXPECT_FALSE(p.setup.empty()) << p.id;
    gpus.insert(p.row.hardware);
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"mi300x", "mi355x"}));
  const auto checks = checkPublishedKernels(c, points);
  ASSERT_EQ(checks.size(), points.size());
  for (const auto& k : checks) {
    EXPECT_GT(k.predicted_us, 0) << k.point->id;
    // Nothing on these GPUs is calibrated: the prediction says so and keeps the default band.
    EXPECT_EQ(k.provenance, Provenance::Default) << k.point->id;
    EXPECT_DOUBLE_EQ(k.band, kDefaultBand) << k.point->id;
  }
  // A longer context never costs less, in the published figures' model as in the kernel.
  const auto at = [&](const std::string& id) {
    for (const auto& k : checks) {
      if (k.point->id == id) return k.predicted_us;
    }
    ADD_FAILURE() << id;
    return 0.0;
  };
  EXPECT_LT(at("aiter3003-mi35x-b1-ctx1024"), at("aiter3003-mi35x-b1-ctx70000"));
  const std::string md = publishedKernelsMarkdown(checks);
  EXPECT_NE(md.find("| mi300x | aiter-mla | decode | 10 |"), std::string::npos) << md;
  EXPECT_NE(md.find("https://github.com/ROCm/aiter/pull/2039"), std::string::npos);
  EXPECT_EQ(publishedKernelsJson(checks).size(), points.size());
}

// The error a published file with this one data row gives.
std::string publishedRowError(const std::string& row) {
  const OverlayDir dir;
  const auto path = (dir.path() / "published.csv").string();
  dir.write("published.csv",
            "id,gpu,kernel,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,q_dtype,page_size,"
            "published_us,date,source_url,source_locator,setup\n" +
                row + "\n");
  try {
    (void)readPublishedKernels(defaultCatalog(), path);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

TEST(PublishedAmdKernels, ABadCellIsRefusedNamingTheLineTheColumnAndTheAllowedValues) {
  const std::string ok = "x,mi300x,aiter-mla,asm,decode,1,1,64,128,1,576,0,bf16,,1,15,,https://github.com/a/b,t,s";
  EXPECT_EQ(publishedRowError(ok), "");
  const std::string gpu = publishedRowError("x,mi300,aiter-mla,asm,decode,1,1,64,128,1,576,0,bf16,,1,15,,u,t,s");
  EXPECT_NE(gpu.find("published.csv:2:2"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("did you mean"), std::string::npos) << gpu;
  const std::string phase = publishedRowError("x,mi300x,aiter-mla,asm,decod,1,1,64,128,1,576,0,bf16,,1,15,,u,t,s");
  EXPECT_NE(phase.find("prefill, extend, decode, verify"), std::string::npos) << phase;
  const std::string time = publishedRowError("x,mi300x,aiter-mla,asm,decode,1,1,64,128,1,576,0,bf16,,1,0,,u,t,s");
  EXPECT_NE(time.find("published_us"), std::string::npos) << time;
  const std::string source = publishedRowError("x,mi300x,aiter-mla,asm,decode,1,1,64,128,1,576,0,bf16,,1,15,,,t,s");
  EXPECT_NE(source.find("names its source"), std::string::npos) << source;
}

TEST(PublishedAmdKernels, ReportValidationChecksAPublishedFileAndAnswersItInJson) {
  const OverlayDir dir;
  const std::string db = (dir.path() / "v.db").string();
  const std::string root = ATTNSIM_SOURCE_DIR;
  ASSERT_EQ(runAttnsim("measurements import " + root + "/measurements/data/h100/measurements.csv --db " + db).exit_code,
            0);
  const CommandResult r = runAttnsim("--json report validation --db " + db + " --out " + (dir.path() / "out").string() +
                                     " --published " + kPublishedAmd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"published_kernels\""), std::string::npos) << r.output;
  const CommandResult bad = runAttnsim("report validation --db " + db + " --out " + (dir.path() / "out").string() +
                                       " --published " + (dir.path() / "missing.csv").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

}  // namespace
}  // namespace attnsim::test
