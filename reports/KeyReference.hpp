#pragma once
// docs/KEYS.md: every key of every catalog file kind and every measurement CSV column, rendered from
// the key schemas the loaders' key check reads (core/KeySchema.hpp); `attnsim docs --keys`.
#include <string>

namespace attnsim {

std::string renderKeyReference();
// The same schemas as JSON (`attnsim --json docs --keys`): [{kind, title, files, intro, keys: [...]}].
std::string keyReferenceJson();

}  // namespace attnsim
