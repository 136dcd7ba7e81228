#pragma once
// The engine's rules, applied in order before the choice: assignments, notes, a refusal; a rule that
// names a first_match order sets its variable from the first branch whose condition holds.
#include "selection/Selector.hpp"

namespace attnsim {

void applyEngineRules(const Engine& engine, Env& env, Selection& out);

}  // namespace attnsim
