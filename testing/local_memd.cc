#include "testing/local_memd.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace pandora {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// What start() quotes of the daemon's log on failure: enough for the usage
// or region error it ends with, not a whole long-running log.
constexpr size_t kLogQuoteBytes = 8192;

std::string read_file(const std::string& path, uint64_t from = 0) {
  std::ifstream in(path, std::ios::binary);
  if (from > 0) in.seekg(static_cast<std::streamoff>(from));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t file_size(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

enum class Wait { kRunning, kExited, kGone };

// Polls (waitpid cannot wait with a timeout) until our child `pid` exits or
// `deadline` passes. kGone: it is not (or no longer) our child, e.g. reaped
// elsewhere; its pid may already belong to someone else.
Wait wait_until(pid_t pid, Clock::time_point deadline, int* code) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      *code = decode_wait_status(status);
      return Wait::kExited;
    }
    if (r < 0 && errno != EINTR) return Wait::kGone;
    if (Clock::now() >= deadline) return Wait::kRunning;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// 32 random bytes, hex-encoded: printable, so the secret file is readable
// by a human and by tools that strip the newline.
Result<std::string> random_secret() {
  std::array<unsigned char, 32> bytes{};
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(Errc::kIo, fmt::format("getrandom for the cluster secret: {}", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

// Writes `content` to `path` with mode 0600 (also when the file existed with
// a wider mode: O_CREAT's mode only applies to new files).
Status write_private_file(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status(Errc::kIo, fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  const bool ok = ::fchmod(fd, 0600) == 0 &&
                  ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  const int err = errno;
  ::close(fd);
  if (!ok) return Status(Errc::kIo, fmt::format("cannot write {}: {}", path, std::strerror(err)));
  return Status::ok();
}

// The port the daemon published, or 0 while there is none. The daemon
// writes "PORT\n" atomically (temporary file + rename); the complete-number
// check also keeps a half-written file from another writer from counting.
uint16_t read_port_file(const std::string& path) {
  const std::string text = read_file(path);
  if (text.empty() || text.size() > 8) return 0;
  char* end = nullptr;
  const unsigned long port = std::strtoul(text.c_str(), &end, 10);
  if (end == text.c_str() || (*end != '\0' && *end != '\n')) return 0;
  return port > 0 && port < 65536 ? static_cast<uint16_t>(port) : 0;
}

std::string quote_log(const std::string& text) {
  if (text.empty()) return "(the log is empty)";
  if (text.size() <= kLogQuoteBytes) return text;
  return "...\n" + text.substr(text.size() - kLogQuoteBytes);
}

}  // namespace

std::string local_temp_base() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return disk_temp_base();
}

std::string disk_temp_base() {
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') return t;
  return "/tmp";
}

// ---- TempDir ----

TempDir::TempDir(std::string_view prefix) {
  std::string templ = fmt::format("{}/{}-XXXXXX", local_temp_base(), prefix);
  if (::mkdtemp(templ.data()) == nullptr) {
    status_ = Status(Errc::kIo, fmt::format("cannot create a directory {}: {}", templ, std::strerror(errno)));
    return;
  }
  path_ = templ;
  owner_ = ::getpid();
}

TempDir::~TempDir() { remove(); }

TempDir::TempDir(TempDir&& other) noexcept
    : path_(std::move(other.path_)), status_(std::move(other.status_)), owner_(other.owner_) {
  other.path_.clear();
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    status_ = std::move(other.status_);
    owner_ = other.owner_;
    other.path_.clear();
  }
  return *this;
}

void TempDir::remove() {
  if (path_.empty() || owner_ != ::getpid()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  path_.clear();
}

// ---- LocalMemd ----

LocalMemd::LocalMemd(LocalMemdOptions options) : options_(std::move(options)) {
  own_dir_ = std::make_unique<TempDir>("pandora-memd");
  if (!own_dir_->ok()) {
    setup_ = own_dir_->status();
    return;
  }
  dir_ = own_dir_->path();
  init_files();
}

LocalMemd::LocalMemd(std::string dir, LocalMemdOptions options) : options_(std::move(options)), dir_(std::move(dir)) {
  init_files();
}

void LocalMemd::init_files() {
  region_path_ = fmt::format("{}/node{}.pm", dir_, options_.node_id);
  secret_path_ = fmt::format("{}/secret{}", dir_, options_.node_id);
  port_path_ = fmt::format("{}/port{}", dir_, options_.node_id);
  log_path_ = fmt::format("{}/memd{}.log", dir_, options_.node_id);
  if (options_.binary.empty()) {
    setup_ = Status(Errc::kInvalidArgument, "no pandora-memd binary given (LocalMemdOptions::binary)");
    return;
  }
  if (options_.secret.empty()) {
    auto secret = random_secret();
    if (!secret) {
      setup_ = secret.status();
      return;
    }
    options_.secret = std::move(*secret);
  }
  setup_ = write_private_file(secret_path_, options_.secret + "\n");
}

LocalMemd::~LocalMemd() {
  // Only the process that started the daemon may kill it (see the header).
  if (pid_ > 0 && owner_ == ::getpid()) kill9();
}

Status LocalMemd::fail(Errc code, std::string message) {
  error_ = message;
  return Status(code, std::move(message));
}

std::vector<std::string> LocalMemd::argv() const {
  std::vector<std::string> a = {
      options_.binary,
      "--pm-path", region_path_,
      "--size", options_.size,
      "--log-size", options_.log_size,
      "--node-id", std::to_string(options_.node_id),
      "--cluster-id", std::to_string(options_.cluster_id),
      "--secret-file", secret_path_,
      "--listen", "127.0.0.1:0",
      "--port-file", port_path_,
      "--threads", std::to_string(options_.threads),
  };
  if (!options_.log_level.empty()) a.insert(a.end(), {"--log-level", options_.log_level});
  // A harness that dies without unwinding must not leave the daemon behind.
  const auto& extra = options_.extra_args;
  if (std::find(extra.begin(), extra.end(), "--exit-with-pid") == extra.end()) {
    a.insert(a.end(), {"--exit-with-pid", std::to_string(::getpid())});
  }
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

Status LocalMemd::start() {
  if (!setup_) return fail(setup_.code(), setup_.message());
  if (pid_ > 0) return fail(Errc::kInvalidArgument, fmt::format("pandora-memd already running (pid {})", pid_));
  error_.clear();
  // A port file left by an earlier start would be taken for this one's.
  std::error_code ec;
  fs::remove(port_path_, ec);
  // The log is appended to across restarts; errors quote this start's part.
  const uint64_t log_from = file_size(log_path_);

  auto pid = spawn_with_output(argv(), log_path_, /*append=*/true);
  if (!pid) return fail(pid.status().code(), pid.status().message());
  pid_ = *pid;
  owner_ = ::getpid();

  const auto deadline = Clock::now() + options_.start_timeout;
  for (;;) {
    if (const uint16_t port = read_port_file(port_path_); port != 0) {
      port_ = port;
      return Status::ok();
    }
    int code = -1;
    const Wait w = wait_until(pid_, Clock::now(), &code);
    if (w != Wait::kRunning) {
      pid_ = -1;
      return fail(Errc::kIo, fmt::format("pandora-memd (node {}) exited with {} before publishing its port; log:\n{}",
                                         options_.node_id, code, quote_log(read_file(log_path_, log_from))));
    }
    if (Clock::now() >= deadline) {
      kill9();
      return fail(Errc::kTimeout,
                  fmt::format("pandora-memd (node {}) did not publish its port within {} ms; killed. Log:\n{}",
                              options_.node_id, options_.start_timeout.count(),
                              quote_log(read_file(log_path_, log_from))));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int LocalMemd::stop() {
  if (pid_ <= 0) return -1;
  // A stopped (SIGSTOP) daemon would not act on SIGTERM until continued.
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  int code = -1;
  switch (wait_until(pid_, Clock::now() + options_.stop_timeout, &code)) {
    case Wait::kExited:
      pid_ = -1;
      error_.clear();
      return code;
    case Wait::kGone:
      pid_ = -1;
      error_ = "pandora-memd was reaped elsewhere; its exit code is unknown";
      return -1;
    case Wait::kRunning:
      break;
  }
  error_ = fmt::format("pandora-memd did not exit within {} ms of SIGTERM; killed", options_.stop_timeout.count());
  kill9();
  return -1;
}

int LocalMemd::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  int code = -1;
  const Wait w = wait_until(pid_, Clock::now() + timeout, &code);
  if (w == Wait::kRunning) return -1;
  // kGone: never signal that pid again, it may be someone else's by now.
  pid_ = -1;
  return w == Wait::kExited ? code : -1;
}

void LocalMemd::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);  // also ends a stopped process
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

Status LocalMemd::restart() {
  kill9();
  return start();
}

ClientIdentity LocalMemd::identity(uint16_t compute_id) const {
  ClientIdentity id;
  id.cluster_id = options_.cluster_id;
  id.secret = options_.secret;
  id.role = compute_id == 0 ? wire::Role::kAdmin : wire::Role::kCompute;
  id.compute_id = compute_id;
  id.incarnation = compute_id == 0 ? 0 : incarnation_;
  return id;
}

std::string LocalMemd::log_text() const { return read_file(log_path_); }

// ---- LocalMemdCluster ----

LocalMemdCluster::LocalMemdCluster(size_t nodes, LocalMemdOptions options, std::string dir)
    : dir_(std::move(dir)), cluster_id_(options.cluster_id) {
  if (dir_.empty()) {
    own_dir_ = std::make_unique<TempDir>("pandora-memd");
    if (!own_dir_->ok()) {
      setup_ = own_dir_->status();
      return;
    }
    dir_ = own_dir_->path();
  }
  if (options.secret.empty()) {
    auto secret = random_secret();
    if (!secret) {
      setup_ = secret.status();
      return;
    }
    options.secret = std::move(*secret);
  }
  secret_ = options.secret;
  for (size_t i = 0; i < nodes; ++i) {
    options.node_id = static_cast<uint32_t>(i + 1);
    nodes_.push_back(std::make_unique<LocalMemd>(dir_, options));
  }
}

LocalMemdCluster::~LocalMemdCluster() = default;

Status LocalMemdCluster::start() {
  if (!setup_) return setup_;
  for (auto& n : nodes_) {
    if (n->running()) continue;
    if (Status s = n->start(); !s) {
      return Status(s.code(), fmt::format("memd {}: {}", n->options().node_id, s.message()));
    }
  }
  return Status::ok();
}

int LocalMemdCluster::stop() {
  int rc = 0;
  for (auto& n : nodes_) {
    if (!n->running()) continue;
    const int r = n->stop();
    if (rc == 0) rc = r;
  }
  return rc;
}

std::vector<Endpoint> LocalMemdCluster::endpoints() const {
  std::vector<Endpoint> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n->endpoint());
  return out;
}

// ---- helpers ----

Result<pid_t> spawn_with_output(const std::vector<std::string>& argv, const std::string& output_path, bool append) {
  if (argv.empty()) return Status(Errc::kInvalidArgument, "spawn: empty argv");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Our environment with PMEM_IS_PMEM_FORCE replaced (getenv would return
  // the first of two entries, so appending one is not enough).
  static constexpr std::string_view kForce = "PMEM_IS_PMEM_FORCE=";
  std::string force = std::string(kForce) + "1";
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, kForce.size()) != kForce) env.push_back(*e);
  }
  env.push_back(force.data());
  env.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, output_path.c_str(), flags, 0600);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  // posix_spawn (not fork+exec): no async-signal-safety pitfalls in a
  // multi-threaded harness, and a failed exec is reported here.
  const int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Status(Errc::kIo, fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  return pid;
}

int wait_child(pid_t pid, std::chrono::milliseconds timeout) {
  int code = -1;
  return wait_until(pid, Clock::now() + timeout, &code) == Wait::kExited ? code : -1;
}

}  // namespace pandora
