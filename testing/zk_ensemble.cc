#include "testing/zk_ensemble.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pandora::testing {

const char* zookeeper_script() { return PANDORA_ZOOKEEPER_SH; }

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

ZkEnsemble::ZkEnsemble(std::string dir, ZkEnsembleOptions options) : dir_(std::move(dir)), options_(options) {}

ZkEnsemble::~ZkEnsemble() { (void)stop(); }

Status ZkEnsemble::run_script(const std::vector<std::string>& args, int timeout_s, std::string* output) const {
  // Everything the child needs is built before fork (only async-signal-safe
  // calls between fork and execv).
  std::vector<std::string> strings = {"bash", zookeeper_script()};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string command = fmt::format("bash {} {}", zookeeper_script(), fmt::join(args, " "));

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status(Errc::kIo, fmt::format("pipe: {}", std::strerror(errno)));
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status(Errc::kIo, fmt::format("open /dev/null: {}", std::strerror(errno)));
  }
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    close(devnull);
    return Status(Errc::kIo, fmt::format("fork: {}", std::strerror(err)));
  }
  if (pid == 0) {
    dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execv("/bin/bash", argv.data());
    _exit(127);
  }
  close(fds[1]);
  close(devnull);

  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // timeout: loop checks the deadline
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the script is done (the servers write to their logs)
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);  // our own child, by pid
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (output != nullptr) *output = out;
  if (timed_out) {
    return Status(Errc::kTimeout,
                  fmt::format("'{}' did not finish within {} s; its output:\n{}", command, timeout_s, out));
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return Status(Errc::kIo, fmt::format("'{}' failed (exit {}); its output:\n{}", command, code, out));
  }
  return Status::ok();
}

Status ZkEnsemble::start() {
  if (started_) return Status(Errc::kInvalidArgument, fmt::format("ZooKeeper ensemble in {} already started", dir_));
  if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status(Errc::kIo, fmt::format("mkdir {}: {}", dir_, std::strerror(errno)));
  }
  auto t0 = std::chrono::steady_clock::now();
  // From here on stop() has something to clean up, even if start fails
  // half-way (the script stops what it started, but a timeout kill does not).
  started_ = true;
  std::vector<std::string> args = {"start", "--dir", dir_, "--servers", std::to_string(options_.servers), "--tick-ms",
                                   std::to_string(options_.tick_ms), "--wait-s", std::to_string(options_.wait_s),
                                   "--exit-with-pid", std::to_string(getpid())};
  if (!options_.fsync) args.push_back("--no-fsync");
  if (options_.sync_ms > 0) {
    args.push_back("--sync-ms");
    args.push_back(std::to_string(options_.sync_ms));
  }
  Status s = run_script(args, options_.wait_s + 60, nullptr);
  start_duration_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (!s) {
    (void)stop();
    return s;
  }
  hosts_ = trim(read_file(dir_ + "/zk_connect"));
  if (hosts_.empty()) {
    (void)stop();
    return Status(Errc::kIo, fmt::format("ZooKeeper ensemble in {}: no zk_connect file after start", dir_));
  }
  return Status::ok();
}

Status ZkEnsemble::kill_server(int i) {
  if (i < 1 || i > options_.servers) {
    return Status(Errc::kInvalidArgument, fmt::format("no ZooKeeper server {} (1..{})", i, options_.servers));
  }
  return run_script({"kill", "--dir", dir_, "--server", std::to_string(i)}, 30, nullptr);
}

Status ZkEnsemble::restart_server(int i) {
  if (i < 1 || i > options_.servers) {
    return Status(Errc::kInvalidArgument, fmt::format("no ZooKeeper server {} (1..{})", i, options_.servers));
  }
  return run_script({"restart", "--dir", dir_, "--server", std::to_string(i)}, 30, nullptr);
}

Status ZkEnsemble::stop() {
  if (!started_) return Status::ok();
  Status s = run_script({"stop", "--dir", dir_}, 90, nullptr);
  if (s) {
    started_ = false;
    hosts_.clear();
  }
  return s;
}

int ZkEnsemble::server_pid(int i) const {
  std::string text = trim(read_file(fmt::format("{}/zk{}.pid", dir_, i)));
  if (text.empty()) return -1;
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    return -1;
  }
}

std::string ZkEnsemble::server_log(int i) const { return read_file(fmt::format("{}/zk{}.log", dir_, i)); }

}  // namespace pandora::testing
