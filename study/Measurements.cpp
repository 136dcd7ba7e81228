#include "study/Measurements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "catalog/Catalog.hpp"
#include "core/Error.hpp"
#include "core/Files.hpp"
#include "core/KeySchema.hpp"
#include "core/Strings.hpp"

namespace attnsim {

namespace {

// The columns, required and optional, as the key schema lists them (core/schema/measurement_csv.yaml,
// rendered into docs/KEYS.md); any other column is a typo or another tool's file.
std::vector<std::string> csvColumns(bool required) {
  std::vector<std::string> out;
  for (const auto& k : keySchema("measurement_csv").keys) {
    if (k.required == required) out.push_back(k.path);
  }
  return out;
}
const std::vector<std::string> kKinds{"attention",     "copy",         "gemm",         "launch",
                                      "graph_capture", "graph_replay", "graph_launch", "graph_node",
                                      "step",          "allreduce",    "moe"};
const std::vector<std::string> kPhases{"prefill", "extend", "decode", "verify", "mixed"};
constexpr const char* kColumnsReference = "; the columns: docs/KEYS.md#measurement_csv";
const std::vector<std::string> kDtypes{"fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2"};
// A GEMM's operand format: the attention dtypes, and the engines' block-scaled and weight-only formats.
const std::vector<std::string> kGemmDtypes{"fp32",  "fp16",  "bf16",    "fp8",     "fp8_e4m3", "fp8_block",
                                           "nvfp4", "mxfp4", "int4_wo", "int8_wo", "w4a8_awq"};
const std::vector<std::string> kEngines{"vllm", "sglang", "rtp-llm", "trtllm", "nccl"};
// Timed runs a row must average over: the harness takes at least 20, AIConfigurator's vLLM collector 6.
constexpr std::int64_t kMinRuns = 5;

// What the catalog calls the harness's names: device -> hardware profile, implementation -> kernel family.
struct CatalogNames {
  std::map<std::string, std::string> device_to_hw, impl_to_kernel, ambiguous_devices;
  std::vector<std::string> impls;
};

CatalogNames catalogNames(const Catalog& catalog) {
  CatalogNames names;
  // A device name two profiles claim (a what-if copy of a profile keeps its device_names) cannot
  // say which profile a row belongs to: such rows are refused, naming both (ambiguous_devices).
  for (const auto& h : catalog.hardwareProfiles()) {
    for (const auto& n : h.device_names) {
      const auto [it, fresh] = names.device_to_hw.emplace(n, h.id);
      if (!fresh) names.ambiguous_devices[n] = it->second + " and " + h.id;
    }
  }
  for (const auto& k : catalog.kernels()) {
    for (const auto& m : k.measured_as) {
      names.impl_to_kernel[m] = k.id;
      names.impls.push_back(m);
    }
  }
  return names;
}

// Column name -> index; every required column must be there.
std::map<std::string, std::size_t> columnsOf(const std::vector<std::string>& header, const std::string& source) {
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const auto [it, fresh] = col.emplace(header[i], i);
    if (!fresh) {
      throw LocatedInputError(
          {source, 1, static_cast<int>(i) + 1}, header[i],
          fmt::format("column '{}' appears twice (fields {} and {})", header[i], it->second + 1, i + 1));
    }
  }
  const std::vector<std::string> required = csvColumns(true);
  for (const auto& c : required) {
    if (!col.count(c))
      throw LocatedInputError({source, 1, 1}, c, fmt::format("missing column '{}'{}", c, kColumnsReference));
  }
  std::vector<std::string> known = required;
  for (auto& c : csvColumns(false)) known.push_back(std::move(c));
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (std::find(known.begin(), known.end(), header[i]) == known.end()) {
      throw LocatedInputError(
          {source, 1, static_cast<int>(i) + 1}, header[i],
          fmt::format("unknown column '{}'{}{}", header[i], didYouMean(header[i], known), kColumnsReference));
    }
  }
  return col;
}

// One thing wrong in the file: where (line, 1-based field number), the column, what.
struct CsvError {
  CsvError(SourceLocation w, std::string c, std::string m)
      : where(std::move(w)), column(std::move(c)), message(std::move(m)) {}
  SourceLocation where;
  std::string column;
  std::string message;
  [[nodiscard]] std::string str() const {
    return column.empty() ? fmt::format("{}: {}", where.str(), message)
                          : fmt::format("{}: column '{}': {}", where.str(), column, message);
  }
};

