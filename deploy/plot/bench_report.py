"""Reading pandora-bench results: JSON reports (--report, --merge) and CSV
timelines (--timeline-csv), validated so that a foreign or damaged file is
refused with a message naming it. Shared by deploy/plot/plot.py and
workloads/bench/compare_table.py.

    rep = load_report("merged.json")      # dict, as written (workloads/bench/README.md)
    tl = load_timeline("p0.csv")          # Timeline from a CSV or a JSON report
"""
import json

FORMAT = "pandora-bench-report"
VERSION = 2


class ReportError(Exception):
    """A file that is not a usable pandora-bench report or timeline."""


def _need(obj, key, kind, path, where=""):
    if not isinstance(obj, dict) or key not in obj:
        raise ReportError(f"{path}: not a valid pandora-bench report: {where}{key}: missing")
    v = obj[key]
    if not isinstance(v, kind) or isinstance(v, bool):
        raise ReportError(f"{path}: not a valid pandora-bench report: {where}{key}: unexpected value {v!r}")
    return v


def load_report(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror}")
    try:
        rep = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: malformed JSON ({e}); a truncated or damaged file?")
    if not isinstance(rep, dict) or rep.get("format") != FORMAT:
        raise ReportError(f'{path}: not a pandora-bench report (no "format": "{FORMAT}")')
    if rep.get("version") != VERSION:
        raise ReportError(f"{path}: report version {rep.get('version')!r}, this script reads version {VERSION}")
    for key, kind in (("workload", str), ("protocol", str), ("backend", str), ("check", dict)):
        _need(rep, key, kind, path)
    if "seconds" in rep:  # a run (absent with --seconds 0)
        _need(rep, "commits_per_second", (int, float), path)
        lat = _need(rep, "latency_us", dict, path)
        for k in ("p50", "p99"):
            _need(lat, k, (int, float), path, "latency_us.")
        tl = _need(rep, "timeline", dict, path)
        for k in ("bucket_ms", "start_realtime_ns", "warmup_ms"):
            _need(tl, k, int, path, "timeline.")
        commits = _need(tl, "commits", list, path, "timeline.")
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in commits):
            raise ReportError(f"{path}: not a valid pandora-bench report: timeline.commits: not counts")
    return rep


class Timeline:
    """Commits per bucket of one process (or of a merge) on CLOCK_REALTIME."""

    def __init__(self, label, bucket_ms, start_ns, warmup_ms, commits, aborts):
        self.label = label
        self.bucket_ms = bucket_ms
        self.start_ns = start_ns
        self.warmup_ms = warmup_ms
        self.commits = commits
        self.aborts = aborts


def _timeline_from_csv(path):
    meta = {}
    rows = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: cannot read: {e}")
    if not lines or not lines[0].startswith("# pandora-bench timeline"):
        raise ReportError(f"{path}: not a pandora-bench timeline CSV (no '# pandora-bench timeline' first line)")
    header_seen = False
    for n, line in enumerate(lines, 1):
        if line.startswith("# bucket_ms "):
            for part in line[2:].split(","):
                k, _, v = part.strip().partition(" ")
                meta[k] = v
        elif line.startswith("#"):
            continue
        elif not header_seen:
            if line.strip() != "bucket_start_ms,commits,aborts":
                raise ReportError(f"{path}:{n}: expected the header bucket_start_ms,commits,aborts")
            header_seen = True
        else:
            cells = line.split(",")
            if len(cells) != 3 or not all(c.isdigit() for c in cells):
                raise ReportError(f"{path}:{n}: expected three counts, got {line!r}")
            rows.append([int(c) for c in cells])
    try:
        bucket_ms, start_ns, warmup_ms = int(meta["bucket_ms"]), int(meta["start_realtime_ns"]), int(meta["warmup_ms"])
    except (KeyError, ValueError):
        raise ReportError(f"{path}: no '# bucket_ms N, warmup_ms N, start_realtime_ns N' line (a run with --seconds 0?)")
    return Timeline(path, bucket_ms, start_ns, warmup_ms, [r[1] for r in rows], [r[2] for r in rows])


def load_timeline(path):
    """A Timeline from a --timeline-csv file or a JSON report."""
    if path.endswith(".csv"):
        return _timeline_from_csv(path)
    rep = load_report(path)
    if "timeline" not in rep:
        raise ReportError(f"{path}: no run in this report (--seconds 0), so no timeline")
    tl = rep["timeline"]
    return Timeline(path, tl["bucket_ms"], tl["start_realtime_ns"], tl["warmup_ms"], tl["commits"],
                    tl.get("aborts", [0] * len(tl["commits"])))
