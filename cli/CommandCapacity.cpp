// attnsim capacity memory: the engine's GPU memory split and KV capacity for one scenario.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/Commands.hpp"
#include "cli/ServeFlags.hpp"
#include "core/Strings.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "reports/Answers.hpp"
#include "simulator/Capacity.hpp"
#include "simulator/CapacitySearch.hpp"
#include "simulator/ServeBenchmark.hpp"
#include "study/CapacitySpec.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim::cli {

constexpr std::int64_t kMaxTp = 1024;  // as --tp in every scenario command

struct SearchFlags {
  ScenarioFlags scenario;  // hardware, models and engines hold comma lists
  std::string tps = "1";
  std::string db;  // also store every search (study/CapacityStore)
  ArrivalSpec arrivals;
  double slo_ttft_ms = 2000, slo_tpot_ms = 50, target_rate = 0;
};

int runSearch(const GlobalOptions& global, const SearchFlags& f) {
  const Catalog& c = global.loadCatalog();
  CapacitySearchSpec spec;
  spec.arrivals = f.arrivals;
  spec.slo = {f.slo_ttft_ms / 1e3, f.slo_tpot_ms / 1e3};
  spec.target_rate = f.target_rate;
  for (const auto& hw : splitList(f.scenario.hardware)) {
    for (const auto& engine : splitList(f.scenario.engines)) {
      for (const auto tp : parseIntList(f.tps, 1, kMaxTp)) {
        ScenarioFlags one = f.scenario;
        one.tp = tp;
        spec.scenarios.push_back(one.scenario(hw, f.scenario.models, engine));
      }
    }
  }
  std::optional<Store> store;
  std::optional<CapacityStore> stored;
  if (!f.db.empty()) stored.emplace(store.emplace(f.db));
  nlohmann::json rows = nlohmann::json::array();
  if (!global.json) fmt::print("{}", capacitySearchHeader(spec));
  searchCapacities(c, spec, [&](const CapacitySearchRow& row) {
    if (stored && row.capacity) storeCapacitySearch(*stored, row, f.arrivals, spec.slo, f.target_rate);
    rows.push_back(capacitySearchJson(row, f.target_rate));
    if (!global.json) fmt::print("{}", capacitySearchText(row, f.target_rate));
  });
  if (global.json) std::cout << rows.dump(2) << "\n";
  return 0;
}

CLI::App* addSearch(CLI::App& app, SearchFlags& f) {
  CLI::App* search = app.add_subcommand("search", "highest request rate within an SLO, and GPUs for a target rate");
  search->add_option("--hardware", f.scenario.hardware, "hardware profile ids, comma list")->required();
  search->add_option("--model", f.scenario.models, "model id")->required();
  search->add_option("--engine", f.scenario.engines, "engine ids, comma list")->required();
  search->add_option("--tp", f.tps, "tensor-parallel sizes, comma list (default 1)")->check(integerList(1, kMaxTp));
  search->add_option("--kv-dtype", f.scenario.kv_dtype, "KV-cache dtype as the engine spells it");
  search->add_option("--option", f.scenario.engine_options,
                     "engine flag name=value, given to every engine of the list (repeatable)");
  addArrivalFlags(*search, f.arrivals);
  search->add_option("--slo-ttft-ms", f.slo_ttft_ms, "SLO on p99 time to first token")->check(positiveNumber());
  search->add_option("--slo-tpot-ms", f.slo_tpot_ms, "SLO on p99 time per output token")->check(positiveNumber());
  search->add_option("--target-rate", f.target_rate, "requests per second to serve: prints the GPUs needed")
      ->check(positiveNumber());
  search->add_option("--db", f.db, "study file: also store every simulation (report capacity reads it)");
  return search;
}

struct StudyFlags {
  std::string spec, db;
};

int runStudy(const GlobalOptions& global, const StudyFlags& f) {
  const Catalog& c = global.loadCatalog();
  const CapacitySpec spec = loadCapacitySpec(f.spec, c);
  Store store(f.db);
  nlohmann::json rows = nlohmann::json::array();
  CapacityStudyOptions options;
  options.program_version = ATTNSIM_VERSION;
  if (!global.json) {
    fmt::print("capacity study {}: {} configurations, p99 TTFT <= {:g} ms, p99 TPOT <= {:g} ms; {}\n\n", spec.name,
               capacityConfigs(spec).size(), spec.slo.ttft_s * 1e3, spec.slo.tpot_s * 1e3,
               describeArrivals(spec.arrivals));
    fmt::print("{:<10}{:<15}{:<32}{:>4}{:>12}  {}\n", "hardware", "model", "engine:backend", "TP", "max req/s", "note");
  }
  options.on_config = [&](const CapacityConfigRow& r) {
    rows.push_back(capacityConfigJson(r));
    if (global.json) return;
    fmt::print("{}", capacityConfigText(r));
    std::fflush(stdout);
  };
  const std::int64_t id = runCapacityStudy(c, spec, store, options);
  if (global.json) {
    std::cout << nlohmann::json{{"study", id}, {"name", spec.name}, {"db", f.db}, {"configs", rows}}.dump(2) << "\n";
  } else {
    fmt::print("\nstored as capacity study {} in {} (attnsim report capacity --db {} --out DIR)\n", id, f.db, f.db);
  }
  return 0;
}

CLI::App* addStudy(CLI::App& app, StudyFlags& f) {
  CLI::App* study =
      app.add_subcommand("study", "a capacity study: the rate search over a spec's configurations, stored");
  study->add_option("spec", f.spec, "a built-in spec (" + join(builtinCapacitySpecNames(), ", ") + ") or a YAML file")
      ->required();
  study->add_option("--db", f.db, "study file the results go to")->required();
  return study;
}

Runner addCapacityCommand(CLI::App& app, const GlobalOptions& global) {
  app.require_subcommand(1);
  CLI::App* memory = app.add_subcommand("memory", "the engine's GPU memory split and KV-cache capacity");
  auto flags = std::make_shared<ScenarioFlags>();
  memory->add_option("--hardware", flags->hardware, "hardware profile id")->required();
  memory->add_option("--model", flags->models, "model id")->required();
  memory->add_option("--engine", flags->engines, "engine id")->required();
  memory->add_option("--backend", flags->backend, "engine:NAME (default: the engine's own choice)");
  flags->addServing(*memory);
  memory->add_option("--cuda-graph", flags->cuda_graph, "on or off")->check(CLI::IsMember({"on", "off"}));
  auto search_flags = std::make_shared<SearchFlags>();
  search_flags->arrivals.requests = 1000;
  CLI::App* search = addSearch(app, *search_flags);
  auto study_flags = std::make_shared<StudyFlags>();
  CLI::App* study = addStudy(app, *study_flags);
  return [&global, flags, memory, search, search_flags, study, study_flags]() {
    if (search->parsed()) return runSearch(global, *search_flags);
    if (study->parsed()) return runStudy(global, *study_flags);
    if (!memory->parsed()) return 2;
    const Catalog& c = global.loadCatalog();
    const CapacityReport r = capacityOf(c, flags->scenario(flags->hardware, flags->models, flags->engines));
    if (global.json) {
      std::cout << memorySplitJson(r).dump(2) << "\n";
    } else {
      fmt::print("{}", memorySplitText(r));
    }
    return r.split.weightsFit() ? 0 : 1;
  };
}

}  // namespace attnsim::cli
