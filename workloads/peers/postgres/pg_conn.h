// A thin RAII layer over one libpq connection, for the benchmark's
// transaction bodies.
//
// Errors are exceptions (PgError carrying the SQLSTATE) inside a
// transaction body: a body is a straight line of statements, and any error
// must abandon it, roll back and either retry (40001/40P01, see sqlstate.h)
// or end the run. connect() reports with Result, as elsewhere.
//
//   auto c = PgConn::connect("host=/tmp/pg/sock port=5432 ...");
//   (*c)->prepare("sb_bal", "SELECT bal FROM checking WHERE id = $1");
//   PgResult r = (*c)->run("sb_bal", {std::to_string(id)});
//   int64_t bal = r.i64(0, 0);
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/status.h"

struct pg_conn;
struct pg_result;

namespace pandora::workloads::pg {

class PgError : public std::runtime_error {
 public:
  PgError(std::string sqlstate, const std::string& message)
      : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}
  const std::string& sqlstate() const { return sqlstate_; }  // "" when the server sent none (connection lost)

 private:
  std::string sqlstate_;
};

class PgResult {
 public:
  explicit PgResult(pg_result* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  bool null(int row, int col) const;
  std::string_view text(int row, int col) const;
  int64_t i64(int row, int col) const;  // throws PgError("", ...) on a non-integer
  uint64_t affected() const;            // rows an INSERT/UPDATE/DELETE touched

 private:
  pg_result* r_;
};

class PgConn {
 public:
  static Result<std::unique_ptr<PgConn>> connect(const std::string& conninfo);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // A statement without parameters (several, separated by ';', are allowed).
  PgResult exec(std::string_view sql);
  // Prepares `name` once per connection; run() executes it with text
  // parameters (the server parses and plans the statement once).
  void prepare(const std::string& name, const std::string& sql);
  PgResult run(const std::string& name, std::initializer_list<std::string> params);
  // ROLLBACK, ignoring errors (after a failed statement, or when the
  // transaction decided to give up).
  void rollback_quietly();
  // COPY ... FROM STDIN: `fill` appends rows in COPY text format to its
  // argument and returns false once it has appended the last ones.
  uint64_t copy_in(std::string_view copy_sql, const std::function<bool(std::string&)>& fill);

 private:
  explicit PgConn(pg_conn* c) : c_(c) {}
  PgResult check(pg_result* r, std::string_view what);
  pg_conn* c_;
};

}  // namespace pandora::workloads::pg
