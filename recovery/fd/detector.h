// One failure-detector replica's network loop (ARCHITECTURE.md 5, step 1;
// seed 4.3.2.2 step 1 and 4.3.2.4).
//
// A Detector owns one UDP socket bound on a loopback endpoint and one thread.
// The thread receives datagrams (heartbeats of compute nodes and memory
// daemons, Suspects reports of the other replicas), authenticates them
// (common/heartbeat_receiver.h) and feeds them to a FailureMonitor; every
// tick it evaluates its own suspicion and, while its suspect set is not
// empty (and once more when it becomes empty), sends it to every peer
// replica. A watched node is failed when a majority of the N replicas
// suspect it; the decision is then latched (failure is a decision, not a
// state: the node is about to be fenced) and reported by wait_failed() until
// the caller unwatches it.
//
// Replicas also heartbeat each other (every peer_heartbeat): a replica
// tells how long a peer has been silent (peer_silence), which is how the
// leader's successor finds a leader that stopped while its ZooKeeper
// session lives on (recovery/fd_replica.h).
//
// An operator asks a replica for its counters and state with a StatsQuery
// (common/wire/heartbeat.h; pandora-ctl stats): the replica answers to the
// query's source address, at most kStatsAnswersPerSecond times a second
// (the query is authenticated and as long as the answer; the limit bounds
// what a replayed one can cost).
//
// The thread sleeps in ppoll between ticks (no busy polling), and while no
// node is suspected it skips the ticks until the earliest moment one could
// be (it still wakes for each datagram): three replicas and a cluster share
// two cores in the tests.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/endpoint.h"
#include "common/heartbeat_receiver.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/udp_socket.h"
#include "common/wire/heartbeat.h"
#include "recovery/fd/failure_monitor.h"

namespace pandora::fd {

struct DetectorOptions {
  uint64_t cluster_id = 0;
  std::string secret;
  uint32_t replica_id = 1;                    // 1..replicas
  uint32_t replicas = 3;                      // N
  Endpoint bind{"127.0.0.1", 0};              // port 0 picks one (port() tells)
  std::chrono::microseconds timeout{5000};    // silence before this replica suspects a compute node
  // ... a memory node. Longer: failing one over is final (a replica lost
  // for good until re-replication exists) and stops the world, so a
  // starved daemon must not be mistaken for a dead one. 0: `timeout`.
  std::chrono::microseconds memory_timeout{0};
  std::chrono::microseconds tick{250};        // suspicion evaluated and reported this often
  std::chrono::microseconds report_ttl{0};    // how long a peer's report counts; 0 = 3 x tick
  std::chrono::milliseconds max_skew{2000};   // replay guard: accepted |sender clock - ours|
  // How often this replica heartbeats its peers (at most once a tick);
  // 0: never (its peers then hear it only through suspicion reports).
  std::chrono::microseconds peer_heartbeat{5000};
  // Tests only: runs on the detector's thread at the top of every loop
  // iteration (a test stalls the thread with it, as a loaded machine does).
  std::function<void()> loop_hook;
};

struct FailedNode {
  wire::SenderKind kind = wire::SenderKind::kCompute;
  uint32_t id = 0;
  uint64_t detected_mono_ns = 0;    // CLOCK_MONOTONIC when a majority was first seen
  uint64_t last_heard_mono_ns = 0;  // CLOCK_MONOTONIC of its last heartbeat here (or of watch())
};

// What a replica next in line makes of the leader's silence
// (Detector::judge_leader; recovery/fd_replica.h deposes on kDepose).
enum class LeaderVerdict : uint8_t {
  kHeard,       // heard within the timeout
  kNeverHeard,  // not heard since this replica started (or not a peer): its session's expiry decides
  kSelfBehind,  // this replica's own thread is behind: the silence may be its own
  kNoMajority,  // silent, but this replica does not hear a majority without it either
  kDepose,      // silent while a majority (this replica included) hears each other
};
std::string_view leader_verdict_name(LeaderVerdict v);

struct LeaderJudgement {
  LeaderVerdict verdict = LeaderVerdict::kNeverHeard;
  std::chrono::microseconds silence{0};  // the leader's, when it was heard at all
  uint32_t heard = 0;                    // replicas heard within the timeout, this one included, the leader not
  bool refused = false;                  // the leader's port refused since it was last heard: its process is gone
};

struct DetectorStats {
  uint64_t datagrams = 0;             // received, valid or not
  uint64_t heartbeats = 0;            // authentic heartbeats of watched nodes
  uint64_t heartbeats_unwatched = 0;  // authentic heartbeats of nodes not watched, or replicas not peers (dropped)
  uint64_t heartbeats_foreign = 0;    // authentic heartbeats of a memory node id from a daemon it is not bound to
  uint64_t reports_received = 0;      // authentic Suspects / MemorySuspects of a peer
  uint64_t reports_stale = 0;         // MemorySuspects judged under an older cluster record than ours (ignored)
  uint64_t reports_sent = 0;
  uint64_t peer_heartbeats = 0;       // authentic heartbeats of peer replicas
  uint64_t peer_heartbeats_sent = 0;
  uint64_t peer_refusals = 0;         // peer heartbeats whose port refused (its process is gone)
  uint64_t pushes_sent = 0;           // FailedPush datagrams
  uint64_t send_errors = 0;
  uint64_t failed_detected = 0;       // nodes that reached a majority
  uint64_t ticks = 0;
  uint64_t queries_answered = 0;      // StatsQuery answered
  uint64_t queries_refused = 0;       // StatsQuery over the answer rate limit (also in rejected.unexpected)
  RejectCounts rejected;              // refused datagrams by reason
};

inline constexpr uint32_t kStatsAnswersPerSecond = 20;

class Detector {
 public:
  // Binds the socket and starts the thread. kInvalidArgument for bad options
  // (replica id outside 1..N, tick 0 or not below the timeout, non-numeric
  // bind address), kIo when the socket cannot be bound.
  static Result<std::unique_ptr<Detector>> start(DetectorOptions options, const Logger& log);
  ~Detector();  // stops and joins the thread
  Detector(const Detector&) = delete;
  Detector& operator=(const Detector&) = delete;

