// attnsim serve-sim: a request-level serving simulation of one engine on one GPU (or TP group).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "cli/ServeFlags.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "reports/Answers.hpp"
#include "simulator/CapacitySearch.hpp"
#include "simulator/ServeBenchmark.hpp"
#include "simulator/ServeRun.hpp"
#include "simulator/Traces.hpp"
#include "study/CapacityStore.hpp"

namespace attnsim::cli {

namespace {

// The run in the study file: its configuration (memory split), aggregates, requests and timeline.
std::int64_t storeRun(const ServeFlags& f, const ServeBenchmarkRun& b, const std::vector<ServeRequest>& requests) {
  const ServeRun& run = b.run;
  Store store(f.db);
  CapacityStore out(store);
  const CapacityReport& c = run.setup.capacity;
  CapacityConfigRow config{c.hardware->id,
                           c.model->id,
                           c.engine,
                           c.backend,
                           c.kv_dtype,
                           !f.scenario.backend.empty(),
                           c.tp,
                           f.scenario.cuda_graph != "off",
                           c.split,
                           "",
                           std::nullopt,
                           0,
                           1};
  const std::int64_t id = out.addConfig(std::nullopt, config);
  const ServeSlo slo = sloOf(f);
  const double last = requests.empty() ? 0 : requests.back().arrival_s;
  const double rate = f.trace.empty() ? f.arrivals.rate : last > 0 ? static_cast<double>(requests.size()) / last : 0;
  std::string arrivals =
      f.trace.empty() ? describeArrivals(f.arrivals) : fmt::format("trace {} ({} requests)", f.trace, requests.size());
  if (f.client.max_concurrency > 0) arrivals.append(fmt::format(", at most {} in flight", f.client.max_concurrency));
  return out.addRun(id, {"serve-sim", arrivals, rate, slo, b.meets_slo, false}, run.result, true);
}

int runServeSim(const GlobalOptions& global, const ServeFlags& f) {
  const Catalog c = global.loadCatalog();
  const ServeOutcome out = simulateServe(c, f);
  if (!f.write_trace.empty()) {
    std::string text = "arrival_s,prompt_tokens,output_tokens\n";
    for (const auto& q : out.requests)
      text.append(fmt::format("{:.6f},{},{}\n", q.arrival_s, q.prompt_tokens, q.output_tokens));
    writeFileAtomically(f.write_trace, text);
  }
  if (!f.db.empty()) storeRun(f, out.bench, out.requests);
  if (global.json) {
    std::cout << serveBenchmarkJson(out.bench).dump(2) << "\n";
  } else {
    fmt::print("{}", serveBenchmarkText(out.bench));
  }
  return 0;
}

}  // namespace

Runner addServeSimCommand(CLI::App& app, const GlobalOptions& global) {
  auto f = std::make_shared<ServeFlags>();
  addServeFlags(app, *f);
  return [&global, f, &app]() {
    finishServeFlags(app, *f);
    return runServeSim(global, *f);
  };
}

}  // namespace attnsim::cli
