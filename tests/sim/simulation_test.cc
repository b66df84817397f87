// The deterministic simulation (litmus/sim/simulation.h): clean runs hold
// and state what they did, one seed replays one run, and every bug switch of
// seed Table 5.1 is caught on a fixed list of seeds.
#include "litmus/sim/simulation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

namespace pandora::sim {
namespace {

SimOptions crashy(ProtocolMode mode, std::string test) {
  SimOptions o;
  o.protocol = mode;
  o.test = std::move(test);
  o.crash_probability = 1.0 / 800;
  o.disconnect_probability = 1.0 / 3000;
  o.leader_crash_probability = 1.0 / 200;
  o.max_crashes = 10;
  return o;
}

// Clean runs over a fixed seed range: every run holds every check, and
// together they did what a crash test must do - crashes, some inside a
// batch sent to several memory nodes, broken links and halted coordinators,
// crashes at protocol steps, crashed recovery leaders, roll-backs,
// roll-forwards and swept latches.
// (A broken injector or scheduler fails here, not silently.)
void clean_range(ProtocolMode mode, const std::string& test) {
  SimResult sum;
  const uint64_t seeds = 24;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    SimOptions o = crashy(mode, test);
    o.seed = seed;
    const SimResult r = simulate(o);
    ASSERT_TRUE(r.error.is_ok()) << r.error.to_string();
    ASSERT_TRUE(r.failure.empty()) << "seed " << seed << ": " << r.failure;
    EXPECT_EQ(r.recoveries, r.crashes) << "seed " << seed << ": every crashed node is recovered before the end";
    EXPECT_GT(r.traces, 0u);
    sum.commits += r.commits;
    sum.asserts += r.asserts;
    sum.crashes += r.crashes;
    sum.crashes_mid_batch += r.crashes_mid_batch;
    sum.step_crashes += r.step_crashes;
    sum.disconnects += r.disconnects;
    sum.halts += r.halts;
    sum.leader_crashes += r.leader_crashes;
    sum.pauses += r.pauses;
    sum.rolled_back += r.rolled_back;
    sum.rolled_forward += r.rolled_forward;
    sum.swept += r.swept;
  }
  printf("%llu seeds: %llu commits, %llu asserts, %llu crashes (%llu mid-batch), %llu broken links, %llu halts, %llu "
         "leader crashes, %llu rolled back, %llu rolled forward, %llu swept\n",
         static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(sum.commits),
         static_cast<unsigned long long>(sum.asserts), static_cast<unsigned long long>(sum.crashes),
         static_cast<unsigned long long>(sum.crashes_mid_batch), static_cast<unsigned long long>(sum.disconnects),
         static_cast<unsigned long long>(sum.halts), static_cast<unsigned long long>(sum.leader_crashes),
         static_cast<unsigned long long>(sum.rolled_back), static_cast<unsigned long long>(sum.rolled_forward),
         static_cast<unsigned long long>(sum.swept));
  EXPECT_GE(sum.commits, seeds * 20);
  EXPECT_GE(sum.asserts, seeds * 5);
  EXPECT_GE(sum.crashes, seeds);
  EXPECT_GE(sum.crashes_mid_batch, 5u);
  EXPECT_GE(sum.step_crashes, 3u);
  EXPECT_GE(sum.disconnects, 2u);
  EXPECT_GE(sum.halts, 1u);
  EXPECT_GE(sum.leader_crashes, 5u);
  EXPECT_GE(sum.rolled_back, 5u);
  EXPECT_GE(sum.rolled_forward, 5u);
  EXPECT_GE(sum.swept, 5u);
  // ford stops the world for its recoveries; the others never do.
  if (mode == ProtocolMode::kFord) {
    EXPECT_GE(sum.pauses, 5u);
  } else {
    EXPECT_EQ(sum.pauses, 0u);
  }
}

TEST(Simulation, CleanRunsHoldPandora) { clean_range(ProtocolMode::kPandora, "all"); }
TEST(Simulation, CleanRunsHoldLogALatch) { clean_range(ProtocolMode::kLogALatch, "all"); }
TEST(Simulation, CleanRunsHoldFord) { clean_range(ProtocolMode::kFord, "all"); }

// False positives of the detector: a live node is declared failed, fenced
// at every memory node and recovered while it keeps running; it must stop
// when it finds itself fenced, nothing it sends after the fence may land,
// and the history and asserts must hold, in every protocol (ford: its
// recovery stops the world with the suspect still alive).
TEST(Simulation, FalsePositivesAreFencedAndRecoveredWhileTheyRun) {
  for (ProtocolMode mode : {ProtocolMode::kPandora, ProtocolMode::kFord, ProtocolMode::kLogALatch}) {
    uint64_t false_positives = 0, recoveries = 0, crashes = 0;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      SimOptions o;
      o.protocol = mode;
      o.test = "all";
      o.seed = seed;
      o.crash_probability = 1.0 / 4000;
      o.false_positive_probability = 1.0 / 1500;
      const SimResult r = simulate(o);
      ASSERT_TRUE(r.error.is_ok()) << r.error.to_string();
      ASSERT_TRUE(r.failure.empty()) << protocol_name(mode) << " seed " << seed << ": " << r.failure;
      EXPECT_EQ(r.recoveries, r.crashes + r.false_positives) << protocol_name(mode) << " seed " << seed;
      false_positives += r.false_positives;
      recoveries += r.recoveries;
      crashes += r.crashes;
    }
    printf("%s: %llu false positives, %llu crashes, %llu recoveries over 12 seeds\n",
           std::string(protocol_name(mode)).c_str(), static_cast<unsigned long long>(false_positives),
           static_cast<unsigned long long>(crashes), static_cast<unsigned long long>(recoveries));
    EXPECT_GE(false_positives, 6u) << protocol_name(mode);
  }
}

