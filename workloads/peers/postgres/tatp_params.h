// TATP (Telecom Application Transaction Processing, v1.0) parameters for
// the PostgreSQL driver. The subscriber draw and sub_nbr are Pandora's TATP's
// own (workloads/tatp/tatp_schema.h), so both systems run the same mix.
//
// Standard mix (80% reads): GET_SUBSCRIBER_DATA 35, GET_NEW_DESTINATION 10,
// GET_ACCESS_DATA 35, UPDATE_SUBSCRIBER_DATA 2, UPDATE_LOCATION 14,
// INSERT_CALL_FORWARDING 2, DELETE_CALL_FORWARDING 2 (%).
// Subscriber ids are 1..P, drawn non-uniformly (spec 4.1):
//   s_id = (rand(0, A) | rand(1, P)) % P + 1,
//   A = 65535 (P <= 1M), 1048575 (P <= 10M), 2097151 (larger).
#pragma once

#include <cstdint>
#include <string>

#include "workloads/bench/rng.h"
#include "workloads/tatp/tatp_schema.h"

namespace pandora::workloads::tatp {

enum Type : uint32_t {
  kGetSubscriberData,
  kGetNewDestination,
  kGetAccessData,
  kUpdateSubscriberData,
  kUpdateLocation,
  kInsertCallForwarding,
  kDeleteCallForwarding,
};

// The 35/10/35/2/14/2/2 mix.
inline Type pick_type(Rng& rng) {
  const uint64_t d = rng.uniform(100);
  if (d < 35) return kGetSubscriberData;
  if (d < 45) return kGetNewDestination;
  if (d < 80) return kGetAccessData;
  if (d < 82) return kUpdateSubscriberData;
  if (d < 96) return kUpdateLocation;
  if (d < 98) return kInsertCallForwarding;
  return kDeleteCallForwarding;
}

inline uint64_t pick_start_time(Rng& rng) { return 8 * rng.uniform(3); }  // 0, 8 or 16
inline uint64_t pick_sf_type(Rng& rng) { return between(rng, 1, 4); }
inline uint64_t pick_ai_type(Rng& rng) { return between(rng, 1, 4); }

}  // namespace pandora::workloads::tatp
