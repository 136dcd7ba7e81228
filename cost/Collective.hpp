#pragma once
// Tensor-parallel communication: the all-reduces a TP-sharded forward step issues, timed over the
// hardware's interconnect link (alpha-beta ring model). Not modelled: expert-parallel all-to-all,
// pipeline-parallel sends, multi-node links, compute/communication overlap (docs/CAPACITY.md).
#include <cstdint>
#include <optional>

#include "hardware/Interconnect.hpp"

namespace attnsim {

struct ModelSpec;

// One ring all-reduce of `bytes` over `ranks` GPUs: latency + 2(n-1)/n · bytes / bandwidth.
double allReduceUs(const InterconnectLink& link, double bytes, int ranks);

// Two all-reduces per decoder layer (after the attention output projection and after the MLP or
// MoE down projection) of tokens × hidden activations. 0 at TP 1 or without a described link.
double tpCommunicationUs(const ModelSpec& m, const std::optional<InterconnectLink>& link, std::int64_t tokens, int tp,
                         double activation_bytes);

}  // namespace attnsim
