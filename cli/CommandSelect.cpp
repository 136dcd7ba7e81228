#include <fmt/format.h>

#include <iostream>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "reports/Json.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim::cli {

namespace {

std::string choiceLabel(const std::optional<BackendChoice>& c) {
  if (!c) return "-";
  return c->variant.empty() ? c->name : c->name + " [" + c->variant + "]";
}

void printChoice(const char* label, const BackendChoice& c) {
  fmt::print("{:<9} {}  (chosen by: {}; CUDA graphs: {}; kernels: prefill {}, decode {})\n", label, choiceLabel(c),
             c.how, c.caps->cuda_graph, c.caps->prefill_kernel.empty() ? "-" : c.caps->prefill_kernel,
             c.caps->decode_kernel.empty() ? "-" : c.caps->decode_kernel);
}

void printReasons(const char* heading, const ReasonList& reasons) {
  if (reasons.empty()) return;
  fmt::print("\n{}\n", heading);
  for (const auto& [name, why] : reasons) fmt::print("  {:<26} {}\n", name, join(why, "; "));
}

void printDetailed(const ScenarioSelection& s) {
  const HardwareProfile& h = *s.hardware;
  const Selection& sel = s.selection;
  fmt::print("engine    {} {}\n", s.engine->policy.display_name, s.engine->policy.version);
  fmt::print("hardware  {} ({}, {} {})\n", h.id, h.name, h.platform,
             h.compute_capability ? fmt::format("sm {:.1f}", *h.compute_capability) : h.gfx_target);
  fmt::print("model     {} ({})\n", s.model->id, s.model->name);
  fmt::print("serving   kv_dtype={} page_size={}\n", toDisplay(sel.env.at("kv_dtype")),
             toDisplay(sel.env.at("page_size")));
  if (sel.refusal) {
    fmt::print("\nREFUSED   {}\n", *sel.refusal);
  } else if (sel.commonBackend()) {
    printChoice("backend", *sel.prefill);
  } else {
    printChoice("prefill", *sel.prefill);
    printChoice("decode", *sel.decode);
  }
  for (const auto& n : sel.notes) fmt::print("note      {}\n", n);
  printReasons("tried first (higher priority, not valid):", sel.considered);
  printReasons("not valid for this scenario:", sel.rejected);
}

void printFinding(const std::string& label, const Finding& f) {
  fmt::print("  {:<26} {}{}\n  {:<26}   rule:   {}\n  {:<26}   source: {}\n", label, f.reason.empty() ? "" : "✗ ",
             f.reason, "", f.rule, "", f.source);
}

// select --explain: the rule that decided each stage's backend and each rejection, with its source.
void printExplanation(const Selection& sel) {
  fmt::print("\nexplain (rule that decided · source):\n");
  if (sel.refusal) printFinding("REFUSED", sel.refused_by);
  for (const auto& [stage, choice] : {std::pair{"prefill", &sel.prefill}, std::pair{"decode", &sel.decode}}) {
    if (*choice) printFinding(fmt::format("{} {}", stage, (*choice)->name), (*choice)->decided_by);
  }
  for (const auto& [name, why] : sel.rejected_why) {
    for (const auto& f : why) printFinding(name, f);
  }
}

// select --explain: each order walked, branch by branch, with why each earlier branch did not pick.
void printOrderWalks(const Selection& sel) {
  for (const auto& walk : sel.order_walks) {
    fmt::print("\norder '{}'{}: the first branch whose condition holds{} · source {}\n", walk.label,
               walk.stage.empty() ? "" : " (" + walk.stage + " stage)",
               walk.first_match ? " (the engine validates its backend afterwards)" : " and whose backend is valid",
               walk.source);
    if (!walk.conditions.empty()) {
      std::vector<std::string> values;
      values.reserve(walk.conditions.size());
      for (const auto& [name, value] : walk.conditions) values.push_back(fmt::format("{}={}", name, value));
      fmt::print("  conditions: {}\n", join(values, ", "));
    }
    for (std::size_t i = 0; i < walk.steps.size(); ++i) {
      const OrderStep& step = walk.steps[i];
      fmt::print("  {:>2}. {:<16} {}{}\n      when:   {}\n      source: {}{}\n", i + 1, step.backend, step.outcome,
                 step.reasons.empty() ? "" : ": " + join(step.reasons, "; "), step.when.empty() ? "always" : step.when,
                 step.source, step.inserted_by.empty() ? "" : " (inserted by " + step.inserted_by + ")");
    }
  }
}

nlohmann::json orderWalksJson(const Selection& sel) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& walk : sel.order_walks) {
    nlohmann::json branches = nlohmann::json::array();
    for (const auto& step : walk.steps) {
      branches.push_back(
          {{"backend", step.backend},
           {"when", step.when.empty() ? nlohmann::json() : nlohmann::json(step.when)},
           {"outcome", step.outcome},
           {"reasons", step.reasons},
           {"source", step.source},
           {"inserted_by", step.inserted_by.empty() ? nlohmann::json() : nlohmann::json(step.inserted_by)}});
    }
    nlohmann::json conditions = nlohmann::json::object();
    for (const auto& [name, value] : walk.conditions) conditions[name] = value;
    out.push_back({{"list", walk.label},
                   {"stage", walk.stage.empty() ? nlohmann::json() : nlohmann::json(walk.stage)},
                   {"pick", walk.first_match ? "first_match" : "first_valid"},
                   {"source", walk.source},
                   {"conditions", conditions},
                   {"branches", branches}});
  }
  return out;
}