  uint16_t port() const { return port_; }
  uint64_t incarnation() const { return incarnation_; }

  // The other replicas by replica id (replaces the previous map). Reports
  // are sent to them and accepted only from them. kInvalidArgument (map
  // unchanged) for this replica's own id, an id outside 1..N or a
  // non-numeric address.
  Status set_peers(std::map<uint32_t, Endpoint> peers);

  // Starts / stops watching a node. A newly watched node counts as heard
  // now. unwatch also forgets a failure already detected.
  void watch(wire::SenderKind kind, uint32_t id);
  void unwatch(wire::SenderKind kind, uint32_t id);
  // Memory nodes are watched from their first authentic heartbeat on (no
  // list of them is needed: a daemon heartbeats once it has started, and
  // a replica that starts later watches it as soon as it hears it), unless
  // retired: a memory node failed over stays out of the configuration
  // until it is replaced, so a daemon that comes back under its id is not
  // watched meanwhile. Retiring also unwatches.
  //
  // follow_memory_record: what the cluster record of configuration
  // `epoch` says. `retired`: its failed-over memory nodes; a node retired
  // before and no longer listed (replaced: recovery/replica_rebuild.h) is
  // watched again, counted as heard now. `incarnations`: node id -> the
  // daemon the record binds it to; heartbeats under a bound id from
  // another incarnation are refused (counted, logged at a bounded rate):
  // they are not the node's, e.g. an old daemon of a replaced node, cut
  // off rather than dead, that would otherwise keep a dead replacement
  // looking alive. Unbound ids are heard from any daemon.
  // A node whose binding changes is watched anew, heard now. Memory
  // suspicion reports carry the epoch of the record their sender follows;
  // one older than the record applied here is not counted (a replica that
  // has not read a replacement's record yet refuses the new daemon's
  // heartbeats and would vote the live node failed), and applying a newer
  // record drops the peers' memory reports until they send fresh ones.
  // A record older than one applied before changes nothing (a reader that
  // raced with a fail-over must not bring the failed node back).
  void follow_memory_record(const std::set<uint32_t>& retired, const std::map<uint32_t, uint64_t>& incarnations,
                            uint64_t epoch);

  // Blocks up to max_wait until some watched node is failed by a majority;
  // returns them (each reported again on every call while it stays watched:
  // the caller unwatches it once handled). Empty on timeout.
  std::vector<FailedNode> wait_failed(std::chrono::milliseconds max_wait);

  // After wait_failed() returned a compute node: the compute nodes that
  // stopped within `window` of it - silent here long enough to be
  // suspected within `window` - are waited for, at most `window`, so the
  // caller recovers them together (one host's processes die at once, but
  // cross the timeout up to a heartbeat interval apart). Live nodes are
  // heard every heartbeat interval, so with `window` above that interval
  // and below the timeout, a lone failure waits for nothing. Returns what
  // wait_failed(0) would then.
  std::vector<FailedNode> gather_failed(std::chrono::microseconds window);

  // Sends authenticated FailedPush messages from this replica carrying
  // `pids` (split over several datagrams when needed) to every endpoint of
  // `to` (compute nodes' push listeners). Best effort, as UDP is: the
  // ZooKeeper record is the reliable path. kInvalidArgument for a
  // non-numeric address; kIo when some datagram could not be sent (the
  // others still were).
  Status push_failed(std::span<const Endpoint> to, std::span<const uint16_t> pids);

