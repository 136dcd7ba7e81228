#include "study/CalibrationMerge.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <sstream>
#include <vector>

#include "core/Error.hpp"
#include "core/Strings.hpp"

namespace attnsim {

namespace {

using Entries = std::map<std::string, std::map<std::string, std::string>>;  // family -> phase -> flow text

std::string flow(const YAML::Node& node) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << node;
  return e.c_str();
}

// calibrationYaml's own layout: the header (with any overheads line) up to "kernels:", then
// "  family:" lines, each followed by "    phase: {...}" lines.
void splitFresh(std::string fresh, std::string& header, Entries& entries, std::string& surfaces) {
  if (const auto at = fresh.find("\nsurfaces:\n"); at != std::string::npos) {
    surfaces = fresh.substr(at + 1);
    fresh.resize(at + 1);
  }
  if (const auto none = fresh.find("\nkernels: {}\n"); none != std::string::npos) {  // operator fits only
    header = fresh.substr(0, none + 1);
    return;
  }
  const auto at = fresh.find("\nkernels:\n");
  if (at == std::string::npos) throw InputError("calibration export: no kernels section in the fitted text");
  header = fresh.substr(0, at + 1);
  std::istringstream lines(fresh.substr(at + 10));
  std::string line, family;
  while (std::getline(lines, line)) {
    if (line.starts_with("    ")) {
      const auto colon = line.find(':');
      entries[family][line.substr(4, colon - 4)] = line.substr(colon + 2);
    } else if (line.starts_with("  ")) {
      family = line.substr(2, line.size() - 3);
    }
  }
}

// The catalog's entries, each carrying its provenance: its own source, else the file's.
Entries existingEntries(const YAML::Node& doc) {
  Entries out;
  const std::string file_source = doc["source"] ? doc["source"].as<std::string>() : std::string{};
  for (const auto& family : doc["kernels"]) {
    for (const auto& phase : family.second) {
      YAML::Node entry = YAML::Clone(phase.second);
      if (!entry["source"]) entry["source"] = file_source;
      out[family.first.as<std::string>()][phase.first.as<std::string>()] = flow(entry);
    }
  }
  return out;
}

// The catalog's operator entries (gemm dtypes, allreduce engines) the fresh fit has none of, kept with
// their source: appended to the fresh section of that name, or as the section when it has none.
void keepOperatorEntries(const YAML::Node& doc, std::string& header, CalibrationMerge& m) {
  const YAML::Node fresh = YAML::Load(header);
  const std::string file_source = doc["source"] ? doc["source"].as<std::string>() : std::string{};
  for (const std::string section : {"gemm", "allreduce", "moe"}) {
    if (!doc[section] || !doc[section].IsMap()) continue;
    std::string lines;
    std::vector<std::string> names;
    for (const auto& entry : doc[section]) {
      const auto key = entry.first.as<std::string>();
      if (fresh[section] && fresh[section][key]) continue;
      YAML::Node kept = YAML::Clone(entry.second);
      if (section != "moe" && !kept["source"]) kept["source"] = file_source;
      if (section == "moe") {  // engine -> dtype -> fit: each fit keeps its source
        for (auto fit : kept) {
          if (!fit.second["source"]) fit.second["source"] = file_source;
        }
      }
      lines.append("  ").append(key).append(": ").append(flow(kept)).append("\n");
      names.push_back(key);
    }
    if (names.empty()) continue;
    m.kept.push_back(fmt::format("{} ({})", section, join(names, ", ")));
    const auto at = header.find("\n" + section + ":\n");
    if (at == std::string::npos) {
      header.append(section).append(":\n").append(lines);
      continue;
    }
    // The section ends at the next line that does not start with a space.
    std::size_t end = header.find('\n', at + 1);
    while (end != std::string::npos && end + 1 < header.size() && header[end + 1] == ' ')
      end = header.find('\n', end + 1);
    header.insert(end == std::string::npos ? header.size() : end + 1, lines);
  }
}

using Surfaces = std::map<std::pair<std::string, std::string>, std::vector<std::string>>;  // (family, phase) -> slices

Surfaces surfaceEntries(const YAML::Node& doc) {
  Surfaces out;
  if (!doc.IsMap() || !doc["surfaces"]) return out;
  for (const auto& family : doc["surfaces"]) {
    for (const auto& phase : family.second) {
      auto& slices = out[{family.first.as<std::string>(), phase.first.as<std::string>()}];
      for (const auto& slice : phase.second["slices"]) slices.push_back(flow(slice));
    }
  }
  return out;
}

// A surface corrects the fit it was made with: the fresh fit's surfaces, and the catalog's for the
// entries kept from it. A replaced entry's old surface goes with it.
std::string mergedSurfaces(const std::string& fresh_text, const YAML::Node& doc, const Entries& fresh_entries) {
  Surfaces merged = fresh_text.empty() ? Surfaces{} : surfaceEntries(YAML::Load(fresh_text));
  for (auto& [key, slices] : surfaceEntries(doc)) {
    const auto family = fresh_entries.find(key.first);
    if (family != fresh_entries.end() && family->second.contains(key.second)) continue;
    merged.emplace(key, std::move(slices));
  }
  if (merged.empty()) return {};
  std::string out = "surfaces:\n";
  std::string family;
  for (const auto& [key, slices] : merged) {
    if (key.first != family) out.append("  ").append(key.first).append(":\n");
    family = key.first;
    out.append("    ").append(key.second).append(":\n      slices:\n");
    for (const auto& slice : slices) out.append("        - ").append(slice).append("\n");
  }
  return out;
}

}  // namespace

CalibrationMerge mergeCalibrationYaml(const std::string& fresh, const std::string& existing,
                                      const std::string& existing_display) {
  CalibrationMerge m;
  std::string header, fresh_surfaces;
  Entries entries;
  splitFresh(fresh, header, entries, fresh_surfaces);
  const Entries fresh_entries = entries;
  YAML::Node doc;
  try {
    doc = existing.empty() ? YAML::Node{} : YAML::Load(existing);
  } catch (const YAML::Exception& e) {
    throw InputError(existing_display + ": " + e.what());
  }
  const Entries old = doc.IsMap() ? existingEntries(doc) : Entries{};
  for (const auto& [family, phases] : entries) {
    const auto was = old.find(family);
    if (was == old.end()) {
      m.added.push_back(family);
      continue;
    }
    std::vector<std::string> names;
    for (const auto& [phase, text] : phases) names.push_back(phase);
    m.replaced.push_back(fmt::format("{} ({})", family, join(names, ", ")));
    for (const auto& [phase, text] : was->second) entries[family].emplace(phase, text);  // its other phases stay
  }
  for (const auto& [family, phases] : old) {
    if (entries.emplace(family, phases).second) m.kept.push_back(family);
  }
  if (header.find("\noverheads:") == std::string::npos && doc.IsMap() && doc["overheads"]) {
    YAML::Node overheads = YAML::Clone(doc["overheads"]);
    if (!overheads["source"]) overheads["source"] = doc["source"].as<std::string>("");
    header += "overheads: " + flow(overheads) + "\n";
  }
  if (doc.IsMap()) keepOperatorEntries(doc, header, m);
  m.text = header + (entries.empty() ? "kernels: {}\n" : "kernels:\n");
  for (const auto& [family, phases] : entries) {
    m.text.append("  ").append(family).append(":\n");
    for (const auto& [phase, text] : phases) m.text.append("    ").append(phase).append(": ").append(text).append("\n");
  }
  m.text += mergedSurfaces(fresh_surfaces, doc, fresh_entries);
  return m;
}

}  // namespace attnsim
