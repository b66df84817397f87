// Checks a transaction history for (strict) serializability, Adya-style
// (seed section 2.5): it builds the direct serialization graph over the
// COMMITTED transactions and looks for cycles, plus the non-cycle
// phenomena a versioned history shows directly.
//
// Objects are incarnations. TxnTrace versions are per-slot counters: an
// update or delete installs old+1 in the key's slot, an insert picks a free
// slot and installs that slot's (replica maximum) version + 1. So a key
// deleted and re-inserted into a different slot restarts from that slot's
// counter: its numbers may go down or repeat ones it had before. The
// checker's object is therefore an incarnation (table, key, slot), slot
// being TraceItem::slot; a key that comes back to a slot it had before is
// the same incarnation again, which is sound because a slot's counter never
// goes down. Items with slot 0 (histories written before the slot was
// recorded, reads of an absent key) form the incarnation (table, key, 0),
// which for an old history is exactly the key, as before.
// Cross-incarnation order is NOT checked: no ww/wr/rw edge ever joins two
// incarnations of a key (their numbers are not comparable). Transactions on
// different incarnations are ordered only by real-time edges (and by paths
// through other objects), and nothing verifies that one incarnation ended
// (a committed delete) before the next began: two live incarnations of one
// key at once (a duplicate insert) go unnoticed.
//
// Version order. Within an incarnation the slot's counter grows by one per
// committed write, so the version numbers ARE the version order. Writers of
// a version may be missing from the history (the initial state, writers
// that recovery rolled forward, processes that recorded nothing). A version
// that committed transactions read but no recorded committed transaction
// installed gets a stand-in writer: a graph node of its own, placed in the
// version order like a recorded writer (version order = write order), with
// no real-time edges (its time is unknown). So unrecorded versions are
// ordered against each other and against recorded ones: a transaction that
// reads v4 and a later one that reads v3 close the cycle T -rt-> T' -rw->
// writer(v4) -wr-> T, which the old "readers precede the next recorded
// writer" rule missed (the state going backwards, as a recovery bug would
// make it). Versions nobody read need no writer: edges link their
// neighbours.
//   ww  writer of v        -> writer of the next written version
//   wr  writer of v        -> every committed reader of v
//   rw  reader of v        -> writer of the next written version
// ("writer" being recorded or a stand-in). The initial state
// (initial_state.h: the header's, or for an unknown one the lowest
// unrecorded version read, below every recorded write) has a stand-in too,
// marked as the initial state.
//   rt  (strict serializability, CheckOptions::realtime) T1 -> T2 when
//       T1.end_ns < T2.begin_ns. Encoded with O(n) edges through a chain of
//       time points ordered by end time, which preserves exactly the
//       reachability of the O(n^2) relation; reports show direct T1 -> T2.
// A committed update's read (rv) is a read: its write installed rv+1, so it
// observed rv. Self edges are dropped.
//
// Anomalies:
//   Cycles, one reported per strongly connected component of the
//   dependency graph (ww+wr+rw), classified by the weakest edge set that
//   still has a cycle in that component: G0 (ww only), G1c (ww+wr),
//   G-single (exactly one rw; found by a bounded search, else reported as
//   G2, which is then correct but less specific), G2 (rw). With real-time
//   edges, each component of the full graph holding a transaction on no
//   dependency cycle yields one more cycle through that transaction, marked
//   `realtime` (a strict-serializability violation that serializability
//   allows); its kind names its other edges (Elle's "G2-realtime" etc.).
//   G1a (aborted read): a committed read of a version that no committed
//     transaction installed but an aborted one did. (Versions of aborted
//     transactions are reused by the next committed writer, so a version
//     that a committed transaction installed is never blamed on an abort.)
//   lost-update: two or more committed transactions installed the same
//     version of an object.
//   garbage-read: a committed read of a version that no transaction in the
//     history installed and that is not the incarnation's initial state
//     (initial_state.h): above a recorded write, a second pre-run version,
//     or any unrecorded version of a key that was absent when the run
//     began. Turn off with CheckOptions::complete = false for partial
//     histories (their unrecorded versions keep their stand-in writers, so
//     an order they contradict is still a cycle). Reads below the loaded
//     version (InitialState's floor) are garbage reads in both modes: no
//     writer can install a version below the one the run began with.
//     Reads of an absent key (present false) are exempt: they read no
//     version.
//   internal: a committed record that breaks the trace contract (an update
//     that did not install read version + 1, a write of version 0).
// G1b (intermediate read) cannot occur: a Pandora transaction installs one
// version per object.
// All of these are per incarnation: "an object" and "version v" above mean
// one (table, key, slot) and its slot's counter.
//
// Cost: O(A log A + T log T) time for A accesses and T transactions, and
// memory linear in A (about 100 bytes per access at the peak, edges
// included); the traces themselves are not kept (Checker::add() copies out
// what it needs). history_bench (Release): 1e6 transactions, 5.6e6
// accesses, strict serializability: about 2 s and 528 MiB (485 MiB before
// each access carried its slot). At most 2^28 transactions and 2^29
// accesses (stand-ins take access numbers too).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compute/txn_trace.h"
#include "litmus/history/dsg.h"
#include "compute/trace/history.h"
#include "compute/trace/initial_state.h"