// One record's cells by column name, and everything wrong with them, in the order found.
class RowCells {
 public:
  RowCells(const std::map<std::string, std::size_t>& col, std::vector<std::string> cells, std::string source, int line)
      : col_(col), cells_(std::move(cells)), source_(std::move(source)), line_(line) {}

  [[nodiscard]] std::string cell(const std::string& name) const {
    const auto found = col_.find(name);
    if (found == col_.end()) return {};  // an optional column the file does not have
    const std::size_t i = found->second;
    return i < cells_.size() ? cells_[i] : std::string{};
  }
  void fail(const std::string& name, const std::string& msg) {
    const auto found = col_.find(name);
    const int column = found == col_.end() ? 1 : static_cast<int>(found->second) + 1;
    errors_.emplace_back(SourceLocation{source_, line_, column}, name, msg);
  }
  std::int64_t integer(const std::string& name, bool required) {
    const std::string s = cell(name);
    if (s.empty()) {
      if (required) fail(name, "is empty");
      return 0;
    }
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v < 0)
      fail(name, "'" + s + "' is not a non-negative integer");
    return v;
  }
  // A 0/1 column (absent or empty: 0).
  bool flag(const std::string& name, bool required) {
    const auto v = integer(name, required);
    if (v > 1) fail(name, fmt::format("'{}' is not 0 or 1", v));
    return v != 0;
  }
  double real(const std::string& name, bool required) {
    const std::string s = cell(name);
    if (s.empty()) {
      if (required) fail(name, "is empty");
      return 0;
    }
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || !(v >= 0) || !std::isfinite(v))
      fail(name, "'" + s + "' is not a finite non-negative number");
    return v;
  }
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] const std::vector<CsvError>& errors() const { return errors_; }

 private:
  const std::map<std::string, std::size_t>& col_;
  std::vector<std::string> cells_;
  std::string source_;
  int line_;
  std::vector<CsvError> errors_;
};

MeasurementRow textFields(const RowCells& cells) {
  MeasurementRow r;
  r.source = cells.source();
  r.line = cells.line();
  r.device = cells.cell("device");
  r.date = cells.cell("date");
  r.torch = cells.cell("torch");
  r.triton = cells.cell("triton");
  r.cuda = cells.cell("cuda");
  r.kind = cells.cell("kind");
  r.impl = cells.cell("impl");
  r.phase = cells.cell("phase");
  r.dtype = cells.cell("dtype");
  r.note = cells.cell("note");
  r.q_dtype = cells.cell("q_dtype");
  r.engine = cells.cell("engine");
  r.engine_version = cells.cell("engine_version");
  r.origin = cells.cell("origin");
  return r;
}

void mapDeviceAndKind(MeasurementRow& r, const CatalogNames& names, RowCells& cells) {
  if (const auto twice = names.ambiguous_devices.find(r.device); twice != names.ambiguous_devices.end()) {
    cells.fail("device", fmt::format("'{}' is a device name of two hardware profiles ({}): keep it in one", r.device,
                                     twice->second));
  } else if (const auto it = names.device_to_hw.find(r.device); it != names.device_to_hw.end()) {
    r.hardware = it->second;
  } else {
    cells.fail("device", "'" + r.device + "' is no hardware profile's device_names");
  }
  if (std::find(kKinds.begin(), kKinds.end(), r.kind) == kKinds.end()) {
    cells.fail("kind", fmt::format("'{}' is not one of: {}{}", r.kind, join(kKinds, ", "), didYouMean(r.kind, kKinds)));
  }
  const auto digit = [&](std::size_t i) { return r.date[i] >= '0' && r.date[i] <= '9'; };
  const bool date = r.date.size() == 10 && r.date[4] == '-' && r.date[7] == '-' && digit(0) && digit(1) && digit(2) &&
                    digit(3) && digit(5) && digit(6) && digit(8) && digit(9);
  if (!date) cells.fail("date", "'" + r.date + "' is not a date YYYY-MM-DD");
}

