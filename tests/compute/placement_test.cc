#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "compute/placement.h"
#include "compute/table_geometry.h"
#include "pandora/table.h"

namespace pandora {
namespace {

Placement make(std::vector<uint32_t> nodes, uint32_t replicas, uint32_t shards = 4096) {
  auto p = Placement::create(std::move(nodes), replicas, shards);
  EXPECT_TRUE(p) << p.status().to_string();
  return std::move(p).value();
}

TEST(Placement, RejectsBadConfigurations) {
  EXPECT_EQ(Placement::create({}, 1, 16).status().code(), Errc::kInvalidArgument);
  EXPECT_EQ(Placement::create({1, 2}, 3, 16).status().code(), Errc::kInvalidArgument);
  EXPECT_EQ(Placement::create({1, 2}, 0, 16).status().code(), Errc::kInvalidArgument);
  EXPECT_EQ(Placement::create({1, 1}, 1, 16).status().code(), Errc::kInvalidArgument);
  EXPECT_EQ(Placement::create({1, 2}, 1, 0).status().code(), Errc::kInvalidArgument);
}

TEST(Placement, ReplicaListsAreDistinctNodesOfTheConfiguration) {
  const Placement p = make({4, 9, 2, 7}, 3);
  for (uint32_t s = 0; s < p.shards(); ++s) {
    auto r = p.replicas_of_shard(s);
    ASSERT_EQ(r.size(), 3u);
    std::set<uint32_t> distinct(r.begin(), r.end());
    EXPECT_EQ(distinct.size(), 3u);
    for (uint32_t n : r) EXPECT_TRUE(n == 2 || n == 4 || n == 7 || n == 9);
  }
}

TEST(Placement, IndependentOfNodeOrder) {
  const Placement a = make({1, 2, 3}, 2), b = make({3, 1, 2}, 2);
  for (uint32_t s = 0; s < a.shards(); ++s) {
    auto ra = a.replicas_of_shard(s), rb = b.replicas_of_shard(s);
    EXPECT_TRUE(std::equal(ra.begin(), ra.end(), rb.begin(), rb.end()));
  }
}

TEST(Placement, PrimariesAreRoughlyBalanced) {
  const Placement p = make({1, 2, 3, 4}, 2, 8192);
  std::map<uint32_t, int> primaries;
  for (uint32_t s = 0; s < p.shards(); ++s) primaries[p.replicas_of_shard(s)[0]]++;
  for (auto [node, n] : primaries) {
    EXPECT_GT(n, 8192 / 4 / 2) << "node " << node;  // within 2x of fair
    EXPECT_LT(n, 8192 / 4 * 2) << "node " << node;
  }
}

TEST(Placement, RemovingANodeMovesOnlyItsShards) {
  const Placement before = make({1, 2, 3, 4, 5}, 2);
  const Placement after = make({1, 2, 4, 5}, 2);
  int moved = 0;
  for (uint32_t s = 0; s < before.shards(); ++s) {
    auto b = before.replicas_of_shard(s), a = after.replicas_of_shard(s);
    const bool had3 = std::find(b.begin(), b.end(), 3u) != b.end();
    if (!had3) {
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "shard " << s << " moved needlessly";
    } else {
      ++moved;
      // The surviving replica keeps its relative order: a backup becomes the
      // primary, nobody else takes over first.
      std::vector<uint32_t> survivors;
      for (uint32_t n : b) if (n != 3) survivors.push_back(n);
      EXPECT_EQ(a[0], survivors[0]) << "shard " << s;
    }
  }
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved, static_cast<int>(before.shards()) * 3 / 5);  // about 2/5 expected
}

TEST(Placement, KeysSpreadOverShardsAndTablesDiffer) {
  const Placement p = make({1, 2}, 2, 64);
  std::vector<int> count(64);
  for (uint64_t k = 0; k < 64000; ++k) count[p.shard_of(1, k)]++;
  for (int c : count) {
    EXPECT_GT(c, 500);
    EXPECT_LT(c, 1500);
  }
  int same = 0;
  for (uint64_t k = 0; k < 1000; ++k) same += p.shard_of(1, k) == p.shard_of(2, k);
  EXPECT_LT(same, 100);
}

TEST(Placement, UnmixInvertsMix) {
  uint64_t x = 0x0123456789abcdefull;
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(mix64(unmix64(x)), x);
    ASSERT_EQ(unmix64(mix64(x)), x);
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  EXPECT_EQ(unmix64(0xe220a8397b1dcdafull), 0u);
}

// pandora::dense_key (public API): row i of a table lands in bucket
// i % bucket_count, whatever the table id and bucket count, and distinct
// rows get distinct keys.
TEST(TableGeometry, DenseKeysSendRowIToBucketIModTheBucketCount) {
  for (uint32_t table : {1u, 7u, 255u}) {
    for (uint64_t buckets : {1ull, 3ull, 1000ull, 4096ull}) {
      TableEntry t{};
      t.table_id = table;
      t.bucket_count = buckets;
      std::set<uint64_t> keys;
      for (uint64_t i = 0; i < 5000; ++i) {
        const uint64_t k = dense_key(table, i);
        ASSERT_EQ(home_bucket(t, k), i % buckets) << "table " << table << " row " << i;
        keys.insert(k);
      }
      EXPECT_EQ(keys.size(), 5000u);
    }
  }
  EXPECT_NE(dense_key(1, 5), dense_key(2, 5));
}

TEST(Placement, IsStableAcrossBuilds) {
  // Placement is part of the persistent format: a compute node built by
  // another compiler must find rows where the loader put them. Pin a few.
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix64(1), 0x910a2dec89025cc1ull);
  const Placement p = make({1, 2, 3}, 2, 1024);
  const Placement q = make({1, 2, 3}, 2, 1024);
  for (uint32_t s = 0; s < 1024; ++s) {
    auto a = p.replicas_of_shard(s), b = q.replicas_of_shard(s);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
}

TEST(Placement, LogNodesAreDistinctAndDeterministic) {
  const Placement p = make({1, 2, 3}, 2);
  for (uint32_t pid = 1; pid < 2000; ++pid) {
    auto l = p.log_nodes_of(static_cast<uint16_t>(pid));
    ASSERT_EQ(l.size(), 2u);
    EXPECT_NE(l[0], l[1]);
    EXPECT_EQ(l, p.log_nodes_of(static_cast<uint16_t>(pid)));
  }
}

}  // namespace
}  // namespace pandora
