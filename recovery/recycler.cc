#include "recovery/recycler.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/transport/client.h"
#include "recovery/latch_scan.h"
#include "recovery/recovery_coordinator.h"

namespace pandora {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t us_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count());
}

Status unfence_everywhere(const ClusterRecord& cluster, const std::string& secret, uint16_t pid,
                          std::chrono::milliseconds timeout) {
  return at_every_memory_node(cluster, secret, timeout, fmt::format("unfencing pid {}", pid),
                              [pid](ControlClient& ctl) { return ctl.unfence(pid); });
}

}  // namespace

bool recycling_due(const AllocRecord& alloc, double threshold) {
  return static_cast<double>(alloc.in_use()) >= threshold * static_cast<double>(alloc.pid_limit);
}

Result<RecycleReport> recycle_pids(Registry& registry, Cluster& cluster, uint16_t self, const RecycleOptions& o,
                                   const Logger& logger) {
  const auto t0 = Clock::now();
  RecycleReport report;
  auto failed = registry.failed();
  if (!failed) return failed.status();
  Registry::Recycle r;
  r.generation = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  for (uint16_t p : *failed) {
    auto rec = registry.recovery(p);
    if (!rec) return rec.status();
    if (*rec && (*rec)->step == RecoveryStep::kDone) r.pids.push_back(p);
  }
  if (r.pids.empty()) return report;
  // The scan below visits the slots of every table the directory names; as
  // for ford's pause (recovery_coordinator.cc), a directory read before the
  // tables were created again would miss the new tables' latches, and a
  // re-issued pid would find its predecessor's latches there.
  if (Status s = cluster.load_directory(); !s) return s;

  // 1. Announce; the leader's own failed-ids drop them now.
  if (Status s = registry.begin_recycle(r); !s) return s;
  for (uint16_t p : r.pids) cluster.failed_ids().remove(p);

  // 2. Release every latch they still hold anywhere.
  const auto ts = Clock::now();
  std::vector<uint8_t> retired(65536, 0);
  for (uint16_t p : r.pids) retired[p] = 1;
  auto scan = release_latches_where(
      cluster, cluster.bootstrap_connections(), [&](uint64_t word) { return retired[latch_pid(word)] != 0; }, logger);
  if (!scan) {
    (void)registry.abandon_recycle();
    return scan.status();
  }
  report.scan_us = us_since(ts);
  report.released = scan->released;
  report.slots = scan->slots;

  // 3. Every registered member (but this one) has dropped them.
  const auto deadline = Clock::now() + o.ack_timeout;
  for (;;) {
    auto members = registry.members();
    if (!members) return members.status();
    auto acks = registry.recycle_acks(r.generation);
    if (!acks) return acks.status();
    std::vector<uint16_t> missing;
    for (const MemberRecord& m : *members) {
      if (m.pid != self && !std::binary_search(acks->begin(), acks->end(), m.pid)) missing.push_back(m.pid);
    }
    if (missing.empty()) break;
    if (Clock::now() > deadline) {
      (void)registry.abandon_recycle();
      return Status(Errc::kUnavailable, fmt::format("pid recycling: {} member(s) did not acknowledge within {} ms "
                                                    "(first: pid {}); withdrawn, will retry",
                                                    missing.size(), o.ack_timeout.count(), missing.front()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // 4. Let the pids in again at every memory node.
  for (uint16_t p : r.pids) {
    if (Status s = unfence_everywhere(registry.cluster(), o.secret, p, o.control_timeout); !s) return s;
  }

  // 5. Reusable.
  if (Status s = registry.finish_recycle(r); !s) return s;
  report.pids = static_cast<uint32_t>(r.pids.size());
  report.total_us = us_since(t0);
  logger.info("recycled {} pid(s): {} stray latch(es) released by a scan of {} slots in {} us; {} us in all",
              report.pids, report.released, report.slots, report.scan_us, report.total_us);
  return report;
}

}  // namespace pandora
