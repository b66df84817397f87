// Zipf-distributed ranks, after Gray et al., "Quickly Generating
// Billion-Record Synthetic Databases" (SIGMOD 1994), section on skewed
// distributions: one uniform draw and at most one pow() per sample, after an
// O(n) (or, for large n, O(1)-approximated) normalisation at construction.
//
//   auto z = ZipfGenerator::create(/*n=*/1'000'000, /*theta=*/0.99);
//   uint64_t rank = z->next(rng);      // 0 is the most frequent rank
//
// P(rank = i) = 1 / ((i + 1)^theta * zeta(n, theta)), i in [0, n).
// theta = 0 is the uniform distribution; theta must be < 1 (Gray's
// closed form has a singularity at 1). Deterministic: the sequence depends
// only on the Rng's seed.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "workloads/bench/rng.h"

namespace pandora::workloads {

class ZipfGenerator {
 public:
  // kInvalidArgument for n == 0 or theta outside [0, 1) (message names
  // --zipf-theta / the key count so callers can pass it on).
  static Result<ZipfGenerator> create(uint64_t n, double theta);

  uint64_t next(Rng& rng) const;

  uint64_t n() const { return n_; }
  double theta() const { return theta_; }
  // Theoretical probability of `rank` (what the tests compare against).
  double probability(uint64_t rank) const;

  // zeta(n, theta) = sum_{i=1..n} i^-theta. Exact below kExactZetaLimit;
  // above it the tail is an Euler-Maclaurin estimate (relative error far
  // below 1e-9), so start-up stays fast for billions of keys.
  static double zeta(uint64_t n, double theta);
  static constexpr uint64_t kExactZetaLimit = uint64_t{1} << 22;

 private:
  ZipfGenerator() = default;

  uint64_t n_ = 0;
  double theta_ = 0;
  double alpha_ = 0;  // 1 / (1 - theta)
  double zetan_ = 0;  // zeta(n, theta)
  double eta_ = 0;
  double two_threshold_ = 0;  // 1 + 0.5^theta: draws below it map to rank 1
};

}  // namespace pandora::workloads
