#pragma once
// The forward-step section of the validation report: study/StepValidation's comparison of the
// step model with the harness's synthetic decoder steps, as Markdown.
#include <string>

#include "study/StepValidation.hpp"

namespace attnsim {

// Empty when there were no step rows.
std::string stepValidationMarkdown(const StepValidation& steps);

}  // namespace attnsim
