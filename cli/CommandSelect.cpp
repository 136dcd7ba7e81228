#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "selection/Selector.hpp"

namespace attnsim::cli {

namespace {

using nlohmann::json;

std::string choiceLabel(const std::optional<BackendChoice>& c) {
  if (!c) return "-";
  return c->variant.empty() ? c->name : c->name + " [" + c->variant + "]";
}

json choiceJson(const std::optional<BackendChoice>& c) {
  if (!c) return nullptr;
  return {{"backend", c->name},
          {"variant", c->variant.empty() ? json() : json(c->variant)},
          {"chosen_by", c->how},
          {"cuda_graph", c->caps->cuda_graph},
          {"prefill_kernel", c->caps->prefill_kernel.empty() ? json() : json(c->caps->prefill_kernel)},
          {"decode_kernel", c->caps->decode_kernel.empty() ? json() : json(c->caps->decode_kernel)}};
}

json reasonsJson(const ReasonList& list) {
  json out = json::object();
  for (const auto& [name, reasons] : list) out[name] = reasons;
  return out;
}

json envValue(const Env& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || isNull(it->second)) return nullptr;
  const Value& v = it->second;
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

json selectionJson(const Scenario& s, const Selection& sel, const Catalog& c) {
  const auto common = sel.commonBackend();
  return {{"engine", sel.engine},
          {"hardware", s.hardware->id},
          {"model", s.model->id},
          {"backend", common ? json(*common) : json()},
          {"prefill_backend", sel.prefill ? json(sel.prefill->name) : json()},
          {"decode_backend", sel.decode ? json(sel.decode->name) : json()},
          {"prefill", choiceJson(sel.prefill)},
          {"decode", choiceJson(sel.decode)},
          {"kv_dtype", envValue(sel.env, "kv_dtype")},
          {"page_size", envValue(sel.env, "page_size")},
          {"notes", sel.notes},
          {"considered", reasonsJson(sel.considered)},
          {"rejected", reasonsJson(sel.rejected)},
          {"error", sel.refusal ? json(*sel.refusal) : json()},
          {"engine_version", s.engine->version},
          {"catalog_hash", c.contentHash()},
          {"attnsim_version", ATTNSIM_VERSION}};
}

void printDetailed(const Scenario& s, const Selection& sel) {
  const HardwareProfile& h = *s.hardware;
  fmt::print("engine    {} {}\n", s.engine->display_name, s.engine->version);
  fmt::print("hardware  {} ({}, {} {})\n", h.id, h.name, h.platform,
             h.compute_capability ? fmt::format("sm {:.1f}", *h.compute_capability) : h.gfx_target);
  fmt::print("model     {} ({})\n", s.model->id, s.model->name);
  fmt::print("serving   kv_dtype={} page_size={}\n", toDisplay(sel.env.at("kv_dtype")),
             toDisplay(sel.env.at("page_size")));
  if (sel.refusal) {
    fmt::print("\nREFUSED   {}\n", *sel.refusal);
  } else {
    auto show = [](const char* label, const BackendChoice& c) {
      fmt::print("{:<9} {}  (chosen by: {}; CUDA graphs: {}; kernels: prefill {}, decode {})\n", label, choiceLabel(c),
                 c.how, c.caps->cuda_graph, c.caps->prefill_kernel.empty() ? "-" : c.caps->prefill_kernel,
                 c.caps->decode_kernel.empty() ? "-" : c.caps->decode_kernel);
    };
    if (sel.commonBackend()) {
      show("backend", *sel.prefill);
    } else {
      show("prefill", *sel.prefill);
      show("decode", *sel.decode);
    }
  }
  for (const auto& n : sel.notes) fmt::print("note      {}\n", n);
  if (!sel.considered.empty()) {
    fmt::print("\ntried first (higher priority, not valid):\n");
    for (const auto& [name, reasons] : sel.considered) fmt::print("  {:<26} {}\n", name, join(reasons, "; "));
  }
  if (!sel.rejected.empty()) {
    fmt::print("\nnot valid for this scenario:\n");
    for (const auto& [name, reasons] : sel.rejected) fmt::print("  {:<26} {}\n", name, join(reasons, "; "));
  }
}

}  // namespace

Runner addSelectCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<ScenarioFlags>();
  flags->addTo(app);
  return [&global, flags]() {
    const Catalog catalog = global.loadCatalog();
    const Selector selector(catalog);
    const auto engines = splitList(flags->engines);
    const auto hardware = splitList(flags->hardware);
    const auto models = splitList(flags->models);
    if (engines.empty() || hardware.empty() || models.empty())
      throw UsageError("--engine, --hardware and --model need a value");
    const bool single = engines.size() == 1 && hardware.size() == 1 && models.size() == 1;

    json all = json::array();
    int refusals = 0;
    if (!single && !global.json) {
      fmt::print("{:<14} {:<16} {:<8} {:<30} {:<30} {}\n", "hardware", "model", "engine", "prefill", "decode",
                 "notes / refusal");
    }
    for (const auto& hw : hardware) {
      for (const auto& model : models) {
        for (const auto& engine : engines) {
          Scenario s{&catalog.hardware(hw), &catalog.model(model), &catalog.engine(engine).policy,
                     flags->servingOptions(engine)};
          const Selection sel = selector.select(s);
          refusals += sel.refusal ? 1 : 0;
          if (global.json) {
            all.push_back(selectionJson(s, sel, catalog));
          } else if (single) {
            printDetailed(s, sel);
          } else {
            const std::string extra = sel.refusal ? "REFUSED: " + *sel.refusal : join(sel.notes, "; ");
            fmt::print("{:<14} {:<16} {:<8} {:<30} {:<30} {}\n", hw, model, engine, choiceLabel(sel.prefill),
                       choiceLabel(sel.decode), extra);
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
