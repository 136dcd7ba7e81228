#include <fmt/format.h>

#include <iostream>

#include "cli/Commands.hpp"
#include "core/Strings.hpp"
#include "reports/Answers.hpp"
#include "reports/Json.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim::cli {

Runner addRankCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<ScenarioFlags>();
  app.add_option("--hardware", flags->hardware, "hardware profile id")->required();
  app.add_option("--model", flags->models, "model id (or give --num-heads etc. for a model outside the catalog)");
  app.add_option("--engine", flags->engines, "engine id(s), comma list (default: all engines)");
  flags->addWorkload(app);
  flags->addServing(app);
  flags->addStudy(app);
  flags->addGeometry(app);
  return [&global, flags]() {
    if (const int listed = runListStudy(*flags, global, true); listed >= 0) return listed;
    const auto catalog = flags->catalog(global);
    const Catalog& c = *catalog;
    const Scenario s = flags->scenario(flags->hardware, flags->models, "");
    const Ranking r = rankBackends(c, s, splitList(flags->engines));
    if (global.json) {
      std::cout << rankingJson(r, c).dump(2) << "\n";  // "memory" at the top and in every ranked backend
    } else {
      fmt::print("{}", rankingText(r));
    }
    return 0;
  };
}

}  // namespace attnsim::cli
