// The step's operators beside attention measured (issue 27): GEMM efficiency surfaces and the engines'
// custom all-reduces fitted to AIConfigurator's tables, carried to devices of the same architecture,
// and predicted one call at a time (`predict --gemm`, `predict --allreduce`).
#include <gtest/gtest.h>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "cost/Collective.hpp"
#include "cost/StepModel.hpp"
#include "simulator/Evaluation.hpp"
#include "study/Measurements.hpp"
#include "study/OperatorCalibration.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// A 2 × 2 × 2 surface of one efficiency everywhere, resolved on a device of 1e6 FLOP/µs and 1e3 B/µs.
GemmSurface flatSurface(double efficiency) {
  GemmSurface s;
  s.dtype = "bf16";
  s.log2_m = {0, 10};  // m 1 and 1024
  s.log2_n = {10, 12};
  s.log2_k = {10, 12};
  s.log_efficiency.assign(8, std::log(efficiency));
  s.resolve({.flops_per_us = 1e6, .bytes_per_us = 1e3});
  return s;
}

TEST(GemmSurface, AtANodeTheTimeIsItsOwnAndBetweenNodesItLiesBetweenThem) {
  const GemmSurface s = flatSurface(0.5);
  for (double m : {1.0, 1024.0}) {
    for (double n : {1024.0, 4096.0}) EXPECT_DOUBLE_EQ(s.us(m, n, 4096), s.roofline.us(m, n, 4096) / 0.5);
  }
  for (double m : {2.0, 33.0, 700.0}) {
    EXPECT_GT(s.us(m, 4096, 4096), s.us(1, 4096, 4096)) << m;
    EXPECT_LT(s.us(m, 4096, 4096), s.us(1024, 4096, 4096)) << m;
  }
}

TEST(GemmSurface, BeyondTheGridTheTimeScalesWithTheRoofline) {
  const GemmSurface s = flatSurface(0.5);
  EXPECT_DOUBLE_EQ(s.us(8192, 4096, 4096) / s.us(1024, 4096, 4096),
                   s.roofline.us(8192, 4096, 4096) / s.roofline.us(1024, 4096, 4096));
}

TEST(GemmSurface, AMeasuredOutlierDoesNotMakeMoreRowsFaster) {
  GemmSurface s;
  s.dtype = "bf16";
  s.log2_m = {0, 1, 2, 3};
  s.log2_n = {12};
  s.log2_k = {12};
  // m = 2 measured slower than m = 4 and 8 (the tables' noise).
  s.log_efficiency = {std::log(0.5), std::log(0.2), std::log(1.5), std::log(2.5)};
  s.resolve({.flops_per_us = 1e6, .bytes_per_us = 1e3});
  double previous = 0;
  for (double m = 1; m <= 8; m += 0.25) {
    EXPECT_GE(s.us(m, 4096, 4096), previous - 1e-12) << m;
    previous = s.us(m, 4096, 4096);
  }
}

TEST(OperatorFits, TheH100AndB200CarryMeasuredSurfacesAndSameArchitectureDevicesTakeThem) {
  const Catalog& c = defaultCatalog();
  for (const char* dtype : {"bf16", "fp8", "fp8_block"}) {
    const GemmSurface* own = c.hardware("h100-sxm").gemmSurface(dtype);
    ASSERT_NE(own, nullptr) << dtype;
    EXPECT_TRUE(own->transferred_from.empty());
    EXPECT_EQ(bandOf(*own).basis, BandBasis::HeldOut);
    const GemmSurface* h200 = c.hardware("h200").gemmSurface(dtype);
    ASSERT_NE(h200, nullptr) << dtype;
    EXPECT_EQ(h200->transferred_from, "h100-sxm");
    EXPECT_GE(bandOf(*h200).band, kNonAttentionDefaultBand);
    EXPECT_NE(h200->source.find("measured on h100-sxm"), std::string::npos) << h200->source;
  }
  EXPECT_EQ(c.hardware("gb200").gemmSurface("nvfp4")->transferred_from, "b200");
  // The H100 has no FP4 peak: no nvfp4 surface; other architectures keep the roofline defaults.
  EXPECT_EQ(c.hardware("h100-sxm").gemmSurface("nvfp4"), nullptr);
  EXPECT_EQ(c.hardware("mi300x").gemmSurface("bf16"), nullptr);
  EXPECT_EQ(c.hardware("a100-sxm-80g").gemmSurface("bf16"), nullptr);
}

TEST(OperatorFits, AnAllReduceTransfersOnlyOverTheSameLink) {
  const Catalog& c = defaultCatalog();
  const auto& h100 = *c.hardware("h100-sxm").interconnect_link;
  ASSERT_EQ(h100.all_reduces.size(), 2U);
  EXPECT_EQ(h100.allReduceFor("sglang")->engine, "sglang");
  EXPECT_EQ(h100.allReduceFor("vllm")->engine, "vllm");
  EXPECT_EQ(h100.allReduceFor("rtp-llm"), h100.all_reduces.data());  // unmeasured engine: the first
  EXPECT_EQ(c.hardware("h200").interconnect_link->allReduceFor("vllm")->transferred_from, "h100-sxm");
  // The H100 PCIe's link is not the SXM's NVSwitch: the ring model on its own figures.
  ASSERT_TRUE(c.hardware("h100-pcie").interconnect_link);
  EXPECT_TRUE(c.hardware("h100-pcie").interconnect_link->all_reduces.empty());
  // Small messages cost the one-shot latency, large ones stream at the two-shot bandwidth.
  const AllReduceFit& f = *h100.allReduceFor("vllm");
  EXPECT_NEAR(allReduceUs(h100, 256, 8, "vllm"), f.one_shot_latency_us, 0.1);
  EXPECT_NEAR(allReduceUs(h100, 1e9, 8, "vllm"), f.two_shot_latency_us + 1.75e9 / (f.two_shot_gbps * 1e3), 1e-6);
}

