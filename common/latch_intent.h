// A log-a-latch latch intent (protocol mode `log-a-latch`, seed 4.5.3's
// naive scheme): before each latch CAS the coordinator writes one intent,
// naming the slot it is about to latch and the latch word it will put
// there, to the tail of its lane on each of its f+1 log nodes, and waits.
// Intents grow down from the lane's end (the k-th intent of a transaction
// at lane_bytes - k * 64); the log record grows up from the start.
//
// Recovery uses them to release every latch the failed node may hold,
// logged or not, instead of leaving unlogged ones to be stolen. An intent
// carries no checksum: it is only ever used to CAS a latch word of the
// failed pid back to free, which is harmless for a torn or stale intent
// (the CAS compares the pid, and every latch of a recovered pid is stray).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pandora {

inline constexpr uint32_t kLatchIntentMagic = 0x4354414c;  // bytes "LATC"

struct LatchIntent {
  uint32_t magic;     // kLatchIntentMagic
  uint32_t table_id;
  uint64_t txn_id;    // the latch word the coordinator installs (pid | coordinator | seq)
  uint64_t key;
  uint64_t slot;      // region offset of the slot (the same on every replica)
  uint64_t reserved[4];
};
static_assert(sizeof(LatchIntent) == 64);
static_assert(offsetof(LatchIntent, txn_id) == 8);
static_assert(offsetof(LatchIntent, key) == 16);
static_assert(offsetof(LatchIntent, slot) == 24);

inline constexpr uint32_t kLatchIntentBytes = sizeof(LatchIntent);

// Offset, from the start of a lane of `lane_bytes`, of a transaction's k-th
// intent (k >= 1).
inline constexpr uint64_t latch_intent_offset(uint32_t lane_bytes, uint32_t k) {
  return lane_bytes - uint64_t{k} * kLatchIntentBytes;
}

}  // namespace pandora
