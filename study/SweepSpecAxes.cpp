// The value syntax of sweep specs: integer ranges, workloads, filter variables, stable hashes.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/Error.hpp"
#include "core/Strings.hpp"
#include "study/SweepSpec.hpp"

namespace attnsim {

std::uint64_t stableHash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

namespace {

std::optional<std::int64_t> parseInt(std::string_view text) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::int64_t> parseIntRange(std::string_view text, std::int64_t min, std::int64_t max) {
  const auto bad = [&](const std::string& why) {
    return InputError(
        fmt::format("'{}': {}; expected an integer, A..BxF (geometric: A, A·F, ... up to B) or "
                    "A..B+S (arithmetic), each in [{}, {}]",
                    text, why, min, max));
  };
  std::vector<std::int64_t> out;
  const auto dots = text.find("..");
  if (dots == std::string_view::npos) {
    const auto v = parseInt(text);
    if (!v) throw bad("not an integer");
    out.push_back(*v);
  } else {
    const std::string_view rest = text.substr(dots + 2);
    const auto op = rest.find_first_of("x+");
    if (op == std::string_view::npos) throw bad("no step (xF or +S)");
    const auto a = parseInt(text.substr(0, dots));
    const auto b = parseInt(rest.substr(0, op));
    const auto step = parseInt(rest.substr(op + 1));
    if (!a || !b || !step) throw bad("not a range");
    const std::int64_t first = *a, last = *b, by = *step;
    const bool geometric = rest[op] == 'x';
    if (first > last || (geometric ? by < 2 || first < 1 : by < 1)) throw bad("empty or endless range");
    // Each value is checked as it is made, so a range past `max` or the int64 range (found by
    // fuzz_sweep_spec: 1..9223372036854775807x2 wrapped around and never ended) stops at once.
    constexpr std::size_t kMaxValues = std::size_t{1} << 16;
    for (std::int64_t v = first;;) {
      if (v < min || v > max) throw bad(fmt::format("{} is out of range", v));
      if (out.size() == kMaxValues) throw bad(fmt::format("more than {} values", kMaxValues));
      out.push_back(v);
      const bool overflow = geometric ? __builtin_mul_overflow(v, by, &v) : __builtin_add_overflow(v, by, &v);
      if (overflow || v > last) break;
    }
  }
  for (const auto v : out) {
    if (v < min || v > max) throw bad(fmt::format("{} is out of range", v));
  }
  return out;
}

std::vector<std::int64_t> parseIntList(std::string_view text, std::int64_t min, std::int64_t max) {
  std::vector<std::int64_t> out;
  for (const auto& item : splitList(std::string(text))) {
    for (const auto v : parseIntRange(item, min, max)) out.push_back(v);
  }
  if (out.empty()) throw InputError(fmt::format("'{}': expected at least one integer", text));
  return out;
}

std::string checkSweepFilterVariable(std::string_view name) {
  static const std::vector<std::string> known = {"hardware", "model",       "engine", "kv_dtype",    "page_size",
                                                 "tp",       "cuda_graphs", "phase",  "batch",       "q_len",
                                                 "context",  "tokens",      "mixed",  "weight_dtype"};
  for (const auto& k : known) {
    if (k == name) return "";
  }
  return fmt::format("unknown variable '{}' (known: {}){}", name, join(known, ", "), didYouMean(name, known));
}

Env sweepFilterEnv(const Scenario& s, const SweepWorkload& w) {
  std::int64_t q_len = 0, context = 0;
  for (const auto& g : w.workload.groups) {
    q_len = std::max(q_len, g.q_len);
    context = std::max(context, g.context);
  }
  Env env;
  env["hardware"] = s.hardware;
  env["model"] = s.model;
  env["engine"] = s.engine;
  env["kv_dtype"] = s.kv_dtype ? Value{*s.kv_dtype} : Value{};
  env["page_size"] = s.page_size ? Value{*s.page_size} : Value{};
  env["weight_dtype"] = s.weight_dtype ? Value{*s.weight_dtype} : Value{};
  env["tp"] = s.tp;
  env["cuda_graphs"] = s.cuda_graphs;
  env["phase"] = std::string(phaseName(w.workload.phase));
  env["batch"] = w.workload.requests();
  env["q_len"] = q_len;
  env["context"] = context;
  env["tokens"] = w.workload.tokens();
  env["mixed"] = !w.workload.isUniform();
  return env;
}

}  // namespace attnsim
