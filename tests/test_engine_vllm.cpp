// unit: vLLM v0.16.0's selection behaviours that issue 11's audit (docs/engines/vllm.md) found missing
// or wrong. Each test is named after the engine behaviour it pins and cites the vLLM code at 2d5be1dd
// (v0.16.0) that the YAML rule it exercises transcribes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "simulator/Evaluation.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

Scenario vllm(const std::string& hardware, const std::string& model) { return engineScenario("vllm", hardware, model); }

Scenario withBackend(Scenario s, const std::string& backend) {
  s.backend = backend;
  return s;
}

std::string chosen(const Selection& s) {
  if (s.refusal) return "REFUSED " + *s.refusal;
  if (!s.prefill) return "";
  return s.prefill->variant.empty() ? s.prefill->name : s.prefill->name + " [" + s.prefill->variant + "]";
}

std::vector<std::string> reasonsFor(const ReasonList& list, const std::string& backend) {
  for (const auto& [name, reasons] : list) {
    if (name == backend) return reasons;
  }
  return {};
}

bool hasNote(const Selection& s, const std::string& note) {
  return std::find(s.notes.begin(), s.notes.end(), note) != s.notes.end();
}

bool refusedWith(const Selection& s, const std::string& text) {
  return s.refusal && s.refusal->find(text) != std::string::npos;
}

// ---- D1: Gemma-3 is a multimodal prefix-LM ----
// vllm/config/model.py ModelConfig.is_mm_prefix_lm (model_type gemma3) -> use_mm_prefix on every layer
// (vllm/model_executor/layers/attention/attention.py Attention.__init__); FLASH_ATTN and FLASHINFER do not
// support it (vllm/v1/attention/backend.py AttentionBackend.validate_configuration), all @ 2d5be1dd.
const char* const kMmPrefixReason = "partial multimodal token full attention not supported";

TEST(VllmGemma3, MultimodalPrefixLmPicksTritonOnH100) {
  const Selection s = selectionOf(vllm("h100-sxm", "gemma-3-27b"));
  EXPECT_EQ(chosen(s), "TRITON_ATTN");
  for (const char* rejected : {"FLASH_ATTN", "FLASHINFER"}) {
    const auto reasons = reasonsFor(s.considered, rejected);
    EXPECT_NE(std::find(reasons.begin(), reasons.end(), kMmPrefixReason), reasons.end()) << rejected;
  }
}

TEST(VllmGemma3, MultimodalPrefixLmPicksTritonOnB200A100AndL40S) {
  for (const char* hw : {"b200", "a100-sxm-80g", "l40s"}) {
    EXPECT_EQ(chosen(selectionOf(vllm(hw, "gemma-3-27b"))), "TRITON_ATTN") << hw;
  }
}

TEST(VllmGemma3, PrefixLmRefusesExplicitFlashAttn) {
  const Selection s = selectionOf(withBackend(vllm("h100-sxm", "gemma-3-27b"), "FLASH_ATTN"));
  EXPECT_TRUE(refusedWith(
      s, "Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: ['" +
             std::string(kMmPrefixReason) + "']"))
      << chosen(s);
}

TEST(VllmQwen25Vl, IsNotPrefixLmSoH100PicksFa3) {
  EXPECT_EQ(chosen(selectionOf(vllm("h100-sxm", "qwen2.5-vl-7b"))), "FLASH_ATTN [FA3]");
}

// ---- D2: DeepSeek-V3.2 KV-cache spellings ----
// vllm/model_executor/models/config.py DeepseekV32ForCausalLM.verify_and_update_config @ 2d5be1dd runs before
// the platform hook (vllm/config/vllm.py VllmConfig.__post_init__): fp8* -> fp8_ds_mla, bfloat16 -> auto; then
// only FLASHMLA_SPARSE (KV auto, bfloat16, fp8_ds_mla) is valid on SM 9.x/10.x, block 64
// (vllm/platforms/cuda.py CudaPlatformBase.check_and_update_config).
Scenario withKv(Scenario s, const std::string& kv) {
  s.kv_dtype = kv;
  return s;
}

