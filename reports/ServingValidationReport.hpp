#pragma once
// The serving validation report (issue 28): serve-sim beside published serving benchmarks, per
// metric and run, with each run's command, what its setup approximates and what is not modelled.
#include <nlohmann/json.hpp>
#include <string>

#include "study/ServingValidation.hpp"

namespace attnsim {

// serving-validation.md: the summaries (all, per engine, per backend), then every run.
std::string servingValidationMarkdown(const ServingValidation& v, const std::string& command);
// serving-validation.csv: one row per run and metric (id, metric, published, predicted, error).
std::string servingValidationCsv(const ServingValidation& v);
nlohmann::json servingValidationJson(const ServingValidation& v, const std::string& command);

}  // namespace attnsim
