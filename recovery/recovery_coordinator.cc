#include "recovery/recovery_coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "recovery/ford_recovery.h"
#include "recovery/log_recovery.h"

namespace pandora {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t us_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count());
}

}  // namespace

RecoveryCoordinator::RecoveryCoordinator(Registry& registry, Cluster& cluster, RecoveryCoordinatorOptions options,
                                         const Logger& logger, FailedPusher push, StepHook* crash)
    : registry_(registry),
      cluster_(cluster),
      options_(std::move(options)),
      logger_(logger),
      push_(std::move(push)),
      crash_(crash),
      admin_(registry.cluster().cluster_id, options_.secret, options_.control_timeout) {}

namespace {

// A stop-the-world pause's epoch: unique per pause (CLOCK_REALTIME ns).
uint64_t new_pause_epoch() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Whatever happens while the world stands still, it resumes when this goes
// (a dead leader's pause is taken over by the next one, which resumes it).
struct EndPause {
  Registry& registry;
  Logger& log;
  bool armed = true;  // false: the world stays stopped (the next attempt or leader resumes it)
  ~EndPause() {
    if (!armed) return;
    if (Status s = registry.end_pause(); !s) log.warn("ending the pause: {}", s.to_string());
  }
};

}  // namespace

Status fence_at_every_memory_node(const ClusterRecord& cluster, const std::string& secret, uint16_t pid,
                                  std::chrono::milliseconds timeout) {
  return AdminSessions(cluster.cluster_id, secret, timeout).fence(live_memory_nodes(cluster), pid);
}

Status at_every_memory_node(const ClusterRecord& cluster, const std::string& secret,
                            std::chrono::milliseconds timeout, std::string_view what,
                            const std::function<Status(ControlClient&)>& op) {
  return AdminSessions(cluster.cluster_id, secret, timeout).at_every(live_memory_nodes(cluster), what, op);
}

Status retire_member(Registry& registry, const std::string& secret, uint16_t pid, uint32_t replica_id,
                     std::chrono::milliseconds timeout, bool fence) {
  auto member = registry.member(pid);
  if (!member) return member.status();
  RecoveryRecord rec;
  rec.pid = pid;
  rec.leader_replica = replica_id;
  if (*member) rec.slot = (*member)->slot;
  if (Status s = registry.start_recovery(rec); !s) return s;
  if (fence) {
    // The record as it is now: a memory node failed over since this
    // registry was opened must not be contacted.
    auto cluster = registry.read_cluster();
    if (!cluster) return cluster.status();
    if (Status s = fence_at_every_memory_node(*cluster, secret, pid, timeout); !s) return s;
  }
  if (Status s = registry.publish_failed(rec); !s) return s;
  return registry.finish_recovery(rec);
}

Status RecoveryCoordinator::fence_everywhere(uint16_t pid) {
  return admin_.fence(live_memory_nodes(registry_.cluster()), pid);
}

Status RecoveryCoordinator::fence_everywhere(std::span<const uint16_t> pids) {
  return admin_.fence(live_memory_nodes(registry_.cluster()), pids);
}

Status RecoveryCoordinator::publish(std::span<const Registry::ToPublish> wave) {
  auto on = [&](Registry& r) {
    return wave.size() == 1 ? r.publish_failed(wave[0].record, wave[0].record_exists) : r.publish_failed_together(wave);
  };
  if (options_.publisher != nullptr) {
    Status s = on(*options_.publisher);
    if (s) return s;
    logger_.warn("publishing on the second ZooKeeper session: {} (publishing on the leader's)", s.to_string());
  }
  return on(registry_);
}

Result<RecoveryRecord> RecoveryCoordinator::recover(uint16_t pid, uint64_t detected_ns, const MemberRecord* known) {
  FailedPid one{pid, detected_ns, {}};
  if (known) one.known = *known;
  auto recs = recover_together(std::span<const FailedPid>(&one, 1));
  if (!recs) return recs.status();
  return recs->front();
}

