#include "recovery/fd_replica.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compute/cluster.h"
#include "recovery/fd/detector.h"
#include "recovery/membership.h"
#include "recovery/recovery_coordinator.h"
#include "recovery/recycler.h"
#include "recovery/registry.h"

namespace pandora {

namespace {

uint64_t now_mono_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// The detector stamps its decision on CLOCK_MONOTONIC; the records speak
// CLOCK_REALTIME (comparable across processes and with a kill's instant).
uint64_t detected_realtime_ns(uint64_t detected_mono_ns);

uint64_t now_realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

uint64_t detected_realtime_ns(uint64_t detected_mono_ns) {
  const uint64_t mono = now_mono_ns(), real = now_realtime_ns();
  if (detected_mono_ns == 0 || detected_mono_ns > mono) return real;
  return real - (mono - detected_mono_ns);
}

// Watch callbacks only raise flags (a synchronous ZooKeeper call inside a
// callback would block the client's own thread); a loop re-reads.
// wait() paces a loop that has nothing to do: it returns when a flag is
// raised or after the limit, never at once because of a standing state (a
// replica that paced itself on wait_failed() spun at 100% CPU, at nice
// -10, while any failed node stayed watched: it starved ZooKeeper and the
// compute nodes of a 2-core machine into false suspicions).
struct Flags {
  std::atomic<bool> members{true};
  std::atomic<bool> record{true};
  std::atomic<bool> replicas{true};
  std::atomic<bool> election{true};
  std::atomic<bool> replace{true};
  std::atomic<bool> deposed{false};  // the leader's own election node changed, or a write was refused

  void raise(std::atomic<bool>& flag) {
    flag = true;
    std::lock_guard<std::mutex> g(mu);
    ++raised;
    cv.notify_all();
  }
  void wait(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> g(mu);
    const uint64_t seen = waited;
    cv.wait_for(g, limit, [&] { return raised != seen; });
    waited = raised;
  }

  std::mutex mu;
  std::condition_variable cv;
  uint64_t raised = 0;  // raise() calls so far
  uint64_t waited = 0;  // raise() calls wait() has returned for
};

// The leader's state: its own data-plane identity and the coordinator.
struct Leadership {
  // The member's watcher must let go of the cluster's failed-ids before
  // the cluster is freed (members are destroyed after this body runs).
  ~Leadership() {
    if (member) member->detach();
  }
  std::unique_ptr<Membership> member;  // kFd member: pid + lane slot, no heartbeats
  std::unique_ptr<Cluster> cluster;
  // The coordinator's publishing writes' own session
  // (RecoveryCoordinatorOptions::publisher); outlives the coordinator.
  std::unique_ptr<Registry> publisher;
  std::unique_ptr<RecoveryCoordinator> coordinator;
  bool resumed = false;
};

class Replica {
 public:
  // run()'s result when the ZooKeeper session expired: start over.
  static constexpr int kRestart = -1;

  Replica(const FdReplicaOptions& o, const Logger& logger, bool restarting)
      : o_(o), log_(logger), restarting_(restarting) {}
  ~Replica() { stop_housekeeper(); }

