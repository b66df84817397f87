#include "workloads/postgres/tatp_params.h"

#include <fmt/format.h>

namespace pandora::workloads::tatp {

std::string sub_nbr(uint64_t s_id) { return fmt::format("{:015d}", s_id); }

std::string random_digits(Rng& rng, int n) {
  std::string s(static_cast<size_t>(n), '0');
  for (char& c : s) c = static_cast<char>('0' + rng.uniform(10));
  return s;
}

std::string random_letters(Rng& rng, int n) {
  std::string s(static_cast<size_t>(n), 'A');
  for (char& c : s) c = static_cast<char>('A' + rng.uniform(26));
  return s;
}

}  // namespace pandora::workloads::tatp
