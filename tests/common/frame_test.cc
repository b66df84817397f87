#include "common/wire/frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace pandora::wire {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

RequestHeader request(Op op, uint32_t len, uint64_t tag, uint64_t addr, uint64_t compare = 0, uint64_t swap = 0) {
  RequestHeader h{};
  h.op = static_cast<uint8_t>(op);
  h.len = len;
  h.tag = tag;
  h.addr = addr;
  h.compare = compare;
  h.swap = swap;
  return h;
}

ResponseHeader response(Op op, Errc status, uint32_t len, uint64_t tag, uint64_t value = 0) {
  ResponseHeader h{};
  h.op = static_cast<uint8_t>(op);
  h.status = static_cast<uint8_t>(status);
  h.len = len;
  h.tag = tag;
  h.value = value;
  return h;
}

std::string encoded(const RequestHeader& h, std::span<const uint8_t> payload = {}) {
  std::string s;
  encode_request(s, h, payload);
  return s;
}

std::string encoded(const ResponseHeader& h, std::span<const uint8_t> payload = {}) {
  std::string s;
  encode_response(s, h, payload);
  return s;
}

void put32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
}

DecodeResult decode_req(const std::string& s, std::string* why = nullptr) {
  DecodedRequest out;
  return decode_request(bytes(s), out, why);
}

DecodeResult decode_resp(const std::string& s, std::string* why = nullptr) {
  DecodedResponse out;
  return decode_response(bytes(s), out, why);
}

std::vector<std::string> valid_requests() {
  static const std::vector<uint8_t> data = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  return {
      encoded(request(Op::kRead, 64, 1, 0x1000)),
      encoded(request(Op::kWrite, static_cast<uint32_t>(data.size()), 2, 0x2000), data),
      encoded(request(Op::kCas, 8, 3, 0x3000, 5, 6)),
      encoded(request(Op::kFaa, 8, 4, 0x4000, 1)),
  };
}

std::vector<std::string> valid_responses() {
  static const std::vector<uint8_t> data = {9, 8, 7, 6, 5};
  return {
      encoded(response(Op::kRead, Errc::kOk, static_cast<uint32_t>(data.size()), 1), data),
      encoded(response(Op::kRead, Errc::kOutOfBounds, 0, 2)),
      encoded(response(Op::kWrite, Errc::kOk, 0, 3)),
      encoded(response(Op::kCas, Errc::kOk, 0, 4, 42)),
      encoded(response(Op::kFaa, Errc::kFenced, 0, 5, 0)),
  };
}

TEST(Frame, RequestLayoutIsLittleEndian) {
  const std::string s = encoded(request(Op::kCas, 8, 0x0102030405060708, 0x1122334455667788, 0xA0, 0xB0));
  const std::vector<uint8_t> expect = {
      0x44, 0x50, 3, 0, 8, 0, 0, 0,                          // magic, op, flags, len
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,        // tag
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,        // addr
      0xA0, 0, 0, 0, 0, 0, 0, 0,                             // compare
      0xB0, 0, 0, 0, 0, 0, 0, 0,                             // swap
  };
  ASSERT_EQ(s.size(), expect.size());
  EXPECT_EQ(0, std::memcmp(s.data(), expect.data(), expect.size()));
}

TEST(Frame, ResponseLayoutIsLittleEndian) {
  const std::string s = encoded(response(Op::kFaa, Errc::kMisaligned, 0, 0x1234, 0xCAFE));
  const std::vector<uint8_t> expect = {
      0x44, 0x50, 5, 4, 0, 0, 0, 0,          // magic, status, op, len
      0x34, 0x12, 0, 0, 0, 0, 0, 0,          // tag
      0xFE, 0xCA, 0, 0, 0, 0, 0, 0,          // value
  };
  ASSERT_EQ(s.size(), expect.size());
  EXPECT_EQ(0, std::memcmp(s.data(), expect.data(), expect.size()));
}

TEST(Frame, EncoderAlwaysWritesMagic) {
  RequestHeader h = request(Op::kRead, 8, 0, 0);
  h.magic = 0xBEEF;
  DecodedRequest out;
  const std::string s = encoded(h);
  ASSERT_EQ(decode_request(bytes(s), out, nullptr), DecodeResult::kOk);
  EXPECT_EQ(out.header.magic, kFrameMagic);
}

