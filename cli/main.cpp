// attnsim: which attention backend does each serving engine pick, and why.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/Commands.hpp"
#include "core/Error.hpp"

namespace {

using namespace attnsim;

using Commands = std::vector<std::pair<CLI::App*, cli::Runner>>;

// Every subcommand with the runner that answers it; the runners read `global` once parsed.
Commands addCommands(CLI::App& app, const cli::GlobalOptions& global) {
  Commands commands;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
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
  add("report", "write a report from a study database (validation)", cli::addReportCommand);
  add("capacity", "GPU memory split and KV capacity (memory); highest rate within an SLO and GPUs needed (search)",
      cli::addCapacityCommand);
  add("serve-sim", "request-level serving simulation: TTFT, TPOT, throughput, goodput", cli::addServeSimCommand);
  return commands;
}

int run(int argc, char** argv) {
  CLI::App app{"attnsim: simulation and performance model of LLM attention backends"};
  app.set_version_flag("--version", std::string(ATTNSIM_VERSION));
  app.require_subcommand(1);
  cli::GlobalOptions global;
  app.add_option("--catalog", global.catalog_dir, "directory overlaid on the embedded catalog (same layout)");
  app.add_flag("--json", global.json, "machine-readable output");
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
    std::cerr << "attnsim: " << e.what() << "\n";
    return 2;
  }
  try {
    for (const auto& [sub, runner] : commands) {
      if (sub->parsed()) return runner();
    }
  } catch (const InputError& e) {
    std::cerr << "attnsim: " << e.what() << "\n";
    return 2;
  } catch (const EngineRefusal& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Input errors and refusals have their exit codes in run(); anything else escaping is a bug in attnsim.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "attnsim: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "attnsim: internal error\n";
  }
  return 3;
}
