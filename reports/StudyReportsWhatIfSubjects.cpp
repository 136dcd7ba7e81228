// What the what-if report compares (reports/StudyReportsWhatIfSubjects.hpp).
#include "reports/StudyReportsWhatIfSubjects.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim::whatif {

using namespace study_report;

namespace {

// The values of `axis` over the sweep's points, in reading order: "default" first, numbers ascending,
// CUDA graphs on before off.
std::vector<std::string> axisValues(const StudyData& data, const std::string& axis) {
  std::set<std::string> seen;
  for (const auto& p : data.points) {
    if (auto v = axisValue(p, axis); !v.empty()) seen.insert(std::move(v));  // "": the point is not on the axis
  }
  std::vector<std::string> out(seen.begin(), seen.end());
  auto key = [&axis](const std::string& v) {
    const bool number = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    const bool first = v == "default" || v == "auto" || (axis == "cuda_graphs" && v == "on") ||
                       (axis == "spec_decoding" && v == "off");
    const int rank = first ? 0 : number ? 1 : 2;
    return std::tuple(rank, number ? std::stoll(v) : 0, v);
  };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return out;
}

// What else the sweep can compare: each axis with more than one value, and the backends.
std::string alternatives(const StudyData& data) {
  std::vector<std::string> out;
  for (const auto& axis : axes()) {
    const auto values = axisValues(data, axis);
    if (values.size() > 1) out.push_back(fmt::format("--axis {} ({})", axis, join(values, ", ")));
  }
  std::set<std::string> backends;
  for (const auto& c : data.candidates) {
    if (c.predicted) backends.insert(c.engine + ":" + c.backend);  // predicted at a point at least
  }
  if (backends.size() > 1) {
    out.push_back(
        fmt::format("--compare with two or more of its backends ({})", join({backends.begin(), backends.end()}, ", ")));
  }
  return out.empty() ? "nothing: every point of it has one value of each axis and one backend"
                     : "compare instead " + join(out, "; ");
}

std::vector<Subject> backendSubjects(const StudyData& data, const std::vector<std::string>& compare) {
  std::set<std::string> known;
  for (const auto& c : data.candidates) known.insert(c.engine + ":" + c.backend);
  std::vector<Subject> out;
  for (const auto& item : compare) {
    if (!known.count(item)) {
      throw UsageError(fmt::format("--compare: '{}' is not a backend of this sweep{} (engine:NAME; the sweep has {})",
                                   item, didYouMean(item, {known.begin(), known.end()}),
                                   join({known.begin(), known.end()}, ", ")));
    }
    const auto colon = item.find(':');
    out.push_back({item, item.substr(0, colon), item.substr(colon + 1), "", ""});
  }
  return out;
}

// One engine's choice (or --compare's single backend) under each value of `axis`, the baseline first.
std::vector<Subject> axisSubjects(const StudyData& data, const WhatIfOptions& o, const std::string& axis) {
  const auto named = backendSubjects(data, o.compare);
  if (named.size() > 1) throw UsageError("--axis follows one backend at most: give --compare one engine:NAME");
  const std::string engine = named.empty() ? o.engine : named[0].engine;
  const std::string suffix = named.empty() ? "" : " · " + named[0].label;
  auto values = axisValues(data, axis);
  const std::string baseline = o.baseline.empty() ? values.front() : o.baseline;
  const auto at = std::find(values.begin(), values.end(), baseline);
  if (at == values.end()) {
    throw UsageError(
        fmt::format("--baseline {}: not a value of {} in this sweep (it has {})", baseline, axis, join(values, ", ")));
  }
  std::rotate(values.begin(), at, at + 1);  // the baseline first, the others in order
  std::vector<Subject> out;
  out.reserve(values.size());
  for (const auto& v : values) {
    out.push_back({fmt::format("{}={}{}", axis, v, suffix), engine, named.empty() ? "" : named[0].backend, "", v});
  }
  return out;
}

}  // namespace

const std::vector<std::string>& axes() {
  static const std::vector<std::string> kAxes = {"engine", "hardware",    "kv_dtype",     "page_size",
                                                 "tp",     "cuda_graphs", "weight_dtype", "spec_decoding"};
  return kAxes;
}

namespace {
// A verify workload's speculative decoding: "eagle draft=3 topk=1" from "verify b=.. c=.. draft=3 topk=1 eagle".
std::string specDecodingOf(const StudyPoint& p) {
  if (p.phase == "decode") return "off";
  if (p.phase != "verify") return "";
  const auto draft = p.workload.find("draft=");
  if (draft == std::string::npos) return "on";
  const std::string tail = p.workload.substr(draft);  // "draft=N topk=K ALGORITHM"
  const auto algorithm = tail.rfind(' ');
  return algorithm == std::string::npos ? tail : tail.substr(algorithm + 1) + " " + tail.substr(0, algorithm);
}
}  // namespace

