#pragma once
// The simulator's answers as JSON: what `attnsim --json` prints and what the Python module
// returns as dicts. The field names are the CLI's contract (README).
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/CheckRun.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim {

class Catalog;

nlohmann::json selectionJson(const ScenarioSelection& s, const Catalog& c);
// select --explain: for each stage's backend and each rejected one, the rule that decided and its source.
nlohmann::json explanationJson(const Selection& sel);
nlohmann::json predictionJson(const ScenarioPrediction& p, const Catalog& c);
nlohmann::json rankingJson(const Ranking& r, const Catalog& c);
nlohmann::json checkJson(const ScenarioCheck& check);
nlohmann::json catalogCheckJson(const CatalogCheck& check, const Catalog& c);
// A variable of the engine's rules as JSON (null when unset).
nlohmann::json envValueJson(const Env& env, const char* name);

}  // namespace attnsim
