#pragma once
// Regenerates each engine's published support-matrix (and priority) tables from the descriptors.
#include <string>
#include <vector>

#include "catalog/Catalog.hpp"

namespace attnsim {

// Markdown for one engine: its document's tables, rows and columns as the policy lists them.
std::string renderSupportTables(const Engine& engine);

// One cell of the engine's document that the code rules do not follow.
struct DocsDiff {
  std::string table, row, column;
  std::string doc;       // the document's cell
  std::string code;      // what the selection does instead
  std::string decision;  // the code location that decides it
};
// Every such cell: a `documented` cell that overrides the descriptor's value, and a ❌ cell in a
// column no validation check of the engine reads (the engine runs the backend anyway).
std::vector<DocsDiff> docsDiff(const Engine& engine);
std::string renderDocsDiff(const Engine& engine, const std::vector<DocsDiff>& diffs);

}  // namespace attnsim
