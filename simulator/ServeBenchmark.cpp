#include "simulator/ServeBenchmark.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace attnsim {

std::vector<ServeRequest> warmupRequests(const std::vector<ServeRequest>& requests, std::int64_t n) {
  if (requests.empty() || n <= 0) return {};
  const ServeRequest first = requests.front();
  return std::vector<ServeRequest>(static_cast<std::size_t>(n),
                                   {0, first.prompt_tokens, std::min<std::int64_t>(first.output_tokens, 32)});
}

ServeBenchmarkRun runServeBenchmark(const Catalog& c, const Scenario& s, const ServeBenchmark& b) {
  const auto start = std::chrono::steady_clock::now();
  ServeSession session(c, s);
  const std::vector<ServeRequest> warmup = warmupRequests(b.requests, b.warmup_requests);
  ServeBenchmarkRun out;
  out.warmup_s = warmup.empty() ? 0 : session.run(warmup, b.slo).makespan_s;
  ServeClient client = b.client;
  if (!b.client_of.empty()) client.loop = benchmarkClientOf(c, b.client_of);
  out.client = client.loop;
  out.run = {session.setup(), session.run(b.requests, b.slo, client)};
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.requests = b.requests.size();
  out.warmup_requests = warmup.size();
  out.max_concurrency = b.client.max_concurrency;
  out.ignore_eos = b.ignore_eos;
  out.generated = b.generated;
  out.meets_slo = meetsSlo(out.run.result, b.slo);
  return out;
}

void searchCapacities(const Catalog& c, const CapacitySearchSpec& spec,
                      const std::function<void(const CapacitySearchRow&)>& on_row) {
  for (const auto& s : spec.scenarios) {
    CapacitySearchRow row;
    row.hardware = s.hardware;
    row.engine = s.engine;
    row.tp = s.tp;
    row.forced_backend = s.backend.has_value();
    row.cuda_graphs = s.cuda_graphs;
    try {
      ServeSession session(c, s);
      row.search = searchRate(session, spec.arrivals, spec.slo);
      row.capacity = session.setup().capacity;
    } catch (const std::runtime_error& e) {  // InputError or EngineRefusal: a refusal or weights that do not fit
      row.error = e.what();
    }
    on_row(row);
  }
}

}  // namespace attnsim
