#pragma once
// Tensor-parallel communication: the all-reduces a TP-sharded forward step issues, timed over the
// hardware's interconnect link (alpha-beta ring model). Not modelled: expert-parallel all-to-all,
// pipeline-parallel sends, multi-node links, compute/communication overlap (docs/CAPACITY.md).
#include <cstdint>
#include <optional>
#include <string_view>

#include "hardware/Interconnect.hpp"

namespace attnsim {

struct ModelSpec;

// Whether the engines' custom all-reduce runs over `ranks` GPUs of this link. vLLM and SGLang disable it
// (and every all-reduce of the group goes to NCCL) for a world size outside 2, 4, 6 and 8, and for more
// than two GPUs that are not fully connected (PCIe): vllm-project/vllm@0ad80649
// vllm/distributed/device_communicators/custom_all_reduce.py CustomAllreduce.__init__ (_SUPPORTED_WORLD_SIZES,
// fully_connected), sgl-project/sglang@004e6561 python/sglang/srt/distributed/device_communicators/
// custom_all_reduce.py (the same checks, full_nvlink). A message above the custom kernel's size limit goes
// to NCCL too, but inside the engine: the engines' measured fits already time those calls.
bool customAllReduceRuns(const InterconnectLink& link, int ranks);

// The measured all-reduce an engine runs over `ranks` GPUs of the link: NCCL's where the custom one does
// not run (or `engine` is nccl), else the engine's own (InterconnectLink::allReduceFor); null: none
// measured, the ring model applies.
const AllReduceFit* allReduceFitFor(const InterconnectLink& link, int ranks, std::string_view engine);

// One all-reduce of `bytes` over `ranks` GPUs: the measured all-reduce allReduceFitFor picks, else a
// ring: latency + 2(n-1)/n · bytes / bandwidth.
double allReduceUs(const InterconnectLink& link, double bytes, int ranks, std::string_view engine = {});

// Two all-reduces per decoder layer (after the attention output projection and after the MLP or
// MoE down projection) of tokens × hidden activations. 0 at TP 1 or without a described link.
double tpCommunicationUs(const ModelSpec& m, const std::optional<InterconnectLink>& link, std::int64_t tokens, int tp,
                         double activation_bytes, std::string_view engine = {});

// One ring all-gather (or reduce-scatter) whose gathered result is `total_bytes` over `ranks` GPUs:
// latency + (n-1)/n · total_bytes / bandwidth.
double allGatherUs(const InterconnectLink& link, double total_bytes, int ranks);

// SGLang DP attention per decoder layer (layers/dp_attention.py dp_gather / dp_scatter): the attention
// output all-reduced inside each replica's tp / dp ranks (none at one rank); then the replicas' tokens
// gathered over the tp ranks before the MLP, `gathered_tokens` in all: an all-gather of equal
// (padded) shares when `max_len`, else an all-reduce of the tokens laid end to end; and a
// reduce-scatter of them after the MLP, instead of the plain TP all-reduce. 0 at TP 1 or without a link.
double dpAttentionCommunicationUs(const ModelSpec& m, const std::optional<InterconnectLink>& link,
                                  std::int64_t replica_tokens, std::int64_t gathered_tokens, bool max_len, int tp,
                                  int attention_dp, double activation_bytes, std::string_view engine = {});

}  // namespace attnsim
