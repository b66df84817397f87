#include "workloads/tpcc/tpcc_random.h"

namespace pandora::workloads::tpcc {

namespace {
constexpr std::string_view kSyllables[10] = {"BAR", "OUGHT", "ABLE", "PRI",   "PRES",
                                             "ESE", "ANTI",  "CALLY", "ATION", "EING"};
constexpr std::string_view kAlpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
}  // namespace

std::string last_name(uint32_t n) {
  std::string s;
  s += kSyllables[(n / 100) % 10];
  s += kSyllables[(n / 10) % 10];
  s += kSyllables[n % 10];
  return s;
}

std::string alpha_string(Rng& rng, uint32_t lo, uint32_t hi) {
  const auto len = static_cast<size_t>(between(rng, lo, hi));
  std::string s(len, ' ');
  // One 64-bit draw gives ten 6-bit picks (62 symbols: reject 62 and 63).
  uint64_t bits = 0;
  int left = 0;
  for (size_t i = 0; i < len;) {
    if (left == 0) {
      bits = rng.next();
      left = 10;
    }
    const auto v = static_cast<size_t>(bits & 63);
    bits >>= 6;
    --left;
    if (v < kAlpha.size()) s[i++] = kAlpha[v];
  }
  return s;
}

std::string numeric_string(Rng& rng, uint32_t lo, uint32_t hi) {
  const auto len = static_cast<size_t>(between(rng, lo, hi));
  std::string s(len, '0');
  for (char& c : s) c = static_cast<char>('0' + rng.uniform(10));
  return s;
}

std::string data_with_original(Rng& rng) {
  std::string s = alpha_string(rng, 26, 50);
  if (rng.uniform(10) == 0) s.replace(rng.uniform(s.size() - 8 + 1), 8, "ORIGINAL");
  return s;
}

std::string zip_code(Rng& rng) { return numeric_string(rng, 4, 4) + "11111"; }

}  // namespace pandora::workloads::tpcc
