#include "common/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace pandora {
namespace {

TEST(LatencyHistogram, EmptyReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.5), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 60; ++v) h.record(v);
  EXPECT_EQ(h.percentile(0.5), 30u);
  EXPECT_EQ(h.percentile(1.0), 60u);
  EXPECT_EQ(h.percentile(0.0), 1u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 30.5);
}

TEST(LatencyHistogram, BucketsTileTheRange) {
  // Every bucket starts where the previous one ended, and each value maps
  // into the bucket whose bounds contain it.
  for (int b = 1; b < LatencyHistogram::kBuckets; ++b) {
    ASSERT_EQ(LatencyHistogram::bucket_low(b), LatencyHistogram::bucket_high(b - 1)) << "bucket " << b;
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const int b = LatencyHistogram::bucket_of(v);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, LatencyHistogram::kBuckets);
    ASSERT_LE(LatencyHistogram::bucket_low(b), v);
    if (LatencyHistogram::bucket_high(b) != UINT64_MAX) ASSERT_LT(v, LatencyHistogram::bucket_high(b));
  }
  EXPECT_EQ(LatencyHistogram::bucket_of(UINT64_MAX), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, PercentilesWithinThreePercent) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(9.0, 1.0);  // ~8 us median, long tail
  std::vector<uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<uint64_t>(dist(rng));
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto idx = static_cast<size_t>(q * values.size()) - 1;
    const double exact = static_cast<double>(values[idx]);
    EXPECT_NEAR(static_cast<double>(h.percentile(q)), exact, exact * 0.03) << "q=" << q;
  }
}

TEST(LatencyHistogram, MergeAddsCounts) {
  LatencyHistogram a, b;
  for (int i = 0; i < 100; ++i) a.record(1000);
  for (int i = 0; i < 100; ++i) b.record(100000);
  a.merge(b);
  EXPECT_EQ(a.count(), 200u);
  EXPECT_EQ(a.min(), 1000u);
  EXPECT_EQ(a.max(), 100000u);
  EXPECT_NEAR(static_cast<double>(a.percentile(0.25)), 1000.0, 30.0);
  EXPECT_NEAR(static_cast<double>(a.percentile(0.75)), 100000.0, 3000.0);
}

}  // namespace
}  // namespace pandora
