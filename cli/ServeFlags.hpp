#pragma once
// Flags shared by serve-sim and capacity search: generated arrivals and their lengths.
#include <CLI/CLI.hpp>

#include "simulator/Traces.hpp"

namespace attnsim::cli {

// --rate, --requests, --arrival, --cv, --prompt-len, --output-len, --lengths, --seed
void addArrivalFlags(CLI::App& app, ArrivalSpec& a);

}  // namespace attnsim::cli
