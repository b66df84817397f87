#include "workloads/tatp/tatp_schema.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace pandora::workloads::tatp {

namespace {

constexpr uint64_t kMaxSid = (uint64_t{1} << 32) - 1;
// The population's own stream: independent of --seed, so every run (and the
// audit) agrees on what was loaded.
constexpr uint64_t kPopulationSalt = 0x7a7b5eed7a7b5eedull;

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void put_text(uint8_t* p, const std::string& s, size_t n) { std::memcpy(p, s.data(), std::min(n, s.size())); }
std::string get_text(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

bool all_of_class(const std::string& s, size_t n, char lo, char hi) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [&](char c) { return c >= lo && c <= hi; });
}

// k distinct values of `pool` in random order (a partial Fisher-Yates).
template <size_t N>
std::vector<uint8_t> distinct(Rng& rng, std::array<uint8_t, N> pool, size_t k) {
  for (size_t i = 0; i < k; ++i) std::swap(pool[i], pool[i + rng.uniform(N - i)]);
  std::vector<uint8_t> out(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(k));
  std::sort(out.begin(), out.end());
  return out;
}

bool valid_type(uint32_t t) { return t >= 1 && t <= kTypes; }
bool valid_start(uint32_t st) { return st == 0 || st == 8 || st == 16; }

}  // namespace

std::optional<uint64_t> pack_access_info(uint64_t s_id, uint32_t ai_type) {
  if (s_id == 0 || s_id > kMaxSid || !valid_type(ai_type)) return std::nullopt;
  return (s_id << 2) | (ai_type - 1);
}

std::optional<uint64_t> pack_special_facility(uint64_t s_id, uint32_t sf_type) {
  if (s_id == 0 || s_id > kMaxSid || !valid_type(sf_type)) return std::nullopt;
  return (s_id << 2) | (sf_type - 1);
}

std::optional<uint64_t> pack_call_forwarding(uint64_t s_id, uint32_t sf_type, uint32_t start_time) {
  if (s_id == 0 || s_id > kMaxSid || !valid_type(sf_type) || !valid_start(start_time)) return std::nullopt;
  return (s_id << 4) | (uint64_t{sf_type - 1} << 2) | (start_time / 8);
}

CallForwardingKey unpack_call_forwarding(uint64_t key) {
  return {key >> 4, static_cast<uint32_t>((key >> 2) & 3) + 1, static_cast<uint32_t>(key & 3) * 8};
}

std::string sub_nbr_of(uint64_t s_id) { return fmt::format("{:015d}", s_id); }

uint64_t sub_nbr_key(std::string_view sub_nbr) {
  uint64_t k = 0;
  for (char c : sub_nbr) k = (k << 4) | static_cast<uint64_t>(c - '0');
  return k;
}

uint64_t nurand_a(uint64_t subscribers) {
  if (subscribers <= 1'000'000) return 65535;
  if (subscribers <= 10'000'000) return 1048575;
  return 2097151;
}

uint64_t pick_subscriber(Rng& rng, uint64_t subscribers, uint64_t a) {
  const uint64_t x = rng.uniform(a + 1);            // 0..A
  const uint64_t y = 1 + rng.uniform(subscribers);  // 1..N
  return ((x | y) % subscribers) + 1;
}

// ---- rows -------------------------------------------------------------------

std::vector<uint8_t> encode(const SubscriberRow& r) {
  std::vector<uint8_t> v(kSubscriberBytes, 0);
  put_u32(&v[0], r.s_id);
  put_text(&v[4], r.sub_nbr, kNumberDigits);
  std::memcpy(&v[kSubscriberBitsOffset], &r.bits, sizeof r.bits);
  for (size_t i = 0; i < 10; ++i) v[21 + i / 2] |= static_cast<uint8_t>((r.hex[i] & 0xf) << (4 * (i % 2)));
  std::memcpy(&v[26], r.byte2.data(), r.byte2.size());
  put_u32(&v[36], r.msc_location);
  put_u32(&v[kSubscriberVlrOffset], r.vlr_location);
  return v;
}

SubscriberRow decode_subscriber(std::span<const uint8_t> v) {
  SubscriberRow r;
  r.s_id = get_u32(&v[0]);
  r.sub_nbr = get_text(&v[4], kNumberDigits);
  std::memcpy(&r.bits, &v[kSubscriberBitsOffset], sizeof r.bits);
  for (size_t i = 0; i < 10; ++i) r.hex[i] = static_cast<uint8_t>((v[21 + i / 2] >> (4 * (i % 2))) & 0xf);
  std::memcpy(r.byte2.data(), &v[26], r.byte2.size());
  r.msc_location = get_u32(&v[36]);
  r.vlr_location = get_u32(&v[kSubscriberVlrOffset]);
  return r;
}

std::vector<uint8_t> encode(const AccessInfoRow& r) {
  std::vector<uint8_t> v(kAccessInfoBytes, 0);
  put_u32(&v[0], r.s_id);
  v[4] = r.ai_type;
  v[5] = r.data1;
  v[6] = r.data2;
  put_text(&v[7], r.data3, 3);
  put_text(&v[10], r.data4, 5);
  return v;
}

AccessInfoRow decode_access_info(std::span<const uint8_t> v) {
  return {get_u32(&v[0]), v[4], v[5], v[6], get_text(&v[7], 3), get_text(&v[10], 5)};
}

