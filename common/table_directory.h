// The table directory: the first bytes of every memory node's table area,
// written by the loader, read and validated by every compute node at start.
//
//   [table_offset, +64 KiB)   TableDirectoryHeader | TableEntry x table_count
//   then each table's buckets, cache-line aligned, in directory order
//
// Every memory node of a cluster carries the same directory and the same
// table geometry, so a slot's offset is the same on every replica of its
// shard (a row lives only on its f+1 replicas; the other nodes leave those
// slots empty). Tables are hash tables of buckets of `slots_per_bucket`
// slots; one READ fetches a bucket. A key's bucket is
// mix64(key ^ table salt) % bucket_count, probing linearly for at most
// `max_probe` buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "pandora/table.h"  // TableSpec: what an application declares

namespace pandora {

inline constexpr uint64_t kTableDirMagic = 0x3152494442545050ull;  // bytes "PPTBDIR1"
inline constexpr uint32_t kTableDirVersion = 1;
inline constexpr uint64_t kTableDirBytes = 64 * 1024;
inline constexpr size_t kTableNameBytes = 32;

struct TableDirectoryHeader {
  uint64_t magic;          // kTableDirMagic
  uint32_t version;        // kTableDirVersion
  uint32_t table_count;
  uint64_t cluster_id;
  uint32_t shards;         // placement shard count
  uint32_t replicas;       // f+1
  uint32_t lane_bytes;     // size of one log lane
  uint32_t lanes;          // lanes in each node's log area
  uint64_t payload_bytes;  // header + entries
  uint64_t reserved[2];
  uint64_t checksum;       // crc32c of header (this field zero) and entries
};
static_assert(sizeof(TableDirectoryHeader) == 72);
static_assert(offsetof(TableDirectoryHeader, shards) == 24);
static_assert(offsetof(TableDirectoryHeader, checksum) == 64);

struct TableEntry {
  uint32_t table_id;
  uint32_t value_size;        // bytes of every value in this table
  uint64_t slot_bytes;        // slot_size(value_size)
  uint64_t bucket_count;
  uint32_t slots_per_bucket;
  uint32_t max_probe;         // buckets probed before "table full"
  uint64_t offset;            // region offset of bucket 0
  uint64_t expected_rows;
  char name[kTableNameBytes]; // NUL-padded
};
static_assert(sizeof(TableEntry) == 80);
static_assert(offsetof(TableEntry, offset) == 32);
static_assert(offsetof(TableEntry, name) == 48);
static_assert(sizeof(TableDirectoryHeader) + 256 * sizeof(TableEntry) <= kTableDirBytes);

inline constexpr uint32_t kMaxTables = 256;

// The entry's name without its NUL padding.
std::string table_name(const TableEntry& e);

struct TableDirectory {
  uint64_t cluster_id = 0;
  uint32_t shards = 0;
  uint32_t replicas = 0;
  uint32_t lane_bytes = 0;
  uint32_t lanes = 0;
  std::vector<TableEntry> tables;

  const TableEntry* find(uint32_t table_id) const;
  uint64_t bucket_bytes(const TableEntry& t) const { return t.slot_bytes * t.slots_per_bucket; }
  // Region offset of the first byte after the last table.
  uint64_t end_offset() const;
};

// Lays the tables out from `table_offset` (the directory first), sizing each
// for `expected_rows` at a load factor of at most 1/2. kInvalidArgument for
// duplicate ids or names, bad sizes, names too long, or when the tables do
// not fit below `limit` (the start of the log area) - the message says how
// much space is needed.
Result<TableDirectory> plan_table_directory(std::span<const TableSpec> specs, uint64_t cluster_id,
                                            uint32_t shards, uint32_t replicas, uint32_t lane_bytes,
                                            uint32_t lanes, uint64_t table_offset, uint64_t limit);

// The tables of `d` as an application declared them (expected_rows as
// planned), in directory order.
std::vector<TableSpec> table_specs(const TableDirectory& d);

// Serialised bytes (header + entries) as they are written at table_offset.
std::string encode_table_directory(const TableDirectory& d);
// Validates magic, version, checksum and geometry. kNotFound when no
// directory was ever written (zero magic), kCorrupt / kMismatch otherwise.
Result<TableDirectory> decode_table_directory(std::span<const uint8_t> bytes);

}  // namespace pandora