Status RecoveryCoordinator::prepare_and_repair(std::span<const FailedPid> pids, std::vector<Pending>* pending) {
  if (pids.empty()) return Status::ok();
  // 1. Every pid's record, read in one round.
  std::vector<uint16_t> ids;
  for (const FailedPid& f : pids) {
    if (f.pid == 0) return Status(Errc::kInvalidArgument, "pid 0 is never a compute node");
    ids.push_back(f.pid);
  }
  // 2, early: the pids the detector knows as registered members are fenced
  // while that read is on its way, if this leader is connected to
  // ZooKeeper (see the header). ford fences inside its pause, after the
  // record it writes first.
  std::vector<uint16_t> fenced_early;
  if (registry_.cluster().protocol != "ford" && registry_.zk().connected()) {
    for (const FailedPid& f : pids) {
      if (f.known && f.known->pid == f.pid) fenced_early.push_back(f.pid);
    }
  }
  Status early_fence;
  uint64_t early_fence_us = 0;
  const auto t_read = Clock::now();
  auto existing = registry_.recoveries_of(ids, [&] {
    if (fenced_early.empty()) return;
    const auto t = Clock::now();
    early_fence = fence_everywhere(fenced_early);
    early_fence_us = us_since(t);
  });
  if (!existing) return existing.status();
  // A fence that failed here (a memory node unreachable) is tried again
  // below for the pids that need it, and fails the recovery there; pids
  // found recovered already do not.
  if (!early_fence) fenced_early.clear();
  auto early = [&](uint16_t pid) {
    return std::find(fenced_early.begin(), fenced_early.end(), pid) != fenced_early.end();
  };
  // For a pid fenced early, the read's time is what its fence did not
  // cover, so that its steps' durations add up to the critical path.
  const uint64_t read_wall_us = us_since(t_read);
  const uint64_t read_beyond_fence_us = read_wall_us - std::min(read_wall_us, early_fence_us);
  const size_t from = pending->size();
  for (size_t i = 0; i < pids.size(); ++i) {
    auto p = prepare(pids[i], (*existing)[i]);
    if (!p) return p.status();
    if (p->next == Pending::Next::kRepair) {
      p->rec.start_record_us += early(p->rec.pid) ? read_beyond_fence_us : read_wall_us;
    }
    pending->push_back(std::move(*p));
  }
  const std::span<Pending> mine = std::span<Pending>(*pending).subspan(from);
  // 2. Fence every pid to repair not fenced above, with one request per
  // memory node: from here on nothing any of them sends changes memory.
  std::vector<uint16_t> to_fence;
  bool any_to_repair = false;
  for (const Pending& p : mine) {
    if (p.next != Pending::Next::kRepair) continue;
    any_to_repair = true;
    if (!early(p.rec.pid)) to_fence.push_back(p.rec.pid);
  }
  if (!any_to_repair) return Status::ok();
  uint64_t late_fence_us = 0;
  if (!to_fence.empty()) {
    const auto t = Clock::now();
    if (Status s = fence_everywhere(to_fence); !s) return s;
    late_fence_us = us_since(t);
  }
  // 3..4 for each.
  for (Pending& p : mine) {
    if (p.next != Pending::Next::kRepair) continue;
    p.rec.fence_us = early(p.rec.pid) ? early_fence_us : late_fence_us;
    if (Status s = repair(p); !s) return s;
  }
  return Status::ok();
}

Status RecoveryCoordinator::repair_and_push(Batch& b) {
  const size_t from = b.pending.size();
  if (Status s = prepare_and_repair(std::span<const FailedPid>(b.pids).subspan(from), &b.pending); !s) return s;
  std::vector<uint16_t> pushed;
  for (size_t i = from; i < b.pending.size(); ++i) {
    if (b.pending[i].next == Pending::Next::kRepair) pushed.push_back(b.pending[i].rec.pid);
  }
  if (pushed.empty()) return Status::ok();
  // 5. Publish: the push to every compute node first, then the ZooKeeper
  // write. From the push on, survivors steal the pids' latches; that is
  // safe already (their writes are fenced, their lanes hold nothing
  // undecided), and a leader that dies before the write is replaced by one
  // that re-runs every step and finds the lanes empty. ZooKeeper's
  // failed-ids is what nodes that missed the (UDP) push, or join later, read.
  for (uint16_t pid : pushed) cluster_.failed_ids().add(pid);
  push_failed(pushed);
  if (pushed.size() > 1) {
    logger_.info("{} pids pushed to the survivors together, before their ZooKeeper write", pushed.size());
  }
  b.repaired.insert(b.repaired.end(), pushed.begin(), pushed.end());
  return Status::ok();
}

Result<size_t> RecoveryCoordinator::join_failed_since(Batch& b) {
  if (b.repaired.empty() || b.join_rounds >= kJoinRounds || !options_.failed_since) return size_t{0};
  std::vector<uint16_t> ids;
  for (const FailedPid& f : b.pids) ids.push_back(f.pid);
  size_t joined = 0;
  for (FailedPid& f : options_.failed_since(ids)) {
    if (f.pid == 0 || std::find(ids.begin(), ids.end(), f.pid) != ids.end()) continue;
    ids.push_back(f.pid);
    b.pids.push_back(std::move(f));
    ++joined;
  }
  if (joined == 0) return joined;
  ++b.join_rounds;
  logger_.info("{} more pid(s) failed while {} were recovered: they join the batch", joined, b.repaired.size());
  if (Status s = repair_and_push(b); !s) return s;
  return joined;
}

