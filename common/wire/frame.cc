// Data-plane frame codec. The daemon decodes untrusted bytes with this code,
// so every decision is made from explicit little-endian loads of bytes that
// are known to be present, and every invalid field is reported as soon as the
// bytes holding it have arrived (a stream of garbage is rejected after its
// first bad byte instead of waiting for a whole header).
#include "common/wire/frame.h"

#include <fmt/format.h>

namespace pandora::wire {
namespace {

constexpr size_t kRequestBytes = sizeof(RequestHeader);
constexpr size_t kResponseBytes = sizeof(ResponseHeader);
constexpr uint8_t kMagicLow = kFrameMagic & 0xff;
constexpr uint8_t kMagicHigh = kFrameMagic >> 8;
constexpr uint8_t kLastErrc = static_cast<uint8_t>(Errc::kUnsupported);

// Shifts rather than reinterpreting memory: correct on any host byte order and
// free of alignment assumptions about the input buffer.
uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

uint32_t load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint64_t load64(const uint8_t* p) { return load32(p) | (static_cast<uint64_t>(load32(p + 4)) << 32); }

void store(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool valid_op(uint8_t op) { return op >= static_cast<uint8_t>(Op::kRead) && op <= static_cast<uint8_t>(Op::kFaa); }

DecodeResult malformed(std::string* why, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return DecodeResult::kMalformed;
}

// Checks the magic against however many of its two bytes are present.
bool magic_ok(std::span<const uint8_t> in) {
  if (in.size() >= 1 && in[0] != kMagicLow) return false;
  if (in.size() >= 2 && in[1] != kMagicHigh) return false;
  return true;
}

std::string magic_text(std::span<const uint8_t> in) {
  if (in.size() >= 2) {
    return fmt::format("bad frame magic 0x{:04x} (expected 0x{:04x})", load16(in.data()), kFrameMagic);
  }
  return fmt::format("bad frame magic: first byte 0x{:02x} (expected 0x{:02x})", in[0], kMagicLow);
}

// The length rule of a request, shared by the decoder's early and full checks.
const char* request_len_problem(Op op, uint32_t len) {
  switch (op) {
    case Op::kRead:
    case Op::kWrite:
      if (len == 0) return "zero length";
      if (len > kMaxIoBytes) return "length above the 4 MiB frame limit";
      return nullptr;
    case Op::kCas:
    case Op::kFaa:
      return len == 8 ? nullptr : "atomic length must be 8";
  }
  return "unknown op";
}

const char* op_text(uint8_t op) {
  switch (static_cast<Op>(op)) {
    case Op::kRead: return "READ";
    case Op::kWrite: return "WRITE";
    case Op::kCas: return "CAS";
    case Op::kFaa: return "FAA";
  }
  return "?";
}

}  // namespace

DecodeResult decode_request(std::span<const uint8_t> in, DecodedRequest& out, std::string* why) {
  const size_t n = in.size();
  if (!magic_ok(in)) return malformed(why, magic_text(in));
  if (n >= 3 && !valid_op(in[2])) return malformed(why, fmt::format("unknown request op {}", in[2]));
  if (n >= 4 && in[3] != 0) return malformed(why, fmt::format("request flags 0x{:02x} must be 0", in[3]));
  if (n >= 8) {
    const uint32_t len = load32(in.data() + 4);
    if (const char* problem = request_len_problem(static_cast<Op>(in[2]), len)) {
      return malformed(why, fmt::format("{} request with len {}: {}", op_text(in[2]), len, problem));
    }
  }
  if (n < kRequestBytes) return DecodeResult::kNeedMore;

  RequestHeader h;
  h.magic = load16(in.data());
  h.op = in[2];
  h.flags = in[3];
  h.len = load32(in.data() + 4);
  h.tag = load64(in.data() + 8);
  h.addr = load64(in.data() + 16);
  h.compare = load64(in.data() + 24);
  h.swap = load64(in.data() + 32);

  // len <= kMaxIoBytes was checked, so this cannot overflow.
  const size_t payload = static_cast<Op>(h.op) == Op::kWrite ? h.len : 0;
  if (n - kRequestBytes < payload) return DecodeResult::kNeedMore;

  out.header = h;
  out.payload = in.subspan(kRequestBytes, payload);
  out.consumed = kRequestBytes + payload;
  return DecodeResult::kOk;
}

DecodeResult decode_response(std::span<const uint8_t> in, DecodedResponse& out, std::string* why) {
  const size_t n = in.size();
  if (!magic_ok(in)) return malformed(why, magic_text(in));
  if (n >= 3 && in[2] > kLastErrc) return malformed(why, fmt::format("unknown response status {}", in[2]));
  if (n >= 4 && !valid_op(in[3])) return malformed(why, fmt::format("unknown response op {}", in[3]));
  if (n >= 8) {
    const uint32_t len = load32(in.data() + 4);
    const bool ok_read = static_cast<Op>(in[3]) == Op::kRead && static_cast<Errc>(in[2]) == Errc::kOk;
    // A successful READ carries exactly the bytes a valid request asked for,
    // and a valid request never asks for 0 or more than kMaxIoBytes; nothing
    // else carries a payload.
    if (ok_read && (len == 0 || len > kMaxIoBytes)) {
      return malformed(why, fmt::format("successful READ response with len {}: must be 1..{}", len, kMaxIoBytes));
    }
    if (!ok_read && len != 0) {
      return malformed(why, fmt::format("{} response with status {} carries {} payload bytes; "
                                        "only a successful READ may",
                                        op_text(in[3]), in[2], len));
    }
  }
  if (n < kResponseBytes) return DecodeResult::kNeedMore;

  ResponseHeader h;
  h.magic = load16(in.data());
  h.status = in[2];
  h.op = in[3];
  h.len = load32(in.data() + 4);
  h.tag = load64(in.data() + 8);
  h.value = load64(in.data() + 16);

  const size_t payload = h.len;
  if (n - kResponseBytes < payload) return DecodeResult::kNeedMore;

  out.header = h;
  out.payload = in.subspan(kResponseBytes, payload);
  out.consumed = kResponseBytes + payload;
  return DecodeResult::kOk;
}

// Bounds are checked before alignment: an address outside the region is
// reported as out-of-bounds even when it is also misaligned, because that is
// the more serious caller bug. Atomics always touch 8 bytes, whatever `len`
// says. A zero-length READ/WRITE is in bounds when lo <= addr <= hi; frame
// validation (not this function) is what forbids zero-length frames.
Errc check_access(Op op, uint64_t addr, uint64_t len, uint64_t lo, uint64_t hi) {
  const bool atomic = op == Op::kCas || op == Op::kFaa;
  const uint64_t span = atomic ? 8 : len;
  // Written so that nothing can wrap: hi - addr is only computed once addr <= hi.
  if (lo > hi || addr < lo || addr > hi || span > hi - addr) return Errc::kOutOfBounds;
  if (atomic && addr % 8 != 0) return Errc::kMisaligned;
  return Errc::kOk;
}

Errc check_access(const RequestHeader& h, uint64_t lo, uint64_t hi) {
  return check_access(static_cast<Op>(h.op), h.addr, h.len, lo, hi);
}

// The encoders always write kFrameMagic, so a header built with `{}` and the
// fields that matter is enough. Other fields are written as given: it is the
// caller's job to produce a valid frame (payload only with WRITE / ok READ,
// payload.size() == len), and the decoder on the other side will reject one
// that is not.
void encode_request(std::string& out, const RequestHeader& h, std::span<const uint8_t> payload) {
  out.reserve(out.size() + kRequestBytes + payload.size());
  store(out, kFrameMagic, 2);
  store(out, h.op, 1);
  store(out, h.flags, 1);
  store(out, h.len, 4);
  store(out, h.tag, 8);
  store(out, h.addr, 8);
  store(out, h.compare, 8);
  store(out, h.swap, 8);
  if (!payload.empty()) out.append(reinterpret_cast<const char*>(payload.data()), payload.size());
}

Digest256 FrameMac::compute(std::span<const uint8_t> frame) {
  uint8_t seq[8];
  for (int i = 0; i < 8; ++i) seq[i] = static_cast<uint8_t>(seq_ >> (8 * i));
  hmac_.update(seq);
  hmac_.update(frame);
  return hmac_.finish();
}

void FrameMac::seal(std::string& out, size_t frame_begin) {
  const Digest256 mac =
      compute({reinterpret_cast<const uint8_t*>(out.data()) + frame_begin, out.size() - frame_begin});
  ++seq_;
  out.append(reinterpret_cast<const char*>(mac.data()), kFrameMacBytes);
}

bool FrameMac::check(std::span<const uint8_t> frame, std::span<const uint8_t> mac) {
  const Digest256 expected = compute(frame);
  if (!constant_time_equal(std::span<const uint8_t>(expected).first(kFrameMacBytes), mac)) return false;
  ++seq_;
  return true;
}

void encode_response(std::string& out, const ResponseHeader& h, std::span<const uint8_t> payload) {
  out.reserve(out.size() + kResponseBytes + payload.size());
  store(out, kFrameMagic, 2);
  store(out, h.status, 1);
  store(out, h.op, 1);
  store(out, h.len, 4);
  store(out, h.tag, 8);
  store(out, h.value, 8);
  if (!payload.empty()) out.append(reinterpret_cast<const char*>(payload.data()), payload.size());
}

}  // namespace pandora::wire
