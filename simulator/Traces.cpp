#include "simulator/Traces.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

namespace {

enum class Format { Azure, Plain, Jsonl };

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(s);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// Tokens per request beyond this are a unit or column mix-up (the same bound as --prompt-len).
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;

[[noreturn]] void bad(const std::string& name, std::size_t line, const std::string& what) {
  throw LocatedInputError({name, static_cast<int>(std::max<std::size_t>(line, 1)), 1}, "", what);
}

std::int64_t tokensOf(const std::string& cell, const std::string& name, std::size_t line, const char* column) {
  std::int64_t v = 0;
  const std::string t = trim(cell);
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < 0 || v > kMaxTokens) {
    bad(name, line, fmt::format("{} must be a whole number of tokens in [0, {}], not '{}'", column, kMaxTokens, t));
  }
  return v;
}

// "2023-11-16 18:15:46.6805900" -> seconds since the epoch (UTC), or plain seconds.
double azureTime(const std::string& cell, const std::string& name, std::size_t line) {
  const std::string t = trim(cell);
  std::tm tm{};
  std::istringstream in(t);
  in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S");
  if (in.fail()) bad(name, line, fmt::format("TIMESTAMP '{}' is not YYYY-MM-DD HH:MM:SS[.fraction]", t));
  // Only digits may follow: stod took "5e-99999" (out_of_range, exit 3) and "5abc" (silently).
  double fraction = 0;
  const std::string rest = in.eof() ? "" : t.substr(static_cast<std::size_t>(in.tellg()));
  if (!rest.empty()) {
    const bool digits = rest.size() > 1 && rest[0] == '.' &&
                        std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) bad(name, line, fmt::format("TIMESTAMP '{}' is not YYYY-MM-DD HH:MM:SS[.fraction]", t));
    const std::string decimal = "0" + rest;
    std::from_chars(decimal.data(), decimal.data() + decimal.size(), fraction);
  }
  return static_cast<double>(timegm(&tm)) + fraction;
}

double seconds(const std::string& cell, const std::string& name, std::size_t line) {
  const std::string t = trim(cell);
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) {
    bad(name, line, fmt::format("arrival '{}' is not a number of seconds", t));
  }
  return v;
}

ServeRequest csvRow(const std::string& row, Format f, const std::string& name, std::size_t line) {
  const std::vector<std::string> cells = split(row, ',');
  if (cells.size() != 3) bad(name, line, fmt::format("expected 3 columns, found {}", cells.size()));
  ServeRequest r;
  r.arrival_s = f == Format::Azure ? azureTime(cells[0], name, line) : seconds(cells[0], name, line);
  r.prompt_tokens = tokensOf(cells[1], name, line, f == Format::Azure ? "ContextTokens" : "prompt_tokens");
  r.output_tokens = tokensOf(cells[2], name, line, f == Format::Azure ? "GeneratedTokens" : "output_tokens");
  return r;
}

ServeRequest jsonRow(const std::string& row, const std::string& name, std::size_t line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(row);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    bad(name, line, std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("timestamp") || !j["timestamp"].is_number())
    bad(name, line, "needs a number 'timestamp'");
  // Lengths are whole token counts: 512.5 was truncated and 1e300 overflowed the conversion.
  auto length = [&](const char* key) -> std::int64_t {
    if (!j.contains(key) || !j[key].is_number()) bad(name, line, fmt::format("needs a number '{}'", key));
    const auto& v = j[key];
    const bool whole = v.is_number_integer() && (v.is_number_unsigned() || v.get<std::int64_t>() >= 0);
    if (!whole || v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxTokens)) {
      bad(name, line,
          fmt::format("'{}' must be a whole number of tokens in [0, {}], not {}", key, kMaxTokens, v.dump()));
    }
    return v.get<std::int64_t>();
  };
  ServeRequest r;
  r.arrival_s = j["timestamp"].get<double>() / 1000.0;  // Mooncake traces give milliseconds
  r.prompt_tokens = length("input_length");
  r.output_tokens = length("output_length");
  return r;
}

}  // namespace

