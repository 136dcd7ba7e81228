// The embedded catalog, loaded once per process: every YAML file parsed strictly and
// cross-checked takes ~90 ms, which each command (and each input of the command-line fuzzer)
// would otherwise pay again for the same bytes.
#include "catalog/Catalog.hpp"

namespace attnsim {

std::shared_ptr<const Catalog> Catalog::embedded() {
  // A function-local static is initialised once, thread-safely; a load that throws (a broken
  // embedded file, caught by the tests) leaves it unset, so the next call throws the same error.
  static const std::shared_ptr<const Catalog> shared = std::make_shared<const Catalog>(loadDefault());
  return shared;
}

}  // namespace attnsim
