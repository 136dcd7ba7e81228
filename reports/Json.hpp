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
// A memory verdict: fits, need_mib, have_mib, reason, message; every field null but the message when
// there is none (a kernel outside any engine).
nlohmann::json memoryJson(const std::optional<FitCheck>& fit);
// The line text output starts with: "memory: fits: ..." / "memory: does not fit: ...".
std::string memoryLine(const std::optional<FitCheck>& fit);
nlohmann::json checkJson(const ScenarioCheck& check);
nlohmann::json catalogCheckJson(const CatalogCheck& check, const Catalog& c);
// A variable of the engine's rules as JSON (null when unset).
nlohmann::json envValueJson(const Env& env, const char* name);

}  // namespace attnsim
