#pragma once
// Reproduces each engine's validation and auto-selection from its policy data, with reasons.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/EngineOrder.hpp"
#include "catalog/Catalog.hpp"
#include "selection/EngineVariables.hpp"

namespace attnsim {

// One reason a backend fails, with the rule that decides it and where the rule is read from.
struct Finding {
  std::string reason;  // in the engine's phrase
  std::string rule;    // the check or condition, as the catalog writes it
  std::string source;  // engine file / function / version
  // A limit the backend file or its kernel declares that the engine does not check: the engine
  // accepts the configuration and the kernel fails at run time (selection/KernelLimits.hpp).
  bool kernel_limit = false;
};

struct BackendChoice {
  std::string name;
  std::string variant;  // e.g. FA3 for vLLM's FLASH_ATTN on Hopper; "" when the backend has none
  std::string how;      // "explicit", or the label of the priority list that chose it
  Finding decided_by;   // the flag, rule or priority list that chose it, and its source (reason empty)
  const Backend* backend = nullptr;
  const BackendCaps* caps = nullptr;
};

using ReasonList = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct Selection {
  std::string engine;
  std::optional<BackendChoice> prefill;
  std::optional<BackendChoice> decode;
  std::vector<std::string> notes;      // what the engine's rules changed or warned about
  ReasonList considered;               // priority walk: backends tried before the winner, with reasons
  std::vector<OrderWalk> order_walks;  // each walk of an order, branch by branch (select --explain)
  ReasonList rejected;                 // every backend of the engine that is invalid here, with reasons
  std::optional<std::string> refusal;  // the engine's error message when it refuses
  Finding refused_by;                  // the rule behind the refusal and its source
  // Every backend in `rejected`, each reason with its rule and source (select --explain).
  std::vector<std::pair<std::string, std::vector<Finding>>> rejected_why;
  // Which rule last set each variable (rules that pick a backend decide an "explicit" choice).
  std::map<std::string, Finding> set_by;
  Env env;  // variables after the engine's rules

  // The backend that serves both phases, when one does.
  [[nodiscard]] std::optional<std::string> commonBackend() const;
};

class Selector {
 public:
  explicit Selector(const Catalog& catalog) : catalog_(catalog) {}

  // Why `backend_name` cannot serve this scenario, in the engine's phrases; empty when it can.
  // The same, each reason with its rule and source (select --explain).
  [[nodiscard]] std::vector<Finding> findings(const Engine& engine, std::string_view backend_name,
                                              const Env& env) const;
  [[nodiscard]] std::vector<std::string> validate(const Engine& engine, std::string_view backend_name,
                                                  const Env& env) const;
  [[nodiscard]] Selection select(const SelectionInput& scenario) const;
  // The limits of `backend_name`'s file and kernel that this scenario breaks though its engine accepts it.
  [[nodiscard]] std::vector<Finding> kernelLimits(const Engine& engine, std::string_view backend_name,
                                                  const Env& env) const;

 private:
  // Each fills the stage's choice, or sets out.refusal and returns nothing.
  std::optional<BackendChoice> chooseExplicit(const Engine& engine, const std::string& name, const std::string& stage,
                                              const Env& stage_env, Selection& out) const;
  std::optional<BackendChoice> walkPriorityList(const Engine& engine, const std::string& stage, const Env& stage_env,
                                                Selection& out) const;
  // `--backend NAME` on an engine where NAME goes first in each stage's order (explicit_backend:
  // stages_it_runs): true, with a note, for a stage NAME cannot serve while it serves the other.
  bool leavesStageToEngine(const Engine& engine, const std::string& name, const std::string& stage, Env& stage_env,
                           Selection& out) const;
  // A question about `stage` alone, under a backend named for both stages: a note when that name cannot
  // serve the other stage (a deployment is refused; the answer holds for this stage alone).
  void noteOtherStage(const Engine& engine, const std::string& stage, const Env& env, Selection& out) const;
  // False, with the refusal set, when the chosen backend's kernel cannot run what the engine accepted.
  bool refuseAtKernelLimit(const Engine& engine, const BackendChoice& choice, const std::string& stage,
                           const Env& stage_env, Selection& out) const;
  // False when the engine refuses the stage.
  bool chooseForStage(const Engine& engine, const std::string& stage, const Env& env, Selection& out) const;

  const Catalog& catalog_;
};

// The descriptor of `name` that fits the model's attention kind, or nullptr.
const Backend* backendForKind(const Engine& engine, std::string_view name, bool use_mla);

}  // namespace attnsim
