// unit: AIConfigurator's kernel database as attnsim measurements (measurements/aic_convert.py,
// measurements/data/aic): the committed rows import with their origin, gzip files read like text,
// and a row's KV-cache write, FP8 query and sliding window enter its prediction.
#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include "cost/StepModel.hpp"
#include "hardware/HardwareProfile.hpp"
#include "simulator/Evaluation.hpp"
#include "study/Calibration.hpp"
#include "study/Measurements.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

const std::string kAicData = std::string(ATTNSIM_SOURCE_DIR) + "/measurements/data/aic/";

// One decode row of vLLM's FA3 on the H100 as the converter writes it.
MeasurementRow aicRow(const std::string& phase, std::int64_t q_len, std::int64_t kv_len) {
  MeasurementRow r;
  r.hardware = "h100-sxm";
  r.kind = "attention";
  r.impl = "vllm_fa3";
  r.kernel = "fa3";
  r.phase = phase;
  r.batch = 4;
  r.q_len = q_len;
  r.kv_len = kv_len;
  r.heads = 32;
  r.kv_heads = 8;
  r.head_dim = 128;
  r.causal = phase != "decode";
  r.dtype = "bf16";
  r.median_us = 10;
  r.page_size = 64;
  return r;
}

double predicted(const MeasurementRow& r) {
  const Catalog& c = defaultCatalog();
  const KernelModel base = measuredKernelModel(c, r.kernel, r.hardware, phaseOf(r));
  const FitPoint p = fitPointFrom(r, base, c);
  const FitParams params{0.5, 0.8, 3.0, 4.0};
  return predictPoint(p, base, resolveDevice(c.hardware(r.hardware), DType::BF16), params);
}

TEST(KernelDatabase, TheCommittedRowsImportWithTheirOriginAndOnlyTheTrainingGpus) {
  for (const std::string file : {"h100_sxm.csv.gz", "b200_sxm.csv.gz"}) {
    const auto rows = readMeasurementCsv(kAicData + file, defaultCatalog());
    ASSERT_GT(rows.size(), 5000U) << file;
    std::set<std::string> hardware, kernels, engines;
    for (const auto& r : rows) {
      hardware.insert(r.hardware);
      engines.insert(r.engine + " " + r.engine_version);
      EXPECT_TRUE(r.origin.starts_with("ai-dynamo/aiconfigurator@")) << r.origin;
      if (r.kind != "attention") continue;
      kernels.insert(r.kernel);
      EXPECT_TRUE(r.kv_write) << "every attention row of the database times the KV write with the kernel";
    }
    EXPECT_EQ(hardware.size(), 1U) << file;
    EXPECT_TRUE(*hardware.begin() == "h100-sxm" || *hardware.begin() == "b200") << *hardware.begin();
    // The engines' tables and NCCL's own (nccl-tests: the all-reduce an engine falls back to); TensorRT-LLM's op
    // stands for RTP-LLM's kernels on the H100 only (on SM100 it runs trtllm-gen).
    const bool h100 = *hardware.begin() == "h100-sxm";
    std::set<std::string> expected{"nccl 2.29.2", "sglang 0.5.14", "vllm 0.24.0"};
    if (h100) expected.insert("trtllm 1.3.0rc20");
    EXPECT_EQ(engines, expected);
    // The engines' own defaults are there: FA3 on Hopper, FlashInfer's trtllm-gen on Blackwell.
    EXPECT_TRUE(kernels.count(*hardware.begin() == "b200" ? "trtllm-gen" : "fa3")) << file;
  }
}

// docs/engines/rtp-llm-trtllm-kernels.md: context rows run FMHA v2; decode rows run MMHA for one K/V head per
// query head or groups above 32, and XQA's SM90 kernel for groups up to 16 over an FP8 cache; GQA over a bf16
// cache, and groups 17-32, run kernels RTP-LLM does not there, so no such row is kept.
TEST(KernelDatabase, TensorRtLlmRowsStandOnlyForTheRtpLlmKernelsTheyRun) {
  std::map<std::string, int> counts;
  for (const auto& r : readMeasurementCsv(kAicData + "h100_sxm.csv.gz", defaultCatalog())) {
    if (r.engine != "trtllm") continue;
    ++counts[r.kernel];
    if (r.kernel == "trt-fmha-v2") {
      EXPECT_EQ(r.phase, "prefill");
      EXPECT_EQ(r.q_dtype == "fp8_e4m3", r.dtype == "fp8_e4m3") << "an FP8 cache runs the e4m3 FMHA kernel";
    } else if (r.kernel == "mmha") {
      EXPECT_TRUE(r.heads == r.kv_heads || r.heads / r.kv_heads > 32) << r.heads << "/" << r.kv_heads;
    } else {
      EXPECT_EQ(r.kernel, "xqa");
      EXPECT_GT(r.heads / r.kv_heads, 1);
      EXPECT_LE(r.heads / r.kv_heads, 16) << "RTP-LLM's XQA takes groups up to 16";
      EXPECT_EQ(r.dtype, "fp8_e4m3") << r.heads << "/" << r.kv_heads;
    }
  }
  for (const char* k : {"trt-fmha-v2", "mmha", "xqa"}) EXPECT_GT(counts[k], 1000) << k;
}

