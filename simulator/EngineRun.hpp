#pragma once
// A backend as an engine runs it, and the bridges to the cost model's input: from an engine's
// selection, or from a kernel family alone.
#include <optional>
#include <string>

#include "cost/Predictor.hpp"
#include "selection/Selector.hpp"

namespace attnsim {

// How the engine answers `--backend NAME` for one phase. This is the one validity rule that
// select, predict, rank, check and sweeps share (docs/SELECTION.md "Validity").
enum class Verdict {
  Refused,    // the engine refuses the scenario (selection.refusal says why)
  Runs,       // the engine runs the asked backend (or its own choice, when none was asked) in the phase's stage
  RunsOther,  // the engine runs another backend there: a platform that replaces explicit names, a
              // stage the asked backend does not run
};

struct EngineRun {
  Selection selection;
  std::optional<BackendChoice> choice;  // the phase's backend; empty when the engine refuses
  std::optional<std::string> asked;     // the backend asked for; empty for the engine's own choice
  std::string stage;                    // prefill or decode: the phase's stage

  [[nodiscard]] Verdict verdict() const;
  // Why the asked backend does not run the phase: the refusal, or what runs instead and the notes.
  [[nodiscard]] std::string whyNot() const;
};

// The engine stage that runs a phase: prefill (prefill, extend) or decode (decode, verify).
const char* stageOf(Phase p);

// What an engine run selects: the stage of the phase asked about (predict, rank, check, sweeps), or
// every stage, as `select` and a deployment (serve-sim, capacity) need them.
enum class StageScope { PhaseOnly, Deployment };

// The engine's selection as `select --backend NAME` runs it (`backend` nullopt: the engine's own
// choice), over `scope`'s stages, and the backend of the phase's stage.
EngineRun runEngine(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                    const ServingOptions& options, const std::optional<std::string>& backend, Phase phase,
                    StageScope scope = StageScope::PhaseOnly);

// The prediction input for the backend an engine run chose: its kernels, its CUDA-graph support,
// the engine's capture rules and the variables after the engine's rules.
PredictionInput predictionInputFor(const Catalog& c, const HardwareProfile& hw, const ModelSpec& m, const Engine& e,
                                   const EngineRun& run, bool cuda_graphs);

// The prediction input for a kernel family outside any engine: one kernel for every phase, every
// batch captured, full CUDA graphs.
PredictionInput kernelPredictionInput(const HardwareProfile& hw, const ModelSpec& m, const KernelFamily& kernel,
                                      KvCacheDtype kv_dtype, std::int64_t page_size, int tp);

// The kernel family a run's backend uses for `phase`.
const KernelFamily& kernelFor(const Catalog& c, const EngineRun& run, Phase phase);

}  // namespace attnsim
