#include "workloads/bench/flag_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace pandora::workloads {

Result<double> parse_real(std::string_view flag, std::string_view text, double min, double max) {
  auto bad = [&] {
    return Status(Errc::kInvalidArgument, fmt::format("--{}: '{}' is not a number in [{}, {}]", flag, text, min, max));
  };
  const std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return bad();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v) || v < min || v > max) return bad();
  return v;
}

}  // namespace pandora::workloads