std::vector<uint8_t> encode(const SpecialFacilityRow& r) {
  std::vector<uint8_t> v(kSpecialFacilityBytes, 0);
  put_u32(&v[0], r.s_id);
  v[4] = r.sf_type;
  v[kSpecialFacilityActiveOffset] = r.is_active;
  v[6] = r.error_cntrl;
  v[kSpecialFacilityDataAOffset] = r.data_a;
  put_text(&v[8], r.data_b, 5);
  v[kSpecialFacilityMaskOffset] = r.cf_mask;
  return v;
}

SpecialFacilityRow decode_special_facility(std::span<const uint8_t> v) {
  return {get_u32(&v[0]), v[4], v[kSpecialFacilityActiveOffset], v[6], v[kSpecialFacilityDataAOffset],
          get_text(&v[8], 5), v[kSpecialFacilityMaskOffset]};
}

std::vector<uint8_t> encode(const CallForwardingRow& r) {
  std::vector<uint8_t> v(kCallForwardingBytes, 0);
  put_u32(&v[0], r.s_id);
  v[4] = r.sf_type;
  v[5] = r.start_time;
  v[kCallForwardingEndOffset] = r.end_time;
  put_text(&v[7], r.numberx, kNumberDigits);
  return v;
}

CallForwardingRow decode_call_forwarding(std::span<const uint8_t> v) {
  return {get_u32(&v[0]), v[4], v[5], v[kCallForwardingEndOffset], get_text(&v[7], kNumberDigits)};
}

std::string check_row(const SubscriberRow& r, uint64_t s_id) {
  if (r.s_id != s_id) return fmt::format("carries s_id {}", r.s_id);
  if (r.sub_nbr != sub_nbr_of(s_id)) return fmt::format("sub_nbr '{}' is not {}", r.sub_nbr, sub_nbr_of(s_id));
  if (r.bits >> 10) return fmt::format("bits 0x{:x} beyond bit_10", r.bits);
  if (r.msc_location == 0 || r.vlr_location == 0) return "msc_location/vlr_location 0 (range 1..2^32-1)";
  return "";
}

std::string check_row(const AccessInfoRow& r, uint64_t s_id, uint32_t ai_type) {
  if (r.s_id != s_id || r.ai_type != ai_type) return fmt::format("carries key ({}, {})", r.s_id, r.ai_type);
  if (!all_of_class(r.data3, 3, 'A', 'Z') || !all_of_class(r.data4, 5, 'A', 'Z')) return "data3/data4 not A-Z";
  return "";
}

std::string check_row(const SpecialFacilityRow& r, uint64_t s_id, uint32_t sf_type) {
  if (r.s_id != s_id || r.sf_type != sf_type) return fmt::format("carries key ({}, {})", r.s_id, r.sf_type);
  if (r.is_active > 1) return fmt::format("is_active {}", r.is_active);
  if (!all_of_class(r.data_b, 5, 'A', 'Z')) return "data_b not A-Z";
  if (r.cf_mask >> kStartTimes) return fmt::format("cf_mask 0x{:x} beyond 3 start times", r.cf_mask);
  return "";
}

std::string check_row(const CallForwardingRow& r, uint64_t s_id, uint32_t sf_type, uint32_t start_time) {
  if (r.s_id != s_id || r.sf_type != sf_type || r.start_time != start_time) {
    return fmt::format("carries key ({}, {}, {})", r.s_id, r.sf_type, r.start_time);
  }
  if (r.end_time < 1 || r.end_time > 24) return fmt::format("end_time {} outside 1..24", r.end_time);
  if (!all_of_class(r.numberx, kNumberDigits, '0', '9')) return "numberx not 15 digits";
  return "";
}

// ---- population -------------------------------------------------------------

SubscriberPopulation populate(uint64_t s_id) {
  Rng rng(mix64(s_id ^ kPopulationSalt));
  SubscriberPopulation p;
  const auto sid = static_cast<uint32_t>(s_id);
  SubscriberRow& s = p.subscriber;
  s.s_id = sid;
  s.sub_nbr = sub_nbr_of(s_id);
  s.bits = static_cast<uint16_t>(rng.uniform(1u << 10));
  for (uint8_t& h : s.hex) h = static_cast<uint8_t>(rng.uniform(16));
  for (uint8_t& b : s.byte2) b = static_cast<uint8_t>(rng.uniform(256));
  s.msc_location = static_cast<uint32_t>(1 + rng.uniform(kMaxSid));
  s.vlr_location = static_cast<uint32_t>(1 + rng.uniform(kMaxSid));

  const std::array<uint8_t, kTypes> types{1, 2, 3, 4};
  for (uint8_t t : distinct(rng, types, 1 + rng.uniform(kTypes))) {
    p.access_info.push_back({sid, t, static_cast<uint8_t>(rng.uniform(256)), static_cast<uint8_t>(rng.uniform(256)),
                             random_letters(rng, 3), random_letters(rng, 5)});
  }
  const std::array<uint8_t, kStartTimes> starts{0, 8, 16};
  for (uint8_t t : distinct(rng, types, 1 + rng.uniform(kTypes))) {
    SpecialFacilityRow sf{sid, t, static_cast<uint8_t>(rng.chance(0.85) ? 1 : 0),
                          static_cast<uint8_t>(rng.uniform(256)), static_cast<uint8_t>(rng.uniform(256)),
                          random_letters(rng, 5), 0};
    for (uint8_t st : distinct(rng, starts, rng.uniform(kStartTimes + 1))) {
      sf.cf_mask |= static_cast<uint8_t>(1u << (st / 8));
      p.call_forwarding.push_back(
          {sid, t, st, static_cast<uint8_t>(st + 1 + rng.uniform(8)), random_digits(rng, kNumberDigits)});
    }
    p.special_facility.push_back(std::move(sf));
  }
  return p;
}

}  // namespace pandora::workloads::tatp
