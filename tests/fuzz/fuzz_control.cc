// Fuzz target for the control-plane codec (common/wire/control.h).
//
// The input is read as a control stream: control_frame_length splits it into
// frames as the daemon's reader does, and each frame goes to decode_control.
// Decoding is strict, so the encoding of an accepted message is canonical: a
// decoded message must re-encode to exactly the bytes it came from, and
// decode again to the same type and encoding.
#include <cstdint>
#include <cstring>
#include <string>

#include "common/wire/control.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace pandora::wire;
using pandora::Errc;

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

void check_frame(std::span<const uint8_t> frame) {
  pandora::Result<ControlMessage> m = decode_control(frame);
  if (!m.is_ok()) {
    FUZZ_CHECK(m.status().code() == Errc::kProtocol);
    FUZZ_CHECK(!m.status().message().empty());
    return;
  }
  std::string encoded;
  encode_control(encoded, *m);
  FUZZ_CHECK(encoded.size() == frame.size());
  FUZZ_CHECK(std::memcmp(encoded.data(), frame.data(), frame.size()) == 0);

  pandora::Result<ControlMessage> again = decode_control(as_bytes(encoded));
  FUZZ_CHECK(again.is_ok());
  FUZZ_CHECK(control_type(*again) == control_type(*m));
  std::string encoded_again;
  encode_control(encoded_again, *again);
  FUZZ_CHECK(encoded_again == encoded);

  // Strictness: the frame without its last byte, or with one more, is refused.
  FUZZ_CHECK(!decode_control(frame.first(frame.size() - 1)).is_ok());
  std::string longer = encoded + '\0';
  FUZZ_CHECK(!decode_control(as_bytes(longer)).is_ok());

  if (const Hello* h = std::get_if<Hello>(&m.value())) {
    std::array<uint8_t, 32> nonce{};
    // label, server nonce, cluster id, role, compute id, pid, incarnation, client nonce
    FUZZ_CHECK(hello_mac_input(nonce, *h).size() == 16 + 32 + 8 + 1 + 2 + 4 + 8 + 32);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> rest(data, size);

  // The whole input as one frame: accepted only if it is exactly one.
  pandora::Result<ControlMessage> whole = decode_control(rest);
  if (whole.is_ok()) {
    pandora::Result<size_t> len = control_frame_length(rest);
    FUZZ_CHECK(len.is_ok() && *len == size);
  }

  while (true) {
    pandora::Result<size_t> len = control_frame_length(rest);
    if (!len.is_ok()) {
      FUZZ_CHECK(len.status().code() == Errc::kProtocol);
      FUZZ_CHECK(rest.size() >= kControlHeaderBytes);
      FUZZ_CHECK(!decode_control(rest).is_ok());
      return 0;
    }
    if (*len == 0) {
      FUZZ_CHECK(rest.size() < kControlHeaderBytes);
      FUZZ_CHECK(!decode_control(rest).is_ok());
      return 0;
    }
    FUZZ_CHECK(*len >= kControlHeaderBytes && *len <= kControlHeaderBytes + kMaxControlBody);
    if (*len > rest.size()) {
      FUZZ_CHECK(!decode_control(rest).is_ok());  // truncated
      return 0;
    }
    check_frame(rest.first(*len));
    rest = rest.subspan(*len);
  }
}
