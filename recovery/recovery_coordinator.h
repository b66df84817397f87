// The recovery coordinator (ARCHITECTURE.md 5; seed 4.3.2.2): what the
// failure detector's leader runs for each failed compute pid.
//
//   read the pid's record (and meanwhile fence at every memory node) -> log recovery
//   -> truncate -> push to every compute node -> publish (the one
//   synchronous ZooKeeper write: failed/<pid>, the record created at
//   published with the steps' timings, compute/<pid> removed) ->
//   post-publish sweep of the stray latches the logs name -> lane lease
//   released and record marked done (off the critical path).
//
// Every step is idempotent, so a leader that dies anywhere is replaced and
// the new leader simply runs recover() again from the top, for every pid
// still registered and silent (its detector) and every record not marked
// done (resume()). Why a re-run is safe: until the push the dead pid is
// fenced and still owns every latch it held, so nobody else can change the
// objects its log names, and log recovery reaches the same decision;
// truncation only zeroes what the first run already decided, and once it
// is done (before the push) a re-run finds nothing to decide, so latches
// stolen after the push are never undone; publishing twice finds
// failed/<pid> there; the sweep CASes exact words. A leader that is
// replaced while it still runs cannot interfere: its successor fences the
// old leader's own pid before recovering anything (resume()).
//
// One synchronous ZooKeeper write, not two (ARCHITECTURE.md 5 allows two;
// the issue asked for the argument): no start record. It is not needed
// for a re-run to happen: a failed pid that has not been published keeps
// its registration (compute/<pid> is removed only by the publishing
// multi), so the next leader's detector finds it registered and silent and
// recovers it; and the fence bits are persistent at the memory nodes, so a
// pid fenced by a dead leader stays fenced: should it still be alive (a
// false suspicion), its next operation fails, it exits, and falls silent.
// (Measured: posting a start record without waiting for it still cost the
// publish most of an fsync, since ZooKeeper logs one session's requests in
// order.) What is lost: pandora-ctl shows a recovery only once it is
// published, a few ms after detection.
// The read that comes first is what keeps a re-run away from a slot whose
// lease was released (a record at done) and possibly re-leased. The fence
// needs no record, so it runs while the read is on its way (a ZooKeeper
// round trip, 1-5 ms on a loaded host), for every pid whose member record
// the caller knows (the detector's leader watches them; so the pid was
// issued): fencing a pid a majority of replicas missed is safe whatever the
// record says, at worst it repeats a fence (idempotent) or costs a live
// node its run (it exits and registers again), never data. Only while the
// leader's session is connected, though: a leader cut off from ZooKeeper
// (perhaps replaced) still fences nobody, since the read fails first - a
// node it fenced then could not register again until ZooKeeper is back,
// and the survivors gain nothing from a fence they are not told of. Pids
// without a known record (pandora-ctl recover: a pid typed by hand,
// perhaps never issued) and ford's are fenced after the read, as before.
//
// The push precedes the write because stealing is safe from the moment
// the lanes are truncated: the survivors' wait for the dead pid's latches
// then ends a ZooKeeper fsync earlier (the write is what new nodes and
// nodes that missed the UDP push read).
//
// ford (the cluster record's protocol): latches carry no owner, so they can
// be neither stolen nor told apart; recovery stops the world instead
// (recovery/ford_recovery.h): after the fence, every live compute node is
// asked through ZooKeeper (<root>/pause) to park all of its coordinators
// between transactions and acknowledges; then the undo records are decided,
// the lanes truncated, every slot of every node scanned and every latch
// released; publish; resume. The pause grows with the data (the scan).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <memory>
#include <span>
#include <vector>

#include "common/endpoint.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/transport/client.h"
#include "compute/cluster.h"
#include "compute/step_hook.h"
#include "recovery/admin_sessions.h"
#include "recovery/log_recovery.h"
#include "recovery/registry.h"
#include "recovery/replica_rebuild.h"

