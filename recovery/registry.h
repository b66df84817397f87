// The cluster's durable coordination state in ZooKeeper (ARCHITECTURE.md 5),
// defined once here: which znodes exist, what they hold, and the few
// operations everybody performs on them. All state of the failure detector
// lives here, so a replica that dies is replaced by another with nothing lost.
//
//   <root>/cluster              cluster_id, epoch, memory_nodes, failed_memory (`pandora-ctl init`;
//                               the FD leader adds failed memory nodes, bumping the epoch)
//   <root>/alloc                next_pid, lane leases                  (versioned read-modify-write)
//   <root>/compute/<pid>        one registered node: role, lane slot, push endpoint, incarnation, os pid
//   <root>/failed/<pid>         pids whose recovery is published (failed-ids)
//   <root>/recoveries/<pid>     one recovery record per failed pid: step and timings
//   <root>/fd/replicas/<id>     ephemeral: a live FD replica's UDP endpoint
//   <root>/fd/election/n_       ephemeral sequential: leader election (lowest wins)
//   <root>/pause                a stop-the-world pause in progress (epoch, failed pids): ford's
//                               recovery, and every memory node's fail-over
//   <root>/pause/<pid>          ephemeral: compute node <pid> has parked every coordinator for it
//   <root>/replace              a failed-over memory node's replacement asked for (node, endpoint,
//                               error once the leader gave up) (`pandora-ctl replace-memory-node`)
//   <root>/relocations          row moves the replacement's rebuild is making (replica_rebuild.h)
//   <root>/recycle              pid recycling in progress (generation, pids) (recycler.h)
//   <root>/recycle/<pid>        ephemeral: member <pid> has dropped those pids from its failed-ids
//
// Node contents are "key=value" lines (readable with zkCli.sh), parsed
// strictly: unknown keys are kept but ignored, a malformed line is kCorrupt.
//
// Pids are handed out from alloc.next_pid upwards and never re-issued (a
// latch may still carry a retired pid; recycling is a separate scan). Lane
// slots are leased first-fit from the log area's lanes and released by the
// recovery coordinator once the owner's lanes are truncated.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/endpoint.h"
#include "common/lane_map.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/zk/zk_client.h"
#include "recovery/relocation_journal.h"

