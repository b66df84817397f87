#include "compute/placement.h"

#include <algorithm>

#include <fmt/format.h>

namespace pandora {

Result<Placement> Placement::create(std::vector<uint32_t> node_ids, uint32_t replicas, uint32_t shards) {
  std::sort(node_ids.begin(), node_ids.end());
  if (node_ids.empty()) return Result<Placement>(Errc::kInvalidArgument, "placement needs at least one memory node");
  if (std::adjacent_find(node_ids.begin(), node_ids.end()) != node_ids.end()) {
    return Result<Placement>(Errc::kInvalidArgument, "memory-node ids must be distinct");
  }
  if (replicas == 0 || replicas > node_ids.size()) {
    return Result<Placement>(Errc::kInvalidArgument,
                             fmt::format("--replicas {} needs between 1 and {} (the number of memory nodes)",
                                         replicas, node_ids.size()));
  }
  if (shards == 0) return Result<Placement>(Errc::kInvalidArgument, "shard count must be positive");

  Placement p;
  p.node_ids_ = std::move(node_ids);
  p.replicas_ = replicas;
  p.shards_ = shards;
  for (uint32_t id : p.node_ids_) {
    for (uint32_t v = 0; v < kVirtualNodes; ++v) {
      p.ring_.emplace_back(mix64((uint64_t{id} << 32) | v), id);
    }
  }
  std::sort(p.ring_.begin(), p.ring_.end());
  p.shard_replicas_.reserve(size_t{shards} * replicas);
  for (uint32_t s = 0; s < shards; ++s) {
    auto r = p.walk_ring(mix64(0x5a17ull << 40 | s));
    p.shard_replicas_.insert(p.shard_replicas_.end(), r.begin(), r.end());
  }
  return p;
}

std::vector<uint32_t> Placement::walk_ring(uint64_t point) const {
  std::vector<uint32_t> out;
  out.reserve(replicas_);
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(point, uint32_t{0}));
  for (size_t step = 0; step < ring_.size() && out.size() < replicas_; ++step, ++it) {
    if (it == ring_.end()) it = ring_.begin();
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  return out;
}

std::vector<uint32_t> Placement::log_nodes_of(uint16_t pid) const {
  return walk_ring(mix64(0x106ull << 40 | pid));
}

}  // namespace pandora