std::string axisValue(const StudyPoint& p, const std::string& axis) {
  if (axis == "engine") return p.engine;
  if (axis == "hardware") return p.hardware;
  if (axis == "kv_dtype") return p.kv_dtype.value_or("default");
  if (axis == "page_size") return p.page_size ? std::to_string(*p.page_size) : "default";
  if (axis == "tp") return std::to_string(p.tp);
  if (axis == "weight_dtype") return p.weight_dtype.value_or("default");
  if (axis == "spec_decoding") return specDecodingOf(p);
  return p.cuda_graphs ? "on" : "off";
}

std::string alignedWorkload(const StudyPoint& p, const std::string& axis) {
  // A decode step and the verify step of the same batch and context stand side by side.
  if (axis == "spec_decoding") return fmt::format("b={} c={}", p.batch, p.context);
  return p.workload;
}

std::string comparedAxis(const WhatIfOptions& o) {
  if (!o.axis.empty()) return o.axis;
  return o.engines ? "engine" : o.hardware ? "hardware" : "";
}

bool attentionOnly(const std::string& axis) {
  return axis != "hardware" && axis != "tp" && axis != "cuda_graphs" && axis != "weight_dtype" &&
         axis != "spec_decoding";
}

std::string axisPanel(const StudyPoint& p, const std::string& axis) {
  std::string out = fmt::format("{} · {} · {}", p.hardware, p.model, p.engine);
  if (axis != "tp") out += fmt::format(" · tp={}", p.tp);
  if (axis != "kv_dtype" && p.kv_dtype) out += " · kv=" + *p.kv_dtype;
  if (axis != "page_size" && p.page_size) out += fmt::format(" · page={}", *p.page_size);
  if (axis != "cuda_graphs" && !p.cuda_graphs) out += " · eager";
  if (axis != "weight_dtype" && p.weight_dtype) out += " · weights=" + *p.weight_dtype;
  return out;
}

std::vector<Subject> subjectsOf(const StudyData& data, const WhatIfOptions& o) {
  if (!o.axis.empty() && std::find(axes().begin(), axes().end(), o.axis) == axes().end()) {
    throw UsageError(fmt::format("--axis {}: not an axis a what-if compares along{} (one of {})", o.axis,
                                 didYouMean(o.axis, axes()), join(axes(), ", ")));
  }
  const int asked = static_cast<int>(!o.compare.empty()) + static_cast<int>(o.engines) + static_cast<int>(o.hardware);
  if (asked + static_cast<int>(!o.axis.empty()) == 0) {
    throw UsageError(
        "report whatif: say what to compare: --compare engine:A,engine:B, --compare-engines, --compare-hardware or "
        "--axis AXIS (" +
        join(axes(), ", ") + ")");
  }
  if (static_cast<int>(o.engines) + static_cast<int>(o.hardware) + static_cast<int>(!o.axis.empty()) > 1) {
    throw UsageError("report whatif: one of --compare-engines, --compare-hardware and --axis");
  }
  const std::string axis = comparedAxis(o);
  if (!axis.empty() && axisValues(data, axis).size() < 2) {
    const std::string flag = o.engines ? "--compare-engines" : o.hardware ? "--compare-hardware" : "--axis " + axis;
    throw UsageError(fmt::format("report whatif {}: sweep '{}' has one {} ({}); {}", flag, data.sweep.name, axis,
                                 axisValues(data, axis).front(), alternatives(data)));
  }
  std::vector<Subject> out;
  if (axis == "engine") {
    for (const auto& e : axisValues(data, axis)) out.push_back({e + " (its own choice)", e, "", "", ""});
  } else if (axis == "hardware") {
    auto named = backendSubjects(data, o.compare);
    if (named.size() > 1) throw UsageError("--compare-hardware follows one backend: give --compare one engine:NAME");
    const auto engines = axisValues(data, "engine");
    const std::string engine = !named.empty() ? named[0].engine : o.engine;
    if (engine.empty() && engines.size() != 1) {
      throw UsageError("--compare-hardware: name the engine with --engine (the sweep has " + join(engines, ", ") + ")");
    }
    const std::string e = engine.empty() ? engines.front() : engine;
    const std::string backend = named.empty() ? "" : named[0].backend;
    for (const auto& h : axisValues(data, axis)) {
      out.push_back({fmt::format("{}: {}{}{}", h, e, backend.empty() ? "" : ":", backend), e, backend, h, ""});
    }
  } else if (!axis.empty()) {
    out = axisSubjects(data, o, axis);
  } else {
    out = backendSubjects(data, o.compare);
  }
  if (out.size() < 2) {
    throw UsageError(fmt::format("report whatif: fewer than two things to compare; {}", alternatives(data)));
  }
  return out;
}

