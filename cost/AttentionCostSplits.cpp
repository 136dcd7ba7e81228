#include "cost/AttentionCostSplits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cost/AttentionCostInternal.hpp"

namespace attnsim::attention_cost {

namespace {

// vLLM TRITON_ATTN (v1/attention/backends/triton_attn.py, dc6908ac): seq_threshold_3D =
// MIN_LAUNCH_GRID_SIZE_2D // num_kv_heads; a batch of decodes (max_seqlen_q 1) of at most that many
// sequences runs kernel_unified_attention_3d with NUM_PAR_SOFTMAX_SEGMENTS segments per sequence,
// anything else the 2D kernel, one program per query block and KV head over all its keys
// (v1/attention/ops/triton_unified_attention.py, unified_attention).
int unifiedSegments(const KernelModel& k, const AttentionShape& s, std::span<const RequestGroup> groups) {
  std::int64_t sequences = 0;
  std::int64_t longest_query = 0;
  for (const auto& g : groups) {
    sequences += g.count;
    longest_query = std::max(longest_query, g.q_len);
  }
  const std::int64_t threshold = std::max(1, k.split_policy.grid_2d / std::max(1, s.num_kv_heads));
  return longest_query == 1 && sequences <= threshold ? k.split_policy.splits : 1;
}

// SGLang's triton backend (srt/layers/attention/triton_backend.py, get_num_kv_splits_triton, 33e725b0):
// two chunk sizes, one from the spread of sequence lengths, one that grows the grid towards the SM
// count times log2(longest / 64); each sequence takes the larger split count of the two, at most
// max_kv_splits. The call's split count here is its longest sequence's.
int sglangSplits(const KernelModel& k, const AttentionShape& s, std::span<const RequestGroup> groups,
                 int compute_units) {
  std::int64_t longest = 0;
  std::int64_t shortest = kNoCap;
  std::int64_t sequences = 0;
  for (const auto& g : groups) {
    const std::int64_t len = uniqueKvTokens(g, s);
    longest = std::max(longest, len);
    shortest = std::min(shortest, len);
    sequences += g.count;
  }
  if (longest <= 0) return 1;
  if (longest * 8 < shortest * 10) shortest = longest;
  const std::int64_t cap = k.split_policy.splits;
  const std::int64_t splits_1 = std::min(ceilDiv(longest, shortest), cap);
  const std::int64_t chunk_1 = ceilDiv(longest, splits_1);
  const double log_len = std::log2(static_cast<double>(longest) / 64.0);
  const auto cores = static_cast<std::int64_t>(compute_units * std::max(log_len, 1.0));
  const int group = s.groupSize();
  // The grouped decode kernel packs up to 16 query heads of one KV head (BLOCK_H).
  const std::int64_t token_grid =
      group == 1 ? sequences * s.num_heads : sequences * ceilDiv(s.num_heads, std::min(16, group));
  const std::int64_t splits_2 = std::min(ceilDiv(cores, std::max<std::int64_t>(1, token_grid)), cap);
  const std::int64_t chunk_2 = ceilDiv(longest, std::max<std::int64_t>(1, splits_2));
  return static_cast<int>(std::max(ceilDiv(longest, chunk_1), ceilDiv(longest, chunk_2)));
}

// The ROCm paged-attention kernels split every sequence's keys into partitions of a fixed size and
// launch the longest sequence's count (vLLM ROCM_ATTN and RTP-LLM's aiter decode: max_num_partitions
// = ceil(max_seq_len / _PARTITION_SIZE_ROCM)).
int partitionSplits(const KernelModel& k, const AttentionShape& s, std::span<const RequestGroup> groups) {
  std::int64_t longest = 0;
  for (const auto& g : groups) longest = std::max(longest, uniqueKvTokens(g, s));
  const SplitPolicy& p = k.split_policy;
  const bool wide = p.wide_tokens > 0 && longest <= p.wide_max_context && !s.kv_quantized &&
                    std::max(s.d_qk, s.d_v) <= p.wide_max_head_dim;
  return static_cast<int>(std::max<std::int64_t>(1, ceilDiv(longest, wide ? p.wide_tokens : p.tokens)));
}

// vLLM's FLASH_ATTN metadata builder (v1/attention/backends/flash_attn.py, build, v0.24.0) passes
// max_num_splits = flash_attn_max_num_splits_for_cuda_graph (32) when full CUDA graphs are on and the
// call's tokens fit max_cudagraph_size, else 0. FA3 takes it as a cap of its own heuristic; FA4 runs
// exactly that count (flash_attn/cute/interface.py _flash_attn_fwd, Dao-AILab/flash-attention@5d4c9537:
// num_splits < 1 runs num_splits_heuristic, any other count as given), and else its heuristic:
// min(SMs // query tiles, 128, KV blocks), none for at most 4 KV blocks.
int graphSplits(const KernelModel& k, const AttentionShape& s, std::span<const RequestGroup> groups,
                int compute_units) {
  std::int64_t tokens = 0;
  double mblocks = 0;
  std::int64_t nblocks = 0;
  for (const auto& g : groups) {
    tokens += g.count * g.q_len;
    const std::int64_t rows = g.q_len * (k.gqa_packing ? s.groupSize() : 1);
    const double heads = k.gqa_packing ? s.num_kv_heads : s.num_heads;
    mblocks += static_cast<double>(g.count) * heads * static_cast<double>(ceilDiv(rows, std::max(1, k.tile_q)));
    nblocks = std::max(nblocks, ceilDiv(uniqueKvTokens(g, s), std::max(1, k.tile_kv)));
  }
  if (tokens <= k.split_policy.max_tokens) return k.split_policy.splits;
  if (nblocks <= 4) return 1;
  const double by_sms = std::floor(static_cast<double>(compute_units) / std::max(1.0, mblocks));
  return static_cast<int>(std::max(1.0, std::min({by_sms, 128.0, static_cast<double>(nblocks)})));
}

// TensorRT-LLM's MMHA multi-block mode (NVIDIA/TensorRT-LLM@eea41b73: common/attentionOp.cpp
// getMaxNumSeqLenTile, divUp(SMs, batch x heads); kernels/decoderMaskedMultiheadAttention/
// decoderMaskedMultiheadAttentionLaunch.h multi_block_grid_setup, the balanced count
// divUp(SMs x blocks per SM, batch x heads) clamped to that and to divUp(length + 1, seq_len_per_kv_loop)
// keys per split): one wave of blocks over the query heads of every request.
int multiBlockSplits(const KernelModel& k, const AttentionShape& s, std::span<const RequestGroup> groups,
                     int compute_units) {
  std::int64_t requests = 0;
  std::int64_t longest = 0;
  for (const auto& g : groups) {
    requests += g.count;
    longest = std::max(longest, uniqueKvTokens(g, s));
  }
  const std::int64_t programs = std::max<std::int64_t>(1, requests * s.num_heads);
  const std::int64_t per_loop = std::max<std::int64_t>(1, k.split_policy.tokens * 128 / std::max(1, s.d_qk));
  const std::int64_t wave = ceilDiv(compute_units, programs);
  return static_cast<int>(std::max<std::int64_t>(1, std::min(wave, ceilDiv(longest + 1, per_loop))));
}

}  // namespace

int perSmSplits(const KernelModel& k, const AttentionShape& s, std::span<const RequestGroup> groups,
                int compute_units) {
  double programs = 0;
  for (const auto& g : groups) programs += static_cast<double>(g.count) * s.num_kv_heads;
  const double per_sm = std::floor(static_cast<double>(compute_units) / std::max(1.0, programs));
  return static_cast<int>(std::max(1.0, per_sm * std::max(1, k.split_policy.splits)));
}

// FlashAttention's num_splits_heuristic (Dao-AILab/flash-attention hopper/heuristics.h, used by
// get_num_splits in hopper/flash_api.cpp; FA2's csrc/flash_attn/flash_api.cpp has the same rule):
// no split when the tiles (requests × KV heads × packed query blocks) fill 80% of the SMs or the
// KV is at most 4 blocks; else the fewest splits whose wave efficiency n/ceil(n) is within 85% of
// the best over 1..min(cap, SMs, KV blocks).
// The heuristic counts resident CTAs, not SMs: FA2 passes multiProcessorCount * 2 ("128 threads per
// block", csrc/flash_attn/flash_api.cpp set_params_splitkv), which is its decode occupancy here.
OccupancySplitCounts occupancySplits(const KernelModel& k, const AttentionShape& shape,
                                     std::span<const RequestGroup> groups, int compute_units) {
  const int max_splits = k.max_splits;
  const double sms = static_cast<double>(compute_units) * std::max(1, k.ctas_per_sm);
  double mblocks = 0;
  std::int64_t nblocks = 0;
  for (const auto& g : groups) {
    const std::int64_t rows = g.q_len * (k.gqa_packing ? shape.groupSize() : 1);
    const double heads = k.gqa_packing ? shape.num_kv_heads : shape.num_heads;
    mblocks += static_cast<double>(g.count) * heads * static_cast<double>(ceilDiv(rows, std::max(1, k.tile_q)));
    nblocks = std::max(nblocks, ceilDiv(uniqueKvTokens(g, shape), k.tile_kv));
  }
  if (mblocks >= 0.8 * sms) return {};
  const int cap =
      static_cast<int>(std::min<double>({static_cast<double>(max_splits), sms, static_cast<double>(nblocks)}));
  auto efficiency = [&](int n) {
    const double waves = mblocks * n / sms;
    // ceil for a positive count of waves below 2^63, without a libm call (this loop is the call's hot spot)
    const auto whole = static_cast<std::int64_t>(waves);
    return waves / static_cast<double>(whole + (static_cast<double>(whole) < waves ? 1 : 0));
  };
  double best = 0;
  for (int n = 1; n <= cap && best < 1.0; ++n) best = std::max(best, efficiency(n));  // never above 1
  int count = 1;
  for (int n = 1; n <= cap; ++n) {
    if (efficiency(n) >= 0.85 * best) {
      count = n;
      break;
    }
  }
  return {nblocks <= 4 ? 1 : count, count};
}

int ruledSplits(const KernelModel& kernel, const AttentionShape& shape, std::span<const RequestGroup> groups,
                int compute_units) {
  switch (kernel.split_policy.rule) {
    case SplitRule::Search:
    case SplitRule::Occupancy:
      return 0;
    case SplitRule::Fixed:
      return kernel.split_policy.splits;
    case SplitRule::Segments:
      return unifiedSegments(kernel, shape, groups);
    case SplitRule::Sglang:
      return sglangSplits(kernel, shape, groups, compute_units);
    case SplitRule::Partition:
      return partitionSplits(kernel, shape, groups);
    case SplitRule::PerSm:
      return perSmSplits(kernel, shape, groups, compute_units);
    case SplitRule::Graph:
      return graphSplits(kernel, shape, groups, compute_units);
    case SplitRule::MultiBlock:
      return multiBlockSplits(kernel, shape, groups, compute_units);
  }
  return 0;
}

}  // namespace attnsim::attention_cost
