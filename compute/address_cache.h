// Per-worker-thread cache of where keys live: (table, key) -> slot offset.
//
// A hit lets an access skip the bucket READ(s) and go straight to the slot.
// Entries are hints, never trusted: every user verifies that the slot it
// reads (or latches) still holds the key, and on a mismatch invalidates the
// entry and falls back to the probe path. Owned by one worker thread and
// shared by its coordinators (they never run concurrently), so no locking.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "compute/placement.h"

namespace pandora {

class AddressCache {
 public:
  // At `capacity` entries the cache is cleared (cheap, bounded memory; a
  // hot set re-warms within a few transactions).
  explicit AddressCache(size_t capacity = 1 << 20) : capacity_(capacity) {}

  std::optional<uint64_t> get(uint32_t table, uint64_t key) const {
    auto it = map_.find(Key{table, key});
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void put(uint32_t table, uint64_t key, uint64_t slot) {
    if (map_.size() >= capacity_) map_.clear();
    map_[Key{table, key}] = slot;
  }
  void invalidate(uint32_t table, uint64_t key) { map_.erase(Key{table, key}); }
  size_t size() const { return map_.size(); }

 private:
  struct Key {
    uint32_t table;
    uint64_t key;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(mix64(k.key ^ (uint64_t{k.table} << 48))); }
  };
  size_t capacity_;
  std::unordered_map<Key, uint64_t, Hash> map_;
};

}  // namespace pandora