// --axis: each point's step time under every value of the axis with its band, and its ratio to the
// baseline's (the first subject), "within band" where the two bands overlap.
namespace {
constexpr std::size_t kAxisTableRows = 400;  // the rest in the JSON: a page stays readable
}  // namespace

std::optional<std::pair<double, bool>> ratioToBaseline(const Aligned& a, std::size_t s) {
  const Entry &base = a.entries.front(), &e = a.entries[s];
  if (s == 0 || !base.valid || !e.valid) return std::nullopt;
  const bool faster = e.perToken() < base.perToken();
  const Entry &fast = faster ? e : base, &slow = faster ? base : e;
  return std::pair{e.perToken() / base.perToken(),
                   withinBands(fast.perToken(), fast.tie_band, slow.perToken(), slow.tie_band)};
}

double acceptLength(const StudyPoint& p, const WhatIfOptions& o) {
  const auto draft = p.workload.find("draft=");
  const std::int64_t verified = draft == std::string::npos ? 1 : std::stoll(p.workload.substr(draft + 6));
  if (o.spec_accept_length) return std::min(*o.spec_accept_length, static_cast<double>(verified));
  double tokens = 0, share = 1;
  for (std::int64_t i = 0; i < verified; ++i, share *= kDefaultAcceptRate) tokens += share;
  return tokens;
}

std::string acceptanceNote(const WhatIfOptions& o) {
  if (o.spec_accept_length) {
    return fmt::format(
        "a verify step emits {:.2f} tokens per request (--spec-accept-length; at most its verified "
        "tokens)",
        *o.spec_accept_length);
  }
  return fmt::format(
      "a verify step of N tokens emits 1 + a + ... + a^(N-1) tokens per request with a = {:.2f} per draft position, "
      "as EAGLE-3 on Llama-3.1-8B accepts on MT-bench at temperature 1 (2.77 tokens at 7 drafts: the "
      "huggingface.co/nebius/EAGLE3-Llama-3.3-70B-Instruct model card's table of public checkpoints); give "
      "--spec-accept-length for yours",
      kDefaultAcceptRate);
}

namespace {
ReportTable axisTable(const std::vector<Aligned>& rows, const std::vector<Subject>& subjects, bool per_token) {
  ReportTable t{{"where", "workload"}, {}};
  for (const auto& s : subjects) t.header.push_back(s.label + (per_token ? " µs per output token" : " step µs"));
  for (std::size_t s = 1; s < subjects.size(); ++s) t.header.push_back(subjects[s].label + " / " + subjects[0].label);
  for (const auto& a : rows) {
    if (t.rows.size() == kAxisTableRows) break;
    std::vector<std::string> row{a.panel, a.workload};
    for (const auto& e : a.entries) {
      row.push_back(!e.present                 ? "-"
                    : e.valid && e.tokens != 1 ? fmt::format("{} ±{} ({} / {:.2f})", micros(e.perToken()),
                                                             percent(e.band), micros(e.step_us), e.tokens)
                    : e.valid                  ? fmt::format("{} ±{}", micros(e.step_us), percent(e.band))
                    : e.undeployable           ? "not deployable"
                                               : "refused");
    }
    for (std::size_t s = 1; s < subjects.size(); ++s) {
      const auto r = ratioToBaseline(a, s);
      row.push_back(!r ? "-" : fmt::format("{:.2f}x{}", r->first, r->second ? " (within band)" : ""));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}
}  // namespace

void axisSection(HtmlDocument& doc, const std::vector<Aligned>& rows, const std::vector<Subject>& subjects,
                 const WhatIfOptions& o) {
  const std::string& axis = o.axis;
  doc.heading(fmt::format("Every point under each {}", axis));
  doc.paragraph(fmt::format(
      "Each point's predicted step time under each value of {} with its uncertainty band, and its ratio to the "
      "baseline {} ('within band': the two bands overlap, so the model cannot tell them apart; {}).{}",
      axis, subjects.front().label,
      attentionOnly(axis) ? "the attention calls' bands, the rest of the step being the same"
                          : "the whole steps' bands, the whole step differing",
      rows.size() > kAxisTableRows
          ? fmt::format(" The first {} of {} points; every one is in whatif.json.", kAxisTableRows, rows.size())
          : ""));
  const bool per_token = axis == "spec_decoding";
  if (per_token) {
    doc.paragraph(fmt::format(
        "Compared per output token: a decode step emits 1 token per request, a verify step of N tokens from 1 to "
        "N; here {}. Each cell is the step time over those tokens (step µs / tokens), so a ratio below 1 is what "
        "speculative decoding buys at that acceptance (the summary and the map above count the fastest per output "
        "token too). The drafter's own forwards are not in these sweep points "
        "(attnsim serve-sim --speculative-* prices them, with the scheduler).",
        acceptanceNote(o)));
  }
  doc.table(axisTable(rows, subjects, per_token));
}

}  // namespace attnsim::whatif