  int run(const std::atomic<bool>& stop) {
    auto reg = Registry::open(o_.zk, o_.root, o_.cluster_id, log_);
    if (!reg) {
      // After a session expiry ZooKeeper may be briefly unreachable: keep
      // trying. At the first start, say so and stop.
      if (restarting_ && reg.status().code() == Errc::kUnavailable) return kRestart;
      log_.error("{}", reg.status().to_string());
      return 3;
    }
    registry_ = std::move(*reg);

    fd::DetectorOptions d;
    d.cluster_id = o_.cluster_id;
    d.secret = o_.secret;
    d.replica_id = o_.replica_id;
    d.replicas = o_.replicas;
    d.bind = o_.listen;
    d.timeout = o_.timeout;
    d.memory_timeout = o_.memory_timeout;
    d.tick = o_.tick;
    d.peer_heartbeat = peer_heartbeat();
    auto det = fd::Detector::start(d, log_.child("detector"));
    if (!det) {
      log_.error("starting the detector: {}", det.status().to_string());
      return 4;
    }
    detector_ = std::move(*det);
    const Endpoint udp{o_.listen.host, detector_->port()};
    // A replica of the same id that died leaves its node until its session
    // expires (after a whole-cluster restart, a full session timeout after
    // the ensemble is back): wait that out once, not on a restart of ours.
    const auto stale_wait = restarting_ ? std::chrono::milliseconds(0) : 2 * o_.zk.session_timeout;
    if (Status s = registry_->announce_replica(o_.replica_id, udp, stale_wait); !s) {
      if (restarting_) return kRestart;  // the expired session's node may linger a moment
      log_.error("{}", s.to_string());
      return 5;
    }
    if (auto stale = registry_->withdraw_stale_candidacies(o_.replica_id); !stale) {
      log_.warn("removing a dead predecessor's election node: {}", stale.status().to_string());
    } else if (*stale > 0) {
      log_.info("removed {} election node(s) of a dead replica {}", *stale, o_.replica_id);
    }
    auto mine = registry_->stand_for_election(o_.replica_id);
    if (!mine) {
      log_.error("joining the leader election: {}", mine.status().to_string());
      return 5;
    }
    election_node_ = *mine;
    log_.info("replica {} listening for heartbeats on udp {}", o_.replica_id, udp.to_string());
    housekeeper_ = std::thread([this] { housekeep(); });

    while (!stop.load(std::memory_order_acquire)) {
      if (registry_->zk().expired()) {
        // Our election node and watches are gone with the session; so is
        // any leadership (another replica may lead already). Start over
        // with a new session; this replica's former data-plane identity is
        // recovered by whoever leads next.
        log_.warn("ZooKeeper session expired: rejoining with a new session{}",
                  leader_ ? " (giving up the leadership)" : "");
        return kRestart;
      }
      if (!leader_ && flags_.election.exchange(false) && !refresh_election()) {
        // ZooKeeper unavailable for now: retry, but not in a tight loop.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (flags_.deposed.exchange(false) && deposed()) {
        // Whatever this replica still had in flight cannot land: its
        // writes are guarded by the node that is gone, and the new leader
        // recovers its data-plane identity. Start over as a follower.
        log_.warn("replica {} was deposed{} (its election node {} is gone while its session lives on: its "
                  "successor stopped hearing it); rejoining with a new session",
                  o_.replica_id, leader_ ? " as the leader" : "", election_node_);
        return kRestart;
      }
      if (leader_) {
        if (int rc = lead(); rc != 0) return rc;
      } else {
        // Each replica watches only its predecessor's node, so a replica
        // whose predecessor took over the leadership (a deposition further
        // up) learns that it is now next in line by reading the order
        // again: once a second.
        if (o_.leader_timeout.count() != 0 && std::chrono::steady_clock::now() >= next_election_read_) {
          next_election_read_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
          read_successorship();
        }
        maybe_depose_leader();
        // Not the leader: the detector still runs (its suspicions count
        // towards the leader's majority); this only paces the loop.
        flags_.wait(std::chrono::milliseconds(20));
      }
    }
    return 0;
  }

 private:
  // The registry reads that keep the detector's view current run on their
  // own thread, never on the main loop: a detection must not wait behind
  // them. They are one synchronous ZooKeeper read per registered member
  // every second, and when ZooKeeper is slow (a JVM starved of CPU,
  // 100 ms per read), a crash detected while they ran waited for all of
  // them: seen as kill -> published in 571 ms with a recovery of 4 ms.
  void housekeep() {
    auto next_full_refresh = std::chrono::steady_clock::now();
    auto next_recycle_check = next_full_refresh;
    while (!hk_stop_.load(std::memory_order_acquire)) {
      const auto t = std::chrono::steady_clock::now();
      // Watches are the fast path; a full re-read now and then is the net
      // under them (a lost watch must not leave a member unwatched).
      if (t >= next_full_refresh) {
        next_full_refresh = t + std::chrono::seconds(1);
        hk_flags_.members = true;
        hk_flags_.replicas = true;
        hk_flags_.record = true;
      }
      bool trouble = false;
      if (hk_flags_.replicas.exchange(false)) trouble |= !refresh_replicas();
      if (hk_flags_.members.exchange(false)) trouble |= !refresh_members();
      if (hk_flags_.record.exchange(false)) trouble |= !follow_memory_record();
      if (leader_.load(std::memory_order_acquire) && t >= next_recycle_check) {
        next_recycle_check = t + std::chrono::seconds(1);
        check_recycling();
        hk_flags_.replace = true;
      }
      if (leader_.load(std::memory_order_acquire) && hk_flags_.replace.exchange(false)) trouble |= !check_replacement();
      // ZooKeeper unavailable for now: retry, but not in a tight loop.
      const auto until_full = std::chrono::duration_cast<std::chrono::milliseconds>(
          next_full_refresh - std::chrono::steady_clock::now());
      hk_flags_.wait(trouble ? std::chrono::milliseconds(50)
                             : std::clamp(until_full, std::chrono::milliseconds(1), std::chrono::milliseconds(1000)));
    }
  }

