// The micro-benchmark (seed 4.4.1): one table of 8-byte keys and (default)
// 48-byte values, transactions of --ops-per-txn operations on keys drawn
// uniformly or Zipf-skewed; each operation is a write with probability
// --write-ratio, else a read.
//
// A write is a read-modify-write increment of the counter in the value's
// first 8 bytes (little-endian uint64); the rest of the value is a pattern
// derived from the key, which the check verifies was never disturbed. The
// invariant: the sum of all counters grows by exactly the number of
// increments of committed transactions (TxnOutcome::delta).
//
// Keys are 0..keys-1; under Zipf, key k has rank k (placement hashes keys,
// so the hot keys still spread over shards and memory nodes).
//
// Defaults follow the seed's evaluation (4.4.1 and its configuration, a
// fork of FORD's): 8-byte keys, 48-byte values, 1,000,000 keys drawn
// uniformly, one operation per transaction, 100% writes. FORD's own
// micro-benchmark differs in three flags: --write-ratio 0.25 --skew zipf
// (theta 0.99) --value-size 40.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/options.h"
#include "workloads/bench/workload.h"
#include "workloads/bench/zipf.h"

namespace pandora::workloads {

struct MicroOptions {
  uint64_t keys = 1000000;
  uint32_t value_size = 48;   // >= 8 (the counter)
  double write_ratio = 1.0;   // 0..1
  uint32_t ops_per_txn = 1;
  bool zipf = false;          // else uniform
  double zipf_theta = 0.99;
};

// The flag form, shared by pandora-bench and tests.
struct MicroFlags {
  uint64_t keys = 1000000;
  uint64_t value_size = 48;
  std::string write_ratio = "1";
  uint64_t ops_per_txn = 1;
  std::string skew = "uniform";
  std::string zipf_theta = "0.99";

  // --keys, --value-size, --write-ratio, --ops-per-txn, --skew, --zipf-theta.
  void declare(OptionSet& opts);
  static std::vector<std::string> names();
  Result<MicroOptions> resolve() const;
};

class MicroWorkload final : public Workload {
 public:
  static constexpr uint32_t kTable = 1;
  static constexpr uint32_t kMaxValueSize = 4096;
  static constexpr uint32_t kMaxOpsPerTxn = 64;

  // kInvalidArgument naming the flag for out-of-range options.
  static Result<std::unique_ptr<MicroWorkload>> create(const MicroOptions& options);

  std::string_view name() const override { return "micro"; }
  std::vector<TableSpec> tables() const override;
  Status load(BulkLoader& loader) const override;
  const std::vector<std::string>& txn_types() const override { return types_; }
  TxnOutcome run_one(Txn& txn, Rng& rng) const override;
  std::string_view invariant_name() const override { return "sum of counters"; }
  Result<Audit> audit(Session& session) const override;

  const MicroOptions& options() const { return options_; }

  // The value a row is loaded with (counter 0, then the key's pattern).
  std::vector<uint8_t> initial_value(uint64_t key) const;

 private:
  explicit MicroWorkload(const MicroOptions& o) : options_(o) {}
  uint64_t pick_key(Rng& rng) const;
  bool filler_intact(uint64_t key, std::span<const uint8_t> value) const;

  MicroOptions options_;
  std::optional<ZipfGenerator> zipf_;
  std::vector<std::string> types_{"read-only", "read-write"};
};

}  // namespace pandora::workloads
