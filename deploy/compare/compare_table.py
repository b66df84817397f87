#!/usr/bin/env python3
"""Side-by-side table of deploy/compare/compare.sh's reports.

Reads DIR/<workload>__r<round>__<system>.json (system: pandora, postgres),
prints per workload the medians over rounds of throughput, p50/p99 latency
of committed transactions, abort rate and retry rate, the check verdicts,
and the ratio Pandora/PostgreSQL (of the medians, and the median of the
per-round ratios). Exits 1 when a report is missing its check or a check
failed, so a comparison never reports numbers of inconsistent runs.
"""
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

NAME = re.compile(r"^(?P<wl>[a-z0-9]+)__r(?P<round>\d+)__(?P<sys>pandora|postgres)\.json$")


def load(directory):
    runs = defaultdict(lambda: defaultdict(dict))  # wl -> sys -> round -> report
    for path in sorted(Path(directory).iterdir()):
        m = NAME.match(path.name)
        if m:
            runs[m["wl"]][m["sys"]][int(m["round"])] = json.loads(path.read_text())
    return runs


def med(values):
    return statistics.median(values) if values else None


def fmt(v, spec):
    width = int(re.match(r"\d*", spec).group() or 0)
    return "n/a".rjust(width) if v is None else format(v, spec)


def main():
    if len(sys.argv) != 2:
        print("usage: compare_table.py REPORT_DIR", file=sys.stderr)
        return 2
    runs = load(sys.argv[1])
    if not runs:
        print(f"compare_table.py: no reports in {sys.argv[1]}", file=sys.stderr)
        return 1
    ok = True
    header = f"{'workload':<10} {'system':<20} {'commits/s':>11} {'p50 us':>9} {'p99 us':>9} {'abort %':>8} {'retry %':>8}  check"
    print(header)
    print("-" * len(header))
    for wl in sorted(runs):
        medians = {}
        for sysname in ("pandora", "postgres"):
            reports = runs[wl].get(sysname, {})
            label = "PostgreSQL" if sysname == "postgres" else "Pandora"
            if not reports:
                print(f"{wl:<10} {label:<20} {'n/a':>11}")
                continue
            rs = list(reports.values())
            passed = sum(1 for r in rs if r.get("check", {}).get("passed") is True)
            ok = ok and passed == len(rs)
            m = {
                "cps": med([r["commits_per_second"] for r in rs]),
                "p50": med([r["latency_us"]["p50"] for r in rs]),
                "p99": med([r["latency_us"]["p99"] for r in rs]),
                "abort": med([100 * r["abort_rate"] for r in rs]),
                "retry": med([100 * r["retry_rate"] for r in rs]) if "retry_rate" in rs[0] else None,
            }
            medians[sysname] = (m, reports)
            print(f"{wl:<10} {label:<20} {fmt(m['cps'], '11.0f')} {fmt(m['p50'], '9.1f')} {fmt(m['p99'], '9.1f')} "
                  f"{fmt(m['abort'], '8.2f')} {fmt(m['retry'], '8.2f')}  passed {passed}/{len(rs)}")
        if len(medians) == 2:
            (p, pr), (g, gr) = medians["pandora"], medians["postgres"]
            per_round = [pr[k]["commits_per_second"] / gr[k]["commits_per_second"]
                         for k in pr if k in gr and gr[k]["commits_per_second"] > 0]
            ratio = p["cps"] / g["cps"] if g["cps"] else None
            print(f"{wl:<10} {'Pandora/PostgreSQL':<20} {fmt(ratio, '10.2f')}x {fmt(p['p50'] / g['p50'] if g['p50'] else None, '8.2f')}x "
                  f"{fmt(p['p99'] / g['p99'] if g['p99'] else None, '8.2f')}x   (per-round throughput ratios: median "
                  f"{fmt(med(per_round), '.2f')}x, {', '.join(format(x, '.2f') for x in per_round)})")
    if not ok:
        print("compare_table.py: a consistency check failed or did not run (see the reports)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