// Shape and timing columns are required of attention rows only; other kinds leave them empty.
void numberFields(MeasurementRow& r, RowCells& cells) {
  const bool attention = r.kind == "attention";
  r.batch = cells.integer("batch", true);
  r.q_len = cells.integer("q_len", attention);
  r.kv_len = cells.integer("kv_len", attention);
  r.heads = cells.integer("heads", attention);
  r.kv_heads = cells.integer("kv_heads", attention);
  r.head_dim = cells.integer("head_dim", attention);
  r.causal = cells.flag("causal", attention);
  r.median_us = cells.real("median_us", true);
  r.p20_us = cells.real("p20_us", false);
  r.p80_us = cells.real("p80_us", false);
  const bool p20 = !cells.cell("p20_us").empty(), p80 = !cells.cell("p80_us").empty();
  if ((p20 && r.p20_us > r.median_us) || (p80 && r.p80_us < r.median_us) || (p20 && p80 && r.p20_us > r.p80_us)) {
    cells.fail("p20_us", fmt::format("percentiles out of order: p20 {} ≤ median {} ≤ p80 {} must hold", r.p20_us,
                                     r.median_us, r.p80_us));
  }
  r.runs = cells.integer("runs", true);
  r.flops = cells.real("flops", attention);
  r.bytes = cells.real("bytes", attention);
  r.page_size = cells.integer("page_size", false);  // optional column: absent or empty is contiguous KV
  r.window = cells.integer("window", false);        // optional: absent or empty is full attention
  r.kv_write = cells.flag("kv_write", false);
  r.l2_warm = cells.flag("l2_warm", false);
  r.active_experts = cells.integer("active_experts", false);  // optional: absent or empty is balanced routing
  if (r.active_experts < 0 || (r.active_experts > 0 && r.kind != "moe"))
    cells.fail("active_experts",
               fmt::format("{} on a {} row: a positive count, moe rows only", r.active_experts, r.kind));
  r.expert_matrices = cells.integer("expert_matrices", false);  // optional: absent or empty is 3 (gated)
  if (r.expert_matrices != 0 && (r.kind != "moe" || (r.expert_matrices != 2 && r.expert_matrices != 3)))
    cells.fail("expert_matrices", fmt::format("{} on a {} row: 2 or 3, moe rows only", r.expert_matrices, r.kind));
  if (!r.engine.empty() && std::find(kEngines.begin(), kEngines.end(), r.engine) == kEngines.end()) {
    cells.fail("engine",
               fmt::format("'{}' is not one of: {}{}", r.engine, join(kEngines, ", "), didYouMean(r.engine, kEngines)));
  }
}

void checkDtype(const std::string& column, const std::string& value, const std::vector<std::string>& allowed,
                RowCells& cells) {
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    cells.fail(column, fmt::format("'{}' is not one of: {}{}", value, join(allowed, ", "), didYouMean(value, allowed)));
  }
}

void checkAttention(MeasurementRow& r, const CatalogNames& names, RowCells& cells) {
  if (r.median_us <= 0) cells.fail("median_us", "must be positive");
  if ((r.kind == "gemm" || r.kind == "moe") && !r.dtype.empty()) checkDtype("dtype", r.dtype, kGemmDtypes, cells);
  if (r.kind != "attention") return;
  if (r.runs < kMinRuns) cells.fail("runs", fmt::format("fewer than {} timed runs", kMinRuns));
  if (const auto it = names.impl_to_kernel.find(r.impl); it != names.impl_to_kernel.end()) {
    r.kernel = it->second;
  } else {
    cells.fail("impl", fmt::format("'{}' is no kernel family's measured_as ({}){}", r.impl, join(names.impls, ", "),
                                   didYouMean(r.impl, names.impls)));
  }
  if (std::find(kPhases.begin(), kPhases.end(), r.phase) == kPhases.end()) {
    cells.fail("phase", fmt::format("'{}' is not one of: {}", r.phase, join(kPhases, ", ")));
  }
  if (r.batch < 1) cells.fail("batch", "must be at least 1");
  checkDtype("dtype", r.dtype, kDtypes, cells);
  if (!r.q_dtype.empty()) checkDtype("q_dtype", r.q_dtype, kDtypes, cells);
  if (r.phase == "mixed") {
    // One fresh prefill chunk of q_len tokens beside batch - 1 decodes over kv_len: the chunk may be longer
    // than the decodes' context.
    if (r.q_len < 1) cells.fail("q_len", "must be at least 1");
    if (r.batch < 2) cells.fail("batch", "a mixed row is one prefill chunk and batch - 1 >= 1 decodes");
  } else if (r.q_len < 1 || r.kv_len < r.q_len) {
    cells.fail("q_len", "needs 1 <= q_len <= kv_len");
  }
  if (r.kv_heads < 1 || r.heads < r.kv_heads || r.heads % r.kv_heads != 0) cells.fail("kv_heads", "must divide heads");
}

