#!/usr/bin/env python3
"""Summarises deploy/failover/measure_detection.sh's crashes.csv (one or more).

    python3 deploy/failover/analyze_detection.py crashes.csv [more.csv ...]

Prints p50 / p99 / min / max / mean of, per crash:
  detection       kill -> detected_ns (the FD leader saw a majority of
                  replicas miss the node for the timeout)
  end-to-end      kill -> published_ns (<root>/failed/<pid>: the instant the
                  leader has pushed the pid to every compute node, which
                  steal its latches from then on, and starts the publishing
                  ZooKeeper write; the pid is durable in failed-ids
                  publish_us later)
  end-to-end + publish write   the same plus the publish step's duration
  each step of the recovery record (record read, fence, log recovery,
  truncate, publish; sweep is after publishing, off the critical path).
  Since the fence runs while the record is read, "record read" is the
  part of the read the fence did not cover, so the steps add up
  untimed         published - detected - (record read + fence + log
                  recovery + truncate): the leader's hand-off from its
                  detector thread to its main loop, the push, and scheduling
Percentiles are nearest-rank: with 50 crashes p99 is the largest but one.
"""
import csv
import math
import sys


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = max(1, math.ceil(p / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def stats(vals):
    v = sorted(vals)
    return {"n": len(v), "p50": pct(v, 50), "p99": pct(v, 99), "min": v[0], "max": v[-1],
            "mean": sum(v) / len(v)}


def main(paths):
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            rows += list(csv.DictReader(f))
    if not rows:
        print("no crashes recorded")
        return 1

    def col(name):
        return [float(r[name]) for r in rows]

    detect = col("detect_us")
    e2e = col("end_to_end_us")
    pub = col("publish_us")
    steps = [("record read (ZK; what the fence left)", "start_record_us"), ("fence (every memory node)", "fence_us"),
             ("log recovery", "log_recovery_us"), ("truncate lanes", "truncate_us"),
             ("publish (the one waited ZooKeeper write)", "publish_us"), ("sweep (after publishing)", "sweep_us")]
    untimed = [float(r["published_ns"]) / 1000 - float(r["detected_ns"]) / 1000
               - sum(float(r[k]) for k in ("start_record_us", "fence_us", "log_recovery_us", "truncate_us"))
               for r in rows]
    lines = [("detection (kill -> detected)", detect),
             ("end-to-end (kill -> published_ns)", e2e),
             ("end-to-end incl. publish write", [a + b for a, b in zip(e2e, pub)]),
             ("detected -> published_ns", [b - a for a, b in zip(detect, e2e)])]
    lines += [(label, col(k)) for label, k in steps]
    lines.append(("untimed (hand-off, scheduling)", untimed))

    print(f"{len(rows)} crashes; times in milliseconds (nearest-rank percentiles)")
    print(f"{'':42} {'p50':>8} {'p99':>8} {'min':>8} {'max':>8} {'mean':>8}")
    for label, vals in lines:
        s = stats(vals)
        print(f"{label:42} {s['p50'] / 1000:8.2f} {s['p99'] / 1000:8.2f} {s['min'] / 1000:8.2f} "
              f"{s['max'] / 1000:8.2f} {s['mean'] / 1000:8.2f}")
    recs = stats(col("records"))
    rb = sum(int(r["rolled_back"]) for r in rows)
    rf = sum(int(r["rolled_forward"]) for r in rows)
    sw = stats(col("swept"))
    print(f"log records per crash: p50 {recs['p50']:.0f}, max {recs['max']:.0f}; over all crashes {rb} rolled back, "
          f"{rf} rolled forward; latches swept per crash: p50 {sw['p50']:.0f}, max {sw['max']:.0f}")
    leaders = sorted({r["leader_replica"] for r in rows})
    print(f"recovered by FD replica(s): {', '.join(leaders)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    sys.exit(main(sys.argv[1:]))
