// A lone serve-sim run and a capacity search as the store keeps them (study/CapacityStore.hpp):
// the rows serve-sim --db and capacity search --db write, and Python's db= keyword too.
#include <fmt/format.h>

#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "study/CapacityStore.hpp"

namespace attnsim {

std::int64_t storeServeSimRun(const std::string& db, const ServeBenchmarkRun& b,
                              const std::vector<ServeRequest>& requests, const ServeSimRecord& r) {
  const ServeRun& run = b.run;
  Store store(db);
  CapacityStore out(store);
  const CapacityReport& c = run.setup.capacity;
  CapacityConfigRow config{
      c.hardware->id, c.model->id, c.engine,     c.backend, c.kv_dtype, r.forced_backend, c.tp, r.cuda_graphs,
      c.split,        "",          std::nullopt, 0,         1};
  const std::int64_t id = out.addConfig(std::nullopt, config);
  const double last = requests.empty() ? 0 : requests.back().arrival_s;
  const double rate = r.trace.empty() ? r.arrivals.rate : last > 0 ? static_cast<double>(requests.size()) / last : 0;
  std::string arrivals =
      r.trace.empty() ? describeArrivals(r.arrivals) : fmt::format("trace {} ({} requests)", r.trace, requests.size());
  if (r.max_concurrency > 0) arrivals.append(fmt::format(", at most {} in flight", r.max_concurrency));
  return out.addRun(id, {"serve-sim", arrivals, rate, r.slo, b.meets_slo, false}, run.result, true);
}

void storeCapacitySearch(CapacityStore& out, const CapacitySearchRow& row, const ArrivalSpec& arrivals,
                         const ServeSlo& slo, double target_rate) {
  const CapacityReport& c = *row.capacity;
  const RateSearch& r = row.search;
  CapacityConfigRow config{c.hardware->id,  c.model->id, c.engine,    c.backend,  c.kv_dtype,  row.forced_backend, c.tp,
                           row.cuda_graphs, c.split,     r.slo_unmet, r.max_rate, target_rate, r.simulations};
  const std::int64_t id = out.addConfig(std::nullopt, config);
  out.addSearch(id, describeArrivals(arrivals), slo, r);
}

std::string requestsCsv(const std::vector<ServeRequest>& requests) {
  std::string text = "arrival_s,prompt_tokens,output_tokens\n";
  for (const auto& q : requests)
    text.append(fmt::format("{:.6f},{},{}\n", q.arrival_s, q.prompt_tokens, q.output_tokens));
  return text;
}

}  // namespace attnsim
