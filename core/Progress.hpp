#pragma once
// Progress of long work (check --all, calibration, sweeps) on a terminal: done/total, rate and
// time left, redrawn in place at most ten times a second. Writes nothing when the stream is not a
// terminal, so piped and redirected output stays exactly the answer.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace attnsim {

class Progress {
 public:
  Progress(std::string label, std::string unit, std::FILE* stream = stderr);
  // `done` of `total` units are finished; the last call (done == total) ends the line.
  void update(std::size_t done, std::size_t total);
  [[nodiscard]] bool enabled() const { return enabled_; }
  // The line update() draws, without the carriage return (for tests).
  [[nodiscard]] std::string line(std::size_t done, std::size_t total, double elapsed_s) const;

 private:
  std::string label_, unit_;
  std::FILE* stream_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace attnsim
