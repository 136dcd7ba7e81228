#pragma once
// Limits a backend file or its kernel family declares that its engine's own validation does not read
// (SGLang checks no head size, dtype or KV-cache dtype; no engine checks a kernel's KV formats). The
// engine accepts such a configuration and the kernel fails at run time, so attnsim refuses it as the
// kernel's limit, apart from the engine's rules.
#include <vector>

#include "catalog/Catalog.hpp"
#include "selection/Selector.hpp"

namespace attnsim {

// Each limit of `backend` (resolved to `caps`) that the scenario breaks; empty when the kernel can run it.
std::vector<Finding> kernelLimitFindings(const Catalog& catalog, const EnginePolicy& policy, const BackendCaps& caps,
                                         const Env& env);

}  // namespace attnsim