Result<std::vector<RecoveryRecord>> RecoveryCoordinator::recover_together(std::span<const FailedPid> first) {
  Batch b;
  b.pids.assign(first.begin(), first.end());
  if (Status s = repair_and_push(b); !s) return s;
  // Pids that failed meanwhile join before the ZooKeeper writes (which
  // take longer than the rest of a recovery): a host's processes may cross
  // the timeout several milliseconds apart.
  for (;;) {
    auto joined = join_failed_since(b);
    if (!joined) return joined.status();
    if (*joined == 0) break;
  }
  // The ZooKeeper writes, one multi per wave of pushed pids, run on another
  // thread; pids that fail meanwhile are repaired and pushed at once and
  // written with the next wave, instead of waiting for these writes.
  std::vector<Pending>& pending = b.pending;
  size_t written = 0;  // pending[0, written) are published (or not to publish)
  while (written < pending.size()) {
    std::vector<size_t> wave;
    for (size_t i = written; i < pending.size(); ++i) {
      if (pending[i].next == Pending::Next::kRepair) wave.push_back(i);
    }
    written = pending.size();
    if (wave.empty()) continue;
    std::vector<Registry::ToPublish> batch;
    for (size_t i : wave) {
      pending[i].rec.together = static_cast<uint32_t>(b.repaired.size());
      batch.push_back(Registry::ToPublish{pending[i].rec, pending[i].record_exists});
    }
    const auto t = Clock::now();
    std::future<Status> writing =
        std::async(std::launch::async, [this, batch = std::move(batch)] { return publish(batch); });
    // Asked at least once per wave, then every 250 us until it is written.
    do {
      if (auto joined = join_failed_since(b); !joined) {
        writing.wait();  // this wave's outcome no longer matters; a re-run repeats it
        return joined.status();
      }
    } while (writing.wait_for(std::chrono::microseconds(250)) != std::future_status::ready);
    if (Status s = writing.get(); !s) return s;
    const uint64_t publish_us = us_since(t);
    for (size_t i : wave) pending[i].rec.publish_us = publish_us;
  }
  std::vector<RecoveryRecord> out(pending.size());
  std::vector<RecoveryRecord> repaired_recs;
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    if (p.next != Pending::Next::kRepair) continue;
    p.rec.together = static_cast<uint32_t>(b.repaired.size());  // the batch as it ended
    sweep(p);
    repaired_recs.push_back(p.rec);
  }
  if (!repaired_recs.empty()) {
    // 7. Off the critical path: the lane leases released and the records
    // marked done, in one ZooKeeper multi for the batch.
    if (Status s = registry_.finish_recoveries(repaired_recs); !s) return s;
    for (Pending& p : pending) {
      if (p.next != Pending::Next::kRepair) continue;
      p.rec.step = RecoveryStep::kDone;
      const RecoveryRecord& rec = p.rec;
      logger_.info("recovered pid {}: record read {} us, fence {} us, log recovery {} us ({} records, {} rolled "
                   "back, {} rolled forward), truncate {} us, publish {} us, {} latches swept",
                   rec.pid, rec.start_record_us, rec.fence_us, rec.log_recovery_us, rec.records, rec.rolled_back,
                   rec.rolled_forward, rec.truncate_us, rec.publish_us, rec.swept);
    }
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    Result<RecoveryRecord> r = RecoveryRecord{};
    if (p.next == Pending::Next::kRepair) {
      r = p.rec;
    } else if (p.next == Pending::Next::kStoppedWorld) {
      // An earlier pid's pause may have recovered this one (ford recovers
      // the nodes that fail during a pause in that pause): read again,
      // rather than stop the world twice.
      auto again = prepare(FailedPid{p.rec.pid, p.rec.detected_ns, {}});
      if (!again) return again.status();
      r = conclude_alone(*again);
    } else {
      r = conclude_alone(p);
    }
    if (!r) return r.status();
    out[i] = std::move(*r);
  }
  return out;
}

Result<RecoveryRecord> RecoveryCoordinator::conclude_alone(const Pending& p) {
  switch (p.next) {
    case Pending::Next::kNothing: return p.rec;
    case Pending::Next::kFinish: return finish(p.rec);
    case Pending::Next::kStoppedWorld: return recover_stopped_world(p.rec.pid, p.rec);
    case Pending::Next::kRepair: break;
  }
  return Status(Errc::kInvalidArgument, fmt::format("pid {} needs a repair, not a recovery of its own", p.rec.pid));
}

Result<RecoveryCoordinator::Pending> RecoveryCoordinator::prepare(const FailedPid& f) {
  if (f.pid == 0) return Status(Errc::kInvalidArgument, "pid 0 is never a compute node");
  const auto t_start = Clock::now();
  auto existing = registry_.recovery(f.pid);
  if (!existing) return existing.status();
  auto p = prepare(f, *existing);
  if (p && p->next == Pending::Next::kRepair) p->rec.start_record_us += us_since(t_start);
  return p;
}

