// TPC-C's random data (clause 4.3.2 and 2.1.6): NURand, last names from the
// syllable rule, random strings, zip codes; and the loaded amounts both
// loaders (workloads/tpcc, the PostgreSQL peer) derive alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "workloads/bench/rng.h"

namespace pandora::workloads::tpcc {

// The run-time constants C of NURand(A, x, y) (clause 2.1.6). Fixed rather
// than drawn, so a load and its runs agree without storing them; the pair
// for C_LAST obeys clause 2.1.6.1: C_run - C_load = 66 is in [65, 119] and
// is neither 96 nor 112 (checked by a static_assert below).
struct NURandConstants {
  uint32_t last_name;  // A = 255
  uint32_t customer;   // A = 1023
  uint32_t item;       // A = 8191
};
inline constexpr NURandConstants kLoadConstants{157, 259, 7911};
inline constexpr NURandConstants kRunConstants{223, 259, 7911};
constexpr bool valid_last_name_delta(uint32_t load, uint32_t run) {
  const uint32_t delta = run > load ? run - load : load - run;
  return delta >= 65 && delta <= 119 && delta != 96 && delta != 112;
}
static_assert(valid_last_name_delta(kLoadConstants.last_name, kRunConstants.last_name));

// Every customer is loaded with one payment of 10.00 (clause 4.3.3.1:
// H_AMOUNT, C_YTD_PAYMENT 10.00, C_BALANCE -10.00). The spec's D_YTD
// 30,000.00 and W_YTD 300,000.00 are what its 3000 customers' payments add
// up to (consistency conditions 8 and 9); with --tpcc-customers-per-district
// they are derived the same way, so the conditions hold at any scale.
inline constexpr int64_t kInitialPaymentCents = 1000;
inline constexpr int64_t initial_district_ytd_cents(uint64_t customers_per_district) {
  return kInitialPaymentCents * static_cast<int64_t>(customers_per_district);
}

// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
inline uint64_t nurand(Rng& rng, uint64_t a, uint64_t x, uint64_t y, uint64_t c) {
  return (((between(rng, 0, a) | between(rng, x, y)) + c) % (y - x + 1)) + x;
}

// The last name of number n (0..999): the syllables of its three decimal
// digits, e.g. 371 -> "PRICALLYOUGHT" (clause 4.3.2.3).
std::string last_name(uint32_t n);

// a-string / n-string of a length uniform in [lo, hi] (clause 4.3.2.2).
std::string alpha_string(Rng& rng, uint32_t lo, uint32_t hi);
std::string numeric_string(Rng& rng, uint32_t lo, uint32_t hi);
// I_DATA / S_DATA: an a-string of 26..50 characters; 10% of them carry
// "ORIGINAL" at a random position (clause 4.3.3.1).
std::string data_with_original(Rng& rng);
// 4 random digits followed by "11111" (clause 4.3.2.7).
std::string zip_code(Rng& rng);

}  // namespace pandora::workloads::tpcc
