// Commit: install the new values on every replica, then - after committed
// is reported - release the latches without waiting for the releases.
//
// Per replica, ordered WRITEs on one connection: the key (inserts only),
// the value, then version+1 and meta last, so a reader that sees the new
// version sees the whole new value; the latch word is never overwritten.
// A failed commit WRITE leaves the transaction undecided (latches kept for
// recovery, the coordinator halts), never aborted - unless the failure was
// a memory node's crash, decided by the live replicas (txn/failover.h).
//
// The releases complete in the background of the coordinator: the next
// begin() (or the scheduler's drain when the task ends) waits for them and
// collect_releases() checks them. A release that failed leaves a latch of
// this live pid that nobody may steal, so the coordinator halts and reports
// that its node needs recovery (TxnEngine::halted()), like a transport
// failure after logging.
#pragma once

#include "compute/txn/context.h"

namespace pandora::txn {

// Plan step kCommitWrites: posts every commit WRITE and waits. A failure
// returns kTransport with ctx.detail set (the transaction is logged: the
// engine keeps its latches, or fails it over: txn/failover.h).
AbortReason commit_writes(TxnContext& ctx);
// Posts the commit WRITEs of every installed item to each of its replicas
// except those in `skip_nodes` (bit = node index); no wait.
void post_commit_writes(TxnContext& ctx, uint64_t skip_nodes = 0);
// Plan step kUnlatch: posts the release of every latch held (waits only
// when stepwise, for the crash points); never fails.
AbortReason unlatch(TxnContext& ctx);

// A release posted since the last collect_releases() already completed with
// an error (no wait).
bool release_failed(const TxnContext& ctx);

// The releases posted since the last call (all completed: call after
// wait_all). false when one failed: ctx.needs_recovery and ctx.detail are set.
bool collect_releases(TxnContext& ctx);

}  // namespace pandora::txn
