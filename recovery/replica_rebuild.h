// Re-replication: filling a replacement memory node, under a failed-over
// node's id, from the live replicas (recovery/README.md, "Re-replication").
//
// Not a copy. The replicas of a row share one slot offset, and while a node
// is out an insert checks only the live replicas, so two rows that both
// belong on the replacement may hold the same offset on their (different)
// survivors. The rebuild keeps the first and relocates the others: a slot
// on the row's probe path free on every replica (the replacement
// included) takes the row on every replica, and its old slot is freed on
// the survivors. A lookup scans the whole probe path, so a moved row is
// found; a compute node's cached offset is checked against the slot's key
// on every use, so a stale one is dropped.
//
// Runs in a stopped world (every compute node parked, none in a
// transaction: the recovery coordinator's pause), so no latch is held and
// nothing changes under the scan.
//
//   1. Finish the relocations a previous run journaled (a leader that died
//      in the middle of moving rows): a row written at its new slot on any
//      survivor is moved on all of them; one written nowhere stays.
//   2. The table directory, copied from a live node.
//   3. Every table, in chunks: the replacement's slot holds the row a
//      survivor has there whose shard has the replacement among its
//      replicas (latch free), else an empty slot carrying the largest
//      version any survivor's slot has (a later insert then keeps slot
//      versions increasing). Two such rows at one offset: the second is a
//      conflict.
//   4. Conflicts, in batches: choose each row's new slot, journal the batch
//      (RelocationJournal: ZooKeeper in the product), move the rows, clear
//      the journal.
//   5. The replacement's log area zeroed: it logs for nobody yet, and a
//      reused region's old records must not be found by a later recovery
//      (the recovery coordinator does this before its pause).
//
// Each chunk's WRITE to the replacement is posted with the next chunk's
// READs from the survivors, so the two overlap.
//
// Idempotent: a re-run (with any replacement daemon) rewrites every byte it
// owns. The caller fences the pids already fenced elsewhere on the
// replacement before any compute node may connect to it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/logger.h"
#include "common/status.h"
#include "common/transport/transport.h"
#include "compute/cluster.h"
#include "recovery/relocation_journal.h"

namespace pandora {

struct RebuildReport {
  uint64_t rows = 0;          // rows written to the replacement
  uint64_t relocated = 0;     // of them, moved to a new slot on every replica
  uint64_t resumed = 0;       // journaled moves of a previous run finished
  uint64_t bytes_read = 0;    // from the live nodes
  uint64_t bytes_written = 0; // to the replacement (and moves on survivors)
  uint64_t scan_us = 0, relocate_us = 0;
};

struct RebuildOptions {
  // Moves per journal write (each is one ZooKeeper write in the product).
  size_t journal_batch = 1024;
  // Called after a batch was journaled and its rows written at their new
  // slots, before the old slots are freed (tests: a crash there).
  std::function<void()> after_moves_written;
  // Step 5. The recovery coordinator clears the log area before its pause
  // (clear_replacement_log: nobody uses the node until it is back) and
  // passes false.
  bool zero_log = true;
};

// Fills node `target` of `cluster` (failed over: out of the applied
// configuration, its id still in placement) through conns[target], reading
// the live nodes through the other conns. kInvalidArgument when a conflicting row
// finds no slot free on all its replicas (nothing is lost: the rows moved
// so far are on every survivor, and a re-run starts over).
// Step 5 alone: zeroes node `target`'s log area through conns[target].
Status clear_replacement_log(const Cluster& cluster, std::span<Connection* const> conns, size_t target,
                             const Logger& logger);

// Step 1 alone: finishes the moves `journal` holds on the live nodes of
// `cluster` and clears it; returns how many were finished. Until it has
// run, a row a cut-short rebuild was moving may sit at two slots of a
// survivor: no compute node may run (an update would change one copy), so
// the pause of a rebuild that failed ends only after this succeeded.
Result<uint64_t> finish_relocations(const Cluster& cluster, std::span<Connection* const> conns,
                                    RelocationJournal& journal, const Logger& logger);

Result<RebuildReport> rebuild_memory_node(const Cluster& cluster, std::span<Connection* const> conns, size_t target,
                                          RelocationJournal& journal, const Logger& logger,
                                          const RebuildOptions& options = {});

}  // namespace pandora
