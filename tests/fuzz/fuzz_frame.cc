// Fuzz target for the data-plane frame codec (common/wire/frame.h).
//
// The input is treated as a byte stream arriving at the daemon (requests) or
// at a client (responses): frames are decoded one after another exactly as
// the stream parsers do, and every decoded frame is checked against the
// codec's contract. check_access is compared with a 128-bit reference so that
// an overflow in the 64-bit arithmetic cannot hide.
#include <cstdint>
#include <cstring>
#include <string>

#include "common/wire/frame.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using pandora::Errc;
using namespace pandora::wire;
using u128 = unsigned __int128;

constexpr size_t kPrefixLengths[] = {0, 1, 2, 3, 4, 7, 8, 23, 24, 39};

// Reference: [addr, addr+len) in [lo, hi), atomics 8 bytes and aligned, bounds first.
Errc reference_access(Op op, uint64_t addr, uint64_t len, uint64_t lo, uint64_t hi) {
  const bool atomic = op == Op::kCas || op == Op::kFaa;
  const u128 end = static_cast<u128>(addr) + (atomic ? 8 : len);
  if (addr < lo || end > hi) return Errc::kOutOfBounds;
  if (atomic && addr % 8 != 0) return Errc::kMisaligned;
  return Errc::kOk;
}

void check_bounds(const RequestHeader& h) {
  // Bounds from fields the fuzzer controls, plus a fixed realistic region,
  // plus bounds hugging the access itself (where off-by-one bugs live).
  const uint64_t bounds[][2] = {
      {h.tag, h.compare},
      {h.compare, h.swap},
      {4096, uint64_t{1} << 30},
      {0, UINT64_MAX},
      {h.addr, h.addr + h.len},
      {h.addr, h.addr + h.len - 1},
      {h.addr + 1, h.addr + h.len},
      {h.addr & ~uint64_t{7}, (h.addr & ~uint64_t{7}) + 8},
  };
  for (const auto& b : bounds) {
    const Errc got = check_access(h, b[0], b[1]);
    FUZZ_CHECK(got == reference_access(static_cast<Op>(h.op), h.addr, h.len, b[0], b[1]));
    FUZZ_CHECK(got == check_access(static_cast<Op>(h.op), h.addr, h.len, b[0], b[1]));
  }
}

void requests(std::span<const uint8_t> rest) {
  while (true) {
    DecodedRequest out;
    std::string why;
    const DecodeResult r = decode_request(rest, out, &why);
    if (r == DecodeResult::kMalformed) {
      FUZZ_CHECK(!why.empty());
      return;
    }
    if (r == DecodeResult::kNeedMore) {
      // A prefix of a valid prefix is a valid prefix.
      DecodedRequest again;
      FUZZ_CHECK(decode_request(rest.first(rest.size() / 2), again, nullptr) == DecodeResult::kNeedMore);
      return;
    }
    const RequestHeader& h = out.header;
    FUZZ_CHECK(out.consumed <= rest.size());
    FUZZ_CHECK(out.consumed >= sizeof(RequestHeader));
    FUZZ_CHECK(h.magic == kFrameMagic && h.flags == 0);
    FUZZ_CHECK(h.op >= 1 && h.op <= 4);
    const bool io = h.op == static_cast<uint8_t>(Op::kRead) || h.op == static_cast<uint8_t>(Op::kWrite);
    FUZZ_CHECK(io ? (h.len >= 1 && h.len <= kMaxIoBytes) : h.len == 8);
    const size_t payload = h.op == static_cast<uint8_t>(Op::kWrite) ? h.len : 0;
    FUZZ_CHECK(out.consumed == sizeof(RequestHeader) + payload);
    FUZZ_CHECK(out.payload.size() == payload);
    FUZZ_CHECK(payload == 0 || out.payload.data() == rest.data() + sizeof(RequestHeader));

    std::string again;
    encode_request(again, h, out.payload);
    FUZZ_CHECK(again.size() == out.consumed);
    FUZZ_CHECK(std::memcmp(again.data(), rest.data(), out.consumed) == 0);

    for (size_t n : kPrefixLengths) {
      DecodedRequest partial;
      FUZZ_CHECK(decode_request(rest.first(n), partial, nullptr) == DecodeResult::kNeedMore);
    }
    DecodedRequest partial;
    FUZZ_CHECK(decode_request(rest.first(out.consumed - 1), partial, nullptr) == DecodeResult::kNeedMore);

    check_bounds(h);
    rest = rest.subspan(out.consumed);
  }
}

void responses(std::span<const uint8_t> rest) {
  while (true) {
    DecodedResponse out;
    std::string why;
    const DecodeResult r = decode_response(rest, out, &why);
    if (r == DecodeResult::kMalformed) {
      FUZZ_CHECK(!why.empty());
      return;
    }
    if (r == DecodeResult::kNeedMore) {
      DecodedResponse again;
      FUZZ_CHECK(decode_response(rest.first(rest.size() / 2), again, nullptr) == DecodeResult::kNeedMore);
      return;
    }
    const ResponseHeader& h = out.header;
    FUZZ_CHECK(out.consumed <= rest.size());
    FUZZ_CHECK(out.consumed >= sizeof(ResponseHeader));
    FUZZ_CHECK(h.magic == kFrameMagic);
    FUZZ_CHECK(h.op >= 1 && h.op <= 4);
    FUZZ_CHECK(h.status <= static_cast<uint8_t>(Errc::kUnsupported));
    const bool ok_read = h.op == static_cast<uint8_t>(Op::kRead) && h.status == 0;
    FUZZ_CHECK(ok_read ? (h.len >= 1 && h.len <= kMaxIoBytes) : h.len == 0);
    FUZZ_CHECK(out.consumed == sizeof(ResponseHeader) + h.len);
    FUZZ_CHECK(out.payload.size() == h.len);

    std::string again;
    encode_response(again, h, out.payload);
    FUZZ_CHECK(again.size() == out.consumed);
    FUZZ_CHECK(std::memcmp(again.data(), rest.data(), out.consumed) == 0);

    for (size_t n : kPrefixLengths) {
      if (n >= sizeof(ResponseHeader)) continue;
      DecodedResponse partial;
      FUZZ_CHECK(decode_response(rest.first(n), partial, nullptr) == DecodeResult::kNeedMore);
    }
    rest = rest.subspan(out.consumed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  requests(in);
  responses(in);

  // Frames built from the input's leading bytes go through check_access even
  // when the input is not a valid frame, so bounds logic is exercised on its
  // own rather than only behind the decoder.
  if (size >= sizeof(RequestHeader)) {
    RequestHeader h{};
    h.op = static_cast<uint8_t>(1 + data[2] % 4);
    std::memcpy(&h.len, data + 4, sizeof h.len);
    std::memcpy(&h.tag, data + 8, sizeof h.tag);
    std::memcpy(&h.addr, data + 16, sizeof h.addr);
    std::memcpy(&h.compare, data + 24, sizeof h.compare);
    std::memcpy(&h.swap, data + 32, sizeof h.swap);
    check_bounds(h);
  }
  return 0;
}
