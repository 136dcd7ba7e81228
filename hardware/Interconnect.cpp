#include "hardware/Interconnect.hpp"

namespace attnsim {

const std::vector<std::string> kInterconnectKinds = {"nvswitch", "nvlink", "xgmi", "pcie"};

const AllReduceFit* InterconnectLink::allReduceFor(std::string_view engine) const {
  const AllReduceFit* first = nullptr;
  for (const auto& f : all_reduces) {
    if (f.engine == engine) return &f;
    if (!first && f.engine != kNcclAllReduce) first = &f;
  }
  return first ? first : ncclAllReduce();
}

const AllReduceFit* InterconnectLink::ncclAllReduce() const {
  for (const auto& f : all_reduces) {
    if (f.engine == kNcclAllReduce) return &f;
  }
  return nullptr;
}

std::optional<InterconnectLink> parseInterconnectLink(const YamlReader& profile) {
  const auto r = profile.findMap("interconnect_link");
  if (!r) return std::nullopt;
  InterconnectLink l;
  l.kind = r->getOneOf("kind", kInterconnectKinds);
  l.bandwidth_gbps = r->getNumber("bandwidth_gbps", 1, 1e5);
  l.latency_us = r->getNumber("latency_us", 0, 1e4);
  l.max_gpus = static_cast<int>(r->getInt("max_gpus", 1, 1024));
  l.source = r->get<std::string>("source");
  r->finish();
  return l;
}

}  // namespace attnsim
