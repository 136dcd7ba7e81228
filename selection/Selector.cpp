#include "selection/Selector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "core/Strings.hpp"
#include "selection/EngineRules.hpp"
#include "selection/KernelLimits.hpp"

namespace attnsim {

namespace {

bool contains(const std::vector<std::string>& items, const Value& v) {
  if (!std::holds_alternative<std::string>(v)) return false;
  return std::find(items.begin(), items.end(), std::get<std::string>(v)) != items.end();
}

std::optional<std::int64_t> intVar(const Env& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return *i;
  return std::nullopt;
}

const Value& var(const Env& env, const char* name) {
  static const Value null;
  const auto it = env.find(name);
  return it == env.end() ? null : it->second;
}

bool blockSizeSupported(const IntSet& kernel_sizes, std::int64_t block) {
  // Engines accept a framework block that a kernel block divides (vLLM's "hybrid blocks" rule).
  if (kernel_sizes.any) return true;
  if (!kernel_sizes.values.empty()) {
    return std::any_of(kernel_sizes.values.begin(), kernel_sizes.values.end(),
                       [block](std::int64_t k) { return k > 0 && block % k == 0; });
  }
  return kernel_sizes.contains(block);
}

bool backendHasFeature(const Backend& b, const BackendCaps& caps, const std::string& feature, const Env& env) {
  if (feature == "mla" && caps.feature("mla") == nullptr) return b.kind == "mla";
  return caps.featureHolds(feature, env);
}

// Python's repr of a list of strings, as the engines print reasons.
std::string pythonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  quoted.reserve(items.size());
  for (const auto& i : items) quoted.push_back("'" + i + "'");
  return "[" + join(quoted, ", ") + "]";
}

std::string reasonsDict(const ReasonList& reasons) {
  std::vector<std::string> parts;
  for (const auto& [name, list] : reasons) parts.push_back(name + ": [" + join(list, ", ") + "]");
  return "{" + join(parts, ", ") + "}";
}

}  // namespace

std::optional<std::string> Selection::commonBackend() const {
  if (prefill && decode && prefill->name == decode->name) return prefill->name;
  return std::nullopt;
}

const Backend* backendForKind(const Engine& engine, std::string_view name, bool use_mla) {
  const auto candidates = findBackends(engine, name);
  for (const auto* b : candidates) {
    if ((b->kind == "mla") == use_mla) return b;
  }
  return nullptr;
}

namespace {

// Whether the backend passes one capability check of the engine's validation list.
bool capabilityHolds(const std::string& c, const BackendCaps& caps, const Env& env) {
  if (c == "head_size") {
    const auto hs = intVar(env, "head_size");
    return !hs || caps.head_sizes.contains(*hs);
  }
  if (c == "dtype") return contains(caps.dtypes, var(env, "dtype"));
  if (c == "kv_cache_dtype") return !caps.kv_cache_dtypes || contains(*caps.kv_cache_dtypes, var(env, "kv_dtype"));
  if (c == "block_size") {
    const auto bs = intVar(env, "block_size");
    return !bs || blockSizeSupported(caps.block_sizes, *bs);
  }
  if (c == "compute_capability") {
    const auto cc = asNumber(var(env, "cc"));
    return caps.compute_capability.any || (cc && caps.compute_capability.contains(*cc));
  }
  if (c == "platform") return contains(caps.platforms, var(env, "platform"));
  if (c == "attention_type") return contains(caps.attention_types, var(env, "attn_type"));
  if (c == "stage") return isNull(var(env, "stage")) || contains(caps.stages, var(env, "stage"));
  return true;
}

std::string checkSource(const ValidationCheck& check, const Engine& engine, const Backend& backend) {
  const std::string& code = check.source.empty() ? engine.policy.source : check.source;
  return code + "; the backend's values: " + backend.source;
}

void applyCheck(const ValidationCheck& check, const Engine& engine, const Backend& backend, const BackendCaps& caps,
                const Env& env, std::vector<Finding>& out) {
  const std::string& c = check.check;
  if (c == "requirements") {
    for (const auto& req : caps.requirements) {
      if (req.fail_when.test(env)) {
        out.push_back({MessageTemplate{req.reason}.render(env), "requires: " + req.fail_when.text(),
                       req.source.empty() ? backend.source : req.source});
      }
    }
  } else if (c == "feature") {
    if (check.needed_when->test(env) && !backendHasFeature(backend, caps, check.feature, env)) {
      out.push_back({check.reason.render(env),
                     "check feature " + check.feature + ", needed when " + check.needed_when->text(),
                     checkSource(check, engine, backend)});
    }
  } else if (c == "feature_match") {
    const bool wanted = truthy(var(env, check.scenario_flag.c_str()));
    const bool has = backendHasFeature(backend, caps, check.feature, env);
    if (wanted != has) {
      out.push_back({(wanted ? check.reason : check.reason_unwanted).render(env),
                     "check feature " + check.feature + " == " + check.scenario_flag,
                     checkSource(check, engine, backend)});
    }
  } else if (!capabilityHolds(c, caps, env)) {
    out.push_back({check.reason.render(env), "check " + c, checkSource(check, engine, backend)});
  }
}

}  // namespace

