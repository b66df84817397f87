#include "litmus/driver/litmus_spec.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

namespace pandora::litmus {

namespace {

std::array<uint8_t, kValueSize> encode(uint64_t v) {
  std::array<uint8_t, kValueSize> b{};
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

uint64_t decode(std::span<const uint8_t> s) {
  uint64_t v = 0;
  std::memcpy(&v, s.data(), std::min<size_t>(sizeof v, s.size()));
  return v;
}

CommitOutcome user_abort(Txn& t) {
  t.abort();
  return CommitOutcome{false, AbortReason::kUser, {}};
}

// Write-skew values: round << 1 | bit.
uint64_t round_of(uint64_t v) { return v >> 1; }
bool bit_of(uint64_t v) { return (v & 1) != 0; }

CommitOutcome direct_txn(Txn& t, const InstanceSpec& s, uint32_t inst, Rng& rng, uint64_t tag) {
  std::vector<uint32_t> order(s.vars);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const auto v = encode(tag);
  enum { kWrite, kInsert, kDelete } op = kWrite;
  if (s.kind != Kind::kDirect) {
    const uint64_t r = rng() % 100;
    if (s.kind == Kind::kDirectInsert) op = r < 40 ? kInsert : r < 80 ? kDelete : kWrite;
    else op = r < 30 ? kInsert : r < 70 ? kDelete : kWrite;
  }
  t.begin();
  for (uint32_t var : order) {
    const uint64_t key = key_of(inst, var);
    AbortReason r = AbortReason::kNone;
    switch (op) {
      case kInsert:
        r = t.insert(kTable, key, v);
        break;
      case kDelete:
        r = t.remove(kTable, key);
        break;
      case kWrite:
        // Blind writes leave their latch CASes pending until commit (so an
        // abort meets latches in every state); updates latch at once.
        if (rng() % 2 == 0) {
          r = t.write(kTable, key, v);
        } else {
          auto cur = t.update(kTable, key);
          r = cur.reason();
          if (cur) std::memcpy((*cur).data(), v.data(), kValueSize);
        }
        break;
    }
    if (r != AbortReason::kNone) return t.commit();  // reports the abort
  }
  return t.commit();
}

CommitOutcome skew_txn(Txn& t, const InstanceSpec& s, uint32_t inst, Rng& rng) {
  t.begin();
  if (rng() % 100 < 30) {  // reset
    uint64_t round = 0;
    bool any = false;
    std::vector<std::span<uint8_t>> vals;
    for (uint32_t i = 0; i < s.vars; ++i) {
      auto cur = t.update(kTable, key_of(inst, i));
      if (!cur) return t.commit();
      const uint64_t x = decode(*cur);
      round = std::max(round, round_of(x));
      any |= bit_of(x);
      vals.push_back(*cur);
    }
    if (!any) return user_abort(t);
    const auto next = encode((round + 1) << 1);
    for (auto v : vals) std::memcpy(v.data(), next.data(), kValueSize);
    return t.commit();
  }
  const uint32_t i = static_cast<uint32_t>(rng() % s.vars);
  auto x = t.read(kTable, key_of(inst, i));
  if (!x) return t.commit();
  const uint64_t xv = decode(*x);
  if (bit_of(xv)) return user_abort(t);
  const auto y = encode((round_of(xv) << 1) | 1);
  if (AbortReason r = t.write(kTable, key_of(inst, (i + 1) % s.vars), y); r != AbortReason::kNone) return t.commit();
  return t.commit();
}

// Variables: X = 0, targets Y_1..Y_m = 1..m, W = m+1.
CommitOutcome indirect_txn(Txn& t, const InstanceSpec& s, uint32_t inst, Rng& rng) {
  const uint32_t m = s.vars - 2;
  const uint32_t w = s.vars - 1;
  t.begin();
  if (rng() % 100 < 25) {  // T_w: W++ (touches nothing else)
    auto cur = t.update(kTable, key_of(inst, w));
    if (!cur) return t.commit();
    const auto enc = encode(decode(*cur) + 1);
    std::memcpy((*cur).data(), enc.data(), kValueSize);
    return t.commit();
  }
  const uint32_t k = 1 + static_cast<uint32_t>(rng() % m);
  auto o = t.read(kTable, key_of(inst, w));
  if (!o) return t.commit();
  auto x = t.update(kTable, key_of(inst, 0));
  if (!x) return t.commit();
  const uint64_t nx = decode(*x) + 1;
  const auto enc = encode(nx);
  std::memcpy((*x).data(), enc.data(), kValueSize);
  if (AbortReason r = t.write(kTable, key_of(inst, k), enc); r != AbortReason::kNone) return t.commit();
  return t.commit();
}

}  // namespace

std::string instance_name(const InstanceSpec& s) {
  switch (s.kind) {
    case Kind::kDirect:
      return s.vars == 2 ? "litmus1" : fmt::format("litmus1x{}", s.vars);
    case Kind::kDirectInsert:
      return "litmus1-insert";
    case Kind::kDirectDelete:
      return "litmus1-delete";
    case Kind::kWriteSkew:
      return s.vars == 2 ? "litmus2" : fmt::format("litmus2x{}", s.vars);
    case Kind::kIndirect:
      return s.vars == 4 ? "litmus3" : fmt::format("litmus3x{}", s.vars - 2);
  }
  return "?";
}

Result<std::vector<InstanceSpec>> parse_test(std::string_view name) {
  const std::vector<InstanceSpec> extended = {{Kind::kDirect, 4}, {Kind::kWriteSkew, 3}, {Kind::kIndirect, 6}};
  if (name == "litmus1") return std::vector<InstanceSpec>{{Kind::kDirect, 2}};
  if (name == "litmus1-insert") return std::vector<InstanceSpec>{{Kind::kDirectInsert, 2}};
  if (name == "litmus1-delete") return std::vector<InstanceSpec>{{Kind::kDirectDelete, 2}};
  if (name == "litmus2") return std::vector<InstanceSpec>{{Kind::kWriteSkew, 2}};
  if (name == "litmus3") return std::vector<InstanceSpec>{{Kind::kIndirect, 4}};
  if (name == "extended") return extended;
  if (name == "all") {
    std::vector<InstanceSpec> all = {{Kind::kDirect, 2},    {Kind::kDirectInsert, 2}, {Kind::kDirectDelete, 2},
                                     {Kind::kWriteSkew, 2}, {Kind::kIndirect, 4}};
    all.insert(all.end(), extended.begin(), extended.end());
    return all;
  }
  return Status(Errc::kInvalidArgument,
                fmt::format("unknown --test '{}' (litmus1, litmus1-insert, litmus1-delete, litmus2, litmus3, "
                            "extended, all)",
                            name));
}

bool initially_present(Kind k) { return k != Kind::kDirectInsert; }

CommitOutcome run_litmus_txn(Txn& t, const InstanceSpec& spec, uint32_t instance, Rng& rng, uint64_t tag) {
  switch (spec.kind) {
    case Kind::kDirect:
    case Kind::kDirectInsert:
    case Kind::kDirectDelete:
      return direct_txn(t, spec, instance, rng, tag);
    case Kind::kWriteSkew:
      return skew_txn(t, spec, instance, rng);
    case Kind::kIndirect:
      return indirect_txn(t, spec, instance, rng);
  }
  return CommitOutcome{false, AbortReason::kInvalid, {}};
}

std::optional<std::vector<uint64_t>> run_assert_txn(Txn& t, const InstanceSpec& spec, uint32_t instance,
                                                    bool* saw_absent) {
  std::vector<uint64_t> values;
  if (saw_absent) *saw_absent = false;
  t.begin();
  for (uint32_t i = 0; i < spec.vars; ++i) {
    auto v = t.read(kTable, key_of(instance, i));
    if (!v) {
      if (saw_absent) *saw_absent = v.reason() == AbortReason::kNotFound;
      t.commit();
      return std::nullopt;
    }
    values.push_back(decode(*v));
  }
  if (!t.commit().committed) return std::nullopt;  // not a consistent snapshot
  return values;
}

namespace {

// One key in its own read-only transaction: {committed, value or absent}.
std::pair<bool, std::optional<uint64_t>> read_one(Txn& t, uint64_t key) {
  t.begin();
  auto v = t.read(kTable, key);
  if (!v) {
    const bool absent = v.reason() == AbortReason::kNotFound;
    t.commit();
    return {absent, std::nullopt};
  }
  const uint64_t x = decode(*v);
  return {t.commit().committed, x};
}

}  // namespace

std::optional<std::vector<std::optional<uint64_t>>> probe_mixed_presence(Txn& t, const InstanceSpec& spec,
                                                                         uint32_t instance) {
  if (spec.kind != Kind::kDirectInsert && spec.kind != Kind::kDirectDelete) return std::nullopt;
  std::vector<std::optional<uint64_t>> first;
  for (uint32_t i = 0; i < spec.vars; ++i) {
    auto [ok, v] = read_one(t, key_of(instance, i));
    if (!ok) return std::nullopt;
    first.push_back(v);
  }
  for (uint32_t a = 0; a < spec.vars; ++a) {
    if (!first[a]) continue;
    for (uint32_t b = 0; b < spec.vars; ++b) {
      if (first[b]) continue;
      auto [ok_a1, a1] = read_one(t, key_of(instance, a));
      if (!ok_a1 || !a1) return std::nullopt;
      auto [ok_b, vb] = read_one(t, key_of(instance, b));
      if (!ok_b || vb) return std::nullopt;
      auto [ok_a2, a2] = read_one(t, key_of(instance, a));
      if (!ok_a2 || a2 != a1) return std::nullopt;
      std::vector<std::optional<uint64_t>> evidence = first;
      evidence[a] = a1;
      evidence[b] = std::nullopt;
      return evidence;
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_assert(const InstanceSpec& spec, std::span<const std::optional<uint64_t>> v) {
  switch (spec.kind) {
    case Kind::kDirect:
    case Kind::kDirectInsert:
    case Kind::kDirectDelete: {
      size_t present = 0;
      for (const auto& x : v) present += x.has_value();
      if (present != 0 && present != v.size()) return std::string("some keys present, others absent");
      for (size_t i = 1; i < v.size(); ++i) {
        if (v[i] && v[0] && *v[i] != *v[0]) return std::string("values differ");
      }
      return std::nullopt;
    }
    case Kind::kWriteSkew: {
      for (const auto& x : v) {
        if (!x) return std::string("key absent");
      }
      bool all = true;
      for (size_t i = 0; i < v.size(); ++i) {
        if (round_of(*v[i]) != round_of(*v[0])) return std::string("rounds differ");
        all &= bit_of(*v[i]);
      }
      if (all) return std::string("write skew: every bit set in one round");
      return std::nullopt;
    }
    case Kind::kIndirect: {
      for (const auto& x : v) {
        if (!x) return std::string("key absent");
      }
      for (size_t i = 1; i + 1 < v.size(); ++i) {  // W (last) is unconstrained
        if (*v[i] > *v[0]) return fmt::format("Y{} > X", i);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::string format_values(const InstanceSpec& spec, std::span<const std::optional<uint64_t>> v) {
  static constexpr std::string_view kNames[] = {"X", "Y", "Z", "W", "V", "U", "T", "S"};
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ' ';
    std::string name = std::string(kNames[i % 8]);
    if (spec.kind == Kind::kIndirect && i > 0) name = i + 1 == v.size() ? "W" : fmt::format("Y{}", i);
    if (!v[i]) {
      out += fmt::format("{}=absent", name);
    } else if (spec.kind == Kind::kWriteSkew) {
      out += fmt::format("{}=(round {}, {})", name, round_of(*v[i]), bit_of(*v[i]) ? 1 : 0);
    } else {
      out += fmt::format("{}={:#x}", name, *v[i]);
    }
  }
  return out;
}

}  // namespace pandora::litmus
