#include "tests/TestSupport.hpp"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>

#include "cli/Commands.hpp"

namespace attnsim::test {

const Catalog& defaultCatalog() {
  static const Catalog catalog = Catalog::loadDefault();
  return catalog;
}

OverlayDir::OverlayDir() {
  std::random_device rd;
  dir_ = std::filesystem::temp_directory_path() / ("attnsim-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(dir_);
}

OverlayDir::~OverlayDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

const std::filesystem::path& suiteScratchDir(const std::string& suite) {
  // Each folder is removed by its entry's destructor when the program exits.
  struct Folder {
    std::filesystem::path path;
    explicit Folder(std::filesystem::path p) : path(std::move(p)) {
      std::filesystem::remove_all(path);
      std::filesystem::create_directories(path);
    }
    ~Folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    Folder(const Folder&) = delete;
    Folder& operator=(const Folder&) = delete;
  };
  static std::map<std::string, std::unique_ptr<Folder>> folders;
  auto& folder = folders[suite];
  if (!folder) {
    folder = std::make_unique<Folder>(std::filesystem::temp_directory_path() /
                                      ("attnsim-" + suite + "-" + std::to_string(::getpid())));
  }
  return folder->path;
}

void OverlayDir::write(const std::string& relative_path, const std::string& content) const {
  const auto p = dir_ / relative_path;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

Catalog OverlayDir::load() const {
  CatalogSource source = CatalogSource::embedded();
  source.overlayDirectory(dir_);
  return Catalog::load(source);
}

Catalog catalogWithModelVariant(const std::string& base, const std::string& id,
                                const std::vector<std::pair<std::string, std::string>>& edits,
                                const std::string& append) {
  std::string yaml = embeddedFile("model/configs/" + base + ".yaml");
  auto replace = [&yaml](const std::string& from, const std::string& to) {
    const auto at = yaml.find(from);
    if (at == std::string::npos) throw std::runtime_error("catalogWithModelVariant: '" + from + "' not found");
    yaml.replace(at, from.size(), to);
  };
  replace("id: " + base, "id: " + id);
  for (const auto& [from, to] : edits) replace(from, to);
  OverlayDir overlay;
  overlay.write("model/configs/" + id + ".yaml", yaml + append);
  return overlay.load();
}

std::string embeddedFile(const std::string& relative_path) {
  for (const auto& f : embeddedCatalogFiles()) {
    if (f.path == relative_path) return std::string(f.content);
  }
  throw std::runtime_error("no embedded file " + relative_path);
}

std::string normalizeCell(const std::string& cell) {
  std::string out;
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (cell.compare(i, 2, "**") == 0) {
      ++i;
      continue;
    }
    if (cell[i] != ' ' && cell[i] != '\t') out += cell[i];
  }
  return out;
}

MarkdownTables parseMarkdownTables(const std::string& text) {
  MarkdownTables tables;
  std::istringstream in(text);
  std::string line;
  std::string title;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      title = line.substr(4);
      continue;
    }
    if (line.empty() || line[0] != '|') continue;
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    const bool rule = std::all_of(cells.begin(), cells.end(), [](const std::string& c) {
      return normalizeCell(c).find_first_not_of("-:") == std::string::npos;
    });
    if (!rule) tables[title].push_back(cells);
  }
  return tables;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void runSql(const std::filesystem::path& db, const std::string& text) {
  sqlite3* h = nullptr;
  const int opened = sqlite3_open(db.string().c_str(), &h);
  char* error = nullptr;
  const int ran = opened == SQLITE_OK ? sqlite3_exec(h, text.c_str(), nullptr, nullptr, &error) : opened;
  const std::string message = error ? error : (h ? sqlite3_errmsg(h) : "out of memory");
  sqlite3_free(error);
  sqlite3_close(h);
  if (ran != SQLITE_OK) throw std::runtime_error(db.string() + ": " + message);
}

ArrivalSpec exponentialLoad(double rate, std::int64_t requests) {
  ArrivalSpec a;
  a.rate = rate;
  a.requests = requests;
  a.lengths = "exponential";
  a.prompt_tokens = 512;
  a.output_tokens = 64;
  return a;
}

AttentionShape headsShape(int heads, int kv_heads, int d) {
  AttentionShape s;
  s.num_heads = heads;
  s.num_kv_heads = kv_heads;
  s.d_qk = d;
  s.d_v = d;
  s.kv_token_width = 2 * d;
  return s;
}

Scenario engineScenario(const std::string& engine, const std::string& hardware, const std::string& model) {
  Scenario s;
  s.engine = engine;
  s.hardware = hardware;
  s.model = model;
  return s;
}

Selection selectionOf(const Scenario& s) { return selectBackends(defaultCatalog(), s).selection; }

std::string nameOf(const std::optional<BackendChoice>& c) { return c ? c->name : ""; }

std::string refusalOf(const Selection& s) { return s.refusal.value_or(""); }

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

bool anyReasonMentions(const Selection& s, const std::string& text) {
  for (const auto& [backend, reasons] : s.rejected) {
    if (mentions(reasons, text)) return true;
  }
  for (const auto& [backend, reasons] : s.considered) {
    if (mentions(reasons, text)) return true;
  }
  return false;
}

bool ranksBackend(const Scenario& s, const std::string& backend) {
  const Ranking r = rankBackends(defaultCatalog(), s, {s.engine});
  return std::any_of(r.ranked.begin(), r.ranked.end(), [&](const RankedBackend& b) { return b.backend == backend; });
}

CommandResult runShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

CommandResult runAttnsim(const std::string& arguments) {
  return runShell(std::string(ATTNSIM_BINARY) + " " + arguments);
}

namespace {

// Points file descriptor `fd` at `file` until the object goes away; both C stdio and iostreams are
// flushed first, so what was written before lands where it belonged.
class RedirectedDescriptor {
 public:
  RedirectedDescriptor(int fd, const std::filesystem::path& file) : fd_(fd) {
    std::fflush(nullptr);
    saved_ = ::dup(fd);
    FILE* target = std::fopen(file.c_str(), "wb");
    if (saved_ < 0 || target == nullptr) throw std::runtime_error("cannot redirect output to " + file.string());
    ::dup2(::fileno(target), fd);
    std::fclose(target);
  }
  ~RedirectedDescriptor() {
    std::fflush(nullptr);
    ::dup2(saved_, fd_);
    ::close(saved_);
  }
  RedirectedDescriptor(const RedirectedDescriptor&) = delete;
  RedirectedDescriptor& operator=(const RedirectedDescriptor&) = delete;

 private:
  int fd_;
  int saved_ = -1;
};

}  // namespace

InProcessResult runAttnsimInProcess(std::vector<std::string> arguments, const std::filesystem::path& scratch) {
  arguments.insert(arguments.begin(), "attnsim");
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (auto& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::filesystem::path out_file = scratch / "in-process-stdout.txt";
  const std::filesystem::path err_file = scratch / "in-process-stderr.txt";
  InProcessResult result;
  {
    const RedirectedDescriptor out(STDOUT_FILENO, out_file);
    const RedirectedDescriptor err(STDERR_FILENO, err_file);
    std::cout.flush();
    result.exit_code = cli::runProgram(static_cast<int>(arguments.size()), argv.data());
    std::cout.flush();
    std::cerr.flush();
  }
  result.out = readFile(out_file);
  result.err = readFile(err_file);
  std::filesystem::remove(out_file);
  std::filesystem::remove(err_file);
  return result;
}

}  // namespace attnsim::test
