// The latch word: the 8-byte CAS target in every slot (ARCHITECTURE.md 3).
//
//   bits 63..48  owner pid         (compute node id; 0 is never issued)
//   bits 47..32  coordinator       (coroutine slot on that node)
//   bits 31..0   txn sequence      (per coordinator, wraps)
//
// 0 means free. Because the owner's pid is inside the word, a latch left by a
// crashed node is recognisable as stray by anyone who observes it, and can be
// stolen by a CAS of the exact observed word (implicit latch logging, seed
// 4.3.1.2). Only the owner releases a latch it holds.
#pragma once

#include <cstdint>

namespace pandora {

inline constexpr uint64_t kLatchFree = 0;

struct LatchOwner {
  uint16_t pid = 0;
  uint16_t coordinator = 0;
  uint32_t seq = 0;

  friend bool operator==(const LatchOwner&, const LatchOwner&) = default;
};

inline constexpr uint64_t encode_latch(LatchOwner o) {
  return (uint64_t{o.pid} << 48) | (uint64_t{o.coordinator} << 32) | uint64_t{o.seq};
}

inline constexpr LatchOwner decode_latch(uint64_t word) {
  return LatchOwner{static_cast<uint16_t>(word >> 48), static_cast<uint16_t>(word >> 32),
                    static_cast<uint32_t>(word)};
}

inline constexpr uint16_t latch_pid(uint64_t word) { return static_cast<uint16_t>(word >> 48); }

// A well-formed held latch has a non-zero pid: pid 0 is never issued, so a
// non-zero word with pid 0 can only come from corruption or a bug.
inline constexpr bool latch_is_well_formed(uint64_t word) { return word == kLatchFree || latch_pid(word) != 0; }

static_assert(decode_latch(encode_latch({0xABCD, 0x1234, 0xDEADBEEF})) ==
              LatchOwner{0xABCD, 0x1234, 0xDEADBEEF});
static_assert(latch_pid(encode_latch({7, 1, 1})) == 7);
static_assert(encode_latch({}) == kLatchFree);

}  // namespace pandora
