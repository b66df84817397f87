#include "workloads/bench/workload.h"

#include <cstring>

#include <fmt/format.h>

namespace pandora::workloads {

void Audit::problem(std::string text) {
  ++problem_count;
  if (problems.size() < kMaxProblems) problems.push_back(std::move(text));
}

Status Workload::attach(const TableDirectory& dir) const {
  for (const TableSpec& spec : tables()) {
    const TableEntry* e = dir.find(spec.id);
    if (!e) {
      return Status(Errc::kMismatch,
                    fmt::format("the memory nodes carry no table '{}' (id {}) for workload {}; load it first "
                                "(pandora-bench --load)",
                                spec.name, spec.id, name()));
    }
    const std::string loaded_name(e->name, strnlen(e->name, kTableNameBytes));
    if (loaded_name != spec.name) {
      return Status(Errc::kMismatch, fmt::format("table id {} is '{}' in memory, workload {} expects '{}'", spec.id,
                                                 loaded_name, name(), spec.name));
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

CheckResult Workload::check(BlockingClient& client, const CheckInput& in) const {
  Result<Audit> a = audit(client);
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

}  // namespace pandora::workloads
