#include "cost/HostTime.hpp"

#include "backends/ServingPolicy.hpp"

namespace attnsim {

double HostStepCost::hostUs(const Workload& w) const {
  return fixed_us + per_request_us * static_cast<double>(w.requests()) + per_token_us * static_cast<double>(w.tokens());
}

HostStepCost hostStepCost(const ServingHost& host, bool overlap, const Env& env) {
  HostStepCost c;
  for (const HostWorkTerm& t : host.terms) {
    if (t.when && !truthy(t.when->evaluate(env))) continue;
    c.fixed_us += t.fixed_us;
    c.per_request_us += t.per_request_us;
    c.per_token_us += t.per_token_us;
  }
  c.overlap = overlap;
  return c;
}

}  // namespace attnsim
