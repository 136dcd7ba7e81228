#include "selection/EngineRules.hpp"

namespace attnsim {

void applyEngineRules(const Engine& engine, Env& env, Selection& out) {
  for (const auto& rule : engine.policy.rules) {
    if (rule.when && !rule.when->test(env)) continue;
    std::vector<std::pair<std::string, Value>> assignments;
    for (const auto& [name, expr] : rule.set) assignments.emplace_back(name, expr.evaluate(env));
    const std::string rule_text = rule.when ? "rule when " + rule.when->text() : "rule (always)";
    for (auto& [name, value] : assignments) {
      env[name] = std::move(value);
      out.set_by[name] = {"", rule_text, rule.source};
    }
    const OrderBranch* branch = nullptr;
    if (!rule.order.empty()) {
      const PriorityList& list = *engine.policy.list(rule.order);
      auto [walk, picked] = walkOrder(list, env, "", nullptr);  // the engine validates its pick later
      out.order_walks.push_back(std::move(walk));
      if (picked) {
        branch = &list.branches[*picked];
        env[rule.order_sets] = branch->backend;
        out.set_by[rule.order_sets] = {"", rule_text + ", " + branchText(list, *picked), branch->source};
      }
    }
    if (!rule.error.text.empty()) {
      out.refusal = rule.error.render(env);
      out.refused_by = {*out.refusal, rule_text + " (error)", rule.source};
      return;
    }
    const MessageTemplate& note = branch && !branch->note.text.empty() ? branch->note : rule.note;
    if (!note.text.empty() && (branch || rule.order.empty())) out.notes.push_back(note.render(env));
  }
  refreshDerived(env, engine.policy);
}

}  // namespace attnsim
