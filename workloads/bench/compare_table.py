#!/usr/bin/env python3
"""Summarises the JSON reports of compare_protocols.sh into one table.

Reports are named BACKEND__WORKLOAD__rROUND__PROTOCOL.json. For every
(backend, workload) it prints, per protocol, the median over rounds of
commits/s, p50 and p99 commit latency, abort rate and remote operations per
committed transaction by type; and the ratios ford/pandora and
log-a-latch/pandora, each computed within a round (the three protocols of a
round run back to back) and then taken as the median over rounds.

  compare_table.py REPORT_DIR
"""
import os
import statistics
import sys

# The reports' reader, shared with deploy/plot/plot.py: a damaged or foreign
# file is refused naming it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "plot"))
from bench_report import ReportError, load_report  # noqa: E402

PROTOCOLS = ["pandora", "ford", "log-a-latch"]
WORKLOAD_ORDER = ["micro50", "micro100", "smallbank"]


def load(report_dir):
    runs = {}
    for name in sorted(os.listdir(report_dir)):
        if not name.endswith(".json"):
            continue
        parts = name[: -len(".json")].split("__")
        if len(parts) != 4 or not parts[2].startswith("r"):
            continue
        backend, workload, rnd, protocol = parts[0], parts[1], int(parts[2][1:]), parts[3]
        try:
            runs[(backend, workload, rnd, protocol)] = load_report(os.path.join(report_dir, name))
        except ReportError as e:
            raise SystemExit(f"compare_table.py: {e}")
    return runs


def med(values):
    return statistics.median(values) if values else float("nan")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = load(sys.argv[1])
    if not runs:
        print(f"no reports in {sys.argv[1]}", file=sys.stderr)
        return 1
    order = {w: i for i, w in enumerate(WORKLOAD_ORDER)}
    groups = sorted({(b, w) for (b, w, _, _) in runs},
                    key=lambda g: (g[0] != "shm", g[0], order.get(g[1], len(order)), g[1]))
    failed = [k for k, r in runs.items() if not r.get("check", {}).get("passed", False)]

    header = (f"{'backend':<7} {'workload':<10} {'protocol':<12} {'rounds':>6} {'commits/s':>11} "
              f"{'p50 us':>8} {'p99 us':>8} {'aborts':>7} {'conflict':>8} {'reads':>6} {'writes':>6} {'CAS':>5} {'FAA':>5} "
              f"{'vs pandora':>22}")
    print(header)
    print("-" * len(header))
    for backend, workload in groups:
        rounds = sorted({r for (b, w, r, _) in runs if (b, w) == (backend, workload)})
        for protocol in PROTOCOLS:
            reps = [runs[(backend, workload, r, protocol)] for r in rounds
                    if (backend, workload, r, protocol) in runs]
            if not reps:
                continue
            cps = med([x["commits_per_second"] for x in reps])
            p50 = med([x["latency_us"]["p50"] for x in reps])
            p99 = med([x["latency_us"]["p99"] for x in reps])
            aborts = med([x["abort_rate"] for x in reps]) * 100
            # Aborts caused by concurrency (not the workload's own user aborts).
            conflict = med([(x["aborts"]["latched"] + x["aborts"]["validation-failed"]) / max(1, x["attempts"])
                            for x in reps]) * 100
            ops = {k: med([x["ops_per_commit"][k] for x in reps]) for k in ("reads", "writes", "cas", "faa")}
            ratio = ""
            if protocol != "pandora":
                per_round = [runs[(backend, workload, r, protocol)]["commits_per_second"] /
                             runs[(backend, workload, r, "pandora")]["commits_per_second"]
                             for r in rounds
                             if (backend, workload, r, protocol) in runs
                             and (backend, workload, r, "pandora") in runs
                             and runs[(backend, workload, r, "pandora")]["commits_per_second"] > 0]
                if per_round:
                    ratio = (f"{med(per_round):.3f} "
                             f"[{min(per_round):.2f}..{max(per_round):.2f}]")
            print(f"{backend:<7} {workload:<10} {protocol:<12} {len(reps):>6} {cps:>11.0f} {p50:>8.1f} "
                  f"{p99:>8.1f} {aborts:>6.2f}% {conflict:>7.2f}% {ops['reads']:>6.2f} {ops['writes']:>6.2f} {ops['cas']:>5.2f} "
                  f"{ops['faa']:>5.2f} {ratio:>22}")
        print()
    print("commits/s, latencies, abort rates and ops per committed transaction: medians over rounds;")
    print("aborts: all aborted attempts (SmallBank's include its user aborts on insufficient funds); "
          "conflict: latched + validation-failed.")
    print("vs pandora: median over rounds of (protocol commits/s / pandora commits/s in the same round) "
          "[min..max].")
    if failed:
        print(f"WARNING: {len(failed)} run(s) failed their consistency check: "
              + ", ".join("/".join(map(str, k)) for k in failed))
        return 1
    print(f"all {len(runs)} runs passed their consistency check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
