#include "tests/support/memd_cluster.h"

namespace pandora::testing {

MemdCluster::MemdCluster(size_t nodes, std::string size, std::string log_size) {
  for (size_t i = 0; i < nodes; ++i) {
    MemdOptions o;
    o.node_id = static_cast<uint32_t>(i + 1);
    o.size = size;
    o.log_size = log_size;
    auto m = std::make_unique<MemdProcess>(dir_.path(), o);
    if (!m->start()) {
      error_ = "memd " + std::to_string(i + 1) + ": " + m->last_error() + "\n" + m->stderr_text();
      return;
    }
    memds_.push_back(std::move(m));
  }
}

ComputeConfig MemdCluster::config(uint16_t pid, Backend backend, uint32_t replicas, ProtocolMode mode) const {
  ComputeConfig c;
  ClientIdentity id = memds_[0]->identity(pid);
  c.cluster_id = id.cluster_id;
  c.secret = id.secret;
  c.compute_id = pid;
  for (const auto& m : memds_) c.memory_nodes.push_back(m->endpoint());
  c.backend = backend;
  c.replicas = replicas;
  c.threads = 1;
  c.coordinators = 4;
  c.protocol = mode;
  c.shards = 64;
  c.lane_bytes = kTestLaneBytes;
  return c;
}

std::string MemdCluster::endpoints() const {
  std::string out;
  for (const auto& m : memds_) out += (out.empty() ? "" : ",") + m->endpoint().to_string();
  return out;
}

}  // namespace pandora::testing
