#pragma once
// The attnsim subcommands. Each registers its flags on the app and returns the exit code when run.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "catalog/Catalog.hpp"
#include "selection/EngineVariables.hpp"
#include "selection/Selector.hpp"
#include "cost/Workload.hpp"

namespace attnsim::cli {

// Options every subcommand shares.
struct GlobalOptions {
  std::string catalog_dir;
  bool json = false;
  [[nodiscard]] Catalog loadCatalog() const;
};

using Runner = std::function<int()>;

Runner addListCommand(CLI::App& app, const GlobalOptions& global);
Runner addSelectCommand(CLI::App& app, const GlobalOptions& global);
Runner addDocsCommand(CLI::App& app, const GlobalOptions& global);
Runner addPredictCommand(CLI::App& app, const GlobalOptions& global);
Runner addRankCommand(CLI::App& app, const GlobalOptions& global);

// The serving flags of DESIGN.md's scenario options.
struct ScenarioFlags {
  std::string engines;  // comma-separated lists: several values make a matrix
  std::string hardware;
  std::string models;
  std::optional<std::string> kv_dtype;
  std::optional<std::int64_t> page_size;
  std::optional<std::string> spec_algorithm;
  std::optional<std::int64_t> spec_topk;
  std::optional<std::int64_t> spec_draft_tokens;
  std::optional<double> cuda_version;
  bool has_prefix = false;
  std::int64_t tp = 1;
  std::optional<std::string> backend;
  std::optional<std::string> prefill_backend;
  std::optional<std::string> decode_backend;
  std::optional<std::string> speculative_attention_mode;
  std::vector<std::string> engine_options;  // name=value

  void addTo(CLI::App& cmd);
  // Serving options for one engine (a backend written engine:NAME must name that engine).
  [[nodiscard]] ServingOptions servingOptions(const std::string& engine) const;
};

std::vector<std::string> splitList(const std::string& text);
// --option name=value items into the serving options (exit 2 on a malformed item).
void parseEngineOptions(const std::vector<std::string>& items, ServingOptions& o);

// A backend as an engine runs it: the selection's choice for the phase, with the engine's rules applied.
struct EngineRun {
  Selection selection;
  std::optional<BackendChoice> choice;  // the phase's backend; empty when the engine refuses
};
const char* stageOf(Phase p);
// Runs the engine's selection with `backend` asked for (nullopt: the engine's own choice).
EngineRun runEngine(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                    const ServingOptions& options, const std::optional<std::string>& backend, Phase phase);
Runner addCheckCommand(CLI::App& app, const GlobalOptions& global);
Runner addMeasurementsCommand(CLI::App& app, const GlobalOptions& global);
Runner addCalibrateCommand(CLI::App& app, const GlobalOptions& global);
Runner addReportCommand(CLI::App& app, const GlobalOptions& global);

}  // namespace attnsim::cli