TEST(VllmDeepseekV32, Fp8KvBecomesFp8DsMlaOnHopper) {
  const Selection s = selectionOf(withKv(vllm("h100-sxm", "deepseek-v3.2"), "fp8"));
  EXPECT_EQ(chosen(s), "FLASHMLA_SPARSE");
  EXPECT_EQ(s.env.at("kv_dtype"), Value{std::string("fp8_ds_mla")});
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{64}});
  EXPECT_TRUE(hasNote(s, "Using custom fp8 kv-cache format for DeepSeekV3.2"));
  EXPECT_TRUE(hasNote(s, "Forcing kv cache block size to 64 for FlashMLA backend."));
}

TEST(VllmDeepseekV32, Fp8KvBecomesFp8DsMlaOnBlackwell) {
  const Selection s = selectionOf(withKv(vllm("b200", "deepseek-v3.2"), "fp8_e4m3"));
  EXPECT_EQ(chosen(s), "FLASHMLA_SPARSE");
  EXPECT_EQ(s.env.at("kv_dtype"), Value{std::string("fp8_ds_mla")});
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{64}});
  EXPECT_TRUE(hasNote(s, "Forcing kv cache block size to 64 for FlashMLASparse backend."));
}

TEST(VllmDeepseekV32, Bfloat16KvIsAuto) {
  const Selection s = selectionOf(withKv(vllm("h100-sxm", "deepseek-v3.2"), "bfloat16"));
  EXPECT_EQ(chosen(s), "FLASHMLA_SPARSE");
  EXPECT_EQ(s.env.at("kv_dtype"), Value{std::string("auto")});
  EXPECT_TRUE(hasNote(s, "Using bfloat16 kv-cache for DeepSeekV3.2"));
}

TEST(VllmDeepseekV32, HasNoBackendOnAmpere) {
  const Selection s = selectionOf(vllm("a100-sxm-80g", "deepseek-v3.2"));
  EXPECT_TRUE(refusedWith(s, "No valid attention backend found for cuda")) << chosen(s);
}

// P4, D10. cuda.py get_attn_backend_cls @ 2d5be1dd raises with AttentionSelectorConfig.__repr__
// (vllm/v1/attention/selector.py @ 2d5be1dd), whose f-string prints Python values: str(torch.dtype),
// True/False, the None block size, and the AttentionType member (AttentionType.DECODER on Python 3.12).
TEST(VllmNoValidBackend, PrintsTheSelectorConfigAsPythonReprs) {
  const Selection s = selectionOf(vllm("a100-sxm-80g", "deepseek-v3.2"));
  EXPECT_TRUE(refusedWith(s,
                          "No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
                          "dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, use_mla=True, has_sink=False, "
                          "use_sparse=True, use_mm_prefix=False, attn_type=AttentionType.DECODER). Reasons: {"))
      << chosen(s);
}

// ---- D3, D5: ROCm's decision tree (vllm/platforms/rocm.py RocmPlatform.get_attn_backend_cls @ 2d5be1dd) ----
Scenario withPage(Scenario s, std::int64_t page) {
  s.page_size = page;
  return s;
}

TEST(VllmRocm, SparseMlaAssertsBlockSizeOne) {
  EXPECT_TRUE(refusedWith(selectionOf(vllm("mi300x", "deepseek-v3.2")),
                          "Sparse MLA backend on ROCm only supports block size 1 for now."));
}

TEST(VllmRocm, SparseMlaIgnoresExplicitBackend) {
  const Selection s = selectionOf(withBackend(withPage(vllm("mi300x", "deepseek-v3.2"), 1), "TRITON_MLA"));
  EXPECT_EQ(chosen(s), "ROCM_AITER_MLA_SPARSE");
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{1}});
}

TEST(VllmRocm, SparseMlaRejectsFp8Kv) {
  EXPECT_TRUE(refusedWith(selectionOf(withKv(withPage(vllm("mi300x", "deepseek-v3.2"), 1), "fp8")),
                          "ROCMAiterMLASparseBackend doesn't support fp8 kv_cache_dtype."));
}

TEST(VllmRocm, RejectsCudaOnlyBackends) {
  for (const char* b : {"FLASH_ATTN", "FLASHINFER", "TREE_ATTN", "FLASH_ATTN_DIFFKV", "CPU_ATTN", "TRITON_MLA"}) {
    const Selection s = selectionOf(withBackend(vllm("mi300x", "llama-3.1-8b"), b));
    EXPECT_TRUE(refusedWith(s, "Attention backend " + std::string(b) +
                                   " is not supported on ROCm. Note that V0 attention backends have been removed."))
        << b << ": " << chosen(s);
  }
}

