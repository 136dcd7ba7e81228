// libFuzzer target: one catalog YAML file (a hardware profile, a backend descriptor or a model,
// chosen at build time by ATTNSIM_FUZZ_KIND) read by the loader attnsim uses. Any input must give
// either a value or an InputError; anything else (a crash, a sanitizer report, another exception
// escaping) is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/Backend.hpp"
#include "backends/RuleVariables.hpp"
#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "core/YamlReader.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace {

void parseOne(const attnsim::YamlReader& r) {
  using namespace attnsim;
  const std::string kind = ATTNSIM_FUZZ_KIND;
  if (kind == "hardware") {
    (void)parseHardwareProfile(r);
  } else if (kind == "model") {
    (void)parseModelSpec(r);
  } else {
    const Expr::VariableCheck check = [](std::string_view name) -> std::string {
      const auto& known = scenarioVariables();
      if (std::find(known.begin(), known.end(), name) != known.end()) return {};
      return "unknown variable '" + std::string(name) + "'" + didYouMean(name, known);
    };
    (void)parseBackend(r, "vllm", check);
  }
}

}  // namespace

// libFuzzer calls this entry point by its fixed name.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {  // NOLINT(readability-identifier-naming)
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    parseOne(attnsim::YamlReader::parseDocument(text, "fuzz.yaml"));
  } catch (const attnsim::InputError&) {
    // the expected answer to a malformed file
  }
  return 0;
}