std::vector<Finding> Selector::findings(const Engine& engine, std::string_view backend_name, const Env& env) const {
  const bool use_mla = truthy(var(env, "use_mla"));
  const auto candidates = findBackends(engine, backend_name);
  if (candidates.empty()) {
    throw UsageError(fmt::format("unknown {} backend '{}'{}; backends: {}", engine.policy.engine, backend_name,
                                 didYouMean(backend_name, backendNames(engine)), join(backendNames(engine), ", ")));
  }
  const Backend* backend = backendForKind(engine, backend_name, use_mla);
  if (!backend) {
    const auto& wrong = engine.policy.message(use_mla ? "wrong_kind_mla" : "wrong_kind_mha");
    if (!wrong.text.empty()) {
      Env with_name = env;
      with_name["backend"] = std::string(backend_name);
      return {{wrong.render(with_name), std::string("kind: ") + (use_mla ? "mha" : "mla") + " backend",
               engine.policy.source}};
    }
    backend = candidates.front();  // the engine's checks (e.g. a feature_match on mla) decide
  }
  const BackendCaps& caps = backend->resolve(env);
  std::vector<Finding> out;
  for (const auto& check : engine.policy.validation) applyCheck(check, engine, *backend, caps, env, out);
  return out;
}

std::vector<Finding> Selector::kernelLimits(const Engine& engine, std::string_view backend_name, const Env& env) const {
  const Backend* backend = backendForKind(engine, backend_name, truthy(var(env, "use_mla")));
  if (!backend) return {};
  return kernelLimitFindings(catalog_, engine.policy, backend->resolve(env), env);
}

std::vector<std::string> Selector::validate(const Engine& engine, std::string_view backend_name, const Env& env) const {
  std::vector<std::string> reasons;
  for (auto& f : findings(engine, backend_name, env)) reasons.push_back(std::move(f.reason));
  return reasons;
}

namespace {

// An explicit backend name the engine does not have is bad input, not a refusal.
void requireKnownExplicitNames(const Engine& engine, Env& env) {
  for (const auto* name : {"attention_backend", "prefill_attention_backend", "decode_attention_backend"}) {
    if (const auto* s = std::get_if<std::string>(&env[name])) {
      if (findBackends(engine, *s).empty()) {
        const auto names = backendNames(engine);
        throw UsageError(fmt::format("unknown {} backend '{}'{}; backends: {}", engine.policy.engine, *s,
                                     didYouMean(*s, names), join(names, ", ")));
      }
    }
  }
}

// The variable naming the stage's explicit backend: its own flag, else the one for both stages.
const char* explicitVariable(const Env& stage_env, const std::string& stage) {
  const char* own = stage == "prefill"  ? "prefill_attention_backend"
                    : stage == "decode" ? "decode_attention_backend"
                                        : "attention_backend";
  return isNull(var(stage_env, own)) ? "attention_backend" : own;
}

// The stage's explicit backend; null when auto.
const Value& explicitBackend(Env& stage_env, const std::string& stage) {
  return stage_env[explicitVariable(stage_env, stage)];
}

// The first priority list whose condition holds for the stage.
const PriorityList* priorityListFor(const Engine& engine, const std::string& stage, const Env& stage_env) {
  for (const auto& l : engine.policy.selection) {
    if (l.first_match) continue;  // a rule applies it
    if ((l.stage.empty() || l.stage == stage) && (!l.when || l.when->test(stage_env))) return &l;
  }
  return nullptr;
}

std::string refusalMessage(const Engine& engine, const char* message, const Env& stage_env, const std::string& stage,
                           const std::function<void(Env&)>& fill = {}) {
  Env msg = stage_env;
  msg["stage_name"] = stage;
  if (fill) fill(msg);
  return engine.policy.message(message).render(msg);
}

}  // namespace

