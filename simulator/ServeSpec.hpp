#pragma once
// Speculative decoding in serve-sim (docs/CAPACITY.md "Speculative decoding"): the scenario's settings
// checked and turned into the scheduler's SpecDecodeConfig, and the draft model the step model prices.
//
// What a decode step runs, per the engines' code:
// - vLLM vllm/v1/spec_decode/eagle.py @ 008603a3 (EagleProposer.propose): the target verifies
//   num_speculative_tokens + 1 tokens per request; the drafter then runs once over the step's tokens
//   and num_speculative_tokens - 1 times over one token per request, under PIECEWISE CUDA graphs.
// - SGLang python/sglang/srt/speculative/eagle_worker.py @ 00559eac (draft, draft_forward, verify):
//   speculative_num_steps - 1 draft forwards over topk tokens per request (the first draft token comes
//   from the previous draft extend), a TARGET_VERIFY forward of speculative_num_draft_tokens per
//   request, then a draft extend over the verified tokens; the draft's KV slots (topk x num_steps per
//   request) come from the pool the target uses ("allocator and kv cache pool are shared").
// Both: one draft pass over the step's tokens and num_steps - 1 passes at topk tokens per request.
#include <optional>
#include <string>

#include "model/ModelSpec.hpp"
#include "simulator/Scenario.hpp"
#include "simulator/ServeSim.hpp"

namespace attnsim {

// The algorithms serve-sim runs: eagle, eagle3 (a one-layer EAGLE head) and mtp (the model's own
// multi-token-prediction layer; SGLang's NEXTN).
const std::vector<std::string>& servedSpecAlgorithms();

// The scenario's speculative decoding, checked: nullopt when off, else the steps, tree and acceptance
// (a UsageError naming the flag and what it takes). topk 1 verifies num_steps + 1 tokens, as SGLang
// forces (speculative_hook.py) and vLLM runs.
std::optional<SpecDecodeConfig> specDecodeOf(const Scenario& s);

// The draft model the step model prices: for eagle and eagle3 one dense decoder layer of the target's
// width (its attention, an MLP of its intermediate size, its vocabulary); for mtp one layer of the
// target's own kind, its MoE included.
ModelSpec draftModelOf(const ModelSpec& target, const std::string& algorithm);

}  // namespace attnsim
