// RateLimitedLog on its own: a fake clock and a memory stream as the log, so
// every window boundary is exact and nothing depends on timing.
#include "common/log_rate_limiter.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pandora {
namespace {

using namespace std::chrono_literals;
using Clock = RateLimitedLog::Clock;

// A Logger writing into memory; text() returns everything written so far.
class CapturedLog {
 public:
  CapturedLog() : f_(open_memstream(&buf_, &len_)) {}
  ~CapturedLog() {
    std::fclose(f_);
    std::free(buf_);
  }
  Logger logger(LogLevel level = LogLevel::kInfo) const { return Logger("test", level, f_); }
  std::string text() const {
    std::fflush(f_);
    return std::string(buf_, len_);
  }
  size_t lines() const {
    std::string t = text();
    return static_cast<size_t>(std::count(t.begin(), t.end(), '\n'));
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  FILE* f_;
};

struct FakeClock {
  Clock::time_point t = Clock::time_point(1h);
  RateLimitedLog::Now fn() {
    return [this] { return t; };
  }
};

TEST(RateLimitedLog, WritesAtMostNLinesPerKeyPerWindowThenOneSummary) {
  CapturedLog out;
  FakeClock clock;
  {
    RateLimitedLog rl(out.logger(), {.lines = 3, .window = 1000ms}, clock.fn());
    for (int i = 0; i < 1000; ++i) rl.log(LogLevel::kWarn, "refused", "refusing connection {}", i);
    EXPECT_EQ(out.lines(), 3u) << out.text();
    EXPECT_NE(out.text().find("refusing connection 2"), std::string::npos);
    EXPECT_EQ(out.text().find("refusing connection 3"), std::string::npos);
    EXPECT_EQ(rl.suppressed_total(), 997u);
    // Nothing is reported before the window ends, then exactly one summary.
    clock.t += 999ms;
    EXPECT_EQ(rl.flush(), clock.t + 1ms);
    EXPECT_EQ(out.lines(), 3u);
    clock.t += 1ms;
    EXPECT_EQ(rl.flush(), Clock::time_point::max());
    EXPECT_EQ(out.lines(), 4u) << out.text();
    EXPECT_NE(out.text().find("WARN [test] 997 \"refused\" line(s) suppressed in the last 1.0 s"), std::string::npos)
        << out.text();
    // A new window writes again.
    rl.log(LogLevel::kWarn, "refused", "refusing connection {}", 2000);
    EXPECT_NE(out.text().find("refusing connection 2000"), std::string::npos);
    EXPECT_EQ(out.lines(), 5u);
  }
  // Nothing was suppressed since: the destructor adds no line.
  EXPECT_EQ(out.lines(), 5u) << out.text();
}

TEST(RateLimitedLog, SummaryPrecedesTheFirstLineOfTheNextWindow) {
  CapturedLog out;
  FakeClock clock;
  RateLimitedLog rl(out.logger(), {.lines = 1, .window = 500ms}, clock.fn());
  rl.log(LogLevel::kInfo, "drop", "first");
  rl.log(LogLevel::kInfo, "drop", "second");
  rl.log(LogLevel::kInfo, "drop", "third");
  clock.t += 2s;
  rl.log(LogLevel::kInfo, "drop", "fourth");
  const std::string t = out.text();
  const size_t summary = t.find("2 \"drop\" line(s) suppressed in the last 2.0 s");
  ASSERT_NE(summary, std::string::npos) << t;
  EXPECT_LT(t.find("first"), summary);
  EXPECT_GT(t.find("fourth"), summary);
  EXPECT_EQ(t.find("second"), std::string::npos);
  EXPECT_EQ(out.lines(), 3u) << t;
}

TEST(RateLimitedLog, KeysAreIndependentAndBounded) {
  CapturedLog out;
  FakeClock clock;
  RateLimitedLog rl(out.logger(), {.lines = 2, .window = 1s, .max_keys = 4}, clock.fn());
  for (int i = 0; i < 10; ++i) {
    rl.log(LogLevel::kWarn, "a", "a{}", i);
    rl.log(LogLevel::kWarn, "b", "b{}", i);
  }
  EXPECT_EQ(out.lines(), 4u) << out.text();
  // 100 more keys share the overflow key once four are tracked.
  for (int i = 0; i < 100; ++i) rl.log(LogLevel::kWarn, std::to_string(i), "k{}", i);
  // "0" and "1" take the two free slots (one line each), then every other
  // key shares "other" (two lines, 96 suppressed).
  EXPECT_EQ(out.lines(), 4u + 2 + 2) << out.text();
  clock.t += 1s;
  rl.flush();
  const std::string t = out.text();
  EXPECT_NE(t.find("8 \"a\" line(s) suppressed"), std::string::npos) << t;
  EXPECT_NE(t.find("8 \"b\" line(s) suppressed"), std::string::npos) << t;
  EXPECT_NE(t.find("96 \"other\" line(s) suppressed"), std::string::npos) << t;
}

TEST(RateLimitedLog, LinesBelowTheLevelAreNeitherWrittenNorCounted) {
  CapturedLog out;
  FakeClock clock;
  {
    RateLimitedLog rl(out.logger(LogLevel::kWarn), {.lines = 1}, clock.fn());
    for (int i = 0; i < 50; ++i) rl.log(LogLevel::kInfo, "x", "quiet {}", i);
    EXPECT_EQ(rl.suppressed_total(), 0u);
    rl.log(LogLevel::kError, "x", "loud");
    rl.log(LogLevel::kWarn, "x", "suppressed");
    rl.log(LogLevel::kError, "x", "suppressed too");
    EXPECT_EQ(out.lines(), 1u) << out.text();
  }
  // The destructor reports what is still pending, at the highest level.
  EXPECT_NE(out.text().find("ERROR [test] 2 \"x\" line(s) suppressed"), std::string::npos) << out.text();
}

TEST(RateLimitedLog, ConcurrentCallersNeverExceedTheLimit) {
  CapturedLog out;
  FakeClock clock;  // time stands still: one window
  RateLimitedLog rl(out.logger(), {.lines = 7}, clock.fn());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&rl, t] {
      for (int i = 0; i < 2000; ++i) rl.log(LogLevel::kWarn, "flood", "thread {} line {}", t, i);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(out.lines(), 7u);
  EXPECT_EQ(rl.suppressed_total(), 4u * 2000 - 7);
}

}  // namespace
}  // namespace pandora
