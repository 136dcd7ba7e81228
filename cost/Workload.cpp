#include "cost/Workload.hpp"

#include <fmt/format.h>

#include "core/Error.hpp"

namespace attnsim {

std::string_view phaseName(Phase p) {
  switch (p) {
    case Phase::Prefill:
      return "prefill";
    case Phase::Extend:
      return "extend";
    case Phase::Decode:
      return "decode";
    case Phase::Verify:
      return "verify";
  }
  return "decode";
}

Phase parsePhase(std::string_view name) {
  for (const Phase p : {Phase::Prefill, Phase::Extend, Phase::Decode, Phase::Verify}) {
    if (phaseName(p) == name) return p;
  }
  throw UsageError(fmt::format("--phase {}: expected prefill, extend, decode or verify", name));
}

void checkQLenForPhase(Phase phase, std::optional<std::int64_t> q_len, std::int64_t context) {
  if ((phase == Phase::Extend || phase == Phase::Verify) && !q_len) {
    throw UsageError(fmt::format("--q-len is required for phase {}", phaseName(phase)));
  }
  if (phase == Phase::Decode && q_len && *q_len != 1) {
    throw UsageError(fmt::format(
        "--q-len {} contradicts --phase decode, which adds one token per request (q_len 1); for {} new tokens per "
        "request use --phase extend (a chunk over a prefix) or verify (draft tokens)",
        *q_len, *q_len));
  }
  if (phase == Phase::Prefill && q_len && *q_len != context) {
    throw UsageError(fmt::format(
        "--q-len {} contradicts --phase prefill with --context {}: a prefill's new tokens are its whole context "
        "(q_len = context); for {} new tokens over a cached prefix use --phase extend",
        *q_len, context, *q_len));
  }
}

Workload Workload::uniform(Phase phase, std::int64_t batch, std::int64_t q_len, std::int64_t context,
                           std::int64_t tree_topk) {
  if (batch < 1) throw UsageError("--batch must be at least 1");
  if (context < 1) throw UsageError("--context must be at least 1");
  RequestGroup g{batch, q_len, context, std::max<std::int64_t>(1, tree_topk)};
  if (phase == Phase::Prefill) g.q_len = context;
  if (phase == Phase::Decode) g.q_len = 1;
  if (g.q_len < 1) throw UsageError("--q-len must be at least 1");
  if (g.q_len > g.context) {
    throw UsageError(
        fmt::format("--q-len {} exceeds --context {}: the context counts the new tokens", g.q_len, g.context));
  }
  return Workload{.phase = phase, .groups = {g}, .padding = 0, .replica = {}};
}

Workload Workload::forPhase(Phase phase, std::int64_t batch, std::optional<std::int64_t> q_len, std::int64_t context,
                            std::int64_t tree_topk) {
  checkQLenForPhase(phase, q_len, context);
  return uniform(phase, batch, q_len.value_or(1), context, tree_topk);
}

std::int64_t Workload::requests() const {
  std::int64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

std::int64_t Workload::tokens() const {
  std::int64_t n = 0;
  for (const auto& g : groups) n += g.count * g.q_len;
  return n;
}

bool Workload::isUniform() const { return groups.size() == 1; }

// Padded slots run every linear kernel on their tokens but attend over (almost) nothing: vLLM V1
// fills their seq_lens with 0 ("Fill unused with 0 for full cuda graph mode",
// GPUModelRunner._prepare_inputs, vllm/v1/worker/gpu_model_runner.py), SGLang with its backend's
// get_cuda_graph_seq_len_fill_value(), 0 or 1 (CudaGraphRunner.replay_prepare,
// sglang/srt/model_executor/cuda_graph_runner.py). Here they see their own tokens only.
Workload Workload::paddedTo(std::int64_t batch) const {
  Workload w;
  padInto(batch, w);
  return w;
}

void Workload::padInto(std::int64_t batch, Workload& out) const {
  out.phase = phase;
  out.groups.assign(groups.begin(), groups.end());
  out.padding = padding;
  const std::int64_t extra = batch - requests();
  if (extra <= 0 || out.groups.empty()) return;
  const RequestGroup& last = out.groups.back();
  out.groups.push_back({.count = extra, .q_len = last.q_len, .context = last.q_len, .tree_topk = last.tree_topk});
  out.padding += extra;
}

}  // namespace attnsim
