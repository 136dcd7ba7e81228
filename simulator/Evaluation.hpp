#pragma once
// A scenario evaluated end to end: the engine's selection, a prediction of the backend it runs,
// and every valid backend ranked. The answers are plain data; reports/ and cli/ render them.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost/MemoryModel.hpp"
#include "cost/Predictor.hpp"
#include "selection/Selector.hpp"
#include "simulator/EngineRun.hpp"
#include "simulator/Scenario.hpp"

namespace attnsim {

struct ScenarioSelection {
  std::shared_ptr<const ModelSpec> model;
  const HardwareProfile* hardware = nullptr;
  const Engine* engine = nullptr;
  Selection selection;
};
// The engine's validation and auto-selection (scenario.engine is required).
ScenarioSelection selectBackends(const Catalog& c, const Scenario& s);

// The backend a prediction is for, as the engine resolved it.
struct PredictedBackend {
  std::string engine, backend, variant;
  std::string cuda_graph_support;
  std::vector<std::string> notes;
  bool forced = false;  // the user asked for it (otherwise the engine picked it)
};

// Where a kernel's efficiencies came from (calibration, published figure, default).
struct KernelParameters {
  std::string kernel;
  double compute_efficiency = 0, memory_efficiency = 0, fixed_us = 0;
  std::string source;
  Provenance provenance = Provenance::Default;
  BandBasis band_basis = BandBasis::Documented;
  double band = 0;
};

struct ScenarioPrediction {
  std::shared_ptr<const ModelSpec> model;
  const HardwareProfile* hardware = nullptr;
  Workload workload;
  bool cuda_graphs = true;
  PredictionInput input;
  std::string kv_dtype;  // as the engine spells it (the input holds its format)
  Prediction prediction;
  std::optional<PredictedBackend> backend;  // empty for a kernel outside any engine
  std::vector<KernelParameters> parameters;
  std::string label;  // one line saying what was predicted
  // Whether the batch fits the engine's KV pool beside the weights, as the engine splits the GPU
  // for this backend (its page size, workspace, graphs); empty for a kernel outside any engine or
  // an engine without a serving: section. The numbers above stand either way.
  std::optional<FitCheck> memory{};

  [[nodiscard]] double stepUs() const { return cuda_graphs ? prediction.graph.step_us : prediction.eager.step_us; }
};
// One backend's prediction: the engine's choice (scenario.engine), a forced backend
// (scenario.backend) or a kernel family outside any engine (scenario.kernel). Throws
// EngineRefusal when the engine refuses the scenario.
ScenarioPrediction predictScenario(const Catalog& c, const Scenario& s);

struct RankedBackend {
  std::string engine, backend, variant;
  double step_us = 0, attention_us = 0;
  std::string bound;
  double margin_to_next = 0;  // the next one's step time over this one's, minus one
  bool engine_default = false;
  Provenance provenance = Provenance::Default;  // of the attention kernel's figures
  double band = 0;                              // relative band of step_us
  double tie_band = 0;                          // the attention part's alone (PredictionUncertainty)
  double attention_band = 0;
  int tie_group = 0;  // 1-based; backends of one group are tied within uncertainty
  bool tied = false;  // its group has more than one member
  // This backend's deployment: the batch against the pool the engine sizes with this backend
  // (empty for an engine without a serving: section).
  std::optional<FitCheck> memory{};
};

// How much slower an engine's default is than its fastest valid backend.
struct EngineDefault {
  std::string engine, backend, best_backend;
  double step_us = 0, regret = 0, regret_us = 0;
  bool within_band = true;  // the default and the fastest are tied within uncertainty
};

struct Ranking {
  std::shared_ptr<const ModelSpec> model;
  const HardwareProfile* hardware = nullptr;
  Workload workload;
  bool cuda_graphs = true;
  std::vector<RankedBackend> ranked;           // fastest first; tie groups in order
  std::vector<EngineDefault> defaults;         // per engine whose default is valid
  std::map<std::string, std::string> invalid;  // engine:NAME -> the engine's refusal
  // engine:NAME -> the engine:OTHER the engine runs in this phase when asked for NAME, and why
  std::map<std::string, std::pair<std::string, std::string>> resolved;
  // The ranking's memory verdict: fits when every ranked backend's deployment fits; otherwise
  // how many do not, and the message of the fastest one that does not.
  [[nodiscard]] FitCheck memory() const;
};
// Every backend of `engines` (empty: all) that the engine runs when asked for it by name
// (runEngine's verdict, the same as `select --backend NAME`), predicted for the scenario and
// ordered by step time. Tie groups: walking in order, a backend joins the open group when it is
// within the tie bands of the group's fastest member (withinBands), else it opens the next group.
// Throws EngineRefusal when none is valid.
Ranking rankBackends(const Catalog& c, const Scenario& s, const std::vector<std::string>& engines);

}  // namespace attnsim