TEST(Frame, RequestRoundTripEveryOp) {
  const std::vector<uint8_t> payload = {0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x01};
  struct Case {
    RequestHeader h;
    std::span<const uint8_t> payload;
  };
  const Case cases[] = {
      {request(Op::kRead, 4096, 11, 0x40), {}},
      {request(Op::kWrite, static_cast<uint32_t>(payload.size()), 12, 0x80), payload},
      {request(Op::kCas, 8, 13, 0xC0, 0x1111, 0x2222), {}},
      {request(Op::kFaa, 8, 14, 0x100, 7), {}},
  };
  for (const Case& c : cases) {
    const std::string s = encoded(c.h, c.payload);
    DecodedRequest out;
    std::string why;
    ASSERT_EQ(decode_request(bytes(s), out, &why), DecodeResult::kOk) << why;
    EXPECT_EQ(out.consumed, s.size());
    EXPECT_EQ(out.header.magic, kFrameMagic);
    EXPECT_EQ(out.header.op, c.h.op);
    EXPECT_EQ(out.header.flags, 0);
    EXPECT_EQ(out.header.len, c.h.len);
    EXPECT_EQ(out.header.tag, c.h.tag);
    EXPECT_EQ(out.header.addr, c.h.addr);
    EXPECT_EQ(out.header.compare, c.h.compare);
    EXPECT_EQ(out.header.swap, c.h.swap);
    ASSERT_EQ(out.payload.size(), c.payload.size());
    EXPECT_TRUE(std::equal(out.payload.begin(), out.payload.end(), c.payload.begin()));
    if (!out.payload.empty()) {
      // The payload is a view into the input, not a copy.
      EXPECT_EQ(out.payload.data(), bytes(s).data() + sizeof(RequestHeader));
    }
    EXPECT_EQ(encoded(out.header, out.payload), s);
  }
}

TEST(Frame, ResponseRoundTripEveryOp) {
  const std::vector<uint8_t> payload(100, 0x5A);
  struct Case {
    ResponseHeader h;
    std::span<const uint8_t> payload;
  };
  const Case cases[] = {
      {response(Op::kRead, Errc::kOk, static_cast<uint32_t>(payload.size()), 1), payload},
      {response(Op::kRead, Errc::kOutOfBounds, 0, 2), {}},
      {response(Op::kWrite, Errc::kOk, 0, 3), {}},
      {response(Op::kWrite, Errc::kFenced, 0, 4), {}},
      {response(Op::kCas, Errc::kOk, 0, 5, 0xFFFFFFFFFFFFFFFF), {}},
      {response(Op::kCas, Errc::kMisaligned, 0, 6), {}},
      {response(Op::kFaa, Errc::kOk, 0, 7, 99), {}},
      {response(Op::kFaa, Errc::kUnsupported, 0, 8), {}},
  };
  for (const Case& c : cases) {
    const std::string s = encoded(c.h, c.payload);
    DecodedResponse out;
    std::string why;
    ASSERT_EQ(decode_response(bytes(s), out, &why), DecodeResult::kOk) << why;
    EXPECT_EQ(out.consumed, s.size());
    EXPECT_EQ(out.header.status, c.h.status);
    EXPECT_EQ(out.header.op, c.h.op);
    EXPECT_EQ(out.header.len, c.h.len);
    EXPECT_EQ(out.header.tag, c.h.tag);
    EXPECT_EQ(out.header.value, c.h.value);
    ASSERT_EQ(out.payload.size(), c.payload.size());
    EXPECT_TRUE(std::equal(out.payload.begin(), out.payload.end(), c.payload.begin()));
    EXPECT_EQ(encoded(out.header, out.payload), s);
  }
}

TEST(Frame, LargestIoIsAccepted) {
  const std::vector<uint8_t> payload(kMaxIoBytes, 1);
  const std::string w = encoded(request(Op::kWrite, kMaxIoBytes, 1, 0), payload);
  DecodedRequest req;
  ASSERT_EQ(decode_request(bytes(w), req, nullptr), DecodeResult::kOk);
  EXPECT_EQ(req.payload.size(), kMaxIoBytes);
  EXPECT_EQ(decode_req(encoded(request(Op::kRead, kMaxIoBytes, 1, 0))), DecodeResult::kOk);

  const std::string r = encoded(response(Op::kRead, Errc::kOk, kMaxIoBytes, 1), payload);
  DecodedResponse resp;
  ASSERT_EQ(decode_response(bytes(r), resp, nullptr), DecodeResult::kOk);
  EXPECT_EQ(resp.consumed, sizeof(ResponseHeader) + kMaxIoBytes);
}

