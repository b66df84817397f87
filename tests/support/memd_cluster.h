// Test fixture: several real pandora-memd daemons (node ids 1..N) in one
// temporary directory, and compute-node configurations that reach them.
//
//   MemdCluster memds(2);
//   ASSERT_TRUE(memds.ok()) << memds.error();
//   ComputeConfig cfg = memds.config(/*pid=*/1, Backend::kShm, /*replicas=*/2);
//
// The daemons are a pandora::LocalMemdCluster (testing/local_memd.h) with the
// test defaults of MemdOptions.
#pragma once

#include <string>

#include "compute/compute_config.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {

// 4 KiB lanes: a 2 MiB log area then holds 8 compute pids (64 lanes each).
inline constexpr uint32_t kTestLaneBytes = 4096;

class MemdCluster {
 public:
  // Starts `nodes` daemons; ok() is false (error() says why) if one failed.
  explicit MemdCluster(size_t nodes, std::string size = "16M", std::string log_size = "2M");
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // A compute node `pid` on `backend`: 1 thread x 4 coordinators, 64 shards,
  // test-sized lanes. Tests adjust the rest.
  ComputeConfig config(uint16_t pid, Backend backend, uint32_t replicas,
                       ProtocolMode mode = ProtocolMode::kPandora) const;
  // "127.0.0.1:PORT,..." for --memory-nodes.
  std::string endpoints() const;
  LocalMemd& memd(size_t i) { return memds_.node(i); }
  size_t size() const { return memds_.size(); }

 private:
  TempDir dir_;  // before memds_: the daemons are killed before it is removed
  LocalMemdCluster memds_;
  std::string error_;
};

}  // namespace pandora::testing
