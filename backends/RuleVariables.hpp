#pragma once
// The vocabulary of the engines' rules: the variables a rule expression in backends/<engine>/*.yaml
// may read (docs/RULES.md). The selection stage gives them values for a scenario.
#include <string>
#include <utility>
#include <vector>

namespace attnsim {

// Names of the variables every engine's rules may use.
const std::vector<std::string>& scenarioVariables();
// One line per variable: name and meaning.
const std::vector<std::pair<std::string, std::string>>& scenarioVariableDocs();

}  // namespace attnsim