TEST(Simulation, OneSeedReplaysOneRun) {
  SimOptions o = crashy(ProtocolMode::kPandora, "extended");
  o.seed = 77;
  const SimResult a = simulate(o), b = simulate(o);
  ASSERT_TRUE(a.ok()) << a.failure << a.error.to_string();
  EXPECT_GT(a.crashes, 0u);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.ops_landed, b.ops_landed);
  EXPECT_EQ(a.commits, b.commits);
  EXPECT_EQ(a.crashes, b.crashes);
  EXPECT_EQ(a.leader_crashes, b.leader_crashes);
  o.seed = 78;
  EXPECT_NE(simulate(o).digest, a.digest);
}

TEST(Simulation, RefusesWhatItCannotRun) {
  SimOptions o;
  o.test = "litmus9";
  EXPECT_EQ(simulate(o).error.code(), Errc::kInvalidArgument);
  o = SimOptions{};
  o.replicas = 4;
  EXPECT_EQ(simulate(o).error.code(), Errc::kInvalidArgument);
  o = SimOptions{};
  o.protocol = ProtocolMode::kFord;
  o.bugs.covert_latches = true;  // bug switches exist for pandora only
  EXPECT_EQ(simulate(o).error.code(), Errc::kInvalidArgument);
}

// A livelock (the budget of events ends before the transactions do) is a
// failure that names itself, not a hang.
TEST(Simulation, ARunThatDoesNotEndFails) {
  SimOptions o;
  o.max_events = 2000;
  o.txns = 100000;
  const SimResult r = simulate(o);
  ASSERT_TRUE(r.error.is_ok());
  EXPECT_NE(r.failure.find("livelock"), std::string::npos) << r.failure;
}

