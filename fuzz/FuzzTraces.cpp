// libFuzzer target: a serving trace as serve-sim --trace reads it. An input starting with '{' is
// read as Mooncake JSONL (the format follows the .jsonl extension), any other as CSV (Azure or
// plain, by header). Any input must give requests or an InputError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/Error.hpp"
#include "simulator/Traces.hpp"

// libFuzzer calls this entry point by its fixed name.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {  // NOLINT(readability-identifier-naming)
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)attnsim::parseTrace(text, !text.empty() && text[0] == '{' ? "fuzz.jsonl" : "fuzz.csv");
  } catch (const attnsim::InputError&) {
    // the expected answer to a malformed trace
  }
  return 0;
}
