// The public API's names of abort reasons (include/pandora/txn.h), here so
// code that uses only the public API links without the engine.
#include "pandora/txn.h"

namespace pandora {

std::string_view abort_reason_name(AbortReason r) {
  switch (r) {
    case AbortReason::kNone: return "none";
    case AbortReason::kLatched: return "latched";
    case AbortReason::kValidationFailed: return "validation-failed";
    case AbortReason::kNotFound: return "not-found";
    case AbortReason::kDuplicate: return "duplicate";
    case AbortReason::kTableFull: return "table-full";
    case AbortReason::kTransport: return "transport";
    case AbortReason::kUser: return "user";
    case AbortReason::kInvalid: return "invalid";
    case AbortReason::kFailedOver: return "failed-over";
  }
  return "unknown";
}

}  // namespace pandora
