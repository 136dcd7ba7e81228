#pragma once
// The vocabulary of the engines' rules: the variables a rule expression in backends/<engine>/*.yaml
// may read (docs/RULES.md). The selection stage gives them values for a scenario.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/Expr.hpp"

namespace attnsim {

// Names of the variables every engine's rules may use.
const std::vector<std::string>& scenarioVariables();
// One line per variable: name and meaning.
const std::vector<std::pair<std::string, std::string>>& scenarioVariableDocs();

// What a scenario variable holds (Any for a name that is not one), and for the strings with a closed
// set of values, that set: a rule comparing it with anything else is refused when the catalog loads.
VariableType scenarioVariableType(std::string_view name);

}  // namespace attnsim
