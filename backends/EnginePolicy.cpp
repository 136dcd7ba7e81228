#include "backends/EnginePolicy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "backends/EngineOrder.hpp"
#include "backends/MessageFormats.hpp"
#include "backends/RuleVariables.hpp"
#include "core/Error.hpp"
#include "core/Formats.hpp"
#include "core/Strings.hpp"

namespace attnsim {

const std::vector<std::string> kValidationChecks{
    "head_size",      "dtype", "kv_cache_dtype", "block_size",    "compute_capability", "platform",
    "attention_type", "stage", "feature",        "feature_match", "requirements"};
const std::vector<std::string> kMessageKeys{"explicit_invalid", "none_valid", "no_list", "wrong_kind_mla",
                                            "wrong_kind_mha"};
const std::vector<std::string> kDocsFields{"table_name",
                                           "variant",
                                           "dtypes",
                                           "kv_cache_dtypes",
                                           "block_sizes",
                                           "head_sizes",
                                           "compute_capability",
                                           "attention_types",
                                           "native_paging",
                                           "native_page_sizes",
                                           "devices",
                                           "server_flag",
                                           "stages",
                                           "cuda_graph",
                                           "sink",
                                           "sparse",
                                           "mm_prefix",
                                           "sliding_window",
                                           "multimodal",
                                           "spec_decoding",
                                           "spec_topk1",
                                           "spec_topk_gt1",
                                           "fp8_kv",
                                           "fp4_kv",
                                           "chunked_prefix_cache",
                                           "mla",
                                           "paged"};
const std::vector<std::string> kMessagePlaceholders{"backend", "reasons", "all_reasons",
                                                    "device",  "config",  "stage_name"};

namespace {

// {name} or {name:format}: a format spells the value as a Python program prints it (see kMessageFormats).
const std::regex& placeholderPattern() {
  static const std::regex re(R"(\{([A-Za-z_][A-Za-z0-9_]*)(?::([a-z_]+))?\})");
  return re;
}

}  // namespace

MessageTemplate parseMessage(const YamlReader& r, std::string_view key, const Expr::VariableCheck& check,
                             bool required) {
  MessageTemplate m;
  auto text = r.find<std::string>(key);
  if (!text) {
    if (required) r.fail(key, fmt::format("required key '{}' is missing", key));
    return m;
  }
  m.text = *text;
  for (std::sregex_iterator it(m.text.begin(), m.text.end(), placeholderPattern()), end; it != end; ++it) {
    const std::string name = (*it)[1].str();
    const std::string format = (*it)[2].str();
    if (!format.empty() && std::find(kMessageFormats.begin(), kMessageFormats.end(), format) == kMessageFormats.end()) {
      r.fail(key, fmt::format("placeholder {{{}:{}}}: unknown format '{}' (formats: {}){}", name, format, format,
                              join(kMessageFormats, ", "), didYouMean(format, kMessageFormats)));
    }
    const bool special =
        std::find(kMessagePlaceholders.begin(), kMessagePlaceholders.end(), name) != kMessagePlaceholders.end();
    if (const std::string problem = check(name); !special && !problem.empty()) {
      r.fail(key, fmt::format("placeholder {{{}}}: {}", name, problem));
    }
  }
  return m;
}

namespace {

EngineOption parseOption(const YamlReader& r) {
  EngineOption o;
  o.name = r.get<std::string>("name");
  o.type = r.getOneOf("type", {"bool", "int", "float", "string"});
  o.default_value = r.findScalarValue("default").value_or(Value{});
  // A default of the wrong type would reach the rules as a value no comparison expects.
  const bool typed =
      isNull(o.default_value) || o.type == "string" ||
      (o.type == "bool"    ? std::holds_alternative<bool>(o.default_value)
       : o.type == "float" ? asNumber(o.default_value).has_value() && !std::holds_alternative<bool>(o.default_value)
                           : std::holds_alternative<std::int64_t>(o.default_value));
  if (!typed) r.fail("default", fmt::format("option '{}' is of type {}: its default must be one too", o.name, o.type));
  o.allowed = r.get<std::vector<std::string>>("allowed", {});
  o.help = r.get<std::string>("help");
  r.finish();
  return o;
}

ValidationCheck parseCheck(const YamlReader& r, const Expr::VariableCheck& check) {
  ValidationCheck c;
  c.check = r.getOneOf("check", kValidationChecks);
  if (c.check == "feature" || c.check == "feature_match") c.feature = r.getOneOf("feature", kFeatureNames);
  if (c.check == "feature") c.needed_when = r.getExpr("needed_when", check);
  if (c.check == "feature_match") {
    c.scenario_flag = r.get<std::string>("scenario_flag");
    if (const auto problem = check(c.scenario_flag); !problem.empty()) r.fail("scenario_flag", problem);
    c.reason_unwanted = parseMessage(r, "reason_unwanted", check, true);
  }
  // requirements checks carry their reasons in the backend files.
  c.reason = parseMessage(r, "reason", check, c.check != "requirements");
  c.source = r.get<std::string>("source", "");
  r.finish();
  return c;
}

PolicyRule parseRule(const YamlReader& r, const Expr::VariableCheck& check) {
  PolicyRule rule;
  rule.when = r.findExpr("when", check);
  if (auto set = r.findMap("set")) {
    for (const auto& var : set->keysOf()) {
      if (const auto problem = check(var); !problem.empty()) set->fail(var, problem);
      rule.set.emplace_back(var, set->getExpr(var, check));
    }
  }
  rule.order = r.get<std::string>("order", "");
  if (!rule.order.empty()) {
    rule.order_sets = r.get<std::string>("sets");
    if (const auto problem = check(rule.order_sets); !problem.empty()) r.fail("sets", problem);
  }
  rule.note = parseMessage(r, "note", check, false);
  rule.error = parseMessage(r, "error", check, false);
  rule.source = r.get<std::string>("source");
  if (rule.set.empty() && rule.order.empty() && rule.note.text.empty() && rule.error.text.empty()) {
    r.fail("set", "a rule needs at least one of set, note, error (or an order)");
  }
  r.finish();
  return rule;
}

std::vector<CaptureRange> parseRanges(const YamlReader& r, std::string_view key) {
  std::vector<CaptureRange> ranges;
  for (const auto& item : r.list(key)) {
    CaptureRange range;
    range.values = item.get<std::vector<std::int64_t>>("values", {});
    if (range.values.empty()) {
      range.from = item.getInt("from", 1, 1 << 20);
      range.step = item.getInt("step", 1, 1 << 20);
      range.through_max = item.get<bool>("through_max", false);
      if (!range.through_max) range.below = item.getInt("below", 1, 1 << 20);
    }
    item.finish();
    ranges.push_back(std::move(range));
  }
  return ranges;
}

std::vector<std::int64_t> expandRanges(const std::vector<CaptureRange>& ranges, const Expr& max_expr, const Env& env,
                                       bool append_max) {
  const auto max_number = asNumber(max_expr.evaluate(env));
  const std::int64_t max = max_number ? static_cast<std::int64_t>(*max_number) : 0;
  std::vector<std::int64_t> out;
  for (const auto& r : ranges) {
    for (const auto x : r.values) out.push_back(x);
    if (r.values.empty()) {
      const std::int64_t stop = r.through_max ? max + 1 : r.below;
      for (std::int64_t x = r.from; x < stop; x += r.step) out.push_back(x);
    }
  }
  std::erase_if(out, [max](std::int64_t x) { return x > max; });
  if (append_max && max > 0) out.push_back(max);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CudaGraphPolicy parseCudaGraph(const YamlReader& r, const Expr::VariableCheck& check) {
  CudaGraphPolicy g;
  g.enabled_when = r.findExpr("enabled_when", check);
  g.max_batch = r.getExpr("max_batch", check);
  g.sizes = parseRanges(r, "sizes");
  g.prefill_max_tokens = r.findExpr("prefill_max_tokens", check);
  g.prefill_sizes = parseRanges(r, "prefill_sizes");
  g.append_max = r.get<bool>("append_max", false);
  g.capture_memory_mib_per_size = r.getNumber("capture_memory_mib_per_size", 0, 1e6);
  g.source = r.get<std::string>("source");
  r.finish();
  return g;
}

// The variables the policy's expressions may use: the scenario's and the engine's own options.
std::vector<std::string> policyVariables(const YamlReader& r, const std::vector<EngineOption>& options,
                                         const std::vector<std::string>& core_variables) {
  std::vector<std::string> known = core_variables;
  for (const auto& o : options) {
    if (std::find(known.begin(), known.end(), o.name) != known.end()) {
      r.fail("options", "option '" + o.name + "' shadows a scenario variable");
    }
    known.push_back(o.name);
  }
  return known;
}

Env parseDefaults(const YamlReader& defaults, const Expr::VariableCheck& check) {
  Env env;
  for (const auto& var : defaults.keysOf()) {
    if (const auto problem = check(var); !problem.empty()) defaults.fail(var, problem);
    env[var] = *defaults.findScalarValue(var);
  }
  return env;
}

std::map<std::string, MessageTemplate, std::less<>> parseMessages(const YamlReader& messages,
                                                                  const Expr::VariableCheck& check) {
  std::map<std::string, MessageTemplate, std::less<>> out;
  for (const auto& key : messages.keysOf()) {
    if (std::find(kMessageKeys.begin(), kMessageKeys.end(), key) == kMessageKeys.end()) {
      messages.fail(key, fmt::format("unknown message '{}'{}; messages are: {}", key, didYouMean(key, kMessageKeys),
                                     join(kMessageKeys, ", ")));
    }
    out[key] = parseMessage(messages, key, check, true);
  }
  return out;
}

DocsTable parseDocsTable(const YamlReader& r) {
  DocsTable table;
  table.title = r.get<std::string>("title");
  table.rows = r.get<std::vector<std::string>>("rows");
  table.rows_at = r.locateItems("rows");
  for (const auto& c : r.list("columns")) {
    table.columns.push_back({c.get<std::string>("header"), c.getOneOf("field", kDocsFields)});
    c.finish();
  }
  r.finish();
  return table;
}

// The docs section; priority tables name selection lists, so it is read after them.
void parseDocs(const YamlReader& docs, EnginePolicy& p) {
  for (const auto& t : docs.list("tables")) p.docs_tables.push_back(parseDocsTable(t));
  for (const auto& t : docs.list("priority_tables")) {
    PriorityDocsTable table{t.get<std::string>("title"), t.get<std::string>("list")};
    if (!p.list(table.list)) t.fail("list", "no selection list is labelled '" + table.list + "'");
    t.finish();
    p.priority_tables.push_back(std::move(table));
  }
  docs.finish();
}

}  // namespace

std::vector<std::int64_t> CudaGraphPolicy::captureSizes(const Env& env) const {
  return expandRanges(sizes, max_batch, env, append_max);
}

std::vector<std::int64_t> CudaGraphPolicy::prefillCaptureSizes(const Env& env) const {
  if (!prefill_max_tokens || prefill_sizes.empty()) return {};
  return expandRanges(prefill_sizes, *prefill_max_tokens, env, false);
}

std::string MessageTemplate::render(const Env& env) const {
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), placeholderPattern());
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
    const auto found = env.find((*it)[1].str());
    out += found == env.end() ? std::string("None") : formatValue(found->second, (*it)[2].str());
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + text.substr(last);
}

