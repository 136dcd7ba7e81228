// The operators beside attention inside a step and one call at a time: the fitted surfaces against the
// roofline on held-out calls, DeepSeek's block-FP8 projections, INT4 weights, a scenario's weight dtype,
// a surface's grid errors, and `predict --gemm` / `predict --allreduce` with their provenance.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "cost/OperatorSources.hpp"
#include "cost/StepModel.hpp"
#include "simulator/Evaluation.hpp"
#include "study/Measurements.hpp"
#include "study/OperatorCalibration.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {
TEST(OperatorFits, TheFitsBeatTheRooflineDefaultsOnHeldOutCalls) {
  const std::string root = ATTNSIM_SOURCE_DIR;
  OverlayDir dir;
  const std::string db = (dir.path() / "aic.db").string();
  importMeasurements({root + "/measurements/data/aic/h100_sxm.csv.gz"}, db, defaultCatalog());
  const OperatorCalibration ops = calibrateOperators(defaultCatalog(), Store(db).measurements(), "h100-sxm");
  int checked = 0;
  for (const auto& e : ops.heldOutErrors()) {
    // The fitted grid's engine (vLLM's fp8_block rows are eager) and NCCL's all-reduce; MoE has tests of its own.
    if ((e.engine != "sglang" && e.engine != "nccl") || e.op.rfind("moe:", 0) == 0) continue;
    EXPECT_GE(e.points, 20) << e.op;
    EXPECT_LT(e.mape, e.default_mape) << e.op;
    ++checked;
  }
  EXPECT_EQ(checked, 5);  // bf16, fp8, fp8_block GEMMs, SGLang's all-reduce and NCCL's
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

// The step prices a linear against block-FP8 weights as `predict --gemm --engine E` prices the call: in
// SGLang (DeepGEMM on Hopper) with the one-wave class, in vLLM with the surface alone. DeepSeek-V3's output
// projection at TP 8 (N the hidden size, K 16 heads' values) at an M inside one of its one-wave windows.
TEST(OperatorFits, TheStepsBlockFp8LinearIsPredictGemmsPriceForTheSameEngine) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const ModelSpec& model = c.model("deepseek-v3");
  ASSERT_EQ(model.weight_dtype, "fp8_block");
  const LinearKernels sglang = resolveLinearKernels(c, hw, model, "sglang");
  const LinearKernels vllm = resolveLinearKernels(c, hw, model, "vllm");
  ASSERT_NE(sglang.gemm_weights, nullptr);
  const GemmSurface& s = *sglang.gemm_weights;
  ASSERT_TRUE(s.single_wave.has_value());
  const int tp = 8;
  const AttentionLayerSpec& attn = model.primaryLayer();
  ASSERT_TRUE(attn.mla.has_value());
  const double n = model.hidden_size, k = attn.num_heads / tp * attn.mla->v_head_dim;
  double m = 0;
  for (double rows = 65; rows <= 2048 && m == 0; ++rows) {
    if (s.kernelUs("sglang", rows, n, k) > s.surfaceUs(rows, n, k)) m = rows;
  }
  ASSERT_GT(m, 0) << "no M of a one-wave window where the class is dearer than the surface";
  const auto step = [&](const LinearKernels& kernels) {
    StepCosts costs;
    costLinearOps(model, kernels, Workload::uniform(Phase::Decode, static_cast<std::int64_t>(m), 1, 2048), tp, 2,
                  costs);
    return costs.op_us[static_cast<std::size_t>(StepOp::OProj)];
  };
  const auto predicted = [&](const std::string& engine) {
    const CommandResult r = runAttnsim(
        fmt::format("--json predict --hardware h100-sxm --gemm {:.0f},{:.0f},{:.0f} --gemm-dtype fp8_block{}", m, n, k,
                    engine.empty() ? std::string{} : " --engine " + engine));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output);
    return std::pair{j.at("us").get<double>(), j.at("source").get<std::string>()};
  };
  const auto [sglang_us, sglang_source] = predicted("sglang");
  const auto [vllm_us, vllm_source] = predicted("vllm");
  const auto [default_us, default_source] = predicted("");
  EXPECT_DOUBLE_EQ(step(sglang), s.kernelUs("sglang", m, n, k));
  EXPECT_DOUBLE_EQ(step(sglang), sglang_us);
  EXPECT_DOUBLE_EQ(step(vllm), s.surfaceUs(m, n, k));
  EXPECT_DOUBLE_EQ(step(vllm), vllm_us);
  EXPECT_GT(sglang_us, vllm_us);
  EXPECT_DOUBLE_EQ(default_us, sglang_us);  // no engine named: as before, with the class
  EXPECT_NE(sglang_source.find("as sglang runs it"), std::string::npos) << sglang_source;
  EXPECT_NE(vllm_source.find("the surface alone"), std::string::npos) << vllm_source;
  EXPECT_NE(default_source.find("--engine names another engine"), std::string::npos) << default_source;
  // The step's own provenance says which price its linears took.
  const auto gemm_source = [&](const std::string& engine) {
    return stepOperatorSources(c, hw, model, engine, tp).front().source;
  };
  EXPECT_NE(gemm_source("sglang").find("sglang's linears that DeepGEMM launches as one wave"), std::string::npos)
      << gemm_source("sglang");
  EXPECT_EQ(gemm_source("vllm").find("one wave"), std::string::npos) << gemm_source("vllm");
}

