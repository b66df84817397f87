// Reporting a transaction's end: counters (compute/txn/counters.h) and, while
// an observer is attached, its TxnTrace (compute/txn_trace.h).
#pragma once

#include "compute/txn/context.h"

namespace pandora::txn {

// At begin(): the op counters to subtract, and the trace's start time.
void start_accounting(TxnContext& ctx);
// Counts the transaction as committed or aborted with `r`; hands the trace
// to the observer.
void account_finish(TxnContext& ctx, bool committed, AbortReason r);

// Plan step kReport: every commit WRITE landed; from here the transaction
// is committed (the inserts' addresses go to the cache). It is counted
// (account_finish) when commit() returns, so that its op counts include
// the latch releases it posted.
AbortReason report_committed(TxnContext& ctx);

}  // namespace pandora::txn