namespace pandora {

// What a registered process does (FD replicas that lead register as kFd:
// they need a data plane to repair memory, run no transactions, and are
// recovered like any compute node when they die).
enum class MemberRole : uint8_t { kCompute = 1, kFd = 2 };
std::string_view member_role_name(MemberRole r);

struct ClusterRecord {
  uint64_t cluster_id = 0;
  // The configuration epoch: +1 with every memory node declared failed.
  uint64_t epoch = 1;
  std::vector<Endpoint> memory_nodes;
  // The region node id of each entry of memory_nodes (same order), recorded
  // by `pandora-ctl init` so a daemon found at a new address after a restart
  // can be told apart from a stranger. Empty in records written before it
  // existed (then only counts and failed ids are checked).
  std::vector<uint32_t> memory_node_ids;
  std::vector<FailedMemoryNode> failed_memory;  // "failed_memory=ID@HOST:PORT,..."
  // Live node id -> the incarnation of the daemon recorded for it
  // (wire::RegionInfo::daemon_incarnation, learnt at a login by whoever
  // wrote its address: init, set-memory-nodes, a replacement). The failure
  // detector counts only that daemon's heartbeats as the node's, so an old
  // daemon of a replaced node that still runs cannot keep a dead
  // replacement looking alive; a compute node restoring a replaced node
  // refuses another daemon at its address (one restarted on an empty
  // region). A node without an entry (records written before them) is
  // heard from any daemon. "memory_incarnations=ID:0xHEX,..."
  std::map<uint32_t, uint64_t> memory_incarnations;
  // The log area's lane geometry, fixed at init from the memory nodes'
  // regions; the table directory loaded later must agree.
  uint32_t lane_bytes = 0;
  uint32_t lanes = 0;
  // The protocol every compute node runs (mixing them is unsafe: their
  // latch words and logs differ); the recovery coordinator follows it.
  std::string protocol = "pandora";
};

// memory_nodes without the failed ones (the nodes to fence, to read from).
std::vector<Endpoint> live_memory_nodes(const ClusterRecord& r);
// Whether the record lists node `node_id` (or the node recorded at
// `endpoint`) as failed over.
bool failed_over(const ClusterRecord& r, uint32_t node_id);
bool failed_over_at(const ClusterRecord& r, const Endpoint& endpoint);

// A live memory daemon as found at its address (its region's node id, the
// daemon's incarnation; 0: not known, the node stays unbound).
struct MemoryNodeAddress {
  uint32_t node_id = 0;
  Endpoint endpoint;
  uint64_t incarnation = 0;
};

// The record after the live memory daemons came back at new addresses (a
// whole-cluster restart: daemons listen on kernel-chosen ports). `live`
// must be exactly the record's live nodes, by node id when the record has
// them (memory_node_ids), else by count and by not being a failed node:
// kMismatch otherwise (a missing node, a stranger, a failed-over node, the
// same id twice). Failed-over entries keep their old address; a live
// daemon now at a failed node's recorded address is refused (kConflict:
// compute nodes would take it for the failed node and never contact it).
// Epoch + 1. Placement follows node ids, not list order, so no data moves.
// memory_incarnations becomes exactly the live daemons' given ones.
Result<ClusterRecord> readdressed(const ClusterRecord& old, const std::vector<MemoryNodeAddress>& live);

// The record once failed-over node `node_id` is back at `endpoint` (a
// replacement filled from the live replicas: replica_rebuild.h): out of
// failed_memory, its entry at `endpoint`, epoch + 1. kInvalidArgument for a
// node not failed over, kConflict for an address another node has (live or
// failed), kUnsupported for a record without memory_node_ids (written
// before they were recorded: `pandora-ctl set-memory-nodes` adds them).
// The node is bound to daemon `incarnation` (the one that was filled; 0
// leaves it unbound: only for checking whether the write would be refused).
Result<ClusterRecord> restored(const ClusterRecord& old, uint32_t node_id, const Endpoint& endpoint,
                               uint64_t incarnation);

// <root>/replace: an operator's request that the leader fill a replacement
// daemon at `endpoint` for failed-over node `node_id` and bring it back.
struct ReplaceRequest {
  uint32_t node_id = 0;
  Endpoint endpoint;
  std::string error;  // set by the leader when it gave up (the request stays for the asker to read)
  bool operator==(const ReplaceRequest&) const = default;
};
std::string encode_replace_request(const ReplaceRequest& r);
Result<ReplaceRequest> decode_replace_request(std::string_view text);

struct MemberRecord {
  uint16_t pid = 0;
  MemberRole role = MemberRole::kCompute;
  LaneSlot slot;
  std::optional<Endpoint> push;   // where FailedPush messages go
  uint64_t incarnation = 0;
  int64_t os_pid = 0;             // the process on its host (for pandora-ctl crash)
  uint64_t registered_ns = 0;     // CLOCK_REALTIME
};

enum class RecoveryStep : uint8_t { kStarted = 1, kPublished = 2, kDone = 3 };
std::string_view recovery_step_name(RecoveryStep s);

struct RecoveryRecord {
  uint16_t pid = 0;
  RecoveryStep step = RecoveryStep::kStarted;
  LaneSlot slot;
  uint32_t leader_replica = 0;
  uint64_t detected_ns = 0;       // CLOCK_REALTIME when the leader saw the majority
  // Durations of each step, in microseconds (of the run that published).
  // start_record_us: the record read (ford: its start record written); for
  // a pid fenced while it was read, the part of the read the fence did not
  // cover (RecoveryCoordinator), so that the steps add up.
  uint64_t start_record_us = 0, fence_us = 0, log_recovery_us = 0, truncate_us = 0, publish_us = 0, sweep_us = 0;
  // ford: the stop-the-world pause (from asking every node to park to
  // resuming them) and the latch scan inside it.
  uint64_t pause_us = 0, scan_us = 0;
  uint32_t records = 0, rolled_back = 0, rolled_forward = 0, swept = 0;
  // Pids pushed to the survivors together with this one (itself included;
  // RecoveryCoordinator::recover_together). Records without it: 1.
  uint32_t together = 1;
};

struct Lease {
  LaneSlot slot;
  uint16_t pid = 0;
};

struct AllocRecord {
  uint32_t next_pid = 1;
  uint32_t pid_limit = 65535;   // pids 1..pid_limit exist (tests use a tiny space)
  std::vector<uint16_t> reuse;  // recycled pids, issued again once next_pid has passed pid_limit
  std::vector<Lease> leases;    // sorted by first lane

