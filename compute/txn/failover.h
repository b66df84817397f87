// Memory-node fail-over inside a transaction (ARCHITECTURE.md 5; seed
// 4.3.2.5): a compute node is alive and knows the state of its own
// transactions, so when a memory node dies nothing needs recovering - each
// coordinator decides its transaction by the live replicas, as log recovery
// would:
//
//  * logged (validated, its record on the live log nodes): it commits - its
//    commit WRITEs are (re-)applied to every live replica (absolute values,
//    so re-applying is harmless) and its latches on live nodes released;
//  * not logged: it aborts (AbortReason::kFailedOver: nothing was written,
//    run it again), releasing its latches on live nodes;
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
// before (compute/txn/abort.h). Mode pandora only: ford and log-a-latch
// transactions also wrote undo records or intents to lanes on the dead
// node's peers, which this decision does not account for.
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
// (ComputeConfig::memory_failover_wait) ends first.
bool await_memory_declaration(TxnContext& ctx, uint64_t nodes);

// After a transport failure in the current transaction.
FailoverOutcome fail_over(TxnContext& ctx);

}  // namespace pandora::txn
