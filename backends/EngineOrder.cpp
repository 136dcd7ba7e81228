#include "backends/EngineOrder.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/Strings.hpp"

namespace attnsim {

void PriorityList::insertBranch(std::size_t position, OrderBranch branch) {
  const auto at = static_cast<std::ptrdiff_t>(std::min(position, branches.size()));
  order.insert(order.begin() + at, branch.backend);
  branches.insert(branches.begin() + at, std::move(branch));
}

Env PriorityList::branchEnv(const Env& env) const {
  Env out = env;
  for (const auto& [name, expr] : conditions) out[name] = expr.test(out);
  return out;
}

namespace {

// The engine's variables and the list's named conditions (flags).
Expr::VariableCheck orderConditionCheck(const Expr::VariableCheck& base, const std::vector<std::string>& names) {
  Expr::VariableCheck check = [base, names](std::string_view name) -> std::string {
    if (std::find(names.begin(), names.end(), name) != names.end()) return {};
    return base(name);
  };
  check.type_of = [base, names](std::string_view name) -> VariableType {
    if (std::find(names.begin(), names.end(), name) != names.end()) return {ValueType::Bool, {}};
    return base.type_of ? base.type_of(name) : VariableType{};
  };
  return check;
}

std::vector<std::string> conditionNames(const PriorityList& l) {
  std::vector<std::string> names;
  names.reserve(l.conditions.size());
  for (const auto& [name, expr] : l.conditions) names.push_back(name);
  return names;
}

OrderBranch parseBranch(const YamlReader& r, const Expr::VariableCheck& check) {
  OrderBranch b;
  b.backend = r.get<std::string>("backend");
  b.at = r.locateValue("backend");
  b.when = r.findExpr("when", check);
  b.note = parseMessage(r, "note", check, false);
  b.source = r.get<std::string>("source");
  return b;
}

}  // namespace

PriorityList parsePriorityList(const YamlReader& r, const Expr::VariableCheck& check) {
  PriorityList l;
  l.label = r.get<std::string>("label");
  l.when = r.findExpr("when", check);
  l.stage = r.findOneOf("stage", {"prefill", "decode"}).value_or("");
  l.first_match = r.findOneOf("pick", {"first_valid", "first_match"}).value_or("first_valid") == "first_match";
  l.source = r.get<std::string>("source");
  std::vector<std::string> names;
  if (auto conditions = r.findMap("conditions")) {
    for (const auto& name : conditions->keysOf()) {
      if (check(name).empty()) conditions->fail(name, fmt::format("condition '{}' shadows a variable", name));
      l.conditions.emplace_back(name, conditions->getExpr(name, orderConditionCheck(check, names)));
      names.push_back(name);
    }
    conditions->finish();
  }
  const auto branch_check = orderConditionCheck(check, names);
  const auto node = r.raw("priority");
  if (!node || !node->IsSequence() || node->size() == 0) r.fail("priority", "expected a non-empty list of branches");
  std::size_t i = 0;
  for (const auto& item : *node) {
    const std::string path = fmt::format("{}[{}]", r.keyPath("priority"), i++);
    if (item.IsScalar()) {
      l.insertBranch(l.branches.size(), {item.Scalar(), std::nullopt, {}, l.source, r.locate(item), ""});
      continue;
    }
    const YamlReader branch = r.child(item, path);
    l.insertBranch(l.branches.size(), parseBranch(branch, branch_check));
    branch.finish();
  }
  r.finish();
  return l;
}

namespace {

// Where `anchor` stands in `l`: before its first branch, or after its last.
std::optional<std::size_t> anchorPosition(const PriorityList& l, const std::string& anchor, bool before) {
  const auto first = std::find(l.order.begin(), l.order.end(), anchor);
  if (first == l.order.end()) return std::nullopt;
  if (before) return static_cast<std::size_t>(first - l.order.begin());
  const auto last = std::find(l.order.rbegin(), l.order.rend(), anchor);
  return static_cast<std::size_t>(l.order.rend() - last);
}

std::vector<PriorityList*> targetLists(const YamlReader& r, EnginePolicy& p, const std::optional<std::string>& label) {
  std::vector<PriorityList*> lists;
  std::vector<std::string> labels;
  for (auto& l : p.selection) {
    labels.push_back(l.label);
    if (!label || l.label == *label) lists.push_back(&l);
  }
  if (label && lists.empty()) {
    r.fail("list", fmt::format("{} has no selection list labelled '{}'{}; lists: {}", p.engine, *label,
                               didYouMean(*label, labels), join(labels, ", ")));
  }
  if (lists.empty()) r.fail("insert", fmt::format("{} has no selection list to insert into", p.engine));
  return lists;
}

void insertOne(const YamlReader& item, const std::vector<PriorityList*>& lists, const Expr::VariableCheck& check,
               const std::string& file) {
  const auto before = item.find<std::string>("before");
  const auto after = item.find<std::string>("after");
  if (before.has_value() == after.has_value()) item.fail("before", "name exactly one of before: or after:");
  const std::string key = before ? "before" : "after";
  const std::string& anchor = before ? *before : *after;
  std::vector<std::string> names;
  std::vector<std::string> known;
  for (const auto* l : lists) {
    for (const auto& n : conditionNames(*l)) names.push_back(n);
    known.insert(known.end(), l->order.begin(), l->order.end());
  }
  OrderBranch branch = parseBranch(item, orderConditionCheck(check, names));
  branch.inserted_by = file;
  item.finish();
  bool placed = false;
  for (auto* l : lists) {
    if (const auto at = anchorPosition(*l, anchor, before.has_value())) {
      l->insertBranch(*at, branch);
      placed = true;
    }
  }
  if (!placed) {
    std::sort(known.begin(), known.end());
    known.erase(std::unique(known.begin(), known.end()), known.end());
    item.fail(key, fmt::format("no branch of the order picks '{}'{}; the order's backends: {}", anchor,
                               didYouMean(anchor, known), join(known, ", ")));
  }
}

}  // namespace

// A rule's `order` names a first_match selection list (a first_valid one is walked after the rules).
void checkRuleOrders(const std::vector<YamlReader>& rules, const EnginePolicy& p) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string& label = p.rules[i].order;
    if (label.empty()) continue;
    const PriorityList* l = p.list(label);
    if (l == nullptr || !l->first_match) {
      std::vector<std::string> labels;
      for (const auto& s : p.selection) {
        if (s.first_match) labels.push_back(s.label);
      }
      rules[i].fail("order", fmt::format("no selection list with pick: first_match is labelled '{}'{}", label,
                                         didYouMean(label, labels)));
    }
  }
}

