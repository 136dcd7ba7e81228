// Prediction rates on one core: one attention call, and one full forward step (DeepSeek-V3, 61
// layers). Issue 4 asks for >= 2 million attention calls and >= 20 thousand steps per second; issue 27
// for a prefill call that costs the same at any length (>= 1 million per second at 32k tokens).
// allocs_per_call: heap allocations per call once warm (the cost model's hot path makes none).
#include <benchmark/benchmark.h>

#include <array>

#include "AllocationCounter.hpp"
#include "cost/Predictor.hpp"
#include "selection/Selector.hpp"
#include "simulator/EngineRun.hpp"

namespace attnsim {
namespace {

struct CallFixture {
  AttentionShape shape;
  KernelModel kernel;
  DeviceModel device;
};

CallFixture callFixture(const Catalog& c, const char* hw_id, const char* kernel_id) {
  const HardwareProfile& hw = c.hardware(hw_id);
  return {resolveShape(c.model("llama-3.1-70b").primaryLayer(), c.kernel(kernel_id), Phase::Decode, KvCacheDtype::Auto,
                       DType::BF16, 1),
          resolveKernel(c.kernel(kernel_id), hw), resolveDevice(hw, DType::BF16)};
}

void reportPerCall(benchmark::State& state, std::int64_t allocations) {
  state.SetItemsProcessed(state.iterations());
  state.counters["allocs_per_call"] =
      state.iterations() ? static_cast<double>(allocations) / static_cast<double>(state.iterations()) : 0.0;
}

void BM_AttentionCallDecode(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  const CallFixture f = callFixture(c, "h100-sxm", "fa3");
  std::int64_t context = 1024;
  const std::int64_t batch = state.range(0);
  const std::int64_t before = bench::allocations();
  for (auto _ : state) {
    const RequestGroup g{batch, 1, context};
    benchmark::DoNotOptimize(predictAttention(f.shape, f.kernel, f.device, Phase::Decode, std::span(&g, 1), 16));
    context = context < 131072 ? context + 7 : 1024;  // vary the input so nothing is hoisted
  }
  reportPerCall(state, bench::allocations() - before);
}
BENCHMARK(BM_AttentionCallDecode)->Arg(1)->Arg(8)->Arg(64);

void BM_AttentionCallPrefill(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  const CallFixture f = callFixture(c, "h100-sxm", "fa3");
  const std::int64_t tokens = state.range(0);
  const RequestGroup g{1, tokens, tokens};
  benchmark::DoNotOptimize(predictAttention(f.shape, f.kernel, f.device, Phase::Prefill, std::span(&g, 1), 16));
  const std::int64_t before = bench::allocations();  // warm: the scratch vectors have their size
  for (auto _ : state) {
    benchmark::DoNotOptimize(predictAttention(f.shape, f.kernel, f.device, Phase::Prefill, std::span(&g, 1), 16));
  }
  reportPerCall(state, bench::allocations() - before);
}
BENCHMARK(BM_AttentionCallPrefill)->Arg(2048)->Arg(32768);

// A mixed call: two prompts of other lengths and prefixes (their tiles interleave) and decode rows.
void BM_AttentionCallMixed(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  const CallFixture f = callFixture(c, "h100-sxm", "fa3");
  const std::int64_t tokens = state.range(0);
  const std::array<RequestGroup, 3> g{{{1, tokens, tokens}, {2, tokens / 4, tokens / 4 + 3000}, {64, 1, 4096}}};
  benchmark::DoNotOptimize(predictAttention(f.shape, f.kernel, f.device, Phase::Prefill, std::span(g), 16));
  const std::int64_t before = bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(predictAttention(f.shape, f.kernel, f.device, Phase::Prefill, std::span(g), 16));
  }
  reportPerCall(state, bench::allocations() - before);
}
BENCHMARK(BM_AttentionCallMixed)->Arg(2048)->Arg(32768);

// SGLang's DeepSeek-V3 decode step, batches 1 to `largest` in turn. On the H100 its block-FP8 linears
// run DeepGEMM and take its one-wave class (GemmSurface::kernelUs, its pick cached per thread:
// hardware/DeepGemmPick.hpp); batches 1-512 cross the class's windows.
void stepDeepSeekV3Decode(benchmark::State& state, const char* hardware, std::int64_t largest) {
  const Catalog c = Catalog::loadDefault();
  const Engine& e = c.engine("sglang");
  const HardwareProfile& hw = c.hardware(hardware);
  const ModelSpec& m = c.model("deepseek-v3");
  const EngineRun run = runEngine(c, hw, m, e, {}, std::nullopt, Phase::Decode);
  const Predictor predictor(c, predictionInputFor(c, hw, m, e, run, true));
  std::int64_t batch = 1;
  const auto before = bench::allocations();
  for (auto _ : state) {
    benchmark::DoNotOptimize(predictor.predict(Workload::uniform(Phase::Decode, batch, 1, 4096)));
    batch = batch < largest ? batch + 1 : 1;
  }
  reportPerCall(state, bench::allocations() - before);
}
BENCHMARK_CAPTURE(stepDeepSeekV3Decode, b200, "b200", 256)
    ->Name("BM_StepDeepSeekV3Decode")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(stepDeepSeekV3Decode, h100, "h100-sxm", 512)
    ->Name("BM_StepDeepSeekV3DecodeH100")
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace attnsim
