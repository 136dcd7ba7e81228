// unit: the engines' Triton split rules (vLLM unified attention's segments, vLLM TRITON_MLA's fixed
// splits, SGLang's get_num_kv_splits_triton), the held-out rule for families measured only paged,
// mixed-batch rows, and that `attnsim calibrate` on the committed CSVs reproduces the committed
// calibration YAMLs (held-out statistics included).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "catalog/Catalog.hpp"
#include "cost/AttentionCostSplits.hpp"
#include "study/CalibrationRun.hpp"
#include "study/Measurements.hpp"
#include "study/OperatorCalibration.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

AttentionShape gqa(int heads, int kv_heads) {
  AttentionShape s;
  s.num_heads = heads;
  s.num_kv_heads = kv_heads;
  s.d_qk = s.d_v = 128;
  s.kv_token_width = 256;
  return s;
}

int splitsOf(const std::string& kernel, const AttentionShape& s, RequestGroup g, Phase phase = Phase::Decode) {
  const KernelModel k = resolveKernel(defaultCatalog().kernel(kernel), defaultCatalog().hardware("h100-sxm"), phase);
  return attention_cost::ruledSplits(k, s, std::span(&g, 1), 132);
}

TEST(EngineKernels, VllmUnifiedTakesSixteenSegmentsUpToTheThreeDThreshold) {
  // seq_threshold_3D = 128 // 8 KV heads = 16 sequences.
  EXPECT_EQ(splitsOf("triton-unified", gqa(32, 8), {16, 1, 4096, 1}), 16);
  EXPECT_EQ(splitsOf("triton-unified", gqa(32, 8), {17, 1, 4096, 1}), 1);
  EXPECT_EQ(splitsOf("triton-unified", gqa(32, 2), {64, 1, 4096, 1}), 16) << "128 // 2 = 64";
  EXPECT_EQ(splitsOf("triton-unified", gqa(32, 8), {4, 4, 4096, 1}), 1) << "a query longer than one: 2D";
}

TEST(EngineKernels, SglangSplitsFollowTheDeviceAndTheBatch) {
  // H100 (132 SMs), 4096 tokens: 132 * log2(64) = 792 programs wanted over batch * 8 head blocks.
  EXPECT_EQ(splitsOf("triton-sglang", gqa(32, 8), {8, 1, 4096, 1}), 8);
  EXPECT_EQ(splitsOf("triton-sglang", gqa(32, 8), {32, 1, 4096, 1}), 4);
  EXPECT_EQ(splitsOf("triton-sglang", gqa(32, 8), {64, 1, 4096, 1}), 2);
  EXPECT_EQ(splitsOf("triton-sglang", gqa(32, 8), {1, 1, 512, 1}), 8) << "capped at max_kv_splits";
}

TEST(EngineKernels, TritonMlaAlwaysSplitsFourWays) {
  EXPECT_EQ(splitsOf("triton-mla", gqa(128, 1), {1, 1, 512, 1}), 4);
  EXPECT_EQ(splitsOf("triton-mla", gqa(128, 1), {64, 1, 32768, 1}), 4);
  EXPECT_EQ(splitsOf("fa2", gqa(32, 8), {8, 1, 4096, 1}), 0) << "families without a rule search";
}

const std::string kEngineKernelsHeader =
    "device,date,torch,triton,cuda,kind,impl,phase,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,dtype,"
    "median_us,p20_us,p80_us,runs,flops,bytes,page_size,note\n";

