#pragma once
// The catalog's entries as JSON: what `attnsim --json list` prints and Catalog.list() returns in
// Python.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnsim {

class Catalog;

// What `list` can show.
const std::vector<std::string>& catalogListKinds();
// One array of entries: hardware, models, backends (of `engine`, or all), kernels, engines or
// variables. UsageError on another kind or an unknown engine.
nlohmann::json catalogListJson(const Catalog& c, const std::string& what, const std::string& engine = "");

}  // namespace attnsim
