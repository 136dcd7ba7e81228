#include "cost/Collective.hpp"

#include "model/ModelSpec.hpp"

namespace attnsim {

bool customAllReduceRuns(const InterconnectLink& link, int ranks) {
  const bool supported_size = ranks == 2 || ranks == 4 || ranks == 6 || ranks == 8;
  return supported_size && (ranks == 2 || link.kind != "pcie");
}

const AllReduceFit* allReduceFitFor(const InterconnectLink& link, int ranks, std::string_view engine) {
  if (engine == kNcclAllReduce || !customAllReduceRuns(link, ranks)) return link.ncclAllReduce();
  return link.allReduceFor(engine);
}

double allReduceUs(const InterconnectLink& link, double bytes, int ranks, std::string_view engine) {
  if (ranks <= 1) return 0;
  if (const AllReduceFit* fit = allReduceFitFor(link, ranks, engine)) return fit->us(bytes, ranks);
  const double n = ranks;
  const double bytes_per_us = link.bandwidth_gbps * 1e3;  // GB/s = 1e3 bytes per µs
  return link.latency_us + 2 * (n - 1) / n * bytes / bytes_per_us;
}

double tpCommunicationUs(const ModelSpec& m, const std::optional<InterconnectLink>& link, std::int64_t tokens, int tp,
                         double activation_bytes, std::string_view engine) {
  if (tp <= 1 || !link) return 0;
  const double bytes = static_cast<double>(tokens) * m.hidden_size * activation_bytes;
  return 2.0 * m.num_layers * allReduceUs(*link, bytes, tp, engine);
}

double allGatherUs(const InterconnectLink& link, double total_bytes, int ranks) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  return link.latency_us + (n - 1) / n * total_bytes / (link.bandwidth_gbps * 1e3);
}

double dpAttentionCommunicationUs(const ModelSpec& m, const std::optional<InterconnectLink>& link,
                                  std::int64_t replica_tokens, std::int64_t gathered_tokens, bool max_len, int tp,
                                  int attention_dp, double activation_bytes, std::string_view engine) {
  if (tp <= 1 || !link) return 0;
  const double token_bytes = m.hidden_size * activation_bytes;
  const double replica_bytes = static_cast<double>(replica_tokens) * token_bytes;
  const double gathered = static_cast<double>(gathered_tokens) * token_bytes;
  const double gather = max_len ? allGatherUs(*link, gathered, tp) : allReduceUs(*link, gathered, tp, engine);
  const double per_layer =
      allReduceUs(*link, replica_bytes, tp / attention_dp, engine) + gather + allGatherUs(*link, gathered, tp);
  return m.num_layers * per_layer;
}

}  // namespace attnsim
