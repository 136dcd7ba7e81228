#pragma once
// Regenerates each engine's published support-matrix (and priority) tables from the descriptors.
#include <string>

#include "catalog/Catalog.hpp"

namespace attnsim {

// Markdown for one engine: its document's tables, rows and columns as the policy lists them.
std::string renderSupportTables(const Engine& engine);

}  // namespace attnsim