TEST(VllmRocm, DenseMlaRejectsSparseBackend) {
  const Selection s = selectionOf(withBackend(vllm("mi300x", "deepseek-v3"), "ROCM_AITER_MLA_SPARSE"));
  EXPECT_TRUE(
      refusedWith(s, "The selected backend, ROCM_AITER_MLA_SPARSE,is not MLA type while requested for MLA backend."))
      << chosen(s);
}

TEST(VllmRocm, MlaBlockSizeOnePicksAiterMla) {
  EXPECT_EQ(chosen(selectionOf(withPage(vllm("mi300x", "deepseek-v3"), 1))), "ROCM_AITER_MLA");
  EXPECT_TRUE(refusedWith(selectionOf(withBackend(withPage(vllm("mi300x", "deepseek-v3"), 1), "TRITON_MLA")),
                          "The selected backend, TRITON_MLA,does not support block size 1."));
}

std::set<std::string> rankedNames(const Scenario& s) {
  std::set<std::string> names;
  for (const auto& r : rankBackends(defaultCatalog(), s, {"vllm"}).ranked) names.insert(r.backend);
  return names;
}

TEST(VllmRocm, RankMatchesExplicitWhitelist) {
  EXPECT_EQ(rankedNames(vllm("mi300x", "llama-3.1-8b")),
            (std::set<std::string>{"ROCM_AITER_FA", "ROCM_AITER_UNIFIED_ATTN", "TRITON_ATTN", "ROCM_ATTN",
                                   "FLEX_ATTENTION"}));
  EXPECT_EQ(rankedNames(vllm("mi300x", "deepseek-v3")),
            (std::set<std::string>{"ROCM_AITER_MLA", "ROCM_AITER_TRITON_MLA", "TRITON_MLA"}));
}

// ---- D6: XPU is in-tree (vllm/platforms/__init__.py builtin_platform_plugins @ 2d5be1dd) ----
// vllm/platforms/xpu.py XPUPlatform.get_attn_backend_cls and check_and_update_config @ 2d5be1dd.
TEST(VllmXpu, IsInTreeAndDefaultsToFlashAttn) {
  const Scenario scenario = vllm("intel-max-1550", "llama-3.1-8b");
  const Selection s = selectionOf(scenario);
  EXPECT_EQ(chosen(s), "FLASH_ATTN [XPU]");
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{64}});
  EXPECT_EQ(s.prefill->caps->cuda_graph, "never");
  const ScenarioPrediction p = predictScenario(defaultCatalog(), scenario);
  EXPECT_EQ(p.prediction.graph_decision.mode, GraphMode::Eager) << p.prediction.graph_decision.why;
  EXPECT_EQ(p.prediction.graph_decision.capture_sizes, 0U);
}

TEST(VllmXpu, MlaAlwaysUsesTritonMla) {
  EXPECT_EQ(chosen(selectionOf(vllm("intel-max-1550", "deepseek-v3"))), "TRITON_MLA");
  EXPECT_EQ(chosen(selectionOf(withBackend(vllm("intel-max-1550", "deepseek-v3"), "FLASHMLA"))), "TRITON_MLA");
}

TEST(VllmXpu, RejectsUnlistedExplicitBackend) {
  EXPECT_TRUE(refusedWith(selectionOf(withBackend(vllm("intel-max-1550", "llama-3.1-8b"), "FLEX_ATTENTION")),
                          "Invalid attention backend for xpu, with use_mla: False"));
  EXPECT_EQ(chosen(selectionOf(withBackend(vllm("intel-max-1550", "llama-3.1-8b"), "TRITON_ATTN"))),
            "TRITON_ATTN [XPU]");
}

TEST(VllmXpu, SparseNotImplemented) {
  EXPECT_TRUE(
      refusedWith(selectionOf(vllm("intel-max-1550", "deepseek-v3.2")), "Sparse Attention is not supported on XPU."));
}

// V11. mla/flashmla.py supports_combination @ 2d5be1dd: a sparse model gets the sparse reason.
TEST(VllmFlashMla, SparseModelGetsTheSparseReasonOffHopperAndBlackwell) {
  const Selection s = selectionOf(vllm("a100-sxm-80g", "deepseek-v3.2"));
  std::string reasons;
  for (const auto& [name, why] : s.rejected) {
    if (name == "FLASHMLA") {
      for (const auto& r : why) reasons += r + ";";
    }
  }
  EXPECT_NE(reasons.find("FlashMLA Sparse is only supported on Hopper and Blackwell devices."), std::string::npos)
      << reasons;
  EXPECT_EQ(reasons.find("FlashMLA Dense"), std::string::npos) << reasons;
}

