// Validation (OCC): after every latch CAS completed (the plan's order), one
// 16-byte READ (latch + version) per read-only item - abort if latched by a
// live owner or the version moved - and, per insert, a re-read of its probe
// path: the key committed elsewhere -> kDuplicate; another unoccupied slot
// on the path latched by a live owner (possibly an insert of the same key)
// -> kValidationFailed. A read that found a key absent re-reads its path
// the same way: the key present or a free slot latched -> kValidationFailed.
#pragma once

#include "compute/txn/context.h"

namespace pandora::txn {

// Plan step kPostValidation: posts the READs (no wait).
AbortReason post_validation(TxnContext& ctx);
// Plan step kCheckValidation: waits for them and checks.
AbortReason check_validation(TxnContext& ctx);

// Whether a read-only item latched by a live owner fails validation.
enum class ReadLatches : uint8_t { kConflict, kIgnored };
// check_validation with the latch rule given (kIgnored only re-creates a
// bug, compute/txn/mutations.h).
AbortReason check_validation_with(TxnContext& ctx, ReadLatches rule);

}  // namespace pandora::txn