  // How long ago this replica last heard peer `replica_id` (a heartbeat
  // or a report); nullopt when it never has (since start, or since the
  // peer joined the map of set_peers).
  std::optional<std::chrono::microseconds> peer_silence(uint32_t replica_id) const;
  // How long ago this replica's thread last read its socket dry. Long when
  // the thread is descheduled: then every peer_silence() is stale too, so
  // a caller must not judge a peer by it (it would take its own stall for
  // the peer's).
  std::chrono::microseconds since_last_drain() const;
  // Judges peer `leader`'s silence against `timeout` - or against
  // `refused_timeout`, if shorter, when its port refused since it was last
  // heard (the process is gone, not stopped or cut off) - in this order:
  // heard within it; never heard; this replica's thread behind (its last
  // drain older than a quarter of it); a majority of the N replicas, this
  // one included and the leader not, heard within `timeout`; else depose.
  LeaderJudgement judge_leader(uint32_t leader, std::chrono::microseconds timeout,
                               std::chrono::microseconds refused_timeout) const;

  DetectorStats stats() const;
  // What a StatsQuery is answered with: stats() and this replica's state.
  wire::ReplicaStats replica_stats() const;
  // Whether this replica leads (pandora-fd sets it once elected); only
  // reported.
  void set_leader(bool leader) { leader_.store(leader, std::memory_order_relaxed); }
  // Which replica this one takes for the leader (0: none known) and
  // whether it is next in line to depose it; only reported (replica_stats:
  // with that leader's silence as this replica hears it).
  void set_leader_watch(uint32_t leader_replica, bool successor) {
    watched_leader_.store(leader_replica, std::memory_order_relaxed);
    successor_.store(successor, std::memory_order_relaxed);
  }
  // Counts a leader this replica deposed; only reported.
  void count_deposition() { depositions_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Detector(DetectorOptions options, const Logger& log);
  void run();
  // Reads and handles up to `max` datagrams waiting on the socket.
  void receive_all(int max);
  void handle(const wire::HeartbeatMessage& m, const sockaddr_storage& from, socklen_t from_len, uint64_t now);
  void answer_stats_query(const wire::HeartbeatMessage& query, const sockaddr_storage& from, socklen_t from_len,
                          uint64_t now);
  // Evaluates and reports; returns when the next tick is needed.
  uint64_t tick(uint64_t now);
  // With mu_ held: latches nodes the monitor now finds failed.
  void evaluate_locked(uint64_t now);
  // With mu_ held: the nodes latched failed, as wait_failed() reports them.
  std::vector<FailedNode> failed_locked() const;
  // A message of this replica with its header filled (next seq).
  wire::HeartbeatMessage own_message(wire::HeartbeatType type);
  // Encodes one message from this replica (next seq) into out; `epoch`
  // only for kMemorySuspects.
  Status encode(std::string& out, wire::HeartbeatType type, std::span<const uint16_t> pids, uint64_t epoch);
  Status send_to(const net::UdpAddress& to, const std::string& datagram);

  const DetectorOptions options_;
  const Logger log_;
  const uint64_t incarnation_;
  const uint64_t started_mono_ns_;
  std::atomic<bool> leader_{false};
  std::atomic<uint32_t> watched_leader_{0};
  std::atomic<bool> successor_{false};
  std::atomic<uint64_t> depositions_{0};
  net::UniqueFd sock_;
  net::UniqueFd wakeup_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> seq_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> last_drain_ns_{0};  // CLOCK_MONOTONIC at the end of receive_all()
  std::thread thread_;
  std::mutex push_mu_;  // serialises push_failed: one receiver must see its seqs in order

  // Receiving thread only.
  HeartbeatReceiver receiver_;
  bool reported_compute_ = false;  // last report sent was non-empty
  bool reported_memory_ = false;
  uint64_t next_peer_heartbeat_ns_ = 0;
  uint64_t answer_window_ns_ = 0;   // the second the answers below were counted in
  uint32_t answers_in_window_ = 0;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable failed_cv_;
  FailureMonitor monitor_;
  std::set<uint32_t> retired_memory_;
  std::map<uint32_t, uint64_t> memory_incarnations_;
  uint64_t retired_epoch_ = 0;  // of the record follow_memory_record() applied last
  struct Peer {
    Endpoint endpoint;
    net::UdpAddress address;
    // What goes to the peer (heartbeats, reports) goes out on a socket
    // connected to it, so that a peer whose process is gone is told apart
    // from a silent one: its port refuses (ICMP port unreachable, reported
    // on the next send). Null when it could not be opened: sent on the
    // main socket, refusals unseen.
    std::shared_ptr<net::UniqueFd> socket;
    uint64_t refused_ns = 0;  // CLOCK_MONOTONIC its port last refused (0: never, at this address)
  };
  std::map<uint32_t, Peer> peers_;
  std::map<uint32_t, uint64_t> peer_heard_ns_;  // peer id -> CLOCK_MONOTONIC it was last heard
  std::map<NodeKey, FailedNode> failed_;
  DetectorStats stats_;
};

}  // namespace pandora::fd
