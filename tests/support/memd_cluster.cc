#include "tests/support/memd_cluster.h"

namespace pandora::testing {

namespace {

LocalMemdOptions cluster_options(std::string size, std::string log_size) {
  MemdOptions o;
  o.size = std::move(size);
  o.log_size = std::move(log_size);
  return local_memd_options(o);
}

}  // namespace

MemdCluster::MemdCluster(size_t nodes, std::string size, std::string log_size)
    : memds_(nodes, cluster_options(std::move(size), std::move(log_size)), dir_.path()) {
  if (Status s = memds_.start(); !s) error_ = s.message();
}

ComputeConfig MemdCluster::config(uint16_t pid, Backend backend, uint32_t replicas, ProtocolMode mode) const {
  ComputeConfig c;
  c.cluster_id = memds_.cluster_id();
  c.secret = memds_.secret();
  c.compute_id = pid;
  c.memory_nodes = memds_.endpoints();
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
  for (const Endpoint& e : memds_.endpoints()) out += (out.empty() ? "" : ",") + e.to_string();
  return out;
}

}  // namespace pandora::testing
