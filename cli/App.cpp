// The attnsim program: parses the command line, runs the subcommand, maps every outcome to an exit
// code and (with --json) to JSON on stdout.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace {

using namespace attnsim;

using Commands = std::vector<std::pair<CLI::App*, cli::Runner>>;

// Exit codes: 0 answered, 1 the answer is "no" (an engine refuses; a check fails), 2 the input is
// wrong (flags, ids, catalog or measurement files), 3 a bug in attnsim.
enum ExitCode : int { kAnswered = 0, kRefused = 1, kBadInput = 2, kInternal = 3 };

// One outcome that is not an answer: text on stderr, or with --json an `error` object on stdout.
struct Failure {
  int exit_code = kBadInput;
  std::string kind;  // usage, input, catalog, refusal, internal
  std::string message;
  std::optional<SourceLocation> where;
  std::string key;
};

int report(const Failure& f, bool json) {
  if (!json) {
    std::cerr << (f.kind == "refusal" ? "" : "attnsim: ") << (f.kind == "internal" ? "internal error: " : "")
              << f.message << "\n";
    return f.exit_code;
  }
  nlohmann::json error = {{"exit_code", f.exit_code}, {"kind", f.kind}, {"message", f.message}};
  if (f.where) {
    error["location"] = {{"file", f.where->file}, {"line", f.where->line}, {"column", f.where->column}};
    if (!f.key.empty()) error["location"]["key"] = f.key;
  } else if (!f.key.empty()) {
    error["location"] = {{"key", f.key}};
  }
  // The message may quote the user's bytes, which need not be UTF-8 (found by fuzz_cli): replace them.
  std::cout << nlohmann::json{{"error", error}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return f.exit_code;
}

// What --help lists after a scenario command's options: the ids the catalog holds (embedded, and
// the --catalog overlay when it was given before --help), so allowed values are in one place.
std::string catalogIds(const cli::GlobalOptions& global) {
  try {
    const Catalog& c = global.loadCatalog();
    std::vector<std::string> engines, hardware, models, kv;
    for (const auto& e : c.engines()) {
      engines.push_back(e.policy.engine);
      kv.push_back(e.policy.engine + ": " + join(e.policy.kv_dtypes, ", "));
    }
    for (const auto& h : c.hardwareProfiles()) hardware.push_back(h.id);
    for (const auto& m : c.models()) models.push_back(m.id);
    return fmt::format(
        "Catalog ids (attnsim list hardware|models|engines|backends|kernels describes them):\n"
        "  engines:    {}\n  hardware:   {}\n  models:     {}\n  --kv-dtype: {}\n",
        join(engines, ", "), join(hardware, ", "), join(models, ", "), join(kv, "; "));
  } catch (const std::exception& e) {
    return std::string("(the catalog did not load: ") + e.what() + ")";
  }
}

// Every subcommand with the runner that answers it; the runners read `global` once parsed.
// Subcommands pass flags they do not know up to the app (fallthrough), so --json and --catalog
// work before or after the subcommand.
Commands addCommands(CLI::App& app, const cli::GlobalOptions& global) {
  Commands commands;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->fallthrough();
    sub->footer([&global] { return catalogIds(global); });
    commands.emplace_back(sub, adder(*sub, global));
  };
  add("list", "list hardware, models, backends, kernels or engines", cli::addListCommand);
  add("select", "reproduce an engine's attention-backend validation and auto-selection", cli::addSelectCommand);
  add("docs", "regenerate the engines' support-matrix tables from the descriptors", cli::addDocsCommand);
  add("predict", "predict one backend's attention call and forward step, eager and with CUDA graphs",
      cli::addPredictCommand);
  add("rank", "rank every valid backend of one or all engines by predicted step time", cli::addRankCommand);
  add("check", "run a backend's attention algorithm on real numbers against the golden attention",
      cli::addCheckCommand);
  add("measurements", "import GPU measurements into a study database", cli::addMeasurementsCommand);
  add("calibrate", "fit kernel-family efficiencies to imported measurements", cli::addCalibrateCommand);
  add("report", "write a report from a study database: validation, priorities, whatif, matrix", cli::addReportCommand);
  add("sweep", "run a sweep spec (built-in name or YAML file) into a study database", cli::addSweepCommand);
  add("store", "maintain study databases: merge shards", cli::addStoreCommand);
  add("capacity", "GPU memory split and KV capacity (memory); highest rate within an SLO and GPUs needed (search)",
      cli::addCapacityCommand);
  add("serve-sim", "request-level serving simulation: TTFT, TPOT, throughput, goodput", cli::addServeSimCommand);
  return commands;
}

