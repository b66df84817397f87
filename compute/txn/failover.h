// Memory-node fail-over inside a transaction (ARCHITECTURE.md 5; seed
// 4.3.2.5): a compute node is alive and knows the state of its own
// transactions, so when a memory node dies nothing needs recovering - each
// coordinator decides its transaction by the live replicas, as log recovery
// would:
//
//  * decided to commit (Protocol::decided_to_commit: validated and logged;
//    ford, which has no logging phase: its commit WRITEs begun): it commits -
//    its commit WRITEs are (re-)applied to every live replica (absolute
//    values, so re-applying is harmless) and its latches on live nodes
//    released;
//  * not: it aborts (AbortReason::kFailedOver: nothing was installed, run
//    it again), releasing its latches on live nodes (ford: after zeroing the
//    undo records it wrote on live nodes, as any ford abort does);
//  * a latch on the dead node is gone with the node; nobody takes the object
//    on its new primary before every compute node has parked for the
//    fail-over's pause (Cluster::apply_memory_failures), i.e. before this
//    transaction is decided.
//
// This applies only when every failed operation failed as a lost node does
// (disconnected, timed out) on nodes the failure detector declares failed
// (Cluster::declare_memory_failed) within ComputeConfig::memory_failover_wait;
// the coordinator waits for that declaration, letting the others run. Any
// other failure (fenced, a live node unreachable) halts the coordinator as
// before (compute/txn/abort.h). Every protocol: log-a-latch's intents left
// on live log nodes by an aborted transaction name latches it no longer
// holds, and recovery releases only latches its pid holds; ford's undo
// records and latches on the dead node went with it.
#pragma once

#include <cstdint>

#include "compute/txn/context.h"

namespace pandora::txn {

enum class FailoverOutcome : uint8_t {
  kNotApplicable,  // not a declared memory node's failure: the caller proceeds as before
  kCommitted,      // decided by the live replicas: committed
  kEnded,          // decided: aborted (or halted while deciding; TxnEngine::halted() says)
};

// Waits, yielding to the worker's other coordinators, until every node of
// `nodes` (bit = node index) is declared failed; false when the wait
// (ComputeConfig::memory_failover_wait) ends first, and at once once some
// coordinator of this process waited in vain already, for any node
// (Cluster::waited_out_mask): a partitioned compute node stops after one
// wait, not one per step of each coordinator nor one per memory node.
bool await_memory_declaration(TxnContext& ctx, uint64_t nodes);

// After a transport failure in the current transaction.
FailoverOutcome fail_over(TxnContext& ctx);

// The part of fail_over() that other endings of a transaction may need
// (ford's abort, when zeroing its undo records meets a WRITE lost with a
// node that died meanwhile): when every failed operation failed as a lost
// node does, on nodes declared failed (waiting for that as
// await_memory_declaration), forgets the latches and (ford) undo records
// held there and clears the failures.
// Returns those nodes (bit = node index), 0 when not so (nothing changed).
uint64_t absorb_memory_failures(TxnContext& ctx);

}  // namespace pandora::txn
