// attnsim report serving --published DIR --out DIR: serve-sim against the published serving
// benchmarks of DIR (published.csv and the serve-sim setups of its runs, setups.csv).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/ServeFlags.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "core/Progress.hpp"
#include "core/Strings.hpp"
#include "reports/ServingValidationReport.hpp"
#include "reports/StudyReports.hpp"

namespace attnsim::cli {

namespace {

// One setup's flags (its own or under another reading) parsed as serve-sim parses them; a bad flag
// names the setup's line.
ServeFlags parseSetupFlags(const ServingSetup& s, const std::vector<std::string>& flags, const std::string& path) {
  CLI::App app("serve-sim");
  ServeFlags f;
  addServeFlags(app, f);
  std::vector<std::string> args(flags.rbegin(), flags.rend());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    throw LocatedInputError({path, s.line, 1}, "serve_sim_flags", fmt::format("{}: {}", s.id, e.what()));
  }
  finishServeFlags(app, f);
  if (!f.trace.empty() || !f.db.empty() || !f.write_trace.empty()) {
    throw LocatedInputError({path, s.line, 1}, "serve_sim_flags",
                            fmt::format("{}: --trace, --db and --write-trace have no place in a setup", s.id));
  }
  return f;
}

// serve-sim's metrics for `flags`; fills `backend` with the engine:backend it ran.
std::map<std::string, double> simulateSetup(const Catalog& c, const ServingSetup& s,
                                            const std::vector<std::string>& flags, const std::string& path,
                                            std::string& backend) {
  const ServeFlags f = parseSetupFlags(s, flags, path);
  try {
    const ServeOutcome o = simulateServe(c, f);
    const ServeRun& r = o.bench.run;
    backend = fmt::format("{}:{}", r.setup.capacity.engine, r.setup.capacity.backend);
    return servingMetricsOf(r.result);
  } catch (const InputError& e) {
    throw LocatedInputError({path, s.line, 1}, "serve_sim_flags", fmt::format("{}: {}", s.id, e.what()));
  } catch (const EngineRefusal& e) {
    throw LocatedInputError({path, s.line, 1}, "serve_sim_flags",
                            fmt::format("{}: the engine refuses the setup: {}", s.id, e.what()));
  }
}

ServingComparison compareRun(const Catalog& c, const PublishedServingRun& run, const ServingSetup& s,
                             const std::string& path) {
  ServingComparison out{&run, &s, "attnsim serve-sim " + join(s.flags, " "), {}, {}, {}};
  out.predicted = simulateSetup(c, s, s.flags, path, out.backend);
  for (const auto& reading : s.readings) {
    const auto flags = flagsUnderReading(s.flags, reading);
    std::string backend;
    out.readings.push_back(
        {reading, "attnsim serve-sim " + join(flags, " "), simulateSetup(c, s, flags, path, backend)});
  }
  return out;
}

}  // namespace

int runServingReport(const GlobalOptions& global, const std::string& published_dir, const std::string& out_dir) {
  const Catalog& c = global.loadCatalog();
  const auto dir = std::filesystem::path(published_dir);
  const std::string published_path = (dir / "published.csv").string(), setups_path = (dir / "setups.csv").string();
  const std::vector<PublishedServingRun> published = readPublishedServing(published_path);
  const std::vector<ServingSetup> setups = readServingSetups(setups_path, published);
  ServingValidation v;
  std::vector<std::pair<const PublishedServingRun*, const ServingSetup*>> todo;
  for (const auto& run : published) {
    const auto s = std::find_if(setups.begin(), setups.end(), [&](const ServingSetup& x) { return x.id == run.id; });
    if (s == setups.end()) {
      if (run.complete()) v.no_setup.push_back(&run);
    } else if (s->flags.empty()) {
      v.not_run.push_back(&*s);
    } else {
      todo.emplace_back(&run, &*s);
    }
  }
  Progress progress("serving runs", "runs");
  v.compared.reserve(todo.size());
  for (const auto& [run, setup] : todo) {
    v.compared.push_back(compareRun(c, *run, *setup, setups_path));
    progress.update(v.compared.size(), todo.size());
  }
  summarizeServing(v);
  const std::string command = fmt::format("attnsim report serving --published {} --out {}",
                                          study_report::shellWord(published_dir), study_report::shellWord(out_dir));
  std::filesystem::create_directories(out_dir);
  const auto out = std::filesystem::path(out_dir);
  writeFileAtomically(out / "serving-validation.md", servingValidationMarkdown(v, command));
  writeFileAtomically(out / "serving-validation.csv", servingValidationCsv(v));
  const nlohmann::json j = servingValidationJson(v, command);
  writeFileAtomically(out / "serving-validation.json", j.dump(2) + "\n");
  if (global.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    fmt::print("{} runs predicted, {} not expressible; wrote {}/serving-validation.md, .csv and .json\n",
               v.compared.size(), v.not_run.size() + v.no_setup.size(), out_dir);
  }
  return 0;
}

}  // namespace attnsim::cli
