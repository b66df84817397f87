// What a finished transaction did, for history recording and checking
// (Adya-style: reads name the version they observed, writes the version they
// installed; versions of one object increase by exactly 1 per committed
// write, insert or delete, so they order each object's versions).
//
// The engine fills a TxnTrace per transaction when an observer is attached
// (TxnEngine::set_observer) and hands it over at commit or abort. Recording
// costs nothing when no observer is attached.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/txn.h"

namespace pandora {

enum class TraceOp : uint8_t {
  kRead = 1,    // read(): version observed (validated at commit)
  kUpdate = 2,  // update()/write(): read `read_version`, installed read_version+1
  kInsert = 3,  // insert(): installed `write_version` (key absent before)
  kDelete = 4,  // remove(): installed `write_version` as a tombstone
};

struct TraceItem {
  uint32_t table = 0;
  uint64_t key = 0;
  uint64_t slot = 0;  // region offset of the slot read / written (versions count per slot); 0 = unknown
  TraceOp op = TraceOp::kRead;
  bool present = true;         // reads: false when the key was absent
  uint64_t read_version = 0;   // kRead, kUpdate: the version observed
  uint64_t write_version = 0;  // kUpdate, kInsert, kDelete: the version installed (if committed)
  // First 8 bytes of the value read / written (little-endian), so
  // application-level checkers (litmus asserts) can be cross-checked.
  uint64_t read_value = 0;
  uint64_t write_value = 0;
};

struct TxnTrace {
  uint16_t pid = 0;
  uint16_t coordinator = 0;
  uint32_t seq = 0;         // the latch word's txn sequence
  uint64_t begin_ns = 0;    // CLOCK_REALTIME at begin()
  uint64_t end_ns = 0;      // CLOCK_REALTIME when the outcome was known
  bool committed = false;
  AbortReason reason = AbortReason::kNone;
  std::vector<TraceItem> items;  // in access order
};

class TxnObserver {
 public:
  virtual ~TxnObserver() = default;
  // Called on the coordinator's thread when the outcome is known. Must not
  // block for long (it runs inside the coordinator's coroutine).
  virtual void on_txn_end(const TxnTrace& trace) = 0;
};

}  // namespace pandora
