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

}  // namespace pandora::history::testing
