// attnsim capacity memory: the engine's GPU memory split and KV capacity for one scenario.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/Commands.hpp"
#include "cli/ServeFlags.hpp"
#include "core/Strings.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/Capacity.hpp"
#include "simulator/CapacitySearch.hpp"
#include "study/CapacitySpec.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim::cli {

namespace {

nlohmann::json splitJson(const CapacityReport& r) {
  const MemorySplit& s = r.split;
  nlohmann::json derived = nlohmann::json::object();
  for (const auto& [name, value] : s.derived) derived[name] = value;
  return {{"hardware", r.hardware->id},
          {"model", r.model->id},
          {"engine", r.engine},
          {"backend", r.backend},
          {"kv_dtype", r.kv_dtype},
          {"tp", r.tp},
          {"gpu_mib", s.gpu_mib},
          {"weights_mib", s.weights_mib},
          {"activation_mib", s.activation_mib},
          {"cuda_graph_mib", s.cuda_graph_mib},
          {"engine_reserve_mib", s.other_mib},
          {"kv_pool_mib", s.kv_pool_mib},
          {"kv_bytes_per_token", s.kv.full_bytes},
          {"kv_bytes_per_token_windowed", s.kv.windowed_bytes},
          {"sliding_window", s.kv.max_window},
          {"page_size", s.page_size},
          {"kv_tokens", s.kv_tokens},
          {"kv_pages", s.kv_pages},
          {"attention_dp", s.attention_dp},
          {"engine_kv_tokens", s.engineKvTokens()},
          {"max_batched_tokens", s.max_batched_tokens},
          {"max_running_requests", s.max_running_requests},
          {"decode_graph_sizes", s.decode_graph_sizes},
          {"prefill_graph_sizes", s.prefill_graph_sizes},
          {"weights_fit", s.weightsFit()},
          {"derived", derived},
          {"note", s.note},
          {"source", s.source}};
}

void printSplit(const CapacityReport& r) {
  const MemorySplit& s = r.split;
  fmt::print("{} · {} · {}:{} · TP {} · KV {} · page {}\n\n", r.hardware->id, r.model->id, r.engine, r.backend, r.tp,
             r.kv_dtype, s.page_size);
  fmt::print("GPU memory per rank     {:>10.2f} GiB\n", s.gpu_mib / 1024);
  fmt::print("  weights               {:>10.2f} GiB  ({:.2f} GB, {} {}B params / TP {}{})\n", s.weights_mib / 1024,
             s.weights_mib * kMiB / 1e9, r.model->weight_dtype, r.model->parameters_b, r.tp,
             s.attention_dp > 1 ? fmt::format(", attention / TP {}", r.tp / s.attention_dp) : "");
  fmt::print("  KV pool               {:>10.2f} GiB\n", s.kv_pool_mib / 1024);
  fmt::print("  engine reserve        {:>10.2f} GiB  (not weights nor KV), holding by attnsim's estimates:\n",
             s.other_mib / 1024);
  fmt::print("    activation peak     {:>10.2f} GiB  (at {} tokens)\n", s.activation_mib / 1024, s.max_batched_tokens);
  fmt::print("    CUDA graphs         {:>10.2f} GiB  ({} decode + {} prefill sizes)\n", s.cuda_graph_mib / 1024,
             s.decode_graph_sizes, s.prefill_graph_sizes);
  fmt::print("KV per token            {:>10.0f} B", s.kv.full_bytes);
  if (s.kv.windowed_layers > 0) {
    fmt::print(" (+ {:.0f} B in {} sliding-window layers, up to {} tokens)", s.kv.windowed_bytes, s.kv.windowed_layers,
               s.kv.max_window);
  }
  fmt::print("\nKV capacity             {:>10} tokens, {} pages\n", s.kv_tokens, s.kv_pages);
  if (s.attention_dp > 1) {
    fmt::print(
        "DP attention            {:>10} tokens in the engine: {} attention replicas of TP {}, each GPU holding\n"
        "                        its replica's requests (attention weights {}x replicated)\n",
        s.engineKvTokens(), s.attention_dp, r.tp / s.attention_dp, s.attention_dp);
  }
  fmt::print("scheduler               {} tokens per step, {} running requests\n", s.max_batched_tokens,
             s.max_running_requests);
  for (const auto& [name, value] : s.derived) fmt::print("  {:<22}{:>10.6g}\n", name, value);
  if (!s.weightsFit()) fmt::print("\nDOES NOT FIT: the weights leave no room for a KV cache\n");
  fmt::print("\n{}\nsource: {}\n", s.note, s.source);
}

}  // namespace

