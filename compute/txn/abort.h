// Abort: release exactly the latches this transaction holds - unless only
// recovery may decide it:
//  * the protocol says its latches must be kept (a record of it may survive
//    on a log node it cannot reach or clear: Protocol::keep_latches_on_abort);
//  * a latch CAS completed with a transport error (a timed-out CAS may
//    still land at the daemon, leaving a latch of this live pid that nobody
//    may steal), or a release failed.
// In those cases the coordinator halts (ctx.needs_recovery): its node must
// be recovered (pandora-bench exit status 7) before it runs more.
#pragma once

#include "compute/txn/context.h"

namespace pandora::txn {

// Ends the transaction as aborted with `r` (no-op if it already ended).
// ctx.detail should already say why, for kTransport and kInvalid.
AbortReason abort_transaction(TxnContext& ctx, AbortReason r);

// Ends the transaction with its latches still held, for recovery to decide
// from its log record, and halts this coordinator: its next record would
// overwrite the undecided one. The node is fenced or has lost a memory
// node, so it needs recovery either way.
void leave_undecided(TxnContext& ctx, AbortReason r, Status detail);

}  // namespace pandora::txn
