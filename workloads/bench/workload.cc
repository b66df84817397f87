#include "workloads/bench/workload.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace pandora::workloads {

void Audit::problem(std::string text) {
  ++problem_count;
  if (problems.size() < kMaxProblems) problems.push_back(std::move(text));
}

Status Workload::attach(std::span<const TableSpec> loaded) const {
  for (const TableSpec& spec : tables()) {
    const TableSpec* e = nullptr;
    for (const TableSpec& t : loaded) {
      if (t.id == spec.id) e = &t;
    }
    if (!e) {
      return Status(Errc::kMismatch,
                    fmt::format("the memory nodes carry no table '{}' (id {}) for workload {}; load it first "
                                "(pandora-bench --load)",
                                spec.name, spec.id, name()));
    }
    if (e->name != spec.name) {
      return Status(Errc::kMismatch, fmt::format("table id {} is '{}' in memory, workload {} expects '{}'", spec.id,
                                                 e->name, name(), spec.name));
    }
    if (e->value_size != spec.value_size) {
      return Status(Errc::kMismatch, fmt::format("table '{}' was loaded with {}-byte values, this run asks for {} "
                                                 "(pass the value size used at load time, or --load again)",
                                                 spec.name, e->value_size, spec.value_size));
    }
    if (e->expected_rows != spec.expected_rows) {
      return Status(Errc::kMismatch, fmt::format("table '{}' was loaded with {} rows, this run asks for {} (pass the "
                                                 "key/account count used at load time, or --load again)",
                                                 spec.name, e->expected_rows, spec.expected_rows));
    }
  }
  return Status::ok();
}

CheckResult Workload::check(Session& session, const CheckInput& in) const {
  Result<Audit> a = audit(session);
  if (!a) return {false, fmt::format("check FAILED: could not read the tables: {}", a.status().to_string())};
  const int64_t expected = in.baseline + in.committed_delta;
  std::string msg = fmt::format("{} = {} (before {} + committed changes {} = {}), {} rows", invariant_name(),
                                a->value, in.baseline, in.committed_delta, expected, a->rows);
  bool ok = true;
  if (a->value != expected) {
    ok = false;
    msg += fmt::format("; MISMATCH by {}", a->value - expected);
  }
  if (in.uncertain > 0) {
    ok = false;
    msg += fmt::format("; {} transaction(s) ended with a transport failure during commit, so their effect is unknown",
                       in.uncertain);
  }
  if (!a->clean()) {
    ok = false;
    msg += fmt::format("; {} structural problem(s):", a->problem_count);
    for (const std::string& p : a->problems) msg += " [" + p + "]";
    if (a->problem_count > a->problems.size()) msg += " ...";
  }
  return {ok, (ok ? "check passed: " : "check FAILED: ") + msg};
}

Status read_table(Session& session, uint32_t table, std::string_view table_name, uint64_t keys,
                  const AuditRowFn& on_row, Audit& audit, uint32_t batch) {
  // Rows are handed on only from committed transactions (validated, and a
  // retried transaction must not report a row twice).
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> rows;
  uint64_t next = 0;
  uint64_t end = std::min<uint64_t>(keys, batch);
  while (next < keys) {
    uint64_t missing = keys;  // the key whose read found nothing, if any
    CommitOutcome o = session.transact_retry([&](Txn& t) {
      rows.clear();
      for (uint64_t k = next; k < end; ++k) {
        auto v = t.read(table, k);
        if (!v) {
          if (v.reason() == AbortReason::kNotFound) missing = k;
          return v.reason();
        }
        rows.emplace_back(k, std::vector<uint8_t>((*v).begin(), (*v).end()));
      }
      return AbortReason::kNone;
    }, 100);
    if (o.committed) {
      for (const auto& [k, v] : rows) {
        ++audit.rows;
        on_row(k, v);
      }
      next = end;
    } else if (o.reason == AbortReason::kTransport) {
      return Status(o.detail.is_ok() ? Errc::kDisconnected : o.detail.code(),
                    fmt::format("reading {} keys {}..{}: {}", table_name, next, end - 1, o.detail.message()));
    } else if (o.reason == AbortReason::kNotFound && missing < keys) {
      if (missing > next) {
        end = missing;  // read the keys before it in a transaction of their own
        continue;
      }
      audit.problem(fmt::format("{}: key {} is missing", table_name, missing));
      next = missing + 1;
    } else {
      audit.problem(fmt::format("{}: reading keys {}..{} aborted ({}) on a quiet cluster (a latch left held?)",
                                table_name, next, end - 1, abort_reason_name(o.reason)));
      next = end;
    }
    end = std::min<uint64_t>(keys, next + batch);
  }
  return Status::ok();
}

}  // namespace pandora::workloads