// C5. cuda.py check_and_update_config @ v0.16.0: the page is forced to 64 only where dense FlashMLA
// is supported (Hopper).
TEST(VllmFlashMla, ExplicitBackendForcesPage64OnlyOnHopper) {
  const Selection hopper = selectionOf(withBackend(vllm("h100-sxm", "deepseek-v3"), "FLASHMLA"));
  ASSERT_FALSE(hopper.refusal) << *hopper.refusal;
  EXPECT_EQ(hopper.env.at("page_size"), Value{std::int64_t{64}});
  const Selection blackwell = selectionOf(withBackend(vllm("b200", "deepseek-v3"), "FLASHMLA"));
  EXPECT_TRUE(refusedWith(blackwell, "FlashMLA Dense is only supported on Hopper devices."));
  EXPECT_EQ(blackwell.env.at("page_size"), Value{std::int64_t{16}});
}

TEST(VllmAscend, IsStillAnOutOfTreePlugin) {
  EXPECT_TRUE(refusedWith(selectionOf(vllm("ascend-910b", "llama-3.1-8b")), "out-of-tree plugin (vllm-ascend)"));
}

TEST(VllmAscend, AnExplicitBackendIsRefusedTooAndRankListsNone) {
  for (const char* backend : {"FLASHMLA", "ROCM_ATTN", "TRITON_ATTN", "CPU_ATTN"}) {
    EXPECT_TRUE(refusedWith(selectionOf(withBackend(vllm("ascend-910b", "llama-3.1-8b"), backend)),
                            "out-of-tree plugin (vllm-ascend)"))
        << backend;
  }
  const auto r = runAttnsim("rank --engine vllm --hardware ascend-910b --model llama-3.1-8b --context 4096 --json");
  EXPECT_EQ(r.output.find("\"step_us\""), std::string::npos) << r.output;
}

// ---- D7, D4.2: CPU runs CPU_ATTN whatever was asked, unvalidated ----
// vllm/platforms/cpu.py CpuPlatform.get_attn_backend_cls and check_and_update_config @ 2d5be1dd.
TEST(VllmCpu, SubstitutesCpuAttnForExplicitBackend) {
  const Selection s = selectionOf(withBackend(vllm("xeon-spr-amx", "llama-3.1-8b"), "FLEX_ATTENTION"));
  EXPECT_EQ(chosen(s), "CPU_ATTN");
  EXPECT_TRUE(hasNote(s, "Cannot use AttentionBackendEnum.FLEX_ATTENTION backend on CPU."));
}

TEST(VllmCpu, DefaultBlockSizeIs128) {
  const Selection s = selectionOf(vllm("xeon-spr-amx", "llama-3.1-8b"));
  EXPECT_EQ(chosen(s), "CPU_ATTN");
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{128}});
  EXPECT_EQ(selectionOf(withPage(vllm("xeon-spr-amx", "llama-3.1-8b"), 16)).env.at("page_size"),
            Value{std::int64_t{16}});
}

TEST(VllmCpu, RunsGptOssSinksOnCpuAttn) {
  EXPECT_EQ(chosen(selectionOf(vllm("xeon-spr-amx", "gpt-oss-20b"))), "CPU_ATTN");
}

TEST(VllmCpu, MlaNotImplemented) {
  EXPECT_TRUE(refusedWith(selectionOf(vllm("xeon-spr-amx", "deepseek-v3")), "MLA is not supported on CPU."));
}

TEST(VllmCpu, Fp8KvWithDefaultChunkedPrefillRaises) {
  EXPECT_TRUE(refusedWith(selectionOf(withKv(vllm("xeon-spr-amx", "llama-3.1-8b"), "fp8")),
                          "Chunked-prefill and prefix-cache on the CPU backend is not compatible with FP8 KV cache."));
}