  void stop_housekeeper() {
    if (!housekeeper_.joinable()) return;
    hk_stop_.store(true, std::memory_order_release);
    hk_flags_.raise(hk_flags_.members);
    housekeeper_.join();
  }

  // Each refresh returns false when ZooKeeper did not answer (retried later).
  bool refresh_replicas() {
    auto reps = registry_->watch_replicas([this] { hk_flags_.raise(hk_flags_.replicas); });
    if (!reps) {
      log_.warn("reading FD replicas: {}", reps.status().to_string());
      hk_flags_.replicas = true;
      return false;
    }
    std::map<uint32_t, Endpoint> peers = *reps;
    peers.erase(o_.replica_id);
    if (Status s = detector_->set_peers(std::move(peers)); !s) log_.warn("FD peers: {}", s.to_string());
    return true;
  }

  bool refresh_members() {
    if (stall_armed_) {
      // Test only (FdReplicaOptions::stall_member_refreshes): this thread
      // stands still, as if every read took forever.
      log_.warn("test: member refreshes stalled until the replica stops");
      while (!hk_stop_.load(std::memory_order_acquire)) hk_flags_.wait(std::chrono::milliseconds(100));
      return true;
    }
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> g(members_mu_);
      generation = unwatch_generation_;
    }
    auto pids = registry_->watch_members([this] { hk_flags_.raise(hk_flags_.members); });
    if (!pids) {
      log_.warn("reading registered compute nodes: {}", pids.status().to_string());
      hk_flags_.members = true;
      return false;
    }
    std::set<uint16_t> now;
    std::map<uint16_t, MemberRecord> records;
    bool complete = true;
    // A read that fails leaves the member as it was: unwatching a live node
    // on a ZooKeeper hiccup would blind the detector to its crash until the
    // next successful refresh (seen as crash -> detected in 1 s instead of
    // the timeout).
    auto keep_as_before = [&](uint16_t p) {
      complete = false;
      std::lock_guard<std::mutex> g(members_mu_);
      if (watched_.count(p)) now.insert(p);
      if (auto it = members_.find(p); it != members_.end()) records[p] = it->second;
    };
    for (uint16_t p : *pids) {
      auto m = registry_->member(p);
      if (!m) {
        keep_as_before(p);
        continue;
      }
      if (!*m) continue;  // gone between the two reads: published or left
      records[p] = **m;
      if ((*m)->role != MemberRole::kCompute) continue;  // FD leaders send no heartbeats
      if (!(*m)->push) {
        // Registered but not heartbeating yet: its record names its push
        // endpoint once its heartbeats flow; watching it earlier could fail
        // it before its first heartbeat. Re-read when the record changes.
        // The watch is armed with a read: if the endpoint was recorded
        // between the two reads, that read shows it (a watch armed after
        // the change would never fire).
        auto again = registry_->zk().watch_get(registry_->path(fmt::format("compute/{}", p)),
                                               [this] { hk_flags_.raise(hk_flags_.members); });
        if (!again) {
          if (again.status().code() != Errc::kNotFound) keep_as_before(p);
          continue;
        }
        auto fresh = decode_member_record(again->data);
        if (!fresh || !fresh->push) continue;
        records[p] = *fresh;
      }
      now.insert(p);
    }
    std::lock_guard<std::mutex> g(members_mu_);
    if (unwatch_generation_ != generation) {
      // The leader unwatched a pid it recovered while these reads ran:
      // they may predate its publish and would watch it again. Read again.
      hk_flags_.raise(hk_flags_.members);
      return true;
    }
    for (uint16_t p : now) {
      if (watched_.count(p)) continue;
      detector_->watch(wire::SenderKind::kCompute, p);
      log_.info("watching compute node {}", p);
    }
    for (uint16_t p : watched_) {
      if (now.count(p)) continue;
      detector_->unwatch(wire::SenderKind::kCompute, p);
      log_.info("no longer watching compute node {} (its registration is gone)", p);
    }
    watched_ = std::move(now);
    members_ = std::move(records);
    if (o_.stall_member_refreshes && !watched_.empty()) stall_armed_ = true;
    if (!complete) {
      log_.warn("reading registered compute nodes: some records could not be read (retrying)");
      hk_flags_.members = true;
    }
    return complete;
  }

