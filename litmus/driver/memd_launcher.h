// Starts the pandora-memd daemons a litmus run uses when no --memory-nodes
// are given: loopback, port 0 (the daemon writes the port it bound to
// --port-file), regions on /dev/shm with PMEM_IS_PMEM_FORCE=1 (persistent
// memory semantics without PM, ARCHITECTURE.md 2b). Every daemon is killed by
// pid and reaped, and the directory removed, on destruction.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/endpoint.h"
#include "common/status.h"

namespace pandora::litmus {

struct LocalMemdOptions {
  std::string binary;  // path of pandora-memd
  size_t nodes = 3;
  uint64_t cluster_id = 0x11775;
  // 1 GiB of lanes at 2 KiB x 64 lanes per pid: 8192 pids, so long runs
  // with many crashes never run out (pids are never reused). /dev/shm pages
  // are only allocated when touched.
  std::string size = "1088M";
  std::string log_size = "1G";
};

class LocalMemds {
 public:
  explicit LocalMemds(LocalMemdOptions options) : options_(std::move(options)) {}
  ~LocalMemds();
  LocalMemds(const LocalMemds&) = delete;
  LocalMemds& operator=(const LocalMemds&) = delete;

  // Starts every daemon and waits (bounded, 20 s each) for its port file.
  Status start();
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  const std::string& secret() const { return secret_; }
  uint64_t cluster_id() const { return options_.cluster_id; }
  const std::string& dir() const { return dir_; }

 private:
  LocalMemdOptions options_;
  std::string dir_;
  std::string secret_ = "litmus-secret";
  std::vector<pid_t> pids_;
  std::vector<Endpoint> endpoints_;
};

}  // namespace pandora::litmus