  // Pids issued and not recycled (live, or failed and awaiting recycling).
  uint32_t in_use() const { return next_pid - 1 - static_cast<uint32_t>(reuse.size()); }
};

// Text forms (exposed for tests and pandora-ctl).
std::string encode_cluster_record(const ClusterRecord& r);
Result<ClusterRecord> decode_cluster_record(std::string_view text);
std::string encode_member_record(const MemberRecord& r);
Result<MemberRecord> decode_member_record(std::string_view text);
std::string encode_recovery_record(const RecoveryRecord& r);
Result<RecoveryRecord> decode_recovery_record(std::string_view text);
std::string encode_alloc_record(const AllocRecord& r);
Result<AllocRecord> decode_alloc_record(std::string_view text);

// First-fit lease of `count` lanes among `lanes`; nullopt when none fits.
std::optional<LaneSlot> find_free_slot(const AllocRecord& a, uint32_t count, uint32_t lanes);

// The ZooKeeper identity of every process that holds the cluster secret:
// the registry's nodes are readable by anyone (zk_dump.py reads them) and
// changeable only under this identity. The password is derived from the
// secret (HMAC-SHA256 with a fixed label), so the secret itself never
// reaches ZooKeeper, whose digest scheme sends the password in the clear.
zk::DigestAuth registry_auth(std::string_view secret);

class Registry {
 public:
  // Connects and checks <root>/cluster: kNotFound ("run pandora-ctl init")
  // when absent, kMismatch naming both ids when it belongs to another
  // cluster id. Both open() and init() need zk.auth (registry_auth(secret)):
  // kInvalidArgument without it.
  static Result<std::unique_ptr<Registry>> open(const zk::ZkOptions& zk, std::string root, uint64_t cluster_id,
                                                const Logger& logger);
  // Creates the tree for `record` (idempotent for the same cluster id;
  // kMismatch for another one). kAuthFailed when <root> exists and others
  // than zk.auth's identity may change it (someone without the secret
  // prepared it to tamper with the cluster's state).
  // `pid_limit`: the pid space (tests of recycling use a tiny one).
  static Status init(const zk::ZkOptions& zk, const std::string& root, const ClusterRecord& record,
                     const Logger& logger, uint32_t pid_limit = 65535);

  const std::string& root() const { return root_; }
  // The cluster record as read at open().
  const ClusterRecord& cluster() const { return cluster_; }
  // The cluster record as ZooKeeper holds it now (cluster() unchanged:
  // safe beside a thread that reads it).
  Result<ClusterRecord> read_cluster();
  // read_cluster(), then cluster() returns it (not while another thread
  // may read cluster()).
  Result<ClusterRecord> refresh_cluster();
  // A memory node's fail-over begins: in one multi, `node` joins the
  // record's failed memory nodes (epoch + 1; versioned, lost races retried)
  // and the stop-the-world pause `pause_epoch` begins (begin_pause). So a
  // failed memory node listed while no pause exists was failed over to the
  // end; a pause left behind means a leader died in it (resume() re-runs).
  // For a node listed already only the pause begins (a re-run). Returns the
  // record, which cluster() returns from now on (as refresh_cluster()).
  Result<ClusterRecord> fail_memory_node(const FailedMemoryNode& node, uint64_t pause_epoch);
  // readdressed() applied to the record as ZooKeeper holds it, written back
  // (versioned, lost races retried); cluster() returns the result.
  Result<ClusterRecord> readdress_memory_nodes(const std::vector<MemoryNodeAddress>& live);
  // Replacement of a failed-over memory node (replica_rebuild.h):
  // request_replacement creates <root>/replace (kAlreadyExists while one
  // is pending); replacement_request reads it (nullopt: none), arming
  // `on_change` (optional) for its next change; fail_replacement records
  // why the leader gave up; withdraw_replacement removes it.
  Status request_replacement(const ReplaceRequest& r);
  Result<std::optional<ReplaceRequest>> replacement_request(std::function<void()> on_change = nullptr);
  Status fail_replacement(const std::string& error);
  Status withdraw_replacement();
  // The end of a replacement, in one multi: the record restored() (epoch +
  // 1, versioned, lost races retried; the node bound to the filled
  // daemon's `incarnation`), the pause ended, the request and the
  // relocation journal removed. cluster() returns the record after.
  Result<ClusterRecord> restore_memory_node(uint32_t node_id, const Endpoint& endpoint, uint64_t incarnation);
  // The rebuild's journal of row moves, <root>/relocations (a few tens of
  // bytes per move). Valid while this registry is.
  std::unique_ptr<RelocationJournal> relocation_journal();
  // Whether a stop-the-world pause is in progress (<root>/pause exists).
  Result<bool> pause_in_progress();
  // A pause is in progress and names no failed pid: a memory node's
  // fail-over (ford's recoveries name the pids they recover).
  Result<bool> paused_for_memory();
  zk::ZkClient& zk() { return *zk_; }

