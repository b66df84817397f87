#include "common/logger.h"

#include <time.h>

namespace pandora {

bool parse_log_level(std::string_view s, LogLevel* out) {
  if (s == "debug") *out = LogLevel::kDebug;
  else if (s == "info") *out = LogLevel::kInfo;
  else if (s == "warn") *out = LogLevel::kWarn;
  else if (s == "error") *out = LogLevel::kError;
  else if (s == "off") *out = LogLevel::kOff;
  else return false;
  return true;
}

void Logger::write_line(LogLevel l, std::string_view msg) const {
  static constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  std::string line = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z {} [{}] {}\n", t.tm_year + 1900,
                                 t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000,
                                 kNames[static_cast<int>(l)], component_, msg);
  fwrite(line.data(), 1, line.size(), out_);
  fflush(out_);
}

}  // namespace pandora
