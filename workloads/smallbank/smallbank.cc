#include "workloads/smallbank/smallbank.h"

#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "workloads/bench/flag_values.h"

namespace pandora::workloads {

namespace {

int64_t get_i64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void put_i64(uint8_t* p, int64_t v) { std::memcpy(p, &v, sizeof v); }

uint64_t tag_of(uint32_t table, uint64_t account) { return mix64(account * 2654435761u + table) | 1; }

// Ends an attempt that failed before commit. The engine has already released
// what it latched when a call failed; abort() closes the attempt (and
// releases the latches when the workload itself gives up: kUser).
TxnOutcome abandon(Txn& txn, uint32_t type, AbortReason reason) {
  txn.abort();
  return TxnOutcome{CommitOutcome{false, reason, {}}, type, 0};
}

}  // namespace

std::string_view smallbank_mix_name(SmallBankMix m) {
  return m == SmallBankMix::kTransfers ? "transfers" : "standard";
}

void SmallBankFlags::declare(OptionSet& opts) {
  opts.add_u64("accounts", &accounts, "smallbank: number of accounts (rows in savings and in checking)", 2,
               uint64_t{1} << 34);
  opts.add_string("hot-fraction", &hot_fraction,
                  "smallbank: share (0..1) of the accounts forming the hot set (0 = no hot set)");
  opts.add_string("hot-probability", &hot_probability,
                  "smallbank: probability (0..1) that a transaction draws its accounts from the hot set");
  opts.add_choice("mix", &mix, {"standard", "transfers"},
                  "smallbank: transaction mix: standard (all six transactions) or transfers (Amalgamate, Balance "
                  "and SendPayment only, same relative weights: every transaction is net 0, so the total money "
                  "stays the loaded total across crashes)");
}

std::vector<std::string> SmallBankFlags::names() { return {"accounts", "hot-fraction", "hot-probability", "mix"}; }

Result<SmallBankOptions> SmallBankFlags::resolve() const {
  SmallBankOptions o;
  o.accounts = accounts;
  Result<double> f = parse_real("hot-fraction", hot_fraction, 0.0, 1.0);
  if (!f) return f.status();
  o.hot_fraction = *f;
  Result<double> p = parse_real("hot-probability", hot_probability, 0.0, 1.0);
  if (!p) return p.status();
  o.hot_probability = *p;
  if (mix == "standard") {
    o.mix = SmallBankMix::kStandard;
  } else if (mix == "transfers") {
    o.mix = SmallBankMix::kTransfers;
  } else {
    return Status(Errc::kInvalidArgument, fmt::format("--mix '{}': expected standard or transfers", mix));
  }
  return o;
}

SmallBankWorkload::SmallBankWorkload(const SmallBankOptions& o) : options_(o) {
  if (o.hot_fraction > 0) {
    const auto h = static_cast<uint64_t>(std::llround(o.hot_fraction * static_cast<double>(o.accounts)));
    hot_ = std::clamp<uint64_t>(h, 1, o.accounts);
  }
}

Result<std::unique_ptr<SmallBankWorkload>> SmallBankWorkload::create(const SmallBankOptions& options) {
  if (options.accounts < 2) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--accounts {} must be at least 2 (payments need two accounts)", options.accounts));
  }
  if (!(options.hot_fraction >= 0 && options.hot_fraction <= 1)) {
    return Status(Errc::kInvalidArgument, fmt::format("--hot-fraction {} must be in [0, 1]", options.hot_fraction));
  }
  if (!(options.hot_probability >= 0 && options.hot_probability <= 1)) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--hot-probability {} must be in [0, 1]", options.hot_probability));
  }
  return std::unique_ptr<SmallBankWorkload>(new SmallBankWorkload(options));
}

std::vector<TableSpec> SmallBankWorkload::tables() const {
  return {TableSpec{kSavings, "savings", kValueSize, options_.accounts},
          TableSpec{kChecking, "checking", kValueSize, options_.accounts}};
}

