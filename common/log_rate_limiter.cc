#include "common/log_rate_limiter.h"

#include <algorithm>

namespace pandora {

namespace {
constexpr std::string_view kOverflowKey = "other";
}

RateLimitedLog::RateLimitedLog(Logger log, LogRateLimit limit, Now now)
    : log_(std::move(log)), limit_(limit), now_(std::move(now)) {
  // Zero lines would make every key silent except for its summaries; one
  // line per window keeps the first occurrence visible.
  limit_.lines = std::max<uint32_t>(limit_.lines, 1);
  limit_.max_keys = std::max<size_t>(limit_.max_keys, 1);
}

RateLimitedLog::~RateLimitedLog() {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point t = now();
  for (const auto& [key, k] : keys_) {
    if (k.suppressed > 0) write_summary(key, k, t);
  }
}

bool RateLimitedLog::admit(LogLevel l, std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point t = now();
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= limit_.max_keys) {
      // Make room from keys whose window ended with nothing to report.
      std::erase_if(keys_, [&](const auto& kv) {
        return kv.second.suppressed == 0 && t - kv.second.window_start >= limit_.window;
      });
    }
    if (keys_.size() >= limit_.max_keys) key = kOverflowKey;
    it = keys_.try_emplace(std::string(key), KeyState{t, 0, 0, LogLevel::kDebug}).first;
  }
  KeyState& k = it->second;
  if (t - k.window_start >= limit_.window) {
    if (k.suppressed > 0) write_summary(it->first, k, t);
    k = KeyState{t, 0, 0, LogLevel::kDebug};
  }
  if (k.written < limit_.lines) {
    ++k.written;
    return true;
  }
  ++k.suppressed;
  ++suppressed_total_;
  k.level = std::max(k.level, l);
  return false;
}

RateLimitedLog::Clock::time_point RateLimitedLog::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point t = now();
  Clock::time_point next = Clock::time_point::max();
  for (auto it = keys_.begin(); it != keys_.end();) {
    KeyState& k = it->second;
    if (t - k.window_start < limit_.window) {
      if (k.suppressed > 0) next = std::min(next, k.window_start + limit_.window);
      ++it;
      continue;
    }
    if (k.suppressed > 0) write_summary(it->first, k, t);
    it = keys_.erase(it);  // a new line of this key starts a new window
  }
  return next;
}

uint64_t RateLimitedLog::suppressed_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return suppressed_total_;
}

void RateLimitedLog::write_summary(const std::string& key, const KeyState& k, Clock::time_point now) const {
  const double seconds = std::chrono::duration<double>(now - k.window_start).count();
  log_.log(k.level, "{} \"{}\" line(s) suppressed in the last {:.1f} s", k.suppressed,
           key, seconds);
}

}  // namespace pandora