MeasurementRow parseRow(RowCells& cells, const CatalogNames& names) {
  MeasurementRow r = textFields(cells);
  mapDeviceAndKind(r, names, cells);
  numberFields(r, cells);
  checkAttention(r, names, cells);
  return r;
}

// Located at the first bad row; the message lists up to 20 of them.
void throwIfBad(const std::vector<CsvError>& errors) {
  if (errors.empty()) return;
  const std::size_t shown = std::min<std::size_t>(errors.size(), 20);
  std::string msg = fmt::format("{} bad row(s); nothing imported:\n", errors.size());
  for (std::size_t i = 0; i < shown; ++i) msg += "  " + errors[i].str() + "\n";
  if (shown < errors.size()) msg += fmt::format("  ... and {} more\n", errors.size() - shown);
  throw LocatedInputError(errors.front().where, errors.front().column, msg, LocatedInputError::Prefix::no);
}

}  // namespace

std::vector<std::string> splitCsvLine(const std::string& line, bool* unterminated) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  if (unterminated != nullptr) *unterminated = quoted;
  return out;
}

std::vector<MeasurementRow> parseMeasurementCsv(const std::string& text, const std::string& source,
                                                const Catalog& catalog) {
  const CatalogNames names = catalogNames(catalog);
  // Text cells go to the store and from there into JSON and HTML: the file must be UTF-8.
  if (const auto bad = findTextDefect(text)) {
    throw LocatedInputError({source, bad->line, bad->column}, "", bad->what + ": the file must be UTF-8 text");
  }
  std::istringstream in(text);
  if (text.starts_with("\xEF\xBB\xBF")) in.seekg(3);  // a UTF-8 byte-order mark (spreadsheets write one)
  std::string line;
  if (!std::getline(in, line)) throw LocatedInputError({source, 1, 1}, "", "empty file: expected a header row");
  const auto header = splitCsvLine(line);
  const auto col = columnsOf(header, source);
  std::vector<MeasurementRow> rows;
  std::vector<CsvError> errors;
  int number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    bool unterminated = false;
    auto cells = splitCsvLine(line, &unterminated);
    if (unterminated) {
      errors.emplace_back(SourceLocation{source, number, 1}, "",
                          "a quoted cell is not closed on its line (cells spanning lines are not supported)");
      continue;
    }
    if (cells.size() != header.size()) {
      errors.emplace_back(SourceLocation{source, number, 1}, "",
                          fmt::format("{} cells, the header has {}", cells.size(), header.size()));
      continue;
    }
    RowCells row(col, std::move(cells), source, number);
    MeasurementRow r = parseRow(row, names);
    if (row.errors().empty()) {
      rows.push_back(std::move(r));
    } else {
      errors.insert(errors.end(), row.errors().begin(), row.errors().end());
    }
  }
  throwIfBad(errors);
  if (rows.empty()) throw LocatedInputError({source, number, 1}, "", "no rows after the header: nothing to import");
  return rows;
}

std::vector<MeasurementRow> readMeasurementCsv(const std::string& path, const Catalog& catalog) {
  // A file ending in .gz is gzip-compressed CSV (the converted kernel databases, measurements/data/aic).
  if (path.ends_with(".gz")) return parseMeasurementCsv(readGzipFile(path, "measurement file"), path, catalog);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read measurement file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parseMeasurementCsv(text.str(), path, catalog);
}

MeasurementImport importMeasurements(const std::vector<std::string>& files, const std::string& db,
                                     const Catalog& catalog) {
  requireWritableStore(db);  // a read-only store is said to be so whatever the input files hold
  std::vector<MeasurementRow> all;
  for (const auto& f : files) {
    auto rows = readMeasurementCsv(f, catalog);
    all.insert(all.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  Store store(db);
  store.insertMeasurements(all);
  MeasurementImport out;
  out.rows = all.size();
  for (const auto& r : all) ++out.by_hardware_and_kind[r.hardware + " " + r.kind];
  return out;
}

}  // namespace attnsim
