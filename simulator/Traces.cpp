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

[[noreturn]] void bad(const std::string& name, std::size_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", name, line, what));
}

std::int64_t tokensOf(const std::string& cell, const std::string& name, std::size_t line, const char* column) {
  std::int64_t v = 0;
  const std::string t = trim(cell);
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < 0) {
    bad(name, line, fmt::format("{} must be a whole number of tokens ≥ 0, not '{}'", column, t));
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
  double fraction = 0;
  if (in.peek() == '.') {
    const std::string rest = t.substr(static_cast<std::size_t>(in.tellg()));
    fraction = std::stod("0" + rest);
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
  } catch (const nlohmann::json::parse_error& e) {
    bad(name, line, std::string("not JSON: ") + e.what());
  }
  ServeRequest r;
  for (const char* key : {"timestamp", "input_length", "output_length"}) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number())
      bad(name, line, fmt::format("needs a number '{}'", key));
  }
  r.arrival_s = j["timestamp"].get<double>() / 1000.0;  // Mooncake traces give milliseconds
  if (j["input_length"].get<double>() < 0 || j["output_length"].get<double>() < 0) bad(name, line, "negative length");
  r.prompt_tokens = j["input_length"].get<std::int64_t>();
  r.output_tokens = j["output_length"].get<std::int64_t>();
  return r;
}

}  // namespace

std::vector<ServeRequest> parseTrace(const std::string& text, const std::string& name) {
  std::vector<ServeRequest> out;
  std::istringstream in(text);
  std::string row;
  std::size_t line = 0;
  std::optional<Format> format;
  if (name.size() >= 6 && name.substr(name.size() - 6) == ".jsonl") format = Format::Jsonl;
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

std::vector<ServeRequest> generateRequests(const ArrivalSpec& s) {
  std::mt19937_64 rng(s.seed);
  std::vector<ServeRequest> out;
  out.reserve(static_cast<std::size_t>(s.requests));
  // Gamma gaps with shape 1/cv² and mean 1/rate; cv 1 is the exponential (Poisson) case.
  const double shape = s.process == "poisson" ? 1.0 : 1.0 / (s.cv * s.cv);
  std::gamma_distribution<double> gap(shape, 1.0 / (s.rate * shape));
  auto length = [&](std::int64_t mean) -> std::int64_t {
    const auto m = static_cast<double>(mean);
    if (s.lengths == "uniform") return std::llround(std::uniform_real_distribution<double>(0.5 * m, 1.5 * m)(rng));
    if (s.lengths == "exponential") return std::llround(std::exponential_distribution<double>(1.0 / m)(rng));
    return mean;
  };
  double t = 0;
  for (std::int64_t i = 0; i < s.requests; ++i) {
    if (i > 0) t += gap(rng);
    out.push_back(
        {t, std::max<std::int64_t>(1, length(s.prompt_tokens)), std::max<std::int64_t>(1, length(s.output_tokens))});
  }
  return out;
}

}  // namespace attnsim
