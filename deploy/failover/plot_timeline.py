#!/usr/bin/env python3
"""Plots the survivors' throughput around a compute-node crash.

    python3 deploy/failover/plot_timeline.py --kill-ns NS --recovery recovery.json --pid P \\
        --png timeline.png [--summary summary.txt] [--title T] REPORT.json[:HISTORY] ...

Each REPORT is a survivor's pandora-bench --report (run with --timeline-ms 1):
its "timeline" holds commits/s per bucket from the start of its run. The run's
start in CLOCK_REALTIME is the report's timeline.start_realtime_ns when
present, else the smallest begin_ns of its --history file (the first
transaction begins within microseconds of the start). The survivors'
per-bucket commits are summed on one 1 ms grid centred on the kill
(CLOCK_REALTIME just before kill -9), and compared with their mean over the
second before the crash:

  worst 10 ms bucket  the lowest of the 10 ms buckets [0, 10), [10, 20), ...
                      up to +500 ms after the kill, as % of the pre-crash
                      mean (loss = 100% - that)
  noise floor         the lowest 10 ms bucket in the second before the crash
                      (what the same statistic shows with no crash)
  after               the mean from +0.5 s to +1.5 s, as % of the pre-crash mean

The recovery record (zk_dump.py output) gives detected_ns, the step
durations, and published_ns; they are marked on the plot.
"""
import argparse
import gzip
import json
import sys


def history_start_ns(path):
    opener = gzip.open if path.endswith(".gz") else open
    best = None
    with opener(path, "rt") as f:
        for n, line in enumerate(f):
            i = line.find('"begin_ns":')
            if i >= 0:
                j = i + len('"begin_ns":')
                k = j
                while k < len(line) and line[k].isdigit():
                    k += 1
                v = int(line[j:k])
                best = v if best is None else min(best, v)
            if n >= 2000:  # the first transactions of every coordinator are near the top
                break
    if best is None:
        raise SystemExit(f"plot_timeline.py: no begin_ns in {path}")
    return best


