// MoE as a measured kernel family (issue 27): the fused-MoE call fitted per (device, engine, dtype) to
// AIConfigurator's tables, held out by shape class and token count, carried to devices of the same
// architecture, used by the step model for the routed experts, and predicted one call at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "cost/OperatorSources.hpp"
#include "cost/StepModel.hpp"
#include "reports/OperatorReport.hpp"
#include "study/Measurements.hpp"
#include "study/OperatorCalibration.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

std::size_t opAt(StepOp op) { return static_cast<std::size_t>(op); }

// Tokens per expert 1 and 16 at efficiencies 0.25 and 1, one inter width; 1e6 FLOP/µs, 1e3 B/µs.
MoeFit twoNodeFit() {
  MoeFit f;
  f.engine = "sglang", f.dtype = "bf16", f.kernel = "k";
  f.fixed_us = 10;
  f.log2_tokens_per_expert = {0, 4};
  f.log2_inter = {10, 11};
  f.log_efficiency = {std::log(0.25), std::log(0.25), std::log(1.0), std::log(1.0)};
  f.roofline = {.flops_per_us = 1e6, .bytes_per_us = 1e3};
  return f;
}

TEST(MoeFit, BalancedRoutingTouchesTheSmallerOfTheExpertsAndTheAssignments) {
  EXPECT_DOUBLE_EQ((MoeCall{4, 1024, 1024, 256, 32}.activeExperts()), 32);
  EXPECT_DOUBLE_EQ((MoeCall{64, 1024, 1024, 256, 512}.activeExperts()), 256);
  EXPECT_DOUBLE_EQ((MoeCall{64, 1024, 1024, 256, 512}.tokensPerExpert()), 2);
  EXPECT_DOUBLE_EQ((MoeCall{64, 1024, 1024, 256, 512, 100}.activeExperts()), 100);  // the step's own routing
}

// An expert without a gate (Nemotron-H's relu²) has two weight matrices, not three: two thirds of the
// FLOPs and of the weights a call reads.
TEST(MoeFit, AnExpertWithoutAGateHasTwoThirdsOfTheRoofline) {
  const GemmRoofline rates{.flops_per_us = 1e6, .bytes_per_us = 1e5, .a_bytes = 2, .b_bytes = 2};
  MoeCall compute{16384, 4096, 1024, 8, 32768};
  MoeCall memory{1, 4096, 1024, 8, 2};
  const double gated_compute = moeRooflineUs(rates, compute);
  EXPECT_DOUBLE_EQ(gated_compute, 6 * 32768.0 * 4096 * 1024 / 1e6);
  compute.matrices = 2;
  EXPECT_DOUBLE_EQ(moeRooflineUs(rates, compute), gated_compute * 2 / 3);
  const double gated_memory = moeRooflineUs(rates, memory);
  memory.matrices = 2;
  // Two experts' third matrix in bf16 less, and the two assignments' third inter-wide activation.
  EXPECT_DOUBLE_EQ(gated_memory - moeRooflineUs(rates, memory), (2 * 4096.0 * 1024 * 2 + 2 * 1024.0 * 2) / 1e5);
}

// The grid's width is the expert's first GEMM's output width over 2: gate and up fused, 2 · inter, with a gate,
// inter alone without one (FlashInfer's trtllm-gen runs that GEMM intermediateSizeFactor · inter wide). A
// gate-less expert of width 2048 sits where a gated one of 1024 does, and takes that node's efficiency.
TEST(MoeFit, AnExpertWithoutAGateSitsOnTheWidthAxisAtHalfItsWidth) {
  MoeFit f = twoNodeFit();
  f.log_efficiency = {std::log(0.25), std::log(0.5), std::log(1.0), std::log(1.0)};  // width 1024: 0.25, 2048: 0.5
  const MoeCall gated{8, 1024, 2048, 8, 8};
  MoeCall gate_less = gated;
  gate_less.matrices = 2;
  EXPECT_DOUBLE_EQ(gated.gridWidth(), 2048);
  EXPECT_DOUBLE_EQ(gate_less.gridWidth(), 1024);
  EXPECT_NEAR(f.us(gated), 10 + moeRooflineUs(f.roofline, gated) / 0.5, 1e-9);
  EXPECT_NEAR(f.us(gate_less), 10 + moeRooflineUs(f.roofline, gate_less) / 0.25, 1e-9);
}

