// pandora-sim: runs the deterministic simulation (simulation.h) over a range
// of seeds and prints every failing seed with the command that replays it.
//
//   pandora-sim --seeds 1-2000                      # the CI range, pandora, litmus1
//   pandora-sim --test all --protocol log-a-latch --seeds 1-100000   # a long run
//   pandora-sim --bug relaxed-latches --seeds 1-50 --expect-failure  # a mutation must be caught
//
// Exit 0: every seed held (with --expect-failure: some seed failed); 1: the
// opposite; 2: bad options or a set-up error.
#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "common/options.h"
#include "litmus/sim/simulation.h"

namespace {

using namespace pandora;

double one_in(uint64_t n) { return n == 0 ? 0.0 : 1.0 / static_cast<double>(n); }

// "A-B" or "A".
bool parse_range(const std::string& text, uint64_t* lo, uint64_t* hi) {
  const auto dash = text.find('-');
  auto a = parse_u64(text.substr(0, dash));
  if (!a) return false;
  *lo = *a;
  *hi = *a;
  if (dash == std::string::npos) return true;
  auto b = parse_u64(text.substr(dash + 1));
  if (!b || *b < *a) return false;
  *hi = *b;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string seeds = "1-200", protocol = "pandora", bug = "none";
  sim::SimOptions o;
  uint64_t memory_nodes = o.memory_nodes, replicas = o.replicas, compute_nodes = o.compute_nodes,
           coordinators = o.coordinators, instances = o.instances, txns = o.txns, assert_every = o.assert_every,
           crash_every = 4000, step_crash_every = 2000, disconnect_every = 20000, leader_crash_every = 300, false_positive_every = 0, max_crashes = o.max_crashes,
           detect_delay = o.detect_delay, max_events = o.max_events;
  bool expect_failure = false, verbose = false, no_history = false;
  OptionSet opts("pandora-sim",
                 "Deterministic simulation of the store: the real engine, recovery and litmus programs on in-process "
                 "memory nodes, one seeded scheduler deciding every operation's landing, crashes between any two "
                 "operations. One seed replays one run.");
  opts.add_string("seeds", &seeds, "seeds to run: A-B or A");
  opts.add_choice("test", &o.test, {"litmus1", "litmus1-insert", "litmus1-delete", "litmus2", "litmus3", "extended", "all"},
                  "litmus programs (litmus/README.md)");
  opts.add_choice("protocol", &protocol, {"pandora", "ford", "log-a-latch"}, "transaction protocol");
  opts.add_string("bug", &bug, "test-only bug switches, comma separated (Debug builds), e.g. relaxed-latches");
  opts.add_u64("memory-nodes", &memory_nodes, "memory nodes", 1, 8);
  opts.add_u64("replicas", &replicas, "replicas of every object (f+1)", 1, 8);
  opts.add_u64("compute-nodes", &compute_nodes, "compute nodes running at once", 1, 16);
  opts.add_u64("coordinators", &coordinators, "coordinators per compute node", 1, 64);
  opts.add_u64("instances", &instances, "litmus instances", 1, 1024);
  opts.add_u64("txns", &txns, "litmus transactions and asserts per seed", 1, 10'000'000);
  opts.add_u64("assert-every", &assert_every, "1 in N transactions is an assert (0: none)", 0, 1'000'000);
  opts.add_u64("crash-every", &crash_every, "a compute node crashes once in N events on average (0: never)");
  opts.add_u64("step-crash-every", &step_crash_every,
               "a node crashes at one in N completed protocol steps (compute/step_hook.h; 0: never)");
  opts.add_u64("disconnect-every", &disconnect_every, "a connection breaks once in N events (0: never)");
  opts.add_u64("false-positive-every", &false_positive_every,
               "the detector declares a live compute node failed once in N events: it is fenced and recovered "
               "while it runs (0: never)");
  opts.add_u64("leader-crash-every", &leader_crash_every,
               "a running recovery leader crashes once in N events (0: never)");
  opts.add_u64("max-crashes", &max_crashes, "compute-node crashes and broken links per seed", 0, 1000);
  opts.add_u64("detect-delay", &detect_delay, "events until the detector notices a crash (uniform in 1..N)", 1,
               1'000'000);
  opts.add_u64("max-events", &max_events, "a seed that runs longer fails as a livelock", 1000);
  opts.add_flag("no-history", &no_history, "skip the history check");
  opts.add_flag("expect-failure", &expect_failure,
                "succeed when some seed fails (mutation checks): stop at and print the first one");
  opts.add_flag("verbose", &verbose, "one line per seed");
  std::string msg;
  switch (opts.parse(argc, argv, &msg)) {
    case OptionSet::Outcome::kHelp:
      fputs(msg.c_str(), stdout);
      return 0;
    case OptionSet::Outcome::kError:
      fprintf(stderr, "pandora-sim: %s\n", msg.c_str());
      return 2;
    case OptionSet::Outcome::kRun:
      break;
  }
  uint64_t lo = 0, hi = 0;
  if (!parse_range(seeds, &lo, &hi)) {
    fprintf(stderr, "pandora-sim: --seeds %s: expected A-B (A <= B) or A\n", seeds.c_str());
    return 2;
  }
  auto mode = parse_protocol(protocol);
  auto bugs = parse_bug_switches(bug);
  if (!mode || !bugs) {
    fprintf(stderr, "pandora-sim: %s\n", (!mode ? mode.status() : bugs.status()).to_string().c_str());
    return 2;
  }
  o.protocol = *mode;
  o.bugs = *bugs;
  o.memory_nodes = static_cast<uint32_t>(memory_nodes);
  o.replicas = static_cast<uint32_t>(replicas);
  o.compute_nodes = static_cast<uint32_t>(compute_nodes);
  o.coordinators = static_cast<uint32_t>(coordinators);
  o.instances = static_cast<uint32_t>(instances);
  o.txns = txns;
  o.assert_every = static_cast<uint32_t>(assert_every);
  o.crash_probability = one_in(crash_every);
  o.step_crash_probability = one_in(step_crash_every);
  o.disconnect_probability = one_in(disconnect_every);
  o.false_positive_probability = one_in(false_positive_every);
  o.leader_crash_probability = one_in(leader_crash_every);
  o.max_crashes = static_cast<uint32_t>(max_crashes);
  o.detect_delay = static_cast<uint32_t>(detect_delay);
  o.max_events = max_events;
  o.check_history = !no_history;

  // Every option but --seeds, as given: appended to a failing seed's replay line.
  std::string replay = "pandora-sim";
  for (const auto& [name, value] : opts.values()) {
    if (name == "seeds" || name == "verbose" || name == "expect-failure" || !opts.was_set(name)) continue;
    replay += value == "true" ? fmt::format(" --{}", name) : fmt::format(" --{} {}", name, value);
  }

  const auto start = std::chrono::steady_clock::now();
  uint64_t ran = 0, failed = 0;
  sim::SimResult sum;
  for (uint64_t seed = lo; seed <= hi; ++seed) {
    o.seed = seed;
    const sim::SimResult r = sim::simulate(o);
    ++ran;
    if (!r.error.is_ok()) {
      fprintf(stderr, "pandora-sim: seed %llu: %s\n", static_cast<unsigned long long>(seed),
              r.error.to_string().c_str());
      return 2;
    }
    sum.events += r.events;
    sum.ops_landed += r.ops_landed;
    sum.commits += r.commits;
    sum.aborts += r.aborts;
    sum.asserts += r.asserts;
    sum.crashes += r.crashes;
    sum.crashes_in_flight += r.crashes_in_flight;
    sum.crashes_mid_batch += r.crashes_mid_batch;
    sum.step_crashes += r.step_crashes;
    sum.disconnects += r.disconnects;
    sum.false_positives += r.false_positives;
    sum.halts += r.halts;
    sum.recoveries += r.recoveries;
    sum.leader_crashes += r.leader_crashes;
    sum.pauses += r.pauses;
    sum.rolled_forward += r.rolled_forward;
    sum.rolled_back += r.rolled_back;
    sum.swept += r.swept;
    if (verbose) {
      printf("seed %llu: %s events %llu ops %llu commits %llu crashes %llu (mid-batch %llu) recoveries %llu digest "
             "%016llx\n",
             static_cast<unsigned long long>(seed), r.ok() ? "ok" : "FAILED",
             static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.ops_landed),
             static_cast<unsigned long long>(r.commits), static_cast<unsigned long long>(r.crashes),
             static_cast<unsigned long long>(r.crashes_mid_batch), static_cast<unsigned long long>(r.recoveries),
             static_cast<unsigned long long>(r.digest));
    }
    if (!r.ok()) {
      ++failed;
      printf("seed %llu FAILED after %llu operations: %s\n  replay: %s --seeds %llu\n",
             static_cast<unsigned long long>(seed), static_cast<unsigned long long>(r.ops_at_failure),
             r.failure.c_str(), replay.c_str(), static_cast<unsigned long long>(seed));
      if (expect_failure) break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("%llu seeds, %llu failed, %.1f s (%.0f seeds/s); %llu events, %llu operations, %llu commits, %llu aborts, "
         "%llu asserts; %llu crashes (%llu with operations in flight, %llu inside a multi-node batch, %llu at a "
         "protocol step), %llu broken links, %llu false positives, %llu halts, %llu recoveries (%llu rolled forward, %llu rolled back, %llu latches swept), %llu "
         "recovery leaders crashed, %llu stop-the-world pauses\n",
         static_cast<unsigned long long>(ran), static_cast<unsigned long long>(failed), secs,
         secs > 0 ? static_cast<double>(ran) / secs : 0.0, static_cast<unsigned long long>(sum.events),
         static_cast<unsigned long long>(sum.ops_landed), static_cast<unsigned long long>(sum.commits),
         static_cast<unsigned long long>(sum.aborts), static_cast<unsigned long long>(sum.asserts),
         static_cast<unsigned long long>(sum.crashes), static_cast<unsigned long long>(sum.crashes_in_flight),
         static_cast<unsigned long long>(sum.crashes_mid_batch), static_cast<unsigned long long>(sum.step_crashes),
         static_cast<unsigned long long>(sum.disconnects), static_cast<unsigned long long>(sum.false_positives),
         static_cast<unsigned long long>(sum.halts), static_cast<unsigned long long>(sum.recoveries),
         static_cast<unsigned long long>(sum.rolled_forward), static_cast<unsigned long long>(sum.rolled_back),
         static_cast<unsigned long long>(sum.swept), static_cast<unsigned long long>(sum.leader_crashes),
         static_cast<unsigned long long>(sum.pauses));
  if (expect_failure) return failed > 0 ? 0 : 1;
  return failed == 0 ? 0 : 1;
}
