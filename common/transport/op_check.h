// The checks every backend applies to an operation before it is executed or
// sent, so that a bad request fails the same way on every transport and never
// reaches the memory node.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "common/transport/transport.h"
#include "common/wire/frame.h"

namespace pandora::transport_detail {

// kInvalidArgument: a READ/WRITE of 0 bytes or of more than wire::kMaxIoBytes
//   (one operation is one frame; larger accesses are split by the caller, and
//   an empty access is a caller bug rather than a no-op that hides it).
// kOutOfBounds / kMisaligned: as wire::check_access over [lo, hi) - outside
//   the data area (including below it, in the daemon's header), a range whose
//   end overflows 64 bits, or a CAS/FAA not on an 8-byte boundary.
inline Errc check_op(OpType op, uint64_t addr, uint64_t len, uint64_t lo, uint64_t hi) {
  if ((op == OpType::kRead || op == OpType::kWrite) && (len == 0 || len > wire::kMaxIoBytes)) {
    return Errc::kInvalidArgument;
  }
  return wire::check_access(static_cast<wire::Op>(op), addr, len, lo, hi);
}

static_assert(static_cast<uint8_t>(OpType::kRead) == static_cast<uint8_t>(wire::Op::kRead));
static_assert(static_cast<uint8_t>(OpType::kWrite) == static_cast<uint8_t>(wire::Op::kWrite));
static_assert(static_cast<uint8_t>(OpType::kCas) == static_cast<uint8_t>(wire::Op::kCas));
static_assert(static_cast<uint8_t>(OpType::kFaa) == static_cast<uint8_t>(wire::Op::kFaa));

}  // namespace pandora::transport_detail
