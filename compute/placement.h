// Where data and logs live (ARCHITECTURE.md 3, "Placement").
//
//   key   -> shard            by hash (fixed shard count per cluster)
//   shard -> f+1 memory nodes by consistent hashing over the nodes of the
//                             current configuration epoch
//   pid   -> f+1 log nodes    by the same ring, keyed by the pid
//
// The first *live* node of a replica list is the primary. Consistent hashing
// keeps placement stable: removing one node only moves the shards that node
// held, which is what lets compute nodes switch primaries deterministically
// after a memory-node failure without talking to each other.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace pandora {

// 64-bit mixer (splitmix64 finaliser): cheap, good avalanche, stable across
// builds and platforms - placement must never change with the compiler.
inline constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The inverse of mix64: unmix64(mix64(x)) == x for every x.
uint64_t unmix64(uint64_t h);

class Placement {
 public:
  static constexpr uint32_t kVirtualNodes = 64;  // ring points per memory node

  // `node_ids` are the memory-node ids of the configuration (order does not
  // matter); `replicas` is f+1 (1..node count); `shards` > 0.
  static Result<Placement> create(std::vector<uint32_t> node_ids, uint32_t replicas, uint32_t shards);

  uint32_t replicas() const { return replicas_; }
  uint32_t shards() const { return shards_; }
  const std::vector<uint32_t>& nodes() const { return node_ids_; }

  uint32_t shard_of(uint32_t table_id, uint64_t key) const {
    return static_cast<uint32_t>(mix64(key ^ (uint64_t{table_id} << 56)) % shards_);
  }
  // The f+1 memory-node ids holding `shard`, in preference order.
  std::span<const uint32_t> replicas_of_shard(uint32_t shard) const {
    return {&shard_replicas_[size_t{shard} * replicas_], replicas_};
  }
  // The f+1 memory-node ids holding compute node `pid`'s log lanes.
  std::vector<uint32_t> log_nodes_of(uint16_t pid) const;

 private:
  Placement() = default;
  std::vector<uint32_t> walk_ring(uint64_t point) const;

  std::vector<uint32_t> node_ids_;
  uint32_t replicas_ = 0;
  uint32_t shards_ = 0;
  std::vector<std::pair<uint64_t, uint32_t>> ring_;  // (point, node id), sorted
  std::vector<uint32_t> shard_replicas_;             // shards_ x replicas_
};

}  // namespace pandora