TEST(Frame, EveryPrefixOfAValidRequestNeedsMore) {
  for (const std::string& s : valid_requests()) {
    for (size_t n = 0; n < s.size(); ++n) {
      std::string why;
      EXPECT_EQ(decode_req(s.substr(0, n), &why), DecodeResult::kNeedMore) << "prefix " << n << ": " << why;
    }
  }
}

TEST(Frame, EveryPrefixOfAValidResponseNeedsMore) {
  for (const std::string& s : valid_responses()) {
    for (size_t n = 0; n < s.size(); ++n) {
      std::string why;
      EXPECT_EQ(decode_resp(s.substr(0, n), &why), DecodeResult::kNeedMore) << "prefix " << n << ": " << why;
    }
  }
}

TEST(Frame, StreamOfFramesDecodesInOrder) {
  std::string stream;
  for (const std::string& s : valid_requests()) stream += s;
  std::span<const uint8_t> in = bytes(stream);
  std::vector<uint64_t> tags;
  while (!in.empty()) {
    DecodedRequest out;
    ASSERT_EQ(decode_request(in, out, nullptr), DecodeResult::kOk);
    tags.push_back(out.header.tag);
    in = in.subspan(out.consumed);
  }
  EXPECT_EQ(tags, (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(Frame, UnusedCompareAndSwapAreIgnored) {
  // Only CAS uses swap and only CAS/FAA use compare; junk elsewhere is legal.
  DecodedRequest out;
  const std::string s = encoded(request(Op::kRead, 16, 1, 0, 0xAAAA, 0xBBBB));
  ASSERT_EQ(decode_request(bytes(s), out, nullptr), DecodeResult::kOk);
  EXPECT_EQ(out.header.compare, 0xAAAAu);
  EXPECT_EQ(decode_req(encoded(request(Op::kFaa, 8, 1, 0, 1, 0xBBBB))), DecodeResult::kOk);
  const std::vector<uint8_t> one = {1};
  EXPECT_EQ(decode_req(encoded(request(Op::kWrite, 1, 1, 0, 3, 4), one)), DecodeResult::kOk);
}

struct MalformedRequest {
  const char* name;
  std::string bytes;
  const char* reason;  // a word the explanation must contain
};

std::vector<MalformedRequest> malformed_requests() {
  std::vector<MalformedRequest> v;
  const std::string read = encoded(request(Op::kRead, 8, 1, 0));
  auto patched = [&](size_t at, uint8_t value) {
    std::string s = read;
    s[at] = static_cast<char>(value);
    return s;
  };
  v.push_back({"bad magic low byte", patched(0, 0x45), "magic"});
  v.push_back({"bad magic high byte", patched(1, 0x51), "magic"});
  v.push_back({"op 0", patched(2, 0), "op"});
  v.push_back({"op 5", patched(2, 5), "op"});
  v.push_back({"op 255", patched(2, 255), "op"});
  v.push_back({"flags 1", patched(3, 1), "flags"});
  v.push_back({"flags 0x80", patched(3, 0x80), "flags"});
  v.push_back({"READ len 0", encoded(request(Op::kRead, 0, 1, 0)), "zero"});
  v.push_back({"WRITE len 0", encoded(request(Op::kWrite, 0, 1, 0)), "zero"});
  v.push_back({"READ len max+1", encoded(request(Op::kRead, kMaxIoBytes + 1, 1, 0)), "limit"});
  v.push_back({"WRITE len max+1", encoded(request(Op::kWrite, kMaxIoBytes + 1, 1, 0)), "limit"});
  v.push_back({"READ len UINT32_MAX", encoded(request(Op::kRead, UINT32_MAX, 1, 0)), "limit"});
  v.push_back({"CAS len 4", encoded(request(Op::kCas, 4, 1, 0)), "8"});
  v.push_back({"CAS len 0", encoded(request(Op::kCas, 0, 1, 0)), "8"});
  v.push_back({"FAA len 16", encoded(request(Op::kFaa, 16, 1, 0)), "8"});
  return v;
}

TEST(Frame, MalformedRequestsAreRejectedWithAReason) {
  for (const MalformedRequest& c : malformed_requests()) {
    std::string why;
    EXPECT_EQ(decode_req(c.bytes, &why), DecodeResult::kMalformed) << c.name;
    EXPECT_NE(why.find(c.reason), std::string::npos) << c.name << ": " << why;
    // Rejected as soon as the bad field has arrived, not only once the whole
    // header is there, and also when followed by more data.
    EXPECT_EQ(decode_req(c.bytes.substr(0, 8)), DecodeResult::kMalformed) << c.name;
    EXPECT_EQ(decode_req(c.bytes + std::string(64, '\0')), DecodeResult::kMalformed) << c.name;
  }
}

TEST(Frame, MalformedDetectedFromTheFirstBadByte) {
  EXPECT_EQ(decode_req(std::string(1, 'X')), DecodeResult::kMalformed);
  EXPECT_EQ(decode_resp(std::string(1, 'X')), DecodeResult::kMalformed);
  EXPECT_EQ(decode_req(std::string("\x44\x50\x09", 3)), DecodeResult::kMalformed);
  EXPECT_EQ(decode_req(std::string("\x44\x50\x01", 3)), DecodeResult::kNeedMore);
  // A null `why` is allowed.
  DecodedRequest out;
  const std::string junk = "GET / HTTP/1.1\r\n";
  EXPECT_EQ(decode_request(bytes(junk), out, nullptr), DecodeResult::kMalformed);
}

TEST(Frame, MalformedResponsesAreRejectedWithAReason) {
  const std::vector<uint8_t> payload(8, 0);
  const std::string ok_read = encoded(response(Op::kRead, Errc::kOk, 8, 1), payload);
  auto patched = [&](size_t at, uint8_t value) {
    std::string s = ok_read;
    s[at] = static_cast<char>(value);
    return s;
  };
  std::string read_len0 = encoded(response(Op::kRead, Errc::kOk, 0, 1));
  std::string read_too_long = ok_read;
  put32(read_too_long, 4, kMaxIoBytes + 1);
  const struct {
    const char* name;
    std::string bytes;
    const char* reason;
  } cases[] = {
      {"bad magic", patched(0, 0), "magic"},
      {"bad magic high", patched(1, 0), "magic"},
      {"unknown status 13", patched(2, 13), "status"},
      {"unknown status 255", patched(2, 255), "status"},
      {"op 0", patched(3, 0), "op"},
      {"op 7", patched(3, 7), "op"},
      {"READ ok len 0", read_len0, "READ"},
      {"READ ok len too big", read_too_long, "READ"},
      {"READ error with payload", encoded(response(Op::kRead, Errc::kOutOfBounds, 8, 1), payload), "payload"},
      {"WRITE ok with payload", encoded(response(Op::kWrite, Errc::kOk, 8, 1), payload), "payload"},
      {"CAS ok with payload", encoded(response(Op::kCas, Errc::kOk, 8, 1), payload), "payload"},
      {"FAA ok with payload", encoded(response(Op::kFaa, Errc::kOk, 8, 1), payload), "payload"},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_EQ(decode_resp(c.bytes, &why), DecodeResult::kMalformed) << c.name;
    EXPECT_NE(why.find(c.reason), std::string::npos) << c.name << ": " << why;
    EXPECT_EQ(decode_resp(c.bytes.substr(0, 8)), DecodeResult::kMalformed) << c.name;
  }
}

TEST(Frame, EveryKnownStatusIsAccepted) {
  for (uint8_t st = 0; st <= static_cast<uint8_t>(Errc::kUnsupported); ++st) {
    EXPECT_EQ(decode_resp(encoded(response(Op::kWrite, static_cast<Errc>(st), 0, 1))), DecodeResult::kOk) << int(st);
  }
}

TEST(CheckAccess, InsideAndAtTheEdges) {
  const uint64_t lo = 4096, hi = 8192;
  EXPECT_EQ(check_access(Op::kRead, lo, 64, lo, hi), Errc::kOk);                 // lo boundary
  EXPECT_EQ(check_access(Op::kRead, lo - 1, 64, lo, hi), Errc::kOutOfBounds);    // one below lo
  EXPECT_EQ(check_access(Op::kRead, 0, 64, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kWrite, hi - 64, 64, lo, hi), Errc::kOk);           // ends exactly at hi
  EXPECT_EQ(check_access(Op::kWrite, hi - 63, 64, lo, hi), Errc::kOutOfBounds);  // one byte past hi
  EXPECT_EQ(check_access(Op::kRead, lo, hi - lo, lo, hi), Errc::kOk);            // the whole range
  EXPECT_EQ(check_access(Op::kRead, lo, hi - lo + 1, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kRead, hi, 1, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kRead, hi + 100, 1, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kRead, lo, 0, lo, hi), Errc::kOk);                  // empty access inside
  EXPECT_EQ(check_access(Op::kRead, lo, 8, hi, lo), Errc::kOutOfBounds);         // inverted range
  EXPECT_EQ(check_access(Op::kRead, lo, 8, lo, lo), Errc::kOutOfBounds);         // empty range
}

TEST(CheckAccess, NoOverflowNearTheTopOfTheAddressSpace) {
  const uint64_t lo = 4096, hi = 1 << 20;
  // addr + len wraps around to a small number that would pass a naive check.
  EXPECT_EQ(check_access(Op::kRead, UINT64_MAX - 7, 16, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kRead, UINT64_MAX, UINT64_MAX, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kWrite, lo, UINT64_MAX, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kCas, UINT64_MAX - 7, 8, lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kFaa, UINT64_MAX - 3, 8, lo, hi), Errc::kOutOfBounds);
  // A region that reaches the top of the address space.
  EXPECT_EQ(check_access(Op::kRead, UINT64_MAX - 8, 8, 0, UINT64_MAX), Errc::kOk);
  EXPECT_EQ(check_access(Op::kRead, UINT64_MAX - 8, 9, 0, UINT64_MAX), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kRead, UINT64_MAX - 8, 10, 0, UINT64_MAX), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(Op::kCas, UINT64_MAX - 15, 8, 0, UINT64_MAX), Errc::kOk);
}

TEST(CheckAccess, AtomicsNeedAlignmentButBoundsComeFirst) {
  const uint64_t lo = 4096, hi = 8192;
  for (Op op : {Op::kCas, Op::kFaa}) {
    EXPECT_EQ(check_access(op, lo, 8, lo, hi), Errc::kOk);
    EXPECT_EQ(check_access(op, hi - 8, 8, lo, hi), Errc::kOk);
    EXPECT_EQ(check_access(op, lo + 4, 8, lo, hi), Errc::kMisaligned);
    EXPECT_EQ(check_access(op, lo + 1, 8, lo, hi), Errc::kMisaligned);
    EXPECT_EQ(check_access(op, hi - 4, 8, lo, hi), Errc::kOutOfBounds);  // misaligned AND out of bounds
    EXPECT_EQ(check_access(op, lo - 4, 8, lo, hi), Errc::kOutOfBounds);
    EXPECT_EQ(check_access(op, hi, 8, lo, hi), Errc::kOutOfBounds);
    // Atomics touch 8 bytes whatever len says.
    EXPECT_EQ(check_access(op, hi - 8, 0, lo, hi), Errc::kOk);
    EXPECT_EQ(check_access(op, hi, 0, lo, hi), Errc::kOutOfBounds);
  }
  // READ/WRITE need no alignment.
  EXPECT_EQ(check_access(Op::kRead, lo + 3, 5, lo, hi), Errc::kOk);
  EXPECT_EQ(check_access(Op::kWrite, lo + 1, 7, lo, hi), Errc::kOk);
}

TEST(CheckAccess, HeaderOverloadMatches) {
  const uint64_t lo = 64, hi = 4096;
  EXPECT_EQ(check_access(request(Op::kRead, 64, 0, 64), lo, hi), Errc::kOk);
  EXPECT_EQ(check_access(request(Op::kWrite, 64, 0, 4033), lo, hi), Errc::kOutOfBounds);
  EXPECT_EQ(check_access(request(Op::kCas, 8, 0, 68), lo, hi), Errc::kMisaligned);
  EXPECT_EQ(check_access(request(Op::kFaa, 8, 0, 4088), lo, hi), Errc::kOk);
}

}  // namespace
}  // namespace pandora::wire