TEST(EngineKernels, PagedOnlyFamiliesHoldOutByContextAndMixedRowsAreTestPoints) {
  const std::string text =
      kEngineKernelsHeader +
      "NVIDIA H100 80GB HBM3,2026-11-22,t,t,c,attention,vllm_triton_unified,decode,8,1,4096,32,8,128,0,"
      "bf16,100,99,101,100,1,1,16,x\n"
      "NVIDIA H100 80GB HBM3,2026-11-22,t,t,c,attention,vllm_triton_unified,decode,8,1,8192,32,8,128,0,"
      "fp8_e4m3,180,179,181,100,1,1,16,x\n"
      "NVIDIA H100 80GB HBM3,2026-11-22,t,t,c,attention,vllm_triton_unified,mixed,9,512,4096,32,8,128,1,"
      "bf16,238,237,239,100,1,1,16,x\n";
  const auto rows = parseMeasurementCsv(text, "engine.csv", defaultCatalog());
  ASSERT_EQ(rows.size(), 3U);
  const HoldoutRule rule(rows, {1024, 8192});
  EXPECT_FALSE(rule.heldOut(rows[0])) << "no contiguous rows of this family: its paged rows are fitted";
  EXPECT_TRUE(rule.heldOut(rows[1]));
  EXPECT_TRUE(rule.heldOut(rows[2]));
  EXPECT_EQ(phaseClassOf(rows[2]), "extend");
  const KernelModel base = measuredKernelModel(defaultCatalog(), "triton-unified", "h100-sxm", Phase::Decode);
  const FitPoint fp8 = fitPointFrom(rows[1], &base);
  EXPECT_EQ(fp8.shape.kv_elem_bytes, 1);
  EXPECT_TRUE(fp8.shape.kv_quantized);
  const FitPoint mixed = fitPointFrom(rows[2], &base);
  EXPECT_EQ(mixed.group.q_len, 512);
  EXPECT_EQ(mixed.decodes.count, 8);
  EXPECT_EQ(mixed.decodes.context, 4096);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The date and the source line (which names the CSVs by the paths they were imported from) aside.
std::string withoutCreated(std::string text) {
  for (const char* key : {"\ncreated: ", "\nsource: "}) {
    const auto at = text.find(key);
    if (at != std::string::npos) text.erase(at, text.find('\n', at + 1) - at);
  }
  return text;
}

// The committed hardware/calibrations are what `attnsim calibrate --export` writes from the committed
// CSVs (docs/MEASUREMENTS.md "Refitting the shipped calibrations"): refitting gives the same text,
// the date aside. ATTNSIM_UPDATE_GOLDEN=1 rewrites them.
TEST(EngineKernels, CalibrateReproducesTheCommittedYaml) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  std::vector<std::string> files;
  for (const char* device : {"h100", "h200"}) {
    for (const char* f : {"measurements.csv", "engine_kernels.csv", "engine_kernels_mixed.csv", "vllm_flex.csv"}) {
      files.push_back(root + "/measurements/data/" + device + "/" + f);
    }
  }
  // The attention families the engines' own calls measure: AIConfigurator's H100 and B200 rows.
  for (const char* gpu : {"h100_sxm", "b200_sxm"}) files.push_back(root + "/measurements/data/aic/" + gpu + ".csv.gz");
  OverlayDir dir;
  const std::string db = (dir.path() / "fit.db").string();
  importMeasurements(files, db, defaultCatalog());
  Store store(db);
  const CalibrationOptions options{"", "1024,8192", {{1024, 8192}}};
  const Catalog& c = defaultCatalog();
  const auto families = calibrateFamilies(store, c, calibrationRows(store, c, ""), options);
  const auto overheads = calibrateOverheads(store, c, options);
  auto yaml = calibrationYaml(families, overheads);
  ASSERT_EQ(yaml.size(), 3U);
  // The gemm and allreduce sections: AIConfigurator's tables of the H100 and B200, fitted apart
  // (`attnsim calibrate --only gemm,allreduce`, docs/MEASUREMENTS.md).
  const std::string aic_db = (dir.path() / "aic.db").string();
  importMeasurements({root + "/measurements/data/aic/h100_sxm.csv.gz", root + "/measurements/data/aic/b200_sxm.csv.gz"},
                     aic_db, defaultCatalog());
  addOperatorSections(yaml, calibrateOperators(c, Store(aic_db).measurements(), ""), "aic");
  ASSERT_EQ(yaml.size(), 3U);
  for (const auto& [hardware, text] : yaml) {
    std::string committed = root;
    committed.append("/hardware/calibrations/").append(hardware).append(".yaml");
    // The source lines (the file's, and a proxy fit's own) name the CSVs from the repository's root.
    std::string relative = text;
    for (auto at = relative.find(root + "/"); at != std::string::npos; at = relative.find(root + "/"))
      relative.erase(at, root.size() + 1);
    if (std::getenv("ATTNSIM_UPDATE_GOLDEN") != nullptr) std::ofstream(committed) << relative;
    EXPECT_EQ(withoutCreated(relative), withoutCreated(readFile(committed))) << hardware;
    EXPECT_NE(text.find("heldout: {mape: "), std::string::npos) << hardware;
  }
}

}  // namespace
}  // namespace attnsim::test
