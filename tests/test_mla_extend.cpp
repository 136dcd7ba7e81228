// How the engines run an MLA model's extend and mixed batches (BackendCaps::mla_extend): SGLang picks
// one forward method per batch, MHA (every cached latent of the batch's rows up-projected per head) or
// absorbed (the latent cache), from its prefix tokens and whether it replays the piecewise prefill graph
// (deepseek_common/attention_backend_handler.py @ 0a8dcfa9); vLLM runs the prefill rows in MHA form and
// the decode rows in its decode call (MLACommonImpl).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "backends/KernelFamily.hpp"
#include "catalog/Catalog.hpp"
#include "cost/Predictor.hpp"
#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

Workload batchOf(const std::vector<RequestGroup>& groups) {
  Workload w;
  w.groups = groups;
  w.phase = Phase::Prefill;
  for (const auto& g : groups) {
    if (g.prefix() > 0 || g.q_len == 1) w.phase = Phase::Extend;
  }
  return w;
}

ScenarioPrediction predictDeepSeek(const std::string& engine, const std::string& backend, const std::string& hw,
                                   const Workload& w) {
  Scenario s = engineScenario(engine, hw, "deepseek-v3");
  s.backend = backend;
  s.workload = w;
  return predictScenario(defaultCatalog(), s);
}

// The attention call's family and whether it attends the latent cache (one KV head of 576).
struct Form {
  std::string kernel;
  bool latent = false;
};
Form formOf(const ScenarioPrediction& p) {
  const LayerAttention& a = p.prediction.attention.front();
  return {a.kernel->id, a.shape.num_kv_heads == 1 && a.shape.d_qk == 576};
}

TEST(SglangMlaExtend, TrtllmMlaRunsMhaOutsideThePiecewisePrefillGraphAndAbsorbedInIt) {
  // 4096 tokens: above the 2048 tokens SGLang captures for MLA models, MHA_CHUNKED_KV.
  const Form outside = formOf(predictDeepSeek("sglang", "trtllm_mla", "b200", batchOf({{1, 4096, 4096}})));
  EXPECT_EQ(outside.kernel, "trtllm-gen");
  EXPECT_FALSE(outside.latent);
  // 1024 tokens replay the piecewise graph, where the handler returns MLA.
  const Form inside = formOf(predictDeepSeek("sglang", "trtllm_mla", "b200", batchOf({{1, 1024, 1024}})));
  EXPECT_EQ(inside.kernel, "flashinfer-mla");  // trtllm_mla_backend.py falls back to FlashInfer MLA
  EXPECT_TRUE(inside.latent);
  // Without CUDA graphs nothing replays: MHA again.
  Scenario eager = engineScenario("sglang", "b200", "deepseek-v3");
  eager.backend = "trtllm_mla";
  eager.workload = batchOf({{1, 1024, 1024}});
  eager.cuda_graphs = false;
  EXPECT_EQ(predictScenario(defaultCatalog(), eager).prediction.attention.front().kernel->id, "trtllm-gen");
}

TEST(SglangMlaExtend, FlashinferAbsorbsWhileTheBatchsPrefixIsUnder8192Tokens) {
  // 3000 new tokens each (above the piecewise graph), prefixes of 4000 and 9000 tokens.
  const Form short_prefix = formOf(predictDeepSeek("sglang", "flashinfer", "h100-sxm", batchOf({{1, 3000, 7000}})));
  EXPECT_EQ(short_prefix.kernel, "flashinfer-mla");
  EXPECT_TRUE(short_prefix.latent);
  const Form long_prefix = formOf(predictDeepSeek("sglang", "flashinfer", "h100-sxm", batchOf({{1, 3000, 12000}})));
  EXPECT_EQ(long_prefix.kernel, "flashinfer");
  EXPECT_FALSE(long_prefix.latent);
  // No prefix at all: MHA (MHA_ONE_SHOT).
  EXPECT_FALSE(formOf(predictDeepSeek("sglang", "flashinfer", "h100-sxm", batchOf({{1, 3000, 3000}}))).latent);
}

TEST(SglangMlaExtend, AMixedBatchInMhaFormUpProjectsTheDecodeRowsPrefixesToo) {
  const Workload mixed = batchOf({{1, 4096, 4096}, {8, 1, 8192}});
  const ScenarioPrediction p = predictDeepSeek("sglang", "trtllm_mla", "b200", mixed);
  EXPECT_NE(p.prediction.mixed_note.find("in MHA form"), std::string::npos) << p.prediction.mixed_note;
  EXPECT_EQ(p.prediction.attention.front().cost.launches, 1);  // one extend call, no decode call
  const MlaExtendRows rows = Predictor(defaultCatalog(), p.input).mlaExtendRows(mixed);
  EXPECT_EQ(rows.up_projected, 4096 + 8 * 8192);
  EXPECT_EQ(rows.absorbed_tokens, 0);
}

