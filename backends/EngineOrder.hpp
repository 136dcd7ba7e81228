#pragma once
// An engine's priority order as data: selection lists of branches {backend, when, note, source}, the
// named conditions they share, and the overlay files (backends/<engine>/order/*.yaml) that insert a
// branch before or after one of the engine's own without copying engine.yaml.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/EnginePolicy.hpp"

namespace attnsim {

// A `selection` entry of engine.yaml: label, when, stage, pick (first_valid or first_match), conditions,
// priority (each item a backend name or a mapping {backend, when, note, source}), source.
PriorityList parsePriorityList(const YamlReader& r, const Expr::VariableCheck& check);

// Each rule's `order` (rules[i] as read) must name a first_match list of the policy.
void checkRuleOrders(const std::vector<YamlReader>& rules, const EnginePolicy& p);

// backends/<engine>/order/NAME.yaml: `insert: [{backend, before | after, when, note, source}]`, optionally
// `list: LABEL`. Without `list`, a branch goes into every list that has its anchor; `before` is the
// anchor's first branch, `after` its last. An unknown anchor or label is an error at its line.
void applyOrderInserts(const YamlReader& r, EnginePolicy& policy, const Expr::VariableCheck& check);

// How one branch fared in a walk of the order (select --explain).
struct OrderStep {
  std::string backend;
  std::string when;                  // the branch's condition as written; empty: always
  std::string outcome;               // "condition false", "not valid", "picked", "not reached"
  std::vector<std::string> reasons;  // not valid: why, in the engine's phrases
  std::string source;
  std::string inserted_by;
};

struct OrderWalk {
  std::string label;
  std::string stage;  // "" for both stages
  bool first_match = false;
  std::string source;
  std::vector<std::pair<std::string, bool>> conditions;  // the list's named conditions, as evaluated
  std::vector<OrderStep> steps;
};

// Walks `list` branch by branch under `env` (its named conditions added). A branch whose condition holds
// is offered to `invalid_reasons`: no reasons picks it; without the function (first_match) it is picked.
// Returns the walk, up to the pick, and the picked branch's index.
std::pair<OrderWalk, std::optional<std::size_t>> walkOrder(
    const PriorityList& list, const Env& env, const std::string& stage,
    const std::function<std::vector<std::string>(const std::string&)>& invalid_reasons);

// "order 'LABEL' branch N (BACKEND): when CONDITION", as select --explain names a branch.
std::string branchText(const PriorityList& list, std::size_t index);

}  // namespace attnsim
