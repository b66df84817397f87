// SmallBank: two tables, savings and checking, one row per account in each;
// a value is a little-endian int64 balance (in cents) followed by an 8-byte
// tag derived from the account id (16 bytes, as in FORD's evaluation; the
// check verifies the tag, which catches a write that lands on the wrong row).
//
// The six transactions and the usual mix:
//   Amalgamate       15%  move all of a0's savings+checking into a1's checking  (net 0)
//   Balance          15%  read a's savings and checking (read-only)             (net 0)
//   DepositChecking  15%  checking[a] += 1.30                                    (net +130)
//   SendPayment      25%  checking[a0] -= 5.00, checking[a1] += 5.00;
//                         user abort if checking[a0] < 5.00                     (net 0)
//   TransactSavings  15%  savings[a] += 20.20                                    (net +2020)
//   WriteCheck       15%  checking[a] -= 5.00, or 5.01 (overdraft penalty) when
//                         savings[a] + checking[a] < 5.00                        (net -500/-501)
//
// --mix transfers runs only the three net-0 transactions, Amalgamate,
// Balance and SendPayment, with the same relative weights (15:15:25 of 55):
// no committed transaction changes the total, so the total money must equal
// the loaded total at any quiet point, whatever crashed and was recovered in
// between (the failover tests rely on this; with the standard mix the total
// drifts by the nets of transactions whose outcome a crash left unknown).
//
// Accounts: with probability --hot-probability a transaction draws its
// account(s) from the hot set (the first --hot-fraction of the accounts),
// else from all accounts, uniformly; the choice is made once per
// transaction, so both accounts of a two-account transaction are hot or
// neither is. Two-account transactions draw distinct accounts.
//
// Defaults follow FORD's SmallBank configuration, which the seed's
// evaluation reuses: 100,000 accounts, 4,000 of them hot (4%), 90% of the
// transactions on the hot set, hot-or-not decided per transaction.
// Invariant: total money over both tables changes by exactly the sum of the
// committed transactions' nets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/options.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

// Which transactions run_one() draws: the usual six, or only the net-0 ones.
enum class SmallBankMix : uint8_t { kStandard, kTransfers };
std::string_view smallbank_mix_name(SmallBankMix m);  // "standard" | "transfers"

struct SmallBankOptions {
  uint64_t accounts = 100000;
  SmallBankMix mix = SmallBankMix::kStandard;
  double hot_fraction = 0.04;     // share of accounts in the hot set (0 = no hot set)
  double hot_probability = 0.9;   // chance a transaction picks its accounts from the hot set
};

struct SmallBankFlags {
  uint64_t accounts = 100000;
  std::string hot_fraction = "0.04";
  std::string hot_probability = "0.9";
  std::string mix = "standard";

  // --accounts, --hot-fraction, --hot-probability, --mix.
  void declare(OptionSet& opts);
  static std::vector<std::string> names();
  Result<SmallBankOptions> resolve() const;
};

class SmallBankWorkload final : public Workload {
 public:
  static constexpr uint32_t kSavings = 10;
  static constexpr uint32_t kChecking = 11;
  static constexpr uint32_t kValueSize = 16;

  enum Type : uint32_t { kAmalgamate, kBalance, kDepositChecking, kSendPayment, kTransactSavings, kWriteCheck };
  static constexpr int64_t kDepositAmount = 130;
  static constexpr int64_t kTransactAmount = 2020;
  static constexpr int64_t kPaymentAmount = 500;
  static constexpr int64_t kCheckAmount = 500;
  static constexpr int64_t kOverdraftPenalty = 1;

  static Result<std::unique_ptr<SmallBankWorkload>> create(const SmallBankOptions& options);

  std::string_view name() const override { return "smallbank"; }
  std::vector<TableSpec> tables() const override;
  Status load(BulkLoader& loader) const override;
  const std::vector<std::string>& txn_types() const override { return types_; }
  TxnOutcome run_one(Txn& txn, Rng& rng) const override;
  std::string_view invariant_name() const override { return "total money (cents)"; }
  Result<Audit> audit(Session& session) const override;

  const SmallBankOptions& options() const { return options_; }
  uint64_t hot_accounts() const { return hot_; }
  // Loaded balances (deterministic in the account id and table).
  static int64_t initial_balance(uint32_t table, uint64_t account);
  // What the loaded data adds up to.
  int64_t initial_total() const;

  // One transaction of the mix: its type and account(s) (a1 only for
  // Amalgamate and SendPayment, distinct from a0). run_one() runs what this
  // draws; the PostgreSQL peer draws the same way.
  struct Draw {
    Type type = kBalance;
    uint64_t a0 = 0;
    uint64_t a1 = 0;
  };
  Draw draw(Rng& rng) const;

  // The individual transactions (public for tests); each begins, runs and
  // commits or aborts `txn`.
  TxnOutcome amalgamate(Txn& txn, uint64_t a0, uint64_t a1) const;
  TxnOutcome balance(Txn& txn, uint64_t a) const;
  TxnOutcome deposit_checking(Txn& txn, uint64_t a) const;
  TxnOutcome send_payment(Txn& txn, uint64_t a0, uint64_t a1) const;
  TxnOutcome transact_savings(Txn& txn, uint64_t a) const;
  TxnOutcome write_check(Txn& txn, uint64_t a) const;

 private:
  explicit SmallBankWorkload(const SmallBankOptions& o);
  // Whether this transaction draws from the hot set, then its account(s).
  bool pick_hot(Rng& rng) const;
  uint64_t pick_account(Rng& rng) const;
  uint64_t pick_in(Rng& rng, bool hot) const;
  std::pair<uint64_t, uint64_t> pick_two(Rng& rng) const;

  SmallBankOptions options_;
  uint64_t hot_ = 0;
  std::vector<std::string> types_{"Amalgamate",  "Balance",         "DepositChecking",
                                  "SendPayment", "TransactSavings", "WriteCheck"};
};

}  // namespace pandora::workloads
