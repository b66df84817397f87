// Test launcher for a whole Pandora cluster of real processes on loopback:
// a ZooKeeper ensemble, memory daemons, `pandora-ctl init`, failure-detector
// replicas (`pandora-fd`) and compute processes (`pandora-bench`), each a
// child process started by fork + execve and owned by pid.
//
//   LocalCluster c({.fd_binary = ..., .ctl_binary = ..., .bench_binary = ..., .memd_binary = ...});
//   ASSERT_TRUE(c.start()) << ...;                      // ZooKeeper, memds, pandora-ctl init
//   c.run_bench("load", {"--workload", "smallbank", "--load", "--seconds", "0"}, &out);
//   Child* fd1 = *c.start_fd(1, {"--timeout-us", "300000"});
//   Child* b = *c.start_bench("bench-1", {"--workload", "smallbank", "--seconds", "30"});
//   b->signal(SIGKILL);  b->wait(std::chrono::seconds(5));
//   // the destructor kills (SIGKILL) and reaps every child still running
//
// Conventions (why this file exists):
//  - Signals and waits name a child's own pid, never a process name.
//  - Every child gets PR_SET_PDEATHSIG(SIGKILL): a test that dies without
//    running destructors (ASan abort, SIGKILL) leaves no compute process
//    behind; memds and FD replicas also get --exit-with-pid, and the
//    ZooKeeper servers their script's watchdog (testing/zk_ensemble.h).
//  - Each child's stdout and stderr go to <dir>/<name>.log (read with
//    Child::output()); everything lives in one private temporary directory
//    removed by the destructor.
//  - Children run with PMEM_IS_PMEM_FORCE=1 (testing/local_memd.h).
//
// Not thread-safe: use one object from the test's thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/zk/zk_client.h"
#include "testing/local_memd.h"
#include "testing/zk_ensemble.h"

namespace pandora::testing {

struct LocalClusterOptions {
  std::string fd_binary;     // pandora-fd
  std::string ctl_binary;    // pandora-ctl
  std::string bench_binary;  // pandora-bench
  std::string memd_binary;   // pandora-memd
  int zk_servers = 3;
  // ZooKeeper tickTime: sessions may last 2..20 ticks (300 ms allows up to
  // 6 s, which a loaded test machine needs).
  int zk_tick_ms = 300;
  // ZooKeeper syncLimit: a follower silent this long is dropped. Not the
  // script's 3 s: in the fail-over tests a follower that had just synced
  // went silent for 7 s while two JVMs restarted beside three ASan benches
  // on two cores, the leader dropped it, lost its quorum, and elections
  // followed one another for minutes (starved by the scheduler: the
  // servers then ran in autogroups of their own; see zookeeper.sh). The
  // tests kill servers with SIGKILL,
  // which their peers see at once (EOF), so a long limit delays nothing.
  int zk_sync_ms = 15000;
  size_t memory_nodes = 2;
  std::string memd_size = "32M";
  std::string memd_log_size = "4M";
  uint64_t cluster_id = 0xfa11;
  std::string zk_root = "/pandora";
  // Niceness of compute processes (pandora-bench): their workers poll
  // without sleeping, and on a small machine they must not starve the
  // control plane (ZooKeeper, whose sessions then expire; the FD replicas).
  // (More than 5 delays their heartbeat thread into false positives.)
  int compute_nice = 5;
  // The cluster's protocol (pandora-ctl init --protocol); every bench
  // started through this cluster runs it.
  std::string protocol = "pandora";
  // Memory daemons heartbeat the FD replicas (so a memory node's death is
  // detected and failed over): the replicas' UDP ports are reserved at
  // start() and start_fd() binds replica i to the i-th of them.
  bool memd_heartbeats = false;
  uint64_t memd_heartbeat_us = 20000;
  uint32_t fd_replicas = 3;
  // pandora-fd --leader-timeout-ms for every replica start_fd() starts
  // (its own flags come later and win). Longer than the 500 ms default:
  // a replica of a sanitizer build on two loaded cores can stand still
  // that long, and a deposition is a leader change the tests do not ask
  // for; still below the tests' 6 s sessions, so a dead leader is
  // deposed, not waited out.
  uint32_t fd_leader_timeout_ms = 3000;
};

// One child process. Exit codes follow the shell: 0..255 for an exit,
// 128+signal for a death by signal.
class Child {
 public:
  Child(std::string name, pid_t pid, std::string log_path, std::vector<std::string> argv)
      : name_(std::move(name)), pid_(pid), log_path_(std::move(log_path)), argv_(std::move(argv)) {}
  ~Child();  // SIGKILL + reap when still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  const std::string& name() const { return name_; }
  // The os pid (kept after the child is reaped, for messages).
  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }
  // Reaps the child if it has ended; true while it runs.
  bool running();
  // The exit code once reaped.
  std::optional<int> exit_code() const { return exit_; }
  // Waits at most `timeout` for the exit: its code, or nullopt while running.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // Sends `sig` while the child is not reaped; false otherwise.
  bool signal(int sig);
  // SIGTERM, wait at most `timeout`, then SIGKILL. The exit code.
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL and reap.
  int kill9();
  // Everything the child wrote to stdout and stderr so far.
  std::string output() const;
  // The last `lines` lines of output() (for failure messages).
  std::string tail(size_t lines = 30) const;
  const std::string& log_path() const { return log_path_; }