TEST(OperatorFits, TheFitsBeatTheRooflineDefaultsOnHeldOutCalls) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  OverlayDir dir;
  const std::string db = (dir.path() / "aic.db").string();
  importMeasurements({root + "/measurements/data/aic/h100_sxm.csv.gz"}, db, defaultCatalog());
  const OperatorCalibration ops = calibrateOperators(defaultCatalog(), Store(db).measurements(), "h100-sxm");
  int checked = 0;
  for (const auto& e : ops.heldOutErrors()) {
    // The fitted grid's engine (vLLM's fp8_block rows are eager); MoE has tests of its own.
    if (e.engine != "sglang" || e.op.rfind("moe:", 0) == 0) continue;
    EXPECT_GE(e.points, 20) << e.op;
    EXPECT_LT(e.mape, e.default_mape) << e.op;
    ++checked;
  }
  EXPECT_EQ(checked, 4);  // bf16, fp8, fp8_block GEMMs and the all-reduce
}

TEST(OperatorFits, ADeepSeekStepRunsItsProjectionsOnTheBlockScaledFp8Surface) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const LinearKernels k = resolveLinearKernels(c, hw, c.model("deepseek-v3"));
  ASSERT_NE(k.gemm_weights, nullptr);
  EXPECT_EQ(k.gemm_weights->dtype, "fp8_block");
  EXPECT_EQ(k.gemm_bf16->dtype, "bf16");
  EXPECT_EQ(k.gemm.provenance, Provenance::Measured);
  const LinearKernels llama = resolveLinearKernels(c, hw, c.model("llama-3.1-8b"));
  EXPECT_EQ(llama.gemm_weights, llama.gemm_bf16);
}

// The catalog error an MI300X calibration file with this `gemm:` section gives ("" when it loads).
std::string gemmSectionError(const std::string& gemm) {
  OverlayDir overlay;
  overlay.write("hardware/calibrations/mi300x.yaml",
                "hardware: mi300x\nsource: \"test\"\ncreated: \"2026-11-27\"\ngemm:\n" + gemm + "kernels: {}\n");
  try {
    (void)overlay.load();
  } catch (const CatalogError& e) {
    return e.what();
  }
  return {};
}

TEST(OperatorFits, ASurfaceWhoseValuesDoNotFillItsGridIsACatalogErrorNamingTheKey) {
  const std::string short_grid =
      gemmSectionError("  bf16: {m: [1, 2], n: [64], k: [64], efficiency: [0.5], points: 1}\n");
  EXPECT_NE(short_grid.find("mi300x.yaml:"), std::string::npos) << short_grid;
  EXPECT_NE(short_grid.find("efficiency"), std::string::npos) << short_grid;
  EXPECT_NE(short_grid.find("2 × 1 × 1"), std::string::npos) << short_grid;
  const std::string bad_dtype = gemmSectionError("  int3: {m: [1], n: [64], k: [64], efficiency: [0.5], points: 1}\n");
  EXPECT_NE(bad_dtype.find("fp8_block"), std::string::npos) << bad_dtype;
}

TEST(WeightDtype, AScenarioOverridesTheCheckpointsWeightDtypeForItsGemmsAndMemory) {
  Scenario s = engineScenario("vllm", "h100-sxm", "llama-3.1-70b");
  s.workload = Workload::uniform(Phase::Decode, 64, 1, 4096);
  s.tp = 4;
  const ScenarioPrediction bf16 = predictScenario(defaultCatalog(), s);
  s.weight_dtype = "fp8";
  const ScenarioPrediction fp8 = predictScenario(defaultCatalog(), s);
  EXPECT_EQ(fp8.model->weight_dtype, "fp8");
  EXPECT_DOUBLE_EQ(fp8.model->parameterBytes(), bf16.model->parameterBytes() / 2);
  // Decode GEMMs stream the weights: half the bytes, less time, on the fp8 surface.
  EXPECT_LT(fp8.prediction.eager.by_category[1], 0.8 * bf16.prediction.eager.by_category[1]);
  EXPECT_DOUBLE_EQ(fp8.prediction.attention_us, bf16.prediction.attention_us);
  s.weight_dtype = "fp9";
  EXPECT_THROW((void)predictScenario(defaultCatalog(), s), UsageError);
}

TEST(PredictOperator, OneGemmAndOneAllReduceWithTheirProvenance) {
  const CommandResult gemm = runAttnsim("--json predict --hardware h100-sxm --gemm 4096,4096,4096");
  ASSERT_EQ(gemm.exit_code, 0) << gemm.output;
  EXPECT_NE(gemm.output.find("\"provenance\": \"measured fit\""), std::string::npos) << gemm.output;
  EXPECT_NE(gemm.output.find("\"band_basis\": \"heldout\""), std::string::npos) << gemm.output;
  const CommandResult ar = runAttnsim("predict --hardware mi300x --allreduce 1048576 --tp 8");
  ASSERT_EQ(ar.exit_code, 0) << ar.output;
  EXPECT_NE(ar.output.find("catalog default"), std::string::npos) << ar.output;
  const CommandResult bad = runAttnsim("predict --hardware h100-sxm --gemm 4096,4096 --model llama-3.1-8b");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --gemm 8,8,8 --gemm-dtype nvfp4").exit_code, 2);
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --allreduce 1024").exit_code, 2);  // --tp 1
}

}  // namespace
}  // namespace attnsim::test
