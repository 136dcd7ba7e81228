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

// The whole program (main() and the command-line fuzzer call it): the exit code, never an exception.
int runProgram(int argc, char** argv) noexcept;

// Options every subcommand shares.
struct GlobalOptions {
  std::string catalog_dir;
  bool json = false;
  // The catalog commands read: the process's one embedded catalog (Catalog::embedded(), parsed
  // once however many command lines run), or with --catalog DIR the embedded files with DIR's
  // overlay, loaded for this command line.
  [[nodiscard]] std::shared_ptr<const Catalog> sharedCatalog() const;
  [[nodiscard]] const Catalog& loadCatalog() const { return *sharedCatalog(); }
  // The files loadCatalog reads: the embedded catalog with --catalog's overlay.
  [[nodiscard]] CatalogSource catalogSource() const;

 private:
  mutable std::shared_ptr<const Catalog> loaded_;
  mutable std::string loaded_dir_;
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
Runner addSweepCommand(CLI::App& app, const GlobalOptions& global);
Runner addStoreCommand(CLI::App& app, const GlobalOptions& global);

// A finite number above zero. CLI::PositiveNumber answers -1 with the whole double range printed
// digit by digit ("not in range 0.000000 to 179769313486...").
CLI::Validator positiveNumber();
// A comma list of integers (or ranges, 1..8x2) each in [min, max].
CLI::Validator integerList(std::int64_t min, std::int64_t max);

// --holdout-contexts: a comma list of context lengths (UsageError naming a bad item).
std::vector<std::int64_t> parseContexts(const std::string& text);
Runner addCapacityCommand(CLI::App& app, const GlobalOptions& global);
Runner addServeSimCommand(CLI::App& app, const GlobalOptions& global);

// The scenario flags every scenario command shares (DESIGN.md's scenario options), turned into
// typed Scenarios in one place. Each command registers the groups it takes.
struct ScenarioFlags {
  std::string engines, hardware, models;  // comma lists where a command takes several
  std::string backend, kernel;
  std::optional<std::string> prefill_backend, decode_backend, kv_dtype, spec_algorithm, spec_attention_mode,
      weight_dtype;
  std::optional<std::int64_t> page_size, spec_topk, spec_draft_tokens;
  std::optional<double> cuda_version;
  bool has_prefix = false, allow_context_beyond_max_position = false;
  std::int64_t tp = 1;
  std::vector<std::string> engine_options;  // name=value
  std::string phase = "decode", mix, cuda_graph = "on";
  bool phase_given = false;  // --phase on the command line (its default is decode)
  // predict and rank take lists and ranges for batch, context and prefill length (runListStudy).
  std::string batch = "1";
  // No default context: a prediction for a context nobody chose is no answer. Required by commands that
  // take the workload flags (addWorkload); the others use a nominal batch (scenario()).
  std::string context, prefill_length;
  std::optional<std::int64_t> q_len;
  bool takes_workload = false;
  std::optional<int> num_heads, head_dim;  // a model outside the catalog; the rest of its geometry:
  ModelGeometry geometry;
  std::string db;  // a study whose calibrations take over the catalog's

  // --kv-dtype, --page-size, --spec-*, --cuda-version, --prefix, --tp, --weight-dtype, --option
  void addServing(CLI::App& cmd);
  // --prefill-backend, --decode-backend, --speculative-attention-mode
  void addStageBackends(CLI::App& cmd);
  // --phase, --batch, --q-len, --context, --mix, --cuda-graph, --allow-context-beyond-max-position
  void addWorkload(CLI::App& cmd);
  // --prefill-length asks for a prefill of that length: with --phase other than prefill, or with
  // --context, one of the two would be dropped, so it is refused (UsageError naming both flags).
  void checkPrefillLength() const;
  // a model outside the catalog: --num-heads, --head-dim, ...
  void addGeometry(CLI::App& cmd);
  // --db: a study's calibrations
  void addStudy(CLI::App& cmd);

  // The workload of --mix, or of --phase/--batch/--q-len/--context; a missing required flag is named.
  [[nodiscard]] Workload workload() const;
  // The scenario for one hardware, model and engine of the lists.
  [[nodiscard]] Scenario scenario(const std::string& hw, const std::string& model, const std::string& engine) const;
  // The catalog, with the study's calibrations when --db is given.
  [[nodiscard]] std::shared_ptr<const Catalog> catalog(const GlobalOptions& global) const;
};
// predict --gemm M,N,K [--gemm-dtype D] [--engine E] and predict --allreduce BYTES --tp G [--engine E]: one operator.
struct OperatorFlags {
  std::string gemm, gemm_dtype = "bf16";
  double allreduce_bytes = 0;
  std::int64_t moe_tokens = 0;  // one MoE layer call of this many tokens (--moe, with --model)
  std::int64_t ep = 1;          // its expert parallelism (--ep)
  [[nodiscard]] int given() const { return (gemm.empty() ? 0 : 1) + (allreduce_bytes > 0) + (moe_tokens > 0); }
};
// Prints the operator's prediction and returns true when --gemm, --allreduce or --moe was given.
bool predictOperator(const Catalog& c, const ScenarioFlags& flags, const OperatorFlags& op, bool as_json);

// predict and rank over lists of hardware, models, batches, contexts or prefill lengths: a
// small sweep, printed as one table (cli/CommandStudy.cpp). -1 when the flags name one scenario.
int runListStudy(const ScenarioFlags& flags, const GlobalOptions& global, bool rank);

}  // namespace attnsim::cli