  // Memory nodes the cluster record lists as failed (over) are not watched
  // until they are replaced (fd::Detector::follow_memory_record): a replica
  // that was not the leader when one failed stops suspecting it, and a
  // daemon that comes back under its id is not failed over twice. Live
  // nodes are heard only from the daemons the record binds them to.
  // Followed by watch (a replica that lags the record the leader wrote
  // counts for nothing in memory-node decisions: its reports carry an
  // older epoch), with the full re-read each second as the net under it.
  // One watch at a time: each re-read would otherwise add one.
  bool follow_memory_record() {
    Result<ClusterRecord> cr = Status(Errc::kUnavailable, "not read");
    if (!record_watch_armed_.exchange(true)) {
      auto node = registry_->zk().watch_get(registry_->path("cluster"), [this] {
        record_watch_armed_ = false;
        hk_flags_.raise(hk_flags_.record);
      });
      if (node) {
        cr = decode_cluster_record(node->data);
      } else {
        record_watch_armed_ = false;
        cr = node.status();
      }
    } else {
      cr = registry_->read_cluster();
    }
    if (!cr) {
      log_.warn("reading the cluster record: {}", cr.status().to_string());
      return false;
    }
    follow_memory_record(*cr);
    return true;
  }
  void follow_memory_record(const ClusterRecord& cr) {
    std::set<uint32_t> ids;
    for (const FailedMemoryNode& f : cr.failed_memory) ids.insert(f.node_id);
    detector_->follow_memory_record(ids, cr.memory_incarnations, cr.epoch);
  }

  // Called by the leader once it has recovered `pids` (in ford mode every
  // failed pid so far: only those still watched cost an unwatch).
  void unwatch_recovered(const std::vector<uint16_t>& pids) {
    std::lock_guard<std::mutex> g(members_mu_);
    for (uint16_t p : pids) {
      if (watched_.erase(p) != 0) detector_->unwatch(wire::SenderKind::kCompute, p);
    }
    ++unwatch_generation_;
  }

  // The members as last read (the recovery coordinator's push targets and
  // lane slots, so recovering a pid reads nothing before its first write).
  // A compute failure as the coordinator takes it, logged ("pid N missed by
  // a majority": operators and tests look for it).
  RecoveryCoordinator::FailedPid failed_pid(const fd::FailedNode& f) {
    const uint16_t pid = static_cast<uint16_t>(f.id);
    log_.info("pid {} missed by a majority of replicas: recovering", pid);
    return {pid, detected_realtime_ns(f.detected_mono_ns), known_member(pid)};
  }

  std::optional<MemberRecord> known_member(uint16_t pid) {
    std::lock_guard<std::mutex> g(members_mu_);
    auto it = members_.find(pid);
    if (it == members_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<Endpoint> push_targets() {
    std::lock_guard<std::mutex> g(members_mu_);
    std::vector<Endpoint> out;
    for (const auto& [pid, m] : members_) {
      if (m.push) out.push_back(*m.push);
    }
    return out;
  }

  // The candidates in election order (the first leads).
  Result<std::vector<std::string>> election_order() {
    auto kids = registry_->zk().children(registry_->path("fd/election"));
    if (!kids) return kids.status();
    std::vector<std::string> names = *kids;
    // Sequential names end in a 10-digit counter: sort by it.
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return a.substr(a.size() - 10) < b.substr(b.size() - 10);
    });
    return names;
  }

  // How often replicas heartbeat each other. They serve only the
  // deposition: never without it.
  std::chrono::microseconds peer_heartbeat() const {
    if (o_.leader_timeout.count() == 0) return std::chrono::microseconds(0);
    return std::clamp<std::chrono::microseconds>(o_.leader_timeout / 20, std::chrono::milliseconds(1),
                                                 std::chrono::milliseconds(25));
  }

  // Which replica leads and whether this one is next in line (then
  // successor_of_ names the leader), from the order `names`; both told to
  // the detector for pandora-ctl stats. The leader's node is read once per
  // leader.
  void note_successorship(const std::vector<std::string>& names) {
    successor_of_.reset();
    if (names.empty()) {
      leader_seen_ = Predecessor{};
    } else if (names.front() != leader_seen_.node) {
      leader_seen_ = Predecessor{};
      auto id = registry_->candidate(names.front());
      if (id) {
        leader_seen_ = Predecessor{names.front(), *id};
      } else if (id.status().code() != Errc::kNotFound) {
        log_.warn("reading the leader's election node {}: {}", names.front(), id.status().to_string());
      }
    }
    auto me = std::find(names.begin(), names.end(), election_node_);
    const bool next =
        me != names.end() && me != names.begin() && me - 1 == names.begin() && leader_seen_.replica_id != 0;
    if (next) successor_of_ = leader_seen_;
    detector_->set_leader_watch(leader_seen_.replica_id, next);
  }

  // The order read again without arming a watch (one is armed on the
  // predecessor already): for a follower whose predecessor took over.
  void read_successorship() {
    auto names = election_order();
    if (!names) return;
    if (!names->empty() && names->front() == election_node_) {
      flags_.raise(flags_.election);  // leads now: refresh_election takes it from here
      return;
    }
    note_successorship(*names);
  }