namespace pandora::history {

std::string_view edge_type_name(EdgeType t);  // "ww", "wr", "rw", "rt"
// How reports name an object: "t<table>:k<key>", and "t<table>:k<key>@<slot>"
// for an incarnation with a known (non-zero) slot.
std::string object_name(uint32_t table, uint64_t key, uint64_t slot = 0);

enum class AnomalyKind : uint8_t {
  kG0 = 0,
  kG1a,
  kG1c,
  kGSingle,
  kG2,
  kLostUpdate,
  kGarbageRead,
  kInternal,
};
inline constexpr size_t kAnomalyKinds = 8;
// "G0", "G1a", "G1c", "G-single", "G2", "lost-update", "garbage-read",
// "internal".
std::string_view anomaly_kind_name(AnomalyKind k);

struct CheckOptions {
  // Add real-time edges: check strict serializability, not only
  // serializability.
  bool realtime = true;
  // Every committed writer is in the history: report garbage reads.
  bool complete = true;
};

// Who a graph node is: a recorded transaction, or the stand-in writer of a
// version nobody recorded installing ("Version order").
enum class TxnRole : uint8_t { kRecorded = 0, kInitial, kUnrecorded };

// A transaction as reports name it.
struct TxnRef {
  TxnRole role = TxnRole::kRecorded;
  // Recorded transactions.
  uint64_t index = 0;  // 0-based position in the history (transaction lines of one file, in order)
  uint16_t pid = 0;
  uint16_t coordinator = 0;
  uint32_t seq = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  bool committed = false;
  // Stand-ins: the incarnation and the version they installed.
  uint32_t table = 0;
  uint64_t key = 0;
  uint64_t slot = 0;
  uint64_t version = 0;

  bool standin() const { return role != TxnRole::kRecorded; }
};

// One edge of a cycle: Anomaly::txns[from] -> txns[to].
struct CycleStep {
  uint32_t from = 0;
  uint32_t to = 0;
  EdgeType type = EdgeType::kWW;
  // The object and versions behind a dependency edge: ww from_version (by
  // `from`) then to_version (by `to`); wr both the version read; rw the
  // version `from` read and the next version, installed by `to`. Zero for rt
  // (the transactions' times explain it). `slot` names the incarnation.
  uint32_t table = 0;
  uint64_t key = 0;
  uint64_t slot = 0;
  uint64_t from_version = 0;
  uint64_t to_version = 0;
};

struct Anomaly {
  AnomalyKind kind = AnomalyKind::kG0;
  // Cycles: the cycle needs real-time edges.
  bool realtime = false;
  // Cycles: in cycle order, starting at the lowest history index. Others:
  // the transactions involved (the writers first).
  std::vector<TxnRef> txns;
  std::vector<CycleStep> steps;  // cycles only; steps[i] leaves txns[i]
  // Non-cycle anomalies: the object (incarnation) and version involved.
  uint32_t table = 0;
  uint64_t key = 0;
  uint64_t slot = 0;
  uint64_t version = 0;
  // One sentence saying what happened, naming transactions as T1, T2, ...
  // (1-based positions in `txns`).
  std::string detail;

  bool is_cycle() const { return !steps.empty(); }
};

struct Summary {
  uint64_t transactions = 0;
  uint64_t committed = 0;
  uint64_t aborted = 0;
  // Distinct objects, i.e. incarnations (table, key, slot), and accesses the
  // graph is built from: committed reads and writes (an update is both) and
  // aborted writes.
  uint64_t objects = 0;
  uint64_t accesses = 0;
  // Stand-in writers of versions read but not recorded as written, and how
  // many of them are initial states.
  uint64_t standins = 0;
  uint64_t initial_standins = 0;
  // Edges by EdgeType. Real-time edges are counted as encoded (about 3 per
  // committed transaction), not as the O(n^2) relation they stand for.
  std::array<uint64_t, 4> edges{};
  uint64_t dependency_components = 0;  // non-trivial SCCs of ww+wr+rw
  uint64_t realtime_components = 0;    // non-trivial SCCs with rt (0 when off)
};

struct Report {
  CheckOptions options;
  Summary summary;
  std::vector<Anomaly> anomalies;
  std::array<uint64_t, kAnomalyKinds> counts{};  // anomalies by kind

  bool clean() const { return anomalies.empty(); }
  uint64_t count(AnomalyKind k) const { return counts[static_cast<size_t>(k)]; }
};

// Streaming checker: add() every transaction of the history (any order),
// then finish() once.
class Checker {
 public:
  explicit Checker(CheckOptions options = {}, InitialState initial = {});
  ~Checker();
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  void add(const TxnTrace& t);
  Report finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

Report check(const std::vector<TxnTrace>& txns, CheckOptions options = {}, const InitialState& initial = {});
Report check(const History& history, CheckOptions options = {});

}  // namespace pandora::history
