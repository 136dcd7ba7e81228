#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/PredictFlags.hpp"

namespace attnsim::cli {

using nlohmann::json;

Runner addRankCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<PredictFlags>();
  flags->addTo(app, true);
  return [&global, flags]() {
    const Catalog c = flags->catalog(global);
    const HardwareProfile& hw = c.hardware(flags->hardware);
    const ModelSpec model = flags->resolveModel(c);
    const Workload w = flags->workload();
    const bool graphs_on = flags->cuda_graph == "on";
    std::vector<std::string> engines = splitList(flags->engines);
    if (engines.empty()) {
      for (const auto& e : c.engines()) engines.push_back(e.policy.engine);
    }
    struct Row {
      std::string engine, backend, variant;
      double step_us, attention_us;
      std::string bound;
    };
    std::vector<Row> rows;
    json invalid = json::object();
    json defaults = json::object();
    std::map<std::string, std::string> auto_choice;
    for (const auto& id : engines) {
      const Engine& e = c.engine(id);
      const ServingOptions o = flags->serving();
      const EngineRun own = runEngine(c, hw, model, e, o, std::nullopt, w.phase);
      auto_choice[id] = own.choice ? own.choice->name : "";
      for (const auto& name : backendNames(e)) {
        const EngineRun run = runEngine(c, hw, model, e, o, name, w.phase);
        if (run.selection.refusal) {
          invalid[id + ":" + name] = *run.selection.refusal;
          continue;
        }
        const Predictor predictor(c, inputFor(hw, model, e, run, c, graphs_on));
        const Prediction p = predictor.predict(w);
        rows.push_back({id, name, run.choice->variant, stepOf(p, graphs_on), p.attention_us,
                        boundName(p.attention.front().cost.bound)});
      }
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.step_us != b.step_us ? a.step_us < b.step_us : a.engine + a.backend < b.engine + b.backend;
    });
    if (rows.empty()) throw EngineRefusal("no backend of the chosen engines can run this scenario");
    const double best = rows.front().step_us;
    json ranked = json::array();
    if (!global.json) {
      fmt::print("{} · {} · {} · step time with CUDA graphs {}\n\n", hw.id, model.id, describe(w),
                 graphs_on ? "on" : "off");
      fmt::print("{:>4}  {:<34} {:>12} {:>10} {:>12}  {}\n", "rank", "backend", "step µs", "vs next", "attention µs",
                 "bound");
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const double margin = i + 1 < rows.size() ? rows[i + 1].step_us / r.step_us - 1 : 0;
      const std::string label = r.engine + ":" + r.backend + (r.variant.empty() ? "" : " [" + r.variant + "]");
      const bool is_default = auto_choice[r.engine] == r.backend;
      if (global.json) {
        ranked.push_back({{"engine", r.engine},
                          {"backend", r.backend},
                          {"variant", r.variant},
                          {"step_us", r.step_us},
                          {"attention_us", r.attention_us},
                          {"margin_to_next", margin},
                          {"bound", r.bound},
                          {"engine_default", is_default}});
      } else {
        fmt::print("{:>4}  {:<34} {:>12.1f} {:>9.1f}% {:>12.2f}  {}{}\n", i + 1, label, r.step_us, 100 * margin,
                   r.attention_us, r.bound, is_default ? "  ← engine default" : "");
      }
    }
    for (const auto& id : engines) {
      const auto it = std::find_if(rows.begin(), rows.end(),
                                   [&](const Row& r) { return r.engine == id && r.backend == auto_choice[id]; });
      if (it == rows.end()) continue;
      const auto own_best = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.engine == id; });
      const double regret = it->step_us / own_best->step_us - 1;
      defaults[id] = {{"backend", it->backend},
                      {"step_us", it->step_us},
                      {"best_backend", own_best->backend},
                      {"regret", regret},
                      {"regret_us", it->step_us - own_best->step_us}};
      if (!global.json) {
        fmt::print("\n{}: default {} is {:.1f}% ({:.1f} µs) slower than its fastest valid backend {}", id, it->backend,
                   100 * regret, it->step_us - own_best->step_us, own_best->backend);
      }
    }
    if (global.json) {
      std::cout << json{{"ranked", ranked},
                        {"engine_defaults", defaults},
                        {"invalid", invalid},
                        {"best_step_us", best},
                        {"catalog_hash", c.contentHash()}}
                       .dump(2)
                << "\n";
    } else {
      fmt::print("\n\n{} backends not valid here (attnsim --json rank lists the reasons)\n", invalid.size());
    }
    return 0;
  };
}

}  // namespace attnsim::cli