constexpr std::int64_t kMaxTp = 1024;  // as --tp in every scenario command

struct SearchFlags {
  ScenarioFlags scenario;  // hardware, models and engines hold comma lists
  std::string tps = "1";
  std::string db;  // also store every search (study/CapacityStore)
  ArrivalSpec arrivals;
  double slo_ttft_ms = 2000, slo_tpot_ms = 50, target_rate = 0;
};

// A search where no rate meets the SLO has no rate's figures: they are null and slo_unmet says why.
nlohmann::json searchRow(const CapacityReport& c, const RateSearch& r, const SearchFlags& f) {
  const bool met = r.slo_unmet.empty();
  auto figure = [met](double v) { return met ? nlohmann::json(v) : nlohmann::json(); };
  return {
      {"hardware", c.hardware->id},
      {"model", c.model->id},
      {"engine", c.engine},
      {"backend", c.backend},
      {"tp", c.tp},
      {"max_rate_rps", r.max_rate},
      // the step model's band carried through: the highest rate with every step at its band's slow and fast end
      {"max_rate_band_rps", met ? nlohmann::json::array({r.rate_slow_end, r.rate_fast_end}) : nlohmann::json()},
      {"slo_unmet", met ? nlohmann::json() : nlohmann::json(r.slo_unmet)},
      {"output_tokens_per_s", figure(r.at_max.output_tokens_per_s)},
      {"p99_ttft_ms", figure(r.at_max.ttft.p99 * 1e3)},
      {"p99_tpot_ms", figure(r.at_max.tpot.p99 * 1e3)},
      {"gpus_for_target", met && f.target_rate > 0 ? nlohmann::json(r.gpusFor(f.target_rate, c.tp)) : nlohmann::json()},
      {"simulations", r.simulations}};
}

void printSearchRow(const std::string& hw, const std::string& engine, const CapacityReport& c, const RateSearch& r,
                    const SearchFlags& f) {
  const std::string name = engine + ":" + c.backend;
  if (!r.slo_unmet.empty()) {
    fmt::print("{:<14}{:<26}{:>4}  {}\n", hw, name, c.tp, r.slo_unmet);
    return;
  }
  fmt::print("{:<14}{:<26}{:>4}{:>12.2f}{:>12.0f}{:>10.0f}ms{:>10.1f}ms{:>8}\n", hw, name, c.tp, r.max_rate,
             r.at_max.output_tokens_per_s, r.at_max.ttft.p99 * 1e3, r.at_max.tpot.p99 * 1e3,
             f.target_rate > 0 ? std::to_string(r.gpusFor(f.target_rate, c.tp)) : "-");
}

void storeSearch(CapacityStore& out, const CapacityReport& c, const Scenario& s, const SearchFlags& f,
                 const RateSearch& r) {
  CapacityConfigRow row{c.hardware->id, c.model->id,   c.engine, c.backend,   c.kv_dtype, s.backend.has_value(),
                        c.tp,           s.cuda_graphs, c.split,  r.slo_unmet, r.max_rate, f.target_rate,
                        r.simulations};
  const std::int64_t id = out.addConfig(std::nullopt, row);
  out.addSearch(id, describeArrivals(f.arrivals), {f.slo_ttft_ms / 1e3, f.slo_tpot_ms / 1e3}, r);
}

