// Where a key can live in a table, and how to read a slot image.
//
// A key's probe path is max_probe consecutive buckets starting at its home
// bucket mix64(key ^ salt(table)) % bucket_count, wrapping around. The
// loader and inserts put a key into the first slot of its path that is free
// on EVERY replica of its shard: memory nodes share the table geometry but
// hold different shards, so a slot that is free on the primary may hold a
// key of another shard on a backup (see txn_engine.h, "Inserts"). A lookup
// therefore cannot stop at the first free slot of the primary; it scans the
// path until it finds the key (slot.key == key and occupied).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "common/slot_layout.h"
#include "common/table_directory.h"
#include "compute/placement.h"

namespace pandora {

// Distinct from Placement::shard_of's salt so bucket and shard are
// independent functions of the key.
inline constexpr uint64_t table_salt(uint32_t table_id) {
  return 0x7ab1e5a170000000ull ^ (uint64_t{table_id} * 0x9e3779b97f4a7c15ull);
}

inline uint64_t home_bucket(const TableEntry& t, uint64_t key) {
  return mix64(key ^ table_salt(t.table_id)) % t.bucket_count;
}
inline uint64_t path_bucket(const TableEntry& t, uint64_t home, uint32_t step) {
  return (home + step) % t.bucket_count;
}
inline uint64_t bucket_bytes(const TableEntry& t) { return t.slot_bytes * t.slots_per_bucket; }
inline uint64_t bucket_offset(const TableEntry& t, uint64_t bucket) { return t.offset + bucket * bucket_bytes(t); }
inline uint64_t slot_offset(const TableEntry& t, uint64_t bucket, uint32_t slot) {
  return bucket_offset(t, bucket) + uint64_t{slot} * t.slot_bytes;
}
// Whether `offset` is the start of a slot of `t` (recovery checks log entries).
inline bool is_slot_offset(const TableEntry& t, uint64_t offset) {
  return offset >= t.offset && offset < t.offset + t.bucket_count * bucket_bytes(t) &&
         (offset - t.offset) % t.slot_bytes == 0;
}

// Read-only view of a slot image (header then value) in a local buffer.
class SlotView {
 public:
  explicit SlotView(const uint8_t* p) : p_(p) {}
  uint64_t key() const { return load(0); }
  uint64_t latch() const { return load(kSlotLatchOffset); }
  uint64_t version() const { return load(kSlotVersionOffset); }
  uint64_t meta() const { return load(24); }
  bool occupied() const { return (slot_meta_flags(meta()) & kSlotOccupied) != 0; }
  const uint8_t* value() const { return p_ + sizeof(SlotHeader); }

 private:
  uint64_t load(uint64_t off) const {
    uint64_t v;
    std::memcpy(&v, p_ + off, sizeof v);
    return v;
  }
  const uint8_t* p_;
};

inline void store_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }
inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace pandora