// Runs the parsed subcommand; every typed error becomes its Failure.
std::optional<Failure> runCommand(const Commands& commands, int& exit_code) {
  try {
    for (const auto& [sub, runner] : commands) {
      if (sub->parsed()) {
        exit_code = runner();
        return std::nullopt;
      }
    }
    return Failure{kBadInput, "usage", "no subcommand given", std::nullopt, ""};
  } catch (const CatalogError& e) {
    return Failure{kBadInput, "catalog", e.what(), e.where(), e.keyPath()};
  } catch (const LocatedInputError& e) {
    return Failure{kBadInput, "input", e.what(), e.where(), e.key()};
  } catch (const UsageError& e) {
    return Failure{kBadInput, "usage", e.what(), std::nullopt, ""};
  } catch (const InputError& e) {
    return Failure{kBadInput, "input", e.what(), std::nullopt, ""};
  } catch (const EngineRefusal& e) {
    return Failure{kRefused, "refusal", e.what(), std::nullopt, ""};
  }
}

// "A subcommand is required" when the user typed one wrong (prdict): name it and the commands.
std::optional<std::string> unknownCommand(CLI::App& app, const Commands& commands) {
  if (!app.get_subcommands().empty()) return std::nullopt;
  for (const auto& arg : app.remaining()) {
    if (arg.starts_with("-")) continue;
    std::vector<std::string> names;
    names.reserve(commands.size());
    for (const auto& command : commands) names.push_back(command.first->get_name());
    return fmt::format("unknown command '{}'{}; commands: {}", arg, didYouMean(arg, names), join(names, ", "));
  }
  return std::nullopt;
}

int run(int argc, char** argv, bool& json) {
  CLI::App app{"attnsim: simulation and performance model of LLM attention backends"};
  app.set_version_flag("--version", std::string(ATTNSIM_VERSION));
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows every default
  cli::GlobalOptions global;
  app.add_option("--catalog", global.catalog_dir, "directory overlaid on the embedded catalog (same layout)");
  CLI::Option* json_flag =
      app.add_flag("--json", global.json, "machine-readable output on stdout, errors included (an `error` object)");
  const Commands commands = addCommands(app, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 reads every argument before it reports, so --json anywhere on the line is known here.
    json = json_flag->count() > 0;
    return report({kBadInput, "usage", unknownCommand(app, commands).value_or(e.what()), std::nullopt, ""}, json);
  }
  json = global.json;
  int exit_code = kBadInput;
  if (const auto failure = runCommand(commands, exit_code)) return report(*failure, json);
  return exit_code;
}

// A bug in attnsim: reported like any failure, and never throws while doing so.
int reportInternal(const char* what, bool json) noexcept {
  try {
    return report({kInternal, "internal", what, std::nullopt, ""}, json);
  } catch (...) {
    std::fputs("attnsim: internal error\n", stderr);
    return kInternal;
  }
}

}  // namespace

namespace attnsim::cli {

int runProgram(int argc, char** argv) noexcept {
  // Input errors and refusals have their exit codes in run(); anything else escaping is a bug in attnsim.
  bool json = false;
  try {
    return run(argc, argv, json);
  } catch (const std::exception& e) {
    return reportInternal(e.what(), json);
  } catch (...) {
    return reportInternal("unknown exception", json);
  }
}

}  // namespace attnsim::cli
