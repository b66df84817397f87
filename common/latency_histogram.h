// A small log-linear latency histogram (HDR-style): exact below 64 ns, then
// 32 sub-buckets per power of two, i.e. at most ~3% relative error, in a
// fixed 16 KiB of counters. Recording is one bit_width and one increment, so
// it can sit inside a benchmark's timed loop.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace pandora {

class LatencyHistogram {
 public:
  void record(uint64_t ns) {
    ++buckets_[bucket_of(ns)];
    ++count_;
    sum_ += ns;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
  }

  void merge(const LatencyHistogram& other);
  void reset() { *this = LatencyHistogram(); }

  uint64_t count() const { return count_; }
  uint64_t sum() const { return sum_; }
  // Samples in bucket `b` (0 <= b < kBuckets): with sum/min/max, everything
  // a report needs to carry so that histograms of several processes can be
  // merged exactly later (percentiles cannot be averaged).
  uint64_t bucket_count(int b) const { return buckets_[static_cast<std::size_t>(b)]; }
  // The inverse: a histogram from its bucket counts (index, samples) and
  // exact sum, min and max, as bucket_count()/sum()/min()/max() returned
  // them. The caller validates (indexes in range, min <= max).
  static LatencyHistogram from_buckets(const std::vector<std::pair<int, uint64_t>>& buckets, uint64_t sum,
                                       uint64_t min, uint64_t max);
  uint64_t max() const { return count_ ? max_ : 0; }
  uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }

  // The value at quantile q in [0, 1] (0.5 = median, 0.999 = p99.9): the
  // midpoint of the bucket holding the ceil(q * count)-th smallest sample,
  // clamped to [min, max]. 0 when empty.
  uint64_t percentile(double q) const;

  static constexpr int kSubBits = 5;                     // 32 sub-buckets per octave
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr uint64_t kLinear = 2 * kSub;          // [0, 64) recorded exactly
  static constexpr int kBuckets = static_cast<int>(kLinear + (64 - kSubBits - 1) * kSub);

  static int bucket_of(uint64_t v);
  // Smallest and one-past-largest value mapping to bucket `b`.
  static uint64_t bucket_low(int b);
  static uint64_t bucket_high(int b);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = UINT64_MAX;
};

}  // namespace pandora