  bool refresh_election() {
    auto order = election_order();
    if (!order) {
      flags_.election = true;
      return false;
    }
    const std::vector<std::string>& names = *order;
    auto me = std::find(names.begin(), names.end(), election_node_);
    if (me == names.end()) {
      // Deposed (its successor stopped hearing it), or the session expired.
      log_.error("this replica's election node {} vanished (deposed, or ZooKeeper session expired?)",
                 election_node_);
      flags_.raise(flags_.deposed);
      flags_.election = true;
      return false;
    }
    if (me == names.begin()) {
      // Every write from now on is guarded by this node (see
      // fd_replica.h), and its deletion tells this replica it was deposed.
      const std::string mine = registry_->election_path(election_node_);
      registry_->zk().guard_writes(mine);
      auto still = registry_->zk().watch_exists(mine, [this] { flags_.raise(flags_.deposed); });
      if (!still || !*still) {
        registry_->zk().clear_write_guard();
        if (still) flags_.raise(flags_.deposed);
        flags_.election = true;
        return still.is_ok();
      }
      successor_of_.reset();
      leader_ = true;
      detector_->set_leader(true);
      log_.info("replica {} is the leader", o_.replica_id);
      return true;
    }
    // The leader's successor watches for a leader that stops but keeps its
    // session (maybe_depose_leader).
    note_successorship(names);
    // Watch only the predecessor (no herd effect when the leader dies).
    auto exists = registry_->zk().watch_exists(registry_->election_path(*(me - 1)),
                                               [this] { flags_.raise(flags_.election); });
    if (!exists || !*exists) flags_.election = true;
    return exists.is_ok();
  }

  // Whether this leader's election node is gone (deposed). A failed read is
  // not proof: the guard refuses its writes meanwhile, and the flag is
  // raised again by the next refused write.
  bool deposed() {
    auto e = registry_->zk().exists(registry_->election_path(election_node_));
    return e && !*e;
  }

  // The leader's successor deposes a leader it has not heard (a heartbeat
  // or a report) for leader_timeout while it hears a majority of the
  // replicas without it, itself included (a replica cut off from the
  // others deposes no one), and its own detector thread is current
  // (fd::Detector::judge_leader). Only the successor: one deposition per
  // silence, and the leadership goes where the election would send it.
  void maybe_depose_leader() {
    if (o_.leader_timeout.count() == 0 || !successor_of_) return;
    const Predecessor& leader = *successor_of_;
    // A leader whose port refuses is gone (its process exited or was
    // killed; a stopped or cut-off one does not refuse): a fifth of the
    // timeout, at least four peer heartbeats, is enough silence for it.
    const auto refused_timeout = std::max<std::chrono::microseconds>(o_.leader_timeout / 5, 4 * peer_heartbeat());
    const fd::LeaderJudgement j = detector_->judge_leader(leader.replica_id, o_.leader_timeout, refused_timeout);
    if (j.verdict == fd::LeaderVerdict::kNoMajority) {
      if (std::chrono::steady_clock::now() >= next_depose_log_) {
        next_depose_log_ = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        log_.warn("the leader, replica {}, not heard for {} ms, but this replica hears only {} of {} replicas "
                  "(itself included): not deposing it",
                  leader.replica_id, j.silence.count() / 1000, j.heard, o_.replicas);
      }
      return;
    }
    if (j.verdict != fd::LeaderVerdict::kDepose) return;
    log_.warn("deposing the leader, replica {} (election node {}): not heard for {} ms while its ZooKeeper session "
              "lives on ({}); the next in line leads",
              leader.replica_id, leader.node, j.silence.count() / 1000,
              j.refused ? "its port refuses: the process is gone" : "stopped or cut off?");
    Status s = registry_->depose(leader.node);
    if (!s && s.code() != Errc::kNotFound) {
      log_.warn("deposing replica {}: {}", leader.replica_id, s.to_string());
      return;
    }
    if (s) detector_->count_deposition();  // kNotFound: gone already
    successor_of_.reset();
    flags_.raise(flags_.election);
  }

