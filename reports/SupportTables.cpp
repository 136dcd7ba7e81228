#include "reports/SupportTables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/Strings.hpp"

namespace attnsim {

namespace {

std::string joinOr(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " or " : ", ";
    out += std::to_string(values[i]);
  }
  return out;
}

std::string attentionTypes(const std::vector<std::string>& types) {
  if (types.size() >= 3) return "All";
  std::vector<std::string> shown;
  for (const auto& t : types) {
    if (t == "decoder") shown.emplace_back("Decoder");
    if (t == "encoder") shown.emplace_back("Encoder");
    if (t == "encoder_only") shown.emplace_back("Encoder Only");
    if (t == "encoder_decoder") shown.emplace_back("Enc-Dec");
  }
  return join(shown, ", ");
}

std::string mark(bool yes) { return yes ? "✅" : "❌"; }

std::string devices(const BackendCaps& caps) {
  const bool nv = std::find(caps.platforms.begin(), caps.platforms.end(), "cuda") != caps.platforms.end();
  const bool amd = std::find(caps.platforms.begin(), caps.platforms.end(), "rocm") != caps.platforms.end();
  const auto& majors = caps.compute_capability.majors;
  const std::string nv_label = majors.size() == 1 && majors[0] == 9 ? "NV Hopper " : "NV ";
  return nv_label + mark(nv) + "<br> AMD " + mark(amd);
}

std::string stages(const BackendCaps& caps) {
  auto has = [&caps](const char* s) {
    return std::find(caps.stages.begin(), caps.stages.end(), s) != caps.stages.end();
  };
  return "PREFILL " + mark(has("prefill")) + " <br> DECODE " + mark(has("decode"));
}

std::string codeCell(const DocsRow& row, const std::string& field);

std::string cell(const DocsRow& row, const std::string& field) {
  const BackendCaps& c = *row.caps;
  if (const auto it = c.documented.find(field); it != c.documented.end()) return it->second;
  return codeCell(row, field);
}

// The descriptor's own value for a column, ignoring any `documented` cell.
std::string codeCell(const DocsRow& row, const std::string& field) {
  const BackendCaps& c = *row.caps;
  if (field == "table_name") return row.backend->table_name;
  if (field == "variant") return row.variant.empty() ? "" : row.variant + "*";
  if (field == "dtypes") return join(c.dtypes, ", ");
  if (field == "kv_cache_dtypes") return c.kv_cache_dtypes ? join(*c.kv_cache_dtypes, ", ") : "Any";
  if (field == "block_sizes") return c.block_sizes.render();
  if (field == "head_sizes") return c.head_sizes.render();
  if (field == "compute_capability") {
    const bool cuda = std::find(c.platforms.begin(), c.platforms.end(), "cuda") != c.platforms.end();
    return cuda ? c.compute_capability.render() : "N/A";
  }
  if (field == "attention_types") return attentionTypes(c.attention_types);
  if (field == "native_paging") {
    if (c.native_page_sizes.isFixedList()) return joinOr(c.native_page_sizes.values);
    const Feature* paged = c.feature("paged");
    return paged ? paged->render() : mark(false);
  }
  if (field == "native_page_sizes")
    return c.native_page_sizes.isFixedList() ? joinOr(c.native_page_sizes.values) : "n/a";
  if (field == "devices") return devices(c);
  if (field == "server_flag") return c.server_flag.empty() ? "None" : c.server_flag;
  if (field == "stages") return stages(c);
  if (field == "cuda_graph") return c.cuda_graph;
  if (field == "mla" && !c.feature("mla")) return mark(row.backend->kind == "mla");
  const Feature* f = c.feature(field);
  return f ? f->render() : mark(false);
}

// The validation check that reads a column's value, if any (informational columns have none).
const ValidationCheck* checkReading(const EnginePolicy& p, const std::string& field) {
  static const std::map<std::string, std::string> kColumnCheck{{"head_sizes", "head_size"},
                                                               {"dtypes", "dtype"},
                                                               {"kv_cache_dtypes", "kv_cache_dtype"},
                                                               {"block_sizes", "block_size"},
                                                               {"devices", "platform"},
                                                               {"compute_capability", "compute_capability"},
                                                               {"stages", "stage"},
                                                               {"attention_types", "attention_type"}};
  const auto it = kColumnCheck.find(field);
  for (const auto& check : p.validation) {
    if (it != kColumnCheck.end() ? check.check == it->second : check.feature == field) return &check;
  }
  return nullptr;
}

bool informational(const std::string& field) {
  return field == "table_name" || field == "variant" || field == "server_flag" || field == "cuda_graph" ||
         field == "native_paging" || field == "native_page_sizes";
}

std::string descriptorFile(const DocsRow& row) {
  const BackendCaps& c = row.backend->caps;
  const std::string& file = c.prefill_kernel_at.file.empty() ? c.decode_kernel_at.file : c.prefill_kernel_at.file;
  return file.empty() ? row.backend->id() : file;
}

}  // namespace

