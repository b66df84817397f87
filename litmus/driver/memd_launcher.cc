#include "litmus/driver/memd_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace pandora::litmus {

namespace fs = std::filesystem;

namespace {

pid_t spawn_daemon(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  std::string force = "PMEM_IS_PMEM_FORCE=1";  // outlives posix_spawn below
  env.push_back(force.data());
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Status LocalMemds::start() {
  const std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::string templ = base + "/pandora-litmus-XXXXXX";
  if (!mkdtemp(templ.data())) return Status(Errc::kIo, fmt::format("mkdtemp in {} failed", base));
  dir_ = templ;
  const std::string secret_path = dir_ + "/secret";
  std::ofstream(secret_path) << secret_ << "\n";
  chmod(secret_path.c_str(), 0600);
  for (size_t i = 0; i < options_.nodes; ++i) {
    const uint32_t id = static_cast<uint32_t>(i + 1);
    const std::string port_path = fmt::format("{}/port{}", dir_, id);
    const std::string log_path = fmt::format("{}/memd{}.log", dir_, id);
    const std::vector<std::string> argv = {options_.binary,
                                           "--pm-path",
                                           fmt::format("{}/node{}.pm", dir_, id),
                                           "--size",
                                           options_.size,
                                           "--log-size",
                                           options_.log_size,
                                           "--node-id",
                                           std::to_string(id),
                                           "--cluster-id",
                                           std::to_string(options_.cluster_id),
                                           "--secret-file",
                                           secret_path,
                                           "--listen",
                                           "127.0.0.1:0",
                                           "--port-file",
                                           port_path,
                                           // A driver that dies must not leave daemons behind.
                                           "--exit-with-pid",
                                           std::to_string(::getpid())};
    const pid_t pid = spawn_daemon(argv, log_path);
    if (pid <= 0) return Status(Errc::kIo, fmt::format("cannot start {}", options_.binary));
    pids_.push_back(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    uint16_t port = 0;
    while (port == 0) {
      const std::string text = read_file(port_path);
      if (!text.empty() && text.back() == '\n') port = static_cast<uint16_t>(std::stoul(text));
      if (port) break;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pids_.pop_back();
        return Status(Errc::kIo, fmt::format("pandora-memd {} exited at start: {}", id, read_file(log_path)));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Status(Errc::kTimeout, fmt::format("pandora-memd {} wrote no port file in 20 s", id));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    endpoints_.push_back(Endpoint{"127.0.0.1", port});
  }
  return Status();
}

LocalMemds::~LocalMemds() {
  for (pid_t pid : pids_) {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

}  // namespace pandora::litmus
