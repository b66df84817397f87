// SmallBank on PostgreSQL: the same accounts, loaded balances, mix, amounts
// and account picking as workloads/smallbank (SmallBankWorkload supplies the
// constants, the balances and the hot set), in two tables
//   savings(id bigint primary key, bal bigint)   checking(id ..., bal ...)
// balances in cents. A transaction locks what Pandora's update() latches
// (SELECT ... FOR UPDATE) before it writes.
// Invariant: total money over both tables = loaded total + committed nets.
#pragma once

#include <memory>

#include "workloads/peers/postgres/pg_workload.h"
#include "workloads/smallbank/smallbank.h"

namespace pandora::workloads::pg {

class SmallBankPg final : public PgWorkload {
 public:
  explicit SmallBankPg(std::unique_ptr<SmallBankWorkload> sb) : sb_(std::move(sb)) {}

  std::string name() const override { return "smallbank"; }
  const std::vector<std::string>& txn_types() const override { return sb_->txn_types(); }
  nlohmann::json options_json() const override;
  std::string options_text() const override;
  uint64_t load(PgConn& c, const std::function<void(uint64_t)>& progress) const override;
  void prepare(PgConn& c) const override;
  PgTxn draw(Rng& rng) const override;
  int64_t invariant(PgConn& c) const override;
  PgCheck check(PgConn& c, int64_t before, int64_t committed_delta) const override;

 private:
  std::unique_ptr<SmallBankWorkload> sb_;
};

}  // namespace pandora::workloads::pg