TEST(MoeFit, TheTimeIsTheFixedTimePlusTheRooflineOverTheEfficiencyAtItsTokensPerExpert) {
  const MoeFit f = twoNodeFit();
  const MoeCall one{8, 1024, 1024, 8, 8};  // one token per expert: efficiency 0.25
  EXPECT_NEAR(f.us(one), 10 + moeRooflineUs(f.roofline, one) / 0.25, 1e-9);
  const MoeCall sixteen{128, 1024, 1024, 8, 128};  // 16 per expert: efficiency 1
  EXPECT_NEAR(f.us(sixteen), 10 + moeRooflineUs(f.roofline, sixteen), 1e-9);
  const MoeCall four{32, 1024, 1024, 8, 32};  // halfway in log2: the geometric mean, 0.5
  EXPECT_NEAR(f.us(four), 10 + moeRooflineUs(f.roofline, four) / 0.5, 1e-9);
  // Reading the experts' weights once serves more tokens: the roofline's bytes do not grow with them.
  EXPECT_LT(moeRooflineUs(f.roofline, sixteen), 2 * moeRooflineUs(f.roofline, one));
}

// An engine that stores its experts padded (hidden and width rounded up to a multiple) runs the padded
// GEMMs: the call costs what the padded shape costs, and more than the unpadded one.
TEST(MoeFit, PaddedExpertsCostWhatThePaddedShapeCosts) {
  MoeFit f = twoNodeFit();
  const MoeCall gpt_oss{64, 2880, 360, 128, 256};
  const double unpadded = f.us(gpt_oss);
  f.pad_to = 256;
  EXPECT_DOUBLE_EQ(f.padded(gpt_oss).hidden, 3072);
  EXPECT_DOUBLE_EQ(f.padded(gpt_oss).inter, 512);
  EXPECT_DOUBLE_EQ(f.us(gpt_oss), f.us(MoeCall{64, 3072, 512, 128, 256}));
  EXPECT_GT(f.us(gpt_oss), unpadded * 1.3);
  f.pad_to = 1;
  EXPECT_DOUBLE_EQ(f.us(gpt_oss), unpadded);
}

// FlashInfer's trtllm-gen MXFP4 experts are padded to 256 on Blackwell by both engines (the grouped-gemm
// family's weight_padding): the B200 mxfp4 fits carry it, its other dtypes and the H100's mxfp4 do not.
TEST(MoeFits, TheB200Mxfp4FitsPadTheirExpertsTo256AndNoOtherFitDoes) {
  const Catalog& c = defaultCatalog();
  const KernelFamily& grouped = c.kernel("grouped-gemm");
  EXPECT_EQ(grouped.weightPaddingOf("vllm", "mxfp4", "blackwell"), 256);
  EXPECT_EQ(grouped.weightPaddingOf("sglang", "mxfp4", "hopper"), 1);
  EXPECT_EQ(grouped.weightPaddingOf("sglang", "nvfp4", "blackwell"), 1);
  for (const char* engine : {"sglang", "vllm"}) {
    const MoeFit* b200 = c.hardware("b200").moeFit(engine, "mxfp4");
    ASSERT_NE(b200, nullptr) << engine;
    EXPECT_EQ(b200->pad_to, 256) << engine;
    const MoeFit* h100 = c.hardware("h100-sxm").moeFit(engine, "mxfp4");
    ASSERT_NE(h100, nullptr) << engine;
    EXPECT_EQ(h100->pad_to, 1) << engine;
    for (const char* dtype : {"bf16", "fp8_block", "nvfp4"}) {
      const MoeFit* other = c.hardware("b200").moeFit(engine, dtype);
      ASSERT_NE(other, nullptr) << dtype;
      EXPECT_EQ(other->pad_to, 1) << dtype;
    }
  }
}

// The evidence on the B200's gpt-oss rows: where every expert's weights are read once per call (128 tokens,
// 128 experts, top-4), the time grows with the padded weights at one rate: counted padded, the steps from
// width 360 to 720 and from 720 to 1440 per rank take the same time per extra byte; counted unpadded, the
// first would read its extra bytes 45% faster than the second.
TEST(MoeFits, GptOssRowsOnTheB200GrowWithThePaddedWeights) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  const auto rows = readMeasurementCsv(root + "/measurements/data/aic/b200_sxm.csv.gz", defaultCatalog());
  std::map<std::int64_t, double> by_inter;  // vLLM's calls
  for (const auto& r : rows) {
    if (r.kind == "moe" && r.dtype == "mxfp4" && r.engine == "vllm" && r.heads == 128 && r.batch == 128)
      by_inter[r.kv_len] = r.median_us;
  }
  ASSERT_EQ(by_inter.size(), 4U);  // widths 360, 720, 1440, 2880 per rank
  // µs per extra weight element (hidden × width) from the calls at width `lo` to those at `hi`.
  auto us_per_weight = [&](std::int64_t lo, std::int64_t hi, double multiple) {
    const auto pad = [&](double x) { return std::ceil(x / multiple) * multiple; };
    const double extra = pad(2880) * (pad(static_cast<double>(hi)) - pad(static_cast<double>(lo)));
    return (by_inter.at(hi) - by_inter.at(lo)) / extra;
  };
  EXPECT_NEAR(us_per_weight(360, 720, 256) / us_per_weight(720, 1440, 256), 1, 0.05);
  EXPECT_LT(us_per_weight(360, 720, 1) / us_per_weight(720, 1440, 1), 0.75);
}

