// Log recovery of a failed compute node (ARCHITECTURE.md 5, steps 3-5), run
// by the recovery coordinator after the node was fenced everywhere, and by
// tests directly.
//
//   auto report = recover_logs(cluster, conns, pid, slot, logger);  // repair data, release nothing
//   truncate_lanes(cluster, conns, pid, slot);                      // then publish pid in failed-ids
//   sweep_stray_latches(cluster, conns, pid, report->latch_sites);  // optional, after publishing
//
// `conns[i]` is a data connection to memory node index i of `cluster`, or
// null for a node that is down (its replicas and log copies are skipped).
//
// `slot` is the failed node's lane slot (common/lane_map.h): the one its
// registration leased, or LaneMap::fixed_slot(pid) without a registry.
//
// recover_logs reads the slot's lanes on each of the pid's live log nodes and
// takes every valid record whose txn id names the pid (a lane holds the last
// record of its coordinator; copies on the f+1 log nodes are deduplicated by
// lane_seq). For each record it reads the version of every live replica of
// every entry. If every one shows >= old+1 the transaction finished its
// commit writes and may have been reported committed: roll forward (nothing
// lags on live replicas then; counted). Otherwise it cannot have been
// reported committed: roll back - every replica showing old+1 gets the undo
// image, the old version and the old occupancy back (inserts become free
// slots again, deletes occupied again); so does a replica still showing old
// whose value differs from the undo image (an update's commit WRITEs landed
// in part: value, but not yet version). Latch words are never written:
// while the dead pid still holds its latches nobody else can move these
// versions, so re-running gives the same result (idempotent). Records of the
// `ford` protocol are not handled here: see ford_recovery.h.
//
// sweep_stray_latches, only after the pid is published in failed-ids,
// releases the pid's latches on the objects its logs named by CAS of the
// exact observed word; latches of unlogged transactions stay and are stolen
// by the next transaction that meets them - except in log-a-latch mode,
// where every latch was preceded by an intent at the lane's tail
// (common/latch_intent.h): recover_logs adds every slot an intent names, on
// every replica, to latch_sites, so the sweep releases them all.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/log_record.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/transport/transport.h"
#include "compute/cluster.h"
#include "compute/step_hook.h"

namespace pandora {

// A latch word that may carry the failed pid: (node index, slot offset).
struct LatchSite {
  size_t node = 0;
  uint64_t slot = 0;
  auto operator<=>(const LatchSite&) const = default;
};

struct LogRecoveryReport {
  uint32_t records = 0;            // valid records of the pid found
  uint32_t rolled_forward = 0;
  uint32_t rolled_back = 0;
  uint32_t replicas_restored = 0;  // replica slots rewritten by roll-backs
  uint32_t skipped = 0;            // records whose entries do not match the directory
  uint32_t intents = 0;            // log-a-latch latch intents found (their slots join latch_sites)
  std::vector<LatchSite> latch_sites;  // sorted, no repeats
};

// `crash` (optional, not owned): crash points of the recovery coordinator
// itself (compute/step_hook.h); with single steps asked for, the roll-back
// WRITEs are issued one at a time so it can stop between any two of them;
// without, kRecoveryAfterRollback fires once per batch of roll-backs.
Result<LogRecoveryReport> recover_logs(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                                       const LaneSlot& slot, const Logger& logger, StepHook* crash = nullptr);

// The decision and repair of step 3 for logged transactions (every entry of
// each of `recs`), as described above; adds to `report`. The outcome is that
// of deciding them one by one in order; records that share no replica slot
// are decided together (one batch of READs, one of roll-back WRITEs), so the
// step costs a few round trips whatever the number of records, not two per
// record. recover_logs passes its records in (lane, lane_seq) order; FORD's
// recovery (ford_recovery.h) one per transaction after merging that
// transaction's per-object records.
Status decide_and_repair(const Cluster& cluster, std::span<Connection* const> conns, std::span<const LogRecord> recs,
                         LogRecoveryReport& report, const Logger& logger, StepHook* crash = nullptr);

// Reads every lane of `slot` (slot.count x lane_bytes) on each of `nodes`:
// result[k] holds node nodes[k]'s lanes back to back.
Result<std::vector<std::vector<uint8_t>>> read_lanes(const Cluster& cluster, std::span<Connection* const> conns,
                                                     const LaneSlot& slot, std::span<const size_t> nodes);

// Zeroes the record header at the start of each lane of `slot` and its
// first log-a-latch intent at the end, on the live nodes among `nodes`: the
// lanes then hold nothing a recovery would read.
Status zero_lane_heads(const Cluster& cluster, std::span<Connection* const> conns, const LaneSlot& slot,
                       std::span<const size_t> nodes);

// Empties each lane of `slot` on the pid's live log nodes (zero_lane_heads).
// After it the slot may be leased to another compute node, and a re-run of
// the recovery finds neither records nor intents.
Status truncate_lanes(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                      const LaneSlot& slot, StepHook* crash = nullptr);

// Returns how many latches were released.
Result<uint32_t> sweep_stray_latches(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                                     std::span<const LatchSite> sites, StepHook* crash = nullptr);

}  // namespace pandora
