// libFuzzer target: the attnsim command line, one argument per input line. Exit code 3 (an
// exception attnsim did not expect) is a bug like a crash. Commands that write files, read other
// files or run for long (check, docs, measurements, calibrate, report, --catalog, --db, --out)
// are left out: the fuzzer must not write into the working folder, and a slow input is no finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cli/Commands.hpp"

namespace {

bool allowed(const std::string& arg) {
  for (const char* banned : {"check", "docs", "measurements", "calibrate", "report", "--catalog", "--db", "--out"}) {
    if (arg.rfind(banned, 0) == 0) return false;
  }
  return true;
}

}  // namespace

// libFuzzer calls this entry point by its fixed name.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {  // NOLINT(readability-identifier-naming)
  constexpr std::size_t kMaxArgs = 48;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> args{"attnsim"};
  for (std::string line; std::getline(in, line) && args.size() <= kMaxArgs;) {
    if (!allowed(line)) return 0;
    args.push_back(line);
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (attnsim::cli::runProgram(static_cast<int>(args.size()), argv.data()) == 3) __builtin_trap();
  return 0;
}
