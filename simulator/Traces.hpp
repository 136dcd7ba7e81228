#pragma once
// Serving requests from traces people have, or generated: the Azure LLM inference trace CSV
// (TIMESTAMP, ContextTokens, GeneratedTokens), Mooncake-style JSONL (timestamp in ms,
// input_length, output_length), a plain CSV (arrival_s, prompt_tokens, output_tokens), and
// Poisson or gamma arrivals with length distributions. Bad rows are InputErrors naming file:line.
#include <cstdint>
#include <string>
#include <vector>

#include "simulator/ServeSim.hpp"

namespace attnsim {

// Reads a trace; the format follows the extension (.jsonl) or the CSV header. Arrivals start at 0.
std::vector<ServeRequest> readTrace(const std::string& path);
// The same from text (`name` is what errors call it).
std::vector<ServeRequest> parseTrace(const std::string& text, const std::string& name);

struct ArrivalSpec {
  std::string process = "poisson";  // poisson or gamma
  double rate = 1;                  // requests per second; infinity: every request at t = 0
  double cv = 1;                    // gamma: coefficient of variation of the gaps (1 = Poisson)
  std::int64_t requests = 1000;
  // fixed, uniform (±50% of the mean), exponential, random: the `random` dataset of the benchmark
  // named by `bench` (randomLengthRange), generated-shared-prefix (the gsp_* fields) or sonnet (sonnet_*).
  std::string lengths = "fixed";
  std::int64_t prompt_tokens = 1024, output_tokens = 128;
  std::string bench = "vllm";   // vllm or sglang: whose random dataset
  double range_ratio = 0;       // --random-range-ratio
  std::int64_t prefix_len = 0;  // --random-prefix-len (vLLM): tokens before every prompt, shared by all
  // lengths "generated-shared-prefix", sglang.bench_serving's dataset (--gsp-*): groups x prompts per
  // group requests, each its group's system prompt then its own question, shuffled unless ordered.
  std::int64_t gsp_num_groups = 64, gsp_prompts_per_group = 16, gsp_system_prompt_len = 2048, gsp_question_len = 128,
               gsp_output_len = 256;
  double gsp_range_ratio = 1.0;
  bool gsp_ordered = false;
  // lengths "sonnet", vllm bench serve's sonnet dataset (--sonnet-*): every prompt input_len tokens, its first
  // prefix_len shared by all, and output_len output tokens.
  std::int64_t sonnet_input_len = 550, sonnet_output_len = 150, sonnet_prefix_len = 200;
  std::uint64_t seed = 1;
};

// The integer range a benchmark's `random` dataset draws a length from, uniformly:
// vLLM [floor(len (1 - r)), ceil(len (1 + r))], SGLang [len r, len]. UsageError for a ratio the
// benchmark refuses (vLLM: outside [0, 1); SGLang: outside [0, 1]).
struct LengthRange {
  std::int64_t low = 1, high = 1;
};
LengthRange randomLengthRange(const std::string& bench, std::int64_t len, double range_ratio, bool output);
// Checks a spec (a random dataset's ratio and prefix); UsageError naming the flag.
void checkArrivalSpec(const ArrivalSpec& spec);
std::vector<ServeRequest> generateRequests(const ArrivalSpec& spec);

}  // namespace attnsim