bool EnginePolicy::reads(std::string_view check) const {
  return std::any_of(validation.begin(), validation.end(),
                     [check](const ValidationCheck& v) { return v.check == check; });
}

const EngineOption* EnginePolicy::option(std::string_view name) const {
  for (const auto& o : options) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

const PriorityList* EnginePolicy::list(std::string_view label) const {
  for (const auto& l : selection) {
    if (l.label == label) return &l;
  }
  return nullptr;
}

const MessageTemplate& EnginePolicy::message(std::string_view key) const {
  static const MessageTemplate empty;
  const auto it = messages.find(key);
  return it == messages.end() ? empty : it->second;
}

// The serving defaults every scenario starts from: a page size of at least one token and a KV
// dtype the engine lists.
void checkDefaults(const YamlReader& defaults, const EnginePolicy& p) {
  if (const auto it = p.defaults.find("page_size"); it != p.defaults.end()) {
    const auto* page = std::get_if<std::int64_t>(&it->second);
    if (page == nullptr || *page < 1 || *page > (1 << 20))
      defaults.fail("page_size", "expected an integer in [1, 1048576]");
  }
  if (const auto it = p.defaults.find("kv_dtype"); it != p.defaults.end()) {
    const auto* kv = std::get_if<std::string>(&it->second);
    if (kv == nullptr || std::find(p.kv_dtypes.begin(), p.kv_dtypes.end(), *kv) == p.kv_dtypes.end()) {
      defaults.fail("kv_dtype", fmt::format("expected one of the engine's kv_dtypes: {}{}", join(p.kv_dtypes, ", "),
                                            kv ? didYouMean(*kv, p.kv_dtypes) : ""));
    }
  }
}

EnginePolicy parseEnginePolicy(const YamlReader& r, const std::vector<std::string>& core_variables) {
  EnginePolicy p;
  p.engine = r.get<std::string>("engine");
  p.display_name = r.get<std::string>("display_name");
  p.version = r.get<std::string>("version");
  p.source = r.get<std::string>("source");
  p.per_stage = r.get<bool>("per_stage", false);
  p.explicit_backend_stages_it_runs =
      r.findOneOf("explicit_backend", {"both_stages", "stages_it_runs"}).value_or("both_stages") == "stages_it_runs";
  p.block_size_filters_selection = r.get<bool>("block_size_filters_selection", true);
  p.kv_dtypes = r.get<std::vector<std::string>>("kv_dtypes");
  for (const auto& kv : p.kv_dtypes) {
    try {
      (void)parseKvCacheDtype(kv);  // the cost model and the checker must know every spelling
    } catch (const UsageError& e) {
      r.fail("kv_dtypes", e.what());
    }
  }
  for (const auto& o : r.list("options")) p.options.push_back(parseOption(o));
  const std::vector<std::string> known = policyVariables(r, p.options, core_variables);
  const auto check = ruleVariableCheck(known, p.options, p.kv_dtypes);

  p.validate_explicit_when = r.findExpr("validate_explicit_when", check);
  if (auto defaults = r.findMap("defaults")) {
    p.defaults = parseDefaults(*defaults, check);
    checkDefaults(*defaults, p);
  }
  for (const auto& c : r.list("validation")) p.validation.push_back(parseCheck(c, check));
  const auto rules = r.list("rules");
  for (const auto& rule : rules) p.rules.push_back(parseRule(rule, check));
  for (const auto& s : r.list("selection")) p.selection.push_back(parsePriorityList(s, check));
  checkRuleOrders(rules, p);
  if (auto messages = r.findMap("messages")) p.messages = parseMessages(*messages, check);
  if (auto graphs = r.findMap("cuda_graph")) p.cuda_graph = parseCudaGraph(*graphs, check);
  if (auto docs = r.findMap("docs")) parseDocs(*docs, p);
  if (auto serving = r.findMap("serving")) p.serving = parseServingPolicy(*serving, known);
  r.finish();
  return p;
}

Expr::VariableCheck ruleVariableCheck(const std::vector<std::string>& known, const std::vector<EngineOption>& options,
                                      const std::vector<std::string>& kv_dtypes) {
  Expr::VariableCheck check = [known](std::string_view name) -> std::string {
    if (std::find(known.begin(), known.end(), name) != known.end()) return {};
    return fmt::format("unknown variable '{}'{}", name, didYouMean(name, known));
  };
  check.type_of = [options, kv_dtypes](std::string_view name) -> VariableType {
    for (const auto& o : options) {
      if (o.name != name) continue;
      if (o.type == "bool") return {ValueType::Bool, {}};
      if (o.type == "int" || o.type == "float") return {ValueType::Number, {}};
      return {ValueType::String, o.allowed};
    }
    if (name == "kv_dtype") return {ValueType::String, kv_dtypes};
    return scenarioVariableType(name);
  };
  return check;
}

}  // namespace attnsim
