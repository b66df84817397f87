// Wire format of the tcp data plane: the memory daemon acting as a software
// one-sided NIC. Defined once, here; the daemon and the client both use these
// functions, and the fuzz target drives the decoders directly.
//
// A data-plane stream is a sequence of frames, each a fixed header optionally
// followed by a payload. All integers are little-endian. Requests on one
// connection execute in order and are answered in order; the tag lets the
// client check the match.
//
//   Request  = RequestHeader  [payload: `len` bytes, WRITE only]  [mac]
//   Response = ResponseHeader [payload: `len` bytes, successful READ only]  [mac]
//
// `mac` (kFrameMacBytes) is present on every frame of a connection whose
// SetupTcp asked for frame MACs (common/wire/control.h), and on no frame of
// any other connection; see FrameMac.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/checksum.h"
#include "common/status.h"

namespace pandora::wire {

enum class Op : uint8_t { kRead = 1, kWrite = 2, kCas = 3, kFaa = 4 };

// Largest READ or WRITE one frame may carry. Larger accesses are split by the
// caller; a frame claiming more is malformed.
inline constexpr uint32_t kMaxIoBytes = 4u * 1024 * 1024;

inline constexpr uint16_t kFrameMagic = 0x5044;  // "DP"

struct RequestHeader {
  uint16_t magic;     // kFrameMagic: catches a stream that lost framing
  uint8_t op;         // Op
  uint8_t flags;      // must be 0
  uint32_t len;       // READ/WRITE: bytes; CAS/FAA: must be 8
  uint64_t tag;       // echoed in the response
  uint64_t addr;      // region offset
  uint64_t compare;   // CAS: expected; FAA: addend; else 0
  uint64_t swap;      // CAS: desired; else 0
};
static_assert(sizeof(RequestHeader) == 40);
static_assert(offsetof(RequestHeader, len) == 4);
static_assert(offsetof(RequestHeader, tag) == 8);
static_assert(offsetof(RequestHeader, addr) == 16);
static_assert(offsetof(RequestHeader, compare) == 24);
static_assert(offsetof(RequestHeader, swap) == 32);

struct ResponseHeader {
  uint16_t magic;     // kFrameMagic
  uint8_t status;     // Errc
  uint8_t op;         // the request's Op
  uint32_t len;       // payload bytes following (READ with status ok), else 0
  uint64_t tag;       // the request's tag
  uint64_t value;     // CAS/FAA: the word's value before the operation
};
static_assert(sizeof(ResponseHeader) == 24);
static_assert(offsetof(ResponseHeader, tag) == 8);
static_assert(offsetof(ResponseHeader, value) == 16);

enum class DecodeResult : uint8_t {
  kNeedMore,    // the buffer holds a prefix of a valid frame
  kOk,          // one frame decoded; `consumed` bytes belong to it
  kMalformed,   // no valid frame can start here; close the stream
};

struct DecodedRequest {
  RequestHeader header;
  std::span<const uint8_t> payload;  // WRITE data (points into the input)
  size_t consumed = 0;               // header + payload
};

struct DecodedResponse {
  ResponseHeader header;
  std::span<const uint8_t> payload;  // READ data (points into the input)
  size_t consumed = 0;
};

// Decode the first request in `in`. On kMalformed, `why` says what was wrong
// (for the daemon's log). Validates everything that does not depend on the
// region: magic, op, flags, lengths. Pure: touches nothing but its arguments.
DecodeResult decode_request(std::span<const uint8_t> in, DecodedRequest& out, std::string* why);

// Decode the first response in `in`; same contract as decode_request.
DecodeResult decode_response(std::span<const uint8_t> in, DecodedResponse& out, std::string* why);

// Region-dependent check of a decoded request: [addr, addr+len) must lie in
// [lo, hi) without overflow, and CAS/FAA must be 8-byte aligned. Returns
// kOk, kOutOfBounds or kMisaligned.
Errc check_access(const RequestHeader& h, uint64_t lo, uint64_t hi);

// Same check for any (op, addr, len) - used by clients before sending.
Errc check_access(Op op, uint64_t addr, uint64_t len, uint64_t lo, uint64_t hi);

// Optional per-frame integrity of one direction of one tcp connection. Each
// frame is followed by
//
//   HMAC-SHA256(key, seq || frame)[0, kFrameMacBytes)
//
// where seq is the frame's index in its direction (u64 little-endian, from
// 0) and key that direction's session key (frame_mac_keys in control.h). A
// changed, dropped, replayed, reordered or injected frame fails the check,
// and frames of another connection or direction never pass (other key).
// 128 bits of the MAC are kept (truncation to at least half the output is
// allowed by RFC 2104 section 5): forging one frame stays a 2^-128 guess,
// and the receiver drops the connection at the first failure.
// Confidentiality is not provided.
inline constexpr size_t kFrameMacBytes = 16;

class FrameMac {
 public:
  explicit FrameMac(const Digest256& key) : hmac_(key) {}

  // Appends the MAC of out[frame_begin, out.size()) - one whole frame just
  // encoded - and moves to the next sequence number.
  void seal(std::string& out, size_t frame_begin);

  // Whether `mac` (kFrameMacBytes) is this direction's MAC of `frame` at the
  // next sequence number (constant-time compare); moves on only if it is.
  bool check(std::span<const uint8_t> frame, std::span<const uint8_t> mac);

 private:
  Digest256 compute(std::span<const uint8_t> frame);
  HmacSha256 hmac_;
  uint64_t seq_ = 0;
};

// Encoders append to `out` (a byte vector or string-like buffer).
void encode_request(std::string& out, const RequestHeader& h, std::span<const uint8_t> payload = {});
void encode_response(std::string& out, const ResponseHeader& h, std::span<const uint8_t> payload = {});

}  // namespace pandora::wire
