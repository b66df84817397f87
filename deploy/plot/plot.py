#!/usr/bin/env python3
"""Draws pandora-bench results to PNG.

    python3 deploy/plot/plot.py --bars bars.png REPORT.json ...
    python3 deploy/plot/plot.py --timeline timeline.png p0.csv p1.csv p2.csv   (or reports)

--bars: per workload a group of bars, one per protocol (and backend, and
number of processes, when the reports have several): throughput (commits/s)
and p50 / p99 commit latency.
Several reports of one (workload, protocol, backend), e.g. rounds, are shown
as their median. Merged reports (deploy/bench/run.sh) count as one run.

--timeline: commits/s over time from --timeline-csv files or reports'
timelines, placed on one wall clock (each timeline's start_realtime_ns):
the inputs stacked (one band per process) and their sum as a line. Inputs
must share one bucket width.

Files that are not pandora-bench reports/timelines, or are damaged, are
refused with a message naming them (exit 2).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_report import ReportError, load_report, load_timeline  # noqa: E402


def bars(paths, png, title):
    groups = {}
    for p in paths:
        rep = load_report(p)
        if "seconds" not in rep:
            raise ReportError(f"{p}: no run in this report (--seconds 0): nothing to draw")
        procs = max(1, len(rep.get("processes", [])))
        groups.setdefault((rep["workload"], rep["protocol"], rep["backend"], procs), []).append(rep)
    workloads = sorted({k[0] for k in groups})
    series = sorted({k[1:] for k in groups})
    several_backends = len({s[1] for s in series}) > 1
    several_counts = len({s[2] for s in series}) > 1
    label = {s: s[0] + (f"/{s[1]}" if several_backends else "") + (f" x{s[2]} proc" if several_counts else "")
             for s in series}

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [("commits/s", lambda r: r["commits_per_second"]),
               ("p50 latency (us)", lambda r: r["latency_us"]["p50"]),
               ("p99 latency (us)", lambda r: r["latency_us"]["p99"])]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 4.2))
    width = 0.8 / max(1, len(series))
    for ax, (name, get) in zip(axes, metrics):
        for j, s in enumerate(series):
            xs, ys = [], []
            for i, w in enumerate(workloads):
                reps = groups.get((w,) + s)
                if reps:
                    xs.append(i + (j - (len(series) - 1) / 2) * width)
                    ys.append(statistics.median(get(r) for r in reps))
            ax.bar(xs, ys, width=width, label=label[s])
        ax.set_xticks(range(len(workloads)))
        ax.set_xticklabels(workloads)
        ax.set_title(name, fontsize=10)
        ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def timeline(paths, png, title):
    tls = [load_timeline(p) for p in paths]
    widths = {t.bucket_ms for t in tls}
    if len(widths) != 1:
        raise ReportError(f"the timelines have different bucket widths ({sorted(widths)} ms); run with one --timeline-ms")
    width = widths.pop()
    w_ns = width * 1_000_000
    t0 = min(t.start_ns for t in tls)
    n = max(round((t.start_ns - t0) / w_ns) + len(t.commits) for t in tls)
    per_second = 1000.0 / width
    bands = []
    for t in tls:
        off = round((t.start_ns - t0) / w_ns)
        row = [0.0] * n
        for b, c in enumerate(t.commits):
            row[off + b] = c * per_second
        bands.append(row)
    xs = [b * width / 1000.0 for b in range(n)]
    total = [sum(col) for col in zip(*bands)]

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    labels = [os.path.basename(t.label) for t in tls]
    ax.stackplot(xs, *bands, labels=labels, step="post", alpha=0.6)
    if len(tls) > 1:
        ax.step(xs, total, where="post", color="black", lw=1.2, label="sum")
    warm = min(t.warmup_ms for t in tls) / 1000.0
    if warm > 0:
        ax.axvline(warm, color="gray", ls=":", lw=1, label="warm-up ends")
    ax.set_xlabel("seconds from the first start")
    ax.set_ylabel(f"commits/s ({width} ms buckets)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog=__doc__[__doc__.index("--bars:"):],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bars", metavar="PNG", help="throughput and p50/p99 latency bars per workload and protocol")
    ap.add_argument("--timeline", metavar="PNG", help="commits/s over time, stacked per input, with their sum")
    ap.add_argument("--title", default="pandora-bench")
    ap.add_argument("inputs", nargs="+", metavar="FILE", help="JSON reports (--bars, --timeline) or CSV timelines "
                                                              "(--timeline)")
    a = ap.parse_args()
    if not a.bars and not a.timeline:
        ap.error("nothing to draw: pass --bars PNG and/or --timeline PNG")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plot.py: python3 cannot import matplotlib (Debian: apt-get install python3-matplotlib, or "
              "bash deploy/failover/ensure_matplotlib.sh)", file=sys.stderr)
        return 3
    try:
        if a.bars:
            bars([p for p in a.inputs if not p.endswith(".csv")] or a.inputs, a.bars, a.title)
            print(f"plot: {a.bars}")
        if a.timeline:
            timeline(a.inputs, a.timeline, a.title)
            print(f"plot: {a.timeline}")
    except ReportError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
