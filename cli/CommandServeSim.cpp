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

int runServeSim(const GlobalOptions& global, const ServeFlags& f) {
  const Catalog& c = global.loadCatalog();
  const ServeOutcome out = simulateServe(c, f);
  if (!f.write_trace.empty()) writeFileAtomically(f.write_trace, requestsCsv(out.requests));
  if (!f.db.empty()) {
    // The run in the study file: its configuration (memory split), aggregates, requests and timeline.
    storeServeSimRun(f.db, out.bench, out.requests,
                     {!f.scenario.backend.empty(), f.scenario.cuda_graph != "off", f.trace, f.arrivals,
                      f.client.max_concurrency, sloOf(f)});
  }
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
