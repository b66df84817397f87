// What a coordinator counts: commits, aborts by reason, remote operations by
// type. Every count is tied to its enum at compile time, so a new
// AbortReason or operation type cannot be silently dropped or overflow an
// array.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/transport/transport.h"
#include "compute/remote_ops.h"
#include "compute/txn.h"
#include "compute/txn_trace.h"

namespace pandora {

// Every AbortReason, by value. The switch lists all of them and a missing
// one is a compile error here, so a reason added to compute/txn.h must be
// counted (and, if it is the new last one, kAbortReasons grows with it).
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
constexpr size_t abort_reason_index(AbortReason r) {
  switch (r) {
    case AbortReason::kNone:
    case AbortReason::kLatched:
    case AbortReason::kValidationFailed:
    case AbortReason::kNotFound:
    case AbortReason::kDuplicate:
    case AbortReason::kTableFull:
    case AbortReason::kTransport:
    case AbortReason::kUser:
    case AbortReason::kInvalid:
    case AbortReason::kFailedOver:
      return static_cast<size_t>(r);
  }
  return SIZE_MAX;
}
#pragma GCC diagnostic pop

// The last AbortReason; the count of reasons (TxnCounters::aborts) follows.
inline constexpr AbortReason kLastAbortReason = AbortReason::kFailedOver;
inline constexpr size_t kAbortReasons = abort_reason_index(kLastAbortReason) + 1;
static_assert(abort_reason_index(static_cast<AbortReason>(kAbortReasons)) == SIZE_MAX,
              "a reason lies beyond kLastAbortReason: move kLastAbortReason to the new last reason");
constexpr bool abort_reasons_dense() {
  for (size_t i = 0; i < kAbortReasons; ++i) {
    if (abort_reason_index(static_cast<AbortReason>(i)) != i) return false;
  }
  return true;
}
static_assert(abort_reasons_dense(), "AbortReason values index count arrays: keep them dense from 0");

// OpCounters (compute/remote_ops.h) has one field per OpType.
static_assert(static_cast<size_t>(OpType::kFaa) == 4 && sizeof(OpCounters) == 4 * sizeof(uint64_t),
              "OpCounters must count every OpType (reads, writes, cas, faa)");

struct TxnCounters {
  uint64_t commits = 0;
  std::array<uint64_t, kAbortReasons> aborts{};  // by AbortReason
  OpCounters committed_ops;                      // remote ops of committed transactions
  OpCounters all_ops;                            // of every transaction
  uint64_t memory_failovers = 0;                 // transactions decided by the live replicas (txn/failover.h)

  uint64_t total_aborts() const {
    uint64_t n = 0;
    for (uint64_t a : aborts) n += a;
    return n;
  }
  TxnCounters& operator+=(const TxnCounters& o);
};

namespace txn {

// The bookkeeping of one coordinator's transactions.
struct TxnAccounting {
  TxnCounters counters;
  OpCounters start_ops;  // ops counters at begin()
  OpCounters last_ops;   // of the last finished transaction
  TxnObserver* observer = nullptr;
  uint64_t begin_ns = 0;  // realtime, only while observed
};

}  // namespace txn
}  // namespace pandora