std::pair<OrderWalk, std::optional<std::size_t>> walkOrder(
    const PriorityList& list, const Env& env, const std::string& stage,
    const std::function<std::vector<std::string>(const std::string&)>& invalid_reasons) {
  const Env branch_env = list.branchEnv(env);
  OrderWalk walk{list.label, stage, list.first_match, list.source, {}, {}};
  for (const auto& [name, expr] : list.conditions) walk.conditions.emplace_back(name, truthy(branch_env.at(name)));
  for (std::size_t i = 0; i < list.branches.size(); ++i) {
    const OrderBranch& b = list.branches[i];
    OrderStep step{b.backend, b.when ? b.when->text() : "", "condition false", {}, b.source, b.inserted_by};
    if (!b.when || b.when->test(branch_env)) {
      if (invalid_reasons) step.reasons = invalid_reasons(b.backend);
      step.outcome = step.reasons.empty() ? "picked" : "not valid";
    }
    walk.steps.push_back(std::move(step));
    if (walk.steps.back().outcome == "picked") return {std::move(walk), i};
  }
  return {std::move(walk), std::nullopt};
}

std::string branchText(const PriorityList& list, std::size_t index) {
  const OrderBranch& b = list.branches.at(index);
  return fmt::format("order '{}' branch {} ({}): {}", list.label, index + 1, b.backend,
                     b.when ? "when " + b.when->text() : "always");
}

void applyOrderInserts(const YamlReader& r, EnginePolicy& policy, const Expr::VariableCheck& check) {
  const auto lists = targetLists(r, policy, r.find<std::string>("list"));
  const auto items = r.list("insert");
  if (items.empty()) r.fail("insert", "expected a list of branches to insert");
  for (const auto& item : items) insertOne(item, lists, check, r.file());
  r.finish();
}

}  // namespace attnsim