Result<RecoveryCoordinator::Pending> RecoveryCoordinator::prepare(const FailedPid& f,
                                                                  const std::optional<RecoveryRecord>& existing) {
  const uint16_t pid = f.pid;
  if (pid == 0) return Status(Errc::kInvalidArgument, "pid 0 is never a compute node");
  const auto t_start = Clock::now();
  Pending p;
  p.record_exists = existing.has_value();
  if (existing && existing->step == RecoveryStep::kDone) {
    p.next = Pending::Next::kNothing;
    p.rec = *existing;
    return p;
  }
  p.rec.pid = pid;
  p.rec.leader_replica = options_.replica_id;
  p.rec.detected_ns = f.detected_ns;
  if (existing) {
    p.rec = *existing;
    p.rec.leader_replica = options_.replica_id;
  }
  if (existing && existing->step == RecoveryStep::kPublished) {
    // 7. is all that is left.
    p.next = Pending::Next::kFinish;
    return p;
  }
  // The pid's member record: as the caller last read it (the detector's
  // leader watches them; then the record read above is the only
  // ZooKeeper call before the data-plane steps), else read now.
  Result<std::optional<MemberRecord>> member = std::optional<MemberRecord>();
  if (f.known && f.known->pid == pid && !f.known->slot.empty() && registry_.cluster().protocol != "ford") {
    member = std::optional<MemberRecord>(*f.known);
  } else {
    member = registry_.member(pid);
    if (!member) return member.status();
  }
  if (!*member && !existing) {
    return Status(Errc::kNotFound,
                  fmt::format("pid {} is not registered in {} and has no recovery record", pid, registry_.root()));
  }
  if (*member) p.rec.slot = (*member)->slot;
  if (p.rec.slot.empty()) {
    return Status(Errc::kCorrupt, fmt::format("pid {} has no lane slot on record: cannot read its logs", pid));
  }
  if (registry_.cluster().protocol == "ford") {
    p.next = Pending::Next::kStoppedWorld;
    return p;
  }
  // No start record (see the header).
  p.rec.start_record_us = us_since(t_start);
  p.next = Pending::Next::kRepair;
  return p;
}

void RecoveryCoordinator::push_failed(std::span<const uint16_t> pids) {
  if (!push_) return;
  if (options_.push_targets) {
    const std::vector<Endpoint> to = options_.push_targets();
    push_(to, pids);
    return;
  }
  auto members = registry_.members();
  if (!members) {
    logger_.warn("{} pid(s) recovered, but the compute nodes could not be listed for the push ({}); they learn it "
                 "from their ZooKeeper watch",
                 pids.size(), members.status().to_string());
    return;
  }
  std::vector<Endpoint> to;
  for (const MemberRecord& m : *members) {
    if (m.push && std::find(pids.begin(), pids.end(), m.pid) == pids.end()) to.push_back(*m.push);
  }
  push_(to, pids);
}

Status RecoveryCoordinator::repair(Pending& p) {
  const uint16_t pid = p.rec.pid;
  RecoveryRecord& rec = p.rec;
  // 3. Log recovery: repair, release nothing.
  auto t = Clock::now();
  const auto conns = cluster_.bootstrap_connections();
  auto report = recover_logs(cluster_, conns, pid, rec.slot, logger_, crash_);
  if (report && report->skipped > 0) {
    // Records naming tables this leader's directory does not describe:
    // the tables were created again (pandora-bench --load --replace)
    // since it read the directory. Read it again and decide them; a
    // re-run repeats nothing already repaired.
    logger_.warn("pid {}: {} log record(s) do not match the table directory: reading it again", pid,
                 report->skipped);
    if (Status s = cluster_.load_directory(); !s) return s;
    report = recover_logs(cluster_, conns, pid, rec.slot, logger_, crash_);
  }
  if (!report) return report.status();
  rec.log_recovery_us = us_since(t);
  rec.records = report->records;
  rec.rolled_back = report->rolled_back;
  rec.rolled_forward = report->rolled_forward;
  p.latch_sites = std::move(report->latch_sites);

  // 4. Truncate its lanes (the slot may be leased again after this).
  t = Clock::now();
  if (Status s = truncate_lanes(cluster_, conns, pid, rec.slot, crash_); !s) return s;
  rec.truncate_us = us_since(t);
  return Status::ok();
}

void RecoveryCoordinator::sweep(Pending& p) {
  RecoveryRecord& rec = p.rec;
  const uint16_t pid = rec.pid;
  // 6. Post-publish sweep of the latches its logs name (optional: the
  // rest are stolen by whoever meets them).
  const auto t = Clock::now();
  const auto conns = cluster_.bootstrap_connections();
  auto swept = sweep_stray_latches(cluster_, conns, pid, p.latch_sites, crash_);
  if (swept) rec.swept = *swept;
  else logger_.warn("sweep of pid {}'s latches: {} (they will be stolen)", pid, swept.status().to_string());
  rec.sweep_us = us_since(t);
}

