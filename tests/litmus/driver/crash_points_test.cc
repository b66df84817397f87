// CrashInjector without killing anything (a fire action replaces
// raise(SIGKILL)): names round-trip, hits are counted in the counters given,
// a point armed for its nth hit fires exactly there, probabilities and scopes
// are honoured, the note records the point, and an unarmed injector only
// counts.
#include <gtest/gtest.h>

#include <vector>

#include "compute/crash_injector.h"

namespace pandora {
namespace {

TEST(CrashPoints, NamesRoundTrip) {
  for (size_t i = 0; i < kCrashPointCount; ++i) {
    const auto p = static_cast<CrashPoint>(i);
    auto parsed = parse_crash_point(crash_point_name(p));
    ASSERT_TRUE(parsed) << crash_point_name(p);
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_FALSE(parse_crash_point("no-such-point"));
  EXPECT_TRUE(is_recovery_point(CrashPoint::kAfterSweep));
  EXPECT_FALSE(is_recovery_point(CrashPoint::kAfterAbortRelease));
}

TEST(CrashPoints, UnarmedInjectorOnlyCounts) {
  std::array<std::atomic<uint64_t>, kCrashPointCount> counters{};
  CrashInjector inj{CrashInjector::Counters(counters)};
  std::vector<CrashPoint> fired;
  inj.set_fire_action([&](CrashPoint p) { fired.push_back(p); });
  for (int i = 0; i < 100; ++i) inj.hit(CrashPoint::kAfterCommitWrite);
  EXPECT_FALSE(inj.armed());
  EXPECT_TRUE(fired.empty());
  EXPECT_EQ(counters[static_cast<size_t>(CrashPoint::kAfterCommitWrite)].load(), 100u);
  EXPECT_EQ(inj.hits(CrashPoint::kAfterCommitWrite), 100u);
}

TEST(CrashPoints, NamedPointFiresAtItsNthHitAndNotes) {
  CrashInjector inj;
  std::atomic<int32_t> note{-1};
  inj.set_note(&note);
  std::vector<uint64_t> fired_at;
  uint64_t hit_no = 0;
  inj.set_fire_action([&](CrashPoint p) {
    EXPECT_EQ(p, CrashPoint::kAfterLogWrite);
    fired_at.push_back(hit_no);
  });
  inj.arm_point(CrashPoint::kAfterLogWrite, 3);
  for (hit_no = 1; hit_no <= 10; ++hit_no) {
    inj.hit(CrashPoint::kAfterLogWrite);
    inj.hit(CrashPoint::kAfterValidation);  // other points never fire
  }
  EXPECT_EQ(fired_at, std::vector<uint64_t>{3});
  EXPECT_EQ(note.load(), static_cast<int32_t>(CrashPoint::kAfterLogWrite));
}

TEST(CrashPoints, ProbabilitiesAndScopes) {
  CrashInjector inj;
  uint64_t fired = 0, recovery_fired = 0;
  inj.set_fire_action([&](CrashPoint p) {
    ++fired;
    recovery_fired += is_recovery_point(p);
  });
  inj.arm_random(0.25, 42, CrashInjector::Scope::kCompute);
  for (int i = 0; i < 4000; ++i) {
    inj.hit(CrashPoint::kAfterLatchCas);
    inj.hit(CrashPoint::kBeforeTruncate);  // out of scope
  }
  EXPECT_EQ(recovery_fired, 0u);
  EXPECT_GT(fired, 800u);
  EXPECT_LT(fired, 1200u);
  inj.disarm();
  fired = 0;
  for (int i = 0; i < 100; ++i) inj.hit(CrashPoint::kAfterLatchCas);
  EXPECT_EQ(fired, 0u);
  // nth = 0: every hit of the point fires with the probability.
  inj.arm_point(CrashPoint::kAfterUnlatch, 0, 1.0);
  inj.hit(CrashPoint::kAfterUnlatch);
  EXPECT_EQ(fired, 1u);
}

}  // namespace
}  // namespace pandora
