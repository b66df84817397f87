// The random-number generator every workload draws from.
//
// One Rng per coordinator (never shared between coroutines or threads), so a
// run is reproducible from its seed: the driver seeds coordinator c of
// compute node p with Rng::for_coordinator(seed, p, c).
//
// xoshiro256** (Blackman & Vigna): 256 bits of state, fast, and good enough
// for picking keys and transaction types; seeded through splitmix64 so that
// nearby seeds give unrelated streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pandora::workloads {

// A 64-bit mixer (the splitmix64 step): stable across builds, so data
// derived from it (row tags, initial balances) means the same in every run.
inline constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = splitmix(seed);
  }

  // A distinct, deterministic stream per (run seed, compute node, coordinator).
  static Rng for_coordinator(uint64_t seed, uint16_t compute_id, uint32_t coordinator) {
    return Rng(seed ^ (uint64_t{compute_id} << 40) ^ (uint64_t{coordinator} << 8) ^ 0x5851f42d4c957f2dull);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n) for n > 0 (multiply-shift: no division, bias < n/2^64).
  uint64_t uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // True with probability p (p <= 0: never, p >= 1: always).
  bool chance(double p) { return uniform01() < p; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    const uint64_t z = mix64(x);
    x += 0x9e3779b97f4a7c15ull;
    return z;
  }

  uint64_t s_[4];
};

// Uniform in [lo, hi] (the specifications' "random(lo, hi)").
inline uint64_t between(Rng& rng, uint64_t lo, uint64_t hi) { return lo + rng.uniform(hi - lo + 1); }

// `n` random decimal digits.
inline std::string random_digits(Rng& rng, size_t n) {
  std::string s(n, '0');
  for (char& c : s) c = static_cast<char>('0' + rng.uniform(10));
  return s;
}

// `n` random upper-case letters.
inline std::string random_letters(Rng& rng, size_t n) {
  std::string s(n, 'A');
  for (char& c : s) c = static_cast<char>('A' + rng.uniform(26));
  return s;
}

}  // namespace pandora::workloads
