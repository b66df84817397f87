// Checksums and the keyed hash used by the control-plane handshake.
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

// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104).
Digest256 sha256(std::span<const uint8_t> data);
Digest256 hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message);

// Compares in time independent of where the inputs differ.
bool constant_time_equal(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace pandora
