// CRC-32C, SHA-256 and HMAC-SHA256, written from their specifications
// (Castagnoli polynomial in reflected form; FIPS 180-4; RFC 2104). They are
// small enough that a crypto library dependency is not worth it, and the
// handshake only needs HMAC for authentication, not secrecy.
#include "common/checksum.h"

#include <algorithm>
#include <cstring>

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

// --- SHA-256 -----------------------------------------------------------------

constexpr std::array<uint32_t, 64> kSha256K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// Incremental hasher (FIPS 180-4 section 6.2), so HMAC can hash its padded
// key and the message without concatenating them.
class Sha256 {
 public:
  void update(const uint8_t* data, size_t len) {
    if (len == 0) return;  // `data` may then be null, which memcpy must not see
    total_ += len;
    if (fill_ > 0) {
      const size_t take = std::min(len, block_.size() - fill_);
      std::memcpy(block_.data() + fill_, data, take);
      fill_ += take;
      data += take;
      len -= take;
      if (fill_ < block_.size()) return;
      compress(block_.data());
      fill_ = 0;
    }
    for (; len >= 64; data += 64, len -= 64) compress(data);
    if (len > 0) std::memcpy(block_.data(), data, len);
    fill_ = len;
  }

  Digest256 finish() {
    // Padding (5.1.1): a 1 bit, zeros up to 56 mod 64, then the message
    // length in bits as a 64-bit big-endian integer.
    const uint64_t bits = total_ * 8;
    uint8_t pad[72] = {0x80};
    const size_t pad_len = (fill_ < 56 ? 56 - fill_ : 120 - fill_);
    for (int i = 0; i < 8; ++i) pad[pad_len + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(pad, pad_len + 8);
    Digest256 out;
    for (size_t i = 0; i < 8; ++i) {
      for (size_t j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
    }
    return out;
  }

 private:
  void compress(const uint8_t* p) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) {
      w[t] = (static_cast<uint32_t>(p[4 * t]) << 24) | (static_cast<uint32_t>(p[4 * t + 1]) << 16) |
             (static_cast<uint32_t>(p[4 * t + 2]) << 8) | static_cast<uint32_t>(p[4 * t + 3]);
    }
    for (int t = 16; t < 64; ++t) {
      const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int t = 0; t < 64; ++t) {
      const uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const uint32_t ch = (e & f) ^ (~e & g);
      const uint32_t t1 = h + big_s1 + ch + kSha256K[t] + w[t];
      const uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const uint32_t t2 = big_s0 + maj;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  // Initial hash value (5.3.3).
  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<uint8_t, 64> block_{};
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

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

Digest256 sha256(std::span<const uint8_t> data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.finish();
}

Digest256 hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message) {
  // RFC 2104 with B = 64: keys longer than a block are hashed first, then
  // zero-padded to the block size.
  std::array<uint8_t, 64> k{};
  if (key.size() > k.size()) {
    const Digest256 hk = sha256(key);
    std::copy(hk.begin(), hk.end(), k.begin());
  } else if (!key.empty()) {
    std::copy(key.begin(), key.end(), k.begin());
  }
  std::array<uint8_t, 64> ipad, opad;
  for (size_t i = 0; i < k.size(); ++i) {
    ipad[i] = k[i] ^ 0x36;
    opad[i] = k[i] ^ 0x5c;
  }
  Sha256 inner;
  inner.update(ipad.data(), ipad.size());
  inner.update(message.data(), message.size());
  const Digest256 inner_digest = inner.finish();
  Sha256 outer;
  outer.update(opad.data(), opad.size());
  outer.update(inner_digest.data(), inner_digest.size());
  return outer.finish();
}

bool constant_time_equal(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  // Lengths are public (a MAC has a fixed size); only the contents are secret.
  if (a.size() != b.size()) return false;
  // Accumulate every difference without branching on data; volatile keeps the
  // compiler from turning the loop into an early-exit comparison.
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = diff | (a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace pandora
