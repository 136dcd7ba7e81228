#include "cost/HostTime.hpp"

#include "backends/ServingPolicy.hpp"

namespace attnsim {

double HostStepCost::hostUs(const Workload& w) const {
  double requests = 0, tokens = 0;
  for (const auto& g : w.groups) {
    requests += static_cast<double>(g.count);
    tokens += static_cast<double>(g.count) * static_cast<double>(g.q_len);
  }
  return fixed_us + per_request_us * requests + per_token_us * tokens;
}

HostStepCost hostStepCost(const ServingHost& host, bool overlap) {
  HostStepCost c;
  for (const HostWorkTerm& t : host.terms) {
    c.fixed_us += t.fixed_us;
    c.per_request_us += t.per_request_us;
    c.per_token_us += t.per_token_us;
  }
  c.overlap = overlap;
  return c;
}

}  // namespace attnsim
