#pragma once
// The validated, immutable catalog: hardware profiles, models, kernel families, and per engine
// its policy and backends. Loaded from a CatalogSource (embedded default + optional overlay).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/Backend.hpp"
#include "backends/EnginePolicy.hpp"
#include "backends/KernelFamily.hpp"
#include "catalog/CatalogSource.hpp"
#include "hardware/HardwareProfile.hpp"
#include "model/ModelSpec.hpp"

namespace attnsim {

struct Engine {
  EnginePolicy policy;
  std::vector<Backend> backends;
};

class Catalog {
 public:
  static Catalog load(const CatalogSource& source);
  static Catalog loadDefault() { return load(CatalogSource::embedded()); }
  // The embedded catalog, parsed and validated once per process on first use (thread-safe) and
  // shared, immutable, by every later caller: the CLI's commands, the command-line fuzzer's
  // inputs, the Python module. A --catalog overlay is still loaded by each load().
  static std::shared_ptr<const Catalog> embedded();
  // How many catalogs this process has parsed from their files so far (each load(), the
  // embedded one at most once through embedded()).
  static std::int64_t loadCount();

  // Lookups by id; an unknown id is a UsageError listing the valid ids.
  [[nodiscard]] const HardwareProfile& hardware(std::string_view id) const;
  [[nodiscard]] const ModelSpec& model(std::string_view id) const;
  [[nodiscard]] const KernelFamily& kernel(std::string_view id) const;
  [[nodiscard]] const Engine& engine(std::string_view id) const;
  [[nodiscard]] const KernelFamily* findKernel(std::string_view id) const;

  [[nodiscard]] const std::vector<HardwareProfile>& hardwareProfiles() const { return hardware_; }
  [[nodiscard]] const std::vector<HostPlatform>& platforms() const { return platforms_; }
  [[nodiscard]] const std::vector<ModelSpec>& models() const { return models_; }
  [[nodiscard]] const std::vector<KernelFamily>& kernels() const { return kernels_; }
  [[nodiscard]] const std::vector<Engine>& engines() const { return engines_; }
  [[nodiscard]] const std::string& contentHash() const { return hash_; }
  // A fitted efficiency of a kernel family on a device for a phase class (prefill, extend, decode)
  // takes over the catalog's; ignored for hardware or kernels this catalog lacks.
  void applyCalibration(std::string_view hardware, const std::string& kernel, const std::string& phase_class,
                        const KernelEfficiency& efficiency);

 private:
  std::vector<HardwareProfile> hardware_;
  std::vector<HostPlatform> platforms_;
  std::vector<ModelSpec> models_;
  std::vector<KernelFamily> kernels_;
  std::vector<Engine> engines_;
  std::string hash_;
};

// Descriptors of one backend name in an engine (SGLang has one per attention kind, e.g. flashinfer MHA and MLA).
std::vector<const Backend*> findBackends(const Engine& engine, std::string_view name);
// Unique backend names of an engine, in file order.
std::vector<std::string> backendNames(const Engine& engine);

// A row reference in a docs table: NAME, NAME@VARIANT, NAME/KIND or NAME/KIND@VARIANT.
struct DocsRow {
  const Backend* backend = nullptr;
  const BackendCaps* caps = nullptr;
  std::string variant;
};
// Resolves a row reference; throws InputError naming the engine and row when it does not exist.
DocsRow resolveDocsRow(const Engine& engine, const std::string& row);

}  // namespace attnsim
