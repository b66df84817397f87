// TatpWorkload::audit(): reads the tables through transactions only.
//
// Keys that may be absent are probed with Txn::read_if_present, which
// answers absence without aborting. For each subscriber 1..N the audit
// probes, in one read-only transaction, the subscriber and its index row,
// the 4 possible access_info and special_facility keys and the 12 possible
// call_forwarding keys, so it finds rows that should not be there (a
// call_forwarding row under a special facility that does not exist) as
// well as rows that are missing.
// Rows with keys outside that domain (s_id 0 or > N) cannot be found
// without a scan below the transaction API, which this audit does not do;
// nor does it compare replicas or look for latches of failed pids (a latch
// of a live owner makes the probe abort kLatched, reported as a problem).
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "workloads/tatp/tatp.h"

namespace pandora::workloads {

using namespace tatp;  // NOLINT

namespace {

// Probes run as one task of the session's coordinator (Session::run):
// starting a task per probe costs a coroutine stack each time. They share
// one read-only transaction per subscriber (finish() commits it); a probe
// that aborts it (a latch left held) is a problem, and the next probe
// starts a new one.
class Prober {
 public:
  Prober(Txn& txn, Audit& audit) : txn_(txn), audit_(audit) {}

  // The row's value, nullopt when absent (or unreadable: then a problem is
  // recorded). Fails only when memory could not be read.
  Result<std::optional<std::vector<uint8_t>>> probe(uint32_t table, uint64_t key, std::string_view what) {
    if (!open_) txn_.begin();
    open_ = true;
    auto v = txn_.read_if_present(table, key);
    if (v) {
      if (!*v) return std::optional<std::vector<uint8_t>>();
      ++audit_.rows;
      return std::optional<std::vector<uint8_t>>(std::vector<uint8_t>((**v).begin(), (**v).end()));
    }
    open_ = false;  // the engine aborted it
    if (Status s = unreadable(v.reason(), what); !s) return s;
    return std::optional<std::vector<uint8_t>>();
  }

  // Commits the transaction of the probes since the last finish().
  Status finish(std::string_view what) {
    if (!open_) return Status::ok();
    open_ = false;
    const CommitOutcome o = txn_.commit();
    return o.committed ? Status::ok() : unreadable(o.reason, what);
  }

 private:
  // A read or commit failed for `r`: an error when memory cannot be read,
  // else a problem of the data (recorded).
  Status unreadable(AbortReason r, std::string_view what) {
    if (r == AbortReason::kTransport || r == AbortReason::kInvalid) {
      return Status(r == AbortReason::kInvalid ? Errc::kInvalidArgument : Errc::kDisconnected,
                    fmt::format("reading {}: {}", what, abort_reason_name(r)));
    }
    audit_.problem(fmt::format("{} could not be read: {} (a latch left held?)", what, abort_reason_name(r)));
    return Status::ok();
  }

