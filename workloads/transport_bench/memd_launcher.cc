#include "workloads/transport_bench/memd_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace pandora {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Secret: 32 random bytes, hex-encoded (readable in a file, no newline).
Result<std::string> random_secret() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::array<unsigned char, 32> bytes{};
  if (!in.read(reinterpret_cast<char*>(bytes.data()), bytes.size()))
    return Status(Errc::kIo, "cannot read /dev/urandom for the benchmark secret");
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

Status write_private_file(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status(Errc::kIo, fmt::format("cannot create {}: {}", path, errno_text()));
  const ssize_t n = ::write(fd, content.data(), content.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(content.size()))
    return Status(Errc::kIo, fmt::format("cannot write {}", path));
  return Status::ok();
}

// Waits up to `deadline` for `pid` to exit; true (and *status filled) if it did.
bool wait_exit(pid_t pid, std::chrono::steady_clock::time_point deadline, int* status) {
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

MemdLauncher::~MemdLauncher() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

ClientIdentity MemdLauncher::identity(uint16_t compute_id) const {
  ClientIdentity id;
  id.cluster_id = options_.cluster_id;
  id.secret = secret_;
  id.role = compute_id == 0 ? wire::Role::kAdmin : wire::Role::kCompute;
  id.compute_id = compute_id;
  return id;
}

std::string MemdLauncher::log_tail() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
  return text;
}

Status MemdLauncher::start() {
  if (pid_ > 0) return Status(Errc::kInvalidArgument, "daemon already started");
  if (::access(options_.binary.c_str(), X_OK) != 0)
    return Status(Errc::kInvalidArgument, fmt::format("pandora-memd not executable at {}", options_.binary));

  // /dev/shm so the region is in memory (what PMEM_IS_PMEM_FORCE=1 assumes);
  // elsewhere the daemon would msync to disk and the numbers would be those
  // of the disk.
  std::string tmpl = std::filesystem::is_directory("/dev/shm") ? "/dev/shm/pandora-bench.XXXXXX"
                                                                : "/tmp/pandora-bench.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Status(Errc::kIo, fmt::format("mkdtemp {}: {}", tmpl, errno_text()));
  dir_ = tmpl;
  region_path_ = dir_ + "/region.pm";
  secret_path_ = dir_ + "/secret";
  port_path_ = dir_ + "/port";
  log_path_ = dir_ + "/memd.log";

  auto secret = random_secret();
  if (!secret) return secret.status();
  secret_ = *secret;
  if (Status s = write_private_file(secret_path_, secret_); !s) return s;

  std::vector<std::string> args = {
      options_.binary,
      "--pm-path", region_path_,
      "--size", options_.size,
      "--log-size", options_.log_size,
      "--node-id", std::to_string(options_.node_id),
      "--listen", "127.0.0.1:0",
      "--port-file", port_path_,
      "--cluster-id", std::to_string(options_.cluster_id),
      "--secret-file", secret_path_,
      "--threads", std::to_string(options_.threads),
      "--log-level", options_.log_level,
      // A benchmark that dies must not leave its daemon behind.
      "--exit-with-pid", std::to_string(::getpid()),
  };
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  // Everything the child needs is built before fork(): between fork and exec
  // only async-signal-safe calls are allowed.
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PMEM_IS_PMEM_FORCE=", 19) != 0) env_store.emplace_back(*e);
  }
  env_store.emplace_back("PMEM_IS_PMEM_FORCE=1");
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) return Status(Errc::kIo, fmt::format("cannot create {}: {}", log_path_, errno_text()));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return Status(Errc::kIo, fmt::format("fork: {}", errno_text()));
  }
  if (pid == 0) {
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  pid_ = pid;

  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status(Errc::kIo, fmt::format("pandora-memd exited during start-up (status {}); log:\n{}",
                                           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                                           log_tail()));
    }
    std::ifstream in(port_path_);
    unsigned long port = 0;
    // The daemon writes the port file atomically (rename) or we may see it
    // half-written; only a complete number in range counts.
    if (in >> port && port > 0 && port < 65536) {
      port_ = static_cast<uint16_t>(port);
      return Status::ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      stop();
      return Status(Errc::kTimeout,
                    fmt::format("pandora-memd did not publish its port within {} s; log:\n{}",
                                options_.start_timeout.count(), log_tail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int MemdLauncher::stop() {
  if (pid_ <= 0) return -1;
  int status = 0;
  ::kill(pid_, SIGTERM);
  if (!wait_exit(pid_, std::chrono::steady_clock::now() + std::chrono::seconds(10), &status)) {
    ::kill(pid_, SIGKILL);
    wait_exit(pid_, std::chrono::steady_clock::now() + std::chrono::seconds(10), &status);
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace pandora
