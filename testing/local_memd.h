// Runs real pandora-memd daemons as child processes on loopback: the one
// launcher behind the test harness (tests/support), the litmus driver and the
// transport benchmark.
//
//   LocalMemd memd({.binary = "/path/to/pandora-memd", .node_id = 1});
//   if (Status s = memd.start(); !s) fail(s.to_string());     // bounded wait for the port
//   auto conn = open_connection(memd.endpoint(), memd.identity(/*compute_id=*/7), {});
//   int rc = memd.stop();                                     // SIGTERM, bounded wait, SIGKILL
//
//   LocalMemdCluster memds(3, {.binary = path});              // node ids 1..3, one secret
//   if (Status s = memds.start(); !s) ...
//   config.memory_nodes = memds.endpoints();
//
// A child process rather than the in-process daemon library (memd.h) because
// what callers exercise is the real binary: its flags, exit codes, log, and
// how it survives kill -9.
//
// Every daemon started here follows the same conventions, and they are why
// this file exists at all (each caller used to repeat them):
//  - Loopback, port 0 (`--listen 127.0.0.1:0 --port-file F`): the daemon binds
//    a free port and publishes it, so parallel runs never collide on a port.
//  - The region lives in a directory on /dev/shm when there is one, and the
//    daemon runs with PMEM_IS_PMEM_FORCE=1: memory-speed "persistent memory"
//    that takes the real PM flush path (ARCHITECTURE.md 2b) and survives
//    kill -9 of the daemon (restart() finds it again).
//  - `--exit-with-pid <our pid>`: a harness that dies without running its
//    destructors (crash, ASan abort, SIGKILL) leaves no daemon behind.
//  - The secret is passed in a file of mode 0600, never on the command line
//    (argv is visible in ps), and the daemon warns about wider modes.
//  - Signals and waits always name the daemon's own pid, never a process
//    name: other daemons on the machine (other builds, other users' runs)
//    are never touched. Only the process that started a daemon (or created a
//    directory) kills it (or removes it): a fork()ed child that unwinds
//    through these destructors leaves its parent's daemons alone.
//
// None of these classes is thread-safe; use one object from one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/client.h"

namespace pandora {

// The directory temporary directories go in: /dev/shm when it is a writable
// directory (regions then stay in memory), else disk_temp_base().
std::string local_temp_base();
// $TMPDIR when set, else /tmp: for files that should outlive the machine's
// memory-backed directories (kept logs).
std::string disk_temp_base();

// A fresh private directory (mode 0700) `<local_temp_base()>/<prefix>-XXXXXX`,
// removed with its content on destruction. Creation failure is not an
// exception: path() is then empty and status() says why, so callers that
// report errors as Status (the daemon launchers) can pass it on.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "pandora");
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const Status& status() const { return status_; }
  const std::string& path() const { return path_; }

 private:
  void remove();

  std::string path_;
  Status status_;
  pid_t owner_ = -1;  // the process that created it (and alone removes it)
};

struct LocalMemdOptions {
  std::string binary;  // path of the pandora-memd to run (required)
  uint32_t node_id = 1;
  uint64_t cluster_id = 0x10ca1;
  std::string size = "64M";     // --size: the whole region
  std::string log_size = "1M";  // --log-size: its log area
  uint32_t threads = 1;         // --threads
  std::string log_level;        // --log-level; empty: the daemon's default (info)
  // The cluster secret. Empty: 32 random bytes, hex-encoded, generated when
  // the LocalMemd is constructed (options().secret then holds it).
  std::string secret;
  // Appended verbatim after the standard flags (the daemon takes the last
  // value of a repeated flag). An "--exit-with-pid" here replaces the default
  // one, so a caller can tie the daemon to another process.
  std::vector<std::string> extra_args;
  // How long start() waits for the port file, and stop() for the exit after
  // SIGTERM, before giving up and killing the daemon.
  // A deadline, not a wait: generous because an ASan build inside the
  // emulated Soft-RoCE VM on a loaded host took over 20 s to start.
  std::chrono::milliseconds start_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds stop_timeout{std::chrono::seconds(20)};
};

// One daemon. Its files are named by node id, so several daemons can share a
// directory: node<ID>.pm (the region), secret<ID>, port<ID>, memd<ID>.log
// (the daemon's stdout and stderr, appended across restarts).
//
// The secret file is written by the constructor (not by start()), so it can
// be inspected or changed before the first start and keeps any change across
// restarts. Errors of the constructor (directory, secret) are reported by
// start().
class LocalMemd {
 public:
  // Files in a private TempDir, removed on destruction.
  explicit LocalMemd(LocalMemdOptions options);
  // Files in `dir`, which the caller owns; they are left in place, so a
  // later LocalMemd on the same dir and node id finds the region again.
  LocalMemd(std::string dir, LocalMemdOptions options);
  // A daemon still running is killed (SIGKILL) and reaped: stop() first for
  // a clean shutdown.
  ~LocalMemd();
  LocalMemd(const LocalMemd&) = delete;
  LocalMemd& operator=(const LocalMemd&) = delete;

