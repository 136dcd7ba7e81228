#pragma once
// The attnsim subcommands. Each registers its flags on the app and returns the exit code when run.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/Catalog.hpp"
#include "simulator/Scenario.hpp"

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
Runner addCheckCommand(CLI::App& app, const GlobalOptions& global);
Runner addMeasurementsCommand(CLI::App& app, const GlobalOptions& global);
Runner addCalibrateCommand(CLI::App& app, const GlobalOptions& global);
Runner addReportCommand(CLI::App& app, const GlobalOptions& global);
Runner addCapacityCommand(CLI::App& app, const GlobalOptions& global);
Runner addServeSimCommand(CLI::App& app, const GlobalOptions& global);

// The scenario flags every scenario command shares (DESIGN.md's scenario options), turned into
// typed Scenarios in one place. Each command registers the groups it takes.
struct ScenarioFlags {
  std::string engines, hardware, models;  // comma lists where a command takes several
  std::string backend, kernel;
  std::optional<std::string> prefill_backend, decode_backend, kv_dtype, spec_algorithm, spec_attention_mode;
  std::optional<std::int64_t> page_size, spec_topk, spec_draft_tokens;
  std::optional<double> cuda_version;
  bool has_prefix = false;
  std::int64_t tp = 1;
  std::vector<std::string> engine_options;  // name=value
  std::string phase = "decode", mix, cuda_graph = "on";
  std::int64_t batch = 1, q_len = 1, context = 4096;
  std::optional<int> num_heads, head_dim;  // a model outside the catalog; the rest of its geometry:
  ModelGeometry geometry;
  std::string db;  // a study whose calibrations take over the catalog's

  // --kv-dtype, --page-size, --spec-*, --cuda-version, --prefix, --tp, --option
  void addServing(CLI::App& cmd);
  // --prefill-backend, --decode-backend, --speculative-attention-mode
  void addStageBackends(CLI::App& cmd);
  // --phase, --batch, --q-len, --context, --mix, --cuda-graph
  void addWorkload(CLI::App& cmd);
  // a model outside the catalog: --num-heads, --head-dim, ...
  void addGeometry(CLI::App& cmd);
  // --db: a study's calibrations
  void addStudy(CLI::App& cmd);

  // The scenario for one hardware, model and engine of the lists.
  [[nodiscard]] Scenario scenario(const std::string& hw, const std::string& model, const std::string& engine) const;
  // The catalog, with the study's calibrations when --db is given.
  [[nodiscard]] Catalog catalog(const GlobalOptions& global) const;
};

}  // namespace attnsim::cli
