// pandora-litmus: DART litmus tests (seed chapter 5) with crash injection.
//
// This file is the command line: litmus_main declares and validates the
// options and hands them to the Driver (driver.h, which describes a run).
// Exit 0: no violation; 1: violation; 2: error; 3: a crash point the run had
// to cover was never hit (--require-coverage).
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "common/options.h"
#include "common/transport/client.h"
#include "compute/compute_config.h"
#include "compute/crash_injector.h"
#include "litmus/driver/driver.h"
#include "litmus/driver/litmus_spec.h"
#include "litmus/driver/shared_page.h"

namespace pandora::litmus {
namespace {

std::optional<double> parse_probability(const std::string& s) {
  try {
    size_t used = 0;
    const double p = std::stod(s, &used);
    if (used != s.size() || p < 0 || p > 1) return std::nullopt;
    return p;
  } catch (...) {
    return std::nullopt;
  }
}

int litmus_main(int argc, char** argv) {
  Options o;
  OptionSet opts("pandora-litmus",
                 "DART litmus tests with crash injection against pandora-memd daemons (exit 0: no violation, 1: "
                 "violation, 2: error, 3: coverage not reached)");
  opts.add_choice("test", &o.test, {"litmus1", "litmus1-insert", "litmus1-delete", "litmus2", "litmus3", "extended", "all"},
                  "which litmus test(s) the instances run");
  opts.add_choice("protocol", &o.protocol, {"pandora", "ford", "log-a-latch"}, "transaction protocol");
  opts.add_choice("backend", &o.backend, {"shm", "tcp", "verbs"}, "data-plane transport");
  opts.add_string("bug", &o.bug, "test-only bug switches, comma separated (Debug builds): complicit-abort, "
                                 "missing-insert-log, covert-latches, relaxed-latches, lost-decision, "
                                 "logging-without-latching");
  opts.add_string("crash", &o.crash,
                  "random | cycle | none | a crash point name (see --list-crash-points). cycle: each new compute "
                  "process is armed at the next applicable compute point, each recovery leader at the next recovery "
                  "point, so every point crashes (--require-coverage then counts crashes, not hits). A recovery "
                  "point crashes every recovery leader there (up to 3 per recovery) while compute processes crash "
                  "at random points");
  opts.add_string("crash-probability", &o.crash_probability,
                  "probability that a hit of an armed compute crash point crashes the process");
  opts.add_u64("crash-nth", &o.crash_nth, "with --crash POINT: crash at this hit of POINT in each process (0: only "
                                          "--crash-probability)");
  opts.add_string("recovery-crash-probability", &o.recovery_crash_probability,
                  "with --crash random: probability per hit of a recovery crash point in a recovery leader");
  opts.add_u64("seconds", &o.seconds, "run length bound", 1, 86400);
  opts.add_u64("max-txns", &o.max_txns, "stop after this many litmus transactions (0: no bound)");
  opts.add_u64("instances", &o.instances, "litmus instances (each with its own keys)", 1, 1u << 20);
  opts.add_u64("processes", &o.processes, "compute processes running concurrently", 1, kMaxChildren);
  opts.add_u64("coordinators", &o.coordinators, "coordinators per compute process", 1, 64);
  opts.add_u64("seed", &o.seed, "seed of every random choice");
  opts.add_u64("assert-every", &o.assert_every, "one transaction in N is an assert (0: asserts at the end only)");
  opts.add_u64("max-crashes", &o.max_crashes, "stop injecting after this many compute crashes");
  opts.add_string("history", &o.history,
                  "record the compute processes' transactions (JSON lines, litmus/history) to FILE.<pid>, one file "
                  "per process; check with pandora-history-check FILE.*");
  opts.add_string("memory-nodes", &o.memory_nodes, "attach to these daemons (HOST:PORT,...) instead of starting some");
  opts.add_u64("cluster-id", &o.cluster_id, "with --memory-nodes: their cluster id");
  opts.add_string("secret-file", &o.secret_file, "with --memory-nodes: the cluster secret");
  opts.add_string("memd-binary", &o.memd_binary, "pandora-memd to start");
  opts.add_size("log-size", &o.log_size,
                "log area of each daemon it starts (regions are 64M larger); 1G holds 8192 pids' lanes, for long "
                "runs with many crashes",
                16ull << 20, 1ull << 40);
  opts.add_u64("nodes", &o.nodes, "memory daemons to start", 1, 16);
  opts.add_u64("replicas", &o.replicas, "replicas per object (f+1)", 1, 16);
  opts.add_flag("keep-going", &o.keep_going, "do not stop at the first violation");
  opts.add_flag("require-coverage", &o.require_coverage, "exit 3 if an applicable crash point was never hit");
  opts.add_flag("verbose", &o.verbose, "log every recovery");
  opts.add_choice("detector", &o.detector, {"shared-page", "real"},
                  "who recovers crashed compute processes. shared-page: the driver's own recovery leaders, failed "
                  "pids published through a shared page (fast; the mutation runs). real: a ZooKeeper ensemble (3 "
                  "servers, or --zookeeper), Registry::init and 3 pandora-fd replicas; compute processes join "
                  "through the registry (pid, lane slot, heartbeats, failed-ids by watch and push, ford pauses) and "
                  "the FD leader detects, fences, recovers and publishes every dead pid while the driver waits for "
                  "its recovery record. With real, the recovery crash points (leader crashes) are not injected: "
                  "--recovery-crash-probability is ignored and --crash <recovery point> is refused; compute crash "
                  "points are injected as usual");
  opts.add_string("zookeeper", &o.zookeeper, "with --detector real: use this ensemble (HOST:PORT,...) instead of "
                                             "starting one (the run uses its own root /pandora-litmus-<pid>-<ms>)");
  opts.add_string("fd-binary", &o.fd_binary, "with --detector real: the pandora-fd to start");
  opts.add_u64("fd-timeout-us", &o.fd_timeout_us,
               "with --detector real: pandora-fd --timeout-us (a node missed this long by a majority is failed; "
               "large enough for a loaded Debug/ASan machine)",
               100, 60000000);
  opts.add_string("fd-logs", &o.fd_logs, "with --detector real: copy the pandora-fd replicas' logs (fd1.log ...) "
                                       "into this existing directory at the end");
  opts.add_u64("min-recoveries", &o.min_recoveries,
               "exit 3 unless at least this many processes crashed at a crash point and were recovered (by the "
               "failure detector with --detector real)");
  bool list_points = false;
  opts.add_flag("list-crash-points", &list_points, "print the crash point names and exit");
  std::string msg;
  switch (opts.parse(argc, argv, &msg)) {
    case OptionSet::Outcome::kHelp:
      printf("%s", msg.c_str());
      return 0;
    case OptionSet::Outcome::kError:
      fprintf(stderr, "pandora-litmus: %s\n", msg.c_str());
      return kExitError;
    case OptionSet::Outcome::kRun:
      break;
  }
  if (list_points) {
    for (size_t i = 0; i < kCrashPointCount; ++i) printf("%s\n", std::string(crash_point_name(static_cast<CrashPoint>(i))).c_str());
    return 0;
  }
  auto fail = [](const std::string& m) {
    fprintf(stderr, "pandora-litmus: %s\n", m.c_str());
    return kExitError;
  };
  auto kinds = parse_test(o.test);
  if (!kinds) return fail(kinds.status().message());
  ComputeConfig base;
  auto mode = parse_protocol(o.protocol);
  if (!mode) return fail(mode.status().message());
  base.protocol = *mode;
  auto backend = parse_backend(o.backend);
  if (!backend) return fail(backend.status().message());
  base.backend = *backend;
  auto bugs = parse_bug_switches(o.bug);
  if (!bugs) return fail(bugs.status().message());
  base.bugs = *bugs;
  base.replicas = static_cast<uint32_t>(o.replicas);
  base.threads = 1;
  base.coordinators = static_cast<uint32_t>(o.coordinators);
  base.lane_bytes = 2048;
  base.shards = 64;
  if (!o.memory_nodes.empty()) {
    ComputeFlags f;
    f.memory_nodes = o.memory_nodes;
    f.cluster_id = o.cluster_id;
    f.secret_file = o.secret_file;
    f.compute_id = kDriverPid;
    f.backend = o.backend;
    f.replicas = o.replicas;
    f.protocol = o.protocol;
    f.bug = o.bug;
    f.coordinators = o.coordinators;
    f.lane_bytes = base.lane_bytes;
    f.shards = base.shards;
    auto cfg = f.resolve();
    if (!cfg) return fail(cfg.status().message());
    base = *cfg;
  } else if (o.replicas > o.nodes) {
    return fail("--replicas exceeds --nodes");
  }
  auto p = parse_probability(o.crash_probability);
  auto pr = parse_probability(o.recovery_crash_probability);
  if (!p || !pr) return fail("probabilities must be numbers in [0, 1]");
  std::optional<CrashPoint> point;
  double p_crash = 0, p_recovery = 0;
  const bool cycle = o.crash == "cycle";
  const bool real = o.detector == "real";
  if (!real && !o.zookeeper.empty()) return fail("--zookeeper needs --detector real");
  if (o.crash == "random") {
    p_crash = *p;
    p_recovery = real ? 0 : *pr;  // real: the FD leader's recovery points are not injected
  } else if (o.crash != "none" && !cycle) {
    point = parse_crash_point(o.crash);
    if (!point) return fail(fmt::format("unknown crash point '{}' (--list-crash-points)", o.crash));
    if (real && is_recovery_point(*point)) {
      return fail(fmt::format("--detector real does not inject recovery crash points ('{}' crashes the failure "
                              "detector's leader, which runs in pandora-fd)",
                              o.crash));
    }
    p_crash = *p;
    if (o.crash_nth == 0 && p_crash == 0) return fail("--crash POINT needs --crash-nth or --crash-probability > 0");
  }
  Driver d(o, std::move(*kinds), base);
  return d.run(p_crash, point, p_recovery, cycle);
}

}  // namespace
}  // namespace pandora::litmus

int main(int argc, char** argv) { return pandora::litmus::litmus_main(argc, argv); }
