// What a benchmark workload provides to pandora-bench (and to tests).
//
//   std::vector<TableSpec> specs = w.tables();          // client.create_tables(specs)
//   w.load(loader);                                     // rows, through a BulkLoader
//   w.attach(client.tables());                          // or: check a previous load matches
//   Audit before = w.audit(session);                    // quiesced: nothing else running
//   ... every coordinator: TxnOutcome o = w.run_one(txn, rng); sum o.delta when committed ...
//   CheckResult r = w.check(session, {before.value, sum_of_deltas, uncertain});
//
// A workload is written against the public API only (include/pandora/:
// Txn, Session, BulkLoader, TableSpec), as an application would be: it
// never sees the engine, the cluster or raw slots. Each keeps one integer
// invariant that every committed transaction changes by a known amount
// (TxnOutcome::delta): the micro benchmark's sum of counters, SmallBank's
// total money. The end-of-run check reads the data back through read-only
// transactions and compares the value found with the value before the run
// plus the committed deltas of every coordinator of every process that ran,
// and checks what the workload's rules say about its rows (every row
// present, key-derived bytes intact, TPC-C's consistency conditions, ...).
// The storage below (replicas identical, no latch left held) is audited by
// `pandora-ctl verify` (recovery/table_audit.h). A Workload is immutable
// after construction: run_one() is called concurrently from every
// coordinator with that coordinator's Rng.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pandora/session.h"
#include "pandora/status.h"
#include "pandora/table.h"
#include "pandora/txn.h"
#include "workloads/bench/rng.h"

namespace pandora::workloads {

// One transaction attempt of the workload's mix. Not retried: an aborted
// transaction is counted and the next one is drawn afresh.
struct TxnOutcome {
  CommitOutcome commit;  // committed, or aborted with its reason
  uint32_t type = 0;     // index into Workload::txn_types()
  int64_t delta = 0;     // change to the invariant; counts only when committed
};

// The invariant's value in memory plus whatever structural problems the scan
// found (at most kMaxProblems listed, problem_count counts all).
struct Audit {
  static constexpr size_t kMaxProblems = 10;
  int64_t value = 0;
  uint64_t rows = 0;
  uint64_t problem_count = 0;
  std::vector<std::string> problems;

  void problem(std::string text);
  bool clean() const { return problem_count == 0; }
};

struct CheckInput {
  int64_t baseline = 0;         // Audit::value before the run
  int64_t committed_delta = 0;  // sum of TxnOutcome::delta of committed transactions, every process
  // Transactions whose outcome is unknown (ended by a transport failure
  // during commit): with any, an exact check is impossible and fails.
  uint64_t uncertain = 0;
};

struct CheckResult {
  bool passed = false;
  std::string message;  // one line: what was compared, and what failed
};

class Workload {
 public:
  virtual ~Workload() = default;

  virtual std::string_view name() const = 0;
  // Tables this workload needs; ids are distinct across workloads so several
  // can share one load.
  virtual std::vector<TableSpec> tables() const = 0;
  // Queues every row (the caller runs loader.finish()).
  virtual Status load(BulkLoader& loader) const = 0;
  // Checks that `loaded` (the tables as created) holds this workload's
  // tables as tables() would create them (value sizes, expected rows = the
  // configured key/account count). kMismatch naming the table and the flag
  // to change otherwise.
  virtual Status attach(std::span<const TableSpec> loaded) const;

  // The smallest log lane the mix's largest transaction needs (its log
  // record); 0: any. The driver checks it against the tables' lane size
  // (TableDirectory::lane_bytes, set at load by --lane-bytes).
  virtual uint32_t min_log_lane_bytes() const { return 0; }

  // Names of the transaction types of the mix (TxnOutcome::type indexes it).
  virtual const std::vector<std::string>& txn_types() const = 0;
  // Picks one transaction of the mix and runs it on `txn`: begin .. commit
  // (or abort). Thread-safe (const, no shared mutable state).
  virtual TxnOutcome run_one(Txn& txn, Rng& rng) const = 0;

  // What Audit::value means, e.g. "total money".
  virtual std::string_view invariant_name() const = 0;
  // Reads every row of the workload through read-only transactions on
  // `session` (nothing else may run meanwhile). Errors are failures to
  // reach memory; what is wrong with the data goes into Audit::problems.
  virtual Result<Audit> audit(Session& session) const = 0;

  // audit() and compare: value == baseline + committed_delta, no problems,
  // no uncertain transactions.
  CheckResult check(Session& session, const CheckInput& in) const;
};

// Reads keys [0, keys) of `table` through read-only transactions of up to
// `batch` reads each and calls `on_row` for each row found, in key order.
// A missing key or a read that keeps aborting on a quiet cluster is a
// problem in `audit`; a transport failure is the error returned.
using AuditRowFn = std::function<void(uint64_t key, std::span<const uint8_t> value)>;
Status read_table(Session& session, uint32_t table, std::string_view table_name, uint64_t keys,
                  const AuditRowFn& on_row, Audit& audit, uint32_t batch = 256);

}  // namespace pandora::workloads
