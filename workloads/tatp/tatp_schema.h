// TATP's data: the rows of the four tables of the TATP specification (plus
// the sub_nbr index), how they are laid out in a value, how composite keys
// are packed into the store's 64-bit keys, and the population of one
// subscriber (deterministic in its s_id, so a later run can attach to a load
// and the audit knows what was loaded).
//
// Rows (field: spec type and range -> bytes in the value, little-endian):
//
//   subscriber (table 40, 48 B), key s_id
//     s_id          INTEGER 1..N              0..3    u32
//     sub_nbr       CHAR(15) s_id, 0-padded   4..18   15 ASCII digits
//     bit_1..10     BIT 0/1                   19..20  u16, bit_k at bit k-1
//     hex_1..10     4 bits 0..15              21..25  nibbles, hex_1 in the low nibble of byte 21
//     byte2_1..10   0..255                    26..35  u8 each
//     msc_location  INTEGER 1..2^32-1         36..39  u32
//     vlr_location  INTEGER 1..2^32-1         40..43  u32       (44..47 zero)
//   access_info (table 41, 16 B), key s_id<<2 | ai_type-1
//     s_id u32 0..3, ai_type 1..4 u8 4, data1 0..255 u8 5, data2 0..255 u8 6,
//     data3 CHAR(3) [A-Z] 7..9, data4 CHAR(5) [A-Z] 10..14     (15 zero)
//   special_facility (table 42, 16 B), key s_id<<2 | sf_type-1
//     s_id u32 0..3, sf_type 1..4 u8 4, is_active 0/1 u8 5 (85% 1),
//     error_cntrl 0..255 u8 6, data_a 0..255 u8 7, data_b CHAR(5) [A-Z] 8..12,
//     cf_mask u8 13 (not in the spec, see below)                (14..15 zero)
//   call_forwarding (table 43, 24 B), key s_id<<4 | (sf_type-1)<<2 | start_time/8
//     s_id u32 0..3, sf_type 1..4 u8 4, start_time {0,8,16} u8 5,
//     end_time 1..24 u8 6 (loaded: start_time + 1..8), numberx CHAR(15) digits 7..21  (22..23 zero)
//   sub_nbr index (table 44, 8 B), key = sub_nbr's 15 digits packed 4 bits each (60 bits)
//     s_id u64
//
// The key fields are repeated in each value (they are columns of the spec's
// rows) so the audit sees a write that landed on the wrong key.
//
// Packing: s_id < 2^32 (the spec's INTEGER; --subscribers is capped far
// below), the types 1..4 take 2 bits, start_time/8 in 0..2 takes 2 bits, so
// every key fits in 36 bits. pack_* reject out-of-range parts.
//
// cf_mask: bit i set <=> the call_forwarding row (s_id, sf_type, 8*i)
// exists. The store's transactions abort on a read of an absent key
// (compute/txn.h: kNotFound), so a transaction cannot probe the up to three
// call_forwarding rows GET_NEW_DESTINATION looks at (FORD's engine returns an
// empty item instead). The mask lets it read only rows that exist, and
// because INSERT/DELETE_CALL_FORWARDING update it, reading the
// special_facility row also validates the absence of the rows it does not
// read (no phantom). The cost: those two transactions (4% of the mix)
// update the special_facility row, which the spec only reads (insert) or
// does not touch (delete).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "workloads/bench/rng.h"