  // Allocates a pid and leases `lanes` lanes (first-fit in the cluster
  // record's log area) in one atomic multi with <root>/compute/<pid>;
  // retries lost races. kUnavailable when the log area has no free run of
  // that many lanes (the message says how many are leased) or pids are
  // exhausted. Returns `record` with pid and slot filled in.
  Result<MemberRecord> register_member(MemberRecord record, uint32_t lanes);

  Result<std::vector<MemberRecord>> members();
  Result<std::optional<MemberRecord>> member(uint16_t pid);
  // The current failed-ids (sorted).
  Result<std::vector<uint16_t>> failed();
  // As failed(), and calls `on_change` once when the set changes next.
  Result<std::vector<uint16_t>> watch_failed(std::function<void()> on_change);
  Result<std::vector<uint16_t>> watch_members(std::function<void()> on_change);

  // Recovery records.
  Result<std::optional<RecoveryRecord>> recovery(uint16_t pid);
  // The records of several pids, in order, read in one round
  // (ZkClient::get_many): what a batch of pids that failed together needs
  // before anything else. The first error fails the whole call. `meanwhile`
  // runs while the read is on its way (ZkClient::get_many).
  Result<std::vector<std::optional<RecoveryRecord>>> recoveries_of(std::span<const uint16_t> pids,
                                                                   const std::function<void()>& meanwhile = {});
  Result<std::vector<RecoveryRecord>> recoveries();
  // Creates the record at kStarted (ok when one exists: a re-run).
  Status start_recovery(const RecoveryRecord& r);
  // As start_recovery; true when this call created it, false when a record
  // existed already (then read it: recovery()).
  Result<bool> create_recovery(const RecoveryRecord& r);
  // The publishing write, one multi: <root>/failed/<pid> created, the
  // recovery record created at kPublished with `r`'s timings (set, when
  // `record_exists`: a start record), <root>/compute/<pid> removed (if it is
  // still there). No read first: what is missing or present against the
  // caller's expectation is read only after a multi fails on it. Ok when
  // already published (a re-run).
  Status publish_failed(const RecoveryRecord& r, bool record_exists = true);
  // Several pids' publishing writes as one multi, when every pid is as the
  // caller expects (its record there or not as `record_exists` says, its
  // member node there); otherwise (one published already, a member gone)
  // each pid through publish_failed(), which sorts that out. Ok when all
  // are published.
  struct ToPublish {
    RecoveryRecord record;
    bool record_exists = false;
  };
  Status publish_failed_together(std::span<const ToPublish> pids);
  // Off the critical path: drops the pid's lane lease and marks the record kDone.
  Status finish_recovery(const RecoveryRecord& r);
  // The same for several pids, in one multi per 128 (one alloc update for
  // all their leases). Every record must exist (kNotFound otherwise, and
  // nothing of that multi is written).
  Status finish_recoveries(std::span<const RecoveryRecord> rs);
  Result<AllocRecord> alloc();