int runSearch(const GlobalOptions& global, const SearchFlags& f) {
  const Catalog c = global.loadCatalog();
  const ServeSlo slo{f.slo_ttft_ms / 1e3, f.slo_tpot_ms / 1e3};
  std::optional<Store> store;
  std::optional<CapacityStore> stored;
  if (!f.db.empty()) stored.emplace(store.emplace(f.db));
  nlohmann::json rows = nlohmann::json::array();
  if (!global.json) {
    fmt::print(
        "highest rate with p99 TTFT <= {} ms and p99 TPOT <= {} ms; {} requests, prompt {} / output {} tokens\n\n",
        f.slo_ttft_ms, f.slo_tpot_ms, f.arrivals.requests, f.arrivals.prompt_tokens, f.arrivals.output_tokens);
    fmt::print("{:<14}{:<26}{:>4}{:>12}{:>12}{:>12}{:>12}{:>8}\n", "hardware", "engine:backend", "TP", "max req/s",
               "tokens/s", "p99 TTFT", "p99 TPOT", "GPUs");
  }
  for (const auto& hw : splitList(f.scenario.hardware)) {
    for (const auto& engine : splitList(f.scenario.engines)) {
      for (const auto tp : parseIntList(f.tps, 1, kMaxTp)) {
        ScenarioFlags one = f.scenario;
        one.tp = tp;
        const Scenario s = one.scenario(hw, f.scenario.models, engine);
        try {
          ServeSession session(c, s);
          const RateSearch r = searchRate(session, f.arrivals, slo);
          if (stored) storeSearch(*stored, session.setup().capacity, s, f, r);
          rows.push_back(searchRow(session.setup().capacity, r, f));
          if (!global.json) printSearchRow(hw, engine, session.setup().capacity, r, f);
        } catch (const std::runtime_error& e) {  // InputError or EngineRefusal: a refusal or a model that does not fit:
                                                 // reported, the search goes on
          rows.push_back({{"hardware", hw}, {"engine", engine}, {"tp", one.tp}, {"error", e.what()}});
          if (!global.json) fmt::print("{:<14}{:<26}{:>4}  {}\n", hw, engine, tp, e.what());
        }
      }
    }
  }
  if (global.json) std::cout << rows.dump(2) << "\n";
  return 0;
}

CLI::App* addSearch(CLI::App& app, SearchFlags& f) {
  CLI::App* search = app.add_subcommand("search", "highest request rate within an SLO, and GPUs for a target rate");
  search->add_option("--hardware", f.scenario.hardware, "hardware profile ids, comma list")->required();
  search->add_option("--model", f.scenario.models, "model id")->required();
  search->add_option("--engine", f.scenario.engines, "engine ids, comma list")->required();
  search->add_option("--tp", f.tps, "tensor-parallel sizes, comma list (default 1)")->check(integerList(1, kMaxTp));
  search->add_option("--kv-dtype", f.scenario.kv_dtype, "KV-cache dtype as the engine spells it");
  search->add_option("--option", f.scenario.engine_options,
                     "engine flag name=value, given to every engine of the list (repeatable)");
  addArrivalFlags(*search, f.arrivals);
  search->add_option("--slo-ttft-ms", f.slo_ttft_ms, "SLO on p99 time to first token")->check(positiveNumber());
  search->add_option("--slo-tpot-ms", f.slo_tpot_ms, "SLO on p99 time per output token")->check(positiveNumber());
  search->add_option("--target-rate", f.target_rate, "requests per second to serve: prints the GPUs needed")
      ->check(positiveNumber());
  search->add_option("--db", f.db, "study file: also store every simulation (report capacity reads it)");
  return search;
}

struct StudyFlags {
  std::string spec, db;
};

nlohmann::json configJson(const CapacityConfigRow& r) {
  nlohmann::json row = {{"hardware", r.hardware}, {"model", r.model}, {"engine", r.engine},
                        {"backend", r.backend},   {"tp", r.tp},       {"forced_backend", r.forced_backend}};
  if (!r.error.empty()) row["error"] = r.error;
  if (r.max_rate) row["max_rate_rps"] = *r.max_rate;
  if (r.sloUnmet()) row["slo_unmet"] = r.error;  // no rate meets the SLO: why
  if (r.split) row["kv_tokens"] = r.split->kv_tokens;
  return row;
}