  // Starts the daemon and waits (at most options().start_timeout) until it
  // has published its port. On failure the daemon is not running and the
  // status (and last_error()) carries what it logged during this start:
  // it exited (bad flags, region refused, ...) or never became ready (it is
  // then killed).
  Status start();
  // SIGTERM (after SIGCONT, in case it was stopped), then waits at most
  // options().stop_timeout. Returns the exit code (128+signal when killed by a
  // signal); -1 when nothing was running, or when it did not exit in time (it
  // is then killed with SIGKILL, and last_error() says so).
  int stop();
  // Waits at most `timeout` for the daemon to exit on its own (e.g. after
  // --exit-with-pid fired): its exit code (128+signal), or -1 if it is still
  // running (or was not running).
  int wait_exit(std::chrono::milliseconds timeout);
  // SIGKILL, then reap: a crash. The region stays for restart().
  void kill9();
  // kill9() if running, then start() on the same region, secret and options.
  Status restart();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // 127.0.0.1 and the port of the last successful start (a restart binds a
  // new port).
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_}; }
  // An identity the daemon accepts: compute node `compute_id`, or the admin
  // role when compute_id == 0. Compute identities carry this LocalMemd's
  // incarnation: they all stand for the one process that owns it.
  ClientIdentity identity(uint16_t compute_id) const;

  const LocalMemdOptions& options() const { return options_; }
  const std::string& dir() const { return dir_; }
  const std::string& region_path() const { return region_path_; }
  const std::string& secret_path() const { return secret_path_; }
  const std::string& log_path() const { return log_path_; }
  // Everything the daemon has written to stdout/stderr so far (all starts).
  std::string log_text() const;
  // Why the last start() or stop() failed; empty after a success.
  const std::string& last_error() const { return error_; }

  // The argv start() runs (binary first), for callers that want to run the
  // binary themselves with changed flags.
  std::vector<std::string> argv() const;

 private:
  void init_files();
  Status fail(Errc code, std::string message);

  LocalMemdOptions options_;
  std::unique_ptr<TempDir> own_dir_;  // set by the private-directory constructor
  std::string dir_, region_path_, secret_path_, port_path_, log_path_;
  Status setup_;  // error of the constructor, returned by start()
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that started pid_
  uint16_t port_ = 0;
  std::string error_;
  uint64_t incarnation_ = new_incarnation();
};

// `nodes` daemons with node ids 1..nodes that form one cluster: the same
// cluster id and secret, one directory. Daemon i (0-based) is node i+1.
class LocalMemdCluster {
 public:
  // Each daemon runs with `options` (its node_id is replaced). An empty
  // options.secret is generated once, for all. Files go in `dir` (caller
  // owned) or, when it is empty, in a private TempDir removed on destruction.
  LocalMemdCluster(size_t nodes, LocalMemdOptions options, std::string dir = {});
  // Daemons still running are killed (SIGKILL): stop() for a clean shutdown.
  ~LocalMemdCluster();
  LocalMemdCluster(const LocalMemdCluster&) = delete;
  LocalMemdCluster& operator=(const LocalMemdCluster&) = delete;

  // Starts every daemon that is not running, in node order (each waits for
  // its port). Stops at the first failure: "memd <id>: <why>".
  Status start();
  // stop() on every running daemon: 0 when all exited with 0, else the
  // first other result.
  int stop();

  size_t size() const { return nodes_.size(); }
  LocalMemd& node(size_t i) { return *nodes_[i]; }
  const LocalMemd& node(size_t i) const { return *nodes_[i]; }
  // The daemons' endpoints in node order (meaningful once started).
  std::vector<Endpoint> endpoints() const;
  uint64_t cluster_id() const { return cluster_id_; }
  const std::string& secret() const { return secret_; }
  const std::string& dir() const { return dir_; }

 private:
  // Declared before nodes_: the daemons are killed before their directory
  // is removed.
  std::unique_ptr<TempDir> own_dir_;
  std::string dir_;
  uint64_t cluster_id_;
  std::string secret_;
  Status setup_;
  std::vector<std::unique_ptr<LocalMemd>> nodes_;
};

// Lower-level helpers, shared with harnesses that run the daemon (or other
// tools) to completion with changed flags.

// Starts `argv` (argv[0] is the path of the binary; no PATH search) with
// stdin from /dev/null and stdout and stderr to `output_path` (appended to,
// or truncated when `append` is false), and PMEM_IS_PMEM_FORCE=1 in its
// environment (replacing any other value). Returns the child's pid.
Result<pid_t> spawn_with_output(const std::vector<std::string>& argv, const std::string& output_path, bool append);

// Waits at most `timeout` for our child `pid` to exit and reaps it. Returns
// its exit code (128+signal when killed by a signal), or -1 if it is still
// running (or is not a child of ours).
int wait_child(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace pandora
