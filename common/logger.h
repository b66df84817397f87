// A small leveled logger. Not global: each component receives a Logger (or
// makes a child with .child("name")) so tests can silence or capture it.
// Each line is written with one fwrite, so lines from threads never mix.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace pandora {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

// Parses "debug", "info", "warn", "error", "off".
bool parse_log_level(std::string_view s, LogLevel* out);

class Logger {
 public:
  explicit Logger(std::string component, LogLevel min_level = LogLevel::kInfo, FILE* out = stderr)
      : component_(std::move(component)), min_(min_level), out_(out) {}

  Logger child(std::string_view sub) const {
    return Logger(component_ + "." + std::string(sub), min_, out_);
  }

  bool enabled(LogLevel l) const { return l >= min_ && min_ != LogLevel::kOff; }
  LogLevel level() const { return min_; }

  template <typename... A>
  void debug(fmt::format_string<A...> f, A&&... a) const { log(LogLevel::kDebug, f, std::forward<A>(a)...); }
  template <typename... A>
  void info(fmt::format_string<A...> f, A&&... a) const { log(LogLevel::kInfo, f, std::forward<A>(a)...); }
  template <typename... A>
  void warn(fmt::format_string<A...> f, A&&... a) const { log(LogLevel::kWarn, f, std::forward<A>(a)...); }
  template <typename... A>
  void error(fmt::format_string<A...> f, A&&... a) const { log(LogLevel::kError, f, std::forward<A>(a)...); }

  template <typename... A>
  void log(LogLevel l, fmt::format_string<A...> f, A&&... a) const {
    if (!enabled(l)) return;
    write_line(l, fmt::format(f, std::forward<A>(a)...));
  }

 private:
  void write_line(LogLevel l, std::string_view msg) const;

  std::string component_;
  LogLevel min_;
  FILE* out_;
};

}  // namespace pandora
