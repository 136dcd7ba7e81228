#pragma once
// Shared by the Python module's files: answers as Python data, keywords as a scenario, the catalog of
// a call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "simulator/Scenario.hpp"

namespace py = pybind11;

namespace attnsim_py {

// The same plain data `attnsim --json` prints: dicts, lists, numbers, strings and None.
py::object toPython(const nlohmann::json& j);
const attnsim::Catalog& defaultCatalog();
// A scenario made of keywords as the command line's flags (underscores for dashes), same defaults.
attnsim::Scenario scenarioFrom(const py::kwargs& kwargs);
// A call's scenario: the Scenario given, or one made of the keywords (not both).
attnsim::Scenario scenarioOf(const std::optional<attnsim::Scenario>& given, const py::kwargs& kwargs);
// The catalog a call uses: the one given or the embedded default, with a study's calibrations.
std::shared_ptr<const attnsim::Catalog> catalogOf(const attnsim::Catalog* given, const std::optional<std::string>& db);
// serve_sim, capacity_memory, capacity_search, sweep and report (python/AttnsimServing.cpp).
void bindServing(py::module_& m);

// A keyword's value as T, or a UsageError naming the keyword.
template <class T>
T as(const py::handle& value, const std::string& key, const char* expected) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw attnsim::UsageError(key + ": expected " + expected + ", got " +
                              std::string(py::str(py::type::of(value).attr("__name__"))));
  }
}

}  // namespace attnsim_py