TEST(SglangMlaExtend, AbsorbedExtendTakesTheAbsorptionsInsteadOfTheUpProjection) {
  const Workload w = batchOf({{1, 3000, 7000}});
  const ScenarioPrediction p = predictDeepSeek("sglang", "flashinfer", "h100-sxm", w);
  const MlaExtendRows rows = Predictor(defaultCatalog(), p.input).mlaExtendRows(w);
  EXPECT_EQ(rows.up_projected, 0);
  EXPECT_EQ(rows.absorbed_tokens, 3000);
}

TEST(VllmMlaExtend, AMixedBatchUpProjectsOnlyItsPrefillRows) {
  const Workload mixed = batchOf({{1, 4096, 4096}, {8, 1, 8192}});
  const ScenarioPrediction p = predictDeepSeek("vllm", "FLASHMLA", "h100-sxm", mixed);
  EXPECT_GE(p.prediction.attention.front().cost.launches, 2);  // the prefill call, then the decode call (and its merge)
  const MlaExtendRows rows = Predictor(defaultCatalog(), p.input).mlaExtendRows(mixed);
  EXPECT_EQ(rows.up_projected, 4096);
  EXPECT_EQ(rows.absorbed_tokens, 8);
}

TEST(VllmMlaExtend, BlackwellPrefillRunsFlashInfersRaggedKernelInMhaForm) {
  const Form f = formOf(predictDeepSeek("vllm", "CUTLASS_MLA", "b200", batchOf({{1, 4096, 4096}})));
  EXPECT_EQ(f.kernel, "flashinfer");
  EXPECT_FALSE(f.latent);
}

// vllm/v1/attention/backends/mla/rocm_aiter_mla.py and aiter_triton_mla.py override only
// _flash_attn_varlen_diff_headdims (aiter's CK or Triton flash_attn_varlen_func over per-head q/k/v):
// their prefill is MLACommonImpl's MHA form, with the FLOPs of every vLLM MLA backend's prefill
// (issue 29: they were priced absorbed, 3.4x TRITON_MLA's FLOPs).
TEST(VllmMlaExtend, RocmAiterMlaBackendsPrefillInMhaFormWithTritonMlasFlops) {
  for (const Workload& w : {batchOf({{1, 8192, 8192}}), batchOf({{2, 2048, 8192}})}) {
    const ScenarioPrediction triton = predictDeepSeek("vllm", "TRITON_MLA", "mi300x", w);
    for (const char* backend : {"ROCM_AITER_MLA", "ROCM_AITER_TRITON_MLA"}) {
      const ScenarioPrediction p = predictDeepSeek("vllm", backend, "mi300x", w);
      const Form f = formOf(p);
      EXPECT_EQ(f.kernel, "aiter-fa") << backend;
      EXPECT_FALSE(f.latent) << backend;
      EXPECT_DOUBLE_EQ(p.prediction.attention.front().cost.flops, triton.prediction.attention.front().cost.flops)
          << backend << " " << describe(w);
    }
  }
}

// Every vLLM MLA backend prefills through MLACommonImpl._forward_prefill in the up-projected (MHA) form
// (vllm/v1/attention/backends/mla/common.py @ v0.16.0 2d5be1dd; the backends override only the varlen
// attention call it makes): for one shape, the attention FLOPs are the same whichever dense MLA backend the
// engine runs, on whichever device takes it (issue 29: the ROCm AITER ones were priced absorbed, 3.4x).
TEST(VllmMlaExtend, EveryDenseVllmMlaBackendPrefillsWithTheSameFlopsForTheSameShape) {
  const Workload w = batchOf({{1, 8192, 8192}});
  const double triton = predictDeepSeek("vllm", "TRITON_MLA", "h100-sxm", w).prediction.attention.front().cost.flops;
  int compared = 0;
  for (const Backend& b : defaultCatalog().engine("vllm").backends) {
    if (b.kind != "mla" || b.name.find("SPARSE") != std::string::npos) continue;  // sparse: a top-k index set
    bool served = false;
    for (const char* hw : {"h100-sxm", "b200", "mi300x"}) {
      try {
        const ScenarioPrediction p = predictDeepSeek("vllm", b.name, hw, w);
        EXPECT_FALSE(formOf(p).latent) << b.name << " on " << hw;
        EXPECT_DOUBLE_EQ(p.prediction.attention.front().cost.flops, triton) << b.name << " on " << hw;
        served = true;
      } catch (const std::runtime_error&) {  // the backend refuses this device: tried on the next
      }
    }
    EXPECT_TRUE(served) << b.name << " runs on none of H100, B200 and MI300X";
    compared += served ? 1 : 0;
  }
  EXPECT_GE(compared, 7);  // TRITON_MLA, FLASHMLA, FLASH_ATTN_MLA, FLASHINFER_MLA, CUTLASS_MLA and the two AITER
}

}  // namespace
}  // namespace attnsim::test
