#include "tests/support/local_cluster.h"

#include "recovery/registry.h"
#include "common/udp_socket.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace pandora::testing {

namespace {

using Clock = std::chrono::steady_clock;

int code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

// ---- Child ----

Child::~Child() {
  if (!reaped_) kill9();
}

bool Child::running() {
  if (reaped_) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    exit_ = code_of(status);
    return false;
  }
  if (r < 0 && errno == ECHILD) {  // not ours any more (should not happen)
    reaped_ = true;
    return false;
  }
  return true;
}

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (running()) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  return exit_;
}

bool Child::signal(int sig) {
  if (!running()) return false;
  return ::kill(pid_, sig) == 0;
}

int Child::stop(std::chrono::milliseconds timeout) {
  if (running()) {
    ::kill(pid_, SIGCONT);  // a stopped child cannot act on SIGTERM
    ::kill(pid_, SIGTERM);
    if (auto rc = wait(timeout)) return *rc;
    return kill9();
  }
  return exit_.value_or(-1);
}

int Child::kill9() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    exit_ = code_of(status);
  }
  return exit_.value_or(-1);
}

std::string Child::output() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Child::tail(size_t lines) const {
  const std::string all = output();
  size_t pos = all.size();
  if (pos > 0 && all[pos - 1] == '\n') --pos;  // the final newline ends the last line
  for (size_t n = 0; n < lines && pos > 0; ++n) {
    const size_t nl = all.rfind('\n', pos - 1);
    pos = nl == std::string::npos ? 0 : nl;
  }
  if (pos > 0) ++pos;  // after the newline
  return fmt::format("--- {} (pid {}), last {} lines:\n{}", name_, pid_, lines, all.substr(pos));
}

// ---- LocalCluster ----

LocalCluster::LocalCluster(LocalClusterOptions options) : options_(std::move(options)), dir_("pandora-cluster") {}

LocalCluster::~LocalCluster() {
  kill_all();
  children_.clear();
  if (memds_) memds_->stop();
  memds_.reset();
  if (zk_) (void)zk_->stop();
  zk_.reset();
}

Status LocalCluster::start() {
  if (!dir_.ok()) return dir_.status();
  for (const std::string* b : {&options_.fd_binary, &options_.ctl_binary, &options_.bench_binary,
                               &options_.memd_binary}) {
    if (b->empty() || ::access(b->c_str(), X_OK) != 0) {
      return Status(Errc::kInvalidArgument, fmt::format("binary '{}' is missing or not executable", *b));
    }
  }
  ZkEnsembleOptions zo;
  zo.servers = options_.zk_servers;
  zo.tick_ms = options_.zk_tick_ms;
  zo.sync_ms = options_.zk_sync_ms;
  zk_ = std::make_unique<ZkEnsemble>(dir_.path() + "/zk", zo);
  if (Status s = zk_->start(); !s) return Status(s.code(), "starting ZooKeeper: " + s.message());

  LocalMemdOptions mo;
  mo.binary = options_.memd_binary;
  mo.cluster_id = options_.cluster_id;
  mo.size = options_.memd_size;
  mo.log_size = options_.memd_log_size;
  mo.log_level = "warn";
  if (options_.memd_heartbeats) {
    // Free loopback UDP ports for the replicas, known before they start:
    // the daemons are told them now (heartbeats to a replica not yet up
    // are lost, as UDP datagrams are).
    std::vector<net::UniqueFd> held;
    std::string list;
    for (uint32_t i = 0; i < options_.fd_replicas; ++i) {
      uint16_t port = 0;
      auto fd = net::bind_udp(Endpoint{"127.0.0.1", 0}, &port);
      if (!fd) return Status(fd.status().code(), "reserving a UDP port for an FD replica: " + fd.status().message());
      held.push_back(std::move(*fd));
      fd_ports_.push_back(port);
      list += fmt::format("{}127.0.0.1:{}", list.empty() ? "" : ",", port);
    }
    mo.extra_args = {"--fd-replicas", list, "--fd-heartbeat-us", std::to_string(options_.memd_heartbeat_us)};
  }
  memds_ = std::make_unique<LocalMemdCluster>(options_.memory_nodes, mo, dir_.path());
  if (Status s = memds_->start(); !s) return Status(s.code(), "starting the memory daemons: " + s.message());

  std::string nodes;
  for (const Endpoint& e : memds_->endpoints()) nodes += (nodes.empty() ? "" : ",") + e.to_string();
  std::string out;
  const int rc = ctl({"init", "--memory-nodes", nodes, "--protocol", options_.protocol}, &out);
  if (rc != 0) return Status(Errc::kIo, fmt::format("pandora-ctl init exited with {}:\n{}", rc, out));
  return Status::ok();
}

