#!/usr/bin/env python3
"""Table of deploy/softroce-vm/perf_compare.sh: perftest vs pandora-transport-bench.

    perf_compare_table.py RAW_DIR ROUNDS OUT_CSV

Reads RAW_DIR/r<N>_perftest_<name>.txt (perftest client output) and
RAW_DIR/r<N>_ours_lat.json and r<N>_ours_bw.json (Google Benchmark JSON of
pandora-transport-bench),
prints a Markdown table of medians over the rounds and writes the same as CSV.
Ratio: how many times slower ours is (latency ours/perftest, throughput
perftest/ours), so 1.0 is parity and 1.2 the target.
"""
import csv
import json
import statistics
import sys

# (label, unit, perftest file or None, perftest column, our benchmark, our
# field, kind). perftest latency columns: #bytes #iterations t_min t_max
# t_typical t_avg ... (t_typical is perftest's median); ib_read_bw and
# ib_write_bw: #bytes #iterations BW_peak BW_average MsgRate[Mpps].
ROWS = [
    ("READ 2 B, depth 1", "us", "read_lat_2", 4, "verbs/read2/depth:1", "p50_ns", "lat"),
    ("READ 64 B, depth 1", "us", "read_lat_64", 4, "verbs/read64/depth:1", "p50_ns", "lat"),
    # perftest's WRITEs and atomics carry no durability: ours posted
    # Durability::kVisible are the same operation (the engine's latch words).
    ("WRITE 2 B, depth 1", "kops/s", "write_t1_2", 4, "verbs/write2v/depth:1", "items_per_second", "tput"),
    ("WRITE 64 B, depth 1", "kops/s", "write_t1_64", 4, "verbs/write64v/depth:1", "items_per_second", "tput"),
    ("CAS 8 B, depth 1", "us", "atomic_lat_cas", 4, "verbs/casv/depth:1", "p50_ns", "lat"),
    ("FAA 8 B, depth 1", "us", "atomic_lat_faa", 4, "verbs/faav/depth:1", "p50_ns", "lat"),
    ("READ 64 KiB, depth 128", "kops/s", "read_bw_65536", 4, "verbs/read64k/depth:128", "items_per_second", "tput"),
    ("READ 64 KiB, depth 128", "MiB/s", "read_bw_65536", 4, "verbs/read64k/depth:128", "bytes_per_second", "tput"),
]
# Context, not targets.
DIAGNOSTICS = [
    # Durability::kPersistent (data, log records, commit versions): the
    # operation plus the durability READ behind it.
    ("WRITE 2 B persistent, depth 1", "kops/s", "write_t1_2", 4, "verbs/write2/depth:1", "items_per_second", "tput"),
    ("WRITE 64 B persistent, depth 1", "kops/s", "write_t1_64", 4, "verbs/write64/depth:1", "items_per_second",
     "tput"),
    ("CAS 8 B persistent, depth 1", "us", "atomic_lat_cas", 4, "verbs/cas/depth:1", "p50_ns", "lat"),
    ("FAA 8 B persistent, depth 1", "us", "atomic_lat_faa", 4, "verbs/faa/depth:1", "p50_ns", "lat"),
    ("WRITE 2 B: ib_write_lat (one-way, ping-pong) vs our p50", "us", "write_lat_2", 4, "verbs/write2/depth:1",
     "p50_ns", "lat"),
    ("WRITE 64 B: ib_write_lat (one-way, ping-pong) vs our p50", "us", "write_lat_64", 4, "verbs/write64/depth:1",
     "p50_ns", "lat"),
    ("READ 64 KiB: ib_read_bw -o 16 vs ours depth 128", "kops/s", "read_bw_65536_o16", 4, "verbs/read64k/depth:128",
     "items_per_second", "tput"),
    ("READ 64 KiB: ib_read_bw -o 16 vs ours depth 16", "kops/s", "read_bw_65536_o16", 4, "verbs/read64k/depth:16",
     "items_per_second", "tput"),
    ("CAS 8 B, depth 16 (ours only)", "kops/s", None, 0, "verbs/cas/depth:16", "items_per_second", "tput"),
    ("FAA 8 B, depth 16 (ours only)", "kops/s", None, 0, "verbs/faa/depth:16", "items_per_second", "tput"),
]


def perftest_row(path):
    """The numbers of the result line under the '#bytes' header."""
    seen_header = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "#bytes":
                seen_header = True
                continue
            if seen_header and tok[0].isdigit():
                return [float(t) for t in tok]
    raise ValueError(f"{path}: no result line under a '#bytes' header")


