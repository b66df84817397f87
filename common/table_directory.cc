#include "common/table_directory.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "common/checksum.h"
#include "common/slot_layout.h"

namespace pandora {

const TableEntry* TableDirectory::find(uint32_t table_id) const {
  for (const auto& t : tables) {
    if (t.table_id == table_id) return &t;
  }
  return nullptr;
}

uint64_t TableDirectory::end_offset() const {
  uint64_t end = 0;
  for (const auto& t : tables) end = std::max(end, t.offset + t.bucket_count * bucket_bytes(t));
  return end;
}

Result<TableDirectory> plan_table_directory(std::span<const TableSpec> specs, uint64_t cluster_id,
                                            uint32_t shards, uint32_t replicas, uint32_t lane_bytes,
                                            uint32_t lanes, uint64_t table_offset, uint64_t limit) {
  using R = Result<TableDirectory>;
  if (specs.empty()) return R(Errc::kInvalidArgument, "no tables declared");
  if (specs.size() > kMaxTables) {
    return R(Errc::kInvalidArgument, fmt::format("{} tables declared; at most {}", specs.size(), kMaxTables));
  }
  if (table_offset % kCacheLine != 0) return R(Errc::kInvalidArgument, "table area must be cache-line aligned");
  std::set<uint32_t> ids;
  std::set<std::string> names;
  TableDirectory d;
  d.cluster_id = cluster_id;
  d.shards = shards;
  d.replicas = replicas;
  d.lane_bytes = lane_bytes;
  d.lanes = lanes;
  uint64_t next = table_offset + kTableDirBytes;
  for (const auto& s : specs) {
    if (!ids.insert(s.id).second) return R(Errc::kInvalidArgument, fmt::format("table id {} declared twice", s.id));
    if (s.name.empty() || s.name.size() >= kTableNameBytes) {
      return R(Errc::kInvalidArgument,
               fmt::format("table {} name '{}' must have 1..{} characters", s.id, s.name, kTableNameBytes - 1));
    }
    if (!names.insert(s.name).second) {
      return R(Errc::kInvalidArgument, fmt::format("table name '{}' declared twice", s.name));
    }
    if (s.value_size == 0 || s.value_size > 64 * 1024) {
      return R(Errc::kInvalidArgument,
               fmt::format("table '{}' value size {} must be 1..65536 bytes", s.name, s.value_size));
    }
    if (s.expected_rows == 0) {
      return R(Errc::kInvalidArgument, fmt::format("table '{}' needs a positive expected row count", s.name));
    }
    TableEntry e{};
    e.table_id = s.id;
    e.value_size = s.value_size;
    e.slot_bytes = slot_size(s.value_size);
    // About 1 KiB per bucket: one READ, a few slots to absorb collisions.
    e.slots_per_bucket = static_cast<uint32_t>(std::clamp<uint64_t>(1024 / e.slot_bytes, 1, 8));
    // Load factor <= 1/2 keeps probe sequences short.
    e.bucket_count = std::max<uint64_t>(1, (s.expected_rows * 2 + e.slots_per_bucket - 1) / e.slots_per_bucket);
    e.max_probe = static_cast<uint32_t>(std::min<uint64_t>(8, e.bucket_count));
    e.offset = next;
    e.expected_rows = s.expected_rows;
    std::memcpy(e.name, s.name.data(), s.name.size());
    next += e.bucket_count * e.slot_bytes * e.slots_per_bucket;
    d.tables.push_back(e);
  }
  if (next > limit) {
    return R(Errc::kInvalidArgument,
             fmt::format("tables need {} bytes of table area but the memory node offers {} "
                         "(start the daemons with a larger --size or smaller --log-size)",
                         next - table_offset, limit > table_offset ? limit - table_offset : 0));
  }
  return d;
}

std::string encode_table_directory(const TableDirectory& d) {
  TableDirectoryHeader h{};
  h.magic = kTableDirMagic;
  h.version = kTableDirVersion;
  h.table_count = static_cast<uint32_t>(d.tables.size());
  h.cluster_id = d.cluster_id;
  h.shards = d.shards;
  h.replicas = d.replicas;
  h.lane_bytes = d.lane_bytes;
  h.lanes = d.lanes;
  h.payload_bytes = sizeof(h) + d.tables.size() * sizeof(TableEntry);
  std::string out(h.payload_bytes, '\0');
  std::memcpy(out.data(), &h, sizeof h);
  if (!d.tables.empty()) std::memcpy(out.data() + sizeof h, d.tables.data(), d.tables.size() * sizeof(TableEntry));
  const uint64_t crc = crc32c(out.data(), out.size());
  std::memcpy(out.data() + offsetof(TableDirectoryHeader, checksum), &crc, sizeof crc);
  return out;
}

std::string table_name(const TableEntry& e) { return std::string(e.name, strnlen(e.name, kTableNameBytes)); }

std::vector<TableSpec> table_specs(const TableDirectory& d) {
  std::vector<TableSpec> out;
  out.reserve(d.tables.size());
  for (const TableEntry& e : d.tables) {
    out.push_back(TableSpec{e.table_id, table_name(e), e.value_size, e.expected_rows});
  }
  return out;
}

Result<TableDirectory> decode_table_directory(std::span<const uint8_t> bytes) {
  using R = Result<TableDirectory>;
  if (bytes.size() < sizeof(TableDirectoryHeader)) return R(Errc::kCorrupt, "table directory truncated");
  TableDirectoryHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.magic == 0) {
    // A region nobody created tables in: "not yet", not damage.
    return R(Errc::kNotFound, "no table directory on this memory node (not loaded yet?)");
  }
  if (h.magic != kTableDirMagic) {
    return R(Errc::kCorrupt, fmt::format("no table directory on this memory node (magic {:#x} is not one)", h.magic));
  }
  if (h.version != kTableDirVersion) {
    return R(Errc::kMismatch, fmt::format("table directory version {} (this build reads {})", h.version,
                                          kTableDirVersion));
  }
  if (h.table_count > kMaxTables || h.payload_bytes != sizeof(h) + uint64_t{h.table_count} * sizeof(TableEntry) ||
      h.payload_bytes > bytes.size()) {
    return R(Errc::kCorrupt, "table directory size fields are inconsistent");
  }
  std::string copy(reinterpret_cast<const char*>(bytes.data()), h.payload_bytes);
  std::memset(copy.data() + offsetof(TableDirectoryHeader, checksum), 0, sizeof(uint64_t));
  if (crc32c(copy.data(), copy.size()) != h.checksum) return R(Errc::kCorrupt, "table directory checksum mismatch");

  TableDirectory d;
  d.cluster_id = h.cluster_id;
  d.shards = h.shards;
  d.replicas = h.replicas;
  d.lane_bytes = h.lane_bytes;
  d.lanes = h.lanes;
  d.tables.resize(h.table_count);
  if (h.table_count) std::memcpy(d.tables.data(), copy.data() + sizeof h, h.table_count * sizeof(TableEntry));
  for (const auto& t : d.tables) {
    if (t.slot_bytes != slot_size(t.value_size) || t.slots_per_bucket == 0 || t.bucket_count == 0 ||
        t.max_probe == 0 || t.max_probe > t.bucket_count || t.offset % kCacheLine != 0) {
      return R(Errc::kCorrupt, fmt::format("table directory entry for table {} has invalid geometry", t.table_id));
    }
  }
  return d;
}

}  // namespace pandora
