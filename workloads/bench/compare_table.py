#!/usr/bin/env python3
"""Summarises the JSON reports of compare_protocols.sh into one table.

Reports are named BACKEND__WORKLOAD__rROUND__PROTOCOL.json. For every
(backend, workload) it prints, per protocol, the median over rounds of
commits/s, p50 and p99 commit latency, abort rate and remote operations per
committed transaction by type; and the ratios ford/pandora and
log-a-latch/pandora, each computed within a round (the three protocols of a
round run back to back) and then taken as the median over rounds.

With reports of a second build (compare_protocols.sh --versus), named
...__PROTOCOL__versus.json, it adds a table of this build against that one:
per protocol, both medians and the ratio this/versus computed per round
(the two builds ran back to back) with its median [min..max].

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
    """(this build's runs, the --versus build's runs), keyed by
    (backend, workload, round, protocol)."""
    runs, versus = {}, {}
    for name in sorted(os.listdir(report_dir)):
        if not name.endswith(".json"):
            continue
        parts = name[: -len(".json")].split("__")
        into = runs
        if len(parts) == 5 and parts[4] == "versus":
            into = versus
            parts = parts[:4]
        if len(parts) != 4 or not parts[2].startswith("r"):
            continue
        backend, workload, rnd, protocol = parts[0], parts[1], int(parts[2][1:]), parts[3]
        try:
            into[(backend, workload, rnd, protocol)] = load_report(os.path.join(report_dir, name))
        except ReportError as e:
            raise SystemExit(f"compare_table.py: {e}")
    return runs, versus


def print_versus(runs, versus, groups):
    header = (f"{'backend':<7} {'workload':<10} {'protocol':<12} {'rounds':>6} {'this c/s':>11} "
              f"{'versus c/s':>11} {'this/versus':>22}")
    print("this build against --versus (commits/s medians; ratio per round, then median [min..max]):")
    print(header)
    print("-" * len(header))
    for backend, workload in groups:
        for protocol in PROTOCOLS:
            keys = sorted(k for k in runs if k[:2] == (backend, workload) and k[3] == protocol and k in versus)
            if not keys:
                continue
            per_round = [runs[k]["commits_per_second"] / versus[k]["commits_per_second"]
                         for k in keys if versus[k]["commits_per_second"] > 0]
            this = med([runs[k]["commits_per_second"] for k in keys])
            other = med([versus[k]["commits_per_second"] for k in keys])
            ratio = f"{med(per_round):.3f} [{min(per_round):.2f}..{max(per_round):.2f}]" if per_round else ""
            print(f"{backend:<7} {workload:<10} {protocol:<12} {len(keys):>6} {this:>11.0f} {other:>11.0f} "
                  f"{ratio:>22}")
    print()


def med(values):
    return statistics.median(values) if values else float("nan")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs, versus = load(sys.argv[1])
    if not runs:
        print(f"no reports in {sys.argv[1]}", file=sys.stderr)
        return 1
    order = {w: i for i, w in enumerate(WORKLOAD_ORDER)}
    groups = sorted({(b, w) for (b, w, _, _) in runs},
                    key=lambda g: (g[0] != "shm", g[0], order.get(g[1], len(order)), g[1]))
    failed = [k for k, r in list(runs.items()) + list(versus.items())
              if not r.get("check", {}).get("passed", False)]

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
    if versus:
        print()
        print_versus(runs, versus, groups)
    print(f"all {len(runs) + len(versus)} runs passed their consistency check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