// int4 (AWQ, GPTQ) checkpoints: 4-bit weights with their group scales and zeros, read by every linear; no measured
// surface stands for their GEMMs, so they take the dense-gemm family's roofline and say so.
TEST(OperatorFits, Int4WeightsReadTheirGroupScalesAndTakeTheDenseFamilysRoofline) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("a100-sxm-80g");
  const ModelSpec& bf16 = c.model("qwen3-32b");
  ASSERT_EQ(bf16.weight_dtype, "bf16");
  ModelSpec int4 = bf16;
  int4.weight_dtype = "int4";
  EXPECT_DOUBLE_EQ(kInt4WeightBits, 4.15625);  // 4 bits, and an fp16 scale and a 4-bit zero per 128 weights
  EXPECT_DOUBLE_EQ(int4.parameterBytes(), bf16.parameterBytes() * kInt4WeightBits / 16);
  EXPECT_DOUBLE_EQ(weightBytesPerElement("int4", false), kInt4WeightBits / 8);
  EXPECT_DOUBLE_EQ(weightBytesPerElement("int4", true), kInt4WeightBits / 8);
  const LinearKernels k_bf16 = resolveLinearKernels(c, hw, bf16, "vllm");
  const LinearKernels k_int4 = resolveLinearKernels(c, hw, int4, "vllm");
  EXPECT_EQ(k_int4.gemm_weights, nullptr);
  EXPECT_EQ(k_int4.gemm.provenance, Provenance::Default);
  EXPECT_EQ(stepOperatorSources(c, hw, int4, "vllm", 1).front().provenance, Provenance::Default);
  // A decode step's projections read a quarter of the bytes: far below bf16's at one request.
  const auto oproj = [&](const ModelSpec& m, const LinearKernels& k) {
    StepCosts costs;
    costLinearOps(m, k, Workload::uniform(Phase::Decode, 1, 1, 2048), 1, 2, costs);
    return costs.op_us[static_cast<std::size_t>(StepOp::OProj)];
  };
  EXPECT_LT(oproj(int4, k_int4), 0.5 * oproj(bf16, k_bf16));
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
  // Three GPUs: vLLM's custom all-reduce does not run, NCCL's measured all-reduce answers and says why.
  const CommandResult tp3 = runAttnsim("predict --hardware h100-sxm --allreduce 1048576 --tp 3 --engine vllm");
  ASSERT_EQ(tp3.exit_code, 0) << tp3.output;
  EXPECT_NE(tp3.output.find("NCCL's all-reduce"), std::string::npos) << tp3.output;
  EXPECT_NE(tp3.output.find("does not run over 3 GPUs"), std::string::npos) << tp3.output;
  const CommandResult nccl = runAttnsim("--json predict --hardware b200 --allreduce 1048576 --tp 8 --engine nccl");
  ASSERT_EQ(nccl.exit_code, 0) << nccl.output;
  EXPECT_NE(nccl.output.find("NCCL's all-reduce"), std::string::npos) << nccl.output;
  EXPECT_NE(nccl.output.find("\"band_basis\": \"heldout\""), std::string::npos) << nccl.output;
}

}  // namespace
}  // namespace attnsim::test
