#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "reports/KeyReference.hpp"
#include "reports/SupportTables.hpp"

namespace attnsim::cli {

namespace {

// The engine's backends that no table of its document lists (an overlay's new backend, say): said, not
// silently left out.
std::string backendsInNoTable(const Engine& e) {
  std::vector<std::string> listed;
  for (const auto& t : e.policy.docs_tables) {
    for (const auto& row : t.rows) listed.push_back(row.substr(0, row.find_first_of("@/")));
  }
  std::vector<std::string> missing;
  for (const auto& name : backendNames(e)) {
    if (std::find(listed.begin(), listed.end(), name) == listed.end()) missing.push_back(name);
  }
  if (missing.empty() || e.policy.docs_tables.empty()) return {};
  return fmt::format(
      "\n{} backends in no table of the document above (add them to a `docs` table's rows in "
      "backends/{}/engine.yaml): {}\n",
      e.policy.engine, e.policy.engine, fmt::join(missing, ", "));
}

}  // namespace

Runner addDocsCommand(CLI::App& app, const GlobalOptions& global) {
  auto engine = std::make_shared<std::string>();
  auto out_file = std::make_shared<std::string>();
  app.add_option("--engine", *engine, "one engine (default: all)");
  app.add_option("--out", *out_file, "write the Markdown to this file instead of stdout");
  auto diff = std::make_shared<bool>(false);
  app.add_flag("--diff", *diff,
               "list the document's cells that the code rules do not follow, with where the code decides");
  auto keys = std::make_shared<bool>(false);
  app.add_flag("--keys", *keys,
               "print the key reference of the catalog files and the measurement CSV (docs/KEYS.md) instead");
  return [&global, engine, out_file, diff, keys]() {
    if (*keys && (*diff || !engine->empty())) throw UsageError("--keys takes no --engine or --diff");
    const Catalog& c = global.loadCatalog();
    if (!engine->empty()) (void)c.engine(*engine);
    std::string text = *diff ? "# Document cells versus code rules\n\n" : "# Attention backend support matrices\n\n";
    if (*keys) text = global.json ? keyReferenceJson() : renderKeyReference();
    nlohmann::json all = nlohmann::json::array();
    for (const auto& e : c.engines()) {
      if (*keys || (!engine->empty() && e.policy.engine != *engine)) continue;
      if (!*diff) {
        text += renderSupportTables(e) + backendsInNoTable(e);
        continue;
      }
      const auto diffs = docsDiff(e);
      text += renderDocsDiff(e, diffs);
      for (const auto& d : diffs) {
        all.push_back({{"engine", e.policy.engine},
                       {"table", d.table},
                       {"row", d.row},
                       {"column", d.column},
                       {"document", d.doc},
                       {"code", d.code},
                       {"decided_by", d.decision}});
      }
    }
    if (*diff && global.json) text = all.dump(2) + "\n";
    if (out_file->empty()) {
      std::cout << text;
      return 0;
    }
    try {
      writeFileAtomically(*out_file, text);
    } catch (const UsageError& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
    return 0;
  };
}

}  // namespace attnsim::cli