TEST(MoeFits, TheH100AndB200CarryMoeFitsAndSameArchitectureDevicesTakeThemAtTheirOwnPeaks) {
  const Catalog& c = defaultCatalog();
  for (const char* engine : {"sglang", "vllm"}) {
    const MoeFit* own = c.hardware("h100-sxm").moeFit(engine, "fp8_block");
    ASSERT_NE(own, nullptr) << engine;
    EXPECT_EQ(own->engine, engine);
    EXPECT_TRUE(own->transferred_from.empty());
    EXPECT_EQ(bandOf(*own).basis, BandBasis::HeldOut);
    const MoeFit* h200 = c.hardware("h200").moeFit(engine, "fp8_block");
    ASSERT_NE(h200, nullptr) << engine;
    EXPECT_EQ(h200->transferred_from, "h100-sxm");
    EXPECT_GE(bandOf(*h200).band, kNonAttentionDefaultBand);
    EXPECT_NE(h200->source.find("measured on h100-sxm"), std::string::npos) << h200->source;
    // Its own bandwidth: a memory-bound call (one token per expert) runs faster on the H200.
    const MoeCall decode{8, 7168, 256, 256, 64};
    EXPECT_LT(h200->us(decode), own->us(decode));
  }
  ASSERT_NE(c.hardware("gb200").moeFit("sglang", "nvfp4"), nullptr);
  EXPECT_EQ(c.hardware("gb200").moeFit("sglang", "nvfp4")->transferred_from, "b200");
  EXPECT_EQ(c.hardware("h100-sxm").moeFit("sglang", "nvfp4"), nullptr);  // no FP4 on Hopper
  EXPECT_EQ(c.hardware("mi300x").moeFit("sglang", "bf16"), nullptr);
  EXPECT_EQ(c.hardware("a100-sxm-80g").moeFit("vllm", "bf16"), nullptr);
  // gpt-oss's mxfp4 experts (w4a16) have their own fit on the H100, the engine's own kernel.
  ASSERT_NE(c.hardware("h100-sxm").moeFit("vllm", "mxfp4"), nullptr);
  EXPECT_EQ(c.hardware("h100-sxm").moeFit("vllm", "mxfp4")->engine, "vllm");
  // An engine the tables do not cover takes another engine's fit of the dtype.
  EXPECT_NE(c.hardware("h100-sxm").moeFit("rtp-llm", "bf16"), nullptr);
}

TEST(MoeFits, HeldOutShapeClassesAndTokenCountsBeatTheAnalyticalDefaultOnTheH100) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  OverlayDir dir;
  const std::string db = (dir.path() / "aic.db").string();
  importMeasurements({root + "/measurements/data/aic/h100_sxm.csv.gz"}, db, defaultCatalog());
  const OperatorCalibration ops = calibrateOperators(defaultCatalog(), Store(db).measurements(), "h100-sxm");
  int checked = 0;
  for (const auto& e : ops.heldOutErrors()) {
    if (e.op.rfind("moe:", 0) != 0) continue;
    EXPECT_GE(e.points, 100) << e.engine << " " << e.op;
    EXPECT_LT(e.mape, e.default_mape) << e.engine << " " << e.op;
    ++checked;
  }
  EXPECT_EQ(checked, 7);  // sglang bf16, fp8_block, mxfp4; vllm bf16, fp8, fp8_block, mxfp4
  // A held-out shape class is held out at every token count; a training class only at its held-out counts.
  std::set<std::string> held_classes, trained_classes;
  for (const auto& p : ops.points) {
    if (p.op.rfind("moe:", 0) != 0) continue;
    const std::string shape_class = p.engine + p.op + p.shape.substr(p.shape.find(' '));
    if (p.shape.rfind("tokens=1 ", 0) == 0) (p.held_out ? held_classes : trained_classes).insert(shape_class);
  }
  EXPECT_FALSE(held_classes.empty());
  EXPECT_FALSE(trained_classes.empty());
  for (const auto& p : ops.points) {
    if (p.op.rfind("moe:", 0) != 0) continue;
    const std::string shape_class = p.engine + p.op + p.shape.substr(p.shape.find(' '));
    if (held_classes.count(shape_class)) {
      EXPECT_TRUE(p.held_out) << p.shape;
    }
    if (p.shape.rfind("tokens=768 ", 0) == 0) {
      EXPECT_TRUE(p.held_out) << p.shape;
    }
  }
}

