#include "compute/placement.h"

#include <algorithm>

#include <fmt/format.h>

namespace pandora {

namespace {

// x with x * a == 1 (mod 2^64), a odd: Newton's iteration doubles the
// correct low bits each step (3 -> 6 -> ... -> 96).
constexpr uint64_t inverse(uint64_t a) {
  uint64_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
static_assert(inverse(0xbf58476d1ce4e5b9ull) * 0xbf58476d1ce4e5b9ull == 1);
static_assert(inverse(0x94d049bb133111ebull) * 0x94d049bb133111ebull == 1);

// The inverse of y = x ^ (x >> s).
constexpr uint64_t unshift(uint64_t y, int s) {
  uint64_t x = y;
  for (int k = s; k < 64; k += s) x = y ^ (x >> s);
  return x;
}

}  // namespace

uint64_t unmix64(uint64_t h) {
  uint64_t x = unshift(h, 31);
  x = unshift(x * inverse(0x94d049bb133111ebull), 27);
  x = unshift(x * inverse(0xbf58476d1ce4e5b9ull), 30);
  return x - 0x9e3779b97f4a7c15ull;
}

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