  // ford's stop-the-world pause. begin_pause creates <root>/pause (or
  // replaces a pause a dead leader left); every compute node parks and
  // acknowledges with an ephemeral child; end_pause removes it all.
  Status begin_pause(uint64_t epoch, const std::vector<uint16_t>& failed);
  // Pids that acknowledged `epoch`.
  Result<std::vector<uint16_t>> pause_acks(uint64_t epoch);
  Status end_pause();
  // Compute side: the epoch of the pause in progress (0: none), arming a
  // one-shot watch on its creation/removal.
  Result<uint64_t> watch_pause(std::function<void()> on_change);
  Status ack_pause(uint16_t pid, uint64_t epoch);

  // Pid recycling (recycler.h), the same shape as the pause: the leader
  // announces the pids, every member drops them from its failed-ids and
  // acknowledges, the leader finishes in one multi (failed/ and recovery
  // records removed, the pids added to alloc.reuse, the announcement gone).
  struct Recycle {
    uint64_t generation = 0;
    std::vector<uint16_t> pids;
  };
  Status begin_recycle(const Recycle& r);
  Result<std::vector<uint16_t>> recycle_acks(uint64_t generation);
  // The recycle in progress (generation 0: none), arming a one-shot watch.
  Result<Recycle> watch_recycle(std::function<void()> on_change);
  Status ack_recycle(uint16_t pid, uint64_t generation);
  Status finish_recycle(const Recycle& r);
  // Withdraws an announcement without recycling (members keep the pids
  // dropped: harmless, they are fenced and their latches released).
  Status abandon_recycle();

  // FD replicas (ephemeral): announce this replica's UDP endpoint; list them.
  // A node left by another session (a replica that died, whose session
  // ZooKeeper has not expired yet - after a whole-cluster restart the
  // ensemble restores every old session with a fresh timeout) is taken
  // over at once when it names `udp` (the port this process holds, so its
  // creator is gone), else waited out for up to `stale_wait`; then
  // kAlreadyExists.
  Status announce_replica(uint32_t replica_id, const Endpoint& udp,
                          std::chrono::milliseconds stale_wait = std::chrono::milliseconds(0));
  Result<std::map<uint32_t, Endpoint>> replicas();
  Result<std::map<uint32_t, Endpoint>> watch_replicas(std::function<void()> on_change);
  // After announce_replica succeeded: removes election nodes of
  // `replica_id` left by other (dead) sessions, which would otherwise keep
  // the leadership out of reach until they expire. Safe because the
  // announcement proves no other replica of that id is alive. Returns how
  // many it removed.
  Result<int> withdraw_stale_candidacies(uint32_t replica_id);
  // Joins the leader election as `replica_id` (an ephemeral sequential
  // node under fd/election); returns the node's name.
  Result<std::string> stand_for_election(uint32_t replica_id);
  // The full path of election node `name` (what stand_for_election
  // returned): what a leader guards its writes with (ZkClient::guard_writes).
  std::string election_path(std::string_view name) const;
  // The replica id election node `name` stands for. kNotFound when it is
  // gone; kCorrupt when it names none.
  Result<uint32_t> candidate(std::string_view name);
  // Deposes the leader whose election node is `name`: removes the node
  // (another session's: the leader's is alive but the leader is not heard),
  // which fails every write the old leader guarded with it and hands the
  // leadership to the next candidate. kNotFound: gone already.
  Status depose(std::string_view name);

  std::string path(std::string_view rel) const { return root_ + "/" + std::string(rel); }

 private:
  // Appends to *ops the removal of the pause and its acknowledgements as
  // they are now (nothing when no pause exists): end_pause's multi, and
  // part of restore_memory_node's.
  Status add_end_pause(std::vector<zk::Op>* ops);
  Registry(std::unique_ptr<zk::ZkClient> zk, std::string root, ClusterRecord cluster, const Logger& logger)
      : zk_(std::move(zk)), root_(std::move(root)), cluster_(std::move(cluster)), logger_(logger) {}
  Result<std::vector<uint16_t>> pid_children(std::string_view rel, std::function<void()> on_change);

  std::unique_ptr<zk::ZkClient> zk_;
  std::string root_;
  ClusterRecord cluster_;
  Logger logger_;
};

}  // namespace pandora
