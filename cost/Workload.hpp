#pragma once
// What one forward step computes: a batch of requests, each with new query tokens over a KV
// context. Uniform batches are one group; mixed batches (chunked prefill + decodes) are several.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnsim {

enum class Phase { Prefill, Extend, Decode, Verify };
std::string_view phaseName(Phase p);
Phase parsePhase(std::string_view name);  // throws UsageError listing the phases
// A q_len a user gives (--q-len, Python's q_len=) against the phase: one that agrees with it is
// accepted (1 for decode, the context for prefill), one that contradicts it is a UsageError naming
// both, and extend and verify require one.
void checkQLenForPhase(Phase phase, std::optional<std::int64_t> q_len, std::int64_t context);
// Decode and verify run the decode kernel over single (or a few speculative) tokens per request.
[[nodiscard]] inline bool decodeLike(Phase p) { return p == Phase::Decode || p == Phase::Verify; }

// `count` requests, each with `q_len` new tokens whose last one sees `context` tokens (the cached
// prefix is context - q_len). Verify groups carry the speculative tree: `tree_topk` > 1 makes the
// q_len draft tokens a tree (a root, then levels of tree_topk nodes) instead of a chain.
struct RequestGroup {
  std::int64_t count = 1;
  std::int64_t q_len = 1;
  std::int64_t context = 1;
  std::int64_t tree_topk = 1;

  [[nodiscard]] std::int64_t prefix() const { return context - q_len; }
};

struct Workload {
  Phase phase = Phase::Decode;
  std::vector<RequestGroup> groups;
  std::int64_t padding = 0;  // requests paddedTo added: identical dummy slots, counted in `groups`
  // With attention replicas (SGLang DP attention): the busiest replica's requests, per group, as the
  // engine's dispatch left them (serve-sim: round robin). Empty: the batch spread evenly, ceil(count /
  // replicas) of each group on every replica.
  std::vector<RequestGroup> replica;

  // One group: prefill (q = context), extend (q new tokens over context - q), decode (q = 1),
  // verify (q = draft tokens).
  static Workload uniform(Phase phase, std::int64_t batch, std::int64_t q_len, std::int64_t context,
                          std::int64_t tree_topk = 1);
  // The same from what a user gives (--q-len, Python's q_len=), checked by checkQLenForPhase.
  static Workload forPhase(Phase phase, std::int64_t batch, std::optional<std::int64_t> q_len, std::int64_t context,
                           std::int64_t tree_topk = 1);
  [[nodiscard]] std::int64_t requests() const;
  [[nodiscard]] std::int64_t tokens() const;
  [[nodiscard]] bool isUniform() const;
  // The workload padded to `batch` requests (CUDA-graph padding): the extra requests carry the last
  // group's query length over no cached context.
  [[nodiscard]] Workload paddedTo(std::int64_t batch) const;
  // paddedTo into `out`, reusing its buffer (no allocation once it has held as many groups).
  void padInto(std::int64_t batch, Workload& out) const;
};

}  // namespace attnsim
