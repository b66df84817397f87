#include "workloads/bench/zipf.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace pandora::workloads {

double ZipfGenerator::zeta(uint64_t n, double theta) {
  if (theta == 0.0) return static_cast<double>(n);
  const uint64_t exact = std::min(n, kExactZetaLimit);
  // Summing smallest terms first keeps the rounding error of the long sum low.
  double sum = 0;
  for (uint64_t i = exact; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
  if (n == exact) return sum;
  // Tail sum_{i=m+1..n} f(i), f(x) = x^-theta, by Euler-Maclaurin:
  //   integral_m^n f + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12
  // The next term is O(m^-(theta+3)), negligible at m = 2^22.
  const double m = static_cast<double>(exact);
  const double nn = static_cast<double>(n);
  const double integral = (std::pow(nn, 1 - theta) - std::pow(m, 1 - theta)) / (1 - theta);
  const double ends = (std::pow(nn, -theta) - std::pow(m, -theta)) / 2;
  const double deriv = (-theta * std::pow(nn, -theta - 1) + theta * std::pow(m, -theta - 1)) / 12;
  return sum + integral + ends + deriv;
}

Result<ZipfGenerator> ZipfGenerator::create(uint64_t n, double theta) {
  if (n == 0) return Status(Errc::kInvalidArgument, "the Zipf distribution needs at least one key");
  if (!(theta >= 0.0 && theta < 1.0)) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--zipf-theta {} is out of range (expected 0 <= theta < 1; 0 is uniform)", theta));
  }
  ZipfGenerator z;
  z.n_ = n;
  z.theta_ = theta;
  z.alpha_ = 1.0 / (1.0 - theta);
  z.zetan_ = zeta(n, theta);
  z.two_threshold_ = 1.0 + std::pow(0.5, theta);
  if (n > 2) {
    const double zeta2 = zeta(2, theta);
    z.eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / z.zetan_);
  }
  return z;
}

uint64_t ZipfGenerator::next(Rng& rng) const {
  const double u = rng.uniform01();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < two_threshold_ || n_ <= 2) return std::min<uint64_t>(1, n_ - 1);
  const double v = static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  // u -> 1 can round v up to n.
  return std::min(static_cast<uint64_t>(v), n_ - 1);
}

double ZipfGenerator::probability(uint64_t rank) const {
  if (rank >= n_) return 0.0;
  return std::pow(static_cast<double>(rank + 1), -theta_) / zetan_;
}

}  // namespace pandora::workloads
