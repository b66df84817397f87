#include "recovery/log_recovery.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/latch_intent.h"
#include "common/log_record.h"
#include "common/slot_layout.h"
#include "common/lane_map.h"
#include "compute/op_batch.h"
#include "recovery/recovery_ops.h"
#include "compute/table_geometry.h"

namespace pandora {

using recovery_ops::batch_timeout;
using recovery_ops::hit;
using recovery_ops::live;

namespace {

// Whether every entry of `r` names a real slot of a known table with images
// of the table's value size.
bool record_matches_directory(const Cluster& cluster, const LogRecord& r) {
  const TableDirectory& d = cluster.directory();
  for (const LogEntry& e : r.entries) {
    const TableEntry* t = d.find(e.table_id);
    if (!t || !is_slot_offset(*t, e.slot_offset) || e.shard >= d.shards) return false;
    if (e.shard != cluster.placement().shard_of(e.table_id, e.key)) return false;
    if (e.op != LogOp::kInsert && e.undo_image.size() != t->value_size) return false;
  }
  return true;
}

// Sorts the sites and drops repeats (one object named by several records,
// or by a record and intents).
void dedup_latch_sites(LogRecoveryReport& report) {
  std::vector<LatchSite>& v = report.latch_sites;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// One replica of one entry of one record, as read before deciding.
struct Probe {
  size_t record, entry, node;
  std::vector<uint8_t> slot;  // header + value as read
};

// Decides and repairs `round` (indexes into `recs`, no two sharing a
// replica slot): one batch of READs for all of them, one of roll-back
// WRITEs (one WRITE at a time with single steps asked for).
Status decide_round(const Cluster& cluster, std::span<Connection* const> conns, std::span<const LogRecord> recs,
                    std::span<const size_t> round, LogRecoveryReport& report, const Logger& logger,
                    StepHook* crash) {
  std::vector<Probe> probes;
  std::vector<size_t> first_probe;  // of round[i]; probes of round[i] end at first_probe[i + 1]
  for (size_t r : round) {
    first_probe.push_back(probes.size());
    const LogRecord& rec = recs[r];
    for (size_t e = 0; e < rec.entries.size(); ++e) {
      const uint32_t value_size = cluster.directory().find(rec.entries[e].table_id)->value_size;
      for (uint16_t n : cluster.replica_indexes(rec.entries[e].shard)) {
        if (live(cluster, conns, n)) {
          probes.push_back(Probe{r, e, n, std::vector<uint8_t>(sizeof(SlotHeader) + value_size)});
        }
      }
    }
  }
  first_probe.push_back(probes.size());
  OpBatch batch(conns, batch_timeout(cluster));
  for (Probe& p : probes) {
    batch.read(p.node, recs[p.record].entries[p.entry].slot_offset, p.slot.data(),
               static_cast<uint32_t>(p.slot.size()));
  }
  if (Status s = batch.run(); !s) return Status(s.code(), "reading object versions: " + s.message());

  batch.clear();
  std::vector<std::vector<uint8_t>> bufs;
  bufs.reserve(probes.size());  // WRITE sources: no reallocation before run()
  bool rolled_back = false;
  for (size_t i = 0; i < round.size(); ++i) {
    const LogRecord& rec = recs[round[i]];
    const std::span<const Probe> mine(probes.data() + first_probe[i], first_probe[i + 1] - first_probe[i]);
    bool complete = true;
    for (const Probe& p : mine) complete &= SlotView(p.slot.data()).version() >= rec.entries[p.entry].old_version + 1;
    if (complete) {
      ++report.rolled_forward;  // every live replica already carries the new image
    } else {
      ++report.rolled_back;
      rolled_back = true;
      for (const Probe& p : mine) {
        const LogEntry& e = rec.entries[p.entry];
        const TableEntry& t = *cluster.directory().find(e.table_id);
        // old+1: the commit WRITEs reached this replica. old: an update's may
        // have reached it in part - a replica's WRITEs are value, then
        // version, so a crash between them leaves the new value under the
        // old version: restore it unless it still holds the undo image. (An
        // insert's partial WRITEs leave the slot free: meta goes last.) Any
        // other version is not this transaction's doing.
        const SlotView v(p.slot.data());
        const bool torn = e.op != LogOp::kInsert && v.version() == e.old_version &&
                          std::memcmp(v.value(), e.undo_image.data(), t.value_size) != 0;
        if (v.version() != e.old_version + 1 && !torn) continue;
        std::vector<uint8_t>& b = bufs.emplace_back();
        if (e.op == LogOp::kInsert) {
          b.resize(16);
          store_u64(b.data(), e.old_version);
          store_u64(b.data() + 8, make_slot_meta(0, t.value_size));
        } else {
          b.resize(16 + t.value_size);
          store_u64(b.data(), e.old_version);
          store_u64(b.data() + 8, make_slot_meta(kSlotOccupied, t.value_size));
          std::memcpy(b.data() + 16, e.undo_image.data(), t.value_size);
        }
        batch.write(p.node, e.slot_offset + kSlotVersionOffset, b.data(), static_cast<uint32_t>(b.size()));
        ++report.replicas_restored;
        if (crash && crash->single_steps()) {
          // One replica at a time: a recovery leader may die between them.
          if (Status s = batch.run(); !s) return Status(s.code(), "rolling back: " + s.message());
          batch.clear();
          hit(crash, CrashPoint::kRecoveryAfterRollback);
        }
      }
    }
    for (const Probe& p : mine) report.latch_sites.push_back(LatchSite{p.node, rec.entries[p.entry].slot_offset});
    logger.info("pid {} txn {:#x}: {} ({} entries)", latch_pid(rec.txn_id), rec.txn_id,
                complete ? "rolled forward" : "rolled back", rec.entries.size());
  }
  if (batch.size() > 0) {
    if (Status s = batch.run(); !s) return Status(s.code(), "rolling back: " + s.message());
  }
  if (rolled_back && !(crash && crash->single_steps())) hit(crash, CrashPoint::kRecoveryAfterRollback);
  return Status();
}

}  // namespace

Status decide_and_repair(const Cluster& cluster, std::span<Connection* const> conns, std::span<const LogRecord> recs,
                         LogRecoveryReport& report, const Logger& logger, StepHook* crash) {
  // Rounds: a record goes one round after the last earlier record sharing a
  // replica slot with it (so it reads what that one repaired, as if decided
  // one by one in order), else into the first round.
  std::vector<std::vector<size_t>> rounds;
  std::map<std::pair<size_t, uint64_t>, size_t> next_round;  // (node, slot) -> first round free of it
  for (size_t r = 0; r < recs.size(); ++r) {
    const LogRecord& rec = recs[r];
    ++report.records;
    if (!record_matches_directory(cluster, rec)) {
      ++report.skipped;
      logger.warn("pid {}: record of txn {:#x} does not match the table directory; skipped", latch_pid(rec.txn_id),
                  rec.txn_id);
      continue;
    }
    size_t round = 0;
    for (const LogEntry& e : rec.entries) {
      for (uint16_t n : cluster.replica_indexes(e.shard)) {
        if (auto it = next_round.find({n, e.slot_offset}); it != next_round.end()) round = std::max(round, it->second);
      }
    }
    for (const LogEntry& e : rec.entries) {
      for (uint16_t n : cluster.replica_indexes(e.shard)) next_round[{n, e.slot_offset}] = round + 1;
    }
    if (rounds.size() <= round) rounds.resize(round + 1);
    rounds[round].push_back(r);
  }
  for (const std::vector<size_t>& round : rounds) {
    if (Status s = decide_round(cluster, conns, recs, round, report, logger, crash); !s) return s;
  }
  dedup_latch_sites(report);
  return Status();
}

Result<LogRecoveryReport> recover_logs(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                                       const LaneSlot& slot, const Logger& logger, StepHook* crash) {
  LogRecoveryReport report;
  const uint32_t lane_bytes = cluster.lanes().lane_bytes();

  // 1. Read every lane of the pid on each live log node.
  std::vector<size_t> log_nodes;
  for (size_t n : cluster.log_node_indexes(pid)) {
    if (live(cluster, conns, n)) log_nodes.push_back(n);
  }
  if (log_nodes.empty()) {
    return Status(Errc::kDisconnected, fmt::format("none of pid {}'s log nodes is reachable", pid));
  }
  auto read = read_lanes(cluster, conns, slot, log_nodes);
  if (!read) return read.status();
  const std::vector<std::vector<uint8_t>>& lane_data = *read;
  hit(crash, CrashPoint::kRecoveryAfterRead);

  // 2. Valid records of this pid, one per (lane, lane_seq).
  std::map<std::pair<uint32_t, uint64_t>, LogRecord> records;
  for (size_t k = 0; k < log_nodes.size(); ++k) {
    for (uint32_t l = 0; l < slot.count; ++l) {
      auto rec = decode_log_record(std::span<const uint8_t>(lane_data[k].data() + size_t{l} * lane_bytes, lane_bytes));
      if (!rec || latch_pid(rec->txn_id) != pid) continue;
      records.emplace(std::make_pair(l, rec->lane_seq), std::move(*rec));
    }
  }

  // 3. Decide and repair, in (lane, lane_seq) order where records share an
  // object, in one batch where they do not.
  std::vector<LogRecord> ordered;
  ordered.reserve(records.size());
  for (auto& [where, rec] : records) ordered.push_back(std::move(rec));
  if (Status s = decide_and_repair(cluster, conns, ordered, report, logger, crash); !s) return s;

  // 4. log-a-latch: every slot an intent names, on every replica, is a
  // place where the pid may hold a latch, logged or not.
  for (size_t k = 0; k < log_nodes.size(); ++k) {
    for (uint32_t l = 0; l < slot.count; ++l) {
      const uint8_t* lane = lane_data[k].data() + size_t{l} * lane_bytes;
      for (uint32_t i = 1; latch_intent_offset(lane_bytes, i) >= lane_bytes / 2; ++i) {
        LatchIntent li;
        std::memcpy(&li, lane + latch_intent_offset(lane_bytes, i), sizeof li);
        if (li.magic != kLatchIntentMagic || latch_pid(li.txn_id) != pid) break;
        const TableEntry* t = cluster.directory().find(li.table_id);
        if (!t || !is_slot_offset(*t, li.slot)) continue;
        ++report.intents;
        for (uint16_t n : cluster.replica_indexes(cluster.placement().shard_of(li.table_id, li.key))) {
          report.latch_sites.push_back(LatchSite{n, li.slot});
        }
      }
    }
  }
  dedup_latch_sites(report);
  return report;
}

Result<std::vector<std::vector<uint8_t>>> read_lanes(const Cluster& cluster, std::span<Connection* const> conns,
                                                     const LaneSlot& slot, std::span<const size_t> nodes) {
  const LaneMap& lanes = cluster.lanes();
  if (Status s = lanes.check_slot(slot); !s) return s;
  const uint32_t lane_bytes = lanes.lane_bytes();
  std::vector<std::vector<uint8_t>> data(nodes.size(), std::vector<uint8_t>(size_t{slot.count} * lane_bytes));
  OpBatch batch(conns, batch_timeout(cluster));
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (uint32_t l = 0; l < slot.count; ++l) {
      batch.read(nodes[k], cluster.lane_address(nodes[k], slot.first + l), data[k].data() + size_t{l} * lane_bytes,
                 lane_bytes);
    }
  }
  if (Status s = batch.run(); !s) return Status(s.code(), "reading log lanes: " + s.message());
  return data;
}

Status zero_lane_heads(const Cluster& cluster, std::span<Connection* const> conns, const LaneSlot& slot,
                       std::span<const size_t> nodes) {
  if (Status s = cluster.lanes().check_slot(slot); !s) return s;
  static constexpr uint8_t kZeros[sizeof(LogRecordHeader)] = {};
  static constexpr uint8_t kNoIntent[kLatchIntentBytes] = {};
  const uint32_t lane_bytes = cluster.lanes().lane_bytes();
  OpBatch batch(conns, batch_timeout(cluster));
  for (size_t n : nodes) {
    if (!live(cluster, conns, n)) continue;
    for (uint32_t l = 0; l < slot.count; ++l) {
      const uint64_t lane = cluster.lane_address(n, slot.first + l);
      batch.write(n, lane, kZeros, sizeof kZeros);
      // log-a-latch intents are read from the first one down and stop at
      // the first that is not the pid's: clearing the first leaves none
      // (in other modes those bytes belong to no record once the header
      // is gone).
      batch.write(n, lane + latch_intent_offset(lane_bytes, 1), kNoIntent, sizeof kNoIntent);
    }
  }
  return batch.run();
}

Status truncate_lanes(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                      const LaneSlot& slot, StepHook* crash) {
  hit(crash, CrashPoint::kBeforeTruncate);
  if (Status s = zero_lane_heads(cluster, conns, slot, cluster.log_node_indexes(pid)); !s) return s;
  hit(crash, CrashPoint::kAfterTruncate);
  return Status();
}

Result<uint32_t> sweep_stray_latches(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                                     std::span<const LatchSite> sites, StepHook* crash) {
  hit(crash, CrashPoint::kBeforeSweep);
  std::vector<uint64_t> words(sites.size(), 0);
  OpBatch batch(conns, batch_timeout(cluster));
  std::vector<size_t> reads(sites.size(), SIZE_MAX);
  for (size_t i = 0; i < sites.size(); ++i) {
    if (live(cluster, conns, sites[i].node)) {
      reads[i] = batch.read(sites[i].node, sites[i].slot + kSlotLatchOffset, &words[i], sizeof(uint64_t));
    }
  }
  if (Status s = batch.run(); !s) return s;
  batch.clear();
  std::vector<size_t> cas_ops;
  for (size_t i = 0; i < sites.size(); ++i) {
    if (reads[i] != SIZE_MAX && words[i] != kLatchFree && latch_pid(words[i]) == pid) {
      cas_ops.push_back(batch.cas(sites[i].node, sites[i].slot + kSlotLatchOffset, words[i], kLatchFree));
    } else {
      words[i] = kLatchFree;
    }
  }
  if (Status s = batch.run(); !s) return s;
  uint32_t released = 0;
  size_t k = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    if (words[i] == kLatchFree) continue;
    if (batch.value(cas_ops[k++]) == words[i]) ++released;  // else stolen meanwhile: fine
  }
  hit(crash, CrashPoint::kAfterSweep);
  return released;
}

}  // namespace pandora
