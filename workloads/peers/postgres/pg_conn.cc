#include "workloads/peers/postgres/pg_conn.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>
#include <libpq-fe.h>

namespace pandora::workloads::pg {

namespace {

std::string trimmed(const char* s) {
  std::string m = s ? s : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

}  // namespace

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

PgResult::~PgResult() {
  if (r_) PQclear(r_);
}

int PgResult::rows() const { return PQntuples(r_); }
bool PgResult::null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string_view PgResult::text(int row, int col) const {
  return {PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col))};
}

int64_t PgResult::i64(int row, int col) const {
  const std::string_view t = text(row, col);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) {
    throw PgError("", fmt::format("expected an integer in row {} column {}, got '{}'", row, col, t));
  }
  return v;
}

uint64_t PgResult::affected() const {
  const char* n = PQcmdTuples(r_);
  return n && *n ? std::stoull(n) : 0;
}

Result<std::unique_ptr<PgConn>> PgConn::connect(const std::string& conninfo) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (!c) return Status(Errc::kIo, "libpq could not allocate a connection");
  if (PQstatus(c) != CONNECTION_OK) {
    Status s(Errc::kIo, fmt::format("connecting to PostgreSQL ({}): {}", conninfo, trimmed(PQerrorMessage(c))));
    PQfinish(c);
    return s;
  }
  // Notices (a ROLLBACK after a failed COMMIT: "no transaction in
  // progress", DROP ... IF EXISTS) are expected here; keep them off stderr.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<PgConn>(new PgConn(c));
}

PgConn::~PgConn() { PQfinish(c_); }

PgResult PgConn::check(PGresult* r, std::string_view what) {
  const ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_COPY_IN) return PgResult(r);
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string msg = fmt::format("{}: {}", what, trimmed(r ? PQresultErrorMessage(r) : PQerrorMessage(c_)));
  std::string code = state ? state : "";
  if (r) PQclear(r);
  throw PgError(std::move(code), msg);
}

PgResult PgConn::exec(std::string_view sql) {
  const std::string s(sql);
  return check(PQexec(c_, s.c_str()), s.substr(0, 80));
}

void PgConn::prepare(const std::string& name, const std::string& sql) {
  check(PQprepare(c_, name.c_str(), sql.c_str(), 0, nullptr), fmt::format("preparing {}", name));
}

PgResult PgConn::run(const std::string& name, std::initializer_list<std::string> params) {
  const char* values[16];
  if (params.size() > std::size(values)) throw PgError("", fmt::format("{}: too many parameters", name));
  int n = 0;
  for (const std::string& p : params) values[n++] = p.c_str();
  return check(PQexecPrepared(c_, name.c_str(), n, values, nullptr, nullptr, 0), name);
}

void PgConn::rollback_quietly() {
  PGresult* r = PQexec(c_, "ROLLBACK");
  if (r) PQclear(r);
}

uint64_t PgConn::copy_in(std::string_view copy_sql, const std::function<bool(std::string&)>& fill) {
  exec(copy_sql);  // PGRES_COPY_IN
  std::string buf;
  bool more = true;
  while (more) {
    buf.clear();
    while (more && buf.size() < (1u << 20)) more = fill(buf);
    if (!buf.empty() && PQputCopyData(c_, buf.data(), static_cast<int>(buf.size())) != 1) {
      throw PgError("", fmt::format("COPY: {}", trimmed(PQerrorMessage(c_))));
    }
  }
  if (PQputCopyEnd(c_, nullptr) != 1) throw PgError("", fmt::format("COPY end: {}", trimmed(PQerrorMessage(c_))));
  uint64_t rows = 0;
  while (PGresult* r = PQgetResult(c_)) {
    PgResult checked = check(r, "COPY");
    rows += checked.affected();
  }
  return rows;
}

}  // namespace pandora::workloads::pg
