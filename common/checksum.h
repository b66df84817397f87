// Checksums and the keyed hashes used for authentication (control-plane
// handshake, heartbeats, the optional tcp frame MAC).
//
// SHA-256 and HMAC-SHA256 are OpenSSL's libcrypto (a reviewed, constant-time
// implementation); only CRC-32C, which protects against corruption and not
// against an adversary, is Pandora's own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace pandora {

// CRC-32C (Castagnoli), as used for persistent headers and log records.
// crc32c("123456789") == 0xE3069283. `seed` chains calls: crc32c(b, crc32c(a)).
uint32_t crc32c(const void* data, size_t len, uint32_t seed = 0);

using Digest256 = std::array<uint8_t, 32>;

// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), by libcrypto. They fail
// only when libcrypto cannot allocate, which is reported as std::bad_alloc
// (like any allocation).
Digest256 sha256(std::span<const uint8_t> data);
Digest256 hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message);

// HMAC-SHA256 of many messages under one key: the key is processed once, so
// each message costs only its own hashing (the tcp frame MAC computes one
// per frame). Messages may be given in pieces:
//
//   HmacSha256 mac(key);
//   mac.update(a); mac.update(b);
//   Digest256 d = mac.finish();   // == hmac_sha256(key, a || b); ready for the next message
//
// Not thread-safe; move-only.
class HmacSha256 {
 public:
  explicit HmacSha256(std::span<const uint8_t> key);  // std::bad_alloc if libcrypto cannot allocate
  ~HmacSha256();
  HmacSha256(HmacSha256&& other) noexcept;
  HmacSha256& operator=(HmacSha256&& other) noexcept;
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;

  void update(std::span<const uint8_t> piece);
  // The MAC of everything given since construction or the last finish();
  // starts the next message.
  Digest256 finish();

 private:
  struct State;  // libcrypto's context, kept out of this header
  State* state_ = nullptr;
};

// Compares in time independent of where the inputs differ (CRYPTO_memcmp);
// only the lengths, which are public, may end it early.
bool constant_time_equal(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace pandora
