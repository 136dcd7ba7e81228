// attnsim capacity memory: the engine's GPU memory split and KV capacity for one scenario.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"
#include "simulator/Capacity.hpp"

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
  fmt::print("  weights               {:>10.2f} GiB  ({:.2f} GB, {} {}B params / TP {})\n", s.weights_mib / 1024,
             s.weights_mib * kMiB / 1e9, r.model->weight_dtype, r.model->parameters_b, r.tp);
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
  fmt::print("scheduler               {} tokens per step, {} running requests\n", s.max_batched_tokens,
             s.max_running_requests);
  for (const auto& [name, value] : s.derived) fmt::print("  {:<22}{:>10.6g}\n", name, value);
  if (!s.weightsFit()) fmt::print("\nDOES NOT FIT: the weights leave no room for a KV cache\n");
  fmt::print("\n{}\nsource: {}\n", s.note, s.source);
}

}  // namespace

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
  return [&global, flags, memory]() {
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