def perftest_value(raw, rnd, name, col, unit):
    v = perftest_row(f"{raw}/r{rnd}_perftest_{name}.txt")[col]
    if unit == "kops/s":
        return v * 1e3  # Mpps -> kops/s
    if unit == "MiB/s":
        # From MsgRate and the 65536-byte message (not perftest's "MB/sec",
        # whose unit depends on its version and flags).
        return v * 1e6 * 65536 / 2**20
    return v  # usec


def ours_value(raw, rnd, bench, field, unit):
    benchmarks = []
    for part in ("lat", "bw"):
        with open(f"{raw}/r{rnd}_ours_{part}.json", encoding="utf-8") as f:
            benchmarks += json.load(f)["benchmarks"]
    for b in benchmarks:
        # Names carry Google Benchmark's "/real_time" suffix.
        if b["name"].removesuffix("/real_time") == bench and b.get("run_type", "iteration") == "iteration":
            if b.get("error_occurred"):
                raise ValueError(f"{bench}: {b.get('error_message')}")
            v = float(b[field])
            if unit == "us":
                return v / 1e3
            if unit == "kops/s":
                return v / 1e3
            if unit == "MiB/s":
                return v / 2**20
    raise ValueError(f"r{rnd}_ours_*.json: no benchmark {bench}")


def fmt(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def measure(raw, rounds, rows):
    table = []
    for label, unit, pname, col, bench, field, kind in rows:
        p = [perftest_value(raw, r, pname, col, unit) for r in range(1, rounds + 1)] if pname else []
        o = [ours_value(raw, r, bench, field, unit) for r in range(1, rounds + 1)]
        pm = statistics.median(p) if p else None
        om = statistics.median(o)
        ratio = None
        if pm:
            ratio = om / pm if kind == "lat" else pm / om
        table.append((label, unit, pm, om, ratio, p, o))
    return table


def print_table(table):
    print("| operation | unit | perftest median | ours median | ratio (ours slower by) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for label, unit, pm, om, ratio, _, _ in table:
        pcell = fmt(pm) if pm is not None else "-"
        rcell = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"| {label} | {unit} | {pcell} | {fmt(om)} | {rcell} |")


def main():
    raw, rounds, out_csv = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    main_rows = measure(raw, rounds, ROWS)
    diag_rows = measure(raw, rounds, DIAGNOSTICS)
    print_table(main_rows)
    print()
    print("perftest: ib_read_lat -s SIZE and ib_atomic_lat -A CMP_AND_SWAP|FETCH_AND_ADD (t_typical, the median),")
    print("ib_write_bw -s SIZE -t 1 (one WRITE at a time; MsgRate), ib_read_bw -s 65536 (default tx-depth 128,")
    print("128 READs in flight; MsgRate, MiB/s = MsgRate x 64 KiB). Ours: pandora-transport-bench --backend verbs")
    print("--spin: p50 from doorbell to completion, items/s and bytes/s.")
    print("Ratio: latency ours/perftest, throughput perftest/ours; 1.00 is parity, the target is <= 1.20.")
    print("Our WRITE, CAS and FAA here are posted Durability::kVisible, as perftest's: they complete when the")
    print("responder executed them. Posted kPersistent (the default; data, log records, commit versions) they")
    print("complete only after a durability READ behind them on the queue pair (common/transport/")
    print("verbs_connection.h, \"Durability\"): see the diagnostics.")
    print()
    print("Diagnostics (context, not targets):")
    print()
    print_table(diag_rows)
    print()
    print("ib_write_lat reports half a ping-pong round trip, with both processes busy-polling: on one vCPU")
    print("that measures the guest's scheduler, not the device.")
    print("Our connection keeps as many READs in flight as the device allows (128 on rxe) and stages")
    print("64 KiB READs through a 1 MiB buffer (copied out on completion).")
    print()
    print("EMULATED HARDWARE (Soft-RoCE under QEMU TCG): absolute numbers say nothing about a real NIC;")
    print("only the ratios mean something.")
    with open(out_csv, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["section", "operation", "unit", "perftest_median", "ours_median", "ratio", "perftest_runs",
                    "ours_runs"])
        for section, table in (("target", main_rows), ("diagnostic", diag_rows)):
            for label, unit, pm, om, ratio, p, o in table:
                w.writerow([section, label, unit, "" if pm is None else f"{pm:.4g}", f"{om:.4g}",
                            "" if ratio is None else f"{ratio:.3f}", " ".join(f"{x:.4g}" for x in p),
                            " ".join(f"{x:.4g}" for x in o)])


if __name__ == "__main__":
    main()
