#include <fmt/format.h>

#include <iostream>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "reports/SupportTables.hpp"

namespace attnsim::cli {

Runner addDocsCommand(CLI::App& app, const GlobalOptions& global) {
  auto engine = std::make_shared<std::string>();
  auto out_file = std::make_shared<std::string>();
  app.add_option("--engine", *engine, "one engine (default: all)");
  app.add_option("--out", *out_file, "write the Markdown to this file instead of stdout");
  return [&global, engine, out_file]() {
    const Catalog c = global.loadCatalog();
    std::string text = "# Attention backend support matrices\n\n";
    for (const auto& e : c.engines()) {
      if (engine->empty() || e.policy.engine == *engine) text += renderSupportTables(e);
    }
    if (!engine->empty()) (void)c.engine(*engine);
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
