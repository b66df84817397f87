// Rate-limited logging for lines that outsiders can trigger at will (one per
// refused or dropped connection, one per bad frame, ...): without a limit,
// anyone who can open sockets can fill the disk with our log and drown the
// lines that matter.
//
//   RateLimitedLog rl(log.child("control"), {.lines = 5, .window = 1s});
//   rl.log(LogLevel::kWarn, "handshake-evicted", "evicting {}: ...", peer);
//   ...
//   next = rl.flush();   // from a timer: reports bursts that have stopped
//
// Each call names a key (the kind of event, a short constant string; never
// something an attacker chooses, such as a peer address, or the keys would
// be as many as the attacker's sockets). Per key, at most `lines` lines are
// written per `window`; later ones in the same window are only counted. When
// the window has ended, the next line of that key or the next flush() first
// writes one summary line:
//
//   ... WARN [memd.control] 2412 "handshake-evicted" line(s) suppressed in the last 1.0 s
//
// at the highest level of the lines it stands for. At most `max_keys` keys
// are tracked; lines of further keys share the key "other", so memory stays
// bounded whatever the callers do. The level filter of the Logger applies
// first: a line below it is neither written nor counted.
//
// Thread-safe (one mutex; the format work of a suppressed line is skipped).
// Not global: every component owns its own limiter next to its Logger.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/logger.h"

namespace pandora {

struct LogRateLimit {
  uint32_t lines = 5;                      // written per key per window
  std::chrono::milliseconds window{1000};  // the accounting period of a key
  size_t max_keys = 64;                    // distinct keys tracked ("other" beyond)
};

class RateLimitedLog {
 public:
  using Clock = std::chrono::steady_clock;
  // The time source (tests pass a fake clock); empty: Clock::now.
  using Now = std::function<Clock::time_point()>;

  explicit RateLimitedLog(Logger log, LogRateLimit limit = {}, Now now = {});
  // Writes the summaries still pending (whether or not their window ended),
  // so no count is lost at shutdown.
  ~RateLimitedLog();
  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  // Writes the line at level `l` unless `key` has used up its lines in the
  // current window (then it is only counted).
  template <typename... A>
  void log(LogLevel l, std::string_view key, fmt::format_string<A...> f, A&&... a) {
    if (!log_.enabled(l) || !admit(l, key)) return;
    log_.log(l, f, std::forward<A>(a)...);
  }

  // Writes the summary of every key whose window has ended with suppressed
  // lines, and forgets keys that are idle. Returns when the next summary
  // falls due (Clock::time_point::max() when none is pending), so an event
  // loop can wake up for it.
  Clock::time_point flush();

  // Lines suppressed so far, over all keys (for tests and statistics).
  uint64_t suppressed_total() const;

  const Logger& logger() const { return log_; }

 private:
  struct KeyState {
    Clock::time_point window_start{};
    uint32_t written = 0;
    uint64_t suppressed = 0;
    LogLevel level = LogLevel::kDebug;  // highest level among the suppressed lines
  };

  // Accounts one line of `key`; true if it is to be written. Writes the
  // summary of the key's previous window first when that window has ended.
  bool admit(LogLevel l, std::string_view key);
  void write_summary(const std::string& key, const KeyState& k, Clock::time_point now) const;
  Clock::time_point now() const { return now_ ? now_() : Clock::now(); }

  Logger log_;
  LogRateLimit limit_;
  Now now_;
  mutable std::mutex mu_;
  std::map<std::string, KeyState, std::less<>> keys_;
  uint64_t suppressed_total_ = 0;
};

}  // namespace pandora