  // Becomes an operational leader (data plane, coordinator), then recovers
  // what the majority has failed. Non-zero: exit code.
  int lead() {
    if (!lead_) lead_ = std::make_unique<Leadership>();
    if (!lead_->coordinator) {
      if (Status s = become_leader(); !s) {
        log_.warn("leader set-up: {} (retrying)", s.to_string());
        flags_.wait(std::chrono::milliseconds(200));
        return 0;
      }
    }
    if (!lead_->resumed) {
      if (Status s = lead_->coordinator->resume(lead_->member->pid()); !s) {
        log_.warn("resuming recoveries: {} (retrying)", s.to_string());
        drop_data_plane_if_broken(s);
        flags_.wait(std::chrono::milliseconds(100));
        return 0;
      }
      lead_->resumed = true;
    }
    maybe_recycle();
    maybe_replace();
    if (lead_->coordinator && lead_->publisher->zk().expired()) {
      // Publishing falls back to the main session meanwhile; a new one is
      // opened with the next data plane.
      log_.warn("the publishing ZooKeeper session expired: opening a new one");
      drop_data_plane();
    }
    if (!lead_->coordinator) return 0;  // rebuilt after a replacement
    // Compute pids failed together are recovered together (pushed to the
    // survivors in one go, before their ZooKeeper writes).
    std::vector<RecoveryCoordinator::FailedPid> batch;
    std::vector<fd::FailedNode> failed = detector_->wait_failed(std::chrono::milliseconds(20));
    if (std::any_of(failed.begin(), failed.end(), [](const fd::FailedNode& f) {
          return f.kind == wire::SenderKind::kCompute;
        })) {
      // Processes of one host die at once but cross the timeout up to a
      // heartbeat interval (1 ms) apart: wait that long for the stragglers
      // of a failure, never for a live node (Detector::gather_failed).
      failed = detector_->gather_failed(std::min<std::chrono::microseconds>(std::chrono::microseconds(2000),
                                                                            o_.timeout / 2));
    }
    for (const fd::FailedNode& f : failed) {
      if (f.kind != wire::SenderKind::kCompute) {
        log_.info("memory node {} missed by a majority of replicas: failing it over", f.id);
        if (Status s = lead_->coordinator->fail_over_memory_node(f.id); !s) {
          if (s.code() == Errc::kUnsupported || s.code() == Errc::kNotFound || s.code() == Errc::kUnavailable) {
            // Nothing a retry changes: say so once, and stop watching it (a
            // failure left watched is reported on every call).
            log_.error("memory node {}: {}", f.id, s.to_string());
            detector_->unwatch(f.kind, f.id);
            continue;
          }
          log_.warn("fail-over of memory node {}: {} (will retry)", f.id, s.to_string());
          drop_data_plane_if_broken(s);
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return 0;
        }
        follow_memory_record(registry_->cluster());
        continue;
      }
      batch.push_back(failed_pid(f));
    }
    if (!batch.empty()) {
      std::vector<uint16_t> pids;
      for (const RecoveryCoordinator::FailedPid& f : batch) pids.push_back(f.pid);
      auto recs = lead_->coordinator->recover_together(batch);
      if (!recs) {
        // "recovery of pid N: ..." (operators and tests look for it), or of
        // the batch.
        log_.warn("recovery of {} {}: {} (will retry)", pids.size() == 1 ? "pid" : "pids", fmt::join(pids, ", "),
                  recs.status().to_string());
        // The retry goes through resume(), which finishes every record not
        // done, not only through the detector: a publish that committed
        // although ZooKeeper reported a lost connection removed the pid's
        // registration, so the detector stops reporting it, and its record
        // would wait at `published` for the next leader.
        lead_->resumed = false;
        drop_data_plane_if_broken(recs.status());
        // Typically ZooKeeper without a quorum: retry, not in a tight loop.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return 0;
      }
      // Every pid this recovery covered: those that joined the batch, and
      // ford recovers nodes that failed during its pause in the same pause
      // (a read, so only then: in pandora mode the next detection must not
      // wait for it).
      std::vector<uint16_t> covered;
      for (const RecoveryRecord& r : *recs) covered.push_back(r.pid);
      if (registry_->cluster().protocol == "ford") {
        if (auto failed = registry_->failed()) covered.insert(covered.end(), failed->begin(), failed->end());
      }
      unwatch_recovered(covered);
    }
    return 0;
  }

