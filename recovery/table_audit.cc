#include "recovery/table_audit.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/slot_layout.h"
#include "compute/op_batch.h"
#include "compute/table_geometry.h"

namespace pandora {

namespace {

// About this much per READ: big enough to amortise round trips, well below
// the transports' 4 MiB limit.
constexpr uint64_t kChunkBytes = 1 << 20;

uint64_t hash_bytes(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// What the scan remembers of each key to compare its copies.
struct Copies {
  uint64_t version = 0;
  uint64_t hash = 0;
  uint64_t node_mask = 0;  // node indexes seen holding it (<= 64 nodes)
  uint16_t first_node = 0;
  uint16_t count = 0;
  bool reported = false;
};

}  // namespace

void TableAudit::problem(std::string text) {
  ++problem_count;
  if (problems.size() < kMaxProblems) problems.push_back(std::move(text));
}

Result<TableAudit> audit_table(Cluster& cluster, uint32_t table_id, const RowFn& on_row) {
  TableAudit audit;
  const TableEntry* t = cluster.directory().find(table_id);
  if (!t) return Status(Errc::kInvalidArgument, fmt::format("table {} is not in the table directory", table_id));
  const std::string tname = table_name(*t);
  const uint64_t bb = bucket_bytes(*t);
  const uint64_t per_chunk = std::max<uint64_t>(1, kChunkBytes / bb);
  const size_t nodes = cluster.node_count();
  if (nodes > 64) return Status(Errc::kUnsupported, "audit_table supports at most 64 memory nodes");

  // A memory node failed over is out of the configuration: not read, and
  // its keys' copies are counted against their live replicas.
  std::unordered_map<uint64_t, Copies> seen;
  seen.reserve(t->expected_rows + t->expected_rows / 4);
  std::vector<std::vector<uint8_t>> bufs(nodes, std::vector<uint8_t>(per_chunk * bb));
  OpBatch batch(cluster.bootstrap_connections(), cluster.config().op_timeout * 4);

  for (uint64_t first = 0; first < t->bucket_count; first += per_chunk) {
    const uint64_t buckets = std::min(per_chunk, t->bucket_count - first);
    const auto len = static_cast<uint32_t>(buckets * bb);
    batch.clear();
    for (size_t n = 0; n < nodes; ++n) {
      if (!cluster.failed_over(n)) batch.read(n, bucket_offset(*t, first), bufs[n].data(), len);
    }
    if (Status s = batch.run(); !s) {
      return Status(s.code(), fmt::format("scanning table {}: {}", tname, s.message()));
    }
    for (size_t n = 0; n < nodes; ++n) {
      if (cluster.failed_over(n)) continue;
      for (uint64_t off = 0; off < len; off += t->slot_bytes) {
        SlotView v(bufs[n].data() + off);
        if (!v.occupied()) continue;
        const uint64_t key = v.key();
        if (slot_meta_len(v.meta()) != t->value_size) {
          audit.problem(fmt::format("{}: key {} on node {} has length {}, the table's values have {}", tname, key, n,
                                    slot_meta_len(v.meta()), t->value_size));
        }
        if (v.latch() != kLatchFree) {
          const LatchOwner o = decode_latch(v.latch());
          if (cluster.failed_ids().contains(o.pid)) {
            ++audit.stray_latches;
          } else {
            audit.problem(fmt::format("{}: key {} is still latched on node {} (pid {}, coordinator {}, seq {})", tname,
                                      key, n, o.pid, o.coordinator, o.seq));
          }
        }
        const auto replicas = cluster.replica_indexes(cluster.placement().shard_of(table_id, key));
        if (std::find(replicas.begin(), replicas.end(), n) == replicas.end()) {
          audit.problem(fmt::format("{}: key {} found on node {}, which does not hold its shard", tname, key, n));
          continue;
        }
        const uint64_t h = hash_bytes(v.value(), t->value_size);
        Copies& c = seen[key];
        if (c.count == 0) {
          c.version = v.version();
          c.hash = h;
          c.first_node = static_cast<uint16_t>(n);
        } else if (c.node_mask & (uint64_t{1} << n)) {
          audit.problem(fmt::format("{}: key {} is stored twice on node {}", tname, key, n));
        } else if ((c.version != v.version() || c.hash != h) && !c.reported) {
          c.reported = true;
          audit.problem(fmt::format("{}: replicas of key {} disagree: node {} has version {}, node {} version {}{}",
                                    tname, key, c.first_node, c.version, n, v.version(),
                                    c.hash != h ? " (values differ)" : ""));
        }
        c.node_mask |= uint64_t{1} << n;
        ++c.count;
        if (n == replicas[0]) {
          ++audit.rows;
          if (on_row) on_row(ScannedRow{key, v.version(), std::span<const uint8_t>(v.value(), t->value_size)});
        }
      }
    }
  }
  for (const auto& [key, c] : seen) {
    // Same-node duplicates were reported above; here: replicas missing.
    const size_t want = cluster.replica_indexes(cluster.placement().shard_of(table_id, key)).size();
    if (static_cast<size_t>(std::popcount(c.node_mask)) != want) {
      audit.problem(fmt::format("{}: key {} is on {} node(s), expected {} replicas", tname, key,
                                std::popcount(c.node_mask), want));
    }
  }
  return audit;
}

}  // namespace pandora
