// pandora-litmus --detector real: the run uses the real failure detector and
// recovery coordinator (recovery/) instead of the shared page's stand-in.
//
//   - The driver starts a ZooKeeper ensemble (testing/zk_ensemble.h: 3
//     servers, tick 500 ms, in a private temporary directory) or uses
//     --zookeeper, and runs Registry::init for its cluster (the memory nodes,
//     the lane geometry of their log area, the protocol of the run) under a
//     root of its own (/pandora-litmus-<os pid>-<time>).
//   - The driver itself is no member: it uses pid 65535, which the registry
//     never issues (pid_limit 65534), and the last lanes of the log area,
//     which it never leases (the cluster record's lane count stops short of
//     them). So the detector never watches it, never fences it, never waits
//     for it to park; it creates and loads the table and runs the final
//     asserts (on a quiet cluster) as that pid.
//   - The driver holds no ZooKeeper session across a fork: a client's
//     threads may be inside getaddrinfo(), whose glibc lock the child would
//     inherit held (seen: a compute process hung in its own ZooKeeper
//     connect). before_fork() closes it; the next use reopens it.
//   - Once the table is loaded, 3 `pandora-fd` replicas start as child
//     processes (fork + exec, --exit-with-pid <driver>, logs in the temporary
//     directory); start_detectors() returns when all three are announced and
//     the leader's data plane is up (it registered its kFd member).
//   - Compute processes join() after fork (join_as_compute_node: pid, lane
//     slot, heartbeats, failed-ids by watch and push, ford pauses) and
//     publish their pid in a page shared with the driver.
//   - A compute process that dies is not recovered by the driver: the FD
//     leader detects it (majority of replicas, --timeout-us), fences,
//     recovers, publishes. The driver only waits (bounded, 60 s per pid) for
//     the pid's recovery record to reach kDone (poll()), then counts it.
//   - stop() terminates the replicas by pid (SIGTERM, then SIGKILL), reaps
//     them and stops the ensemble; the destructor does the same on any path.
//
// Not thread-safe: the driver's thread only (join() runs in a forked child).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/failed_ids.h"
#include "common/logger.h"
#include "common/status.h"
#include "compute/compute_config.h"
#include "litmus/driver/shared_page.h"
#include "testing/local_memd.h"
#include "recovery/membership.h"
#include "testing/zk_ensemble.h"

namespace pandora::litmus {

// Exit code of a compute process that found itself declared failed (fenced)
// by the detector while alive: a false positive, recovered by the FD.
inline constexpr int kChildFencedExit = 30;
// The driver's pid with --detector real (never issued by the registry).
inline constexpr uint16_t kDriverRegistryPid = 65535;

struct RealDetectorOptions {
  std::string zookeeper;  // empty: start an ensemble of 3
  std::string fd_binary;
  uint64_t fd_timeout_us = 200000;
  std::string backend = "tcp";  // the FD leader's data plane
  uint64_t cluster_id = 0;
  std::string secret;
  std::string protocol = "pandora";
  bool verbose = false;
  std::string fd_logs;  // copy the replicas' logs into this directory at stop()
  // How long a crashed pid may take from the driver seeing the death to
  // its recovery record marked done.
  std::chrono::seconds recovery_bound{60};
};

class RealDetector {
 public:
  explicit RealDetector(RealDetectorOptions o);
  ~RealDetector();  // replicas killed and reaped, ensemble stopped
  RealDetector(const RealDetector&) = delete;
  RealDetector& operator=(const RealDetector&) = delete;

  // Before the driver connects: ZooKeeper, Registry::init. Sets
  // cfg.compute_id and cfg.lane_slot (the driver's, outside the registry's).
  Status start_registry(ComputeConfig& cfg);
  // Closes the driver's ZooKeeper session (its threads) before a fork.
  void before_fork() { registry_.reset(); }
  // After the table is loaded: the 3 replicas, until the leader is ready.
  Status start_detectors();
  const std::string& hosts() const { return hosts_; }
  const std::string& root() const { return root_; }

  // ---- compute process (after fork) ----
  // Registers through the registry (fills cfg.compute_id, lane_slot) and
  // publishes the pid in `slot` of the shared page.
  Result<std::unique_ptr<Membership>> join(ComputeConfig& cfg, size_t slot, const Logger& logger);

  // ---- driver ----
  void clear_slot(size_t slot) { slots_.get()->pid[slot].store(0, std::memory_order_release); }
  uint16_t pid_of(size_t slot) const {
    return static_cast<uint16_t>(slots_.get()->pid[slot].load(std::memory_order_acquire));
  }
  // Pid `pid` died (crashed at a crash point when `crashed`; killed, or
  // fenced by a false positive otherwise): the detector must recover it.
  void expect_recovery(uint16_t pid, bool crashed);
  void false_positive() { ++false_positives_; }
  // The detector has started recovering `pid` (its record exists).
  bool recovery_started(uint16_t pid);
  // Checks pending recoveries (at most every 5 ms). Adds every pid whose record is done to `ids` and its
  // recovery totals to `sp`; returns how many were recovered now. An error
  // when a pid was not recovered within the bound.
  Result<uint64_t> poll(FailedIds& ids, SharedPage& sp);
  // poll() until nothing is pending, then until the cluster is quiet (no
  // member, every record done, no pause); adds every published pid to `ids`.
  Result<uint64_t> wait_all(FailedIds& ids, SharedPage& sp);
  size_t pending() const { return pending_.size(); }
  // Crashed (crash point) pids whose recovery record the FD leader marked done.
  uint64_t crash_recoveries() const { return crash_recoveries_; }
  void report() const;
  // The tail of every replica's log (error messages).
  std::string replica_logs(size_t lines = 20) const;
  // Replicas (SIGTERM, 5 s, SIGKILL; reaped), the driver's session, the ensemble.
  Status stop();

 private:
  struct Pending {
    uint16_t pid = 0;
    bool crashed = false;
    std::chrono::steady_clock::time_point seen;
    uint64_t seen_realtime_ns = 0;
  };
  struct Slots {
    std::atomic<uint32_t> pid[kMaxChildren];
  };
  // A MAP_SHARED page created before any fork (as SharedMapping).
  class SlotMapping {
   public:
    SlotMapping();
    ~SlotMapping();
    SlotMapping(const SlotMapping&) = delete;
    SlotMapping& operator=(const SlotMapping&) = delete;
    Slots* get() const { return page_; }

   private:
    Slots* page_ = nullptr;
  };
  Status fail_with_logs(Status s) const;
  // The driver's session, opened on first use after start_registry() or a fork.
  Result<Registry*> registry();

  RealDetectorOptions o_;
  Logger logger_;
  SlotMapping slots_;
  TempDir dir_{"pandora-litmus-fd"};
  std::unique_ptr<testing::ZkEnsemble> ensemble_;
  std::string hosts_, root_, secret_file_;
  zk::ZkOptions zk_;
  std::unique_ptr<Registry> registry_;
  std::vector<pid_t> replicas_;
  std::vector<std::string> replica_log_paths_;
  pid_t owner_ = -1;  // the driver process (a forked child never stops anything)
  std::vector<Pending> pending_;
  std::chrono::steady_clock::time_point next_poll_{};
  bool own_ensemble_ = false;
  double zk_start_s_ = 0, fd_start_s_ = 0;
  uint64_t recovered_ = 0, crash_recoveries_ = 0, false_positives_ = 0;
  std::vector<double> detect_ms_, done_ms_;  // crash seen -> detected / done
  uint64_t pause_us_total_ = 0, pause_us_max_ = 0, pauses_ = 0;
};

}  // namespace pandora::litmus