def load_survivor(spec):
    report_path, _, history_path = spec.partition(":")
    rep = json.load(open(report_path))
    tl = rep.get("timeline")
    if not tl:
        raise SystemExit(f"plot_timeline.py: {report_path} has no timeline (run pandora-bench with --report)")
    width_ms = tl["bucket_ms"]
    if width_ms != 1:
        raise SystemExit(f"plot_timeline.py: {report_path}: bucket of {width_ms} ms; run with --timeline-ms 1")
    start = tl.get("start_realtime_ns") or rep.get("start_realtime_ns")
    anchor = "report"
    if not start:
        if not history_path:
            raise SystemExit(f"plot_timeline.py: {report_path} has no start_realtime_ns; pass REPORT:HISTORY")
        start = history_start_ns(history_path)
        anchor = "history"
    commits = [v * width_ms / 1000.0 for v in tl["commits_per_second"]]  # commits per bucket
    return {"start_ns": int(start), "commits": commits, "anchor": anchor, "path": report_path}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kill-ns", type=int, required=True)
    ap.add_argument("--recovery", required=True, help="zk_dump.py --pid output")
    ap.add_argument("--pid", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--summary")
    ap.add_argument("--title", default="fail-over timeline")
    ap.add_argument("--window-ms", type=int, default=300, help="zoomed panel: -W/2 .. +W ms around the kill")
    ap.add_argument("survivors", nargs="+", help="REPORT.json[:HISTORY]")
    a = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec_all = json.load(open(a.recovery))
    rec = rec_all["recoveries"][str(a.pid)]
    published_ns = rec_all["failed"][str(a.pid)]["published_ns"]
    kill = a.kill_ns
    det_ms = (rec["detected_ns"] - kill) / 1e6
    pub_ms = (published_ns - kill) / 1e6
    pub_done_ms = pub_ms + rec["publish_us"] / 1000.0

    surv = [load_survivor(s) for s in a.survivors]
    # Common grid: ms relative to the kill, covering every survivor's run.
    lo = min((s["start_ns"] - kill) // 1_000_000 for s in surv)
    hi = max((s["start_ns"] - kill) // 1_000_000 + len(s["commits"]) for s in surv)
    grid = [0.0] * (hi - lo + 1)
    cover = [0] * (hi - lo + 1)
    for s in surv:
        off = round((s["start_ns"] - kill) / 1e6) - lo
        for b, c in enumerate(s["commits"]):
            grid[off + b] += c
            cover[off + b] += 1
    n = len(surv)

    def at(ms):
        return grid[ms - lo] if lo <= ms <= hi and cover[ms - lo] == n else None

    def window(a_ms, b_ms):  # [a, b) in ms, only where every survivor runs
        vals = [at(m) for m in range(a_ms, b_ms)]
        return None if any(v is None for v in vals) else vals

    pre = window(-1000, -10)
    if pre is None:
        raise SystemExit("plot_timeline.py: the survivors did not all run during the second before the kill")
    pre_mean = sum(pre) / len(pre)  # commits per ms
    buckets = []
    for t in range(0, 500, 10):
        w = window(t, t + 10)
        if w is None:
            break
        buckets.append((t, sum(w) / 10.0))
    if not buckets:
        raise SystemExit("plot_timeline.py: the survivors stopped right after the kill")
    worst_t, worst = min(buckets, key=lambda x: x[1])
    noise = min(sum(window(t, t + 10)) / 10.0 for t in range(-1000, -10, 10))
    after = window(500, 1500)
    after_mean = sum(after) / len(after) if after else None
    first_s = window(0, 1000)
    first_s_mean = sum(first_s) / len(first_s) if first_s else None

    lines = []
    lines.append(a.title)
    lines.append(f"survivors: {n} ({', '.join(s['anchor'] + '-anchored' for s in surv)}); pre-crash mean "
                 f"{pre_mean * 1000:.0f} commits/s ({pre_mean:.1f} per ms), from -1000 to -10 ms")
    lines.append(f"kill -> detected {det_ms:.1f} ms, -> published_ns {pub_ms:.1f} ms, publish write done "
                 f"{pub_done_ms:.1f} ms; steps: record read {rec['start_record_us']} us, fence {rec['fence_us']} us, "
                 f"log recovery {rec['log_recovery_us']} us ({rec['records']} records: {rec['rolled_back']} rolled "
                 f"back, {rec['rolled_forward']} forward), truncate {rec['truncate_us']} us, publish "
                 f"{rec['publish_us']} us, sweep {rec['sweep_us']} us ({rec['swept']} latches)")
    lines.append(f"worst 10 ms bucket after the kill: [{worst_t}, {worst_t + 10}) ms at {100 * worst / pre_mean:.1f}% "
                 f"of the pre-crash mean (loss {100 - 100 * worst / pre_mean:.1f}%)")
    lines.append(f"noise floor: worst 10 ms bucket before the kill at {100 * noise / pre_mean:.1f}% of the mean")
    if first_s_mean is not None:
        lines.append(f"survivors' commits: {pre_mean * 1000:.0f}/s in the second before the kill, "
                     f"{first_s_mean * 1000:.0f}/s in the second after it")
    if after_mean is not None:
        lines.append(f"survivors from +0.5 s to +1.5 s: {100 * after_mean / pre_mean:.1f}% of their pre-crash mean")
    first = ", ".join(f"{t}:{100 * v / pre_mean:.0f}%" for t, v in buckets[:10])
    lines.append(f"10 ms buckets after the kill (start ms: % of mean): {first}")
    text = "\n".join(lines)
    print(text)
    if a.summary:
        with open(a.summary, "w") as f:
            f.write(text + "\n")

    # Plot: top, 10 ms buckets from -2 s to the end; bottom, 1 ms and 10 ms
    # around the kill.
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 7.5), gridspec_kw={"height_ratios": [1, 1.3]})
    full = [t for t in range(max(lo, -2000), hi - 10, 10) if window(t, t + 10) is not None]
    ax1.plot([t / 1000.0 for t in full], [sum(window(t, t + 10)) * 100.0 for t in full], color="tab:blue", lw=1,
             label="survivors, 10 ms buckets")
    ax1.axhline(pre_mean * 1000, color="gray", ls=":", lw=1, label="pre-crash mean")
    ax1.axvline(0, color="red", lw=1.2, label="kill -9")
    ax1.axvline(det_ms / 1000.0, color="orange", lw=1.0, ls="--", label="detected")
    ax1.axvline(pub_done_ms / 1000.0, color="green", lw=1.0, ls="--", label="published")
    ax1.set_xlabel("seconds from the kill")
    ax1.set_ylabel("commits/s (survivors, summed)")
    ax1.set_ylim(bottom=0, top=max(ax1.get_ylim()[1], pre_mean * 1000 * 1.6))
    ax1.legend(loc="upper left", fontsize=8, ncol=5)
    ax1.set_title(a.title, fontsize=10)

    # The zoomed panel shows the published instant when it is within 2 s.
    w = int(min(2000, max(a.window_ms, pub_done_ms * 1.3 + 20)))
    xs = [t for t in range(-w // 2, w) if at(t) is not None]
    ax2.plot(xs, [at(t) * 1000 for t in xs], color="tab:blue", lw=0.6, alpha=0.45, label="1 ms buckets")
    xb = [t for t in range(-w // 2 - (-w // 2) % 10, w, 10) if window(t, t + 10) is not None]
    ax2.step(xb, [sum(window(t, t + 10)) * 100.0 for t in xb], where="post", color="tab:blue", lw=1.8,
             label="10 ms buckets")
    ax2.axhline(pre_mean * 1000, color="gray", ls=":", lw=1, label=f"pre-crash mean {pre_mean * 1000:.0f}/s")
    ax2.axvline(0, color="red", lw=1.2, label="kill -9")
    ax2.axvline(det_ms, color="orange", lw=1.2, ls="--", label=f"detected +{det_ms:.1f} ms")
    ax2.axvline(pub_done_ms, color="green", lw=1.2, ls="--", label=f"published +{pub_done_ms:.1f} ms")
    ax2.axvspan(worst_t, worst_t + 10, color="red", alpha=0.08,
                label=f"worst 10 ms: {100 * worst / pre_mean:.0f}% of mean")
    ax2.set_xlim(-w // 2, w)
    top = max(max((at(t) or 0) for t in xs) * 1000 if xs else 0, pre_mean * 1000) * 1.45
    ax2.set_ylim(bottom=0, top=top)
    ax2.set_xlabel("milliseconds from the kill")
    ax2.set_ylabel("commits/s (survivors, summed)")
    ax2.legend(loc="upper left", fontsize=8, ncol=4)
    ax2.text(0.995, 0.80, f"worst 10 ms bucket after the kill: {100 * worst / pre_mean:.0f}% of the pre-crash mean\n"
             f"(noise floor before the kill: {100 * noise / pre_mean:.0f}%)\n"
             f"record read {rec['start_record_us'] / 1000:.1f} ms, fence {rec['fence_us'] / 1000:.1f} ms, "
             f"log recovery {rec['log_recovery_us'] / 1000:.1f} ms,\ntruncate {rec['truncate_us'] / 1000:.1f} ms, "
             f"publish {rec['publish_us'] / 1000:.1f} ms",
             transform=ax2.transAxes, ha="right", va="top", fontsize=8,
             bbox=dict(boxstyle="round", fc="white", ec="0.7", alpha=0.9))
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print(f"plot: {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
