// Starts a private pandora-memd for a benchmark: region on /dev/shm (with
// PMEM_IS_PMEM_FORCE=1, so it takes the real-PM flush path), loopback port 0
// published through --port-file, a fresh secret file (mode 600). The daemon
// is stopped (SIGTERM, then SIGKILL after a bounded wait) and its files are
// removed by the destructor, always by its own pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/client.h"

namespace pandora {

struct MemdLaunchOptions {
  std::string binary;               // path of pandora-memd
  std::string size = "64M";         // region size
  std::string log_size = "1M";
  uint32_t threads = 1;
  uint32_t node_id = 1;
  uint64_t cluster_id = 0xbe7c4;
  std::string log_level = "warn";
  std::vector<std::string> extra_args;  // appended to the daemon's argv
  std::chrono::seconds start_timeout{30};
};

class MemdLauncher {
 public:
  explicit MemdLauncher(MemdLaunchOptions options) : options_(std::move(options)) {}
  ~MemdLauncher();
  MemdLauncher(const MemdLauncher&) = delete;
  MemdLauncher& operator=(const MemdLauncher&) = delete;

  // Creates the directory, secret and starts the daemon; returns once the
  // daemon has published its port (or failed: the status carries the tail of
  // its log).
  Status start();
  // SIGTERM, bounded wait, SIGKILL. Returns the exit status (128+signal when
  // killed by a signal), -1 when nothing was running.
  int stop();

  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_}; }
  ClientIdentity identity(uint16_t compute_id) const;
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }

 private:
  std::string log_tail() const;

  MemdLaunchOptions options_;
  std::string dir_, secret_, region_path_, secret_path_, port_path_, log_path_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace pandora