TEST(MoeFits, TheValidationReportListsEachMoeFitsHeldOutErrorAndTheShippedFitOnTheRows) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  OverlayDir dir;
  const std::string db = (dir.path() / "aic.db").string();
  importMeasurements({root + "/measurements/data/aic/h100_sxm.csv.gz"}, db, defaultCatalog());
  const std::string md = operatorValidationMarkdown(defaultCatalog(), Store(db).measurements());
  for (const char* row : {"| h100-sxm | sglang | moe:fp8_block | 970 |", "| h100-sxm | vllm | moe:fp8 | 784 |",
                          "| h100-sxm | sglang | moe:fp8_block | 1674 | own fit |"}) {
    EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
  }
  EXPECT_NE(md.find("MoE shape classes"), std::string::npos);  // the held-out rule is stated
}

TEST(MoeFits, AMoeStepCostsItsRoutedExpertsOnTheEnginesFitAndADenseModelHasNone) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const ModelSpec& model = c.model("deepseek-v3");
  const LinearKernels k = resolveLinearKernels(c, hw, model, "vllm");
  ASSERT_NE(k.moe, nullptr);
  EXPECT_EQ(k.moe->engine, "vllm");
  EXPECT_EQ(k.moe->dtype, "fp8_block");
  EXPECT_EQ(resolveLinearKernels(c, hw, model, "sglang").moe->engine, "sglang");
  EXPECT_EQ(resolveLinearKernels(c, hw, c.model("llama-3.1-8b"), "vllm").moe, nullptr);
  const Workload w = Workload::uniform(Phase::Decode, 64, 1, 4096);
  StepCosts fitted, analytical;
  costLinearOps(model, k, w, 8, 1, fitted);
  LinearKernels without = k;
  without.moe = nullptr;
  costLinearOps(model, without, w, 8, 1, analytical);
  // The routed experts' ops sum to the fitted call; the router GEMM and shared experts are not in it.
  const auto& m = *model.moe;
  const double touched = m.num_experts * (1 - std::pow(1 - double(m.experts_per_token) / m.num_experts, 64));
  const double call = k.moe->us({64, double(model.hidden_size), m.expert_intermediate_size / 8.0, double(m.num_experts),
                                 64.0 * m.experts_per_token, touched});
  double routed = 0;
  for (StepOp op : {StepOp::TopK, StepOp::ExpertsGateUp, StepOp::ExpertsAct, StepOp::ExpertsDown, StepOp::MoeCombine})
    routed += fitted.op_us[opAt(op)];
  EXPECT_NEAR(routed, call, 1e-9 * call);
  EXPECT_DOUBLE_EQ(fitted.op_us[opAt(StepOp::Router)], analytical.op_us[opAt(StepOp::Router)]);
  EXPECT_DOUBLE_EQ(fitted.op_us[opAt(StepOp::SharedGateUp)], analytical.op_us[opAt(StepOp::SharedGateUp)]);
  EXPECT_NE(fitted.op_us[opAt(StepOp::ExpertsGateUp)], analytical.op_us[opAt(StepOp::ExpertsGateUp)]);
}

TEST(MoeFits, TheOperatorSourcesNameTheRoutedExpertsFitOrTheDefault) {
  const Catalog& c = defaultCatalog();
  auto routed = [&](const char* hw) {
    for (const auto& s : stepOperatorSources(c, c.hardware(hw), c.model("deepseek-v3"), "sglang", 8)) {
      if (s.what.rfind("routed experts", 0) == 0) return s;
    }
    return OperatorSource{};
  };
  const OperatorSource h100 = routed("h100-sxm");
  EXPECT_EQ(h100.what, "routed experts (fp8_block, sglang)");
  EXPECT_EQ(h100.provenance, Provenance::Measured);
  EXPECT_EQ(h100.band.basis, BandBasis::HeldOut);
  const OperatorSource mi300x = routed("mi300x");
  EXPECT_EQ(mi300x.provenance, Provenance::Default);
  EXPECT_DOUBLE_EQ(mi300x.band.band, kNonAttentionDefaultBand);
  for (const auto& s : stepOperatorSources(c, c.hardware("h100-sxm"), c.model("llama-3.1-8b"), "sglang", 8))
    EXPECT_EQ(s.what.find("routed experts"), std::string::npos);
}