bool Selector::leavesStageToEngine(const Engine& engine, const std::string& name, const std::string& stage,
                                   Env& stage_env, Selection& out) const {
  if (!engine.policy.explicit_backend_stages_it_runs || stage.empty()) return false;
  if (!isNull(stage_env[stage == "prefill" ? "prefill_attention_backend" : "decode_attention_backend"])) return false;
  const auto reasons = validate(engine, name, stage_env);
  if (reasons.empty()) return false;
  Env other = stage_env;
  other["stage"] = std::string(stage == "prefill" ? "decode" : "prefill");
  if (!validate(engine, name, other).empty()) return false;  // serves no stage: refused as asked
  out.notes.push_back(fmt::format("{} cannot serve the {} stage here ({}); the engine's own {} order picks", name,
                                  stage, join(reasons, "; "), stage));
  return true;
}

std::optional<BackendChoice> Selector::chooseExplicit(const Engine& engine, const std::string& name,
                                                      const std::string& stage, const Env& stage_env,
                                                      Selection& out) const {
  const auto& when = engine.policy.validate_explicit_when;
  auto why = !when || when->test(stage_env) ? findings(engine, name, stage_env) : std::vector<Finding>{};
  if (!why.empty()) {
    std::vector<std::string> reasons;
    reasons.reserve(why.size());
    for (const auto& f : why) reasons.push_back(f.reason);
    out.refusal = refusalMessage(engine, "explicit_invalid", stage_env, stage, [&](Env& msg) {
      msg["backend"] = name;
      msg["reasons"] = pythonList(reasons);
    });
    out.refused_by = {*out.refusal, why.front().rule, why.front().source};
    return std::nullopt;
  }
  BackendChoice choice;
  choice.name = name;
  const char* variable = explicitVariable(stage_env, stage);
  const auto rule = out.set_by.find(variable);
  if (rule == out.set_by.end()) {
    choice.how = "explicit";
    choice.decided_by = {"", std::string("the user's flag (") + variable + ")", "attnsim command line"};
  } else {
    choice.how = "rule " + rule->second.source.substr(0, rule->second.source.find(" ("));
    choice.decided_by = rule->second;
  }
  return choice;
}

std::optional<BackendChoice> Selector::walkPriorityList(const Engine& engine, const std::string& stage,
                                                        const Env& stage_env, Selection& out) const {
  const PriorityList* list = priorityListFor(engine, stage, stage_env);
  if (!list) {
    out.refusal = refusalMessage(engine, "no_list", stage_env, stage);
    out.refused_by = {*out.refusal, "no priority list applies", engine.policy.source};
    return std::nullopt;
  }
  BackendChoice choice;
  ReasonList invalid;
  auto [walk, picked] =
      walkOrder(*list, stage_env, stage, [&](const std::string& name) { return validate(engine, name, stage_env); });
  for (const auto& step : walk.steps) {
    if (step.outcome == "not valid") invalid.emplace_back(step.backend, step.reasons);
  }
  if (picked) {
    choice.name = list->order[*picked];
    choice.how = list->label;
    choice.decided_by = {"", "priority list '" + list->label + "': " + join(list->order, ", "),
                         list->branches[*picked].source};
  }
  out.order_walks.push_back(std::move(walk));
  for (const auto& entry : invalid) {
    if (std::find(out.considered.begin(), out.considered.end(), entry) == out.considered.end()) {
      out.considered.push_back(entry);
    }
  }
  if (choice.name.empty()) {
    out.refusal = refusalMessage(engine, "none_valid", stage_env, stage,
                                 [&](Env& msg) { msg["all_reasons"] = reasonsDict(invalid); });
    out.refused_by = {*out.refusal, "priority list '" + list->label + "': no valid entry", list->source};
    return std::nullopt;
  }
  return choice;
}

