// TATP (Telecom Application Transaction Processing, the IBM/Solid
// specification as used by FORD and the seed's 4.4.1): subscribers, their
// access_info, special_facility and call_forwarding rows (tatp_schema.h has
// the rows, key packing and population), and seven short transactions.
//
// The mix (%) and each transaction's "unsuccessful" outcome - the spec's
// expected failures, counted apart from conflicts:
//   GET_SUBSCRIBER_DATA     35  read subscriber                           always succeeds
//   GET_NEW_DESTINATION     10  read special_facility (s_id, sf_type), then the
//                               call_forwarding rows with start_time <= the drawn
//                               one (from cf_mask); success when one has
//                               end_time > the drawn end_time    ~23.9% (14.8%, see
//                                                                    README): kNotFound (no sf row),
//                                                                    kUser (inactive, no matching cf)
//   GET_ACCESS_DATA         35  read access_info (s_id, ai_type)      62.5%: kNotFound
//   UPDATE_SUBSCRIBER_DATA   2  subscriber.bit_1, special_facility.data_a
//                                                                     62.5%: kNotFound (no sf row)
//   UPDATE_LOCATION         14  sub_nbr index -> s_id; subscriber.vlr_location
//                                                                     always succeeds
//   INSERT_CALL_FORWARDING   2  sub_nbr index; special_facility (cf_mask bit set);
//                               insert call_forwarding                31.25%: kNotFound (no sf row),
//                                                                     kDuplicate (row exists)
//   DELETE_CALL_FORWARDING   2  sub_nbr index; remove call_forwarding;
//                               special_facility (cf_mask bit cleared) 31.25%: kNotFound
// 80% are read-only. Unsuccessful transactions abort with the reasons shown
// (kNotFound, kDuplicate, kUser), conflicts with kLatched/kValidationFailed,
// so pandora-bench's abort breakdown separates the two; commits per type /
// attempts per type is the success rate (less the rare conflicts).
//
// s_id is drawn non-uniformly as the spec says (tatp_schema.h
// pick_subscriber); every other parameter uniformly in its range.
//
// Invariant: the number of call_forwarding rows, +1 per committed
// INSERT_CALL_FORWARDING, -1 per committed DELETE_CALL_FORWARDING. audit()
// reads through transactions only (see tatp.cc) and also checks referential
// integrity and field ranges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/options.h"
#include "workloads/bench/workload.h"
#include "workloads/tatp/tatp_schema.h"

namespace pandora::workloads {

struct TatpOptions {
  // The spec's scale unit is 100,000 subscribers; FORD's and the seed's
  // evaluation configuration use one unit.
  uint64_t subscribers = 100000;
};

struct TatpFlags {
  uint64_t subscribers = 100000;

  // --subscribers.
  void declare(OptionSet& opts);
  static std::vector<std::string> names();
  Result<TatpOptions> resolve() const;
};

class TatpWorkload final : public Workload {
 public:
  enum Type : uint32_t {
    kGetSubscriberData,
    kGetNewDestination,
    kGetAccessData,
    kUpdateSubscriberData,
    kUpdateLocation,
    kInsertCallForwarding,
    kDeleteCallForwarding,
  };

  // kInvalidArgument naming --subscribers when out of 1..kMaxSubscribers.
  static Result<std::unique_ptr<TatpWorkload>> create(const TatpOptions& options);

  std::string_view name() const override { return "tatp"; }
  std::vector<TableSpec> tables() const override;
  Status load(BulkLoader& loader) const override;
  const std::vector<std::string>& txn_types() const override { return types_; }
  TxnOutcome run_one(Txn& txn, Rng& rng) const override;
  std::string_view invariant_name() const override { return "call_forwarding rows"; }
  Result<Audit> audit(Session& client) const override;

  const TatpOptions& options() const { return options_; }
  // Rows loaded: access_info, special_facility, call_forwarding (the
  // invariant's value right after a load).
  uint64_t loaded_access_info() const { return access_info_rows_; }
  uint64_t loaded_special_facility() const { return special_facility_rows_; }
  uint64_t loaded_call_forwarding() const { return call_forwarding_rows_; }

  // The transactions with their parameters (public for tests); each begins,
  // runs and commits or aborts `txn`. The three that take a subscriber by
  // sub_nbr get s_id and look sub_nbr_of(s_id) up in the index.
  TxnOutcome get_subscriber_data(Txn& txn, uint64_t s_id) const;
  TxnOutcome get_new_destination(Txn& txn, uint64_t s_id, uint32_t sf_type, uint32_t start_time,
                                 uint32_t end_time) const;
  TxnOutcome get_access_data(Txn& txn, uint64_t s_id, uint32_t ai_type) const;
  TxnOutcome update_subscriber_data(Txn& txn, uint64_t s_id, uint32_t sf_type, bool bit_1, uint8_t data_a) const;
  TxnOutcome update_location(Txn& txn, uint64_t s_id, uint32_t vlr_location) const;
  TxnOutcome insert_call_forwarding(Txn& txn, uint64_t s_id, uint32_t sf_type, uint32_t start_time,
                                    uint32_t end_time, const std::string& numberx) const;
  TxnOutcome delete_call_forwarding(Txn& txn, uint64_t s_id, uint32_t sf_type, uint32_t start_time) const;

 private:
  explicit TatpWorkload(const TatpOptions& o);

  TatpOptions options_;
  uint64_t nurand_a_ = 0;
  uint64_t access_info_rows_ = 0;
  uint64_t special_facility_rows_ = 0;
  uint64_t call_forwarding_rows_ = 0;
  std::vector<std::string> types_{"GetSubscriberData",    "GetNewDestination", "GetAccessData",
                                  "UpdateSubscriberData", "UpdateLocation",    "InsertCallForwarding",
                                  "DeleteCallForwarding"};
};

}  // namespace pandora::workloads
