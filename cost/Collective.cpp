#include "cost/Collective.hpp"

#include "model/ModelSpec.hpp"

namespace attnsim {

double allReduceUs(const InterconnectLink& link, double bytes, int ranks) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  const double bytes_per_us = link.bandwidth_gbps * 1e3;  // GB/s = 1e3 bytes per µs
  return link.latency_us + 2 * (n - 1) / n * bytes / bytes_per_us;
}

double tpCommunicationUs(const ModelSpec& m, const std::optional<InterconnectLink>& link, std::int64_t tokens, int tp,
                         double activation_bytes) {
  if (tp <= 1 || !link) return 0;
  const double bytes = static_cast<double>(tokens) * m.hidden_size * activation_bytes;
  return 2.0 * m.num_layers * allReduceUs(*link, bytes, tp);
}

}  // namespace attnsim
