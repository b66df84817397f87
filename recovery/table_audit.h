// Auditing a table's storage below the transaction API: what no
// transaction can see, for operators (`pandora-ctl verify`) and tests.
//
// audit_table() READs every slot of a table on every memory node through the
// cluster's bootstrap connections, in large chunks, and calls `on_row` once
// per row with the primary's copy. On the way it checks the structure:
//   * a row stored on a node that is not a replica of its shard,
//   * a key stored twice on one node, or with a wrong number of copies,
//   * replicas whose version or value differ from each other,
//   * a latch still held (nothing may be latched once every coordinator has
//     finished: a held latch is a leak or a crashed transaction), unless
//     its pid is in the cluster's failed-ids: that one is a recovered
//     node's stray latch, stealable, and only counted (stray_latches),
//   * a slot whose length field disagrees with the table's value size.
// Only meaningful while nothing else writes the tables (before or after a
// run). Workloads check their data through transactions instead
// (workloads/bench/workload.h); this is the layer under them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "compute/cluster.h"

namespace pandora {

struct ScannedRow {
  uint64_t key = 0;
  uint64_t version = 0;
  std::span<const uint8_t> value;  // valid during the callback only
};
using RowFn = std::function<void(const ScannedRow&)>;

// What audit_table() found (at most kMaxProblems listed, problem_count
// counts all).
struct TableAudit {
  static constexpr size_t kMaxProblems = 10;
  uint64_t rows = 0;            // primary copies
  uint64_t stray_latches = 0;   // latches of pids in failed-ids
  uint64_t problem_count = 0;
  std::vector<std::string> problems;

  void problem(std::string text);
  bool clean() const { return problem_count == 0; }
};

// Fails (kInvalidArgument) for an unknown table, or with the transport error
// of a failed READ. Problems with the data go into the result.
Result<TableAudit> audit_table(Cluster& cluster, uint32_t table_id, const RowFn& on_row = {});

}  // namespace pandora