TEST(MoeFits, SglangsGptOssExpertsOnHopperTakeTheTritonKernelsFitVllmMeasured) {
  const Catalog& c = defaultCatalog();
  const ModelSpec& gpt_oss = c.model("gpt-oss-120b");
  const LinearKernels sglang_h100 = resolveLinearKernels(c, c.hardware("h100-sxm"), gpt_oss, "sglang");
  const LinearKernels vllm_h100 = resolveLinearKernels(c, c.hardware("h100-sxm"), gpt_oss, "vllm");
  ASSERT_NE(sglang_h100.moe, nullptr);
  EXPECT_EQ(sglang_h100.moe, vllm_h100.moe) << "the same triton_kernels library, vLLM's fit";
  ASSERT_NE(sglang_h100.moe_proxy, nullptr);
  EXPECT_NE(moeFitSource(sglang_h100, "sglang").find("sglang runs the same kernel here"), std::string::npos);
  EXPECT_EQ(vllm_h100.moe_proxy, nullptr);
  // On the B200 SGLang runs FlashInfer's MXFP4 MoE, its own fit; other dtypes keep SGLang's fit on Hopper.
  const LinearKernels sglang_b200 = resolveLinearKernels(c, c.hardware("b200"), gpt_oss, "sglang");
  ASSERT_NE(sglang_b200.moe, nullptr);
  EXPECT_EQ(sglang_b200.moe->engine, "sglang");
  EXPECT_EQ(sglang_b200.moe_proxy, nullptr);
  const LinearKernels dsv3 = resolveLinearKernels(c, c.hardware("h100-sxm"), c.model("deepseek-v3"), "sglang");
  ASSERT_NE(dsv3.moe, nullptr);
  EXPECT_EQ(dsv3.moe->engine, "sglang");
  EXPECT_EQ(dsv3.moe_proxy, nullptr);
}

TEST(PredictOperator, OneMoeLayerWithItsProvenanceAndBand) {
  const CommandResult h100 =
      runAttnsim("--json predict --hardware h100-sxm --moe 64 --model deepseek-v3 --tp 8 --engine sglang");
  ASSERT_EQ(h100.exit_code, 0) << h100.output;
  EXPECT_NE(h100.output.find("\"provenance\": \"measured fit\""), std::string::npos) << h100.output;
  EXPECT_NE(h100.output.find("\"band_basis\": \"heldout\""), std::string::npos) << h100.output;
  EXPECT_NE(h100.output.find("roofline_us"), std::string::npos) << h100.output;
  const CommandResult h200 = runAttnsim("predict --hardware h200 --moe 64 --model deepseek-v3 --tp 8 --ep 2");
  ASSERT_EQ(h200.exit_code, 0) << h200.output;
  EXPECT_NE(h200.output.find("measured on h100-sxm"), std::string::npos) << h200.output;
  const CommandResult amd = runAttnsim("predict --hardware mi300x --moe 64 --model deepseek-v3 --tp 8");
  ASSERT_EQ(amd.exit_code, 0) << amd.output;
  EXPECT_NE(amd.output.find("catalog default"), std::string::npos) << amd.output;
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --moe 64").exit_code, 2);                       // no model
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --moe 64 --model llama-3.1-8b").exit_code, 2);  // dense
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --moe 64 --model deepseek-v3 --ep 3").exit_code, 2);
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --gemm 8,8,8 --ep 2").exit_code, 2);
  EXPECT_EQ(runAttnsim("predict --hardware h100-sxm --moe 8 --gemm 8,8,8 --model deepseek-v3").exit_code, 2);
}

// The catalog error an MI300X calibration file with this `moe:` section gives ("" when it loads).
std::string moeSectionError(const std::string& moe) {
  OverlayDir overlay;
  overlay.write("hardware/calibrations/mi300x.yaml",
                "hardware: mi300x\nsource: \"test\"\ncreated: \"2026-11-27\"\nmoe:\n" + moe + "kernels: {}\n");
  try {
    (void)overlay.load();
  } catch (const CatalogError& e) {
    return e.what();
  }
  return {};
}

