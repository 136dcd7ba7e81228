#pragma once
// How a kernel computes, independent of which engine calls it: FlashInfer's decode kernel is the
// same code in vLLM, SGLang and RTP-LLM. The cost model and the reference kernels key on this.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/Formats.hpp"
#include "core/YamlReader.hpp"
#include "hardware/KernelEfficiency.hpp"

namespace attnsim {

// A kernel that picks its tile shape by head dimension (CUTLASS/xFormers: 64×64 up to d 64,
// 64×128 up to 128, 32×128 above): the first rule whose max_head_dim covers the call applies.
// A rule may hold for one kind of call only: SGLang's Triton backend runs prefill/extend and decode in
// two kernels with their own block sizes.
enum class TilePhase : std::uint8_t { Any, Prefill, Decode };  // Prefill: prefill and extend calls
struct HeadDimTiles {
  int max_head_dim = 0;
  int tile_q = 0;
  int tile_kv = 0;
  int ctas_per_sm = 0;  // 0: the family's
  TilePhase phase = TilePhase::Any;
  int architecture = -1;  // architectureIndex of the only architecture the rule holds on; -1: every one
};
// A decode kernel the family runs for one query head per KV head (GQA group 1) instead of its grouped
// kernel, timed against the grouped kernel at the same (request, KV head) programs: its time is
// factor × the grouped kernel's + fixed_us (SGLang's _fwd_kernel_stage1 beside _fwd_grouped_kernel_stage1).
// The first rule whose max_head_dim covers the call and whose KV width matches applies.
struct Group1DecodeRule {
  int max_head_dim = 0;  // 0: ends a rule list
  int kv_bits = 0;       // 16 (bf16/fp16 cache), 8 (FP8 cache), 0: any
  double factor = 1;
  double fixed_us = 0;
};
// The position of an architecture family name in the catalog's list of them; -1 when it is none.
int architectureIndex(std::string_view architecture);

// How a split-KV decode kernel picks its split count. search: the model's fastest split (FA2/FA3-like
// heuristics that fill the machine); fixed: always `splits` (vLLM TRITON_MLA); segments: vLLM's
// unified attention, `splits` softmax segments (3D kernel) for a decode-only batch of at most
// grid_2d / KV heads sequences, else one (2D kernel); sglang: SGLang's get_num_kv_splits_triton, at
// most `splits`; occupancy: FlashAttention's num_splits_heuristic (no split once the work fills 80% of
// the SMs, none for at most 4 KV blocks, else the fewest splits within 85% of the best wave
// efficiency). The rules live in cost/AttentionCostSplits.cpp.
// partition: the ROCm paged-attention kernels, one split per `tokens` keys of the longest sequence
// (wide_tokens instead up to wide_max_context keys, unquantized KV and head dim <= wide_max_head_dim).
// per_sm: PyTorch's flex-decoding template, `splits` per SM over the grid's (request, KV head)
// programs: max(1, SMs // (requests x KV heads)) x splits (torch/_inductor/kernel/flex/flex_decoding.py
// get_split_k).
// graph: vLLM's FLASH_ATTN with FA4 under full CUDA graphs: exactly `splits` while the call's query
// tokens fit the graph capture size (`max_tokens`), else FA4's own num_splits_heuristic
// (min(SMs // query tiles, 128, KV blocks); none for at most 4 KV blocks).
// multi_block: TensorRT-LLM's MMHA multi-block mode, one wave of blocks: ceil(SMs / (requests x query
// heads)) splits, at most one per `tokens` keys (its seq_len_per_kv_loop at head dim 128, scaled by
// 128 / head dim), at least one.
enum class SplitRule { Search, Fixed, Segments, Sglang, Occupancy, Partition, PerSm, Graph, MultiBlock };
struct SplitPolicy {
  SplitRule rule = SplitRule::Search;
  int splits = 0;
  int grid_2d = 0;     // segments: the 2D launch's minimum grid (vLLM MIN_LAUNCH_GRID_SIZE_2D)
  int tokens = 0;      // partition: keys per split; multi_block: fewest keys per split at head dim 128
  int max_tokens = 0;  // graph: the largest call (query tokens) that runs `splits`
  int wide_tokens = 0, wide_max_context = 0, wide_max_head_dim = 0;  // partition: the wider split's limits
};

struct KernelFamily {
  std::string id;
  std::string name;
  std::string description;
  std::string source;
  std::vector<std::string> platforms;
  std::vector<std::string> phases;  // prefill, decode
  std::string algorithm;            // see kKernelAlgorithms
  Paging paging = Paging::Native;
  int tile_q = 0;                               // query rows per CTA tile (0: not tiled over queries)
  int tile_kv = 0;                              // keys per inner step
  std::vector<HeadDimTiles> tiles_by_head_dim;  // overrides tile_q/tile_kv by head dim (at most 4)
  bool split_kv = false;                        // flash-decoding split over the KV length with an LSE merge
  bool gqa_packing = false;                     // query heads of one KV head share one KV read
  std::vector<std::string> kv_dtypes;           // KV-cache element formats the kernel reads
  SourceLocation kv_dtypes_at;                  // where the list is written (the kernel-limit reason cites it)
  std::string math = "tensor";                  // tensor (MMA units) or vector (CUDA cores / SIMD)
  // Unfused paths only: the precision the scores and the K/V copies are held in. "fp32": PyTorch's
  // math path, which upcasts bf16/fp16 inputs, expands K/V to every query head and scales the keys
  // before its two batched products; "native": the activations' own precision.
  std::string working_precision = "native";
  std::vector<std::string> measured_as;  // implementation names in measurement files that run this family
  // Where those rows time another engine's copy of the kernels: what they stand for (empty: the family
  // itself). `attnsim calibrate` writes it into the fit's source, so a prediction says it is a proxy.
  std::string measured_proxy;
  int ctas_per_sm = 1;            // resident work units per SM / CU
  int max_splits = 32;            // split-KV cap (vLLM caps FA3 at 32 for CUDA graphs)
  bool split_spans_pool = false;  // a paged call's KV splits are cut over the whole page pool
  // Decode with more packed query rows than a tile (MLA's 128 heads): the row tiles of one request run
  // apart in the grid (vLLM's Triton MLA decode: batch is the fastest grid dimension), so each reads the
  // keys from DRAM; false: they run together and share them through L2 (FlashMLA's scheduler).
  bool row_tiles_reread_keys = false;
  // A mixed batch's single-token rows have their KV split in the one launch too, as in a decode-only
  // call (a scheduler that cuts work by KV chunks whatever the query length: FlashInfer's MLA plan,
  // trtllm-gen's multi-CTA KV mode); false: a mixed launch runs each row's KV in one unit.
  bool splits_mixed_decode_rows = false;
  // How many times its even share of the device's bandwidth (bandwidth / resident units) one work
  // unit may draw while fewer units than slots run (the partial last wave of a memory-bound call).
  // 1: a unit streams no faster than a full machine's share; more: it keeps more K/V tiles in flight
  // (cost/AttentionCostWaves.cpp). Fitted on measurements or derived from a published table.
  double slot_bandwidth_share = 1;
  std::string slot_bandwidth_share_source;
  // Decode and verify calls may run another kernel variant of the family, with other resident CTAs
  // per SM and another bandwidth per unit (FA2's decode: two CTAs per SM, measured at its wave
  // edges). 0: the family's values above.
  // A key of a quantized (FP8/FP4) cache costs this many times the per-key serial time of the native
  // dtype: a kernel that casts each loaded tile in its loop (vLLM's unified attention) pays the cast on
  // the CTA's critical path, though it streams fewer bytes. Fitted where measured; 1 otherwise.
  double quantized_kv_key_factor = 1;
  std::string quantized_kv_key_factor_source;
  int decode_ctas_per_sm = 0;
  double decode_slot_bandwidth_share = 0;
  std::string decode_occupancy_source;
  // How waves of work units follow each other (cost/AttentionCostWaves.cpp). Lockstep: each wave
  // ends with its longest unit's serial tail before the next wave's bytes stream. Rolling: the SM
  // holds enough latency-bound units that a finishing unit's serial tail overlaps the next unit's
  // streaming, so the bytes of all waves stream back to back and one tail shows.
  bool rolling_waves = false;
  std::string wave_schedule_source;
  // Emulated paging (Paging::Emulated) only: the per-key time a paged call adds to each unit's serial
  // loop, the page-table lookup of every key before its scores are masked. 0: none measured.
  double paged_key_ns = 0;
  std::string paged_key_ns_source;
  // performance.unit_us: the fixed time every work unit (CTA) spends besides its keys (prologue,
  // page-table and Q loads, epilogue), which sets a wave's length when the units attend few keys.
  double unit_us = 0;
  std::string unit_us_source;
  // performance.prefill_unit_us: the same for a prefill work unit (a query tile of one head), for a
  // kernel that pays each tile's prologue and epilogue apart (FlashInfer's CUTLASS SM100 FMHA: one
  // work item per query tile, query head and request). 0: a prefill tile's prologue overlaps the
  // previous tile's work (the persistent schedulers).
  double prefill_unit_us = 0;
  std::string prefill_unit_us_source;
  // performance.token_cta: a kernel of one CTA per token (vLLM's reshape_and_cache_flash: grid num_tokens,
  // block min(the elements a token's loop walks, max_threads)), whose time is each CTA's latency over the
  // CTAs the SMs hold at once (sm_threads / threads, at most sm_ctas), when that exceeds its bytes' time.
  // Only in the engines that launch it; latency_us 0: none.
  struct TokenCtas {
    double latency_us = 0;
    int max_threads = 0, sm_threads = 0, sm_ctas = 0;
    std::vector<std::string> engines;
    std::string source;
  };
  TokenCtas token_cta;
  // performance.weight_padding: engines whose MoE expert weights are stored padded for this kernel, the
  // hidden size and the expert's intermediate width each rounded up to a multiple, so the expert GEMMs run
  // and read at the padded sizes (vLLM's and SGLang's MXFP4 experts for FlashInfer's trtllm-gen MoE on SM100).
  // Which engines' MoE experts of which dtypes on which architectures an entry below applies to.
  struct MoeScope {
    std::vector<std::string> engines, dtypes, architectures;
    [[nodiscard]] bool covers(std::string_view engine, std::string_view dtype, std::string_view architecture) const;
  };
  struct WeightPadding {
    MoeScope scope;
    int multiple = 1;
    std::string source;
  };
  std::vector<WeightPadding> weight_padding;
  // The multiple `engine`'s `dtype` experts are padded to on `architecture` (1: none).
  [[nodiscard]] int weightPaddingOf(std::string_view engine, std::string_view dtype,
                                    std::string_view architecture) const;
  // performance.token_tiles: the token tiles (per expert) an engine's fused-MoE kernel of these dtypes picks among
  // on these architectures by FlashInfer's trtllm-gen rule (the one below the next power of two of the tokens per
  // expert, hardware/MoeTiles.cpp); the MoE fit then carries, per tile, how much of the power-of-two tile's
  // padding a call short of it pays (docs/MEASUREMENTS.md, The MoE layer).
  struct TokenTiles {
    MoeScope scope;
    std::vector<int> tiles;  // ascending
    std::string source;
  };
  std::vector<TokenTiles> token_tiles;
  // The tiles `engine`'s `dtype` experts pick among on `architecture`; empty: no token-tile rule.
  [[nodiscard]] std::vector<int> tokenTilesOf(std::string_view engine, std::string_view dtype,
                                              std::string_view architecture) const;
  // performance.moe_runner: an engine whose MoE of these dtypes runs, on these architectures, the kernel another
  // engine's measured fit times (SGLang's GPT-OSS experts on Hopper take the triton_kernels runner that vLLM's
  // OAITritonExperts rows measure), so the step model takes that engine's fit and says so.
  struct MoeRunnerProxy {
    MoeScope scope;
    std::string measured_as;  // the engine whose fit stands for it
    std::string source;
  };
  std::vector<MoeRunnerProxy> moe_runner;
  // The proxy `engine`'s `dtype` experts take on `architecture`; null: its own fit.
  [[nodiscard]] const MoeRunnerProxy* moeRunnerOf(std::string_view engine, std::string_view dtype,
                                                  std::string_view architecture) const;
  // performance.query_quant: with an FP8 KV cache, the engines named quantize the model-dtype query to FP8
  // themselves before this kernel (SGLang's trtllm_mha backend: a dynamic per-tensor quantization, a few
  // small kernels over the query), a cost outside the attention call (queryQuantUs in cost/KvWrite.cpp)
  // that a step pays once per layer. measured_as: the measured implementations whose timed call
  // includes it. launches 0: none.
  struct QueryQuant {
    int launches = 0;
    double bytes_per_element = 0;  // moved per query element over all the launches
    std::vector<std::string> engines;
    std::vector<std::string> measured_as;
    std::string source;
  };
  QueryQuant query_quant;
  // performance.group1_decode: the decode kernel of one query head per KV head (Group1DecodeRule), on
  // one architecture (-1: every one). No rules: a group-1 decode runs the family's one decode kernel.
  struct Group1Decode {
    std::vector<Group1DecodeRule> rules;  // ascending max_head_dim (at most 6)
    int architecture = -1;
    std::string source;
  };
  Group1Decode group1_decode;
  // performance.merge_launch_us: the fixed time of the split-KV merge kernel; unset (< 0), a merge
  // launch costs the family's whole fixed time again.
  double merge_launch_us = -1;
  std::string merge_launch_us_source;
  // performance.surface_batch: a measured surface slice (hardware/AttentionSurface.hpp) is looked up at
  // the call's count of programs, not at its batch: a kernel launching one program per request and KV
  // head (a decode) or per tile_q-row block of a KV head's packed query rows (a prefill), and picking its
  // launch by that count (vLLM's unified attention: the 3D split kernel up to 128 programs, 2D above),
  // measured at other heads switches at another batch (cost/MeasuredCorrection.cpp).
  bool surface_batch_programs = false;
  std::string surface_batch_source;
  // Prefill/extend tiles pack the query heads of one KV head into the query tile (FA3 varlen
  // PackGQA, FlashInfer's packed qo rows, vLLM Triton unified BLOCK_M), so a short or single-token
  // row shares one KV read across its group.
  bool prefill_gqa_packing = false;
  // vLLM's FLEX_ATTENTION (its direct block mask): the batch's query tokens are one sequence cut into
  // blocks of tile_q; a block visits every KV page of every request it holds and, with no full blocks
  // in the mask, computes each visited block whole (no causal skipping, no split).
  bool query_blocks_span_requests = false;
  // A batch mixing prefill/extend rows with single-token decode rows: "one_launch" (one varlen call
  // over every sequence) or "by_phase" (the decode rows run in a decode call after the prefill call);
  // engines that drive the same kernel differently override it per engine.
  std::string mixed_batch = "one_launch";
  std::map<std::string, std::string, std::less<>> mixed_batch_by_engine;
  std::string mixed_batch_source;
  SplitPolicy split_policy;
  // graph: the engine whose wrapper passes the graph split count (vLLM's FLASH_ATTN); under any other
  // engine the kernel runs its own heuristic. Empty: every engine.
  std::string graph_split_engine;
  KernelEfficiency efficiency;  // default
  std::map<std::string, KernelEfficiency, std::less<>> efficiency_by_architecture;

  [[nodiscard]] const KernelEfficiency& efficiencyFor(std::string_view architecture) const;
  // How `engine` runs a mixed batch on this kernel ("one_launch" or "by_phase").
  [[nodiscard]] const std::string& mixedBatchFor(std::string_view engine) const;
  // Prefill tiles hold the query heads of one KV head: declared, or absorbed MLA, whose query heads
  // all share the one latent KV head and are the rows of every tile.
  [[nodiscard]] bool packsQueryHeadsInPrefill() const { return prefill_gqa_packing || attendsLatentCache(); }
  // MLA with the up-projections absorbed (dense or sparse): the queries attend the one latent KV head.
  // Whether `engine` quantizes the query itself before this kernel when the KV cache is FP8.
  [[nodiscard]] bool quantizesQueryIn(std::string_view engine) const {
    return query_quant.launches > 0 &&
           std::find(query_quant.engines.begin(), query_quant.engines.end(), engine) != query_quant.engines.end();
  }
  [[nodiscard]] bool attendsLatentCache() const { return algorithm == "mla_absorbed" || algorithm == "mla_sparse"; }
};

extern const std::vector<std::string> kKernelAlgorithms;

KernelFamily parseKernelFamily(const YamlReader& r);

}  // namespace attnsim
