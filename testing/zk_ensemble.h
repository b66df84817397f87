// Test launcher for a real ZooKeeper ensemble on loopback, through
// deploy/local/zookeeper.sh (which documents the files it keeps in `dir`).
//
//   ZkEnsemble zk("/tmp/my-test-dir", {.servers = 3});
//   ASSERT_TRUE(zk.start()) << ...;         // blocks until a leader is elected
//   ZkOptions o;  o.hosts = zk.hosts();      // "127.0.0.1:P1,127.0.0.1:P2,..."
//   zk.kill_server(2);  zk.restart_server(2);
//   zk.stop();                               // also done by the destructor
//
// start() passes --exit-with-pid getpid(), so the servers are stopped by the
// script's watchdog even when the test process dies without running
// destructors. The script runs through fork + execv of /bin/bash, with a
// deadline; its output is kept for error messages.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"

namespace pandora::testing {

struct ZkEnsembleOptions {
  int servers = 3;
  int tick_ms = 100;
  // How long start() lets the script wait for a leader.
  int wait_s = 60;
  // fsync the transaction log (as deployed). Tests leave it off: on a
  // shared 2-core machine an fsync stalled writes past 5 s (a test's
  // subject is Pandora's logic, not ZooKeeper's durability).
  bool fsync = false;
  // How long the leader and a follower may go unheard before the follower
  // is dropped (zookeeper.sh --sync-ms; its default 3000 when 0).
  int sync_ms = 0;
};

class ZkEnsemble {
 public:
  // `dir` is the script's state directory (created if missing; its content
  // from an earlier ensemble is replaced). The caller owns it.
  explicit ZkEnsemble(std::string dir, ZkEnsembleOptions options = {});
  ~ZkEnsemble();  // stop(), errors ignored
  ZkEnsemble(const ZkEnsemble&) = delete;
  ZkEnsemble& operator=(const ZkEnsemble&) = delete;

  // Starts every server and waits until one is leader and the others
  // followers. On failure the message holds the script's output (with the
  // tails of the server logs).
  Status start();
  // The client connect string (ZkOptions::hosts); empty before start().
  const std::string& hosts() const { return hosts_; }
  const std::string& dir() const { return dir_; }
  int servers() const { return options_.servers; }
  // How long the last start() took (script start to leader elected).
  std::chrono::milliseconds start_duration() const { return start_duration_; }

  // SIGKILLs server i (1-based); its data stays.
  Status kill_server(int i);
  // Starts server i again on the same configuration and ports; returns once
  // the process runs (it joins the ensemble asynchronously).
  Status restart_server(int i);
  // Stops every server (SIGTERM, then SIGKILL) and the watchdog; removes
  // the data directories. Idempotent.
  Status stop();

  // Pid of server i's java process (from DIR/zk<i>.pid), -1 when it is not
  // recorded (killed or never started). For tests that SIGSTOP a server.
  int server_pid(int i) const;

  // Content of server i's log (stdout+stderr), for failure messages.
  std::string server_log(int i) const;

 private:
  Status run_script(const std::vector<std::string>& args, int timeout_s, std::string* output) const;

  std::string dir_;
  ZkEnsembleOptions options_;
  std::string hosts_;
  bool started_ = false;
  std::chrono::milliseconds start_duration_{0};
};

// Path of deploy/local/zookeeper.sh in the source tree.
const char* zookeeper_script();

}  // namespace pandora::testing