  // Pid recycling (recovery/recycler.h) once 95% of the pid space is in
  // use: the housekeeper checks about once a second, the leader recycles.
  void check_recycling() {
    auto alloc = registry_->alloc();
    if (alloc && recycling_due(*alloc, 0.95)) recycle_due_.store(true, std::memory_order_release);
  }
  // A replacement of a failed-over memory node asked for (pandora-ctl
  // replace-memory-node): the housekeeper watches <root>/replace, the
  // leader rebuilds the node (RecoveryCoordinator::replace_memory_node).
  bool check_replacement() {
    auto req = registry_->replacement_request([this] { hk_flags_.raise(hk_flags_.replace); });
    if (!req) {
      log_.warn("reading the replacement request: {}", req.status().to_string());
      return false;
    }
    if (*req && (*req)->error.empty()) replace_due_.store(true, std::memory_order_release);
    return true;
  }
  void maybe_replace() {
    if (!replace_due_.exchange(false)) return;
    auto req = registry_->replacement_request();
    if (!req || !*req || !(*req)->error.empty()) return;
    log_.info("replacing memory node {} by the daemon at {}: rebuilding it from the live replicas", (*req)->node_id,
              (*req)->endpoint.to_string());
    auto r = lead_->coordinator->replace_memory_node(**req);
    if (!r) {
      const Errc e = r.status().code();
      const bool transient = e == Errc::kDisconnected || e == Errc::kTimeout || e == Errc::kIo ||
                             e == Errc::kUnavailable || e == Errc::kConflict;
      if (transient && ++replace_attempts_ < 10) {
        log_.warn("replacing memory node {}: {} (attempt {} of 10; will retry)", (*req)->node_id,
                  r.status().to_string(), replace_attempts_);
        replace_due_.store(true, std::memory_order_release);
        drop_data_plane_if_broken(r.status());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return;
      }
      log_.error("replacing memory node {}: {}; giving up (the request keeps the error)", (*req)->node_id,
                 r.status().to_string());
      replace_attempts_ = 0;
      if (Status s = registry_->fail_replacement(r.status().to_string()); !s) {
        log_.warn("recording the replacement's failure: {}", s.to_string());
      }
      return;
    }
    replace_attempts_ = 0;
    follow_memory_record(registry_->cluster());  // watched again from its next heartbeat
    // This leader's cluster view still has the node failed over: rebuilt
    // from the record on the next round.
    drop_data_plane();
  }

  void maybe_recycle() {
    if (!recycle_due_.exchange(false)) return;
    RecycleOptions ro;
    ro.secret = o_.secret;
    auto r = recycle_pids(*registry_, *lead_->cluster, lead_->member->pid(), ro, log_.child("recycler"));
    if (!r) log_.warn("pid recycling: {}", r.status().to_string());
  }

  // A broken data connection is not repaired in place: the coordinator and
  // cluster view are rebuilt (same pid and slot) on the next round.
  // kFenced: a write refused by the guard, or the data plane fenced by a
  // new leader; either way, check whether this leader was deposed.
  void drop_data_plane_if_broken(const Status& s) {
    if (s.code() == Errc::kDisconnected || s.code() == Errc::kTimeout || s.code() == Errc::kIo) drop_data_plane();
    if (s.code() == Errc::kFenced) flags_.raise(flags_.deposed);
  }

  // The coordinator and cluster view go; become_leader() builds them again
  // (same pid and slot) on the next round.
  void drop_data_plane() {
    lead_->coordinator.reset();
    lead_->member->detach();  // attached again with the next cluster
    lead_->cluster.reset();
  }

  Status become_leader() {
    if (!lead_->member) return join_as_member();
    return connect_data_plane();
  }

  Status join_as_member() {
    MembershipOptions mo;
    mo.zk = o_.zk;
    mo.root = o_.root;
    mo.cluster_id = o_.cluster_id;
    mo.secret = o_.secret;
    mo.role = MemberRole::kFd;
    mo.lanes = 2;  // one coordinator (unused) + the blocking lane: the leader writes no log
    mo.heartbeats = false;
    auto m = Membership::join(mo, log_.child("member"));
    if (!m) return m.status();
    lead_->member = std::move(*m);
    return connect_data_plane();
  }

