// Small parameter helpers the TATP and TPC-C generators share: uniform
// integers in a closed range and random digit / letter strings.
#pragma once

#include <cstdint>
#include <string>

#include "workloads/bench/rng.h"

namespace pandora::workloads {

// Uniform in [lo, hi].
inline uint64_t rand_between(Rng& rng, uint64_t lo, uint64_t hi) { return lo + rng.uniform(hi - lo + 1); }

// `n` random decimal digits.
inline std::string random_digits(Rng& rng, uint64_t n) {
  std::string s(n, '0');
  for (char& c : s) c = static_cast<char>('0' + rng.uniform(10));
  return s;
}

// `n` random upper-case letters.
inline std::string random_letters(Rng& rng, uint64_t n) {
  std::string s(n, 'A');
  for (char& c : s) c = static_cast<char>('A' + rng.uniform(26));
  return s;
}

}  // namespace pandora::workloads
