#pragma once
// attnsim check as a scenario: the engine's backend for a model and phase, found on the first
// hardware where the engine accepts it, run layer type by layer type against the golden
// attention; and the whole catalog's valid (backend, model, phase) pairs.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "simulator/Checker.hpp"
#include "simulator/Scenario.hpp"

namespace attnsim {

struct HardwareProfile;

struct LayerCheck {
  CheckRequest request;
  CheckOutcome outcome;
};

struct ScenarioCheck {
  std::string backend;  // engine:NAME
  std::shared_ptr<const ModelSpec> model;
  const HardwareProfile* hardware = nullptr;
  Phase phase = Phase::Decode;
  std::vector<LayerCheck> layers;  // one per attention layer type of the model
  bool passed = true;
};
// scenario.hardware empty: the first of a fixed list of devices where the engine accepts the
// backend. Throws EngineRefusal with the engine's reason when none does.
ScenarioCheck checkScenario(const Catalog& c, const Scenario& s, double flop_budget);

struct CatalogCheckRow {
  std::string backend, model, layer_name, hardware;
  bool whole_model = true;  // the layer type is every layer of the model
  Phase phase = Phase::Decode;
  LayerCheck check;
};

struct CatalogCheck {
  std::vector<CatalogCheckRow> rows;
  int failed = 0;
  std::size_t distinct_runs = 0;
  double seconds = 0;
};
// Every valid (backend, model, phase, layer type) of the catalog, prefill and decode; runs that
// share a kernel family, geometry, phase, KV format and page size run once. `progress` is called
// after each (backend, model) pair with the pairs done and the total.
CatalogCheck checkCatalog(const Catalog& c, double flop_budget,
                          const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace attnsim
