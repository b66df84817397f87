// Exports a history for Elle's rw-register checker (jepsen-io/elle,
// elle.rw-register; also elle-cli's "rw-register" model), in the Jepsen
// history format Elle reads: EDN, one operation map per line, in real-time
// order, each transaction as an invocation and a completion:
//
//   {:type :invoke, :f :txn, :value [[:r 5 nil] [:w 5 8]], :process 196609, :time 0, :index 0}
//   {:type :ok, :f :txn, :value [[:r 5 7] [:w 5 8]], :process 196609, :time 4200, :index 1}
//
// Mapping:
//   :type     :invoke at begin_ns; :ok (committed) or :fail (aborted) at
//             end_ns. Invocations carry nil for every read (the values are
//             not known yet), as Jepsen clients do; a :fail repeats its
//             invocation's value.
//   :f        always :txn.
//   :value    micro-ops [:r object version] / [:w object version]; objects
//             and values as export_common.h describes: one object per
//             incarnation (table, key, slot) of a key, object = (incarnation
//             << 8 | table) << 40 | key, which is table << 40 | key for a
//             key that never moved to another slot; value = version number
//             (per slot, so per object). Elle checks each incarnation's
//             versions on their own and relates incarnations of one key
//             only through real time.
//   initial   the initial state is an explicit transaction (process
//             kElleInitialProcess, time 0, indexes 0 and 1: before every
//             other invocation) writing each incarnation's initial version
//             (export_common.h); no committed read is nil.
//   :process  pid << 16 | coordinator: one Jepsen process per coordinator,
//             which runs one transaction at a time, so invocations and
//             completions alternate per process as Jepsen requires.
//   :time     nanoseconds since the earliest begin_ns in the history.
//   :index    0, 1, 2, ... in file order.
// Order: by time; at equal times completions come before invocations (so a
// coordinator's next transaction starting in the nanosecond its previous
// one ended stays well-formed), except that a transaction that began and
// ended in the same nanosecond completes after everything invoked then. Elle
// infers real-time order from this file order, which for transactions that
// touch at one nanosecond is one tie stricter than the checker's
// end < begin.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"
#include "compute/trace/history.h"

namespace pandora::history {

// Above every pid << 16 | coordinator.
inline constexpr uint64_t kElleInitialProcess = uint64_t{1} << 32;

// Writes the export to `out` (not closed).
Status export_elle(const History& history, std::FILE* out);
// The export as a string (tests, small histories).
Result<std::string> elle_text(const History& history);

}  // namespace pandora::history