std::vector<ServeRequest> parseTrace(const std::string& text, const std::string& name) {
  std::vector<ServeRequest> out;
  std::istringstream in(text);
  std::string row;
  std::size_t line = 0;
  std::optional<Format> format;
  if (const auto defect = findTextDefect(text)) {
    throw LocatedInputError({name, defect->line, defect->column}, "", defect->what + ": the file must be UTF-8 text");
  }
  if (name.size() >= 6 && name.substr(name.size() - 6) == ".jsonl") format = Format::Jsonl;
  if (text.starts_with("\xEF\xBB\xBF")) in.seekg(3);  // a UTF-8 byte-order mark (spreadsheets write one)
  while (std::getline(in, row)) {
    ++line;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    if (trim(row).empty() || row[0] == '#') continue;
    if (!format) {
      const std::string header = trim(row);
      if (header == "TIMESTAMP,ContextTokens,GeneratedTokens") {
        format = Format::Azure;
      } else if (header == "arrival_s,prompt_tokens,output_tokens") {
        format = Format::Plain;
      } else {
        bad(name, line,
            "unknown header '" + header +
                "'; expected TIMESTAMP,ContextTokens,GeneratedTokens (Azure), "
                "arrival_s,prompt_tokens,output_tokens, or a .jsonl file");
      }
      continue;
    }
    ServeRequest r = *format == Format::Jsonl ? jsonRow(row, name, line) : csvRow(row, *format, name, line);
    if (r.prompt_tokens < 1 || r.output_tokens < 1)
      bad(name, line, "a request needs at least one prompt and one output token");
    if (!out.empty() && r.arrival_s < out.back().arrival_s) bad(name, line, "arrivals must not go back in time");
    out.push_back(r);
  }
  if (out.empty()) bad(name, line, "the trace has no requests");
  const double t0 = out.front().arrival_s;
  for (auto& r : out) r.arrival_s -= t0;
  return out;
}

std::vector<ServeRequest> readTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read trace file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parseTrace(text.str(), path);
}

// vLLM: vllm/benchmarks/datasets.py RandomDataset.get_sampling_params @ 0056b87f (input: the special
// tokens the tokenizer adds are taken out and the server adds them back, so serve-sim counts none;
// output: at least 1). SGLang: python/sglang/bench_serving.py sample_random_requests @ 0033168f
// (input at least 1; an output may be drawn as 0, which serve-sim runs as 1).
LengthRange randomLengthRange(const std::string& bench, std::int64_t len, double r, bool output) {
  const auto l = static_cast<double>(len);
  if (bench == "sglang") {
    const auto low = static_cast<std::int64_t>(l * r);
    return {output ? low : std::max<std::int64_t>(low, 1), len};
  }
  const auto low = static_cast<std::int64_t>(std::floor(l * (1 - r)));
  const auto high = static_cast<std::int64_t>(std::ceil(l * (1 + r)));
  return {std::max<std::int64_t>(low, output ? 1 : 0), std::max<std::int64_t>(high, output ? 1 : 0)};
}

void checkArrivalSpec(const ArrivalSpec& s) {
  if (s.lengths == "sonnet") {
    // vLLM's sampler would never accept a prompt: its prefix lines alone pass input_len.
    if (s.sonnet_prefix_len > s.sonnet_input_len) {
      throw UsageError(fmt::format("--sonnet-prefix-len {}: at most --sonnet-input-len ({})", s.sonnet_prefix_len,
                                   s.sonnet_input_len));
    }
    return;
  }
  if (s.lengths == "generated-shared-prefix") {
    if (!(s.gsp_range_ratio >= 0 && s.gsp_range_ratio <= 1)) {
      throw UsageError(fmt::format("--gsp-range-ratio {}: sglang.bench_serving accepts [0, 1]", s.gsp_range_ratio));
    }
    return;
  }
  if (s.lengths != "random") return;
  if (s.bench != "vllm" && s.bench != "sglang") {
    throw UsageError(fmt::format("--backend-bench {}: expected vllm or sglang", s.bench));
  }
  const bool vllm = s.bench == "vllm";
  if (!(s.range_ratio >= 0 && (vllm ? s.range_ratio < 1 : s.range_ratio <= 1))) {
    throw UsageError(fmt::format("--random-range-ratio {}: {} accepts [0, 1{}", s.range_ratio,
                                 vllm ? "vllm bench serve" : "sglang.bench_serving", vllm ? ")" : "]"));
  }
  if (!vllm && s.prefix_len > 0) {
    throw UsageError(
        "--random-prefix-len: sglang.bench_serving's random dataset has no prefix (use --backend-bench vllm)");
  }
}

