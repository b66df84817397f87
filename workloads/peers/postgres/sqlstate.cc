#include "workloads/peers/postgres/sqlstate.h"

namespace pandora::workloads::pg {

PgFailure classify_sqlstate(std::string_view sqlstate) {
  if (sqlstate == "40001") return PgFailure::kSerialization;
  if (sqlstate == "40P01") return PgFailure::kDeadlock;
  return PgFailure::kFatal;
}

}  // namespace pandora::workloads::pg
