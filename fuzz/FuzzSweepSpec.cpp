// libFuzzer target: a sweep spec (sweeps/*.yaml, docs/SWEEPS.md) read against the embedded
// catalog, ranges expanded and drop expressions parsed. Any input must give a spec or an
// InputError; a crash, a sanitizer report, a hang or another exception escaping is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "study/SweepSpec.hpp"

// libFuzzer calls this entry point by its fixed name.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {  // NOLINT(readability-identifier-naming)
  static const attnsim::Catalog catalog = attnsim::Catalog::load(attnsim::CatalogSource::embedded());
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)attnsim::parseSweepSpec(text, "fuzz.yaml", catalog);
  } catch (const attnsim::InputError&) {
    // the expected answer to a malformed spec
  }
  return 0;
}
