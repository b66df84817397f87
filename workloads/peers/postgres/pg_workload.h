// A workload as pandora-pg-bench runs it against PostgreSQL: schema and
// load, the transaction mix, and the end-of-run consistency check.
//
// draw() picks a transaction and its parameters from the thread's Rng; the
// runner then executes body() inside BEGIN ... COMMIT, and re-executes the
// same body (same parameters) when PostgreSQL reports a serialization
// failure or a deadlock (sqlstate.h). A body returns how it ended: commit,
// or a rollback the transaction itself decided (SmallBank's insufficient
// funds, TPC-C's 1% invalid items, TATP's rows that do not exist).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/bench/rng.h"
#include "workloads/peers/postgres/pg_conn.h"

namespace pandora::workloads::pg {

// How a transaction ended; the names are those pandora-bench uses for the
// same abort reasons ("user", "not-found", "duplicate").
enum class PgEnd : uint8_t { kCommit, kUser, kNotFound, kDuplicate };

struct PgBodyResult {
  PgEnd end = PgEnd::kCommit;
  int64_t net = 0;  // what a commit adds to the workload's invariant (SmallBank: cents; TATP: rows)
};

struct PgTxn {
  uint32_t type = 0;           // index into txn_types()
  bool read_only = false;      // BEGIN ... READ ONLY (PostgreSQL's SSI needs fewer locks)
  std::function<PgBodyResult(PgConn&)> body;
};

struct PgCheck {
  bool passed = false;
  std::string message;
};

// The verdict of a check: passed with `pass_message` when nothing was
// found, else "check FAILED:" and one line per problem.
PgCheck check_verdict(const std::vector<std::string>& problems, std::string pass_message);
// Runs each (what, sql) rule, a query counting violations, and adds
// "what: N" to `problems` for each that counts any.
void count_violations(PgConn& c, const std::vector<std::pair<std::string, std::string>>& rules,
                      std::vector<std::string>* problems);

class PgWorkload {
 public:
  virtual ~PgWorkload() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<std::string>& txn_types() const = 0;
  virtual nlohmann::json options_json() const = 0;
  virtual std::string options_text() const = 0;

  // Drops and re-creates the tables, loads them; returns the rows loaded.
  // `progress(rows)` is called now and then.
  virtual uint64_t load(PgConn& c, const std::function<void(uint64_t)>& progress) const = 0;
  // Prepares the statements the bodies use, once per connection.
  virtual void prepare(PgConn& c) const = 0;
  virtual PgTxn draw(Rng& rng) const = 0;
  // The invariant the committed nets move (SmallBank: total money), read
  // before the run; check() compares it after.
  virtual int64_t invariant(PgConn& c) const = 0;
  virtual PgCheck check(PgConn& c, int64_t before, int64_t committed_delta) const = 0;
};

}  // namespace pandora::workloads::pg
