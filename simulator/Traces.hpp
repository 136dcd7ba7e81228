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
  double rate = 1;                  // requests per second
  double cv = 1;                    // gamma: coefficient of variation of the gaps (1 = Poisson)
  std::int64_t requests = 1000;
  std::string lengths = "fixed";  // fixed, uniform (±50% of the mean) or exponential
  std::int64_t prompt_tokens = 1024, output_tokens = 128;
  std::uint64_t seed = 1;
};
std::vector<ServeRequest> generateRequests(const ArrivalSpec& spec);

}  // namespace attnsim
