// attnsim: which attention backend does each serving engine pick, and why.
#include <csignal>

#include "cli/Commands.hpp"

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, which the store reports as a full
  // disk (exit 2, the store left as it was), instead of SIGXFSZ killing attnsim mid-transaction.
  std::signal(SIGXFSZ, SIG_IGN);
  return attnsim::cli::runProgram(argc, argv);
}
