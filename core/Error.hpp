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

// An input file is malformed at a known place: the message starts with file:line:column and the
// key (a YAML key path, a CSV column name) when there is one. A message that already names its
// places (a list of bad rows) is kept as written: Prefix::no.
class LocatedInputError : public InputError {
 public:
  enum class Prefix { yes, no };
  LocatedInputError(SourceLocation where, std::string key, const std::string& message, Prefix prefix = Prefix::yes);
  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] const std::string& key() const { return key_; }

 private:
  SourceLocation where_;
  std::string key_;
};

// A catalog (YAML) file is malformed: names the file, line, column and key path.
class CatalogError : public LocatedInputError {
 public:
  using LocatedInputError::LocatedInputError;
  [[nodiscard]] const std::string& keyPath() const { return key(); }
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
