#include <gtest/gtest.h>

#include <algorithm>

#include "common/region_layout.h"
#include "common/slot_layout.h"
#include "common/table_directory.h"

namespace pandora {
namespace {

std::vector<TableSpec> smallbank_like() {
  return {{1, "savings", 16, 100000}, {2, "checking", 16, 100000}, {3, "stock", 671, 1000}};
}

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(TableDirectory, PlansNonOverlappingAlignedTablesWithinTheArea) {
  const uint64_t limit = 64ull << 20;
  auto d = plan_table_directory(smallbank_like(), 7, 1024, 2, 16384, 512, kDataOffset, limit);
  ASSERT_TRUE(d) << d.status().to_string();
  uint64_t prev_end = kDataOffset + kTableDirBytes;
  for (const auto& t : d->tables) {
    EXPECT_EQ(t.offset % kCacheLine, 0u);
    EXPECT_GE(t.offset, prev_end);
    EXPECT_EQ(t.slot_bytes, slot_size(t.value_size));
    EXPECT_GE(t.bucket_count * t.slots_per_bucket, 2 * t.expected_rows);  // load factor <= 1/2
    prev_end = t.offset + t.bucket_count * d->bucket_bytes(t);
  }
  EXPECT_LE(d->end_offset(), limit);
  EXPECT_EQ(d->find(3)->value_size, 671u);
  EXPECT_EQ(d->find(9), nullptr);
}

TEST(TableDirectory, RejectsBadDeclarationsWithUsefulMessages) {
  std::vector<TableSpec> dup_id = {{1, "a", 8, 10}, {1, "b", 8, 10}};
  std::vector<TableSpec> dup_name = {{1, "a", 8, 10}, {2, "a", 8, 10}};
  std::vector<TableSpec> zero_value = {{1, "a", 0, 10}};
  std::vector<TableSpec> long_name = {{1, std::string(40, 'x'), 8, 10}};
  for (auto* specs : {&dup_id, &dup_name, &zero_value, &long_name}) {
    auto d = plan_table_directory(*specs, 7, 16, 1, 4096, 4, kDataOffset, 1ull << 30);
    EXPECT_EQ(d.status().code(), Errc::kInvalidArgument);
  }
  auto too_big = plan_table_directory(smallbank_like(), 7, 16, 1, 4096, 4, kDataOffset, kDataOffset + (1 << 20));
  ASSERT_EQ(too_big.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(too_big.status().message().find("--size"), std::string::npos) << too_big.status().message();
}

TEST(TableDirectory, EncodeDecodeRoundTripAndChecksum) {
  auto d = plan_table_directory(smallbank_like(), 7, 1024, 2, 16384, 512, kDataOffset, 64ull << 20);
  ASSERT_TRUE(d);
  const std::string enc = encode_table_directory(*d);
  auto back = decode_table_directory(bytes(enc));
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->cluster_id, 7u);
  EXPECT_EQ(back->shards, 1024u);
  EXPECT_EQ(back->replicas, 2u);
  EXPECT_EQ(back->lane_bytes, 16384u);
  ASSERT_EQ(back->tables.size(), 3u);
  EXPECT_EQ(std::string(back->tables[2].name), "stock");
  EXPECT_EQ(back->tables[2].offset, d->tables[2].offset);

  for (size_t i = 0; i < enc.size(); ++i) {
    std::string bad = enc;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_FALSE(decode_table_directory(bytes(bad))) << "flip in byte " << i << " accepted";
  }
  std::string zeros(4096, '\0');
  EXPECT_EQ(decode_table_directory(bytes(zeros)).status().code(), Errc::kNotFound);  // never created
  std::string other = zeros;
  other[0] = 0x5a;
  EXPECT_EQ(decode_table_directory(bytes(other)).status().code(), Errc::kCorrupt);
}

}  // namespace
}  // namespace pandora
