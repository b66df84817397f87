#include "workloads/tatp/tatp.h"

#include <cstring>

#include <fmt/format.h>

namespace pandora::workloads {

using namespace tatp;  // NOLINT: the schema's names are this file's vocabulary

namespace {

// Ends an attempt that failed before commit (the engine has already released
// what it latched when one of its calls failed; abort() closes the attempt
// and releases the latches when the workload itself gives up).
TxnOutcome abandon(Txn& txn, uint32_t type, AbortReason reason) {
  txn.abort();
  return TxnOutcome{CommitOutcome{false, reason, {}}, type, 0};
}

// The index row for s_id's sub_nbr: the s_id the transaction goes on with.
ItemResult<uint64_t> lookup_sub_nbr(Txn& txn, uint64_t s_id) {
  auto v = txn.read(kSubNbrIndexTable, sub_nbr_key(sub_nbr_of(s_id)));
  if (!v) return v.reason();
  uint64_t found;
  std::memcpy(&found, (*v).data(), sizeof found);
  return found;
}

// A transaction of one read of a row that may be absent (kNotFound:
// unsuccessful).
TxnOutcome read_one(Txn& txn, uint32_t type, uint32_t table, std::optional<uint64_t> key) {
  txn.begin();
  if (!key) return abandon(txn, type, AbortReason::kInvalid);
  auto v = txn.read(table, *key);
  if (!v) return abandon(txn, type, v.reason());
  return TxnOutcome{txn.commit(), type, 0};
}

}  // namespace

void TatpFlags::declare(OptionSet& opts) {
  opts.add_u64("subscribers", &subscribers,
               "tatp: number of subscribers (the spec's scale unit is 100000; 1..4 access_info and special_facility "
               "rows each, 0..3 call_forwarding rows per special facility)",
               1, kMaxSubscribers);
}

std::vector<std::string> TatpFlags::names() { return {"subscribers"}; }

Result<TatpOptions> TatpFlags::resolve() const { return TatpOptions{subscribers}; }

TatpWorkload::TatpWorkload(const TatpOptions& o) : options_(o), nurand_a_(nurand_a(o.subscribers)) {
  for (uint64_t s = 1; s <= o.subscribers; ++s) {
    const SubscriberPopulation p = populate(s);
    access_info_rows_ += p.access_info.size();
    special_facility_rows_ += p.special_facility.size();
    call_forwarding_rows_ += p.call_forwarding.size();
  }
}

Result<std::unique_ptr<TatpWorkload>> TatpWorkload::create(const TatpOptions& options) {
  if (options.subscribers < 1 || options.subscribers > kMaxSubscribers) {
    return Status(Errc::kInvalidArgument, fmt::format("--subscribers {} must be in 1..{} (the spec's largest class)",
                                                      options.subscribers, kMaxSubscribers));
  }
  return std::unique_ptr<TatpWorkload>(new TatpWorkload(options));
}

std::vector<TableSpec> TatpWorkload::tables() const {
  // call_forwarding grows and shrinks: sized for its maximum, 3 rows per
  // special facility, so inserts never find it full.
  return {TableSpec{kSubscriberTable, "tatp_subscriber", kSubscriberBytes, options_.subscribers},
          TableSpec{kAccessInfoTable, "tatp_access_info", kAccessInfoBytes, access_info_rows_},
          TableSpec{kSpecialFacilityTable, "tatp_special_facility", kSpecialFacilityBytes, special_facility_rows_},
          TableSpec{kCallForwardingTable, "tatp_call_forwarding", kCallForwardingBytes,
                    special_facility_rows_ * kStartTimes},
          TableSpec{kSubNbrIndexTable, "tatp_sub_nbr_index", kSubNbrIndexBytes, options_.subscribers}};
}

Status TatpWorkload::load(BulkLoader& loader) const {
  for (uint64_t s = 1; s <= options_.subscribers; ++s) {
    const SubscriberPopulation p = populate(s);
    if (Status st = loader.add(kSubscriberTable, s, encode(p.subscriber)); !st) return st;
    uint64_t sid = s;
    uint8_t index[kSubNbrIndexBytes];
    std::memcpy(index, &sid, sizeof sid);
    if (Status st = loader.add(kSubNbrIndexTable, sub_nbr_key(p.subscriber.sub_nbr), index); !st) return st;
    for (const AccessInfoRow& r : p.access_info) {
      if (Status st = loader.add(kAccessInfoTable, *pack_access_info(s, r.ai_type), encode(r)); !st) return st;
    }
    for (const SpecialFacilityRow& r : p.special_facility) {
      if (Status st = loader.add(kSpecialFacilityTable, *pack_special_facility(s, r.sf_type), encode(r)); !st) {
        return st;
      }
    }
    for (const CallForwardingRow& r : p.call_forwarding) {
      const uint64_t key = *pack_call_forwarding(s, r.sf_type, r.start_time);
      if (Status st = loader.add(kCallForwardingTable, key, encode(r)); !st) return st;
    }
  }
  return Status::ok();
}

TxnOutcome TatpWorkload::run_one(Txn& txn, Rng& rng) const {
  const uint64_t s = pick_subscriber(rng, options_.subscribers, nurand_a_);
  const auto type = static_cast<uint32_t>(1 + rng.uniform(kTypes));
  const auto start_time = static_cast<uint32_t>(8 * rng.uniform(kStartTimes));
  const uint64_t dice = rng.uniform(100);
  if (dice < 35) return get_subscriber_data(txn, s);
  if (dice < 45) return get_new_destination(txn, s, type, start_time, static_cast<uint32_t>(1 + rng.uniform(24)));
  if (dice < 80) return get_access_data(txn, s, type);
  if (dice < 82) return update_subscriber_data(txn, s, type, rng.uniform(2) == 1, static_cast<uint8_t>(rng.uniform(256)));
  if (dice < 96) return update_location(txn, s, static_cast<uint32_t>(1 + rng.uniform((uint64_t{1} << 32) - 1)));
  if (dice < 98) {
    return insert_call_forwarding(txn, s, type, start_time, static_cast<uint32_t>(1 + rng.uniform(24)),
                                  random_digits(rng, kNumberDigits));
  }
  return delete_call_forwarding(txn, s, type, start_time);
}

TxnOutcome TatpWorkload::get_subscriber_data(Txn& txn, uint64_t s_id) const {
  return read_one(txn, kGetSubscriberData, kSubscriberTable, s_id);
}

TxnOutcome TatpWorkload::get_new_destination(Txn& txn, uint64_t s_id, uint32_t sf_type, uint32_t start_time,
                                             uint32_t end_time) const {
  txn.begin();
  const auto sf_key = pack_special_facility(s_id, sf_type);
  if (!sf_key || !pack_call_forwarding(s_id, sf_type, start_time)) {
    return abandon(txn, kGetNewDestination, AbortReason::kInvalid);
  }
  auto sf = txn.read(kSpecialFacilityTable, *sf_key);
  if (!sf) return abandon(txn, kGetNewDestination, sf.reason());
  if ((*sf)[kSpecialFacilityActiveOffset] != 1) return abandon(txn, kGetNewDestination, AbortReason::kUser);
  const uint8_t mask = (*sf)[kSpecialFacilityMaskOffset];
  bool found = false;
  for (uint32_t st = 0; st <= start_time; st += 8) {
    if (!(mask & (1u << (st / 8)))) continue;
    auto cf = txn.read(kCallForwardingTable, *pack_call_forwarding(s_id, sf_type, st));
    if (!cf) {
      // The mask said the row exists: it was deleted since the
      // special_facility row was read, which therefore changed under us.
      const AbortReason r = cf.reason() == AbortReason::kNotFound ? AbortReason::kValidationFailed : cf.reason();
      return abandon(txn, kGetNewDestination, r);
    }
    found |= (*cf)[kCallForwardingEndOffset] > end_time;
  }
  if (!found) return abandon(txn, kGetNewDestination, AbortReason::kUser);
  return TxnOutcome{txn.commit(), kGetNewDestination, 0};
}

TxnOutcome TatpWorkload::get_access_data(Txn& txn, uint64_t s_id, uint32_t ai_type) const {
  return read_one(txn, kGetAccessData, kAccessInfoTable, pack_access_info(s_id, ai_type));
}

TxnOutcome TatpWorkload::update_subscriber_data(Txn& txn, uint64_t s_id, uint32_t sf_type, bool bit_1,
                                                uint8_t data_a) const {
  txn.begin();
  const auto sf_key = pack_special_facility(s_id, sf_type);
  if (!sf_key) return abandon(txn, kUpdateSubscriberData, AbortReason::kInvalid);
  auto sub = txn.update(kSubscriberTable, s_id);
  if (!sub) return abandon(txn, kUpdateSubscriberData, sub.reason());
  uint8_t& bits_lo = (*sub)[kSubscriberBitsOffset];
  bits_lo = static_cast<uint8_t>((bits_lo & ~1u) | (bit_1 ? 1u : 0u));
  auto sf = txn.update(kSpecialFacilityTable, *sf_key);
  if (!sf) return abandon(txn, kUpdateSubscriberData, sf.reason());
  (*sf)[kSpecialFacilityDataAOffset] = data_a;
  return TxnOutcome{txn.commit(), kUpdateSubscriberData, 0};
}

TxnOutcome TatpWorkload::update_location(Txn& txn, uint64_t s_id, uint32_t vlr_location) const {
  txn.begin();
  auto sid = lookup_sub_nbr(txn, s_id);
  if (!sid) return abandon(txn, kUpdateLocation, sid.reason());
  auto sub = txn.update(kSubscriberTable, *sid);
  if (!sub) return abandon(txn, kUpdateLocation, sub.reason());
  std::memcpy((*sub).data() + kSubscriberVlrOffset, &vlr_location, sizeof vlr_location);
  return TxnOutcome{txn.commit(), kUpdateLocation, 0};
}

TxnOutcome TatpWorkload::insert_call_forwarding(Txn& txn, uint64_t s_id, uint32_t sf_type, uint32_t start_time,
                                                uint32_t end_time, const std::string& numberx) const {
  txn.begin();
  if (!pack_call_forwarding(s_id, sf_type, start_time) || end_time < 1 || end_time > 24) {
    return abandon(txn, kInsertCallForwarding, AbortReason::kInvalid);
  }
  auto sid = lookup_sub_nbr(txn, s_id);
  if (!sid) return abandon(txn, kInsertCallForwarding, sid.reason());
  const auto sf_key = pack_special_facility(*sid, sf_type);
  const auto cf_key = pack_call_forwarding(*sid, sf_type, start_time);
  if (!sf_key || !cf_key) return abandon(txn, kInsertCallForwarding, AbortReason::kInvalid);
  // The spec's "SELECT sf_type FROM special_facility WHERE s_id": the insert
  // is legal only under an existing facility (no row: unsuccessful).
  auto sf = txn.update(kSpecialFacilityTable, *sf_key);
  if (!sf) return abandon(txn, kInsertCallForwarding, sf.reason());
  CallForwardingRow row{static_cast<uint32_t>(*sid), static_cast<uint8_t>(sf_type), static_cast<uint8_t>(start_time),
                        static_cast<uint8_t>(end_time), numberx};
  if (AbortReason r = txn.insert(kCallForwardingTable, *cf_key, encode(row)); r != AbortReason::kNone) {
    return abandon(txn, kInsertCallForwarding, r);  // kDuplicate: the row exists (unsuccessful)
  }
  (*sf)[kSpecialFacilityMaskOffset] |= static_cast<uint8_t>(1u << (start_time / 8));
  return TxnOutcome{txn.commit(), kInsertCallForwarding, +1};
}

TxnOutcome TatpWorkload::delete_call_forwarding(Txn& txn, uint64_t s_id, uint32_t sf_type,
                                                uint32_t start_time) const {
  txn.begin();
  if (!pack_call_forwarding(s_id, sf_type, start_time)) {
    return abandon(txn, kDeleteCallForwarding, AbortReason::kInvalid);
  }
  auto sid = lookup_sub_nbr(txn, s_id);
  if (!sid) return abandon(txn, kDeleteCallForwarding, sid.reason());
  const auto sf_key = pack_special_facility(*sid, sf_type);
  const auto cf_key = pack_call_forwarding(*sid, sf_type, start_time);
  if (!sf_key || !cf_key) return abandon(txn, kDeleteCallForwarding, AbortReason::kInvalid);
  if (AbortReason r = txn.remove(kCallForwardingTable, *cf_key); r != AbortReason::kNone) {
    return abandon(txn, kDeleteCallForwarding, r);  // kNotFound: nothing to delete (unsuccessful)
  }
  auto sf = txn.update(kSpecialFacilityTable, *sf_key);
  if (!sf) return abandon(txn, kDeleteCallForwarding, sf.reason());
  (*sf)[kSpecialFacilityMaskOffset] &= static_cast<uint8_t>(~(1u << (start_time / 8)));
  return TxnOutcome{txn.commit(), kDeleteCallForwarding, -1};
}

}  // namespace pandora::workloads
