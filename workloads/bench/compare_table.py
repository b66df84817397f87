#!/usr/bin/env python3
"""Summarises the JSON reports of compare_protocols.sh into one table.

Reports are named BACKEND__WORKLOAD__pPROCESSES__rROUND__PROTOCOL.json
(PROCESSES: compute processes, their merged report when more than one;
older directories without the pPROCESSES part count as 1). For every
(backend, workload, processes) it prints, per protocol, the median over rounds of
commits/s, p50 and p99 commit latency, abort rate and remote operations per
committed transaction by type; and the ratios ford/pandora and
log-a-latch/pandora, each computed within a round (the three protocols of a
round run back to back) and then taken as the median over rounds.

With reports of a second build (compare_protocols.sh --versus), named
...__PROTOCOL__versus.json, it adds a table of this build against that one:
per protocol, both medians and the ratio this/versus computed per round
(the two builds ran back to back) with its median [min..max].

  compare_table.py [--markdown] REPORT_DIR

--markdown prints, after the table, one Markdown row per (backend,
workload, processes): the three protocols' median commits/s and the
per-round ratios to pandora (median [min..max]), for a README.
"""
import os
import statistics
import sys

# The reports' reader, shared with deploy/plot/plot.py: a damaged or foreign
# file is refused naming it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "plot"))
from bench_report import ReportError, load_report  # noqa: E402

PROTOCOLS = ["pandora", "ford", "log-a-latch"]
WORKLOAD_ORDER = ["micro50", "micro100", "smallbank", "tatp", "tpcc"]


def parse_name(stem):
    """(backend, workload, processes, round, protocol, is_versus) of a report
    file name without .json, or None for a file that is not a run
    (load.json, a run.sh directory's baseline, ...)."""
    parts = stem.split("__")
    is_versus = parts[-1] == "versus"
    if is_versus:
        parts = parts[:-1]
    if len(parts) == 4:
        parts = parts[:2] + ["p1"] + parts[2:]
    if len(parts) != 5:
        return None
    backend, workload, procs, rnd, protocol = parts
    if not (procs[:1] == "p" and procs[1:].isdigit() and rnd[:1] == "r" and rnd[1:].isdigit()):
        return None
    if protocol not in PROTOCOLS:
        return None
    return backend, workload, int(procs[1:]), int(rnd[1:]), protocol, is_versus


def load(report_dir):
    """(this build's runs, the --versus build's runs), keyed by
    (backend, workload, processes, round, protocol)."""
    runs, versus = {}, {}
    for name in sorted(os.listdir(report_dir)):
        if not name.endswith(".json"):
            continue
        parsed = parse_name(name[: -len(".json")])
        if parsed is None:
            continue
        *key, is_versus = parsed
        try:
            (versus if is_versus else runs)[tuple(key)] = load_report(os.path.join(report_dir, name))
        except ReportError as e:
            raise SystemExit(f"compare_table.py: {e}")
    return runs, versus


def print_versus(runs, versus, groups):
    header = (f"{'backend':<7} {'workload':<10} {'procs':>5} {'protocol':<12} {'rounds':>6} {'this c/s':>11} "
              f"{'versus c/s':>11} {'this/versus':>22}")
    print("this build against --versus (commits/s medians; ratio per round, then median [min..max]):")
    print(header)
    print("-" * len(header))
    for backend, workload, procs in groups:
        for protocol in PROTOCOLS:
            keys = sorted(k for k in runs if k[:3] == (backend, workload, procs) and k[4] == protocol and k in versus)
            if not keys:
                continue
            per_round = [runs[k]["commits_per_second"] / versus[k]["commits_per_second"]
                         for k in keys if versus[k]["commits_per_second"] > 0]
            this = med([runs[k]["commits_per_second"] for k in keys])
            other = med([versus[k]["commits_per_second"] for k in keys])
            ratio = spread(per_round)
            print(f"{backend:<7} {workload:<10} {procs:>5} {protocol:<12} {len(keys):>6} {this:>11.0f} "
                  f"{other:>11.0f} {ratio:>22}")
    print()


def med(values):
    return statistics.median(values) if values else float("nan")


def spread(ratios, digits=3):
    """"median [min..max]" of per-round ratios ("" for none)."""
    return f"{med(ratios):.{digits}f} [{min(ratios):.2f}..{max(ratios):.2f}]" if ratios else ""


def per_round_ratios(runs, group, protocol):
    """protocol commits/s / pandora commits/s of every round of `group`
    (backend, workload, processes) that has both."""
    rounds = sorted({k[3] for k in runs if k[:3] == group})
    return [runs[group + (r, protocol)]["commits_per_second"] / runs[group + (r, "pandora")]["commits_per_second"]
            for r in rounds
            if group + (r, protocol) in runs and group + (r, "pandora") in runs
            and runs[group + (r, "pandora")]["commits_per_second"] > 0]


def print_markdown(runs, groups):
    print("| backend | workload | processes | rounds | pandora commits/s | ford commits/s | log-a-latch commits/s "
          "| ford/pandora | log-a-latch/pandora |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for group in groups:
        cells = []
        rounds = 0
        for protocol in PROTOCOLS:
            reps = [r for k, r in runs.items() if k[:3] == group and k[4] == protocol]
            rounds = max(rounds, len(reps))
            cells.append(f"{med([x['commits_per_second'] for x in reps]):,.0f}" if reps else "")
        for protocol in PROTOCOLS[1:]:
            cells.append(spread(per_round_ratios(runs, group, protocol), digits=2))
        print(f"| {group[0]} | {group[1]} | {group[2]} | {rounds} | " + " | ".join(cells) + " |")


def main():
    args = sys.argv[1:]
    markdown = "--markdown" in args
    args = [a for a in args if a != "--markdown"]
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs, versus = load(args[0])
    if not runs:
        print(f"no reports in {args[0]}", file=sys.stderr)
        return 1
    order = {w: i for i, w in enumerate(WORKLOAD_ORDER)}
    groups = sorted({(b, w, p) for (b, w, p, _, _) in runs},
                    key=lambda g: (g[0] != "shm", g[0], order.get(g[1], len(order)), g[1], g[2]))
    failed = [k for k, r in list(runs.items()) + list(versus.items())
              if not r.get("check", {}).get("passed", False)]

    header = (f"{'backend':<7} {'workload':<10} {'procs':>5} {'protocol':<12} {'rounds':>6} {'commits/s':>11} "
              f"{'p50 us':>8} {'p99 us':>8} {'aborts':>7} {'conflict':>8} {'reads':>6} {'writes':>6} {'CAS':>5} {'FAA':>5} "
              f"{'vs pandora':>22}")
    print(header)
    print("-" * len(header))
    for backend, workload, procs in groups:
        g = (backend, workload, procs)
        rounds = sorted({r for (b, w, p, r, _) in runs if (b, w, p) == g})
        for protocol in PROTOCOLS:
            reps = [runs[g + (r, protocol)] for r in rounds if g + (r, protocol) in runs]
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
            ratio = spread(per_round_ratios(runs, g, protocol)) if protocol != "pandora" else ""
            print(f"{backend:<7} {workload:<10} {procs:>5} {protocol:<12} {len(reps):>6} {cps:>11.0f} {p50:>8.1f} "
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
    if markdown:
        print()
        print_markdown(runs, groups)
    print(f"all {len(runs) + len(versus)} runs passed their consistency check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