TEST(MoeFits, AFitWhoseValuesDoNotFillItsGridIsACatalogErrorNamingTheKey) {
  const std::string grid = moeSectionError(
      "  sglang:\n    bf16: {kernel: k, fixed_us: 5, tokens_per_expert: [1, 2], inter: [256], efficiency: [0.5], "
      "points: 1}\n");
  EXPECT_NE(grid.find("mi300x.yaml:"), std::string::npos) << grid;
  EXPECT_NE(grid.find("efficiency"), std::string::npos) << grid;
  EXPECT_NE(grid.find("2 × 1"), std::string::npos) << grid;
  const std::string dtype = moeSectionError(
      "  sglang:\n    int3: {kernel: k, fixed_us: 5, tokens_per_expert: [1], inter: [256], efficiency: [0.5], "
      "points: 1}\n");
  EXPECT_NE(dtype.find("fp8_block"), std::string::npos) << dtype;
  EXPECT_EQ(moeSectionError("  sglang:\n    bf16: {kernel: k, fixed_us: 5, tokens_per_expert: [1, 2], inter: [256], "
                            "efficiency: [0.5, 0.6], points: 2}\n"),
            "");
}

// AIConfigurator's balanced router logits mark one expert per group for every token; DeepSeek-V3's
// grouped router keeps 4 of its 8 groups, the same 4 for every token when they tie, so half the
// experts stay idle. The converter counts the experts each row reached (measurements/aic_convert.py);
// counted so, no DeepSeek-shaped row reads its touched experts' weights faster than the DRAM allows,
// which the balanced count min(experts, tokens × top-k) would have them do from 32 tokens on.
TEST(MoeFits, DeepSeekRowsCountTheExpertsItsGroupedRouterReachesAndNoneBeatsTheDram) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  const std::map<std::string, double> weight_bytes{{"bf16", 2}, {"fp8", 1}, {"fp8_block", 1}, {"nvfp4", 4.5 / 8}};
  for (const std::string gpu : {"h100_sxm", "b200_sxm"}) {
    const auto rows = readMeasurementCsv(root + "/measurements/data/aic/" + gpu + ".csv.gz", defaultCatalog());
    const double bytes_per_us = defaultCatalog().hardware(rows.front().hardware).memory_bandwidth_gbps * 1e3;
    int deepseek = 0, balanced_would_beat_dram = 0;
    for (const auto& r : rows) {
      if (r.kind != "moe" || r.q_len != 7168 || r.heads != 256 || r.kv_heads != 8) continue;
      ++deepseek;
      // Each token's 4 marked experts in the kept groups, distinct across tokens, and at most 4 idle-scored
      // experts of the lowest indices that fill its top-8; from 32 tokens on, all 128 experts of the 4 groups.
      if (r.batch >= 32) {
        EXPECT_EQ(r.active_experts, 128) << gpu << " tokens=" << r.batch;
      } else {
        EXPECT_GE(r.active_experts, 4 * r.batch) << gpu << " tokens=" << r.batch;
        EXPECT_LE(r.active_experts, 4 * r.batch + 4) << gpu << " tokens=" << r.batch;
      }
      const double per_expert_us =
          3.0 * static_cast<double>(r.q_len * r.kv_len) * weight_bytes.at(r.dtype) / bytes_per_us;
      EXPECT_GE(r.median_us, static_cast<double>(r.active_experts) * per_expert_us)
          << gpu << " " << r.dtype << " tokens=" << r.batch << " inter=" << r.kv_len;
      const auto balanced = std::min<std::int64_t>(r.heads, r.batch * r.kv_heads);
      balanced_would_beat_dram += r.median_us < static_cast<double>(balanced) * per_expert_us;
    }
    EXPECT_GT(deepseek, 100) << gpu;
    EXPECT_GT(balanced_would_beat_dram, 20) << gpu;
  }
}

