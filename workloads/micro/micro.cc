#include "workloads/micro/micro.h"

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "workloads/bench/flag_values.h"

namespace pandora::workloads {

namespace {

uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store_le64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

uint8_t filler_byte(uint64_t key, size_t i) { return static_cast<uint8_t>(key * 131 + i * 7 + 1); }

}  // namespace

void MicroFlags::declare(OptionSet& opts) {
  opts.add_u64("keys", &keys, "micro: number of keys (rows) in the table", 1, uint64_t{1} << 34);
  opts.add_u64("value-size", &value_size, "micro: bytes of each value (the first 8 hold the counter)", 8,
               MicroWorkload::kMaxValueSize);
  opts.add_string("write-ratio", &write_ratio,
                  "micro: probability (0..1) that an operation is a read-modify-write increment, else a read");
  opts.add_u64("ops-per-txn", &ops_per_txn, "micro: operations per transaction", 1, MicroWorkload::kMaxOpsPerTxn);
  opts.add_choice("skew", &skew, {"uniform", "zipf"}, "micro: key distribution");
  opts.add_string("zipf-theta", &zipf_theta, "micro: Zipf skew theta in [0, 1) for --skew zipf (0 = uniform)");
}

std::vector<std::string> MicroFlags::names() {
  return {"keys", "value-size", "write-ratio", "ops-per-txn", "skew", "zipf-theta"};
}

Result<MicroOptions> MicroFlags::resolve() const {
  MicroOptions o;
  o.keys = keys;
  o.value_size = static_cast<uint32_t>(value_size);
  Result<double> wr = parse_real("write-ratio", write_ratio, 0.0, 1.0);
  if (!wr) return wr.status();
  o.write_ratio = *wr;
  o.ops_per_txn = static_cast<uint32_t>(ops_per_txn);
  o.zipf = skew == "zipf";
  Result<double> theta = parse_real("zipf-theta", zipf_theta, 0.0, 0.999999);
  if (!theta) {
    return Status(Errc::kInvalidArgument, fmt::format("--zipf-theta: '{}' must be a number with 0 <= theta < 1",
                                                      zipf_theta));
  }
  o.zipf_theta = *theta;
  return o;
}

Result<std::unique_ptr<MicroWorkload>> MicroWorkload::create(const MicroOptions& options) {
  auto bad = [](std::string m) { return Status(Errc::kInvalidArgument, std::move(m)); };
  if (options.keys == 0) return bad("--keys must be at least 1");
  if (options.value_size < 8 || options.value_size > kMaxValueSize) {
    return bad(fmt::format("--value-size {} must be in 8..{} (the first 8 bytes hold the counter)",
                           options.value_size, kMaxValueSize));
  }
  if (!(options.write_ratio >= 0.0 && options.write_ratio <= 1.0)) {
    return bad(fmt::format("--write-ratio {} must be in [0, 1]", options.write_ratio));
  }
  if (options.ops_per_txn == 0 || options.ops_per_txn > kMaxOpsPerTxn) {
    return bad(fmt::format("--ops-per-txn {} must be in 1..{}", options.ops_per_txn, kMaxOpsPerTxn));
  }
  std::unique_ptr<MicroWorkload> w(new MicroWorkload(options));
  if (options.zipf) {
    Result<ZipfGenerator> z = ZipfGenerator::create(options.keys, options.zipf_theta);
    if (!z) return z.status();
    w->zipf_.emplace(*z);
  }
  return w;
}

std::vector<TableSpec> MicroWorkload::tables() const {
  return {TableSpec{kTable, "micro", options_.value_size, options_.keys}};
}

std::vector<uint8_t> MicroWorkload::initial_value(uint64_t key) const {
  std::vector<uint8_t> v(options_.value_size);
  store_le64(v.data(), 0);
  for (size_t i = 8; i < v.size(); ++i) v[i] = filler_byte(key, i);
  return v;
}

bool MicroWorkload::filler_intact(uint64_t key, std::span<const uint8_t> value) const {
  for (size_t i = 8; i < value.size(); ++i) {
    if (value[i] != filler_byte(key, i)) return false;
  }
  return true;
}

Status MicroWorkload::load(BulkLoader& loader) const {
  for (uint64_t key = 0; key < options_.keys; ++key) {
    if (Status s = loader.add(kTable, key, initial_value(key)); !s) return s;
  }
  return Status::ok();
}

uint64_t MicroWorkload::pick_key(Rng& rng) const {
  return zipf_ ? zipf_->next(rng) : rng.uniform(options_.keys);
}

TxnOutcome MicroWorkload::run_one(Txn& txn, Rng& rng) const {
  // Draw the whole transaction first so its type is known even if it aborts
  // at the first operation.
  std::array<uint64_t, kMaxOpsPerTxn> keys;
  std::array<bool, kMaxOpsPerTxn> writes;
  bool any_write = false;
  for (uint32_t i = 0; i < options_.ops_per_txn; ++i) {
    keys[i] = pick_key(rng);
    writes[i] = rng.chance(options_.write_ratio);
    any_write |= writes[i];
  }
  TxnOutcome out;
  out.type = any_write ? 1 : 0;
  txn.begin();
  for (uint32_t i = 0; i < options_.ops_per_txn; ++i) {
    if (writes[i]) {
      auto v = txn.update(kTable, keys[i]);
      if (!v) {
        txn.abort();
        out.commit = CommitOutcome{false, v.reason(), {}};
        return out;
      }
      // A key drawn twice is the same item: the second increment lands on
      // the same buffer, and both count.
      store_le64((*v).data(), load_le64((*v).data()) + 1);
      ++out.delta;
    } else {
      auto v = txn.read(kTable, keys[i]);
      if (!v) {
        txn.abort();
        out.commit = CommitOutcome{false, v.reason(), {}};
        return out;
      }
    }
  }
  out.commit = txn.commit();
  return out;
}

Result<Audit> MicroWorkload::audit(Session& session) const {
  Audit a;
  uint64_t sum = 0;
  Status s = read_table(session, kTable, "micro", options_.keys, [&](uint64_t key, std::span<const uint8_t> value) {
    sum += load_le64(value.data());
    if (!filler_intact(key, value)) {
      a.problem(fmt::format("micro: key {}: bytes 8..{} of its value were overwritten", key, value.size()));
    }
  }, a);
  if (!s) return s;
  a.value = static_cast<int64_t>(sum);
  return a;
}

}  // namespace pandora::workloads
