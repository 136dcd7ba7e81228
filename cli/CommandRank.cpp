#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <vector>

#include "cli/Commands.hpp"
#include "core/Strings.hpp"
#include "reports/Json.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim::cli {

namespace {

// The backends the engines refuse here, each with the engine's reason on one line.
void printRefused(const Ranking& r) {
  fmt::print("\n\n{} backend(s) not valid here{}\n", r.invalid.size(), r.invalid.empty() ? "" : ":");
  std::size_t width = 0;
  for (const auto& entry : r.invalid) width = std::max(width, entry.first.size());
  for (const auto& [backend, why] : r.invalid) {
    std::string line = why;
    std::replace(line.begin(), line.end(), '\n', ' ');
    fmt::print("  {:<{}}  {}\n", backend, width, line);
  }
}

// The rank column: the tie group's place, marked ≈ when the group holds more than one backend.
std::string rankLabel(const Ranking& r, std::size_t i) {
  std::size_t first = i;
  while (first > 0 && r.ranked[first - 1].tie_group == r.ranked[i].tie_group) --first;
  return fmt::format("{}{}", r.ranked[i].tied ? "≈" : "", first + 1);
}

void printDefaults(const Ranking& r) {
  for (const auto& d : r.defaults) {
    if (d.backend == d.best_backend) {
      fmt::print("\n{}: default {} is its fastest valid backend", d.engine, d.backend);
    } else {
      fmt::print("\n{}: default {} is {:.1f}% ({:.1f} µs) slower than its fastest valid backend {}{}", d.engine,
                 d.backend, 100 * d.regret, d.regret_us, d.best_backend,
                 d.within_band ? ", within the uncertainty bands (a tie, not a wrong choice)"
                               : ", outside the uncertainty bands");
    }
  }
}

// The fits column: yes, or no and why (the weights leave no pool, or the batch's KV exceeds it).
std::string fitsLabel(const std::optional<FitCheck>& fit) {
  if (!fit) return "-";
  if (fit->fits) return "yes";
  return fit->reason == "weights" ? "no (W)" : "no (KV)";
}

void printRanking(const Ranking& r) {
  const bool modelled = std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& b) { return b.memory; });
  fmt::print("{}\n", memoryLine(modelled ? std::optional<FitCheck>(r.memory()) : std::nullopt));
  fmt::print("{} · {} · {} · step time with CUDA graphs {}\n\n", r.hardware->id, r.model->id, describe(r.workload),
             r.cuda_graphs ? "on" : "off");
  fmt::print("{:>4}  {:<34} {:>12} {:>6} {:>10} {:>12}  {:<8} {:<7} {}\n", "rank", "backend", "step µs", "±", "vs next",
             "attention µs", "bound", "fits", "figures");
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const RankedBackend& b = r.ranked[i];
    const std::string label = b.engine + ":" + b.backend + (b.variant.empty() ? "" : " [" + b.variant + "]");
    fmt::print("{:>4}  {:<34} {:>12.1f} {:>5.0f}% {:>9.1f}% {:>12.2f}  {:<8} {:<7} {}{}\n", rankLabel(r, i), label,
               b.step_us, 100 * b.band, 100 * b.margin_to_next, b.attention_us, b.bound, fitsLabel(b.memory),
               provenanceLabel(b.provenance), b.engine_default ? "  ← engine default" : "");
  }
  const auto tied = std::count_if(r.ranked.begin(), r.ranked.end(), [](const RankedBackend& b) { return b.tied; });
  if (tied > 0) {
    fmt::print(
        "≈: tied within uncertainty with its group's fastest: the step times differ by less than the two attention "
        "calls' bands (the rest of the step is the same work for every backend); the order inside a group is not a "
        "prediction\n");
  }
  if (std::any_of(r.ranked.begin(), r.ranked.end(), [](const auto& b) { return b.memory && !b.memory->fits; })) {
    fmt::print(
        "fits: whether this backend's deployment holds the batch (the engine sizes its KV pool with the backend's "
        "page size, workspace and graphs); no (W): the weights leave no KV pool, no (KV): the batch's KV exceeds "
        "it\n");
  }
  printDefaults(r);
  printRefused(r);
  std::map<std::string, std::vector<std::string>> runs_as;  // what runs -> the names asked for
  for (const auto& [name, runs] : r.resolved) runs_as[runs.first].push_back(name);
  for (const auto& [target, names] : runs_as) {
    fmt::print("{} runs when asked for {}\n", target, join(names, ", "));
  }
}

}  // namespace

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
    const Catalog c = flags->catalog(global);
    const Scenario s = flags->scenario(flags->hardware, flags->models, "");
    const Ranking r = rankBackends(c, s, splitList(flags->engines));
    if (global.json) {
      std::cout << rankingJson(r, c).dump(2) << "\n";  // "memory" at the top and in every ranked backend
    } else {
      printRanking(r);
    }
    return 0;
  };
}

}  // namespace attnsim::cli