namespace pandora {

// A compute pid the failure detector found failed.
struct FailedPid {
  uint16_t pid = 0;
  uint64_t detected_ns = 0;           // CLOCK_REALTIME of the majority (0: a recovery run by hand)
  std::optional<MemberRecord> known;  // its member record as the caller last read it (RecoveryCoordinator::recover)
};

struct RecoveryCoordinatorOptions {
  uint64_t cluster_id = 0;
  std::string secret;            // for the admin sessions that fence
  uint32_t replica_id = 0;       // recorded in the recovery record
  std::chrono::milliseconds control_timeout{2000};
  // ford: how long to wait for every live compute node to park before the
  // ones that have not are treated as failed too (fenced, recovered in the
  // same pause).
  std::chrono::milliseconds park_timeout{10000};
  // ford: compute pids the failure detector has found failed right now
  // (optional). They cannot park: they are recovered in the same pause
  // instead of being waited for.
  std::function<std::vector<uint16_t>()> failed_now;
  // Compute pids the detector has found failed that are not in `batch`
  // (optional). Asked after each push of a batch (recover_together), so a
  // pid that crossed the timeout a little after the others joins the batch
  // - fenced, repaired and pushed at once, published with it - instead of
  // waiting for the batch's ZooKeeper writes.
  std::function<std::vector<FailedPid>(std::span<const uint16_t> batch)> failed_since;
  // Where to push a published pid (the members' push endpoints, as the
  // caller last read them). Without it the members are read from
  // ZooKeeper after the publish, which delays the push.
  std::function<std::vector<Endpoint>()> push_targets;
  // A second registry session (optional, owned by the caller, outliving
  // the coordinator) for recover_together's publishing writes. ZooKeeper
  // answers one session's requests in order, so on the coordinator's own
  // session the record read of a pid that joins a batch waited behind the
  // batch's write (an fsync). A publishing write that fails there is
  // repeated on the coordinator's session (publishing is idempotent).
  // Reads of the coordinator's session see these writes once the batch's
  // next write on it (marking the records done) has been answered: its
  // server applies transactions in order.
  Registry* publisher = nullptr;
};

// Sends the authenticated FailedPush for `pids` to `to` (the detector's).
using FailedPusher = std::function<void(std::span<const Endpoint> to, std::span<const uint16_t> pids)>;

// Runs `op` on a one-off admin control session (AdminSessions, closed on
// return) to every memory node of the cluster record, in order; the first
// failure stops it, its message naming `what` and the node.
Status at_every_memory_node(const ClusterRecord& cluster, const std::string& secret,
                            std::chrono::milliseconds timeout, std::string_view what,
                            const std::function<Status(ControlClient&)>& op);

// Fences `pid` at every memory node of the cluster record (admin sessions).
Status fence_at_every_memory_node(const ClusterRecord& cluster, const std::string& secret, uint16_t pid,
                                  std::chrono::milliseconds timeout);

// Retires a member that has finished with its data plane and has no
// transaction in flight (a compute node leaving cleanly, a tool such as
// pandora-ctl, a leader stepping down): fence, publish, release its lease.
// No log is read: it left none undecided. Touches no data connection, so it
// runs after the caller closed its own.
//
// `fence`: whether to fence it first. A process retiring itself passes
// false: its connections are closed and nothing of it is in flight, and
// fencing would make a memory daemon kill it (shm fencing kills the
// process registered under the pid).
Status retire_member(Registry& registry, const std::string& secret, uint16_t pid, uint32_t replica_id,
                     std::chrono::milliseconds timeout, bool fence = true);

class RecoveryCoordinator {
 public:
  // `cluster`: this leader's view, connected with its own (kFd) pid, the
  // table directory loaded. `crash` (optional): the recovery crash points.
  RecoveryCoordinator(Registry& registry, Cluster& cluster, RecoveryCoordinatorOptions options, const Logger& logger,
                      FailedPusher push, StepHook* crash = nullptr);

  // All steps for `pid`. `detected_ns`: CLOCK_REALTIME when the majority
  // was reached (0 for a recovery run by hand). Returns the final record.
  // `known` (optional): the pid's member record as the caller last read
  // it (the detector's leader watches them); with it the recovery reads
  // only the pid's record from ZooKeeper before the data-plane steps.
  Result<RecoveryRecord> recover(uint16_t pid, uint64_t detected_ns, const MemberRecord* known = nullptr);

