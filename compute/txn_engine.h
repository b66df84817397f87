// The transaction engine: compute/txn.h implemented over one coordinator's
// RemoteOps, for the three protocol modes (ARCHITECTURE.md 4).
//
// The engine only sequences phases; each phase is a file under
// compute/txn/ whose header reads as its API:
//
//   execution.h   read / update / write / insert / remove (locate.h: finding slots)
//   latching.h    latch CAS + READ, stealing stray latches, releasing
//   validation.h  OCC validation of read objects and insert paths
//   logging.h     the log record (pandora, log-a-latch)
//   commit.h      commit WRITEs, unlatch after committed is reported
//   abort.h       release exactly what is held, or halt for recovery
//   report.h      counters and traces
//
// What differs between pandora, ford and log-a-latch is a policy object
// (compute/txn/protocol.h; one file per mode, chosen at run time), and the
// order of commit() is that protocol's plan (compute/txn/plan.h):
//
//   pandora: settle-latches -> post-validation -> check-validation ->
//            post-log -> await-log -> commit-writes -> report -> unlatch
//
// commit() reports committed before the latches are released and does not
// wait for the releases: they complete in the background and the next
// begin() (or the scheduler's drain at the end of a task) collects them. A
// release that failed, a latch CAS whose outcome is unknown after a
// transport failure, or a logged transaction hit by one all halt the
// coordinator: halted() is true and its node must be recovered.
//
// Test builds (PANDORA_BUG_SWITCHES) apply the bug switches of
// compute_config.h as plan mutations (compute/txn/mutations.h).
//
// Test hooks: set_step_hook() attaches a StepHook told of every completed
// step (compute/step_hook.h: crash injection, simulation; a null check when
// detached);
// set_observer() receives a TxnTrace (compute/txn_trace.h) of every
// transaction at commit or abort (built only while attached).
#pragma once

#include <cstdint>
#include <span>

#include "common/latch.h"
#include "compute/address_cache.h"
#include "compute/cluster.h"
#include "compute/step_hook.h"
#include "compute/remote_ops.h"
#include "compute/txn.h"
#include "compute/txn/context.h"
#include "compute/txn/counters.h"
#include "compute/txn_trace.h"

namespace pandora {

// FORD mode's latch value: owner-less (pid 0, coordinator 0, seq 1). Pid 0 is
// never issued, so no failed-ids entry ever matches it.
inline constexpr uint64_t kFordLatch = encode_latch({0, 0, 1});

class TxnEngine final : public Txn {
 public:
  // `coordinator`: the coordinator id (latch field, lane).
  TxnEngine(Cluster& cluster, RemoteOps& ops, AddressCache& cache, uint16_t coordinator);

  void begin() override;
  ItemResult<std::span<const uint8_t>> read(uint32_t table, uint64_t key) override;
  ItemResult<std::optional<std::span<const uint8_t>>> read_if_present(uint32_t table, uint64_t key) override;
  ItemResult<std::span<uint8_t>> update(uint32_t table, uint64_t key) override;
  AbortReason write(uint32_t table, uint64_t key, std::span<const uint8_t> value) override;
  AbortReason insert(uint32_t table, uint64_t key, std::span<const uint8_t> value) override;
  AbortReason remove(uint32_t table, uint64_t key) override;
  CommitOutcome commit() override;
  void abort() override;

  // The latch word of the current transaction (kFordLatch in ford mode).
  uint64_t latch_word() const { return ctx_.mine; }
  uint16_t coordinator() const { return ctx_.coordinator; }
  // Remote ops of the last finished transaction, by type.
  const OpCounters& last_txn_ops() const { return ctx_.acct.last_ops; }
  const TxnCounters& counters() const { return ctx_.acct.counters; }
  // Detail of the last kTransport / kInvalid abort (or of the halt).
  const Status& last_detail() const { return ctx_.detail; }
  // commit()'s steps in order, e.g. "settle-latches -> ... -> unlatch".
  std::string plan() const { return ctx_.plan.to_string(); }

  // Receives a TxnTrace of every transaction that ends (commit or abort)
  // from now on; null detaches. The trace is only built while attached.
  void set_observer(TxnObserver* observer) { ctx_.acct.observer = observer; }
  // Told of every completed step (compute/step_hook.h); null detaches. Not owned.
  void set_step_hook(StepHook* hook) { ctx_.step_hook = hook; }

  // This coordinator left state only recovery can clean up - a logged
  // transaction undecided after a transport failure, a latch CAS whose
  // outcome is unknown, or a latch release that failed - and runs no more
  // transactions: its node must be recovered. A failed release of a
  // committed transaction shows here as soon as its completion arrived
  // (at the latest once the next begin() or the scheduler's drain waited).
  bool halted() const;
  // halted() because a logged transaction was left undecided (not for a
  // failed release of a committed one, nor a latch CAS of an aborted one):
  // that transaction's outcome is unknown until recovery.
  bool left_undecided() const { return ctx_.undecided; }

 private:
  AbortReason start_call(uint32_t table, const TableEntry** t, const std::span<const uint8_t>* value = nullptr);
  // Aborts the transaction for `r` coming from a phase (a transport failure
  // gets its detail first).
  AbortReason abort_for(AbortReason r);
  AbortReason transport_failure();
  // ctx_.detail names the first failed operation's node (unless set already).
  void describe_transport_failure();
  CommitOutcome ended();

  txn::TxnContext ctx_;
  bool active_ = false;
};

}  // namespace pandora
