#include "workloads/peers/postgres/pg_workload.h"

#include <fmt/format.h>

namespace pandora::workloads::pg {

PgCheck check_verdict(const std::vector<std::string>& problems, std::string pass_message) {
  if (problems.empty()) return {true, std::move(pass_message)};
  std::string m = "check FAILED:";
  for (const std::string& p : problems) m += "\n  " + p;
  return {false, m};
}

void count_violations(PgConn& c, const std::vector<std::pair<std::string, std::string>>& rules,
                      std::vector<std::string>* problems) {
  for (const auto& [what, sql] : rules) {
    if (const int64_t n = c.exec(sql).i64(0, 0); n != 0) problems->push_back(fmt::format("{}: {}", what, n));
  }
}

}  // namespace pandora::workloads::pg
