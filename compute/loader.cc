#include "compute/loader.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/slot_layout.h"
#include "compute/table_geometry.h"

namespace pandora {

namespace {

// Zeroes [begin, end) on every node in chunks (a stale row left in a
// replaced table would otherwise be found by lookups).
Status zero_range(Cluster& cluster, uint64_t begin, uint64_t end) {
  constexpr uint64_t kChunk = 1 << 20;
  const std::vector<uint8_t> zeros(kChunk, 0);
  OpBatch batch(cluster.bootstrap_connections(), cluster.config().op_timeout * 4);
  for (uint64_t at = begin; at < end; at += kChunk) {
    const auto len = static_cast<uint32_t>(std::min(kChunk, end - at));
    for (size_t n = 0; n < cluster.node_count(); ++n) batch.write(n, at, zeros.data(), len);
    if (batch.size() >= 64) {
      if (Status s = batch.run(); !s) return s;
      batch.clear();
    }
  }
  return batch.run();
}

}  // namespace

Status create_tables(Cluster& cluster, std::span<const TableSpec> specs, const CreateTablesOptions& options) {
  const ComputeConfig& cfg = cluster.config();
  if (cluster.applied_failed_mask() != 0) {
    // Every shard would start with a copy fewer, and nothing re-replicates.
    return Status(Errc::kUnavailable, "a memory node of this cluster was failed over (pandora-ctl status lists it); "
                                      "load a cluster whose memory nodes are all live");
  }
  const uint32_t lanes = cluster.lanes_that_fit(cfg.lane_bytes);
  if (lanes < kFixedSlotLanes) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("the memory nodes' log areas hold {} lanes of {} bytes; at least {} are needed (start "
                              "the daemons with a larger --log-size or use a smaller --lane-bytes)",
                              lanes, cfg.lane_bytes, kFixedSlotLanes));
  }
  auto planned = plan_table_directory(specs, cfg.cluster_id, cfg.shards, cfg.replicas, cfg.lane_bytes, lanes,
                                      cluster.table_begin(), cluster.table_limit());
  if (!planned) return planned.status();

  // Refuse to load over an existing cluster unless asked to.
  std::vector<std::vector<uint8_t>> heads(cluster.node_count(), std::vector<uint8_t>(sizeof(TableDirectoryHeader)));
  OpBatch batch(cluster.bootstrap_connections(), cfg.op_timeout * 2);
  for (size_t n = 0; n < cluster.node_count(); ++n) {
    batch.read(n, cluster.table_begin(), heads[n].data(), sizeof(TableDirectoryHeader));
  }
  if (Status s = batch.run(); !s) return s;
  bool existing = false;
  for (const auto& h : heads) existing |= load_u64(h.data()) == kTableDirMagic;
  if (existing) {
    if (!options.replace_existing) {
      return Status(Errc::kMismatch,
                    "the memory nodes already carry tables (a previous load); start the daemons on fresh regions or "
                    "ask the loader to replace the existing tables");
    }
    uint64_t end = cluster.table_begin() + kTableDirBytes;
    for (size_t n = 0; n < cluster.node_count(); ++n) end = std::max(end, cluster.node(n).region.log_offset);
    end = std::min(end, cluster.table_limit());
    if (Status s = zero_range(cluster, cluster.table_begin(), end); !s) return s;
  } else {
    // Fresh regions are zero; still clear the bytes the new tables use, in
    // case a previous, unfinished load wrote rows without a directory.
    if (Status s = zero_range(cluster, cluster.table_begin() + kTableDirBytes, planned->end_offset()); !s) return s;
  }

  const std::string enc = encode_table_directory(*planned);
  batch.clear();
  for (size_t n = 0; n < cluster.node_count(); ++n) {
    batch.write(n, cluster.table_begin(), enc.data(), static_cast<uint32_t>(enc.size()));
  }
  if (Status s = batch.run(); !s) return Status(s.code(), "writing the table directory: " + s.message());
  return cluster.load_directory();
}

