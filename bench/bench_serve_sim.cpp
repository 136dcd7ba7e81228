// serve-sim speed on one core: a 10,000-request Poisson trace on Llama-3.1-8B (vLLM, H100 SXM).
// Issue 15 asks for <= 1 s per simulation, so a rate search over dozens of configurations takes seconds.
#include <benchmark/benchmark.h>

#include <limits>

#include "catalog/Catalog.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"

namespace attnsim {
namespace {

// Times serve-sim over the requests (selection and the step-model setup included) and reports the
// requests per second and the steps it took.
void timeServeSim(benchmark::State& state, const Catalog& c, const Scenario& s,
                  const std::vector<ServeRequest>& requests, const ServeClient& client = {}) {
  std::int64_t steps = 0;
  for (auto _ : state) {
    const ServeRun run = serveScenario(c, s, requests, {}, client);
    steps = run.result.steps;
    benchmark::DoNotOptimize(run.result.ttft.p99);
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(requests.size()));
}

void BM_ServeSim10kRequests(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  Scenario s;
  s.hardware = "h100-sxm";
  s.model = "llama-3.1-8b";
  s.engine = state.range(1) == 0 ? "vllm" : "sglang";
  ArrivalSpec a;
  a.rate = static_cast<double>(state.range(0));
  a.requests = 10000;
  a.lengths = "exponential";
  a.prompt_tokens = 1024;
  a.output_tokens = 256;
  const std::vector<ServeRequest> requests = generateRequests(a);
  timeServeSim(state, c, s, requests);
}
BENCHMARK(BM_ServeSim10kRequests)->Args({10, 0})->Args({40, 0})->Args({40, 1})->Unit(benchmark::kMillisecond);

// The closed loop of `vllm bench serve --request-rate inf --max-concurrency N` (N = range(0)) over the
// random dataset (1024 / 256 tokens, range ratio 0.5).
void BM_ServeSim10kClosedLoop(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  Scenario s;
  s.hardware = "h100-sxm";
  s.model = "llama-3.1-8b";
  s.engine = "vllm";
  ArrivalSpec a;
  a.rate = std::numeric_limits<double>::infinity();
  a.requests = 10000;
  a.lengths = "random";
  a.range_ratio = 0.5;
  a.prompt_tokens = 1024;
  a.output_tokens = 256;
  const std::vector<ServeRequest> requests = generateRequests(a);
  ServeClient client{state.range(0)};
  // range(1) 1: the benchmark client's own loop charged (vllm bench serve's measured costs, serving.stream).
  if (state.range(1) == 1) client.loop = benchmarkClientOf(c, "vllm");
  timeServeSim(state, c, s, requests, client);
}
BENCHMARK(BM_ServeSim10kClosedLoop)->Args({64, 0})->Args({256, 0})->Args({256, 1})->Unit(benchmark::kMillisecond);

// sglang.bench_serving's generated-shared-prefix dataset at 10,240 requests (64 groups x 160, system
// prompt 2048, question 128, output 256) at 40 req/s on SGLang (radix cache, retraction), range(0) 1:
// the radix cache on, 0: off (--disable-radix-cache).
void BM_ServeSim10kSharedPrefix(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  Scenario s;
  s.hardware = "h100-sxm";
  s.model = "llama-3.1-8b";
  s.engine = "sglang";
  if (state.range(0) == 0) s.engine_options["disable_radix_cache"] = "true";
  ArrivalSpec a;
  a.rate = 40;
  a.lengths = "generated-shared-prefix";
  a.gsp_prompts_per_group = 160;
  const std::vector<ServeRequest> requests = generateRequests(a);
  timeServeSim(state, c, s, requests);
}
BENCHMARK(BM_ServeSim10kSharedPrefix)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// Speculative decoding (EAGLE-3, 3 draft steps, 2.8 tokens accepted per verify) on vLLM at 10,000
// requests, 40 req/s: the verify steps and the drafter's passes priced by the step model.
void BM_ServeSim10kSpecDecode(benchmark::State& state) {
  const Catalog c = Catalog::loadDefault();
  Scenario s;
  s.hardware = "h100-sxm";
  s.model = "llama-3.1-8b";
  s.engine = "vllm";
  s.spec.algorithm = "eagle3";
  s.spec.num_steps = 3;
  s.spec.accept_length = 2.8;
  ArrivalSpec a;
  a.rate = 40;
  a.requests = 10000;
  a.lengths = "exponential";
  a.prompt_tokens = 1024;
  a.output_tokens = 256;
  const std::vector<ServeRequest> requests = generateRequests(a);
  timeServeSim(state, c, s, requests);
}
BENCHMARK(BM_ServeSim10kSpecDecode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attnsim