const std::string& LocalCluster::secret() const { return memds_->secret(); }
const std::string& LocalCluster::secret_file() const { return memds_->node(0).secret_path(); }

zk::ZkOptions LocalCluster::zk_options() const {
  zk::ZkOptions o;
  o.hosts = zk_->hosts();
  o.session_timeout = std::chrono::milliseconds(4000);
  o.connect_timeout = std::chrono::milliseconds(5000);
  o.op_timeout = std::chrono::milliseconds(3000);
  o.auth = registry_auth(secret());
  return o;
}

std::vector<std::string> LocalCluster::common_flags() const {
  return {"--zookeeper",  zk_->hosts(), "--zk-root", options_.zk_root, "--cluster-id", std::to_string(options_.cluster_id),
          "--secret-file", secret_file()};
}

Result<Child*> LocalCluster::spawn(const std::string& name, const std::vector<std::string>& argv, int nice) {
  if (argv.empty()) return Status(Errc::kInvalidArgument, "spawn: empty argv");
  const std::string log_path = fmt::format("{}/{:03}-{}.log", dir_.path(), ++spawned_, name);
  const int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return Status(Errc::kIo, fmt::format("opening {}: {}", log_path, strerror(errno)));
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Everything execve needs is built before fork: the child of a
  // multi-threaded process may only call async-signal-safe functions.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "PMEM_IS_PMEM_FORCE=", 19) != 0) env_store.emplace_back(*e);
  }
  env_store.emplace_back("PMEM_IS_PMEM_FORCE=1");
  std::vector<char*> envp;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(out);
    if (devnull >= 0) ::close(devnull);
    return Status(Errc::kIo, fmt::format("fork: {}", strerror(err)));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (nice > 0) {
      errno = 0;
      const int now = ::getpriority(PRIO_PROCESS, 0);
      if (errno == 0) ::setpriority(PRIO_PROCESS, 0, now + nice);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out);
  if (devnull >= 0) ::close(devnull);
  children_.push_back(std::make_unique<Child>(name, pid, log_path, argv));
  return children_.back().get();
}

Result<Child*> LocalCluster::start_fd(uint32_t replica_id, const std::vector<std::string>& extra, uint32_t replicas) {
  std::vector<std::string> argv{options_.fd_binary};
  for (const std::string& f : common_flags()) argv.push_back(f);
  for (const std::string& f : std::vector<std::string>{"--replica-id", std::to_string(replica_id), "--replicas",
                                                       std::to_string(replicas), "--exit-with-pid",
                                                       std::to_string(::getpid())}) {
    argv.push_back(f);
  }
  if (replica_id >= 1 && replica_id <= fd_ports_.size()) {
    argv.insert(argv.end(), {"--listen", fmt::format("127.0.0.1:{}", fd_ports_[replica_id - 1])});
  }
  argv.insert(argv.end(), {"--leader-timeout-ms", std::to_string(options_.fd_leader_timeout_ms)});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return spawn(fmt::format("fd{}", replica_id), argv);
}

Result<Child*> LocalCluster::start_bench(const std::string& name, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{options_.bench_binary};
  for (const std::string& f : common_flags()) argv.push_back(f);
  argv.insert(argv.end(), {"--protocol", options_.protocol});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return spawn(name, argv, options_.compute_nice);
}

int LocalCluster::run_to_end(const std::string& name, const std::vector<std::string>& argv, std::string* output,
                             std::chrono::seconds timeout, int nice) {
  auto c = spawn(name, argv, nice);
  if (!c) {
    if (output) *output = c.status().to_string();
    return -1;
  }
  auto rc = (*c)->wait(timeout);
  if (!rc) (*c)->kill9();
  if (output) *output = (*c)->output();
  return rc ? *rc : -1;
}

int LocalCluster::run_bench(const std::string& name, const std::vector<std::string>& extra, std::string* output,
                            std::chrono::seconds timeout) {
  std::vector<std::string> argv{options_.bench_binary};
  for (const std::string& f : common_flags()) argv.push_back(f);
  argv.insert(argv.end(), {"--protocol", options_.protocol});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_to_end(name, argv, output, timeout, options_.compute_nice);
}

int LocalCluster::ctl(const std::vector<std::string>& args, std::string* output, std::chrono::seconds timeout) {
  std::vector<std::string> argv{options_.ctl_binary};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const std::string& f : common_flags()) argv.push_back(f);
  return run_to_end("ctl", argv, output, timeout);
}

void LocalCluster::kill_all() {
  for (auto& c : children_) c->kill9();
}

}  // namespace pandora::testing
