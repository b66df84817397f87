#!/usr/bin/env python3
"""Remote operations per committed transaction, by transaction type.

Reads pandora-bench JSON reports (--report, or --merge's) and prints one
Markdown table: a row per (workload, type, protocol), with the type's
commits and its READs, WRITEs, CASes and FAAs per commit. The counts are
the report's `types[].ops`: operations of committed attempts only (an
aborted attempt's operations are not in them; see workloads/bench/README.md,
"Remote operations per transaction type").

  ops_per_type.py REPORT.json [REPORT.json ...]

Rows are sorted by workload, then type in the workload's order, then
protocol (pandora, ford, log-a-latch). Exit status 2 names a file that is
not a pandora-bench report.
"""
import argparse
import os
import sys

# The reports' reader, shared with deploy/plot/plot.py and compare_table.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "plot"))
from bench_report import ReportError, load_report  # noqa: E402

PROTOCOLS = ["pandora", "ford", "log-a-latch"]
OPS = ["reads", "writes", "cas", "faa"]


def rows_of(path):
    rep = load_report(path)
    types = rep.get("types")
    if not isinstance(types, list):
        raise ReportError(f"{path}: no per-type counts (a --seconds 0 run?)")
    out = []
    for i, t in enumerate(types):
        ops = t.get("ops") if isinstance(t, dict) else None
        if not isinstance(ops, dict) or not isinstance(t.get("commits"), int) or \
                not all(isinstance(ops.get(k), int) for k in OPS):
            raise ReportError(f"{path}: not a valid pandora-bench report: types[{i}]")
        out.append((rep["workload"], i, t.get("name", str(i)), rep["protocol"], t["commits"],
                    [ops[k] for k in OPS]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", metavar="REPORT.json")
    args = ap.parse_args()
    rows = []
    try:
        for path in args.reports:
            rows += rows_of(path)
    except ReportError as e:
        print(f"ops_per_type.py: {e}", file=sys.stderr)
        return 2
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    rows.sort(key=lambda r: (r[0], r[1], order.get(r[3], len(order)), r[3]))
    print("| workload | type | protocol | commits | reads/commit | writes/commit | CAS/commit | FAA/commit |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for workload, _, name, protocol, commits, ops in rows:
        per = [f"{o / commits:.2f}" if commits else "-" for o in ops]
        print(f"| {workload} | {name} | {protocol} | {commits} | " + " | ".join(per) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
