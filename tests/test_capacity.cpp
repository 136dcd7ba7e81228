// The memory split against hand-computed cases, the fit check, and the serving data's errors.
#include <gtest/gtest.h>

#include <map>

#include "TestSupport.hpp"
#include "catalog/Catalog.hpp"
#include "cost/Collective.hpp"
#include "cost/MemoryModel.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/Capacity.hpp"

namespace attnsim {
namespace {

using test::defaultCatalog;

CapacityReport capacity(const std::string& engine, const std::string& hw, const std::string& model, int tp = 1) {
  Scenario s = test::engineScenario(engine, hw, model);
  s.tp = tp;
  return capacityOf(defaultCatalog(), s);
}

TEST(Capacity, Llama8bKvBytesPerTokenIsTwoTimesLayersTimesKvHeadsTimesHeadDimTimesTwoBytes) {
  const ModelSpec& m = defaultCatalog().model("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(kvFootprint(m, KvCacheDtype::Auto, DType::BF16, 1).full_bytes, 2.0 * 32 * 8 * 128 * 2);
  EXPECT_DOUBLE_EQ(kvFootprint(m, KvCacheDtype::FP8_E4M3, DType::BF16, 1).full_bytes, 2.0 * 32 * 8 * 128 * 1);
  // TP 2 halves the KV heads per rank; TP 16 replicates the 8 KV heads (one per rank).
  EXPECT_DOUBLE_EQ(kvFootprint(m, KvCacheDtype::Auto, DType::BF16, 2).full_bytes, 2.0 * 32 * 4 * 128 * 2);
  EXPECT_DOUBLE_EQ(kvFootprint(m, KvCacheDtype::Auto, DType::BF16, 16).full_bytes, 2.0 * 32 * 1 * 128 * 2);
}

TEST(Capacity, MlaKeepsOneLatentPerTokenOnEveryRank) {
  const ModelSpec& m = defaultCatalog().model("deepseek-v3");
  // 61 layers × (kv_lora_rank 512 + rope 64) × 2 bytes, not divided by TP.
  EXPECT_DOUBLE_EQ(kvFootprint(m, KvCacheDtype::Auto, DType::BF16, 8).full_bytes, 61.0 * 576 * 2);
}

TEST(Capacity, SlidingWindowLayersAreCappedAtTheirWindowPerRequest) {
  const ModelSpec& m = defaultCatalog().model("gpt-oss-20b");
  const KvFootprint f = kvFootprint(m, KvCacheDtype::Auto, DType::BF16, 1);
  EXPECT_EQ(f.max_window, 128);
  EXPECT_GT(f.windowed_layers, 0);
  // At 64k context the windowed layers keep window + one page, the full layers every token.
  const double bytes = f.requestBytes(65536, 16);
  EXPECT_DOUBLE_EQ(bytes, f.full_bytes * 65536 + f.windowed_bytes * 144);
}

TEST(Capacity, VllmLlama8bOnH100SplitsUtilizationLessWeightsAndTheProfilePeak) {
  const CapacityReport r = capacity("vllm", "h100-sxm", "llama-3.1-8b");
  const MemorySplit& s = r.split;
  EXPECT_NEAR(s.weights_mib * kMiB / 1e9, 16.06, 1e-9);  // 8.03e9 parameters × 2 bytes
  // The memory the driver reports (hardware profile reported_memory), less the weights and the profiling
  // run's peak: the sampler call at 1024 rows outweighs the forward (tests/test_vllm_kv_pool.cpp).
  EXPECT_LT(s.gpu_mib, 80 * 1024);
  double sampler_mib = 0;
  for (const auto& [name, value] : s.derived) {
    if (name == "sampler_mib") sampler_mib = value;
  }
  EXPECT_GT(sampler_mib, s.activation_mib);
  EXPECT_NEAR(s.kv_pool_mib, 0.9 * s.gpu_mib - s.weights_mib - sampler_mib, 1e-6);
  EXPECT_EQ(s.page_size, 16);
  EXPECT_EQ(s.kv_tokens % 16, 0);
  EXPECT_NEAR(static_cast<double>(s.kv_tokens), s.kv_pool_mib * kMiB / 131072, 16);
  EXPECT_EQ(s.max_batched_tokens, 8192);
  EXPECT_EQ(s.max_running_requests, 1024);
}

TEST(Capacity, SglangMemFractionStaticFollowsItsReservedRule) {
  const CapacityReport r = capacity("sglang", "h100-sxm", "llama-3.1-8b");
  const MemorySplit& s = r.split;
  // reserved = 512 + 8192·1.5 + 256·2 + 1/8·1024 + 8·(piecewise sizes) MiB, above the 10 GiB floor.
  const double reserved = 512 + 8192 * 1.5 + 256 * 2 + 1024.0 / 8 + 8.0 * static_cast<double>(s.prefill_graph_sizes);
  EXPECT_GT(reserved, 10240);
  const double fraction = (80 * 1024 - reserved) / (80 * 1024);
  // profile_max_num_token: the fraction of what was free at start (torch's total less the CUDA context) less the
  // weights.
  const double start_free = *defaultCatalog().hardware("h100-sxm").reported_memory_mib - 619;
  EXPECT_NEAR(s.kv_pool_mib, start_free * fraction - s.weights_mib, 1e-6);
  EXPECT_EQ(s.max_batched_tokens, 8192);
  // max_num_reqs = min(max(kv_tokens / 131072 × 512, 2048), 4096).
  EXPECT_EQ(s.max_running_requests, 2048);
}

// SGLang's pool is mem_fraction_static of the H100's memory free at start (torch's total less the CUDA context):
// a MiB more of the fraction's card is this share of a MiB of pool.
double sglangStartShare() { return (*defaultCatalog().hardware("h100-sxm").reported_memory_mib - 619) / (80 * 1024); }

CapacityReport sglangWithOptions(const std::string& hw, const std::string& model,
                                 const std::map<std::string, std::string>& options) {
  Scenario s = test::engineScenario("sglang", hw, model);
  for (const auto& [name, value] : options) s.engine_options[name] = value;
  return capacityOf(defaultCatalog(), s);
}

TEST(Capacity, SglangWithoutHybridSwaMemoryChargesEveryLayerForEveryToken) {
  const CapacityReport hybrid = sglangWithOptions("h100-sxm", "gpt-oss-20b", {});
  const CapacityReport one_pool = sglangWithOptions("h100-sxm", "gpt-oss-20b", {{"disable_hybrid_swa_memory", "true"}});
  const KvFootprint layers = kvFootprint(defaultCatalog().model("gpt-oss-20b"), KvCacheDtype::Auto, DType::BF16, 1);
  // Hybrid: a token costs the full-attention layers; the sliding-window ones keep their window per request.
  EXPECT_DOUBLE_EQ(hybrid.split.kv.full_bytes, layers.full_bytes);
  EXPECT_EQ(hybrid.split.kv.max_window, 128);
  // One pool (model_runner.py profile_max_num_token over every layer): no window, every layer per token.
  EXPECT_DOUBLE_EQ(one_pool.split.kv.full_bytes, layers.perToken());
  EXPECT_DOUBLE_EQ(one_pool.split.kv.windowed_bytes, 0);
  EXPECT_EQ(one_pool.split.kv.max_window, 0);
  EXPECT_DOUBLE_EQ(one_pool.split.kv_pool_mib, hybrid.split.kv_pool_mib);  // the same memory, fewer tokens
  EXPECT_NEAR(static_cast<double>(one_pool.split.kv_tokens), one_pool.split.kv_pool_mib * kMiB / layers.perToken(), 1);
  EXPECT_LT(one_pool.split.kv_tokens, hybrid.split.kv_tokens);
}

TEST(Capacity, SglangCudaGraphMaxBsSetsTheGraphMaximumAndItsReserve) {
  const CapacityReport unset = sglangWithOptions("h100-sxm", "llama-3.1-8b", {});
  const CapacityReport small = sglangWithOptions("h100-sxm", "llama-3.1-8b", {{"cuda_graph_max_bs", "160"}});
  EXPECT_EQ(unset.split.decode_graph_sizes - small.split.decode_graph_sizes, (256 - 160) / 8);
  // reserved_mem counts 2 MiB per graph batch: 96 fewer raise the fraction by 192 MiB of the card, which the pool
  // takes of the memory free at start.
  EXPECT_NEAR(small.split.kv_pool_mib - unset.split.kv_pool_mib, 2.0 * (256 - 160) * sglangStartShare(), 1e-6);
}

TEST(Capacity, SglangWithoutPiecewiseGraphsCapturesNoPrefillSizesAndReservesNothingForThem) {
  const CapacityReport on = sglangWithOptions("h100-sxm", "llama-3.1-8b", {});
  const CapacityReport off = sglangWithOptions("h100-sxm", "llama-3.1-8b", {{"disable_piecewise_cuda_graph", "true"}});
  EXPECT_GT(on.split.prefill_graph_sizes, 0);
  EXPECT_EQ(off.split.prefill_graph_sizes, 0);
  EXPECT_EQ(off.split.decode_graph_sizes, on.split.decode_graph_sizes);
  // reserved_mem's 8 MiB per piecewise size goes back to the fraction, so to the pool.
  EXPECT_NEAR(off.split.kv_pool_mib - on.split.kv_pool_mib,
              8.0 * static_cast<double>(on.split.prefill_graph_sizes) * sglangStartShare(), 1e-6);
}

TEST(Capacity, RtpLlmKeepsOneGibAndARuntimeReserveThatShrinksWithTp) {
  const MemorySplit tp1 = capacity("rtp-llm", "h100-sxm", "llama-3.1-8b").split;
  EXPECT_NEAR(tp1.kv_pool_mib, 80 * 1024 - 1024 - tp1.weights_mib - 2048, 1e-6);
  const MemorySplit tp2 = capacity("rtp-llm", "h100-sxm", "llama-3.1-8b", 2).split;
  EXPECT_NEAR(tp2.kv_pool_mib, 80 * 1024 - 1024 - tp2.weights_mib - 1024, 1e-6);
}

TEST(Capacity, Llama405bBf16DoesNotFitOneH100AndSaysByHowMuch) {
  const CapacityReport r = capacity("vllm", "h100-sxm", "llama-3.1-405b");
  EXPECT_FALSE(r.split.weightsFit());
  const FitCheck f = checkFit(r.split, Workload::uniform(Phase::Decode, 1, 1, 4096));
  EXPECT_FALSE(f.fits);
  EXPECT_NE(f.message.find("short by"), std::string::npos) << f.message;
  // TP 8 on H200s holds it.
  EXPECT_TRUE(capacity("vllm", "h200", "llama-3.1-405b", 8).split.weightsFit());
}

TEST(Capacity, Llama8bBatch63At8kDoesNotFitOneH100ButBatch32Does) {
  const MemorySplit s = capacity("vllm", "h100-sxm", "llama-3.1-8b").split;
  const FitCheck big = checkFit(s, Workload::uniform(Phase::Decode, 63, 1, 8192));
  EXPECT_FALSE(big.fits);
  EXPECT_NEAR(big.need_mib, 63.0 * 8192 * 131072 / kMiB, 1e-6);  // 63 GiB of KV
  EXPECT_NE(big.message.find("short"), std::string::npos);
  EXPECT_TRUE(checkFit(s, Workload::uniform(Phase::Decode, 32, 1, 8192)).fits);
}

TEST(Capacity, PredictAndRankFlagABatchThatDoesNotFit) {
  const auto predict = test::runAttnsim(
      "predict --engine vllm --hardware h100-sxm --model llama-3.1-8b --batch 63 "
      "--context 8192");
  EXPECT_EQ(predict.exit_code, 0);
  EXPECT_NE(predict.output.find("memory: does not fit"), std::string::npos) << predict.output;
  const auto fits = test::runAttnsim("predict --engine vllm --hardware h100-sxm --model llama-3.1-8b --batch 8");
  EXPECT_EQ(fits.output.find("does not fit"), std::string::npos);
  const auto rank = test::runAttnsim("rank --hardware h100-sxm --model llama-3.1-8b --batch 63 --context 8192");
  EXPECT_NE(rank.output.find("no (KV)"), std::string::npos) << rank.output;  // per backend (tests/test_memory_verdict)
}

TEST(Capacity, MemoryCommandPrintsTheSplitAndJson) {
  const auto text = test::runAttnsim("capacity memory --engine vllm --hardware h100-sxm --model llama-3.1-8b");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("131072 B"), std::string::npos) << text.output;
  const auto json = test::runAttnsim("--json capacity memory --engine vllm --hardware h100-sxm --model llama-3.1-405b");
  EXPECT_EQ(json.exit_code, 1);  // the weights do not fit
  EXPECT_NE(json.output.find("\"weights_fit\": false"), std::string::npos) << json.output;
}

TEST(Capacity, ServingExpressionsNameKnownVariables) {
  test::OverlayDir overlay;
  std::string yaml = test::embeddedFile("backends/vllm/engine.yaml");
  const std::string from = "max_running_requests: \"max_num_seqs\"";
  yaml.replace(yaml.find(from), from.size(), "max_running_requests: \"max_num_seq\"");
  overlay.write("backends/vllm/engine.yaml", yaml);
  try {
    (void)overlay.load();
    FAIL() << "a misspelt variable loads";
  } catch (const CatalogError& e) {
    EXPECT_NE(std::string(e.what()).find("max_num_seqs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("serving.scheduler.max_running_requests"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnsim

namespace attnsim {
namespace {

TEST(TpCommunication, RingAllReduceIsLatencyPlusTwoTimesNMinusOneOverNBytesOverBandwidth) {
  const InterconnectLink link{"nvswitch", 450, 8, 8, "test", {}};
  EXPECT_DOUBLE_EQ(allReduceUs(link, 1e6, 1), 0);
  // 1 MB over 8 ranks: 8 µs + 2·7/8 · 1e6 B / 450e3 B/µs.
  EXPECT_DOUBLE_EQ(allReduceUs(link, 1e6, 8), 8 + 1.75 * 1e6 / 450e3);
  EXPECT_DOUBLE_EQ(allReduceUs(link, 1e6, 2), 8 + 1.0 * 1e6 / 450e3);
}

TEST(TpCommunication, TwoAllReducesPerLayerOfTokensTimesHidden) {
  const ModelSpec& m = test::defaultCatalog().model("llama-3.1-70b");
  const HardwareProfile& hw = test::defaultCatalog().hardware("h100-sxm");
  ASSERT_TRUE(hw.interconnect_link);
  EXPECT_DOUBLE_EQ(tpCommunicationUs(m, hw.interconnect_link, 32, 1, 2), 0);
  for (int tp : {2, 4, 8}) {
    const double bytes = 32.0 * m.hidden_size * 2;
    EXPECT_DOUBLE_EQ(tpCommunicationUs(m, hw.interconnect_link, 32, tp, 2),
                     2.0 * m.num_layers * allReduceUs(*hw.interconnect_link, bytes, tp));
  }
  // PCIe is slower than NVSwitch for the same message.
  const HardwareProfile& pcie = test::defaultCatalog().hardware("l40s");
  EXPECT_GT(tpCommunicationUs(m, pcie.interconnect_link, 4096, 4, 2),
            tpCommunicationUs(m, hw.interconnect_link, 4096, 4, 2));
}

TEST(TpCommunication, PredictedStepCarriesTheAllReducesAtTpAboveOne) {
  Scenario s = test::engineScenario("vllm", "h100-sxm", "llama-3.1-70b");
  s.workload = Workload::uniform(Phase::Decode, 32, 1, 4096);
  s.tp = 4;
  const ScenarioPrediction p = predictScenario(test::defaultCatalog(), s);
  // vLLM's own all-reduce as measured on the H100's link (hardware/calibrations/h100-sxm.yaml).
  const double expected = tpCommunicationUs(*p.model, p.hardware->interconnect_link, 32, 4, 2, "vllm");
  EXPECT_GT(expected, 0);
  EXPECT_DOUBLE_EQ(p.prediction.tp_comm_us, expected);
  EXPECT_GE(p.prediction.eager.step_us, p.prediction.eager.gpu_busy_us - 1e-9);
  s.tp = 1;
  EXPECT_DOUBLE_EQ(predictScenario(test::defaultCatalog(), s).prediction.tp_comm_us, 0);
}

}  // namespace
}  // namespace attnsim