// ---- D8: FLASH_ATTN_MLA never reads flash_attn_version ----
// vllm/v1/attention/backends/mla/flashattn_mla.py FlashAttnMLABackend.supports_combination is
// fa_utils.py flash_attn_supports_mla() (FA3 built and SM90) @ 2d5be1dd; block 64 from
// vllm/platforms/cuda.py CudaPlatformBase.check_and_update_config.
TEST(VllmFlashAttnMla, IgnoresFaVersion) {
  Scenario scenario = vllm("h100-sxm", "deepseek-v3");
  scenario.engine_options["fa_version"] = "2";
  const Selection s = selectionOf(scenario);
  EXPECT_EQ(chosen(s), "FLASH_ATTN_MLA");
  EXPECT_EQ(s.env.at("page_size"), Value{std::int64_t{64}});
}

}  // namespace
}  // namespace attnsim::test

namespace attnsim::test {
namespace {

// D4.1: --attention-config.use_trtllm_attention=False takes FlashInfer off its TRT-LLM path, so
// FlashInfer loses sink support on B200 and GPT-OSS falls through FLASH_ATTN (FA2, no sinks) to
// TRITON_ATTN; unset (auto) keeps FLASHINFER [TRTLLM].
TEST(VllmB200, UseTrtllmAttentionFalseSendsGptOssToTritonAttn) {
  Scenario s = engineScenario("vllm", "b200", "gpt-oss-20b");
  const Selection automatic = selectionOf(s);
  EXPECT_EQ(nameOf(automatic.decode), "FLASHINFER");
  ASSERT_TRUE(automatic.decode);
  EXPECT_EQ(automatic.decode->variant, "TRTLLM");
  s.engine_options["use_trtllm_attention"] = "false";
  EXPECT_EQ(nameOf(selectionOf(s).decode), "TRITON_ATTN");
}

// M9, D4.4. vllm/model_executor/models/config.py GptOssForCausalLMConfig.verify_and_update_config
// @ 2d5be1dd: GPT-OSS raises max_cudagraph_capture_size to 1024 unless the user set it ("from 67 to 83"
// graphs in vLLM's comment: [1, 2, 4], 8..248 by 8, 256..1024 by 16 is 83 sizes); other models keep 512.
TEST(VllmGptOss, RaisesMaxCudaGraphCaptureSizeTo1024) {
  const CudaGraphPolicy& graphs = *defaultCatalog().engine("vllm").policy.cuda_graph;
  const Selection oss = selectionOf(vllm("h100-sxm", "gpt-oss-20b"));
  ASSERT_FALSE(oss.refusal) << *oss.refusal;
  EXPECT_TRUE(std::any_of(oss.notes.begin(), oss.notes.end(), [](const std::string& n) {
    return n.find("Overriding max cuda graph capture size to 1024") != std::string::npos;
  }));
  const auto sizes = graphs.captureSizes(oss.env);
  EXPECT_EQ(sizes.size(), 83U);
  EXPECT_EQ(sizes.back(), 1024);
  EXPECT_EQ(graphs.prefillCaptureSizes(oss.env).back(), 1024);
  const Selection llama = selectionOf(vllm("h100-sxm", "llama-3.1-8b"));
  EXPECT_EQ(graphs.captureSizes(llama.env).back(), 512);
  Scenario user = vllm("h100-sxm", "gpt-oss-20b");
  user.engine_options["max_cudagraph_capture_size"] = "256";
  EXPECT_EQ(graphs.captureSizes(selectionOf(user).env).back(), 256);
}

// C3 (D9). cuda.py check_and_update_config @ v0.16.0: on SM 10.x an MLA model whose qk_nope_head_dim is
// not 128 only gets use_cutlass_mla, which forces block 128; the backend stays unset and the priority
// list decides (FLASHINFER_MLA needs qk_nope 128, so CUTLASS_MLA).
TEST(VllmB200, OtherQkNopeForcesBlock128AndWalksThePriorityList) {
  const Catalog c =
      catalogWithModelVariant("deepseek-v3", "mla-nope-64-test", {{"qk_nope_head_dim: 128", "qk_nope_head_dim: 64"}});
  const Selection sel = selectBackends(c, vllm("b200", "mla-nope-64-test")).selection;
  ASSERT_FALSE(sel.refusal) << *sel.refusal;
  EXPECT_EQ(nameOf(sel.decode), "CUTLASS_MLA");
  EXPECT_EQ(sel.env.at("page_size"), Value{std::int64_t{128}});
  EXPECT_TRUE(std::none_of(sel.notes.begin(), sel.notes.end(),
                           [](const std::string& n) { return n.find("set to CUTLASS_MLA") != std::string::npos; }));
}

}  // namespace
}  // namespace attnsim::test
