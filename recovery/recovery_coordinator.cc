#include "recovery/recovery_coordinator.h"

#include <fmt/format.h>

#include "recovery/log_recovery.h"

namespace pandora {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t us_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count());
}

}  // namespace

RecoveryCoordinator::RecoveryCoordinator(Registry& registry, Cluster& cluster, RecoveryCoordinatorOptions options,
                                         const Logger& logger, FailedPusher push, CrashInjector* crash)
    : registry_(registry),
      cluster_(cluster),
      options_(std::move(options)),
      logger_(logger),
      push_(std::move(push)),
      crash_(crash) {}

Status fence_at_every_memory_node(const ClusterRecord& cluster, const std::string& secret, uint16_t pid,
                                  std::chrono::milliseconds timeout) {
  ClientIdentity admin;
  admin.cluster_id = cluster.cluster_id;
  admin.secret = secret;
  admin.role = wire::Role::kAdmin;
  admin.compute_id = 0;
  for (const Endpoint& ep : cluster.memory_nodes) {
    auto ctl = ControlClient::connect(ep, admin, timeout);
    if (!ctl) return Status(ctl.status().code(), fmt::format("fencing pid {} at {}: {}", pid, ep.to_string(),
                                                             ctl.status().message()));
    if (Status s = (*ctl)->fence(pid); !s) {
      return Status(s.code(), fmt::format("fencing pid {} at {}: {}", pid, ep.to_string(), s.message()));
    }
  }
  return Status::ok();
}

Status retire_member(Registry& registry, const std::string& secret, uint16_t pid, uint32_t replica_id,
                     std::chrono::milliseconds timeout) {
  auto member = registry.member(pid);
  if (!member) return member.status();
  RecoveryRecord rec;
  rec.pid = pid;
  rec.leader_replica = replica_id;
  if (*member) rec.slot = (*member)->slot;
  if (Status s = registry.start_recovery(rec); !s) return s;
  if (Status s = fence_at_every_memory_node(registry.cluster(), secret, pid, timeout); !s) return s;
  if (Status s = registry.publish_failed(rec); !s) return s;
  return registry.finish_recovery(rec);
}

Status RecoveryCoordinator::fence_everywhere(uint16_t pid) {
  return fence_at_every_memory_node(registry_.cluster(), options_.secret, pid, options_.control_timeout);
}

Result<RecoveryRecord> RecoveryCoordinator::recover(uint16_t pid, uint64_t detected_ns) {
  if (pid == 0) return Status(Errc::kInvalidArgument, "pid 0 is never a compute node");
  auto existing = registry_.recovery(pid);
  if (!existing) return existing.status();
  if (*existing && (*existing)->step == RecoveryStep::kDone) return **existing;

  RecoveryRecord rec;
  rec.pid = pid;
  rec.leader_replica = options_.replica_id;
  rec.detected_ns = detected_ns;
  if (*existing) {
    rec = **existing;
    rec.leader_replica = options_.replica_id;
  }
  const bool published = *existing && (*existing)->step == RecoveryStep::kPublished;

  if (!published) {
    auto member = registry_.member(pid);
    if (!member) return member.status();
    if (!*member && !*existing) {
      return Status(Errc::kNotFound, fmt::format("pid {} is not registered in {} and has no recovery record", pid,
                                                 registry_.root()));
    }
    if (*member) rec.slot = (*member)->slot;
    if (rec.slot.empty()) {
      return Status(Errc::kCorrupt, fmt::format("pid {} has no lane slot on record: cannot read its logs", pid));
    }

    // 1. The start record (ZooKeeper write 1).
    auto t = Clock::now();
    if (Status s = registry_.start_recovery(rec); !s) return s;
    rec.start_record_us = us_since(t);

    // 2. Fence: from here on nothing the pid sends changes memory.
    t = Clock::now();
    if (Status s = fence_everywhere(pid); !s) return s;
    rec.fence_us = us_since(t);

    // 3. Log recovery: repair, release nothing.
    t = Clock::now();
    const auto conns = cluster_.bootstrap_connections();
    auto report = recover_logs(cluster_, conns, pid, rec.slot, logger_, crash_);
    if (!report) return report.status();
    rec.log_recovery_us = us_since(t);
    rec.records = report->records;
    rec.rolled_back = report->rolled_back;
    rec.rolled_forward = report->rolled_forward;

    // 4. Truncate its lanes (the slot may be leased again after this).
    t = Clock::now();
    if (Status s = truncate_lanes(cluster_, conns, pid, rec.slot, crash_); !s) return s;
    rec.truncate_us = us_since(t);

    // 5. Publish (ZooKeeper write 2), then push to every compute node.
    t = Clock::now();
    if (Status s = registry_.publish_failed(rec); !s) return s;
    rec.publish_us = us_since(t);
    cluster_.failed_ids().add(pid);
    if (push_) {
      auto members = registry_.members();
      if (members) {
        std::vector<Endpoint> to;
        for (const MemberRecord& m : *members) {
          if (m.push && m.pid != pid) to.push_back(*m.push);
        }
        const uint16_t pids[] = {pid};
        push_(to, pids);
      } else {
        logger_.warn("pid {} published, but the compute nodes could not be listed for the push ({}); they learn it "
                     "from their ZooKeeper watch",
                     pid, members.status().to_string());
      }
    }

    // 6. Post-publish sweep of the latches its logs name (optional: the
    // rest are stolen by whoever meets them).
    t = Clock::now();
    auto swept = sweep_stray_latches(cluster_, conns, pid, report->latch_sites, crash_);
    if (swept) rec.swept = *swept;
    else logger_.warn("sweep of pid {}'s latches: {} (they will be stolen)", pid, swept.status().to_string());
    rec.sweep_us = us_since(t);
  }

  // 7. Off the critical path: release the lane lease, mark done.
  if (Status s = registry_.finish_recovery(rec); !s) return s;
  rec.step = RecoveryStep::kDone;
  logger_.info("recovered pid {}: fence {} us, log recovery {} us ({} records, {} rolled back, {} rolled forward), "
               "truncate {} us, publish {} us, {} latches swept",
               pid, rec.fence_us, rec.log_recovery_us, rec.records, rec.rolled_back, rec.rolled_forward,
               rec.truncate_us, rec.publish_us, rec.swept);
  return rec;
}

Status RecoveryCoordinator::resume(uint16_t self) {
  auto members = registry_.members();
  if (!members) return members.status();
  for (const MemberRecord& m : *members) {
    if (m.role != MemberRole::kFd || m.pid == self) continue;
    logger_.info("recovering pid {}, a former FD leader's data-plane identity", m.pid);
    if (auto r = recover(m.pid, 0); !r) return r.status();
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
