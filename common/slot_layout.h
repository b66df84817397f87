// A table slot (ARCHITECTURE.md 3): cache-line aligned, header then value.
//
//   key (8) | latch (8) | version (8) | meta (8) | value (table's value size)
//
// Latch and version are adjacent so one 16-byte READ returns both (the
// validation phase reads exactly that). Each table has its own value size,
// hence its own slot size: no "one slot size for every table".
#pragma once

#include <cstddef>
#include <cstdint>

namespace pandora {

struct SlotHeader {
  uint64_t key;
  uint64_t latch;    // see latch.h
  uint64_t version;  // +1 on every committed write, insert and delete
  uint64_t meta;     // bits 63..32 flags (SlotFlags), bits 31..0 value length
};
static_assert(sizeof(SlotHeader) == 32);
static_assert(offsetof(SlotHeader, key) == 0);
static_assert(offsetof(SlotHeader, latch) == 8);
static_assert(offsetof(SlotHeader, version) == 16);
static_assert(offsetof(SlotHeader, meta) == 24);

inline constexpr uint64_t kSlotLatchOffset = offsetof(SlotHeader, latch);
inline constexpr uint64_t kSlotVersionOffset = offsetof(SlotHeader, version);
inline constexpr uint32_t kCacheLine = 64;

enum SlotFlags : uint32_t {
  kSlotOccupied = 1u << 0,  // holds a live row (cleared by a committed delete)
};

inline constexpr uint64_t make_slot_meta(uint32_t flags, uint32_t value_len) {
  return (uint64_t{flags} << 32) | value_len;
}
inline constexpr uint32_t slot_meta_flags(uint64_t meta) { return static_cast<uint32_t>(meta >> 32); }
inline constexpr uint32_t slot_meta_len(uint64_t meta) { return static_cast<uint32_t>(meta); }

// Bytes one slot of a table with `value_size`-byte values occupies.
inline constexpr uint64_t slot_size(uint32_t value_size) {
  return (sizeof(SlotHeader) + uint64_t{value_size} + kCacheLine - 1) / kCacheLine * kCacheLine;
}
static_assert(slot_size(0) == 64);
static_assert(slot_size(32) == 64);
static_assert(slot_size(33) == 128);
static_assert(slot_size(671) == 704);  // TPC-C's largest rows

}  // namespace pandora
