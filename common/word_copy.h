// Copies between local memory and a region that other parties modify with
// 8-byte atomics (latch and version words). Every aligned 8-byte word of the
// region side is accessed with a single 8-byte load or store, so a copy never
// observes or produces half of a word changed by a concurrent CAS/FAA - the
// guarantee an RDMA NIC gives for aligned words. Unaligned heads and tails go
// byte by byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pandora {

// Region -> local.
inline void copy_from_region(void* dst, const uint8_t* src, size_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  while (len > 0 && (reinterpret_cast<uintptr_t>(src) & 7) != 0) {
    *d++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
    --len;
  }
  for (; len >= 8; len -= 8, src += 8, d += 8) {
    uint64_t w = __atomic_load_n(reinterpret_cast<const uint64_t*>(src), __ATOMIC_RELAXED);
    std::memcpy(d, &w, 8);
  }
  while (len-- > 0) *d++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
}

// Local -> region; the mirror image of copy_from_region.
inline void copy_to_region(uint8_t* dst, const void* src_v, size_t len) {
  auto* s = static_cast<const uint8_t*>(src_v);
  while (len > 0 && (reinterpret_cast<uintptr_t>(dst) & 7) != 0) {
    __atomic_store_n(dst++, *s++, __ATOMIC_RELAXED);
    --len;
  }
  for (; len >= 8; len -= 8, s += 8, dst += 8) {
    uint64_t w;
    std::memcpy(&w, s, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst), w, __ATOMIC_RELAXED);
  }
  while (len-- > 0) __atomic_store_n(dst++, *s++, __ATOMIC_RELAXED);
}

}  // namespace pandora
