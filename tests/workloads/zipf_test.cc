// The Zipf generator (Gray et al.), the Rng and the latency histogram:
// properties, not exact sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "workloads/bench/rng.h"
#include "workloads/bench/zipf.h"

namespace pandora::workloads {
namespace {

std::vector<uint64_t> histogram(const ZipfGenerator& z, uint64_t seed, uint64_t samples) {
  std::vector<uint64_t> counts(z.n(), 0);
  Rng rng(seed);
  for (uint64_t i = 0; i < samples; ++i) {
    const uint64_t r = z.next(rng);
    EXPECT_LT(r, z.n());
    if (r < z.n()) ++counts[r];
  }
  return counts;
}

TEST(Zipf, RankFrequenciesMatchTheoryAtTheta099) {
  constexpr uint64_t kN = 10000;
  constexpr uint64_t kSamples = 2'000'000;
  auto z = ZipfGenerator::create(kN, 0.99);
  ASSERT_TRUE(z) << z.status().to_string();
  const auto counts = histogram(*z, 42, kSamples);
  // Rank 1 (index 0) takes ~10% of the draws at theta 0.99, n = 10^4.
  const double p0 = z->probability(0);
  EXPECT_NEAR(p0, 1.0 / ZipfGenerator::zeta(kN, 0.99), 1e-12);
  EXPECT_GT(p0, 0.09);
  EXPECT_LT(p0, 0.12);
  auto sigma = [&](double p) { return std::sqrt(p * (1 - p) / kSamples); };
  // Ranks 1 and 2 (indexes 0, 1) are drawn exactly by Gray's method.
  for (uint64_t rank : {0, 1}) {
    const double observed = static_cast<double>(counts[rank]) / kSamples;
    EXPECT_NEAR(observed, z->probability(rank), 5 * sigma(z->probability(rank))) << "rank " << rank;
  }
  // Beyond them the closed form is a continuous approximation: it is known
  // to over-weight ranks 3..5 (by up to ~20% at theta 0.99) and is accurate
  // further out.
  for (uint64_t rank : {2, 3, 4}) {
    const double observed = static_cast<double>(counts[rank]) / kSamples;
    EXPECT_NEAR(observed, z->probability(rank), 0.25 * z->probability(rank)) << "rank " << rank;
  }
  for (uint64_t rank : {9, 99, 999}) {
    const double observed = static_cast<double>(counts[rank]) / kSamples;
    const double expected = z->probability(rank);
    EXPECT_NEAR(observed, expected, 5 * sigma(expected) + 0.05 * expected) << "rank " << rank;
  }
  // The hot set's total weight is close to theory.
  double top = 0, top_expected = 0;
  for (uint64_t rank = 0; rank < 100; ++rank) {
    top += static_cast<double>(counts[rank]) / kSamples;
    top_expected += z->probability(rank);
  }
  EXPECT_NEAR(top, top_expected, 0.04 * top_expected);
  // Frequencies fall with rank.
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], counts[9]);
  EXPECT_GT(counts[9], counts[999]);
}

TEST(Zipf, ThetaZeroIsUniform) {
  constexpr uint64_t kN = 100;
  constexpr uint64_t kSamples = 1'000'000;
  auto z = ZipfGenerator::create(kN, 0.0);
  ASSERT_TRUE(z);
  const auto counts = histogram(*z, 7, kSamples);
  const double expected = static_cast<double>(kSamples) / kN;
  double chi2 = 0;
  for (uint64_t c : counts) {
    const double diff = static_cast<double>(c) - expected;
    chi2 += diff * diff / expected;
  }
  // 99 degrees of freedom: the 99.9th percentile of chi-square is ~149.
  EXPECT_LT(chi2, 149.0);
  EXPECT_NEAR(z->probability(0), 1.0 / kN, 1e-12);
}

TEST(Zipf, DeterministicBySeed) {
  auto z = ZipfGenerator::create(1'000'000, 0.99);
  ASSERT_TRUE(z);
  Rng a(123), b(123), c(124);
  std::vector<uint64_t> sa, sb, sc;
  for (int i = 0; i < 1000; ++i) {
    sa.push_back(z->next(a));
    sb.push_back(z->next(b));
    sc.push_back(z->next(c));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
  // Per-coordinator streams differ from each other but repeat per seed.
  Rng c0 = Rng::for_coordinator(1, 2, 0), c1 = Rng::for_coordinator(1, 2, 1), c0b = Rng::for_coordinator(1, 2, 0);
  const uint64_t x0 = c0.next();
  EXPECT_NE(x0, c1.next());
  EXPECT_EQ(x0, c0b.next());
}

TEST(Zipf, TinyDomainsAndBadParameters) {
  for (uint64_t n : {1, 2, 3}) {
    auto z = ZipfGenerator::create(n, 0.99);
    ASSERT_TRUE(z);
    Rng rng(1);
    std::vector<uint64_t> counts(n, 0);
    for (int i = 0; i < 10000; ++i) {
      const uint64_t r = z->next(rng);
      ASSERT_LT(r, n);
      ++counts[r];
    }
    for (uint64_t r = 0; r < n; ++r) EXPECT_GT(counts[r], 0u) << "n " << n << " rank " << r;
  }
  EXPECT_FALSE(ZipfGenerator::create(0, 0.5));
  auto one = ZipfGenerator::create(10, 1.0);
  ASSERT_FALSE(one);
  EXPECT_NE(one.status().message().find("--zipf-theta"), std::string::npos);
  EXPECT_FALSE(ZipfGenerator::create(10, -0.1));
  EXPECT_FALSE(ZipfGenerator::create(10, std::nan("")));
}

TEST(Zipf, LargeDomainZetaApproximationIsAccurate) {
  // Just past the exact-summation limit, compare with a full sum.
  const uint64_t n = ZipfGenerator::kExactZetaLimit + 12345;
  double exact = 0;
  for (uint64_t i = n; i >= 1; --i) exact += std::pow(static_cast<double>(i), -0.99);
  EXPECT_NEAR(ZipfGenerator::zeta(n, 0.99), exact, exact * 1e-10);
  // A billion keys start quickly and still draw in range.
  auto z = ZipfGenerator::create(1'000'000'000, 0.99);
  ASSERT_TRUE(z);
  Rng rng(5);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(z->next(rng), 1'000'000'000u);
}

TEST(Rng, UniformStaysInRangeAndCoversIt) {
  Rng rng(9);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t v = rng.uniform(7);
    ASSERT_LT(v, 7u);
    ++seen[v];
  }
  for (int c : seen) EXPECT_GT(c, 800);
  for (int i = 0; i < 1000; ++i) {
    const double d = rng.uniform01();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
  EXPECT_FALSE(rng.chance(0.0));
  EXPECT_TRUE(rng.chance(1.0));
}

}  // namespace
}  // namespace pandora::workloads
