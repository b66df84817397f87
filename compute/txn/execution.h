// Execution: the Txn calls (compute/txn.h) against remote memory.
//  * read: READ the slot on the primary, remember its version; kLatched if
//    a live owner holds the latch.
//  * update / remove: latch (compute/txn/latching.h) and read under the
//    latch; a delete latches every replica.
//  * write (blind): locate, then post the latch and return - commit()
//    settles it (or latch at once, if the protocol needs the image now).
//  * insert: read the whole probe path on the primary (absent-key check),
//    then take the first slot unoccupied there by CAS-latching it on EVERY
//    replica and reading each replica's slot header: memory nodes share the
//    table geometry but hold different shards, so a slot free on the
//    primary may hold another shard's key on a backup; such a slot is
//    released and the next one tried. The row's version becomes
//    max(replica versions)+1, so all replicas agree from then on.
// Each returns kNone, or the reason the transaction must abort (the engine
// then aborts it; ctx.detail says more for kInvalid).
#pragma once

#include <span>

#include "compute/txn/context.h"

namespace pandora::txn {

// The item for (table, key) in this transaction, or null.
Item* find_item(TxnContext& ctx, uint32_t table, uint64_t key);

AbortReason execute_read(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key, Item** out);
// execute_read, except that a key absent from its path (or deleted by this
// transaction) is kNone with *out null; the absence is then validated at
// commit (AbsentKey).
AbortReason execute_read_if_present(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key, Item** out);
AbortReason execute_update(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key, Item** out);
AbortReason execute_write(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key,
                          std::span<const uint8_t> value);
AbortReason execute_insert(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key,
                           std::span<const uint8_t> value);
AbortReason execute_remove(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key);

}  // namespace pandora::txn
