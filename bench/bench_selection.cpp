// How fast the catalog loads and an engine's selection answers (one core).
#include <benchmark/benchmark.h>

#include "selection/Selector.hpp"

namespace attnsim {
namespace {

void BM_LoadEmbeddedCatalog(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Catalog::loadDefault());
}
BENCHMARK(BM_LoadEmbeddedCatalog)->Unit(benchmark::kMillisecond);

void BM_Select(benchmark::State& state, const char* engine, const char* hardware, const char* model) {
  const Catalog catalog = Catalog::loadDefault();
  const Selector selector(catalog);
  const SelectionInput s{
      &catalog.hardware(hardware), &catalog.model(model), &catalog.engine(engine).policy, {}, std::nullopt};
  for (auto _ : state) benchmark::DoNotOptimize(selector.select(s));
}
BENCHMARK_CAPTURE(BM_Select, vllm_h100_llama, "vllm", "h100-sxm", "llama-3.1-8b")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Select, sglang_b200_deepseek, "sglang", "b200", "deepseek-v3")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Select, rtp_mi300x_llama, "rtp-llm", "mi300x", "llama-3.1-8b")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace attnsim