TableLoader::TableLoader(Cluster& cluster, LoadProgressFn progress, size_t batch_rows)
    : cluster_(cluster),
      progress_(std::move(progress)),
      batch_rows_(std::max<size_t>(1, batch_rows)),
      batch_(cluster.bootstrap_connections(), cluster.config().op_timeout * 4) {}

TableLoader::TableState* TableLoader::table(uint32_t id) {
  auto it = tables_.find(id);
  if (it != tables_.end()) return &it->second;
  const TableEntry* e = cluster_.directory().find(id);
  if (!e) return nullptr;
  TableState& st = tables_[id];
  st.entry = e;
  st.used.assign(cluster_.node_count(), std::vector<bool>(e->bucket_count * e->slots_per_bucket, false));
  return &st;
}

Status TableLoader::add(uint32_t table_id, uint64_t key, std::span<const uint8_t> value) {
  if (!cluster_.has_directory()) return Status(Errc::kInvalidArgument, "create_tables() must run before loading rows");
  TableState* st = table(table_id);
  if (!st) return Status(Errc::kInvalidArgument, fmt::format("table {} is not in the directory", table_id));
  const TableEntry& t = *st->entry;
  if (value.size() != t.value_size) {
    return Status(Errc::kInvalidArgument, fmt::format("table {} rows have {} bytes, got {}", table_id, t.value_size,
                                                      value.size()));
  }
  if (!st->keys.insert(key).second) {
    return Status(Errc::kMismatch, fmt::format("key {} loaded twice into table {}", key, table_id));
  }
  const uint32_t shard = cluster_.placement().shard_of(table_id, key);
  const auto replicas = cluster_.replica_indexes(shard);
  const uint64_t home = home_bucket(t, key);
  std::optional<uint64_t> chosen;  // slot number within the table
  for (uint32_t step = 0; step < t.max_probe && !chosen; ++step) {
    const uint64_t b = path_bucket(t, home, step);
    for (uint32_t s = 0; s < t.slots_per_bucket && !chosen; ++s) {
      const uint64_t slot = b * t.slots_per_bucket + s;
      bool free_everywhere = true;
      for (uint16_t n : replicas) free_everywhere &= !st->used[n][slot];
      if (free_everywhere) chosen = slot;
    }
  }
  if (!chosen) {
    return Status(Errc::kOutOfBounds, fmt::format("table {} is full along key {}'s probe path ({} buckets); declare "
                                                  "more expected rows",
                                                  table_id, key, t.max_probe));
  }
  for (uint16_t n : replicas) st->used[n][*chosen] = true;

  std::vector<uint8_t>& img = images_.emplace_back(sizeof(SlotHeader) + t.value_size, 0);
  SlotHeader h{key, kLatchFree, 1, make_slot_meta(kSlotOccupied, t.value_size)};
  std::memcpy(img.data(), &h, sizeof h);
  std::memcpy(img.data() + sizeof h, value.data(), value.size());
  const uint64_t addr = t.offset + *chosen * t.slot_bytes;
  for (uint16_t n : replicas) batch_.write(n, addr, img.data(), static_cast<uint32_t>(img.size()));
  ++st->rows;
  ++total_;
  last_table_ = table_id;
  if (++queued_ >= batch_rows_) return flush();
  return Status::ok();
}

Status TableLoader::flush() {
  if (queued_ == 0) return Status::ok();
  Status s = batch_.run();
  batch_.clear();
  images_.clear();
  queued_ = 0;
  if (!s) return Status(s.code(), "loading rows: " + s.message());
  if (progress_) {
    const TableState* st = table(last_table_);
    progress_(LoadProgress{last_table_, st ? st->rows : 0, total_});
  }
  return Status::ok();
}

Status TableLoader::finish() { return flush(); }

}  // namespace pandora
