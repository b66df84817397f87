// Logging (pandora, log-a-latch): once validation succeeded, ONE LogRecord
// (updates, inserts, deletes, with undo images and old versions) is
// written with ONE WRITE to each of the f+1 log nodes of this pid, into
// this coordinator's lane (common/lane_map.h), and waited for before any
// commit WRITE. From the moment it is posted the transaction counts as
// logged: only recovery may decide it after a transport failure.
#pragma once

#include "common/log_record.h"
#include "compute/txn/context.h"

namespace pandora::txn {

// The entry of one written item without images: table, key, slot, shard,
// old version, op.
LogEntry log_entry_header(const Item& it);
// The full entry: undo image (updates, deletes), new image (updates, inserts).
LogEntry log_entry(const Item& it);
// A record with the entry of every item the transaction installs.
LogRecord build_log_record(TxnContext& ctx);
// Encodes `rec` into the lane and posts it to every log node (waiting per
// node when stepwise). kInvalid when it does not fit the lane.
AbortReason post_log_record(TxnContext& ctx, const LogRecord& rec);

// Plan step kPostLog: the transaction's record, once (no-op without writes
// or when already logged).
AbortReason post_log(TxnContext& ctx);
// Plan step kAwaitLog: every WRITE posted so far completed.
AbortReason await_log(TxnContext& ctx);

}  // namespace pandora::txn