// Seed Table 5.1 as data: each bug switch and the litmus programs and
// crash rate that expose it. The simulation must catch each (an assert, a
// post-recovery assert or the history checker) on at least three of the
// seeds 1..16, tried in order until three did. A range rather than named
// seeds, because any change to the simulation reshuffles which seeds catch
// what; how often a seed catches each is in litmus/README.md
// (complicit-abort, covert-latches, missing-insert-log: every seed;
// relaxed-latches about 3 in 4; lost-decision and logging-without-latching,
// on 2 instances, 18 and 17 in 20).
//
// Instances: the fewer, the more transactions meet on the same keys. The
// two recovery bugs show when a transaction commits over keys of one the
// crash left half-decided; on the default 8 instances about half the seeds
// of 2,000 transactions caught them, and the misses were most of the test's
// 95-100 s (Debug+ASan); on 2 nearly every seed does (the test: ~30 s).
struct Mutation {
  const char* bug;
  const char* test;
  uint64_t crash_every;  // events; 0: no failure of any kind
  uint64_t txns;
  uint32_t instances = 0;  // crash bugs: 0 keeps SimOptions' default
};

const std::vector<Mutation>& mutation_table() {
  static const std::vector<Mutation> table = {
      {"complicit-abort", "litmus1", 0, 2000},
      {"missing-insert-log", "litmus1-insert", 300, 2000},
      {"covert-latches", "litmus2", 0, 2000},
      {"relaxed-latches", "litmus2", 0, 4000},
      {"lost-decision", "litmus3", 300, 2000, 2},
      {"logging-without-latching", "litmus3", 300, 2000, 2},
  };
  return table;
}

// The simulation options of mutation `m` on `seed`, with its bug switch on
// or (the control run) off.
SimOptions mutation_options(const Mutation& m, uint64_t seed, bool with_bug) {
  SimOptions o;
  o.test = m.test;
  if (with_bug) o.bugs = parse_bug_switches(m.bug).value();
  o.seed = seed;
  o.txns = m.txns;
  if (m.crash_every) {
    o.crash_probability = 1.0 / static_cast<double>(m.crash_every);
    o.max_crashes = 100;
    if (m.instances) o.instances = m.instances;
  } else {
    // Concurrency bugs: no failure at all, more contention.
    o.crash_probability = o.step_crash_probability = o.disconnect_probability = 0;
    o.instances = 2;
    o.coordinators = 4;
  }
  return o;
}

TEST(Simulation, EveryBugSwitchIsCaught) {
  if (!bug_switches_available()) GTEST_SKIP() << "bug switches are compiled into Debug builds only";
  constexpr uint64_t kSeeds = 16, kCatches = 3;
  for (const Mutation& m : mutation_table()) {
    uint64_t caught = 0, tried = 0, first_catch = 0;
    for (uint64_t seed = 1; seed <= kSeeds && caught < kCatches; ++seed) {
      const auto t0 = std::chrono::steady_clock::now();
      const SimResult r = simulate(mutation_options(m, seed, true));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ASSERT_TRUE(r.error.is_ok()) << r.error.to_string();
      ++tried;
      if (r.failure.empty()) continue;
      if (++caught == 1) first_catch = seed;
      printf("%-26s seed %3llu: caught after %6llu operations (%4.0f ms): %.90s\n", m.bug,
             static_cast<unsigned long long>(seed), static_cast<unsigned long long>(r.ops_at_failure), ms,
             r.failure.c_str());
    }
    EXPECT_GE(caught, kCatches) << m.bug << " was caught on " << caught << " of seeds 1.." << tried;
    // The control: the first catching run without the switch holds, so the
    // catch is the bug's and not something these options break anyway.
    if (caught > 0) {
      const SimResult clean = simulate(mutation_options(m, first_catch, false));
      ASSERT_TRUE(clean.error.is_ok()) << clean.error.to_string();
      EXPECT_TRUE(clean.failure.empty()) << m.bug << "'s options fail without the switch too (seed " << first_catch
                                         << "): " << clean.failure;
      EXPECT_GT(clean.asserts, 0u) << m.bug << "'s control run checked no assert";
    }
  }
}

}  // namespace
}  // namespace pandora::sim