 private:
  std::string name_;
  pid_t pid_;
  std::string log_path_;
  std::vector<std::string> argv_;
  bool reaped_ = false;
  std::optional<int> exit_;
};

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);
  ~LocalCluster();  // every child SIGKILLed and reaped, memds and ZooKeeper stopped
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Starts the ZooKeeper ensemble and the memory daemons, then runs
  // `pandora-ctl init`. On failure the status says which step and why.
  Status start();

  const LocalClusterOptions& options() const { return options_; }
  const std::string& dir() const { return dir_.path(); }
  ZkEnsemble& zookeeper() { return *zk_; }
  LocalMemdCluster& memds() { return *memds_; }
  uint64_t cluster_id() const { return options_.cluster_id; }
  const std::string& secret() const;
  const std::string& secret_file() const;
  // ZkOptions reaching the ensemble (short timeouts for tests).
  zk::ZkOptions zk_options() const;
  // --zookeeper Z --zk-root R --cluster-id C --secret-file S
  std::vector<std::string> common_flags() const;

  // Starts `argv` (argv[0]: the binary's path) as a child named `name`
  // (the log is <dir>/<name>.log; a name used before gets a numbered log).
  // `nice` (>= 0) is added to the child's niceness.
  Result<Child*> spawn(const std::string& name, const std::vector<std::string>& argv, int nice = 0);
  // FD replica `replica_id` of `replicas`: common flags, --replica-id,
  // --replicas, --exit-with-pid <this process>, then `extra`.
  Result<Child*> start_fd(uint32_t replica_id, const std::vector<std::string>& extra = {}, uint32_t replicas = 3);
  // pandora-bench with the common flags, then `extra` (at compute_nice).
  Result<Child*> start_bench(const std::string& name, const std::vector<std::string>& extra);
  // Runs pandora-bench / pandora-ctl (common flags after `args`) to
  // completion within `timeout`: the exit code (-1 on timeout, the child is
  // then killed), *output gets stdout+stderr.
  int run_bench(const std::string& name, const std::vector<std::string>& extra, std::string* output,
                std::chrono::seconds timeout = std::chrono::seconds(120));
  int ctl(const std::vector<std::string>& args, std::string* output,
          std::chrono::seconds timeout = std::chrono::seconds(60));

  // Every child started, in start order.
  const std::vector<std::unique_ptr<Child>>& children() const { return children_; }
  // SIGKILL + reap every child still running.
  void kill_all();

 private:
  int run_to_end(const std::string& name, const std::vector<std::string>& argv, std::string* output,
                 std::chrono::seconds timeout, int nice = 0);

  LocalClusterOptions options_;
  pandora::TempDir dir_;
  std::unique_ptr<ZkEnsemble> zk_;
  std::unique_ptr<LocalMemdCluster> memds_;
  std::vector<uint16_t> fd_ports_;  // memd_heartbeats: replica i listens on fd_ports_[i - 1]
  std::vector<std::unique_ptr<Child>> children_;
  int spawned_ = 0;
};

}  // namespace pandora::testing
