// A compute node's membership in a cluster run by the failure detector:
// registration (pid + leased lane slot), heartbeats to every FD replica,
// and failed-ids learnt by ZooKeeper watch and by the leader's direct push,
// whichever comes first (ARCHITECTURE.md 5).
//
//   auto m = Membership::join(options, logger);      // registers: pid, lane slot
//   config.compute_id = (*m)->pid();  config.lane_slot = (*m)->slot();
//   auto cluster = Cluster::connect(config, logger);
//   (*m)->attach((*cluster)->failed_ids());           // known + future failed pids
//   ... run; (*m)->fenced() turns true if this node's own pid is published
//   (a false positive of the detector: the node was fenced; it must stop).
//
// Transactions never wait on ZooKeeper: with no quorum the node keeps
// running (heartbeats are UDP, failed-ids arrive by push too).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "common/failed_ids.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/zk/zk_client.h"
#include "compute/cluster.h"
#include "compute/fd_link.h"
#include "recovery/registry.h"

namespace pandora {



struct MembershipOptions {
  zk::ZkOptions zk;
  std::string root = "/pandora";
  uint64_t cluster_id = 0;
  std::string secret;
  MemberRole role = MemberRole::kCompute;
  uint32_t lanes = 1;  // lanes to lease (ComputeConfig::lanes_needed())
  std::chrono::microseconds heartbeat_period{1000};
  bool heartbeats = true;  // kFd members (the FD leader's data plane) send none
  // The numeric address the push listener binds and the registry records
  // for the leader's failed-pid pushes: loopback on one host; the node's
  // own address when the leader runs elsewhere (--push-listen).
  std::string push_host = "127.0.0.1";
};

class Membership {
 public:
  static Result<std::unique_ptr<Membership>> join(const MembershipOptions& options, const Logger& logger);
  ~Membership();

  uint16_t pid() const { return record_.pid; }
  LaneSlot slot() const { return record_.slot; }
  const MemberRecord& record() const { return record_; }
  Registry& registry() { return *registry_; }

  // Adds every published failed pid to `ids`, now and from now on (watch
  // and push). `ids` must outlive this object, or detach() must be called
  // before it goes.
  Status attach(FailedIds& ids);
  // attach(cluster.failed_ids()), and the memory nodes declared failed by
  // the cluster record feed cluster.declare_memory_failed (on_memory_failure).
  // The cluster must outlive this object, or detach() be called first.
  Status attach(Cluster& cluster);
  // Stops touching the set (and cluster) given to attach(), and calls
  // neither on_pause's nor on_memory_failure's callback any more: once this
  // returns, no thread of this object reads or writes them. Idempotent; leave() implies it.
  void detach();

  // This node's own pid was published as failed: it has been fenced.
  bool fenced() const { return fenced_.load(std::memory_order_acquire); }
  // Called once (on an internal thread) when fenced() turns true.
  void on_fenced(std::function<void()> f);

  // Leaves the cluster cleanly (the failed-ids given to attach() are not
  // touched from here on, so they may be gone): publishes this pid
  // (retired: never issued again until recycled) and releases its lane
  // slot, so the detector does not take the exit for a crash. Not fenced:
  // call only with no transaction in flight and the data connections
  // closed. When ZooKeeper cannot be written (no quorum), the record stays
  // and the heartbeats stop: the detector recovers the pid like a crash,
  // which fences it, finds its lanes empty and releases the lease, so an
  // error here leaks nothing; it is only slower.
  Status leave();

  // ford's stop-the-world pause (recovery/recovery_coordinator.h): the
  // epoch every coordinator must park for, 0 when none is in progress.
  uint64_t pause_requested() const { return pause_epoch_.load(std::memory_order_acquire); }
  // Every coordinator is parked between transactions (holds no latch) for
  // `epoch`: acknowledge it to the recovery coordinator (through
  // ZooKeeper, from this object's own thread; returns at once). With a
  // cluster attached (attach(Cluster&)), a memory node's fail-over first
  // switches its primaries to the live replicas
  // (Cluster::apply_memory_failures), which is safe only now; if that fails
  // (a shard lost all its replicas) the pause is not acknowledged.
  void ack_pause(uint64_t epoch);
  // Called on an internal thread with the pause epoch (0: none) each time
  // it is read from ZooKeeper, and once soon after this call: feeds a
  // PauseGate (compute/pause_gate.h). Idempotent calls; set it once.
  // A node that parks this way, with a cluster attached, also follows a
  // failed-over memory node's replacement (recovery/replica_rebuild.h):
  // before it is told a pause is over (0), every node the cluster record
  // lists again is restored in the cluster (Cluster::restore_memory_node);
  // until that succeeds (retried) it is not told, so it stays parked
  // rather than run without a replica the others write.
  void on_pause(std::function<void(uint64_t)> f);
  // Called on an internal thread with each memory node id the cluster
  // record lists as failed, whenever a pause begins and before
  // pause_requested() shows it (a memory node's fail-over is such a pause):
  // feeds Cluster::declare_memory_failed. Idempotent calls; set it once,
  // before attach().
  void on_memory_failure(std::function<void(uint32_t node_id)> f);
  // Stops this node's heartbeats for good: the failure detector declares
  // it failed, fences and recovers it. For a node that needs recovery
  // itself and has no other way to say so (it refused a pause).
  void stop_heartbeats();

