// attnsim: which attention backend does each serving engine pick, and why.
#include "cli/Commands.hpp"

int main(int argc, char** argv) { return attnsim::cli::runProgram(argc, argv); }