void printMatrixRow(const ScenarioSelection& s) {
  const Selection& sel = s.selection;
  const std::string extra = sel.refusal ? "REFUSED: " + *sel.refusal : join(sel.notes, "; ");
  fmt::print("{:<14} {:<16} {:<8} {:<30} {:<30} {}\n", s.hardware->id, s.model->id, sel.engine,
             choiceLabel(sel.prefill), choiceLabel(sel.decode), extra);
}

}  // namespace

Runner addSelectCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<ScenarioFlags>();
  app.add_option("--engine", flags->engines, "engine id(s): vllm, sglang, rtp-llm (comma list for a matrix)")
      ->required();
  app.add_option("--hardware", flags->hardware, "hardware profile id(s) (comma list for a matrix)")->required();
  app.add_option("--model", flags->models, "model id(s) (comma list for a matrix)")->required();
  app.add_option("--backend", flags->backend, "explicit backend for both phases (NAME or engine:NAME)");
  flags->addStageBackends(app);
  flags->addServing(app);
  auto explain = std::make_shared<bool>(false);
  app.add_flag("--explain", *explain,
               "show, for each stage's backend and each rejected one, the rule that decided and its source");
  return [&global, flags, explain]() {
    const Catalog& catalog = global.loadCatalog();
    const auto engines = splitList(flags->engines);
    const auto hardware = splitList(flags->hardware);
    const auto models = splitList(flags->models);
    if (engines.empty() || hardware.empty() || models.empty()) {
      throw UsageError("--engine, --hardware and --model need a value");
    }
    const bool single = engines.size() == 1 && hardware.size() == 1 && models.size() == 1;
    nlohmann::json all = nlohmann::json::array();
    int refusals = 0;
    if (!single && !global.json) {
      fmt::print("{:<14} {:<16} {:<8} {:<30} {:<30} {}\n", "hardware", "model", "engine", "prefill", "decode",
                 "notes / refusal");
    }
    for (const auto& hw : hardware) {
      for (const auto& model : models) {
        for (const auto& engine : engines) {
          const ScenarioSelection s = selectBackends(catalog, flags->scenario(hw, model, engine));
          refusals += s.selection.refusal ? 1 : 0;
          if (global.json) {
            all.push_back(selectionJson(s, catalog));
            if (*explain) {
              all.back()["explain"] = explanationJson(s.selection);
              all.back()["explain"]["order"] = orderWalksJson(s.selection);
            }
          } else if (single) {
            printDetailed(s);
            if (*explain) {
              printExplanation(s.selection);
              printOrderWalks(s.selection);
            }
          } else {
            printMatrixRow(s);
          }
        }
      }
    }
    if (global.json) std::cout << (single ? all.front() : all).dump(2) << "\n";
    // One scenario: a refusal is the answer "no" (exit 1). A matrix reports refusals in its rows.
    return single && refusals > 0 ? 1 : 0;
  };
}

}  // namespace attnsim::cli