std::vector<DocsDiff> docsDiff(const Engine& engine) {
  const EnginePolicy& p = engine.policy;
  std::vector<DocsDiff> out;
  for (const auto& table : p.docs_tables) {
    for (const auto& row_ref : table.rows) {
      const DocsRow row = resolveDocsRow(engine, row_ref);
      for (const auto& col : table.columns) {
        if (informational(col.field) && !row.caps->documented.count(col.field)) continue;
        const ValidationCheck* check = checkReading(p, col.field);
        const std::string where =
            check ? fmt::format("check {} ({})", check->feature.empty() ? check->check : "feature " + check->feature,
                                check->source.empty() ? p.source : check->source)
                  : fmt::format("backends/{}/engine.yaml validation: no check reads '{}'", p.engine, col.field);
        const std::string doc = cell(row, col.field), code = codeCell(row, col.field);
        if (row.caps->documented.count(col.field) && doc != code) {
          out.push_back({table.title, row_ref, col.header, doc, code,
                         fmt::format("{} (documented.{}); {}", descriptorFile(row), col.field, where)});
        } else if (!check && !informational(col.field) && doc.find("❌") != std::string::npos) {
          out.push_back({table.title, row_ref, col.header, doc, "not a selection condition (the backend runs)", where});
        }
      }
    }
  }
  return out;
}

std::string renderDocsDiff(const Engine& engine, const std::vector<DocsDiff>& diffs) {
  std::string out = fmt::format("## {} ({}): document cells the code does not follow\n\n", engine.policy.display_name,
                                engine.policy.version);
  out += "| Table | Row | Column | Document | Code | Decided by |\n|---|---|---|---|---|---|\n";
  for (const auto& d : diffs) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", d.table, d.row, d.column, d.doc, d.code, d.decision);
  }
  return out + "\n";
}

std::string renderSupportTables(const Engine& engine) {
  const EnginePolicy& p = engine.policy;
  std::string out = fmt::format("## {} ({})\n\n", p.display_name, p.version);
  out += fmt::format("Generated by `attnsim docs --engine {}` from the catalog's descriptors. Source: {}\n\n", p.engine,
                     p.source);
  for (const auto& table : p.docs_tables) {
    out += "### " + table.title + "\n\n|";
    std::string rule = "|";
    for (const auto& c : table.columns) {
      out += " " + c.header + " |";
      rule += "---|";
    }
    out += "\n" + rule + "\n";
    for (const auto& row_ref : table.rows) {
      const DocsRow row = resolveDocsRow(engine, row_ref);
      out += "|";
      for (const auto& c : table.columns) out += " " + cell(row, c.field) + " |";
      out += "\n";
    }
    out += "\n";
  }
  for (const auto& pt : p.priority_tables) {
    out += "### Priority: " + pt.title + "\n\n| Priority | Backend |\n|---|---|\n";
    const PriorityList* list = p.list(pt.list);
    for (std::size_t i = 0; i < list->order.size(); ++i) out += fmt::format("| {} | {} |\n", i + 1, list->order[i]);
    out += "\n";
  }
  return out;
}

}  // namespace attnsim
