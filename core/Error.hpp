#pragma once
// Typed errors. Only main() turns them into exit codes:
//   InputError (and CatalogError, UsageError) -> 2: the input is wrong;
//   EngineRefusal -> 1: the question has a negative answer (the engine refuses the configuration).
#include <stdexcept>
#include <string>

namespace attnsim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where in a catalog file something was found; line and column are 1-based.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
  [[nodiscard]] std::string str() const;
};

// A catalog file is malformed: names the file, line, column and key path.
class CatalogError : public InputError {
 public:
  CatalogError(SourceLocation where, std::string key_path, const std::string& message);
  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] const std::string& keyPath() const { return key_path_; }

 private:
  SourceLocation where_;
  std::string key_path_;
};

// A command-line flag or id is wrong.
class UsageError : public InputError {
 public:
  using InputError::InputError;
};

// The engine would refuse this configuration; the message is the engine's own.
class EngineRefusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace attnsim
