#pragma once
// The validation report: a study's held-out figures (study/Validation) and its forward-step
// comparison (study/StepValidation) as Markdown, and the held-out points as an SVG scatter plot.
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "study/PublishedKernels.hpp"
#include "study/StepValidation.hpp"
#include "study/Validation.hpp"

namespace attnsim {

// validation.md; it links the scatter plot as scatter.svg.
std::string validationMarkdown(const Validation& validation, const StepValidation& steps);
std::string validationScatterSvg(const Validation& validation);
// Every held-out point: hardware, kernel, implementation, phase, shape, measured, before and after (µs).
std::string validationPointsCsv(const Validation& validation);
// Every held-out problem whose fastest measured implementation is not the fastest predicted: its
// verdict (measured tie, stated tie, miss), both implementations' measured and predicted µs and bands.
std::string validationRankingCsv(const Validation& validation);
// Published kernel figures of GPUs without measurements beside the catalog's prediction of each call
// (report validation --published FILE): per GPU and family the MAPE and the signed mean, then every point.
std::string publishedKernelsMarkdown(std::span<const PublishedKernelCheck> checks);
// The same points for --json: id, gpu, kernel, phase, published and predicted µs, error, provenance, source.
nlohmann::json publishedKernelsJson(std::span<const PublishedKernelCheck> checks);
// report validation --json: the worst held-out MAPE, the ranking agreement and where the report is.
nlohmann::json validationSummaryJson(const Validation& validation, const std::string& report_path);

}  // namespace attnsim
