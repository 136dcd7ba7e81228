#pragma once
// Flags shared by serve-sim and capacity search: generated arrivals and their lengths.
#include <CLI/CLI.hpp>

#include "simulator/Traces.hpp"

namespace attnsim::cli {

// --rate, --requests (--num-prompts), --arrival, --cv, --prompt-len (--random-input-len), --output-len
// (--random-output-len), --lengths, --dataset-name random, --random-range-ratio, --random-prefix-len,
// --backend-bench, --seed. `rate_inf`: --rate also takes inf (every request at t = 0).
void addArrivalFlags(CLI::App& app, ArrivalSpec& a, bool rate_inf = false);

}  // namespace attnsim::cli