// Nemotron-H's experts have no gate (relu², an up and a down projection; the collectors' cases say
// sglang_moe_is_gated: false), and the converter writes expert_matrices 2 on its shapes only. Read as
// gated, about half of SGLang's Nemotron rows on the B200 would read their experts' weights faster than
// the DRAM allows; read as two matrices, none does.
TEST(MoeFits, NemotronRowsReadTwoMatricesPerExpertAndNoneBeatsTheDram) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  const std::map<std::string, double> weight_bytes{{"bf16", 2}, {"nvfp4", 4.5 / 8}};
  const auto rows = readMeasurementCsv(root + "/measurements/data/aic/b200_sxm.csv.gz", defaultCatalog());
  const double bytes_per_us = defaultCatalog().hardware("b200").memory_bandwidth_gbps * 1e3;
  int nemotron = 0, gated_would_beat_dram = 0;
  for (const auto& r : rows) {
    if (r.kind != "moe") continue;
    const bool shape = (r.q_len == 2688 && r.heads == 128 && r.kv_heads == 6) || (r.heads == 512 && r.kv_heads == 22);
    EXPECT_EQ(r.expert_matrices, shape ? 2 : 0) << r.q_len << " " << r.heads << " " << r.kv_heads;
    if (!shape || r.engine != "sglang") continue;
    ++nemotron;
    const auto active = static_cast<double>(std::min<std::int64_t>(r.heads, r.batch * r.kv_heads));
    const double per_matrix_us =
        active * static_cast<double>(r.q_len * r.kv_len) * weight_bytes.at(r.dtype) / bytes_per_us;
    EXPECT_GE(r.median_us, 2 * per_matrix_us) << r.dtype << " tokens=" << r.batch << " inter=" << r.kv_len;
    gated_would_beat_dram += r.median_us < 3 * per_matrix_us;
  }
  EXPECT_GT(nemotron, 500);
  EXPECT_GT(gated_would_beat_dram, 200);
}

// Issue 27's target: every shipped MoE fit of the training GPUs misses its held-out calls by at most 10% (MAPE).
// B200 SGLang NVFP4 (10.6% before) meets it since its gate-less Nemotron-H experts sit on the width axis at their
// first GEMM's width: its gated shapes of width 512-3,072 per rank, all held out, were predicted from Nemotron's.
TEST(MoeFits, EveryShippedMoeFitOfTheTrainingGpusMeetsTheTenPercentHeldOutTarget) {
  for (const char* gpu : {"h100-sxm", "b200"}) {
    const auto& fits = defaultCatalog().hardware(gpu).moe_fits;
    EXPECT_GE(fits.size(), 7U) << gpu;
    for (const MoeFit& f : fits) {
      ASSERT_TRUE(f.heldout.has_value()) << gpu << " " << f.engine << " " << f.dtype;
      EXPECT_LE(f.heldout->mape, 0.10) << gpu << " " << f.engine << " " << f.dtype;
    }
  }
}

const std::vector<double> kNvfp4Tiles{8, 16, 32, 64, 128, 256};

// FlashInfer's trtllm-gen rule: the tile below the next power of two of the tokens per expert, clamped to
// the tiles; the shortfall is how far the tokens per expert fall below that power of two.
TEST(MoeFit, TheTokenTileIsTheOneBelowTheNextPowerOfTwoOfTheTokensPerExpert) {
  EXPECT_EQ(moeTokenTileIndex(kNvfp4Tiles, 96), 3U);    // centre 128: tile 64
  EXPECT_EQ(moeTokenTileIndex(kNvfp4Tiles, 128), 3U);   // centre 128: tile 64
  EXPECT_EQ(moeTokenTileIndex(kNvfp4Tiles, 129), 4U);   // centre 256: tile 128
  EXPECT_EQ(moeTokenTileIndex(kNvfp4Tiles, 5000), 4U);  // centre clamped to 256: tile 128
  EXPECT_EQ(moeTokenTileIndex(kNvfp4Tiles, 3), 0U);     // centre clamped to 8, the smallest
  // 256 experts, top-8: 3,072 tokens are 96 per expert (tile 64, three quarters of 128), 4,096 are 128.
  const MoeTileFill fill = moeTileFill(kNvfp4Tiles, MoeCall{3072, 4096, 1536, 256, 3072 * 8.0});
  EXPECT_EQ(fill.tile, 3U);
  EXPECT_NEAR(fill.log_shortfall, std::log(128.0 / 96), 1e-12);
  EXPECT_NEAR(moeTileFill(kNvfp4Tiles, MoeCall{4096, 4096, 1536, 256, 4096 * 8.0}).log_shortfall, 0, 1e-12);
  EXPECT_NEAR(moeTileFill({}, MoeCall{3072, 4096, 1536, 256, 3072 * 8.0}).log_shortfall, 0, 1e-12);  // no tiles
}