namespace pandora::workloads::tatp {

inline constexpr uint32_t kSubscriberTable = 40;
inline constexpr uint32_t kAccessInfoTable = 41;
inline constexpr uint32_t kSpecialFacilityTable = 42;
inline constexpr uint32_t kCallForwardingTable = 43;
inline constexpr uint32_t kSubNbrIndexTable = 44;

inline constexpr uint32_t kSubscriberBytes = 48;
inline constexpr uint32_t kAccessInfoBytes = 16;
inline constexpr uint32_t kSpecialFacilityBytes = 16;
inline constexpr uint32_t kCallForwardingBytes = 24;
inline constexpr uint32_t kSubNbrIndexBytes = 8;

inline constexpr uint64_t kMaxSubscribers = 100'000'000;  // the spec's largest NURand class
inline constexpr uint32_t kTypes = 4;                     // ai_type, sf_type: 1..4
inline constexpr uint32_t kStartTimes = 3;                // start_time: 0, 8, 16
inline constexpr size_t kNumberDigits = 15;               // sub_nbr, numberx

// ---- keys -------------------------------------------------------------------

// nullopt when a part is out of range (s_id 0 or >= 2^32, type not 1..4,
// start_time not 0/8/16).
std::optional<uint64_t> pack_access_info(uint64_t s_id, uint32_t ai_type);
std::optional<uint64_t> pack_special_facility(uint64_t s_id, uint32_t sf_type);
std::optional<uint64_t> pack_call_forwarding(uint64_t s_id, uint32_t sf_type, uint32_t start_time);

struct CallForwardingKey {
  uint64_t s_id = 0;
  uint32_t sf_type = 0;
  uint32_t start_time = 0;
};
CallForwardingKey unpack_call_forwarding(uint64_t key);

// sub_nbr: s_id as 15 decimal digits with leading zeros (the spec's
// mapping), and the index key of such a string: its digits packed 4 bits
// each, first digit highest. The transactions that take a sub_nbr look it up
// in the index table, as a database without the mapping would.
std::string sub_nbr_of(uint64_t s_id);
uint64_t sub_nbr_key(std::string_view sub_nbr);  // 15 digits expected

// ---- the non-uniform subscriber id ------------------------------------------

// The spec's A for N subscribers: 65535 up to 1M, 1048575 up to 10M,
// 2097151 above.
uint64_t nurand_a(uint64_t subscribers);
// s_id = ((rand(0, A) | rand(1, N)) % N) + 1, in 1..N.
uint64_t pick_subscriber(Rng& rng, uint64_t subscribers, uint64_t a);

// ---- rows -------------------------------------------------------------------

struct SubscriberRow {
  uint32_t s_id = 0;
  std::string sub_nbr;           // 15 digits
  uint16_t bits = 0;             // bit_1 .. bit_10
  std::array<uint8_t, 10> hex{}; // 0..15 each
  std::array<uint8_t, 10> byte2{};
  uint32_t msc_location = 0;
  uint32_t vlr_location = 0;
};

struct AccessInfoRow {
  uint32_t s_id = 0;
  uint8_t ai_type = 0;
  uint8_t data1 = 0, data2 = 0;
  std::string data3, data4;  // 3 and 5 letters
};

struct SpecialFacilityRow {
  uint32_t s_id = 0;
  uint8_t sf_type = 0;
  uint8_t is_active = 0;
  uint8_t error_cntrl = 0, data_a = 0;
  std::string data_b;  // 5 letters
  uint8_t cf_mask = 0;
};

struct CallForwardingRow {
  uint32_t s_id = 0;
  uint8_t sf_type = 0;
  uint8_t start_time = 0, end_time = 0;
  std::string numberx;  // 15 digits
};

std::vector<uint8_t> encode(const SubscriberRow& r);
std::vector<uint8_t> encode(const AccessInfoRow& r);
std::vector<uint8_t> encode(const SpecialFacilityRow& r);
std::vector<uint8_t> encode(const CallForwardingRow& r);
SubscriberRow decode_subscriber(std::span<const uint8_t> v);
AccessInfoRow decode_access_info(std::span<const uint8_t> v);
SpecialFacilityRow decode_special_facility(std::span<const uint8_t> v);
CallForwardingRow decode_call_forwarding(std::span<const uint8_t> v);

// In-place field edits of the transactions (no full decode on the hot path).
inline constexpr size_t kSubscriberBitsOffset = 19;
inline constexpr size_t kSubscriberVlrOffset = 40;
inline constexpr size_t kSpecialFacilityActiveOffset = 5;
inline constexpr size_t kSpecialFacilityDataAOffset = 7;
inline constexpr size_t kSpecialFacilityMaskOffset = 13;
inline constexpr size_t kCallForwardingEndOffset = 6;

// Range checks of the spec's fields; each returns "" or what is wrong.
std::string check_row(const SubscriberRow& r, uint64_t s_id);
std::string check_row(const AccessInfoRow& r, uint64_t s_id, uint32_t ai_type);
std::string check_row(const SpecialFacilityRow& r, uint64_t s_id, uint32_t sf_type);
std::string check_row(const CallForwardingRow& r, uint64_t s_id, uint32_t sf_type, uint32_t start_time);

// ---- population -------------------------------------------------------------

// Everything loaded for one subscriber, as the spec populates it: 1..4
// access_info rows (distinct ai_type), 1..4 special_facility rows (distinct
// sf_type, is_active 1 with 85%), 0..3 call_forwarding rows per special
// facility (distinct start_time in {0,8,16}, end_time = start_time + 1..8),
// random fields uniform in their ranges. A function of s_id only.
struct SubscriberPopulation {
  SubscriberRow subscriber;
  std::vector<AccessInfoRow> access_info;
  std::vector<SpecialFacilityRow> special_facility;  // cf_mask filled in
  std::vector<CallForwardingRow> call_forwarding;
};
SubscriberPopulation populate(uint64_t s_id);

}  // namespace pandora::workloads::tatp
