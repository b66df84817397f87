// TATP on PostgreSQL (tatp_params.h for the mix and parameters), the four
// tables of the specification:
//   subscriber(s_id PK, sub_nbr UNIQUE, bit_1..10, hex_1..10, byte2_1..10,
//              msc_location, vlr_location)
//   access_info(s_id, ai_type 1..4, data1..4)              PK (s_id, ai_type)
//   special_facility(s_id, sf_type 1..4, is_active, error_cntrl, data_a, data_b)
//   call_forwarding(s_id, sf_type, start_time 0/8/16, end_time, numberx)
// No foreign keys (Pandora has none to enforce); check() verifies the
// references instead. A transaction that finds no row (TATP expects many:
// ~76% of GET_NEW_DESTINATION, ~37.5% of GET_ACCESS_DATA) rolls back as
// not-found; an INSERT_CALL_FORWARDING onto an existing key as duplicate.
// Invariant: call_forwarding rows = before + committed inserts - deletes.
#pragma once

#include "workloads/peers/postgres/pg_workload.h"

namespace pandora::workloads::pg {

struct TatpOptions {
  uint64_t subscribers = 100000;
};

class TatpPg final : public PgWorkload {
 public:
  explicit TatpPg(TatpOptions o) : o_(o) {}

  std::string name() const override { return "tatp"; }
  const std::vector<std::string>& txn_types() const override { return types_; }
  nlohmann::json options_json() const override { return {{"subscribers", o_.subscribers}}; }
  std::string options_text() const override;
  uint64_t load(PgConn& c, const std::function<void(uint64_t)>& progress) const override;
  void prepare(PgConn& c) const override;
  PgTxn draw(Rng& rng) const override;
  int64_t invariant(PgConn& c) const override;
  PgCheck check(PgConn& c, int64_t before, int64_t committed_delta) const override;

 private:
  TatpOptions o_;
  std::vector<std::string> types_{"GetSubscriberData",    "GetNewDestination",    "GetAccessData",
                                  "UpdateSubscriberData", "UpdateLocation",       "InsertCallForwarding",
                                  "DeleteCallForwarding"};
};

}  // namespace pandora::workloads::pg
