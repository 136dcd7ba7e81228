#pragma once
// The SLO of `vllm bench serve --goodput KEY:MS ...` (vllm/benchmarks/serve.py parse_goodput: a
// request is good when it meets every target named; the unnamed are not checked). Shared by
// serve-sim's --goodput and the Python module's goodput keyword.
#include <string>
#include <vector>

#include "simulator/ServeSim.hpp"

namespace attnsim {

// Targets "ttft:MS", "tpot:MS", "e2el:MS" (MS >= 0); UsageError naming `flag` and the bad item.
ServeSlo goodputSlo(const std::vector<std::string>& targets, const std::string& flag);

}  // namespace attnsim
