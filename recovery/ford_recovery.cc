#include "recovery/ford_recovery.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/log_record.h"
#include "common/slot_layout.h"
#include "common/lane_map.h"
#include "compute/op_batch.h"
#include "recovery/latch_scan.h"
#include "recovery/recovery_ops.h"
#include "compute/table_geometry.h"

namespace pandora {

using recovery_ops::batch_timeout;
using recovery_ops::hit;
using recovery_ops::live;

namespace {

std::vector<size_t> live_nodes(const Cluster& cluster, std::span<Connection* const> conns) {
  std::vector<size_t> nodes;
  for (size_t n = 0; n < cluster.node_count(); ++n) {
    if (live(cluster, conns, n)) nodes.push_back(n);
  }
  return nodes;
}

}  // namespace

Result<LogRecoveryReport> recover_ford_logs(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                                            const LaneSlot& slot, const Logger& logger, StepHook* crash) {
  const std::vector<size_t> nodes = live_nodes(cluster, conns);
  if (nodes.empty()) return Status(Errc::kDisconnected, "no memory node is reachable");
  const uint32_t lane_bytes = cluster.lanes().lane_bytes();
  auto read = read_lanes(cluster, conns, slot, nodes);
  if (!read) return read.status();
  const std::vector<std::vector<uint8_t>>& data = *read;
  hit(crash, CrashPoint::kRecoveryAfterRead);

  // Each lane's current run, merged per transaction (one object may be
  // logged on several nodes: keep one entry per table slot).
  std::map<uint64_t, LogRecord> txns;
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (uint32_t l = 0; l < slot.count; ++l) {
      const uint8_t* lane = data[k].data() + size_t{l} * lane_bytes;
      uint64_t run_txn = 0;
      for (size_t off = 0; off < lane_bytes;) {
        auto rec = decode_log_record(std::span<const uint8_t>(lane + off, lane_bytes - off));
        if (!rec || latch_pid(rec->txn_id) != pid) break;
        if (off == 0) run_txn = rec->txn_id;
        if (rec->txn_id != run_txn) break;  // an older, longer transaction's leftovers
        off += (encoded_log_record_size(*rec) + kCacheLine - 1) / kCacheLine * kCacheLine;
        LogRecord& merged = txns[rec->txn_id];
        merged.txn_id = rec->txn_id;
        merged.lane_seq = std::max(merged.lane_seq, rec->lane_seq);
        for (LogEntry& e : rec->entries) {
          const bool dup = std::any_of(merged.entries.begin(), merged.entries.end(), [&](const LogEntry& m) {
            return m.table_id == e.table_id && m.slot_offset == e.slot_offset;
          });
          if (!dup) merged.entries.push_back(std::move(e));
        }
      }
    }
  }
  LogRecoveryReport report;
  std::vector<LogRecord> merged;
  merged.reserve(txns.size());
  for (auto& [txn, rec] : txns) merged.push_back(std::move(rec));
  if (Status s = decide_and_repair(cluster, conns, merged, report, logger, crash); !s) return s;
  report.latch_sites.clear();  // FORD latches are released by the scan, not by site
  return report;
}

Status truncate_ford_lanes(const Cluster& cluster, std::span<Connection* const> conns, const LaneSlot& slot,
                           StepHook* crash) {
  hit(crash, CrashPoint::kBeforeTruncate);
  if (Status s = zero_lane_heads(cluster, conns, slot, live_nodes(cluster, conns)); !s) return s;
  hit(crash, CrashPoint::kAfterTruncate);
  return Status();
}

Result<LatchScanReport> release_all_latches(const Cluster& cluster, std::span<Connection* const> conns,
                                            const Logger& logger, StepHook* crash) {
  hit(crash, CrashPoint::kBeforeSweep);
  auto report = release_latches_where(cluster, conns, [](uint64_t) { return true; }, logger);
  if (report) hit(crash, CrashPoint::kAfterSweep);
  return report;
}

}  // namespace pandora