  Status connect_data_plane() {
    // Fresh: memory nodes failed since this replica opened the registry
    // must not be contacted.
    auto fresh = registry_->refresh_cluster();
    if (!fresh) return fresh.status();
    const ClusterRecord& cr = *fresh;
    ComputeConfig c;
    c.cluster_id = o_.cluster_id;
    c.secret = o_.secret;
    c.compute_id = lead_->member->pid();
    c.lane_slot = lead_->member->slot();
    c.memory_nodes = cr.memory_nodes;
    c.failed_memory_nodes = cr.failed_memory;
    c.backend = o_.backend;
    c.replicas = static_cast<uint32_t>(std::min<size_t>(2, cr.memory_nodes.size()));
    c.threads = 1;
    c.coordinators = 1;
    c.op_timeout = o_.op_timeout;
    if (cr.lane_bytes) c.lane_bytes = cr.lane_bytes;
    if (Status s = c.validate(); !s) return s;
    auto cl = Cluster::connect(c, log_.child("cluster"));
    if (!cl) return cl.status();
    if (Status s = (*cl)->load_directory(); !s) {
      return Status(s.code(), "reading the table directory (are the tables loaded?): " + s.message());
    }
    lead_->cluster = std::move(*cl);
    if (Status s = lead_->member->attach(*lead_->cluster); !s) return s;
    if (!lead_->publisher || lead_->publisher->zk().expired()) {
      auto pub = Registry::open(o_.zk, o_.root, o_.cluster_id, log_.child("publisher"));
      if (!pub) return Status(pub.status().code(), "opening the publishing session: " + pub.status().message());
      lead_->publisher = std::move(*pub);
      lead_->publisher->zk().guard_writes(registry_->election_path(election_node_));
    }

    RecoveryCoordinatorOptions ro;
    ro.cluster_id = o_.cluster_id;
    ro.secret = o_.secret;
    ro.replica_id = o_.replica_id;
    fd::Detector* det = detector_.get();
    ro.push_targets = [this] { return push_targets(); };
    ro.publisher = lead_->publisher.get();
    // Called by recover() on this (the main) thread while a ford pause waits
    // for acknowledgements, when the main loop does not run. The
    // housekeeper keeps watching the members registered since: one that
    // registered just before the pause and died is found failed, and the
    // pause does not wait out the whole park timeout for it.
    ro.failed_now = [det] {
      std::vector<uint16_t> out;
      for (const fd::FailedNode& f : det->wait_failed(std::chrono::milliseconds(0))) {
        if (f.kind == wire::SenderKind::kCompute) out.push_back(static_cast<uint16_t>(f.id));
      }
      return out;
    };
    // Called by recover_together on this thread after each push.
    ro.failed_since = [this, det](std::span<const uint16_t> batch) {
      std::vector<RecoveryCoordinator::FailedPid> out;
      for (const fd::FailedNode& f : det->wait_failed(std::chrono::milliseconds(0))) {
        if (f.kind != wire::SenderKind::kCompute || std::find(batch.begin(), batch.end(), f.id) != batch.end()) {
          continue;
        }
        out.push_back(failed_pid(f));
      }
      return out;
    };
    lead_->coordinator = std::make_unique<RecoveryCoordinator>(
        *registry_, *lead_->cluster, ro, log_.child("recovery"),
        [det](std::span<const Endpoint> to, std::span<const uint16_t> pids) { (void)det->push_failed(to, pids); },
        o_.step_hook);
    log_.info("leader data plane as pid {} ({})", lead_->member->pid(), lead_->member->slot().to_string());
    return Status::ok();
  }

  const FdReplicaOptions& o_;
  Logger log_;
  bool restarting_ = false;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<fd::Detector> detector_;
  std::string election_node_;
  // The leader's election node and replica id while this replica is next
  // in line (refresh_election); the main loop's.
  struct Predecessor {
    std::string node;
    uint32_t replica_id = 0;
  };
  std::optional<Predecessor> successor_of_;
  Predecessor leader_seen_;  // the leader as this follower last read it (replica_id 0: none known)
  std::chrono::steady_clock::time_point next_depose_log_{};
  std::chrono::steady_clock::time_point next_election_read_{};
  Flags flags_;  // the main loop's: election, deposed
  std::atomic<bool> leader_{false};
  std::unique_ptr<Leadership> lead_;
  std::atomic<bool> recycle_due_{false};  // set by the housekeeper, acted on by the leader
  std::atomic<bool> replace_due_{false};  // the same for a memory node's replacement
  int replace_attempts_ = 0;              // transient failures in a row (leader's thread)

  // The housekeeper's (refresh_replicas / refresh_members).
  Flags hk_flags_;
  std::atomic<bool> record_watch_armed_{false};
  std::atomic<bool> hk_stop_{false};
  bool stall_armed_ = false;  // test only: see FdReplicaOptions::stall_member_refreshes
  std::mutex members_mu_;     // guards the three below (the leader unwatches what it recovered)
  std::set<uint16_t> watched_;
  std::map<uint16_t, MemberRecord> members_;  // as last read by refresh_members
  uint64_t unwatch_generation_ = 0;           // unwatch_recovered() calls so far
  std::thread housekeeper_;  // last: joined (by ~Replica) before anything it uses goes
};

}  // namespace

int run_fd_replica(const FdReplicaOptions& given, const Logger& logger, const std::atomic<bool>& stop) {
  // The registry's ZooKeeper identity comes from the cluster secret.
  FdReplicaOptions options = given;
  if (!options.zk.auth) options.zk.auth = registry_auth(options.secret);
  for (bool restarting = false;; restarting = true) {
    int rc = 0;
    {
      Replica r(options, logger, restarting);
      rc = r.run(stop);
    }
    if (rc != Replica::kRestart || stop.load(std::memory_order_acquire)) return rc == Replica::kRestart ? 0 : rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace pandora
