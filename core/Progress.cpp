#include "core/Progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

namespace attnsim {

Progress::Progress(std::string label, std::string unit, std::FILE* stream)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      stream_(stream),
      enabled_(stream != nullptr && isatty(fileno(stream)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string Progress::line(std::size_t done, std::size_t total, double elapsed_s) const {
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  std::string eta = "--";
  if (rate > 0 && done < total) {
    const auto left = static_cast<long>(std::lround(static_cast<double>(total - done) / rate));
    eta = left >= 60 ? fmt::format("{}m{:02}s", left / 60, left % 60) : fmt::format("{}s", left);
  }
  const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  return fmt::format("{}: {}/{} {} ({:.0f}%), {:.1f}/s, ETA {}", label_, done, total, unit_, pct, rate, eta);
}

void Progress::update(std::size_t done, std::size_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = done >= total;
  if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // \33[K clears what a longer previous line left on the right.
  fmt::print(stream_, "\r{}\33[K{}", line(done, total, elapsed), last ? "\n" : "");
  std::fflush(stream_);
}

}  // namespace attnsim
