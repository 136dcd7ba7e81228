// attnsim store merge OUT IN...: one store from several (a sweep's shards), row for row.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "study/SweepStore.hpp"

namespace attnsim::cli {

Runner addStoreCommand(CLI::App& app, const GlobalOptions& global) {
  auto out = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  CLI::App* merge = app.add_subcommand("merge", "merge stores (e.g. a sweep's shards) into OUT");
  merge->add_option("out", *out, "the merged store (created when new)")->required();
  merge->add_option("inputs", *inputs, "stores to merge")->required();
  app.require_subcommand(1);
  return [out, inputs, &global]() {
    mergeStores(*out, *inputs);
    if (global.json) {
      std::cout << nlohmann::json{{"merged", *inputs}, {"into", *out}}.dump(2) << "\n";
    } else {
      fmt::print("merged {} stores into {}\n", inputs->size(), *out);
    }
    return 0;
  };
}

}  // namespace attnsim::cli
