// CRC-32C (Castagnoli polynomial in reflected form), written here: it guards
// against corruption, not against an adversary. SHA-256 and HMAC-SHA256 are
// libcrypto's: authentication primitives must come from a reviewed library.
#include "common/checksum.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include <new>
#include <utility>

namespace pandora {
namespace {

// --- CRC-32C -----------------------------------------------------------------

constexpr uint32_t kCrc32cPoly = 0x82F63B78;  // 0x1EDC6F41 bit-reversed

// Slicing-by-8 tables, computed at compile time. Log records are checksummed
// on every commit, so byte-at-a-time (one table lookup per byte) is too slow;
// eight tables let the loop consume eight bytes per iteration.
// table[0] is the classic byte table; table[k][b] is the CRC of byte b
// followed by k zero bytes.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ kCrc32cPoly : c >> 1;
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr CrcTables kCrcTables = make_crc_tables();
static_assert(kCrcTables[0][1] == 0xF26B8303);  // well-known first non-zero entry

}  // namespace

uint32_t crc32c(const void* data, size_t len, uint32_t seed) {
  // The register is kept inverted between calls (pre- and post-conditioning
  // with ~), which is what makes crc32c(b, crc32c(a)) == crc32c(a || b).
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t crc = ~seed;
  const auto& t = kCrcTables;
  while (len >= 8) {
    // Assembled from bytes, so the result does not depend on host order.
    const uint32_t lo = crc ^ (static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                               (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24));
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
          t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    len -= 8;
  }
  while (len-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

namespace {

// libcrypto takes a non-null pointer even for an empty input.
const unsigned char* data_or_empty(std::span<const uint8_t> s) {
  static constexpr unsigned char kEmpty[1] = {0};
  return s.empty() ? kEmpty : s.data();
}

}  // namespace

Digest256 sha256(std::span<const uint8_t> data) {
  Digest256 out;
  unsigned int len = 0;
  if (EVP_Digest(data_or_empty(data), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != out.size()) {
    throw std::bad_alloc();
  }
  return out;
}

Digest256 hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message) {
  Digest256 out;
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), data_or_empty(key), static_cast<int>(key.size()), data_or_empty(message), message.size(),
           out.data(), &len) == nullptr ||
      len != out.size()) {
    throw std::bad_alloc();
  }
  return out;
}

// The EVP_MAC context holds the keyed state; EVP_MAC_init with a null key
// restarts it for the next message without redoing the key schedule.
struct HmacSha256::State {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
  ~State() {
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
  }
};

HmacSha256::HmacSha256(std::span<const uint8_t> key) : state_(new State) {
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  state_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (state_->mac != nullptr) state_->ctx = EVP_MAC_CTX_new(state_->mac);
  if (state_->ctx == nullptr || EVP_MAC_init(state_->ctx, data_or_empty(key), key.size(), params) != 1) {
    delete state_;
    throw std::bad_alloc();
  }
}

HmacSha256::~HmacSha256() { delete state_; }

HmacSha256::HmacSha256(HmacSha256&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}

HmacSha256& HmacSha256::operator=(HmacSha256&& other) noexcept {
  std::swap(state_, other.state_);
  return *this;
}

void HmacSha256::update(std::span<const uint8_t> piece) {
  if (piece.empty()) return;
  if (EVP_MAC_update(state_->ctx, piece.data(), piece.size()) != 1) throw std::bad_alloc();
}

Digest256 HmacSha256::finish() {
  Digest256 out;
  size_t len = 0;
  if (EVP_MAC_final(state_->ctx, out.data(), &len, out.size()) != 1 || len != out.size() ||
      EVP_MAC_init(state_->ctx, nullptr, 0, nullptr) != 1) {
    throw std::bad_alloc();
  }
  return out;
}

bool constant_time_equal(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  // Lengths are public (a MAC has a fixed size); only the contents are secret.
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace pandora