  // Pid recycling generations this member has acknowledged (tests).
  uint64_t recycles_acknowledged() const { return recycles_acked_.load(std::memory_order_relaxed); }

  uint64_t pushes_received() const { return pushes_.load(std::memory_order_relaxed); }

  // This node's heartbeat sender's counters (longest_gap_us: how long it
  // stood still at most); none once its heartbeats stopped, or for a
  // member that sends none.
  std::optional<HeartbeatSenderStats> heartbeat_stats() const;

 private:
  Membership(const Logger& logger) : logger_(logger) {}
  void stop_threads();
  Status attach_once(FailedIds& ids);
  void learn(uint16_t pid, bool by_push);
  // ZooKeeper watches only raise flags: synchronous calls from a watch
  // callback would deadlock the client's thread, so this thread re-reads.
  void watch_loop();
  void refresh_failed();
  void refresh_replicas();
  void refresh_pause();
  // Restores in the attached cluster the memory nodes the record no longer
  // lists as failed (false: some could not be, logged).
  bool restore_replaced_memory_nodes();
  void refresh_recycle();
  // A watch callback: raises *flag (one of the *_changed_ below) and wakes
  // the watcher thread.
  std::function<void()> raiser(bool* flag);

  // A new ZooKeeper session after the old one expired (watches re-armed,
  // acknowledgements re-sent by the flags it raises). Watcher thread.
  void reopen_registry();

  Logger logger_;
  MembershipOptions options_;
  std::mutex reg_mu_;  // registry_ replacement vs. callers on other threads
  std::unique_ptr<Registry> registry_;
  MemberRecord record_;
  std::string secret_;
  std::unique_ptr<FdLink> link_;
  std::mutex ids_mu_;  // learn() / refresh_recycle() use of ids_ vs. leave() detaching it
  std::atomic<FailedIds*> ids_{nullptr};
  std::atomic<bool> fenced_{false};
  std::atomic<bool> leaving_{false};  // leave() publishes our own pid
  std::atomic<uint64_t> pushes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool failed_changed_ = true;    // guarded by mu_
  bool replicas_changed_ = true;  // guarded by mu_
  bool pause_changed_ = true;     // guarded by mu_
  bool recycle_changed_ = true;   // guarded by mu_
  // Pids being recycled: dropped from failed-ids and not re-added from a
  // stale read of failed/ until the recycle is over. Watcher thread only.
  std::vector<uint16_t> recycling_;
  std::atomic<uint64_t> recycles_acked_{0};
  uint64_t ack_wanted_ = 0;       // guarded by mu_
  uint64_t acked_ = 0;            // watcher thread only
  std::atomic<uint64_t> pause_epoch_{0};
  bool closing_ = false;          // guarded by mu_
  std::function<void()> on_fenced_;
  // Held while a callback below runs (so detach() returns only once none
  // is running) and while one is set or cleared.
  std::mutex callbacks_mu_;
  std::function<void(uint64_t)> on_pause_;           // guarded by callbacks_mu_
  std::function<void(uint32_t)> on_memory_failure_;  // guarded by callbacks_mu_
  std::mutex cluster_mu_;  // cluster_ vs. detach(); taken after callbacks_mu_ when both are
  Cluster* cluster_ = nullptr;  // attach(Cluster&) .. detach(): ack_pause applies fail-overs to it
  mutable std::mutex link_mu_;  // link_ stopped by stop_heartbeats() vs. stop_threads()
  std::thread watcher_;
};

// For a compute node whose config has `zookeeper` set: joins (pid, lane
// slot), fills config.compute_id, lane_slot, and memory_nodes / replicas /
// lane_bytes from the cluster record where the flags left them open, and
// validates the result.
struct ComputeConfig;
Result<std::unique_ptr<Membership>> join_as_compute_node(ComputeConfig& config, const Logger& logger);

// Calls detach() when it goes: declare it right after the owner of the
// FailedIds given to attach() (a Cluster), so the set is let go before it
// is freed on every way out, including ones that skip leave().
class DetachGuard {
 public:
  explicit DetachGuard(Membership* m = nullptr) : m_(m) {}
  ~DetachGuard() {
    if (m_) m_->detach();
  }
  DetachGuard(const DetachGuard&) = delete;
  DetachGuard& operator=(const DetachGuard&) = delete;
  void reset(Membership* m) { m_ = m; }

 private:
  Membership* m_;
};

}  // namespace pandora
