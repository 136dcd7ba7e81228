#pragma once
// Helpers shared by the test suites: the default catalog, catalog overlays in a temporary
// folder, Markdown table parsing and running the attnsim program.
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "catalog/Catalog.hpp"
#include "cost/AttentionCost.hpp"
#include "simulator/Evaluation.hpp"
#include "simulator/Traces.hpp"

namespace attnsim::test {

const Catalog& defaultCatalog();

// A temporary catalog overlay folder, removed when the object goes away.
class OverlayDir {
 public:
  OverlayDir();
  ~OverlayDir();
  OverlayDir(const OverlayDir&) = delete;
  OverlayDir& operator=(const OverlayDir&) = delete;
  void write(const std::string& relative_path, const std::string& content) const;
  [[nodiscard]] const std::filesystem::path& path() const { return dir_; }
  // Loads the embedded catalog with this overlay.
  [[nodiscard]] Catalog load() const;

 private:
  std::filesystem::path dir_;
};

// A folder for one suite's files ("attnsim-<suite>-<pid>" under the temporary directory), made empty on
// first use and removed when the test program exits.
const std::filesystem::path& suiteScratchDir(const std::string& suite);

// The embedded text of one catalog file.
std::string embeddedFile(const std::string& relative_path);

// The embedded catalog with one more model, for a case no shipped model reaches: catalog model `base`'s
// YAML under the id `id`, each {from, to} replaced once (it must occur), then `append` added at the end.
Catalog catalogWithModelVariant(const std::string& base, const std::string& id,
                                const std::vector<std::pair<std::string, std::string>>& edits,
                                const std::string& append = "");

// Markdown pipe tables under "### title" headings: title -> rows of cells (header row first).
using MarkdownTables = std::map<std::string, std::vector<std::vector<std::string>>>;
MarkdownTables parseMarkdownTables(const std::string& text);
// Cells compare equal when they differ only in whitespace and bold markers.
std::string normalizeCell(const std::string& cell);
std::string readFile(const std::filesystem::path& p);
// Runs SQL on the SQLite file `db` (a test's edit of a store); a failure throws with SQLite's message.
void runSql(const std::filesystem::path& db, const std::string& text);

// An attention layer of `heads` query and `kv_heads` K/V heads of head dim d, K and V both cached.
AttentionShape headsShape(int heads, int kv_heads, int d);

// The serve-sim laws' load: `requests` requests at `rate` per second (infinity: all at once), exponential
// lengths around 512-token prompts and 64-token outputs.
ArrivalSpec exponentialLoad(double rate, std::int64_t requests);

// A scenario of one engine on one hardware profile and catalog model, and its selection.
Scenario engineScenario(const std::string& engine, const std::string& hardware, const std::string& model);
Selection selectionOf(const Scenario& s);
// A stage's backend name; "" when the engine refused.
std::string nameOf(const std::optional<BackendChoice>& c);
std::string refusalOf(const Selection& s);
// Whether any line contains `text`.
bool mentions(const std::vector<std::string>& lines, const std::string& text);
// Whether a rejected or a passed-over backend's reasons mention `text`.
bool anyReasonMentions(const Selection& s, const std::string& text);
// Whether `rank` lists `backend` of the scenario's engine as valid.
bool ranksBackend(const Scenario& s, const std::string& backend);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// A shell command line's exit code and output (stdout and stderr together).
CommandResult runShell(const std::string& command);
// The attnsim program under test with these arguments.
CommandResult runAttnsim(const std::string& arguments);

struct InProcessResult {
  int exit_code = -1;
  std::string out, err;  // what the program wrote to stdout and to stderr
};
// The program's entry point (cli::runProgram) called in this process with these arguments (argv[0] is
// added), its stdout and stderr captured apart at the file-descriptor level. The embedded catalog is
// parsed once per process, so a suite of hundreds of command lines pays for it once instead of once
// per spawned program (about 0.3 s of CPU each under ASan).
InProcessResult runAttnsimInProcess(std::vector<std::string> arguments, const std::filesystem::path& scratch);

}  // namespace attnsim::test
