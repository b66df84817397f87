#include "common/checksum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pandora {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string hex(const Digest256& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

uint32_t crc(const std::string& s, uint32_t seed = 0) { return crc32c(s.data(), s.size(), seed); }

// Bit-at-a-time CRC-32C straight from the definition, to check the sliced
// implementation against on arbitrary inputs.
uint32_t reference_crc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFF;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78 : c >> 1;
  }
  return ~c;
}

std::vector<uint8_t> pseudo_random(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

TEST(Crc32c, StandardCheckValue) { EXPECT_EQ(crc("123456789"), 0xE3069283u); }

TEST(Crc32c, EmptyInputIsTheSeed) {
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  EXPECT_EQ(crc32c(nullptr, 0, 0xDEADBEEF), 0xDEADBEEFu);
}

TEST(Crc32c, Rfc3720Vectors) {
  // iSCSI (RFC 3720 B.4) test patterns.
  std::vector<uint8_t> v(32, 0x00);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x8A9136AAu);
  std::fill(v.begin(), v.end(), 0xFF);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x62A8AB43u);
  for (size_t i = 0; i < 32; ++i) v[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x46DD794Eu);
  for (size_t i = 0; i < 32; ++i) v[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(v.data(), v.size()), 0x113FDB5Cu);
}

TEST(Crc32c, ChainingEqualsOneShotAtEverySplit) {
  const std::string s = "The quick brown fox jumps over the lazy dog, then over 123456789.";
  const uint32_t whole = crc(s);
  for (size_t k = 0; k <= s.size(); ++k) {
    EXPECT_EQ(crc(s.substr(k), crc(s.substr(0, k))), whole) << k;
  }
  // Three pieces.
  EXPECT_EQ(crc(s.substr(20), crc(s.substr(7, 13), crc(s.substr(0, 7)))), whole);
  EXPECT_EQ(crc("56789", crc("1234")), 0xE3069283u);
}

TEST(Crc32c, MatchesBitwiseDefinitionForAllLengthsAndAlignments) {
  const std::vector<uint8_t> data = pseudo_random(300, 7);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n + offset <= data.size(); n += (n < 40 ? 1 : 13)) {
      ASSERT_EQ(crc32c(data.data() + offset, n), reference_crc32c(data.data() + offset, n))
          << "offset " << offset << " len " << n;
    }
  }
}

TEST(Crc32c, DetectsSingleBitFlips) {
  std::vector<uint8_t> data = pseudo_random(64, 3);
  const uint32_t good = crc32c(data.data(), data.size());
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(crc32c(data.data(), data.size()), good) << bit;
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

TEST(Sha256, NistVectors) {
  EXPECT_EQ(hex(sha256({})), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256(bytes("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256(bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(bytes("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
                             "lmnopqrsmnopqrstnopqrstu"))),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
  const std::string a(1000000, 'a');
  EXPECT_EQ(hex(sha256(bytes(a))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 55/56/64-byte padding edges (values from an
  // independent implementation; input byte i is i % 251).
  const std::pair<size_t, const char*> cases[] = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
      {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
      {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
      {128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"},
  };
  for (const auto& [n, digest] : cases) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i % 251);
    EXPECT_EQ(hex(sha256(v)), digest) << n;
  }
}

struct HmacCase {
  int number;
  std::vector<uint8_t> key;
  std::string data;
  const char* mac;
};

// RFC 4231 test cases 1-4, 6, 7 (case 5 tests truncation).
std::vector<HmacCase> rfc4231_cases() {
  std::vector<uint8_t> key4;
  for (uint8_t i = 1; i <= 25; ++i) key4.push_back(i);
  return {
      {1, std::vector<uint8_t>(20, 0x0b), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {2, {'J', 'e', 'f', 'e'}, "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {3, std::vector<uint8_t>(20, 0xaa), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {4, key4, std::string(50, '\xcd'), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {6, std::vector<uint8_t>(131, 0xaa), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {7, std::vector<uint8_t>(131, 0xaa),
       "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be "
       "hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
}

TEST(HmacSha256, Rfc4231) {
  for (const HmacCase& c : rfc4231_cases()) {
    EXPECT_EQ(hex(hmac_sha256(c.key, bytes(c.data))), c.mac) << "test case " << c.number;
  }
}

TEST(HmacSha256, KeyedContextMatchesOneShotInPiecesAndAcrossMessages) {
  for (const HmacCase& c : rfc4231_cases()) {
    HmacSha256 mac(c.key);
    // The same key serves several messages; each finish() starts a new one.
    for (int round = 0; round < 3; ++round) {
      const size_t cut = c.data.size() * static_cast<size_t>(round) / 3;
      mac.update(bytes(c.data).first(cut));
      mac.update({});
      mac.update(bytes(c.data).subspan(cut));
      EXPECT_EQ(hex(mac.finish()), c.mac) << "test case " << c.number << " round " << round;
    }
    HmacSha256 moved(std::move(mac));
    EXPECT_EQ(hex(moved.finish()), hex(hmac_sha256(c.key, {}))) << "empty message, case " << c.number;
  }
}

TEST(HmacSha256, BlockSizedAndEmptyKeys) {
  // A 64-byte key is used as is (not hashed); an empty key is all zeros.
  const std::vector<uint8_t> k64(64, 'k');
  EXPECT_EQ(hex(hmac_sha256(k64, {})), "83026a325aaee70e36cfe607536aa1054104ad1077c36134810d4ccded1ccd3b");
  EXPECT_EQ(hex(hmac_sha256({}, bytes("msg"))), "5f576a8d68fe4fb7eb823227246353c0870c3b0e878997341db1226b4bd88d61");
}

TEST(ConstantTimeEqual, ComparesContentAndLength) {
  const std::vector<uint8_t> a = {1, 2, 3, 4};
  std::vector<uint8_t> b = a;
  EXPECT_TRUE(constant_time_equal(a, b));
  EXPECT_TRUE(constant_time_equal({}, {}));
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] ^= 0x80;
    EXPECT_FALSE(constant_time_equal(a, b)) << i;
    b[i] ^= 0x80;
  }
  EXPECT_FALSE(constant_time_equal(a, std::span<const uint8_t>(a).first(3)));
  EXPECT_FALSE(constant_time_equal({}, a));
}

}  // namespace
}  // namespace pandora