  // Pids the detector found failed at the same time (a host that ran
  // several compute processes died): every one is fenced, its logs
  // recovered and its lanes truncated, then the survivors are pushed all of
  // them in one datagram before the first ZooKeeper write, then all are
  // published (one multi) and each is swept. Recovered one after another, the
  // k-th pid's latches were stolen only after k - 1 full recoveries, each
  // ending with a ZooKeeper write; together, after k repairs. The same
  // steps as recover() for each pid (their writes as one multi), so a
  // re-run after a failure anywhere is as safe: pids pushed before it are
  // repaired, and one not published yet is still registered and detected
  // again. ford clusters recover each pid
  // in its own pause, as recover() does. One record per pid, in order
  // (`together`: how many were pushed with it).
  // Pids that options.failed_since reports meanwhile join the batch (up to
  // kJoinRounds times), and their records follow the others'.
  using FailedPid = ::pandora::FailedPid;
  static constexpr int kJoinRounds = 8;
  Result<std::vector<RecoveryRecord>> recover_together(std::span<const FailedPid> pids);

  // A memory node's fail-over (ARCHITECTURE.md 5; seed 4.3.2.5), protocol
  // pandora: the node leaves the configuration for good (the cluster
  // record's failed_memory, epoch + 1; this coordinator's cluster view
  // switches primaries too), then the world stops: every compute node
  // decides its in-flight transactions by the live replicas
  // (compute/txn/failover.h), parks, switches primaries and acknowledges.
  // A compute node found failed meanwhile, or one that does not park
  // within park_timeout, is recovered (fenced at the live nodes) within
  // the pause: its latches on the dead node are gone, so its log must be
  // decided before anyone may take those objects on their new primaries.
  // Idempotent: a new leader re-runs it for a node the record lists.
  // kUnavailable when some shard had every replica on failed nodes (its
  // data is lost: nothing is switched); kUnsupported for ford and
  // log-a-latch clusters.
  Status fail_over_memory_node(uint32_t node_id);

  // Re-replication (recovery/replica_rebuild.h; recovery/README.md): fills
  // the daemon at `r.endpoint` for failed-over node `r.node_id` and brings
  // the node back, in a stopped world:
  //   log in there (the node's id, this cluster, the same layout) -> fence
  //   there every pid published failed -> pause (every compute node parks;
  //   one that failed or does not park is recovered within it) -> rebuild
  //   (rows copied, conflicts relocated under a ZooKeeper journal) -> one
  //   ZooKeeper write: the record lists the node at its new address (epoch
  //   + 1), the pause ends, the request goes -> each compute node connects
  //   to it before it resumes (Membership).
  // Idempotent: a new leader re-runs it for a request still pending. This
  // coordinator's cluster view still has the node failed over afterwards:
  // the caller rebuilds it from the record.
  Result<RebuildReport> replace_memory_node(const ReplaceRequest& r);

  // At leadership start: recovers every registered kFd member other than
  // `self` (a former leader: its data-plane writes must be fenced), and
  // finishes every recovery record not marked done.
  Status resume(uint16_t self);

  // Fences `pid` at every memory node of the cluster record (admin
  // sessions, kept open between calls; works after this node's own data
  // connections are gone).
  Status fence_everywhere(uint16_t pid);
  // The same for several pids: one request per memory node for all of them
  // (up to wire::kMaxFenceIds), every node at once.
  Status fence_everywhere(std::span<const uint16_t> pids);

  // retire_member() with this coordinator's registry and secret.
  Status retire(uint16_t pid, bool fence = true) {
    return retire_member(registry_, options_.secret, pid, options_.replica_id, options_.control_timeout, fence);
  }

