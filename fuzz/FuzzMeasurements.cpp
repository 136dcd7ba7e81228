// libFuzzer target: the measurement harness's CSV as the importer reads it (against the embedded
// catalog). Any input must give rows or an InputError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "study/Measurements.hpp"

// libFuzzer calls this entry point by its fixed name.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {  // NOLINT(readability-identifier-naming)
  static const attnsim::Catalog catalog = attnsim::Catalog::load(attnsim::CatalogSource::embedded());
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)attnsim::parseMeasurementCsv(text, "fuzz.csv", catalog);
  } catch (const attnsim::InputError&) {
    // the expected answer to a malformed file
  }
  return 0;
}
