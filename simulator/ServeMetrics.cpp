#include "simulator/ServeMetrics.hpp"

#include <algorithm>
#include <cmath>

namespace attnsim {

Percentiles percentilesOf(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size()))) - 1;
    return values[std::min(i, values.size() - 1)];
  };
  double sum = 0;
  for (const double v : values) sum += v;
  p.mean = sum / static_cast<double>(values.size());
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.max = values.back();
  return p;
}

void aggregateServing(const SchedulerConfig& c, const ServeSlo& slo, ServeResult& r) {
  std::vector<double> ttft, tpot, e2e, queue;
  std::int64_t tokens = 0, input = 0, good = 0, served = 0;
  for (const auto& o : r.requests) {
    if (o.finish_s <= 0) continue;  // rejected
    ++served;
    ttft.push_back(o.ttft());
    if (o.output_tokens > 1) tpot.push_back(o.tpot());
    e2e.push_back(o.e2e());
    queue.push_back(o.queueing());
    tokens += o.output_tokens;
    input += o.prompt_tokens;
    if (o.ttft() <= slo.ttft_s && o.tpot() <= slo.tpot_s && o.e2e() <= slo.e2e_s) ++good;
  }
  r.ttft = percentilesOf(ttft);
  r.tpot = percentilesOf(tpot);
  r.e2e = percentilesOf(e2e);
  r.queueing = percentilesOf(queue);
  r.itl = percentilesOf(std::move(r.itl_samples));
  r.itl_samples.clear();
  const double span = r.makespan_s > 0 ? r.makespan_s : 1;
  r.completed = served;
  r.total_input_tokens = input;
  r.total_output_tokens = tokens;
  r.output_tokens_per_s = static_cast<double>(tokens) / span;
  r.total_tokens_per_s = static_cast<double>(tokens + input) / span;
  r.requests_per_s = static_cast<double>(served) / span;
  r.goodput_rps = static_cast<double>(good) / span;
  r.slo_attainment = served > 0 ? static_cast<double>(good) / static_cast<double>(served) : 0;
  r.time_avg_in_system = r.in_system_seconds / span;
  double batch = 0, kv = 0;
  for (const auto& p : r.timeline) {
    batch += static_cast<double>(p.running);
    const double use = c.kv_tokens > 0 ? static_cast<double>(p.kv_used_tokens) / static_cast<double>(c.kv_tokens) : 0;
    kv += use;
    r.peak_kv_use = std::max(r.peak_kv_use, use);
  }
  const double n = r.timeline.empty() ? 1 : static_cast<double>(r.timeline.size());
  r.mean_batch = batch / n;
  r.mean_kv_use = kv / n;
}

}  // namespace attnsim
