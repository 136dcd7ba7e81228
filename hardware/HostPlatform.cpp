#include "hardware/HostPlatform.hpp"

#include <fmt/format.h>

#include <array>

namespace attnsim {

namespace {

struct Field {
  const char* key;
  double max;
  double LaunchOverheads::*value;
  std::optional<double> OverheadOverrides::*own;
};

constexpr std::array<Field, 5> kFields{{
    {"kernel_launch_us", 1000, &LaunchOverheads::kernel_launch_us, &OverheadOverrides::kernel_launch_us},
    {"eager_gap_us", 100, &LaunchOverheads::eager_gap_us, &OverheadOverrides::eager_gap_us},
    {"graph_replay_base_us", 10000, &LaunchOverheads::graph_replay_base_us, &OverheadOverrides::graph_replay_base_us},
    {"graph_replay_per_node_us", 100, &LaunchOverheads::graph_replay_per_node_us,
     &OverheadOverrides::graph_replay_per_node_us},
    {"graph_capture_ms_per_size", 100000, &LaunchOverheads::graph_capture_ms_per_size,
     &OverheadOverrides::graph_capture_ms_per_size},
}};

}  // namespace

// Every figure comes as {value, source}: a platform default nobody can trace is not allowed.
HostPlatform parseHostPlatform(const YamlReader& r) {
  HostPlatform p;
  p.id = r.get<std::string>("id");
  p.name = r.get<std::string>("name");
  const YamlReader figures = r.map("overheads");
  std::string source;
  for (const Field& f : kFields) {
    const YamlReader figure = figures.map(f.key);
    p.overheads.*f.value = figure.getNumber("value", 0, f.max);
    source += fmt::format("{}{} = {} ({})", source.empty() ? "" : "; ", f.key, p.overheads.*f.value,
                          figure.get<std::string>("source"));
    figure.finish();
  }
  const YamlReader graphs = r.map("graphs");
  p.overheads.graphs = graphs.get<bool>("supported");
  source += fmt::format("; graphs {} ({})", p.overheads.graphs ? "supported" : "not supported",
                        graphs.get<std::string>("source"));
  graphs.finish();
  p.overheads.source = fmt::format("platform {}: {}", p.id, source);
  figures.finish();
  r.finish();
  return p;
}

OverheadOverrides parseOverheadOverrides(const YamlReader& r) {
  OverheadOverrides o;
  bool any = false;
  for (const Field& f : kFields) {
    o.*f.own = r.findNumber(f.key, 0, f.max);
    any = any || (o.*f.own).has_value();
  }
  if (!any) r.fail("overheads", "give at least one figure to override, or leave 'overheads' out");
  o.source = r.get<std::string>("source");
  r.finish();
  return o;
}

LaunchOverheads resolveOverheads(const HostPlatform& platform, const OverheadOverrides& own) {
  LaunchOverheads out = platform.overheads;
  std::string mine;
  for (const Field& f : kFields) {
    if (!(own.*f.own)) continue;
    out.*f.value = *(own.*f.own);
    mine += fmt::format("{}{}", mine.empty() ? "" : ", ", f.key);
  }
  if (!mine.empty()) out.source = fmt::format("profile: {} ({}); other figures {}", mine, own.source, out.source);
  return out;
}

}  // namespace attnsim
