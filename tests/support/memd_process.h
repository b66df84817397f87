// Test harness: runs a real pandora-memd as a child process on loopback.
//
//   TempDir dir;                       // removed (recursively) on destruction
//   MemdProcess memd(dir.path(), {.node_id = 1});
//   ASSERT_TRUE(memd.start()) << memd.last_error();
//   ClientIdentity id = memd.identity(/*compute_id=*/7);
//   auto conn = open_connection(memd.endpoint(), id, {.backend = Backend::kTcp});
//   memd.stop();                       // SIGTERM + wait; returns exit status
//
// A thin layer over pandora::LocalMemd (testing/local_memd.h), which does the
// work and documents it: it adds the test defaults (the daemon built with the
// tests, a fixed cluster id and secret, a 16M region) and the names the tests
// use. The region lives in the temp dir (on /dev/shm when available) so it
// survives kill -9 of the daemon; restart() starts a new daemon on the same
// region. Every process started is killed and reaped by pid in the
// destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "testing/local_memd.h"

namespace pandora::testing {

// A fresh directory under /dev/shm (or $TMPDIR, or /tmp); removed with its
// content on destruction. Throws std::runtime_error if it cannot be created
// (a test cannot go on without it).
class TempDir : public pandora::TempDir {
 public:
  TempDir();
};

// Test defaults for LocalMemdOptions (field order matters: tests use
// designated initializers).
struct MemdOptions {
  uint32_t node_id = 1;
  uint64_t cluster_id = 0x5eed;
  std::string size = "16M";
  std::string log_size = "1M";
  uint32_t threads = 1;
  std::string secret = "test-secret-0123456789";
  std::vector<std::string> extra_args;  // appended verbatim (an --exit-with-pid here replaces the default)
};

// The LocalMemdOptions of `o`, running memd_binary().
LocalMemdOptions local_memd_options(const MemdOptions& o);

// A LocalMemd with files in `dir` (named by node id, so several can share
// it). start(), restart() return Status (true when ok); stop(), wait_exit(),
// kill9(), endpoint(), identity(), region_path(), secret_path(), options(),
// argv(), last_error() are LocalMemd's.
class MemdProcess : public LocalMemd {
 public:
  MemdProcess(std::string dir, MemdOptions options = {})
      : LocalMemd(std::move(dir), local_memd_options(options)) {}

  // The daemon's stderr (and stdout) so far, all starts.
  std::string stderr_text() const { return log_text(); }
};

// Runs `argv` (argv[0] is the binary path) to completion with a deadline;
// returns the exit code (128+signal if killed) and fills *output with
// stdout+stderr. -1 if it could not be started or exceeded the deadline (it is
// then killed).
int run_command(const std::vector<std::string>& argv, std::string* output, int timeout_seconds = 30);

// Path of the built pandora-memd binary.
const char* memd_binary();

}  // namespace pandora::testing