TEST(KernelDatabase, AProxyFamilysCalibrationSaysWhatItsRowsStandFor) {
  const HardwareProfile& hw = defaultCatalog().hardware("h100-sxm");
  for (const auto& [key, fit] : hw.calibrations) {
    const KernelFamily& family = defaultCatalog().kernel(key.first);
    if (family.measured_proxy.empty()) continue;
    EXPECT_NE(fit.source.find(family.measured_proxy), std::string::npos) << key.first << ": " << fit.source;
    EXPECT_NE(fit.source.find("RTP-LLM"), std::string::npos) << key.first;
  }
  for (const char* k : {"trt-fmha-v2", "mmha", "xqa"}) {
    EXPECT_FALSE(defaultCatalog().kernel(k).measured_proxy.empty()) << k;
    EXPECT_TRUE(hw.calibrations.count({k, std::string(k) == "trt-fmha-v2" ? "prefill" : "decode"})) << k;
  }
}

TEST(KernelDatabase, AGzipFileImportsLikeItsTextAndABrokenOneIsRefused) {
  OverlayDir dir;
  const std::string text = readFile(std::string(ATTNSIM_TEST_DATA) + "/measurements_sample.csv");
  const auto gz = (dir.path() / "sample.csv.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
  const auto plain = parseMeasurementCsv(text, "sample.csv", defaultCatalog());
  EXPECT_EQ(readMeasurementCsv(gz, defaultCatalog()).size(), plain.size());

  const auto broken = (dir.path() / "broken.csv.gz").string();
  const std::string bytes = readFile(gz);
  std::ofstream(broken, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const auto r = runAttnsim("measurements import " + broken + " --db " + (dir.path() / "s.db").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("broken.csv.gz"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "s.db")) << "nothing half-imported";
}

TEST(KernelDatabase, ARowThatTimesTheKvWriteIsPredictedAsTheAttentionPlusTheWriteKernel) {
  MeasurementRow without = aicRow("prefill", 2048, 2048);
  MeasurementRow with = without;
  with.kv_write = true;
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const KernelModel write = resolveKernel(c.kernel("kv-cache-write"), hw);
  // 4 × 2048 new tokens, 8 KV heads of K and V (2 × 128), read as bf16 and stored as bf16.
  const double bytes = 4.0 * 2048 * 8 * 256 * (2 + 2);
  const double expected = rooflineUs(write, resolveDevice(hw, DType::BF16), 0, bytes);
  EXPECT_NEAR(predicted(with) - predicted(without), expected, 1e-9);
  EXPECT_GT(expected, write.fixed_us) << "the write moves bytes, not only a launch";
}

// vLLM's reshape_and_cache_flash runs one CTA per token: at one KV head its time is the CTAs' latency over the
// CTAs the SMs hold, far above its bytes; SGLang's write of the same row is costed by its bytes.
TEST(KernelDatabase, VllmsKvWriteAtOneKvHeadTakesItsPerTokenCtasLatency) {
  MeasurementRow without = aicRow("prefill", 256, 256);
  without.batch = 128;
  without.heads = 1;
  without.kv_heads = 1;
  without.head_dim = 512;
  without.engine = "vllm";
  MeasurementRow with = without;
  with.kv_write = true;
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const KernelModel write = resolveKernel(c.kernel("kv-cache-write"), hw);
  const auto& ctas = c.kernel("kv-cache-write").token_cta;
  ASSERT_GT(ctas.latency_us, 0);
  // 512 threads a CTA (one per element of K and of V), 2048 / 512 of them on each of the SMs.
  const double tokens = 128.0 * 256;
  const double resident = static_cast<double>(hw.compute_units) * (ctas.sm_threads / ctas.max_threads);
  const double expected = tokens * ctas.latency_us / resident + write.fixed_us;
  const double bytes_only = rooflineUs(write, resolveDevice(hw, DType::BF16), 0, tokens * 1024 * (2 + 2));
  EXPECT_NEAR(predicted(with) - predicted(without), expected, 1e-6);
  EXPECT_GT(expected, 2 * bytes_only) << "latency-bound, not bandwidth-bound";
  MeasurementRow sglang = with;
  sglang.engine = "sglang";
  MeasurementRow sglang_without = without;
  sglang_without.engine = "sglang";
  EXPECT_NEAR(predicted(sglang) - predicted(sglang_without), bytes_only, 1e-6);
}

// Past the block's threads the CTAs loop over the row, and a wide row's bytes set the write's time again.
TEST(KernelDatabase, AWideRowsKvWriteIsBoundByItsBytesInEveryEngine) {
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("h100-sxm");
  const KernelModel write = resolveKernel(c.kernel("kv-cache-write"), hw);
  const DeviceModel device = resolveDevice(hw, DType::BF16);
  const double tokens = 65536, kv_heads = 64, head_dim = 128;
  const double bytes = kvWriteBytes(tokens, kv_heads * 2 * head_dim, 2, 2);
  EXPECT_DOUBLE_EQ(kvWriteUs(write, device, "vllm", tokens, kv_heads * head_dim, bytes),
                   rooflineUs(write, device, 0, bytes));
  EXPECT_DOUBLE_EQ(kvWriteUs(write, device, "sglang", tokens, kv_heads * head_dim, bytes),
                   rooflineUs(write, device, 0, bytes));
  // One KV head of the same width: the CTAs' latency, longer for vLLM only.
  const double narrow = kvWriteBytes(tokens, 2 * head_dim, 2, 2);
  EXPECT_GT(kvWriteUs(write, device, "vllm", tokens, head_dim, narrow), rooflineUs(write, device, 0, narrow));
  EXPECT_DOUBLE_EQ(kvWriteUs(write, device, "sglang", tokens, head_dim, narrow), rooflineUs(write, device, 0, narrow));
}

// SGLang's trtllm_mha quantizes a bf16 query to FP8 itself when the cache is FP8, inside the call the
// collector times; vLLM's collector casts the query before timing, and a bf16 cache needs no quantization.
TEST(KernelDatabase, SglangsTrtllmMhaRowWithAnFp8CacheAlsoTimesTheQuerysQuantization) {
  MeasurementRow bf16 = aicRow("decode", 1, 4096);
  bf16.hardware = "b200";
  bf16.impl = "sglang_trtllm_mha";
  bf16.kernel = "trtllm-gen";
  bf16.engine = "sglang";
  MeasurementRow fp8 = bf16;
  fp8.dtype = "fp8_e4m3";
  MeasurementRow vllm = fp8;
  vllm.impl = "vllm_flashinfer_trtllm";
  vllm.engine = "vllm";
  const Catalog& c = defaultCatalog();
  const HardwareProfile& hw = c.hardware("b200");
  const KernelModel base = measuredKernelModel(c, "trtllm-gen", "b200", Phase::Decode);
  const KernelModel elementwise = resolveKernel(c.kernel("elementwise"), hw);
  const auto& quant = c.kernel("trtllm-gen").query_quant;
  ASSERT_GT(quant.launches, 1);
  // 4 requests × 1 query token × 32 heads × 128.
  const double expected = queryQuantUs(quant, elementwise, resolveDevice(hw, DType::BF16), 4.0 * 32 * 128);
  const FitPoint p = fitPointFrom(fp8, base, c);
  EXPECT_NEAR(p.q_quant_us, expected, 1e-12);
  EXPECT_GE(expected, quant.launches * elementwise.fixed_us) << "every launch pays the elementwise floor";
  EXPECT_EQ(fitPointFrom(bf16, base, c).q_quant_us, 0);
  EXPECT_EQ(fitPointFrom(vllm, base, c).q_quant_us, 0);
  FitPoint without = p;
  without.q_quant_us = 0;
  const FitParams params{0.5, 0.8, 3.0, 4.0};
  const DeviceModel device = resolveDevice(hw, DType::BF16);
  EXPECT_NEAR(predictPoint(p, base, device, params) - predictPoint(without, base, device, params), expected, 1e-9);
  EXPECT_DOUBLE_EQ(p.outsideUs(), p.kv_write_us + p.q_quant_us);
}

// The step pays the same kernels once per layer, beside the KV write, in SGLang with an FP8 cache only.
TEST(KernelDatabase, SglangsStepPaysTheQueryQuantizationOncePerLayerWithAnFp8Cache) {
  const Catalog& c = defaultCatalog();
  Scenario s = engineScenario("sglang", "b200", "llama-3.1-8b");
  s.kv_dtype = "fp8_e4m3";
  s.workload = Workload::uniform(Phase::Decode, 8, 1, 4096);
  const ScenarioPrediction sp = predictScenario(c, s);
  ASSERT_EQ(sp.input.decode_kernel->id, "trtllm-gen");
  ASSERT_EQ(sp.input.prefill_kernel, sp.input.decode_kernel);
  ASSERT_TRUE(sp.input.decode_kernel->quantizesQueryIn("sglang"));
  EXPECT_FALSE(sp.input.decode_kernel->quantizesQueryIn("vllm"));
  // The same backend without the quantization: a copy of its family with none.
  KernelFamily plain_family = *sp.input.decode_kernel;
  plain_family.query_quant = {};
  PredictionInput plain_input = sp.input;
  plain_input.prefill_kernel = &plain_family;
  plain_input.decode_kernel = &plain_family;
  const Prediction with = Predictor(c, sp.input).predict(s.workload);
  const Prediction without = Predictor(c, plain_input).predict(s.workload);
  const ModelSpec& model = *sp.model;
  const AttentionLayerSpec& attn = model.primaryLayer();
  const HardwareProfile& hw = *sp.hardware;
  const double per_layer = queryQuantUs(sp.input.decode_kernel->query_quant, resolveKernel(c.kernel("elementwise"), hw),
                                        resolveDevice(hw, *sp.input.model_dtype), 8.0 * attn.num_heads * attn.head_dim);
  const double elementwise_gain = with.eager.by_category[3] - without.eager.by_category[3];
  EXPECT_NEAR(elementwise_gain, model.num_layers * per_layer, 1e-6);
  // Its launches each wait the GPU's gap between graph nodes too: the step is longer by both.
  EXPECT_NEAR(with.eager.gpu_busy_us - without.eager.gpu_busy_us, elementwise_gain, 1e-6);
  EXPECT_GT(with.graph.step_us, without.graph.step_us + elementwise_gain);
  // A bf16 cache quantizes nothing.
  PredictionInput bf16 = sp.input;
  bf16.kv_dtype = KvCacheDtype::BF16;
  PredictionInput bf16_plain = plain_input;
  bf16_plain.kv_dtype = KvCacheDtype::BF16;
  EXPECT_DOUBLE_EQ(Predictor(c, bf16).predict(s.workload).eager.step_us,
                   Predictor(c, bf16_plain).predict(s.workload).eager.step_us);
}

TEST(KernelDatabase, AnFp8QueryRunsTheMathAtTheFp8Peak) {
  MeasurementRow bf16 = aicRow("prefill", 8192, 8192);
  bf16.dtype = "fp8_e4m3";
  MeasurementRow fp8 = bf16;
  fp8.q_dtype = "fp8_e4m3";
  const Catalog& c = defaultCatalog();
  const KernelModel base = measuredKernelModel(c, "fa3", "h100-sxm", Phase::Prefill);
  const FitPoint p = fitPointFrom(fp8, base, c);
  EXPECT_DOUBLE_EQ(p.math_peak_scale,
                   *c.hardware("h100-sxm").peak.fp8_tflops / *c.hardware("h100-sxm").peak.bf16_tflops);
  // A long prefill is compute-bound: the FP8 peak makes it clearly faster.
  EXPECT_LT(predicted(fp8), 0.8 * predicted(bf16));
}

TEST(KernelDatabase, ASlidingWindowRowAttendsOnlyItsWindow) {
  const MeasurementRow full = aicRow("decode", 1, 32768);
  MeasurementRow windowed = full;
  windowed.window = 128;
  const Catalog& c = defaultCatalog();
  const KernelModel base = measuredKernelModel(c, "fa3", "h100-sxm", Phase::Decode);
  EXPECT_EQ(fitPointFrom(windowed, base, c).shape.window, 128);
  EXPECT_LT(predicted(windowed), 0.5 * predicted(full));
}

// A GQA decode shape of 32 query / 8 KV heads of 128 in bf16.
AttentionShape gqaShape() {
  AttentionShape s;
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.d_qk = s.d_v = 128;
  s.kv_token_width = 256;
  return s;
}

double callUs(const KernelModel& k, Phase phase, RequestGroup g) {
  const DeviceModel d = resolveDevice(defaultCatalog().hardware("h100-sxm"), DType::BF16);
  const std::array<RequestGroup, 1> groups{g};
  return predictAttention(gqaShape(), k, d, phase, groups, 64).time_us;
}

TEST(KernelDatabase, EveryDecodeUnitsOwnTimeLengthensItsWaveAndPrefillTilesDoNotPayIt) {
  const Catalog& c = defaultCatalog();
  EXPECT_DOUBLE_EQ(resolveKernel(c.kernel("fa3"), c.hardware("h100-sxm"), Phase::Decode).unit_us, 4.5);
  KernelModel k = resolveKernel(c.kernel("fa3"), c.hardware("h100-sxm"), Phase::Decode);
  k.unit_us = 0;
  KernelModel slow = k;
  slow.unit_us = 5;
  // 2048 requests over 2 tokens: 2048 × 8 one-KV-head units, 16384 / 132 SMs = 125 waves (one split).
  const RequestGroup tiny{2048, 1, 2, 1};
  EXPECT_NEAR(callUs(slow, Phase::Decode, tiny) - callUs(k, Phase::Decode, tiny), 125 * 5.0, 1e-6);
  const RequestGroup prompt{4, 2048, 2048, 1};
  EXPECT_DOUBLE_EQ(callUs(slow, Phase::Prefill, prompt), callUs(k, Phase::Prefill, prompt));
}

TEST(KernelDatabase, APrefillTilesOwnTimeLengthensEachWaveOnlyWhereTheFamilySaysItsTilesPayIt) {
  const Catalog& c = defaultCatalog();
  KernelModel k = resolveKernel(c.kernel("fa3"), c.hardware("h100-sxm"), Phase::Prefill);
  EXPECT_DOUBLE_EQ(k.prefill_unit_us, 0);  // unset: FA3's persistent scheduler overlaps a tile's prologue
  KernelModel slow = k;
  slow.prefill_unit_us = 5;
  // 33 two-token prompts: 33 × 8 KV heads (packed) = 264 one-tile units, 264 / 132 SMs = 2 waves.
  const RequestGroup short_prompts{33, 2, 2, 1};
  // Each wave lasts at most one unit time longer, and no wave's streaming floor hides more than one.
  const double longer = callUs(slow, Phase::Prefill, short_prompts) - callUs(k, Phase::Prefill, short_prompts);
  EXPECT_GT(longer, 1 * 5.0);
  EXPECT_LE(longer, 2 * 5.0 + 1e-9);
  // The decode units of a family keep their own unit_us: a prefill tile's time does not reach them.
  KernelModel decode = resolveKernel(c.kernel("fa3"), c.hardware("h100-sxm"), Phase::Decode);
  KernelModel decode_slow = decode;
  decode_slow.prefill_unit_us = 5;
  const RequestGroup tiny{2048, 1, 2, 1};
  EXPECT_DOUBLE_EQ(callUs(decode_slow, Phase::Decode, tiny), callUs(decode, Phase::Decode, tiny));
}

// The kernel family of SGLang's flashinfer backend's first attention layer for a model, device and batch.
std::string sglangFlashinferKernel(const std::string& hw, const std::string& model, Phase phase, RequestGroup g) {
  Scenario s = engineScenario("sglang", hw, model);
  s.backend = "flashinfer";
  s.workload.groups = {g};
  s.workload.phase = phase;
  return predictScenario(defaultCatalog(), s).prediction.attention.front().kernel->id;
}

TEST(KernelDatabase, SglangFlashinferDecodesOnTensorCoresFromAGqaGroupOf4OrAnFp8Cache) {
  // should_use_tensor_core: Llama-3.1-8B (32/8) on the tensor-core kernels, Gemma 3 (32/16) on the CUDA-core one.
  EXPECT_EQ(sglangFlashinferKernel("b200", "llama-3.1-8b", Phase::Decode, {8, 1, 4096}), "flashinfer");
  EXPECT_EQ(sglangFlashinferKernel("b200", "gemma-3-27b", Phase::Decode, {8, 1, 4096}), "flashinfer-decode");
  EXPECT_EQ(sglangFlashinferKernel("h100-sxm", "gemma-3-27b", Phase::Decode, {8, 1, 4096}), "flashinfer-decode");
}

TEST(KernelDatabase, SglangFlashinferPrefillsThroughCutlassOnSm100AndFa2Elsewhere) {
  // is_sm100_supported(): the ragged wrapper's backend is cutlass, for a prompt and an extend's new tokens.
  EXPECT_EQ(sglangFlashinferKernel("b200", "gemma-3-27b", Phase::Prefill, {1, 1024, 1024}), "flashinfer-cutlass");
  EXPECT_EQ(sglangFlashinferKernel("b200", "llama-3.1-8b", Phase::Prefill, {1, 1024, 1024}), "flashinfer-cutlass");
  EXPECT_EQ(sglangFlashinferKernel("b200", "llama-3.1-8b", Phase::Extend, {1, 256, 4096}), "flashinfer-cutlass");
  EXPECT_EQ(sglangFlashinferKernel("h100-sxm", "llama-3.1-8b", Phase::Prefill, {1, 1024, 1024}), "flashinfer");
  // The decode kernels stay as should_use_tensor_core picks them.
  EXPECT_EQ(sglangFlashinferKernel("b200", "gemma-3-27b", Phase::Decode, {8, 1, 4096}), "flashinfer-decode");
}

TEST(KernelDatabase, ASplitCallsMergeLaunchCostsItsOwnTimeInsteadOfASecondFixedTime) {
  const Catalog& c = defaultCatalog();
  KernelModel k = resolveKernel(c.kernel("fa3"), c.hardware("h100-sxm"), Phase::Decode);
  k.merge_launch_us = -1;  // unset: the family's fixed time again
  KernelModel own = k;
  own.merge_launch_us = 0.5;
  const RequestGroup one_long{1, 1, 65536, 1};  // one request, 8 units: the call splits
  const DeviceModel d = resolveDevice(c.hardware("h100-sxm"), DType::BF16);
  const std::array<RequestGroup, 1> g{one_long};
  const AttentionCost split = predictAttention(gqaShape(), k, d, Phase::Decode, g, 64);
  ASSERT_GT(split.splits, 1);
  EXPECT_NEAR(split.time_us - callUs(own, Phase::Decode, one_long), k.fixed_us - 0.5, 1e-6);
}

TEST(KernelDatabase, AnL2WarmRowReadsAWorkingSetTheL2HoldsAtTheL2Bandwidth) {
  const Catalog& c = defaultCatalog();
  ASSERT_GT(c.hardware("h100-sxm").l2_bandwidth_gbps, c.hardware("h100-sxm").memory_bandwidth_gbps);
  MeasurementRow small = aicRow("decode", 1, 4096);  // 4 × 4096 keys × 8 heads × 256 × 2 B = 67 MB > 50 MB
  small.batch = 1;                                   // 17 MB: the L2 holds it
  MeasurementRow warm = small;
  warm.l2_warm = true;
  EXPECT_LT(predicted(warm), predicted(small));
  MeasurementRow large = aicRow("decode", 1, 4096);
  MeasurementRow large_warm = large;
  large_warm.l2_warm = true;
  EXPECT_DOUBLE_EQ(predicted(large_warm), predicted(large)) << "a working set past the L2 comes from DRAM";
}

TEST(KernelDatabase, TheStepCostsTheKvWriteWithItsOwnFamily) {
  OverlayDir dir;
  std::string family = embeddedFile("backends/kernels/kv-cache-write.yaml");
  const auto at = family.find("fixed_us: 2.0");
  ASSERT_NE(at, std::string::npos);
  family.replace(at, 13, "fixed_us: 50.0");
  dir.write("backends/kernels/kv-cache-write.yaml", family);
  const Catalog slow = dir.load();
  const Catalog& c = defaultCatalog();
  const ModelSpec& model = c.model("llama-3.1-8b");
  const LinearKernels base = resolveLinearKernels(c, c.hardware("h100-sxm"), model);
  const LinearKernels slower = resolveLinearKernels(slow, slow.hardware("h100-sxm"), model);
  EXPECT_DOUBLE_EQ(slower.kv_write.fixed_us - base.kv_write.fixed_us, 48.0);
  EXPECT_DOUBLE_EQ(slower.elementwise.fixed_us, base.elementwise.fixed_us) << "the other elementwise ops keep theirs";
}

}  // namespace
}  // namespace attnsim::test