 private:
  Registry& registry_;
  Cluster& cluster_;
  RecoveryCoordinatorOptions options_;
  Logger logger_;
  Result<RecoveryRecord> recover_stopped_world(uint16_t pid, RecoveryRecord rec);
  // ford recoveries of `pids` (fenced) about to run in a stopped world: for
  // each pid not in `recs` yet and still registered, its record (`like`,
  // with the pid's lane slot) written as started and appended to `recs`.
  Status start_stopped_recoveries(const std::vector<uint16_t>& pids, const RecoveryRecord& like,
                                  std::vector<RecoveryRecord>* recs);
  // With every live compute node parked (or fenced): ford's log recovery of
  // each of `recs`, truncation, the latch scan, publication (steps and
  // timings filled in).
  Status repair_stopped_world(std::vector<RecoveryRecord>& recs, std::chrono::steady_clock::time_point pause_start);
  // One pid of recover_together() after step 1 (its record read).
  struct Pending {
    enum class Next : uint8_t { kNothing, kFinish, kStoppedWorld, kRepair };
    Next next = Next::kRepair;
    RecoveryRecord rec;
    bool record_exists = false;  // the pid has a record (at started: a ford or retirement record, or one a former
                                 // leader wrote)
    std::vector<LatchSite> latch_sites;  // found by log recovery, swept after publishing
  };
  // Step 1: reads the pid's record (and, without `known`, its member
  // record) and says what is left to do.
  Result<Pending> prepare(const FailedPid& f);
  // Steps 1..4 for `pids` (appended to *pending): their records read in one
  // round, every pid to repair fenced by one request per memory node, then
  // each repaired.
  Status prepare_and_repair(std::span<const FailedPid> pids, std::vector<Pending>* pending);
  // The same with the record already read (`existing`: none yet).
  Result<Pending> prepare(const FailedPid& f, const std::optional<RecoveryRecord>& existing);
  // Steps 2..4: fence, log recovery, truncation.
  Status repair(Pending& p);
  // Step 5's ZooKeeper write of one wave of recover_together (see
  // RecoveryCoordinatorOptions::publisher).
  Status publish(std::span<const Registry::ToPublish> wave);
  // A recover_together() in progress: the pids so far, in order, and what
  // was prepared and pushed of them.
  struct Batch {
    std::vector<FailedPid> pids;
    std::vector<Pending> pending;    // pids[0, pending.size()) prepared
    std::vector<uint16_t> repaired;  // pushed, in order
    int join_rounds = 0;             // failed_since answers that added pids
  };
  // Steps 1..5's push for the pids of `b` not prepared yet.
  Status repair_and_push(Batch& b);
  // Asks options.failed_since (once something was pushed, at most
  // kJoinRounds times) and repairs and pushes what it adds. How many joined.
  Result<size_t> join_failed_since(Batch& b);
  // Step 6: the post-publish sweep of the latches its logs name (its
  // failure is logged: what is left is stolen).
  void sweep(Pending& p);
  // Step 7 alone: the lane lease released, the record marked done.
  Result<RecoveryRecord> finish(RecoveryRecord rec);
  // A pid that is not repaired with the batch: done already, published
  // (finish), or ford's stopped-world recovery.
  Result<RecoveryRecord> conclude_alone(const Pending& p);
  // Waits until every compute member has parked for pause `epoch`; one
  // that failed meanwhile (failed_now) or does not park within
  // park_timeout is recovered within the pause (ford: all of them together
  // once the others parked). `why` names the pause in warnings. Returns how
  // many were recovered.
  Result<size_t> park_everyone(uint64_t epoch, std::chrono::steady_clock::time_point pause_start,
                               const std::string& why);
  // finish_relocations() of the registry's journal through this
  // coordinator's view (the moves of a rebuild cut short; see
  // replica_rebuild.h): before any pause ends, since a row may sit at two
  // slots of a survivor until then. Returns how many were finished.
  Result<uint64_t> finish_pending_moves();
  // A replacement's region may be the node's old one, or one an attempt
  // cut short fenced: its fence bitmap may hold pids recycled since (the
  // recycler unfences only live nodes), which live members or future ones
  // log in with once the node is back. After `failed` (sorted) was fenced
  // there: when the daemon has more pids fenced, unfences every live
  // member's and every recycled pid that is not failed. Returns how many.
  Result<size_t> unfence_pids_that_may_log_in(const Endpoint& node, const std::vector<uint16_t>& failed);
  // Compute members that have not acknowledged pause `epoch`, but `except`.
  Result<std::vector<uint16_t>> not_parked(uint64_t epoch, const std::vector<uint16_t>& except);
  // The authenticated push of recovered pids to every compute node.
  void push_failed(std::span<const uint16_t> pids);

  FailedPusher push_;
  StepHook* crash_;
  AdminSessions admin_;
};

}  // namespace pandora
