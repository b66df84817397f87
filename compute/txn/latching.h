// Latching: taking a written item's latch (CAS 0 -> ctx.mine on the slot's
// latch word, with the READ of the slot behind it on the same connection),
// stealing stray latches of failed pids, and releasing latches.
//
// A failed CAS whose observed word belongs to a pid in failed-ids is
// retried as a steal (CAS observed -> mine, READ again); a live owner's
// word aborts kLatched. After latching, the slot must still hold the key
// (the address cache is only a hint); otherwise the latch is released and
// the key is looked up again along its path.
#pragma once

#include "compute/txn/context.h"

namespace pandora::txn {

// Posts the CAS + READ of replica r of `it` (READ of image_len bytes into
// it.image at r * slot_bytes).
void post_latch(TxnContext& ctx, Item& it, size_t r, uint32_t image_len);
// Folds a completed CAS into it.latches[r].state (no wait).
void refresh_latch(TxnContext& ctx, Item& it, size_t r);
// Waits for `it`'s posted CASes and steals stray latches; kNone when every
// latch of `it` is held.
AbortReason settle_item_latches(TxnContext& ctx, Item& it, uint32_t image_len);

// Latches an existing key's slot on its primary (locating it first when
// it.slot is 0), verifies the slot still holds the key and takes its
// version and value; then the protocol's after_latched_read.
AbortReason acquire_existing(TxnContext& ctx, Item& it);
// A delete frees the slot on every replica, so it latches the backups too.
AbortReason latch_backups(TxnContext& ctx, Item& it);
// A blind write: runs the plan's before_blind_latch hook, then latches at
// once when the protocol says so, else posts the CAS + READ and returns
// (commit settles it).
AbortReason latch_blind_write(TxnContext& ctx, Item& it);
// Settles one blind write whose CAS was posted earlier.
AbortReason settle_blind_write(TxnContext& ctx, Item& it);

// Plan step kSettleLatches: every outstanding latch CAS (blind writes)
// completed and is held.
AbortReason settle_latches(TxnContext& ctx);

// Releases the latches of `it` that this transaction holds (WRITE 0; only
// the owner writes its latch). The WRITEs are posted, not waited for; their
// ids go to ctx.releases.
void release_held(TxnContext& ctx, Item& it);
// Releases one latch word (the WRITE recorded in ctx.releases).
void post_release(TxnContext& ctx, size_t node, uint64_t slot);

}  // namespace pandora::txn
