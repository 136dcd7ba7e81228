#pragma once
// Who the what-if report compares: named backends, each engine's own choice, one choice on each
// device, or one choice under each value of a scenario axis of the sweep (kv dtype, page size, TP,
// CUDA graphs, weight dtype, speculative decoding); and, when the sweep cannot answer the question asked, what it can
// compare instead. Also the report's aligned rows and, for an axis, its side-by-side table against the baseline.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/StudyReports.hpp"

namespace attnsim::whatif {

struct Subject {
  std::string label;
  std::string engine;      // "": any engine (an axis compared under each engine's own choice)
  std::string backend;     // "": the engine's own choice
  std::string hardware;    // "": any device
  std::string axis_value;  // --axis: the axis value this subject stands for ("" otherwise)
};

// The axes --axis takes, in the order they are listed.
const std::vector<std::string>& axes();
// The value of `axis` at a point: "default" for a kv dtype, page size or weight dtype left to the engine
// or the model, on/off for CUDA graphs; spec_decoding: "off" for a decode step, "ALGORITHM draft=N topk=K"
// for a verify step, "" for the other phases (not on that axis).
std::string axisValue(const StudyPoint& p, const std::string& axis);
// The workload a point is aligned by across the axis's values: its own, or for spec_decoding its batch
// and context (a decode and a verify step of the same requests side by side).
std::string alignedWorkload(const StudyPoint& p, const std::string& axis);
// The axis the options compare along: --axis, or engine / hardware for --compare-engines /
// --compare-hardware ("" for --compare's backends).
std::string comparedAxis(const WhatIfOptions& o);
// The subjects the options ask for, the baseline first under --axis. A UsageError (exit 2) when they
// name nothing the sweep can compare, listing what varies in it instead.
std::vector<Subject> subjectsOf(const StudyData& data, const WhatIfOptions& o);
// A point's panel for an --axis comparison: device, model, engine and the serving options less the axis.
std::string axisPanel(const StudyPoint& p, const std::string& axis);
// Whether the subjects differ in the attention call alone (backends, kv dtype, page size: compared by
// the attention's band) or in the whole step (devices, TP, CUDA graphs, weights, a verify step for a
// decode step: the step's band).
bool attentionOnly(const std::string& axis);

// One subject at one point.
struct Entry {
  bool present = false, valid = false;
  std::string backend, reason, bound, graph_mode;
  double attention_us = 0, step_us = 0, eager_us = 0, graph_us = 0;
  double band = 0;      // relative band of step_us
  double tie_band = 0;  // the band two entries are compared with
  std::string provenance;
  bool undeployable = false;  // the engine accepts the point, its deployment does not hold the batch
  // Output tokens a step emits per request: 1, or for a verify step under --axis spec_decoding the
  // acceptance assumed (acceptLength). Subjects are compared by the time per output token.
  double tokens = 1;
  [[nodiscard]] double perToken() const { return step_us / tokens; }
};

// The acceptance assumed where none is given: each draft position accepted with this probability, as the
// EAGLE-3 head of Llama-3.1-8B measures on MT-bench at temperature 1 (mean acceptance length 2.77 at 7
// drafts, the nebius/EAGLE3-Llama-3.3-70B-Instruct model card's table of public checkpoints: 2.77 ≈
// sum of 0.65^i for i = 0..7).
constexpr double kDefaultAcceptRate = 0.65;
// The mean tokens a verify point emits per request: --spec-accept-length (at most its verified tokens),
// else sum of kDefaultAcceptRate^i over its verified tokens (a chain's expectation, i.i.d. positions).
double acceptLength(const StudyPoint& p, const WhatIfOptions& o);
// The sentence the report says it with.
std::string acceptanceNote(const WhatIfOptions& o);

// One point (panel and workload) with each subject's entry.
struct Aligned {
  std::string panel, workload;
  std::int64_t batch = 0, context = 0;
  bool decode = false;
  std::vector<Entry> entries;  // one per subject
};

// The ratio of subject `s`'s time per output token (the step time but under spec_decoding) to the
// baseline's (subject 0) at a point, and whether their bands overlap; nullopt for the baseline itself or
// where either is not valid.
std::optional<std::pair<double, bool>> ratioToBaseline(const Aligned& a, std::size_t s);
// The --axis section: every point's step time under each value with its band, ratio and "within band".
void axisSection(HtmlDocument& doc, const std::vector<Aligned>& rows, const std::vector<Subject>& subjects,
                 const WhatIfOptions& o);

}  // namespace attnsim::whatif