int64_t SmallBankWorkload::initial_balance(uint32_t table, uint64_t account) {
  // 100.00 .. 1000.00
  return 10000 + static_cast<int64_t>(mix64(account ^ (uint64_t{table} << 40)) % 90001);
}

int64_t SmallBankWorkload::initial_total() const {
  int64_t total = 0;
  for (uint64_t a = 0; a < options_.accounts; ++a) {
    total += initial_balance(kSavings, a) + initial_balance(kChecking, a);
  }
  return total;
}

Status SmallBankWorkload::load(BulkLoader& loader) const {
  uint8_t value[kValueSize];
  for (uint32_t table : {kSavings, kChecking}) {
    for (uint64_t a = 0; a < options_.accounts; ++a) {
      put_i64(value, initial_balance(table, a));
      const uint64_t tag = tag_of(table, a);
      std::memcpy(value + 8, &tag, sizeof tag);
      if (Status s = loader.add(table, a, value); !s) return s;
    }
  }
  return Status::ok();
}

bool SmallBankWorkload::pick_hot(Rng& rng) const { return hot_ > 0 && rng.chance(options_.hot_probability); }

uint64_t SmallBankWorkload::pick_in(Rng& rng, bool hot) const {
  return rng.uniform(hot ? hot_ : options_.accounts);
}

uint64_t SmallBankWorkload::pick_account(Rng& rng) const { return pick_in(rng, pick_hot(rng)); }

std::pair<uint64_t, uint64_t> SmallBankWorkload::pick_two(Rng& rng) const {
  const bool hot = pick_hot(rng);
  const uint64_t a0 = pick_in(rng, hot);
  // A hot set of one account would never give a second one: bounded retries,
  // then the next account.
  for (int i = 0; i < 8; ++i) {
    const uint64_t a1 = pick_in(rng, hot);
    if (a1 != a0) return {a0, a1};
  }
  return {a0, (a0 + 1) % options_.accounts};
}

SmallBankWorkload::Draw SmallBankWorkload::draw(Rng& rng) const {
  Type t;
  if (options_.mix == SmallBankMix::kTransfers) {
    // Amalgamate 15, Balance 15, SendPayment 25 (of 55): the standard
    // weights of the net-0 transactions.
    const uint64_t dice = rng.uniform(55);
    t = dice < 15 ? kAmalgamate : dice < 30 ? kBalance : kSendPayment;
  } else {
    const uint64_t dice = rng.uniform(100);
    t = dice < 15   ? kAmalgamate
        : dice < 30 ? kBalance
        : dice < 45 ? kDepositChecking
        : dice < 70 ? kSendPayment
        : dice < 85 ? kTransactSavings
                    : kWriteCheck;
  }
  if (t == kAmalgamate || t == kSendPayment) {
    const auto [a0, a1] = pick_two(rng);
    return {t, a0, a1};
  }
  return {t, pick_account(rng), 0};
}

TxnOutcome SmallBankWorkload::run_one(Txn& txn, Rng& rng) const {
  const Draw d = draw(rng);
  switch (d.type) {
    case kAmalgamate: return amalgamate(txn, d.a0, d.a1);
    case kBalance: return balance(txn, d.a0);
    case kDepositChecking: return deposit_checking(txn, d.a0);
    case kSendPayment: return send_payment(txn, d.a0, d.a1);
    case kTransactSavings: return transact_savings(txn, d.a0);
    case kWriteCheck: return write_check(txn, d.a0);
  }
  return {};  // every type is handled above
}

TxnOutcome SmallBankWorkload::amalgamate(Txn& txn, uint64_t a0, uint64_t a1) const {
  txn.begin();
  auto s0 = txn.update(kSavings, a0);
  if (!s0) return abandon(txn, kAmalgamate, s0.reason());
  auto c0 = txn.update(kChecking, a0);
  if (!c0) return abandon(txn, kAmalgamate, c0.reason());
  auto c1 = txn.update(kChecking, a1);
  if (!c1) return abandon(txn, kAmalgamate, c1.reason());
  const int64_t total = get_i64((*s0).data()) + get_i64((*c0).data());
  put_i64((*s0).data(), 0);
  put_i64((*c0).data(), 0);
  put_i64((*c1).data(), get_i64((*c1).data()) + total);
  return TxnOutcome{txn.commit(), kAmalgamate, 0};
}

