#include "common/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace pandora {

int LatencyHistogram::bucket_of(uint64_t v) {
  if (v < kLinear) return static_cast<int>(v);
  // shift >= 1 puts v >> shift in [kSub, 2 * kSub).
  const int shift = std::bit_width(v) - (kSubBits + 1);
  return static_cast<int>(kLinear + static_cast<uint64_t>(shift - 1) * kSub + ((v >> shift) - kSub));
}

uint64_t LatencyHistogram::bucket_low(int b) {
  const auto ub = static_cast<uint64_t>(b);
  if (ub < kLinear) return ub;
  const uint64_t rel = ub - kLinear;
  const int shift = static_cast<int>(rel / kSub) + 1;
  return (kSub + rel % kSub) << shift;
}

uint64_t LatencyHistogram::bucket_high(int b) {
  const auto ub = static_cast<uint64_t>(b);
  if (ub < kLinear) return ub + 1;
  const uint64_t rel = ub - kLinear;
  const int shift = static_cast<int>(rel / kSub) + 1;
  const uint64_t low = (kSub + rel % kSub) << shift;
  const uint64_t width = uint64_t{1} << shift;
  // The last bucket ends at 2^64, which does not fit: saturate.
  return low > UINT64_MAX - width ? UINT64_MAX : low + width;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (int b = 0; b < kBuckets; ++b) buckets_[b] += other.buckets_[b];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

LatencyHistogram LatencyHistogram::from_buckets(const std::vector<std::pair<int, uint64_t>>& buckets, uint64_t sum,
                                                uint64_t min, uint64_t max) {
  LatencyHistogram h;
  for (const auto& [b, n] : buckets) {
    h.buckets_[static_cast<std::size_t>(b)] += n;
    h.count_ += n;
  }
  if (h.count_ > 0) {
    h.sum_ = sum;
    h.min_ = min;
    h.max_ = max;
  }
  return h;
}

uint64_t LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      const uint64_t low = bucket_low(b);
      const uint64_t mid = low + (bucket_high(b) - low) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

}  // namespace pandora
