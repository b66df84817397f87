// Fuzz target for the failure detector's datagram codec
// (common/wire/heartbeat.h).
//
// Random bytes almost never carry a valid mac, which would stop the fuzzer at
// the authentication check, so each input is decoded twice: as it is, and
// with its last 32 bytes replaced by the correct mac (what a holder of the
// secret could send), which reaches the structural checks. Decoding is
// strict, so an accepted datagram must re-encode to exactly its bytes, and
// the replay guard must refuse it the second time.
#include <cstdint>
#include <cstring>
#include <string>

#include "common/checksum.h"
#include "common/wire/heartbeat.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace pandora::wire;
using pandora::Errc;

// The seeds (make_seeds.py) are signed with this secret for this cluster.
constexpr std::string_view kSecret = "fuzz-secret";
constexpr uint64_t kCluster = 7;

std::span<const uint8_t> as_bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

void check(std::span<const uint8_t> d) {
  pandora::Result<HeartbeatMessage> m = decode_heartbeat(d, kSecret, kCluster);
  if (!m.is_ok()) {
    FUZZ_CHECK(m.status().code() == Errc::kProtocol || m.status().code() == Errc::kAuthFailed);
    FUZZ_CHECK(!m.status().message().empty());
    return;
  }
  FUZZ_CHECK(d.size() <= kMaxDatagram);
  FUZZ_CHECK(m->header.cluster_id == kCluster);
  FUZZ_CHECK(m->pids.size() <= kMaxPidsPerMessage);
  FUZZ_CHECK(m->header.type == HeartbeatType::kHeartbeat ? m->pids.empty() : true);

  std::string encoded;
  FUZZ_CHECK(encode_heartbeat(encoded, *m, kSecret).is_ok());
  FUZZ_CHECK(encoded.size() == d.size());
  FUZZ_CHECK(std::memcmp(encoded.data(), d.data(), d.size()) == 0);

  // Any other secret or cluster refuses it; so do a shorter and a longer copy.
  FUZZ_CHECK(decode_heartbeat(d, "fuzz-secreT", kCluster).status().code() == Errc::kAuthFailed);
  FUZZ_CHECK(decode_heartbeat(d, kSecret, kCluster + 1).status().code() == Errc::kAuthFailed);
  FUZZ_CHECK(!decode_heartbeat(d.first(d.size() - 1), kSecret, kCluster).is_ok());
  std::string longer = encoded + '\0';
  FUZZ_CHECK(!decode_heartbeat(as_bytes(longer), kSecret, kCluster).is_ok());

  ReplayGuard guard;
  const uint64_t now = m->header.sent_ns;
  FUZZ_CHECK(guard.accept(m->header, now).is_ok());
  FUZZ_CHECK(!guard.accept(m->header, now).is_ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  check(in);
  if (size >= kHeartbeatMacBytes && size <= kMaxDatagram + 1) {
    std::string signed_copy(reinterpret_cast<const char*>(data), size);
    const size_t covered = size - kHeartbeatMacBytes;
    const pandora::Digest256 mac = pandora::hmac_sha256(as_bytes(kSecret), in.first(covered));
    std::memcpy(signed_copy.data() + covered, mac.data(), mac.size());
    check(as_bytes(signed_copy));
  }
  return 0;
}