bool Selector::refuseAtKernelLimit(const Engine& engine, const BackendChoice& choice, const std::string& stage,
                                   const Env& stage_env, Selection& out) const {
  const auto limits = kernelLimitFindings(catalog_, engine.policy, *choice.caps, stage_env);
  if (limits.empty()) return true;
  std::vector<std::string> reasons;
  reasons.reserve(limits.size());
  for (const auto& f : limits) reasons.push_back(f.reason);
  out.refusal = fmt::format("{} accepts {}{}, but its kernel cannot run this scenario (it would fail at run time): {}",
                            engine.policy.display_name, choice.name,
                            stage.empty() ? "" : " for the " + stage + " stage", join(reasons, "; "));
  out.refused_by = {*out.refusal, limits.front().rule, limits.front().source, true};
  return false;
}

bool Selector::chooseForStage(const Engine& engine, const std::string& stage, const Env& env, Selection& out) const {
  Env stage_env = env;
  stage_env["stage"] = stage.empty() ? Value{} : Value{stage};
  const std::string* name = std::get_if<std::string>(&explicitBackend(stage_env, stage));
  if (name && leavesStageToEngine(engine, *name, stage, stage_env, out)) name = nullptr;
  std::optional<BackendChoice> choice =
      name ? chooseExplicit(engine, *name, stage, stage_env, out) : walkPriorityList(engine, stage, stage_env, out);
  if (!choice) return false;
  choice->backend = backendForKind(engine, choice->name, truthy(stage_env["use_mla"]));
  if (!choice->backend) choice->backend = findBackends(engine, choice->name).front();
  choice->caps = &choice->backend->resolve(stage_env, &choice->variant);
  if (!refuseAtKernelLimit(engine, *choice, stage, stage_env, out)) return false;
  if (stage.empty() || stage == "prefill") out.prefill = choice;
  if (stage.empty() || stage == "decode") out.decode = choice;
  return true;
}

void Selector::noteOtherStage(const Engine& engine, const std::string& stage, const Env& env, Selection& out) const {
  if (engine.policy.explicit_backend_stages_it_runs) return;  // the engine's own order picks the other stage
  const std::string other = stage == "prefill" ? "decode" : "prefill";
  Env other_env = env;
  other_env["stage"] = other;
  if (!isNull(var(other_env, other == "prefill" ? "prefill_attention_backend" : "decode_attention_backend"))) return;
  const auto* name = std::get_if<std::string>(&var(other_env, "attention_backend"));
  if (!name) return;
  const auto reasons = validate(engine, *name, other_env);
  if (reasons.empty()) return;
  out.notes.push_back(fmt::format(
      "{} cannot serve the {} stage here ({}), so a deployment naming it for both stages is refused; this answer is "
      "for the {} stage alone, with {} as its backend",
      *name, other, join(reasons, "; "), stage, *name));
}

Selection Selector::select(const SelectionInput& scenario) const {
  const Engine& engine = catalog_.engine(scenario.engine->engine);
  Selection out;
  out.engine = engine.policy.engine;
  Env env = buildEnv(scenario);
  requireKnownExplicitNames(engine, env);
  applyEngineRules(engine, env, out);
  // Every backend that cannot serve this scenario, whichever stage it would run.
  for (const auto& name : backendNames(engine)) {
    auto why = findings(engine, name, env);
    if (why.empty()) why = kernelLimits(engine, name, env);  // the engine accepts it; can its kernel run it?
    if (why.empty()) continue;
    std::vector<std::string> reasons;
    reasons.reserve(why.size());
    for (const auto& f : why) reasons.push_back(f.reason);
    out.rejected.emplace_back(name, std::move(reasons));
    out.rejected_why.emplace_back(name, std::move(why));
  }
  if (!out.refusal) {
    const std::vector<std::string> stages =
        engine.policy.per_stage ? std::vector<std::string>{"prefill", "decode"} : std::vector<std::string>{""};
    for (const auto& stage : stages) {
      if (scenario.only_stage && !stage.empty() && stage != *scenario.only_stage) continue;
      if (!chooseForStage(engine, stage, env, out)) break;
    }
    if (scenario.only_stage && engine.policy.per_stage && !out.refusal) {
      noteOtherStage(engine, *scenario.only_stage, env, out);
    }
  }
  out.env = std::move(env);
  return out;
}

}  // namespace attnsim
