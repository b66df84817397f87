// Uniform integers in a closed range, for the TATP and TPC-C parameter
// generators (random strings: workloads/bench/rng.h).
#pragma once

#include <cstdint>

#include "workloads/bench/rng.h"

namespace pandora::workloads {

// Uniform in [lo, hi].
inline uint64_t rand_between(Rng& rng, uint64_t lo, uint64_t hi) { return lo + rng.uniform(hi - lo + 1); }

}  // namespace pandora::workloads