  Txn& txn_;
  Audit& audit_;
  bool open_ = false;
};

// Probes the 4 keys of a table keyed (s_id, type 1..4) for subscriber s and
// compares with the rows loaded: a missing row, a row never loaded, bad
// fields, and no row at all are problems. Returns the rows found by type.
template <typename Row, typename Pack, typename Decode>
Result<std::array<std::optional<Row>, kTypes + 1>> probe_loaded(Prober& p, Audit& a, uint64_t s,
                                                                 std::string_view name, uint32_t table, Pack pack,
                                                                 Decode decode, const std::vector<Row>& loaded,
                                                                 uint8_t Row::*type) {
  std::array<std::optional<Row>, kTypes + 1> found;
  for (uint32_t t = 1; t <= kTypes; ++t) {
    const std::string what = fmt::format("{} ({}, {})", name, s, t);
    auto r = p.probe(table, *pack(s, t), what);
    if (!r) return r.status();
    const bool was_loaded = std::any_of(loaded.begin(), loaded.end(), [&](const Row& row) { return row.*type == t; });
    if (was_loaded != r->has_value()) {
      a.problem(fmt::format("{} is {}", what, *r ? "present but was never loaded" : "missing"));
    }
    if (!*r) continue;
    found[t] = decode(**r);
    if (std::string e = check_row(*found[t], s, t); !e.empty()) a.problem(what + ": " + e);
  }
  if (std::none_of(found.begin(), found.end(), [](const auto& f) { return f.has_value(); })) {
    a.problem(fmt::format("subscriber {} has no {} row (the spec loads 1..4)", s, name));
  }
  return found;
}

// Probes every key of subscribers 1..n (see the top of this file); returns
// the number of call_forwarding rows found.
Result<int64_t> audit_subscribers(uint64_t n, Prober& p, Audit& a) {
  int64_t call_forwarding = 0;
  for (uint64_t s = 1; s <= n; ++s) {
    const SubscriberPopulation pop = populate(s);
    const std::string sid = fmt::format("subscriber {}", s);

    auto sub = p.probe(kSubscriberTable, s, sid);
    if (!sub) return sub.status();
    if (!*sub) {
      a.problem(fmt::format("{} is missing", sid));
    } else if (std::string e = check_row(decode_subscriber(**sub), s); !e.empty()) {
      a.problem(fmt::format("{}: {}", sid, e));
    }
    auto index = p.probe(kSubNbrIndexTable, sub_nbr_key(sub_nbr_of(s)), sid + "'s sub_nbr index row");
    if (!index) return index.status();
    uint64_t indexed = 0;
    if (*index) std::memcpy(&indexed, (**index).data(), sizeof indexed);
    if (indexed != s) a.problem(fmt::format("sub_nbr {} maps to s_id {}, not {}", sub_nbr_of(s), indexed, s));

    // access_info and special_facility are never inserted or deleted: the
    // rows found must be the rows loaded (1..4 of each).
    auto access_info = probe_loaded(p, a, s, "access_info", kAccessInfoTable, pack_access_info, decode_access_info,
                                    pop.access_info, &AccessInfoRow::ai_type);
    if (!access_info) return access_info.status();
    auto facility = probe_loaded(p, a, s, "special_facility", kSpecialFacilityTable, pack_special_facility,
                                 decode_special_facility, pop.special_facility, &SpecialFacilityRow::sf_type);
    if (!facility) return facility.status();

    // call_forwarding: 0..3 per facility by construction of the key (one
    // per start_time); every row needs its facility, and the facility's
    // cf_mask must name exactly the rows present.
    for (uint32_t t = 1; t <= kTypes; ++t) {
      for (uint32_t st = 0; st <= 16; st += 8) {
        const std::string what = fmt::format("call_forwarding ({}, {}, {})", s, t, st);
        auto r = p.probe(kCallForwardingTable, *pack_call_forwarding(s, t, st), what);
        if (!r) return r.status();
        const auto& f = (*facility)[t];
        const bool in_mask = f && (f->cf_mask & (1u << (st / 8)));
        if (*r) {
          ++call_forwarding;
          if (!f) {
            a.problem(fmt::format("{} is dangling: special_facility ({}, {}) does not exist", what, s, t));
          } else if (!in_mask) {
            a.problem(fmt::format("{} exists but special_facility ({}, {})'s cf_mask does not name it", what, s, t));
          }
          if (std::string e = check_row(decode_call_forwarding(**r), s, t, st); !e.empty()) a.problem(what + ": " + e);
        } else if (in_mask) {
          a.problem(fmt::format("{} is missing but special_facility ({}, {})'s cf_mask names it", what, s, t));
        }
      }
    }
    if (Status st = p.finish(sid + "'s rows"); !st) return st;
  }
  return call_forwarding;
}

}  // namespace

Result<Audit> TatpWorkload::audit(Session& client) const {
  Audit a;
  Status failed;
  client.run([&](Txn& txn) {
    Prober p(txn, a);
    Result<int64_t> rows = audit_subscribers(options_.subscribers, p, a);
    if (rows) {
      a.value = *rows;
    } else {
      failed = rows.status();
    }
  });
  if (!failed) return failed;
  return a;
}


}  // namespace pandora::workloads