TxnOutcome SmallBankWorkload::balance(Txn& txn, uint64_t a) const {
  txn.begin();
  auto s = txn.read(kSavings, a);
  if (!s) return abandon(txn, kBalance, s.reason());
  auto c = txn.read(kChecking, a);
  if (!c) return abandon(txn, kBalance, c.reason());
  // The sum is what the transaction "returns"; nothing to do with it here.
  (void)(get_i64((*s).data()) + get_i64((*c).data()));
  return TxnOutcome{txn.commit(), kBalance, 0};
}

TxnOutcome SmallBankWorkload::deposit_checking(Txn& txn, uint64_t a) const {
  txn.begin();
  auto c = txn.update(kChecking, a);
  if (!c) return abandon(txn, kDepositChecking, c.reason());
  put_i64((*c).data(), get_i64((*c).data()) + kDepositAmount);
  return TxnOutcome{txn.commit(), kDepositChecking, kDepositAmount};
}

TxnOutcome SmallBankWorkload::send_payment(Txn& txn, uint64_t a0, uint64_t a1) const {
  txn.begin();
  auto c0 = txn.update(kChecking, a0);
  if (!c0) return abandon(txn, kSendPayment, c0.reason());
  auto c1 = txn.update(kChecking, a1);
  if (!c1) return abandon(txn, kSendPayment, c1.reason());
  const int64_t from = get_i64((*c0).data());
  if (from < kPaymentAmount) return abandon(txn, kSendPayment, AbortReason::kUser);  // insufficient funds
  put_i64((*c0).data(), from - kPaymentAmount);
  put_i64((*c1).data(), get_i64((*c1).data()) + kPaymentAmount);
  return TxnOutcome{txn.commit(), kSendPayment, 0};
}

TxnOutcome SmallBankWorkload::transact_savings(Txn& txn, uint64_t a) const {
  txn.begin();
  auto s = txn.update(kSavings, a);
  if (!s) return abandon(txn, kTransactSavings, s.reason());
  const int64_t next = get_i64((*s).data()) + kTransactAmount;
  if (next < 0) return abandon(txn, kTransactSavings, AbortReason::kUser);  // a withdrawal beyond the balance
  put_i64((*s).data(), next);
  return TxnOutcome{txn.commit(), kTransactSavings, kTransactAmount};
}

TxnOutcome SmallBankWorkload::write_check(Txn& txn, uint64_t a) const {
  txn.begin();
  auto s = txn.read(kSavings, a);
  if (!s) return abandon(txn, kWriteCheck, s.reason());
  auto c = txn.update(kChecking, a);
  if (!c) return abandon(txn, kWriteCheck, c.reason());
  const int64_t funds = get_i64((*s).data()) + get_i64((*c).data());
  const int64_t debit = funds < kCheckAmount ? kCheckAmount + kOverdraftPenalty : kCheckAmount;
  put_i64((*c).data(), get_i64((*c).data()) - debit);
  return TxnOutcome{txn.commit(), kWriteCheck, -debit};
}

Result<Audit> SmallBankWorkload::audit(Session& session) const {
  Audit a;
  int64_t total = 0;
  for (uint32_t table : {kSavings, kChecking}) {
    const std::string_view tname = table == kSavings ? "savings" : "checking";
    Status s = read_table(session, table, tname, options_.accounts, [&](uint64_t key, std::span<const uint8_t> value) {
      total += get_i64(value.data());
      uint64_t tag;
      std::memcpy(&tag, value.data() + 8, sizeof tag);
      if (tag != tag_of(table, key)) {
        a.problem(fmt::format("{}: account {} carries another row's tag (a write landed on the wrong row)", tname,
                              key));
      }
    }, a);
    if (!s) return s;
  }
  a.value = total;
  return a;
}

}  // namespace pandora::workloads