TEST(MoeFit, TheTileFillExponentScalesTheTimeBeyondTheFixedTimeByTheShortfall) {
  MoeFit f = twoNodeFit();
  const MoeCall short_of{3072, 1024, 1024, 256, 3072 * 8.0};  // 96 per expert
  const MoeCall power{4096, 1024, 1024, 256, 4096 * 8.0};     // 128
  EXPECT_DOUBLE_EQ(f.us(short_of), f.gridUs(short_of));       // no tile rule
  f.token_tiles = kNvfp4Tiles;
  f.tile_fill_exponent = {0, 0, 0, 2, 0, 0};
  EXPECT_NEAR(f.us(short_of), 10 + (f.gridUs(short_of) - 10) * std::pow(128.0 / 96, 2), 1e-9);
  EXPECT_DOUBLE_EQ(f.us(power), f.gridUs(power));
}

// The evidence: both engines' NVFP4 calls on the B200 whose tokens per expert lie strictly between 64 and 128
// (tile 64) run at a lower efficiency than those at 128 of the same shape, whether their token count is a
// power of two or not (a median under 0.85 of it), while between 32 and 64 (tile 32) they do not (above 0.95);
// the shipped nvfp4 fits carry an exponent above 0.5 for tile 64, no other dtype a tile rule.
TEST(MoeFits, Nvfp4CallsShortOfTheirPowerOfTwoTileRunSlowAtTile64) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  const Catalog& c = defaultCatalog();
  const auto rows = readMeasurementCsv(root + "/measurements/data/aic/b200_sxm.csv.gz", c);
  const GemmRoofline rates = c.hardware("b200").gemmRoofline("nvfp4");
  for (const char* engine : {"sglang", "vllm"}) {
    // Efficiency (roofline / measured) per shape at each tokens per expert.
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::map<double, double>> shapes;
    for (const auto& r : rows) {
      if (r.kind != "moe" || r.dtype != "nvfp4" || r.engine != engine) continue;
      if (r.active_experts > 0 && r.active_experts < std::min(r.heads, r.batch * r.kv_heads)) continue;  // DeepSeek
      const MoeCall call = moeCallOf(r);
      shapes[{r.q_len, r.kv_len, r.heads, r.kv_heads}][call.tokensPerExpert()] =
          moeRooflineUs(rates, call) / r.median_us;
    }
    std::vector<double> tile64, tile32;
    for (const auto& [shape, by_tpe] : shapes) {
      for (const auto& [tpe, efficiency] : by_tpe) {
        const double at = tpe > 64 && tpe < 128 ? 128 : tpe > 32 && tpe < 64 ? 64 : 0;
        if (at == 0 || !by_tpe.contains(at)) continue;
        (at == 128 ? tile64 : tile32).push_back(efficiency / by_tpe.at(at));
      }
    }
    ASSERT_GE(tile64.size(), 20U) << engine;
    ASSERT_GE(tile32.size(), 20U) << engine;
    std::sort(tile64.begin(), tile64.end());
    std::sort(tile32.begin(), tile32.end());
    EXPECT_LT(tile64[tile64.size() / 2], 0.85) << engine;
    EXPECT_GT(tile32[tile32.size() / 2], 0.95) << engine;
    const MoeFit* fit = c.hardware("b200").moeFit(engine, "nvfp4");
    ASSERT_NE(fit, nullptr);
    ASSERT_EQ(fit->token_tiles, kNvfp4Tiles);
    EXPECT_GT(fit->tile_fill_exponent[3], 0.5) << engine;
    for (const char* dtype : {"bf16", "fp8_block", "mxfp4"}) {
      const MoeFit* other = c.hardware("b200").moeFit(engine, dtype);
      ASSERT_NE(other, nullptr) << dtype;
      EXPECT_TRUE(other->token_tiles.empty()) << dtype;
    }
  }
}

TEST(MoeFits, ATileFillExponentPerTokenTileOrItIsACatalogErrorNamingTheKey) {
  const std::string fit =
      "  sglang:\n    nvfp4: {kernel: k, fixed_us: 5, tokens_per_expert: [1, 2], inter: [256], efficiency: [0.5, 0.6], "
      "points: 2, token_tiles: [8, 16]";
  EXPECT_EQ(moeSectionError(fit + ", tile_fill_exponent: [0, 1.2]}\n"), "");
  const std::string error = moeSectionError(fit + ", tile_fill_exponent: [1]}\n");
  EXPECT_NE(error.find("mi300x.yaml:"), std::string::npos) << error;
  EXPECT_NE(error.find("tile_fill_exponent"), std::string::npos) << error;
}

}  // namespace
}  // namespace attnsim::test
