// Test harness: runs a real pandora-memd as a child process on loopback.
//
//   TempDir dir;                       // removed (recursively) on destruction
//   MemdProcess memd(dir.path(), {.node_id = 1});
//   ASSERT_TRUE(memd.start()) << memd.last_error();
//   ClientIdentity id = memd.identity(/*compute_id=*/7);
//   auto conn = open_connection(memd.endpoint(), id, {.backend = Backend::kTcp});
//   memd.stop();                       // SIGTERM + wait; returns exit status
//
// The region lives in the temp dir (on /dev/shm when available) so it
// survives kill -9 of the daemon; restart() starts a new daemon on the same
// region. Every process started is killed and reaped by pid in the
// destructor.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/endpoint.h"
#include "common/transport/client.h"

namespace pandora::testing {

// A fresh directory under /dev/shm (or $TMPDIR, or /tmp); removed with its
// content on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct MemdOptions {
  uint32_t node_id = 1;
  uint64_t cluster_id = 0x5eed;
  std::string size = "16M";
  std::string log_size = "1M";
  uint32_t threads = 1;
  std::string secret = "test-secret";
  std::vector<std::string> extra_args;  // appended verbatim (an --exit-with-pid here replaces the default)
};

class MemdProcess {
 public:
  MemdProcess(std::string dir, MemdOptions options = {});
  ~MemdProcess();  // kills (SIGKILL) and reaps a still-running daemon
  MemdProcess(const MemdProcess&) = delete;
  MemdProcess& operator=(const MemdProcess&) = delete;

  // Starts the daemon and waits (bounded, 20 s) until it has written its
  // port file. False if it exited or did not become ready; last_error() and
  // stderr_text() say why.
  bool start();
  // SIGTERM, then wait for exit. Returns the exit code (or 128+signal).
  int stop();
  // Waits (bounded) for the daemon to exit on its own: its exit code (or
  // 128+signal), or -1 if it is still running after `timeout`.
  int wait_exit(std::chrono::milliseconds timeout);
  // SIGKILL, then reap. The region file stays.
  void kill9();
  // kill9() (if running) then start() on the same region and options.
  bool restart();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_}; }
  const std::string& region_path() const { return region_path_; }
  const std::string& secret_path() const { return secret_path_; }
  const MemdOptions& options() const { return options_; }
  // The daemon's stderr so far (it is redirected to a file in the dir).
  std::string stderr_text() const;
  const std::string& last_error() const { return error_; }

  // Identity of a compute node (or admin when compute_id == 0) that the
  // daemon accepts.
  ClientIdentity identity(uint16_t compute_id) const;

  // The argv the daemon is started with (binary first), for tests that want
  // to run the binary themselves with changed flags.
  std::vector<std::string> argv() const;

 private:
  std::string dir_;
  MemdOptions options_;
  std::string region_path_, secret_path_, port_path_, stderr_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string error_;
};

// Runs `argv` (argv[0] is the binary path) to completion with a deadline;
// returns the exit code (128+signal if killed) and fills *output with
// stdout+stderr. -1 if it could not be started or exceeded the deadline (it is
// then killed).
int run_command(const std::vector<std::string>& argv, std::string* output, int timeout_seconds = 30);

// Path of the built pandora-memd binary.
const char* memd_binary();

}  // namespace pandora::testing
