// Builders for hand-made histories in the history tests.
//
//   HistoryBuilder h;
//   h.txn(0, 100, 200).items = {upd(1, 0), rd(2, 0)};   // coordinator 0, [100, 200] ns
//   h.txn(1, 150, 250, false).items = {upd(2, 0)};       // aborted
//   Report r = check(h.txns);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/txn_trace.h"

namespace pandora::history::testing {

// Key `key` of table `table`, reading version `v`.
inline TraceItem rd(uint64_t key, uint64_t v, uint32_t table = 0) {
  TraceItem it;
  it.table = table;
  it.key = key;
  it.op = TraceOp::kRead;
  it.read_version = v;
  return it;
}

// An update that read `rv` and installed rv + 1.
inline TraceItem upd(uint64_t key, uint64_t rv, uint32_t table = 0) {
  TraceItem it = rd(key, rv, table);
  it.op = TraceOp::kUpdate;
  it.write_version = rv + 1;
  return it;
}

// A blind write (insert) installing `wv`.
inline TraceItem ins(uint64_t key, uint64_t wv, uint32_t table = 0) {
  TraceItem it;
  it.table = table;
  it.key = key;
  it.op = TraceOp::kInsert;
  it.write_version = wv;
  return it;
}

inline TraceItem del(uint64_t key, uint64_t wv, uint32_t table = 0) {
  TraceItem it = ins(key, wv, table);
  it.op = TraceOp::kDelete;
  return it;
}

// `it` at slot `slot` (region offset; 0 = unknown).
inline TraceItem at(TraceItem it, uint64_t slot) {
  it.slot = slot;
  return it;
}

struct HistoryBuilder {
  std::vector<TxnTrace> txns;
  uint32_t next_seq = 1;

  // Appends a transaction of coordinator `coord` (pid 1) and returns it;
  // aborted ones get AbortReason::kValidationFailed.
  TxnTrace& txn(uint16_t coord, uint64_t begin_ns, uint64_t end_ns, bool committed = true) {
    TxnTrace t;
    t.pid = 1;
    t.coordinator = coord;
    t.seq = next_seq++;
    t.begin_ns = begin_ns;
    t.end_ns = end_ns;
    t.committed = committed;
    t.reason = committed ? AbortReason::kNone : AbortReason::kValidationFailed;
    txns.push_back(t);
    return txns.back();
  }
};

// Slots of the moved-key history below.
inline constexpr uint64_t kSlotA = 4096;
inline constexpr uint64_t kSlotB = 8192;

// Key 1 lives at slot A (versions 1..3, the last the delete's tombstone),
// is re-inserted at slot B, whose counter starts it at version 1 again, and
// is written there up to v3; key 2 (slot 12288) is read and written along
// the way. Strictly serializable (it is a serial execution in real-time
// order, with T2/T3 and T6/T7 overlapping), but the version numbers of key 1
// repeat: a checker that ignores the slot sees two writers of each of
// key 1's v1..v3, so false lost updates and real-time cycles.
inline std::vector<TxnTrace> moved_key_history() {
  constexpr uint64_t kSlotC = 12288;
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {at(ins(1, 1), kSlotA)};
  h.txn(0, 300, 400).items = {at(upd(1, 1), kSlotA), at(upd(2, 4), kSlotC)};
  h.txn(1, 350, 450).items = {at(rd(1, 1), kSlotA)};  // overlaps T2, serialized before it
  TraceItem gone = at(del(1, 3), kSlotA);
  gone.read_version = 2;
  h.txn(0, 500, 600).items = {at(rd(2, 5), kSlotC), gone};
  h.txn(1, 700, 800).items = {at(ins(1, 1), kSlotB)};
  h.txn(0, 900, 1000).items = {at(upd(1, 1), kSlotB), at(rd(2, 5), kSlotC)};
  h.txn(1, 950, 1050).items = {at(rd(1, 2), kSlotB), at(upd(2, 5), kSlotC)};  // after T6
  h.txn(0, 1100, 1200).items = {at(upd(1, 2), kSlotB), at(rd(2, 6), kSlotC)};
  return h.txns;
}

}  // namespace pandora::history::testing
