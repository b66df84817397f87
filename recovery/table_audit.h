// Reading whole tables for end-of-run checks, below the transaction API.
//
// scan_table() READs every slot of a table on every memory node through the
// cluster's bootstrap connections, in large chunks, and calls `on_row` once
// per row with the primary's copy. On the way it audits the structure:
//   * a row stored on a node that is not a replica of its shard,
//   * a key stored twice on one node, or with a wrong number of copies,
//   * replicas whose version or value differ from each other,
//   * a latch still held (nothing may be latched once every coordinator has
//     finished: a held latch is a leak or a crashed transaction), unless
//     its pid is in the cluster's failed-ids: that one is a recovered
//     node's stray latch, stealable, and only counted (Audit::stray_latches),
//   * a slot whose length field disagrees with the table's value size.
// Only valid while nothing else writes the tables (before or after a run).
//
// sample_through_txn() re-reads a few rows through the transaction API and
// compares them with what the scan saw, so the two access paths are checked
// against each other.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "common/status.h"
#include "compute/blocking_client.h"
#include "compute/cluster.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

struct ScannedRow {
  uint64_t key = 0;
  uint64_t version = 0;
  std::span<const uint8_t> value;  // valid during the callback only
};
using RowFn = std::function<void(const ScannedRow&)>;

// Fails (kInvalidArgument) for an unknown table, or with the transport error
// of a failed READ. Problems with the data go to `audit` (rows counts the
// primary copies).
Status scan_table(Cluster& cluster, uint32_t table_id, const RowFn& on_row, Audit& audit);

// Reads each key of `expected` in its own read-only transaction and records a
// problem when the value differs from expected (or the read aborts).
Status sample_through_txn(BlockingClient& client, uint32_t table_id,
                          const std::map<uint64_t, std::vector<uint8_t>>& expected, Audit& audit);

}  // namespace pandora::workloads