int runStudy(const GlobalOptions& global, const StudyFlags& f) {
  const Catalog c = global.loadCatalog();
  const CapacitySpec spec = loadCapacitySpec(f.spec, c);
  Store store(f.db);
  nlohmann::json rows = nlohmann::json::array();
  CapacityStudyOptions options;
  options.program_version = ATTNSIM_VERSION;
  if (!global.json) {
    fmt::print("capacity study {}: {} configurations, p99 TTFT <= {:g} ms, p99 TPOT <= {:g} ms; {}\n\n", spec.name,
               capacityConfigs(spec).size(), spec.slo.ttft_s * 1e3, spec.slo.tpot_s * 1e3,
               describeArrivals(spec.arrivals));
    fmt::print("{:<10}{:<15}{:<32}{:>4}{:>12}  {}\n", "hardware", "model", "engine:backend", "TP", "max req/s", "note");
  }
  options.on_config = [&](const CapacityConfigRow& r) {
    rows.push_back(configJson(r));
    if (global.json) return;
    // '(own)': the engine's own choice, apart from the same backend forced by the spec (as the report marks it)
    fmt::print("{:<10}{:<15}{:<32}{:>4}{:>12}  {}\n", r.hardware, r.model,
               fmt::format("{}:{}{}", r.engine, r.backend.empty() ? "-" : r.backend, r.forced_backend ? "" : " (own)"),
               r.tp,
               r.sloUnmet() ? "none"
               : r.max_rate ? fmt::format("{:.2f}", *r.max_rate)
                            : "-",
               r.error.substr(0, r.error.find('\n')));
    std::fflush(stdout);
  };
  const std::int64_t id = runCapacityStudy(c, spec, store, options);
  if (global.json) {
    std::cout << nlohmann::json{{"study", id}, {"name", spec.name}, {"db", f.db}, {"configs", rows}}.dump(2) << "\n";
  } else {
    fmt::print("\nstored as capacity study {} in {} (attnsim report capacity --db {} --out DIR)\n", id, f.db, f.db);
  }
  return 0;
}

CLI::App* addStudy(CLI::App& app, StudyFlags& f) {
  CLI::App* study =
      app.add_subcommand("study", "a capacity study: the rate search over a spec's configurations, stored");
  study->add_option("spec", f.spec, "a built-in spec (" + join(builtinCapacitySpecNames(), ", ") + ") or a YAML file")
      ->required();
  study->add_option("--db", f.db, "study file the results go to")->required();
  return study;
}

Runner addCapacityCommand(CLI::App& app, const GlobalOptions& global) {
  app.require_subcommand(1);
  CLI::App* memory = app.add_subcommand("memory", "the engine's GPU memory split and KV-cache capacity");
  auto flags = std::make_shared<ScenarioFlags>();
  memory->add_option("--hardware", flags->hardware, "hardware profile id")->required();
  memory->add_option("--model", flags->models, "model id")->required();
  memory->add_option("--engine", flags->engines, "engine id")->required();
  memory->add_option("--backend", flags->backend, "engine:NAME (default: the engine's own choice)");
  flags->addServing(*memory);
  memory->add_option("--cuda-graph", flags->cuda_graph, "on or off")->check(CLI::IsMember({"on", "off"}));
  auto search_flags = std::make_shared<SearchFlags>();
  search_flags->arrivals.requests = 1000;
  CLI::App* search = addSearch(app, *search_flags);
  auto study_flags = std::make_shared<StudyFlags>();
  CLI::App* study = addStudy(app, *study_flags);
  return [&global, flags, memory, search, search_flags, study, study_flags]() {
    if (search->parsed()) return runSearch(global, *search_flags);
    if (study->parsed()) return runStudy(global, *study_flags);
    if (!memory->parsed()) return 2;
    const Catalog c = global.loadCatalog();
    const CapacityReport r = capacityOf(c, flags->scenario(flags->hardware, flags->models, flags->engines));
    if (global.json) {
      std::cout << splitJson(r).dump(2) << "\n";
    } else {
      printSplit(r);
    }
    return r.split.weightsFit() ? 0 : 1;
  };
}

}  // namespace attnsim::cli
