#include "tests/support/memd_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace pandora::testing {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const char* memd_binary() { return PANDORA_MEMD_PATH; }

namespace {

std::string base_temp_dir() {
  // /dev/shm keeps regions in memory (as ARCHITECTURE.md 2b prescribes for
  // machines without PM); fall back to TMPDIR or /tmp.
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0) return "/dev/shm";
  if (const char* t = std::getenv("TMPDIR"); t && *t) return t;
  return "/tmp";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Waits for `pid` to exit within `deadline`; returns the decoded status or
// -1 if still running.
int wait_with_deadline(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return decode_wait_status(status);
    if (r < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Spawns argv with stdout/stderr redirected to `out_path` and the extra
// environment variable `env_kv` set.
pid_t spawn(const std::vector<std::string>& argv, const std::string& out_path, bool append, const char* env_kv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  if (env_kv) env.push_back(const_cast<char*>(env_kv));
  env.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), flags, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

}  // namespace

TempDir::TempDir() {
  std::string templ = base_temp_dir() + "/pandora-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error(fmt::format("mkdtemp({}) failed: {}", templ, std::strerror(errno)));
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

MemdProcess::MemdProcess(std::string dir, MemdOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {
  region_path_ = fmt::format("{}/node{}.pm", dir_, options_.node_id);
  secret_path_ = fmt::format("{}/secret{}", dir_, options_.node_id);
  port_path_ = fmt::format("{}/port{}", dir_, options_.node_id);
  stderr_path_ = fmt::format("{}/memd{}.log", dir_, options_.node_id);
  std::ofstream(secret_path_) << options_.secret << "\n";
  chmod(secret_path_.c_str(), 0600);
}

MemdProcess::~MemdProcess() {
  if (pid_ > 0) {
    // A test that fails mid-way may leave the daemon stopped (SIGSTOP).
    kill(pid_, SIGCONT);
    kill9();
  }
}

std::vector<std::string> MemdProcess::argv() const {
  std::vector<std::string> a = {
      memd_binary(),
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
  // A test binary that dies (an ASan abort) must not leave daemons behind.
  if (std::find(options_.extra_args.begin(), options_.extra_args.end(), "--exit-with-pid") ==
      options_.extra_args.end()) {
    a.insert(a.end(), {"--exit-with-pid", std::to_string(::getpid())});
  }
  a.insert(a.end(), options_.extra_args.begin(), options_.extra_args.end());
  return a;
}

bool MemdProcess::start() {
  if (pid_ > 0) {
    error_ = "already running";
    return false;
  }
  error_.clear();
  std::error_code ec;
  fs::remove(port_path_, ec);
  pid_ = spawn(argv(), stderr_path_, /*append=*/true, "PMEM_IS_PMEM_FORCE=1");
  if (pid_ <= 0) {
    error_ = fmt::format("cannot spawn {}: {}", memd_binary(), std::strerror(errno));
    pid_ = -1;
    return false;
  }
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  for (;;) {
    if (fs::exists(port_path_, ec)) {
      std::string text = read_file(port_path_);
      unsigned long p = std::strtoul(text.c_str(), nullptr, 10);
      if (p > 0 && p < 65536) {
        port_ = static_cast<uint16_t>(p);
        return true;
      }
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      error_ = fmt::format("pandora-memd exited with {} before becoming ready; log:\n{}",
                           decode_wait_status(status), stderr_text());
      pid_ = -1;
      return false;
    }
    if (Clock::now() >= deadline) {
      error_ = fmt::format("pandora-memd not ready after 20 s; log:\n{}", stderr_text());
      kill9();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int MemdProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGCONT);
  kill(pid_, SIGTERM);
  int rc = wait_with_deadline(pid_, Clock::now() + std::chrono::seconds(20));
  if (rc < 0) {
    error_ = "pandora-memd did not exit within 20 s of SIGTERM; killed";
    kill9();
    return -1;
  }
  pid_ = -1;
  return rc;
}

int MemdProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const int rc = wait_with_deadline(pid_, Clock::now() + timeout);
  if (rc >= 0) pid_ = -1;
  return rc;
}

void MemdProcess::kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

bool MemdProcess::restart() {
  kill9();
  return start();
}

std::string MemdProcess::stderr_text() const { return read_file(stderr_path_); }

ClientIdentity MemdProcess::identity(uint16_t compute_id) const {
  ClientIdentity id;
  id.cluster_id = options_.cluster_id;
  id.secret = options_.secret;
  id.role = compute_id == 0 ? wire::Role::kAdmin : wire::Role::kCompute;
  id.compute_id = compute_id;
  return id;
}

int run_command(const std::vector<std::string>& argv, std::string* output, int timeout_seconds) {
  char templ[] = "/tmp/pandora-cmd-XXXXXX";
  int fd = mkstemp(templ);
  if (fd < 0) return -1;
  close(fd);
  std::string out_path = templ;
  pid_t pid = spawn(argv, out_path, /*append=*/false, "PMEM_IS_PMEM_FORCE=1");
  if (pid <= 0) {
    unlink(out_path.c_str());
    return -1;
  }
  int rc = wait_with_deadline(pid, Clock::now() + std::chrono::seconds(timeout_seconds));
  if (rc < 0) {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  if (output) *output = read_file(out_path);
  unlink(out_path.c_str());
  return rc;
}

}  // namespace pandora::testing