namespace {

// sglang.bench_serving's generated-shared-prefix rows (benchmark/datasets/generated_shared_prefix.py
// sample_generated_shared_prefix_requests @ 306191256925): a system prompt length per group, a
// question and an output length per request, each from compute_random_lens' [max(len x ratio, 1),
// len] (datasets/common.py @ 2a47406aa8f1); a prompt is its group's system prompt then its question
// (the "\n\n" between them is not counted); the rows are shuffled unless --gsp-ordered.
std::vector<ServeRequest> sharedPrefixRows(const ArrivalSpec& s, std::mt19937_64& rng) {
  auto draw = [&](std::int64_t len) {
    const std::int64_t low =
        std::max<std::int64_t>(static_cast<std::int64_t>(static_cast<double>(len) * s.gsp_range_ratio), 1);
    return std::uniform_int_distribution<std::int64_t>(std::min(low, len), len)(rng);
  };
  std::vector<ServeRequest> rows;
  rows.reserve(static_cast<std::size_t>(s.gsp_num_groups * s.gsp_prompts_per_group));
  for (std::int64_t g = 0; g < s.gsp_num_groups; ++g) {
    const std::int64_t system = draw(s.gsp_system_prompt_len);
    for (std::int64_t p = 0; p < s.gsp_prompts_per_group; ++p) {
      ServeRequest r;
      r.prompt_tokens = system + draw(s.gsp_question_len);
      r.output_tokens = draw(s.gsp_output_len);
      r.prefix_tokens = system;
      r.prefix_group = g;
      rows.push_back(r);
    }
  }
  if (!s.gsp_ordered) std::shuffle(rows.begin(), rows.end(), rng);
  return rows;
}

// vllm bench serve's sonnet rows (vllm/benchmarks/datasets.py SonnetDataset.sample @ f2e97dda, defaults input 550,
// output 150, prefix 200): the chat-formatted instruction, the first poem lines up to about prefix_len tokens
// (the same for every request), then lines drawn at random up to about input_len, a draw kept only when the
// formatted prompt has at most input_len tokens; every output expects output_len tokens. serve-sim takes input_len
// and prefix_len as they are: the lines' token lengths, which the tokenizer decides, fall within a line of them.
ServeRequest sonnetRow(const ArrivalSpec& s, double arrival_s) {
  ServeRequest r{arrival_s, s.sonnet_input_len, s.sonnet_output_len};
  if (s.sonnet_prefix_len > 0) {
    r.prefix_tokens = s.sonnet_prefix_len;
    r.prefix_group = 0;
  }
  return r;
}

}  // namespace

std::vector<ServeRequest> generateRequests(const ArrivalSpec& s) {
  checkArrivalSpec(s);
  std::mt19937_64 rng(s.seed);
  const bool gsp = s.lengths == "generated-shared-prefix";
  std::vector<ServeRequest> out = gsp ? sharedPrefixRows(s, rng) : std::vector<ServeRequest>{};
  if (!gsp) out.reserve(static_cast<std::size_t>(s.requests));
  // Gamma gaps with shape 1/cv² and mean 1/rate; cv 1 is the exponential (Poisson) case.
  const double shape = s.process == "poisson" ? 1.0 : 1.0 / (s.cv * s.cv);
  const bool at_once = std::isinf(s.rate);  // --rate inf: the benchmarks send everything at t = 0
  std::gamma_distribution<double> gap(shape, at_once ? 1.0 : 1.0 / (s.rate * shape));
  auto length = [&](std::int64_t mean, bool output) -> std::int64_t {
    if (s.lengths == "random") {
      const LengthRange range = randomLengthRange(s.bench, mean, s.range_ratio, output);
      return (output ? 0 : s.prefix_len) + std::uniform_int_distribution<std::int64_t>(range.low, range.high)(rng);
    }
    const auto m = static_cast<double>(mean);
    if (s.lengths == "uniform") return std::llround(std::uniform_real_distribution<double>(0.5 * m, 1.5 * m)(rng));
    if (s.lengths == "exponential") return std::llround(std::exponential_distribution<double>(1.0 / m)(rng));
    return mean;
  };
  double t = 0;
  const auto n = gsp ? static_cast<std::int64_t>(out.size()) : s.requests;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i > 0 && !at_once) t += gap(rng);
    if (gsp) {
      out[static_cast<std::size_t>(i)].arrival_s = t;
      continue;
    }
    if (s.lengths == "sonnet") {
      out.push_back(sonnetRow(s, t));
      continue;
    }
    const std::int64_t prompt = std::max<std::int64_t>(1, length(s.prompt_tokens, false));
    ServeRequest r{t, prompt, std::max<std::int64_t>(1, length(s.output_tokens, true))};
    if (s.lengths == "random" && s.prefix_len > 0) {  // vLLM's random dataset: one prefix for every prompt
      r.prefix_tokens = s.prefix_len;
      r.prefix_group = 0;
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace attnsim