Result<RecoveryRecord> RecoveryCoordinator::finish(RecoveryRecord rec) {
  // 7. Off the critical path: release the lane lease, mark done.
  if (Status s = registry_.finish_recovery(rec); !s) return s;
  rec.step = RecoveryStep::kDone;
  return rec;
}

Result<RecoveryRecord> RecoveryCoordinator::recover_stopped_world(uint16_t pid, RecoveryRecord rec) {
  auto t = Clock::now();
  if (Status s = registry_.start_recovery(rec); !s) return s;
  rec.start_record_us = us_since(t);
  t = Clock::now();
  if (Status s = fence_everywhere(pid); !s) return s;
  rec.fence_us = us_since(t);

  // Stop the world: every live compute node parks and acknowledges.
  const auto pause_start = Clock::now();
  const uint64_t epoch = new_pause_epoch();
  std::vector<uint16_t> batch{pid};
  if (Status s = registry_.begin_pause(epoch, batch); !s) return s;
  const EndPause resume{registry_, logger_};
  const auto deadline = Clock::now() + options_.park_timeout;
  for (;;) {
    auto unparked = not_parked(epoch, batch);
    if (!unparked) return unparked.status();
    const std::vector<uint16_t>& missing = *unparked;
    if (missing.empty()) break;
    if (options_.failed_now) {
      std::vector<uint16_t> failed_too;
      for (uint16_t f : options_.failed_now()) {
        if (std::find(missing.begin(), missing.end(), f) == missing.end()) continue;
        logger_.info("pid {} failed too: recovering it in this pause", f);
        failed_too.push_back(f);
      }
      if (!failed_too.empty()) {
        if (Status s = fence_everywhere(failed_too); !s) return s;
        batch.insert(batch.end(), failed_too.begin(), failed_too.end());
        continue;
      }
    }
    if (Clock::now() > deadline) {
      // A node that cannot park holds latches nobody can tell apart: it is
      // treated as failed, fenced and recovered in this same pause.
      for (uint16_t m : missing) {
        logger_.warn("pid {} did not park within {} ms: fencing and recovering it in this pause", m,
                     options_.park_timeout.count());
      }
      if (Status s = fence_everywhere(missing); !s) return s;
      batch.insert(batch.end(), missing.begin(), missing.end());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  std::vector<RecoveryRecord> recs{rec};
  if (Status s = start_stopped_recoveries(batch, rec, &recs); !s) return s;
  if (Status s = repair_stopped_world(recs, pause_start); !s) return s;
  return recs.front();
}

Status RecoveryCoordinator::start_stopped_recoveries(const std::vector<uint16_t>& pids, const RecoveryRecord& like,
                                                     std::vector<RecoveryRecord>* recs) {
  for (uint16_t pid : pids) {
    if (std::any_of(recs->begin(), recs->end(), [&](const RecoveryRecord& r) { return r.pid == pid; })) continue;
    auto m = registry_.member(pid);
    if (!m) return m.status();
    if (!*m) continue;
    RecoveryRecord r = like;
    r.pid = pid;
    r.slot = (*m)->slot;
    if (Status s = registry_.start_recovery(r); !s) return s;
    recs->push_back(r);
  }
  return Status::ok();
}

Status RecoveryCoordinator::repair_stopped_world(std::vector<RecoveryRecord>& recs,
                                                 std::chrono::steady_clock::time_point pause_start) {
  // The scan below visits the slots of every table the directory names: a
  // directory older than the tables (created again since the leader read
  // it) would leave latches in the new ones for ever. Reading it again
  // (64 KiB per memory node) adds little to a pause that scans every slot.
  if (Status s = cluster_.load_directory(); !s) return s;
  const auto conns = cluster_.bootstrap_connections();
  auto t = Clock::now();
  for (RecoveryRecord& r : recs) {
    auto report = recover_ford_logs(cluster_, conns, r.pid, r.slot, logger_, crash_);
    if (!report) return report.status();
    r.records = report->records;
    r.rolled_back = report->rolled_back;
    r.rolled_forward = report->rolled_forward;
  }
  const uint64_t log_us = us_since(t);
  t = Clock::now();
  for (const RecoveryRecord& r : recs) {
    if (Status s = truncate_ford_lanes(cluster_, conns, r.slot, crash_); !s) return s;
  }
  const uint64_t truncate_us = us_since(t);
  t = Clock::now();
  auto scan = release_all_latches(cluster_, conns, logger_, crash_);
  if (!scan) return scan.status();
  const uint64_t scan_us = us_since(t);
  for (RecoveryRecord& r : recs) {
    r.log_recovery_us = log_us;
    r.truncate_us = truncate_us;
    r.scan_us = scan_us;
    r.swept = scan->released;
    r.pause_us = us_since(pause_start);
    t = Clock::now();
    if (Status s = registry_.publish_failed(r); !s) return s;
    r.publish_us = us_since(t);
    cluster_.failed_ids().add(r.pid);
    if (Status s = registry_.finish_recovery(r); !s) return s;
    r.step = RecoveryStep::kDone;
  }
  logger_.info("recovered {} pid(s) with the world stopped: pause {} us (log recovery {} us, latch scan {} us over {} "
               "slots, {} latches released)",
               recs.size(), us_since(pause_start), log_us, scan_us, scan->slots, scan->released);
  return Status::ok();
}

Result<std::vector<uint16_t>> RecoveryCoordinator::not_parked(uint64_t epoch, const std::vector<uint16_t>& except) {
  auto members = registry_.members();
  if (!members) return members.status();
  auto acks = registry_.pause_acks(epoch);
  if (!acks) return acks.status();
  std::vector<uint16_t> missing;
  for (const MemberRecord& m : *members) {
    if (m.role != MemberRole::kCompute || std::find(except.begin(), except.end(), m.pid) != except.end()) continue;
    if (!std::binary_search(acks->begin(), acks->end(), m.pid)) missing.push_back(m.pid);
  }
  return missing;
}

Result<size_t> RecoveryCoordinator::park_everyone(uint64_t epoch, Clock::time_point pause_start,
                                                  const std::string& why) {
  const bool ford = registry_.cluster().protocol == "ford";
  // Compute nodes that failed in the pause or did not park. ford: fenced at
  // once, recovered together once every other node has parked (its latch
  // scan releases every latch: nobody may be running then).
  std::vector<uint16_t> recovered;
  const auto deadline = Clock::now() + options_.park_timeout;
  for (;;) {
    auto unparked = not_parked(epoch, recovered);
    if (!unparked) return unparked.status();
    const std::vector<uint16_t>& missing = *unparked;
    if (missing.empty()) break;
    std::vector<uint16_t> to_recover;
    if (options_.failed_now) {
      for (uint16_t f : options_.failed_now()) {
        if (std::find(missing.begin(), missing.end(), f) != missing.end()) to_recover.push_back(f);
      }
    }
    if (to_recover.empty() && Clock::now() > deadline) {
      for (uint16_t m : missing) {
        logger_.warn("pid {} did not park within {} ms for {}: recovering it in this pause", m,
                     options_.park_timeout.count(), why);
      }
      to_recover = missing;
    }
    if (ford) {
      if (Status s = fence_everywhere(to_recover); !s) return s;
    } else if (!to_recover.empty()) {
      std::vector<FailedPid> together;
      for (uint16_t p : to_recover) together.push_back(FailedPid{p, 0, {}});
      if (auto r = recover_together(together); !r) return r.status();
    }
    recovered.insert(recovered.end(), to_recover.begin(), to_recover.end());
    if (to_recover.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (ford && !recovered.empty()) {
    RecoveryRecord like;
    like.leader_replica = options_.replica_id;
    std::vector<RecoveryRecord> recs;
    if (Status s = start_stopped_recoveries(recovered, like, &recs); !s) return s;
    if (Status s = repair_stopped_world(recs, pause_start); !s) return s;
  }
  return recovered.size();
}

Status RecoveryCoordinator::fail_over_memory_node(uint32_t node_id) {
  const std::optional<size_t> index = cluster_.index_of(node_id);
  if (!index) {
    return Status(Errc::kNotFound, fmt::format("memory node id {} is not in this cluster's configuration", node_id));
  }
  // This coordinator's own view first: if the node held every replica of
  // some shard, nothing is switched anywhere (the data is lost).
  cluster_.declare_memory_failed(*index);
  if (Status s = cluster_.apply_memory_failures(); !s) return s;
  // 1. Out of the configuration for good (whoever reads the record from
  // now on - joining nodes, a new leader - never contacts it), and, in the
  // same ZooKeeper write, 2. the world stops: Membership declares the node
  // when the pause appears, coordinators decide their transactions and
  // park, primaries switch at the acknowledgement.
  const auto pause_start = Clock::now();
  const uint64_t epoch = new_pause_epoch();
  auto record = registry_.fail_memory_node(FailedMemoryNode{node_id, cluster_.node(*index).endpoint}, epoch);
  if (!record) return record.status();
  if (crash_) crash_->hit(CrashPoint::kMemoryFailoverPaused);
  EndPause resume{registry_, logger_};
  const uint64_t record_us = us_since(pause_start);
  auto recovered = park_everyone(epoch, pause_start, fmt::format("memory node {}'s fail-over", node_id));
  if (!recovered) return recovered.status();
  // A replacement's rebuild cut short (this node died under it, say) may
  // have left rows at two slots of a survivor: not before they are
  // finished does anyone run again.
  if (auto finished = finish_pending_moves(); !finished) {
    resume.armed = false;
    return finished.status();
  }
  logger_.info("memory node {} ({}) failed over: configuration epoch {} (record {} us), pause {} us, {} compute "
               "node(s) recovered in it",
               node_id, cluster_.node(*index).endpoint.to_string(), record->epoch, record_us, us_since(pause_start),
               *recovered);
  return Status::ok();
}

Result<size_t> RecoveryCoordinator::unfence_pids_that_may_log_in(const Endpoint& node,
                                                                 const std::vector<uint16_t>& failed) {
  // A fresh region has exactly the failed pids fenced now: nothing to do.
  size_t fenced_there = 0;
  Status s = admin_.at_every({node}, "stats", [&](ControlClient& c) {
    auto st = c.stats();
    if (!st) return st.status();
    fenced_there = st->fenced_nodes;
    return Status::ok();
  });
  if (!s) return s;
  if (fenced_there <= failed.size()) return size_t{0};
  auto members = registry_.members();
  if (!members) return members.status();
  auto alloc = registry_.alloc();
  if (!alloc) return alloc.status();
  std::vector<uint16_t> may_log_in = alloc->reuse;
  for (const MemberRecord& m : *members) may_log_in.push_back(m.pid);
  std::sort(may_log_in.begin(), may_log_in.end());
  may_log_in.erase(std::unique(may_log_in.begin(), may_log_in.end()), may_log_in.end());
  size_t unfenced = 0;
  for (uint16_t pid : may_log_in) {
    if (std::binary_search(failed.begin(), failed.end(), pid)) continue;
    s = admin_.at_every({node}, "unfence", [pid](ControlClient& c) { return c.unfence(pid); });
    if (!s) return s;
    ++unfenced;
  }
  logger_.info("the replacement at {} had {} pid(s) fenced, {} of them not failed: unfenced {} pid(s) that are "
               "live or recycled (its region was fenced before they were recycled)",
               node.to_string(), fenced_there, fenced_there - failed.size(), unfenced);
  return unfenced;
}

Result<RebuildReport> RecoveryCoordinator::replace_memory_node(const ReplaceRequest& req) {
  const auto start = Clock::now();
  auto cr = registry_.refresh_cluster();
  if (!cr) return cr.status();
  // Every refusal the final write would make, before anything is written.
  if (auto check = restored(*cr, req.node_id, req.endpoint, 0); !check) return check.status();
  const std::optional<size_t> index = cluster_.index_of(req.node_id);
  if (!index || !cluster_.failed_over(*index)) {
    return Status(Errc::kUnavailable, fmt::format("this leader's view has memory node {} live: rebuilding it",
                                                  req.node_id));
  }
  // The daemon logged into here is the one filled, and the one the record
  // binds the node to: another at this address later (restarted on an
  // empty region) is not heard as the node, nor restored by compute nodes.
  wire::RegionInfo filled;
  auto repl = cluster_.connect_replacement(*index, req.endpoint, &filled);
  if (!repl) return repl.status();
  std::vector<Connection*> conns(cluster_.bootstrap_connections().begin(), cluster_.bootstrap_connections().end());
  conns[*index] = repl->get();
  // Nobody uses the node until it is back: its log area is cleared before
  // the world stops (16 MiB by default, a quarter of a small rebuild).
  const auto clear_start = Clock::now();
  if (Status s = clear_replacement_log(cluster_, conns, *index, logger_); !s) return s;
  const uint64_t clear_us = us_since(clear_start);
  // Fenced pids stay fenced there (a fenced process must not reach the
  // node through it), and only those (unfence_pids_that_may_log_in). Those
  // published failed so far are fenced before the world stops, as nobody
  // uses the node yet: a cluster that lived through thousands of
  // compute-node lifetimes has thousands, one round trip each. Those that
  // fail from here to the park are fenced in the pause; a pid that fails
  // after it is fenced by its recovery, which reads the record that lists
  // the node.
  const auto fence_start = Clock::now();
  auto fenced_before = registry_.failed();
  if (!fenced_before) return fenced_before.status();
  if (Status s = admin_.fence({req.endpoint}, *fenced_before); !s) return s;
  auto unfenced = unfence_pids_that_may_log_in(req.endpoint, *fenced_before);
  if (!unfenced) return unfenced.status();
  const uint64_t fence_us = us_since(fence_start);
  const auto pause_start = Clock::now();
  const uint64_t epoch = new_pause_epoch();
  if (Status s = registry_.begin_pause(epoch, {}); !s) return s;
  if (crash_) crash_->hit(CrashPoint::kMemoryReplacePaused);
  EndPause resume{registry_, logger_};
  const std::string why = fmt::format("memory node {}'s replacement", req.node_id);
  auto recovered = park_everyone(epoch, pause_start, why);
  if (!recovered) return recovered.status();
  const uint64_t parked_us = us_since(pause_start);
  // Pids that failed since, those recovered in this pause included.
  auto failed = registry_.failed();
  if (!failed) return failed.status();
  std::vector<uint16_t> failed_since;
  for (uint16_t pid : *failed) {
    if (!std::binary_search(fenced_before->begin(), fenced_before->end(), pid)) failed_since.push_back(pid);
  }
  if (Status s = admin_.fence({req.endpoint}, failed_since); !s) return s;
  const size_t fenced_in_pause = failed_since.size();
  const auto journal_ptr = registry_.relocation_journal();
  RelocationJournal& journal = *journal_ptr;
  RebuildOptions ro;
  ro.zero_log = false;
  auto report = rebuild_memory_node(cluster_, conns, *index, journal, logger_, ro);
  if (!report) {
    // Rows it was moving may sit at two slots of a survivor: finished
    // before anyone runs again, or the pause stays.
    if (auto finished = finish_pending_moves(); !finished) {
      resume.armed = false;
      logger_.error("memory node {}'s rebuild failed ({}) with row moves it could not finish ({}): the pause stays "
                    "until a retry, a fail-over or the next leader finishes them", req.node_id,
                    report.status().to_string(), finished.status().to_string());
      // Retried (as a transient failure) however the rebuild failed.
      return Status(Errc::kUnavailable, fmt::format("{}; row moves left unfinished: {}", report.status().to_string(),
                                                    finished.status().to_string()));
    }
    return report.status();
  }
  auto record = registry_.restore_memory_node(req.node_id, req.endpoint, filled.daemon_incarnation);
  if (!record) return record.status();
  logger_.info("memory node {} is back at {}: configuration epoch {}; {} fenced pid(s) fenced there, pause {} us "
               "(parked in {} us, {} compute node(s) recovered in it), {} rows copied ({} relocated, {} journaled "
               "moves finished) in {} us, {} MiB read, {} MiB written; before the pause: log area cleared in {} us, "
               "{} pid(s) fenced and {} unfenced in {} us ({} more fenced in the pause); {} us in all",
               req.node_id, req.endpoint.to_string(), record->epoch, fenced_before->size() + fenced_in_pause,
               us_since(pause_start), parked_us, *recovered, report->rows, report->relocated, report->resumed,
               report->scan_us + report->relocate_us, report->bytes_read >> 20, report->bytes_written >> 20, clear_us,
               fenced_before->size(), *unfenced, fence_us, fenced_in_pause, us_since(start));
  return report;
}

Result<uint64_t> RecoveryCoordinator::finish_pending_moves() {
  auto finished = finish_relocations(cluster_, cluster_.bootstrap_connections(), *registry_.relocation_journal(),
                                     logger_);
  if (finished && *finished) logger_.info("finished {} row move(s) of a replacement's rebuild cut short", *finished);
  return finished;
}

Status RecoveryCoordinator::resume(uint16_t self) {
  auto members = registry_.members();
  if (!members) return members.status();
  for (const MemberRecord& m : *members) {
    if (m.role != MemberRole::kFd || m.pid == self) continue;
    logger_.info("recovering pid {}, a former FD leader's data-plane identity", m.pid);
    if (auto r = recover(m.pid, 0); !r) return r.status();
  }
  // A pause left behind by a dead leader that names no failed pid is a
  // memory node's fail-over cut short (ford's recoveries name theirs, and
  // are finished from their records below): run it again (every step is
  // idempotent).
  {
    // A rebuild cut short may have left rows at two slots of a survivor:
    // nobody runs again before its journaled moves are finished.
    auto finished = finish_pending_moves();
    if (!finished) return finished.status();
    auto paused = registry_.paused_for_memory();
    if (!paused) return paused.status();
    auto cr = registry_.refresh_cluster();
    if (!cr) return cr.status();
    if (*paused && !cr->failed_memory.empty()) {
      logger_.info("finishing memory node {}'s fail-over (a pause was left in progress)",
                   cr->failed_memory.back().node_id);
      if (Status s = fail_over_memory_node(cr->failed_memory.back().node_id); !s) return s;
    }
  }
  auto records = registry_.recoveries();
  if (!records) return records.status();
  for (const RecoveryRecord& r : *records) {
    if (r.step == RecoveryStep::kDone) continue;
    logger_.info("finishing the recovery of pid {} (left at step {})", r.pid, recovery_step_name(r.step));
    if (auto done = recover(r.pid, r.detected_ns); !done) return done.status();
  }
  return Status::ok();
}

}  // namespace pandora
