// unit: number formats and KV layouts are converted from text once, with every engine spelling.
#include <gtest/gtest.h>

#include "core/Error.hpp"
#include "core/Formats.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

TEST(Formats, EveryEngineSpellingOfAKvCacheDtypeNamesOneFormat) {
  EXPECT_EQ(parseKvCacheDtype("fp8"), KvCacheDtype::FP8_E4M3);
  EXPECT_EQ(parseKvCacheDtype("fp8_e4m3"), KvCacheDtype::FP8_E4M3);
  EXPECT_EQ(parseKvCacheDtype("fp8_inc"), KvCacheDtype::FP8_E4M3);
  EXPECT_EQ(parseKvCacheDtype("bfloat16"), KvCacheDtype::BF16);
  EXPECT_EQ(parseKvCacheDtype("bf16"), KvCacheDtype::BF16);
  EXPECT_EQ(parseKvCacheDtype("nvfp4"), KvCacheDtype::FP4_E2M1);
  EXPECT_EQ(parseKvCacheDtype("fp8_ds_mla"), KvCacheDtype::FP8_DS_MLA);
  EXPECT_EQ(parseKvCacheDtype("auto"), KvCacheDtype::Auto);
  EXPECT_EQ(kvCacheDtypeName(KvCacheDtype::FP8_E4M3), "fp8_e4m3");
}

TEST(Formats, AnUnknownSpellingIsAUsageErrorListingTheKnownOnes) {
  try {
    (void)parseKvCacheDtype("fp9");
    FAIL() << "fp9 parsed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_e4m3"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parseDType("fp64"), UsageError);
  EXPECT_THROW((void)parsePaging("paged"), UsageError);
}

TEST(Formats, KvElementBytesCountBlockScales) {
  EXPECT_DOUBLE_EQ(kvElementBytes(KvCacheDtype::Auto, DType::BF16), 2.0);
  EXPECT_DOUBLE_EQ(kvElementBytes(KvCacheDtype::Auto, DType::FP32), 4.0);
  EXPECT_DOUBLE_EQ(kvElementBytes(KvCacheDtype::FP8_E5M2, DType::BF16), 1.0);
  EXPECT_DOUBLE_EQ(kvElementBytes(KvCacheDtype::INT8, DType::BF16), 1.0);
  EXPECT_DOUBLE_EQ(kvElementBytes(KvCacheDtype::FP4_E2M1, DType::BF16), 0.5 + 1.0 / 16);
  // DeepSeek's fp8_ds_mla: 512 fp8 latent values, 4 fp32 scales and 64 bf16 rope values per token.
  EXPECT_DOUBLE_EQ(kvElementBytes(KvCacheDtype::FP8_DS_MLA, DType::BF16) * 576, 512 + 4 * 4 + 64 * 2);
}

TEST(Formats, NamesRoundTrip) {
  for (const DType d : {DType::FP32, DType::FP16, DType::BF16}) EXPECT_EQ(parseDType(dtypeName(d)), d);
  for (const Paging p : {Paging::Native, Paging::Emulated, Paging::Contiguous}) {
    EXPECT_EQ(parsePaging(pagingName(p)), p);
  }
}

TEST(Formats, AnEngineAcceptingAKvSpellingNoStageKnowsIsACatalogError) {
  OverlayDir overlay;
  std::string policy = embeddedFile("backends/rtp-llm/engine.yaml");
  const auto at = policy.find("kv_dtypes: [auto, fp8, int8]");
  ASSERT_NE(at, std::string::npos);
  policy.replace(at, std::string("kv_dtypes: [auto, fp8, int8]").size(), "kv_dtypes: [auto, fp8, int4]");
  overlay.write("backends/rtp-llm/engine.yaml", policy);
  try {
    (void)overlay.load();
    FAIL() << "an unknown KV spelling loaded";
  } catch (const CatalogError& e) {
    EXPECT_EQ(e.keyPath(), "kv_dtypes");
    EXPECT_NE(std::string(e.what()).find("'int4'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnsim::test
