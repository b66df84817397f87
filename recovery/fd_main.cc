// pandora-fd: one failure-detector replica (recovery/fd_replica.h).
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "common/endpoint.h"
#include "common/options.h"
#include "common/secret.h"
#include "compute/step_hook.h"
#include "recovery/fd_replica.h"
#ifdef PANDORA_CRASH_INJECTION
#include "compute/crash_injector.h"
#endif

namespace {

using namespace pandora;

struct Flags {
  std::string zookeeper;
  std::string zk_root = "/pandora";
  uint64_t zk_session_ms = 4000;
  uint64_t cluster_id = 0;
  std::string secret_file;
  uint64_t replica_id = 0;
  uint64_t replicas = 3;
  std::string listen = "127.0.0.1:0";
  uint64_t timeout_us = 5000;
  uint64_t memory_timeout_us = 100000;
  uint64_t tick_us = 250;
  uint64_t leader_timeout_ms = 500;
  std::string backend = "tcp";
  uint64_t op_timeout_ms = 2000;
  std::string log_level = "info";
  std::string crash_at;
  std::string crash_signal = "kill";
  bool stall_member_refreshes = false;
  uint64_t exit_with_pid = 0;
};

int usage_error(const std::string& m) {
  fmt::print(stderr, "pandora-fd: {}\n(see pandora-fd --help)\n", m);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  OptionSet opts("pandora-fd",
                 "One replica of Pandora's failure detector. Every replica receives the compute nodes' UDP heartbeats "
                 "(authenticated with the cluster secret); the leader, elected through ZooKeeper, recovers each "
                 "compute node that a majority of the --replicas replicas has missed for --timeout-us: fence, log "
                 "recovery, truncate, publish in failed-ids (ZooKeeper + push), sweep. The cluster must have been "
                 "initialised with `pandora-ctl init`. Exit codes: 0 stopped by SIGTERM/SIGINT, 2 usage, 3 no or "
                 "another cluster in ZooKeeper, 4 cannot listen, 5 replica id taken / election failed.");
  opts.add_string("zookeeper", &f.zookeeper, "ZooKeeper ensemble HOST:PORT,HOST:PORT,...", true);
  opts.add_string("zk-root", &f.zk_root, "the cluster's ZooKeeper path");
  opts.add_u64("zk-session-ms", &f.zk_session_ms,
               "ZooKeeper session timeout: a dead leader is replaced after about this long; shorter "
               "sessions expire during host stalls (each expiry restarts the replica's detector)",
               200, 60000);
  opts.add_u64("cluster-id", &f.cluster_id, "cluster id (decimal or 0x hex)", 1, UINT64_MAX, true);
  opts.add_string("secret-file", &f.secret_file, "file holding the cluster secret", true);
  opts.add_u64("replica-id", &f.replica_id, "this replica's id, 1..--replicas", 1, 64, true);
  opts.add_u64("replicas", &f.replicas, "number of FD replicas (a node fails when a majority misses it)", 1, 64);
  opts.add_string("listen", &f.listen, "UDP HOST:PORT for heartbeats (port 0 picks one; loopback or a private net)");
  opts.add_u64("timeout-us", &f.timeout_us, "a node is suspected after this long without a heartbeat", 100, 60000000);
  opts.add_u64("memory-timeout-us", &f.memory_timeout_us,
               "a memory node is suspected after this long without a heartbeat (longer than --timeout-us: failing "
               "one over is final and stops the world)",
               100, 60000000);
  opts.add_u64("tick-us", &f.tick_us, "how often suspicion is evaluated and shared", 50, 1000000);
  opts.add_u64("leader-timeout-ms", &f.leader_timeout_ms,
               "the leader's successor deposes a leader it has not heard for this long (while it hears a majority "
               "without it) instead of waiting for the leader's ZooKeeper session to expire - a fifth of it (at "
               "least 4 peer heartbeats) when the leader's port refuses, i.e. its process is gone; 0: never",
               0, 600000);
  opts.add_choice("backend", &f.backend, {"tcp", "shm"}, "the leader's data plane to the memory nodes");
  opts.add_u64("op-timeout-ms", &f.op_timeout_ms, "the leader's data-plane operation timeout", 1, 600000);
  opts.add_choice("log-level", &f.log_level, {"debug", "info", "warn", "error"}, "log verbosity");
  opts.add_string("crash-at", &f.crash_at,
                  "test only (Debug builds): as leader, SIGKILL this process at the first hit of this recovery "
                  "crash point (recovery-after-read, before-truncate, after-truncate, before-sweep, after-sweep, ...)");
  opts.add_choice("crash-signal", &f.crash_signal, {"kill", "stop"},
                  "test only (Debug builds): what --crash-at does: SIGKILL, or SIGSTOP (the leader stands still at "
                  "the point until a SIGCONT)");
  opts.add_flag("stall-member-refreshes", &f.stall_member_refreshes,
                "test only: once a compute node is watched, the registry reads that refresh the member list stand "
                "still (detection and recovery must go on without them)");
  opts.add_u64("exit-with-pid", &f.exit_with_pid, "stop cleanly when the process with this pid ends (tests)");
  std::string msg;
  switch (opts.parse(argc, argv, &msg)) {
    case OptionSet::Outcome::kHelp: fmt::print("{}", msg); return 0;
    case OptionSet::Outcome::kError: return usage_error(msg);
    case OptionSet::Outcome::kRun: break;
  }
  if (f.replica_id > f.replicas) return usage_error(fmt::format("--replica-id {} > --replicas {}", f.replica_id, f.replicas));
  LogLevel level = LogLevel::kInfo;
  parse_log_level(f.log_level, &level);
  const Logger log(fmt::format("pandora-fd.{}", f.replica_id), level);

  FdReplicaOptions o;
  o.zk.hosts = f.zookeeper;
  o.zk.session_timeout = std::chrono::milliseconds(f.zk_session_ms);
  o.root = f.zk_root;
  if (o.root.empty() || o.root[0] != '/' || o.root.back() == '/') {
    return usage_error(fmt::format("--zk-root '{}' must be an absolute ZooKeeper path without a trailing /", o.root));
  }
  o.cluster_id = f.cluster_id;
  auto secret = read_secret_file(f.secret_file);
  if (!secret) return usage_error("--secret-file: " + secret.status().message());
  o.secret = *secret;
  o.replica_id = static_cast<uint32_t>(f.replica_id);
  o.replicas = static_cast<uint32_t>(f.replicas);
  auto listen = parse_endpoint(f.listen);
  if (!listen) return usage_error("--listen: " + listen.status().message());
  o.listen = *listen;
  o.timeout = std::chrono::microseconds(f.timeout_us);
  o.memory_timeout = std::chrono::microseconds(f.memory_timeout_us);
  o.tick = std::chrono::microseconds(f.tick_us);
  if (f.leader_timeout_ms != 0 && f.leader_timeout_ms * 1000 <= 4 * f.tick_us) {
    return usage_error(fmt::format("--leader-timeout-ms {} must be 0 or longer than 4 ticks (--tick-us {})",
                                   f.leader_timeout_ms, f.tick_us));
  }
  o.leader_timeout = std::chrono::milliseconds(f.leader_timeout_ms);
  o.backend = f.backend == "shm" ? Backend::kShm : Backend::kTcp;
  o.op_timeout = std::chrono::milliseconds(f.op_timeout_ms);
#ifdef PANDORA_CRASH_INJECTION
  CrashInjector crash;
#endif
  if (!f.crash_at.empty()) {
    auto p = parse_crash_point(f.crash_at);
    if (!p || !is_recovery_point(*p)) return usage_error(fmt::format("--crash-at '{}' is not a recovery crash point", f.crash_at));
#ifdef PANDORA_CRASH_INJECTION
    crash.arm_point(*p, 1, 0, 1);
    if (f.crash_signal == "stop") crash.set_fire_action([](CrashPoint) { ::raise(SIGSTOP); });
    o.step_hook = &crash;
#else
    return usage_error("--crash-at: crash injection is test machinery, built into Debug builds only");
#endif
  }
  o.stall_member_refreshes = f.stall_member_refreshes;

  // SIGTERM/SIGINT (and the end of --exit-with-pid's process) stop the loop.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  static std::atomic<bool> stop{false};
  std::thread([set] {
    int sig = 0;
    sigwait(&set, &sig);
    stop.store(true, std::memory_order_release);
  }).detach();
  if (f.exit_with_pid != 0) {
    const int pfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(f.exit_with_pid), 0));
    if (pfd < 0) return usage_error(fmt::format("--exit-with-pid {}: {}", f.exit_with_pid, strerror(errno)));
    std::thread([pfd] {
      pollfd p{pfd, POLLIN, 0};
      while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
      ::kill(::getpid(), SIGTERM);
    }).detach();
  }
  const int rc = run_fd_replica(o, log, stop);
  std::fflush(stdout);
  std::_Exit(rc);  // detached threads may still wait; nothing left to flush
}
