// What a PostgreSQL error means for the benchmark loop: the two SQLSTATEs a
// SERIALIZABLE transaction is expected to hit under contention (40001
// serialization_failure, 40P01 deadlock_detected) are retried with the same
// parameters, as the PostgreSQL manual asks of applications; anything else
// is a real failure that stops the run.
#pragma once

#include <string_view>

namespace pandora::workloads::pg {

enum class PgFailure { kSerialization, kDeadlock, kFatal };

PgFailure classify_sqlstate(std::string_view sqlstate);
inline bool is_retryable(std::string_view sqlstate) { return classify_sqlstate(sqlstate) != PgFailure::kFatal; }

}  // namespace pandora::workloads::pg
