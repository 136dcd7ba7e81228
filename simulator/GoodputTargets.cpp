#include "simulator/GoodputTargets.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "core/Error.hpp"

namespace attnsim {

ServeSlo goodputSlo(const std::vector<std::string>& targets, const std::string& flag) {
  const double none = std::numeric_limits<double>::infinity();
  ServeSlo slo{none, none, none};
  for (const auto& item : targets) {
    const auto colon = item.find(':');
    const std::string key = item.substr(0, colon);
    double ms = -1;
    if (colon != std::string::npos) {
      const char* first = item.data() + colon + 1;
      const char* last = item.data() + item.size();
      const auto [end, error] = std::from_chars(first, last, ms);
      if (error != std::errc() || end != last || first == last) ms = -1;
    }
    double* target = key == "ttft" ? &slo.ttft_s : key == "tpot" ? &slo.tpot_s : key == "e2el" ? &slo.e2e_s : nullptr;
    if (!target || !std::isfinite(ms) || ms < 0) {
      throw UsageError(fmt::format("{} {}: expected KEY:MS with KEY ttft, tpot or e2el and MS >= 0", flag, item));
    }
    *target = ms / 1e3;
  }
  return slo;
}

}  // namespace attnsim
