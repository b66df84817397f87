// The JSON form of a BenchReport (written and read with nlohmann-json) and
// its CSV timeline. See report.h; the keys are listed in README.md.
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "workloads/bench/report.h"

namespace pandora::workloads {

namespace {

using Json = nlohmann::ordered_json;

// Identifies the file as ours; a reader refuses other JSON files by it.
constexpr std::string_view kFormat = "pandora-bench-report";
// 2: the configuration, build commit, histogram buckets and per-bucket
// counts were added (1 was the hand-written report without them).
constexpr int kVersion = 2;
constexpr size_t kMaxReportBytes = 64u << 20;

double per(uint64_t n, uint64_t d) { return d == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(d); }
double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

Json histogram_json(const LatencyHistogram& h) {
  Json buckets = Json::array();
  for (int b = 0; b < LatencyHistogram::kBuckets; ++b) {
    if (const uint64_t n = h.bucket_count(b); n > 0) buckets.push_back({LatencyHistogram::bucket_low(b), n});
  }
  return {{"unit", "ns"},
          {"scheme", "log-linear: exact below 64 ns, then 32 sub-buckets per power of two"},
          {"count", h.count()},
          {"sum", h.sum()},
          {"min", h.min()},
          {"max", h.max()},
          {"buckets", std::move(buckets)}};
}

Json run_json(const ReportRun& run) {
  Json j;
  j["seconds"] = run.seconds;
  j["warmup_seconds"] = run.warmup_seconds;
  j["attempts"] = run.attempts;
  j["commits"] = run.commits;
  j["commits_per_second"] = run.commits_per_second;
  j["abort_rate"] = per(run.attempts - run.commits, run.attempts);
  j["aborts"] = run.aborts;
  const LatencyHistogram& h = run.latency;
  j["latency_us"] = {{"p50", us(h.percentile(0.5))},  {"p99", us(h.percentile(0.99))},
                     {"p999", us(h.percentile(0.999))}, {"mean", h.mean() / 1000.0},
                     {"max", us(h.max())}};
  j["latency_histogram"] = histogram_json(h);
  const ReportOps& o = run.ops;
  j["ops_per_commit"] = {{"reads", per(o.reads, o.commits)}, {"writes", per(o.writes, o.commits)},
                         {"cas", per(o.cas, o.commits)},     {"faa", per(o.faa, o.commits)},
                         {"total", per(o.total(), o.commits)}};
  j["engine"] = {{"commits", o.commits}, {"reads", o.reads}, {"writes", o.writes}, {"cas", o.cas}, {"faa", o.faa}};
  Json types = Json::array();
  for (const TxnTypeCount& t : run.types) {
    const ReportOps& to = t.ops;
    types.push_back({{"name", t.name},
                     {"commits", t.commits},
                     {"aborts", t.aborts},
                     {"ops", {{"reads", to.reads}, {"writes", to.writes}, {"cas", to.cas}, {"faa", to.faa}}},
                     {"ops_per_commit", per(to.total(), t.commits)}});
  }
  j["types"] = std::move(types);
  const ReportTimeline& tl = run.timeline;
  const double w = static_cast<double>(tl.bucket_ms) / 1000.0;
  Json rate = Json::array();
  for (uint64_t c : tl.commits) rate.push_back(static_cast<double>(c) / w);
  j["timeline"] = {{"bucket_ms", tl.bucket_ms},
                   {"warmup_ms", tl.warmup_ms},
                   {"start_realtime_ns", tl.start_realtime_ns},
                   {"commits", tl.commits},
                   {"aborts", tl.aborts},
                   {"commits_per_second", std::move(rate)}};
  j["committed_delta"] = run.committed_delta;
  j["uncertain"] = run.uncertain;
  j["total_commits"] = run.total_commits;
  return j;
}

// Reading: every access names the key path, so a damaged file is refused
// with "report.json: timeline.commits: expected an array of unsigned integers".
class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  const Json& at(const Json& obj, const char* key, const std::string& path) {
    if (!ok()) return null_;
    auto it = obj.find(key);
    if (it == obj.end()) {
      fail(fmt::format("{}: missing", join(path, key)));
      return null_;
    }
    return *it;
  }
  bool has(const Json& obj, const char* key) const { return obj.is_object() && obj.contains(key); }

  template <typename T>
  T get(const Json& obj, const char* key, const std::string& path = "") {
    const Json& v = at(obj, key, path);
    T out{};
    if (ok()) convert(v, join(path, key), &out);
    return out;
  }

  const Json& object(const Json& obj, const char* key, const std::string& path = "") {
    const Json& v = at(obj, key, path);
    if (ok() && !v.is_object()) fail(fmt::format("{}: expected an object", join(path, key)));
    return ok() ? v : null_;
  }
  const Json& array(const Json& obj, const char* key, const std::string& path = "") {
    const Json& v = at(obj, key, path);
    if (ok() && !v.is_array()) fail(fmt::format("{}: expected an array", join(path, key)));
    return ok() ? v : null_;
  }

  void convert(const Json& v, const std::string& where, uint64_t* out) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      return fail(fmt::format("{}: expected an unsigned integer, got {}", where, v.dump()));
    }
    *out = v.get<uint64_t>();
  }
  void convert(const Json& v, const std::string& where, uint32_t* out) {
    uint64_t x = 0;
    convert(v, where, &x);
    if (ok() && x > UINT32_MAX) return fail(fmt::format("{}: {} is out of range", where, x));
    *out = static_cast<uint32_t>(x);
  }
  void convert(const Json& v, const std::string& where, int64_t* out) {
    if (!v.is_number_integer()) return fail(fmt::format("{}: expected an integer, got {}", where, v.dump()));
    *out = v.get<int64_t>();
  }
  void convert(const Json& v, const std::string& where, double* out) {
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      return fail(fmt::format("{}: expected a number, got {}", where, v.dump()));
    }
    *out = v.get<double>();
  }
  void convert(const Json& v, const std::string& where, bool* out) {
    if (!v.is_boolean()) return fail(fmt::format("{}: expected true or false, got {}", where, v.dump()));
    *out = v.get<bool>();
  }
  void convert(const Json& v, const std::string& where, std::string* out) {
    if (!v.is_string()) return fail(fmt::format("{}: expected a string, got {}", where, v.dump()));
    *out = v.get<std::string>();
  }
  template <typename T>
  void convert(const Json& v, const std::string& where, std::vector<T>* out) {
    if (!v.is_array()) return fail(fmt::format("{}: expected an array", where));
    out->clear();
    for (size_t i = 0; i < v.size() && ok(); ++i) {
      T x{};
      convert(v[i], fmt::format("{}[{}]", where, i), &x);
      out->push_back(std::move(x));
    }
  }

  void fail(std::string what) {
    if (ok()) error_ = std::move(what);
  }
  bool ok() const { return error_.empty(); }
  Status status() const {
    return Status(Errc::kInvalidArgument, fmt::format("{}: not a valid pandora-bench report: {}", origin_, error_));
  }

 private:
  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }
  std::string origin_;
  std::string error_;
  Json null_;
};

LatencyHistogram read_histogram(Reader& rd, const Json& j, uint64_t commits) {
  const std::string p = "latency_histogram";
  const auto count = rd.get<uint64_t>(j, "count", p);
  const auto sum = rd.get<uint64_t>(j, "sum", p);
  const auto min = rd.get<uint64_t>(j, "min", p);
  const auto max = rd.get<uint64_t>(j, "max", p);
  const Json& buckets = rd.array(j, "buckets", p);
  if (!rd.ok()) return {};
  std::vector<std::pair<int, uint64_t>> parts;
  uint64_t total = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    std::vector<uint64_t> pair;
    rd.convert(buckets[i], fmt::format("{}.buckets[{}]", p, i), &pair);
    if (!rd.ok()) return {};
    if (pair.size() != 2) {
      rd.fail(fmt::format("{}.buckets[{}]: expected [low_ns, count]", p, i));
      return {};
    }
    const int b = LatencyHistogram::bucket_of(pair[0]);
    if (LatencyHistogram::bucket_low(b) != pair[0]) {
      rd.fail(fmt::format("{}.buckets[{}]: {} ns is no bucket boundary of this histogram", p, i, pair[0]));
      return {};
    }
    parts.emplace_back(b, pair[1]);
    total += pair[1];
  }
  if (total != count) {
    rd.fail(fmt::format("{}: the buckets hold {} samples, count says {}", p, total, count));
  } else if (count != commits) {
    rd.fail(fmt::format("{}: {} samples for {} commits (one per committed transaction)", p, count, commits));
  } else if (count > 0 && min > max) {
    rd.fail(fmt::format("{}: min {} > max {}", p, min, max));
  }
  return rd.ok() ? LatencyHistogram::from_buckets(parts, sum, min, max) : LatencyHistogram();
}

ReportRun read_run(Reader& rd, const Json& j) {
  ReportRun run;
  run.seconds = rd.get<double>(j, "seconds");
  run.warmup_seconds = rd.get<double>(j, "warmup_seconds");
  run.attempts = rd.get<uint64_t>(j, "attempts");
  run.commits = rd.get<uint64_t>(j, "commits");
  run.commits_per_second = rd.get<double>(j, "commits_per_second");
  if (rd.ok() && run.commits > run.attempts) rd.fail(fmt::format("commits {} > attempts {}", run.commits, run.attempts));
  for (const auto& [k, v] : rd.object(j, "aborts").items()) rd.convert(v, "aborts." + k, &run.aborts[k]);
  for (const Json& t : rd.array(j, "types")) {
    if (!rd.ok()) break;
    const uint64_t commits = rd.get<uint64_t>(t, "commits", "types");
    const Json& to = rd.object(t, "ops");
    run.types.push_back({rd.get<std::string>(t, "name", "types"), commits, rd.get<uint64_t>(t, "aborts", "types"),
                         ReportOps{commits, rd.get<uint64_t>(to, "reads", "types.ops"),
                                   rd.get<uint64_t>(to, "writes", "types.ops"), rd.get<uint64_t>(to, "cas", "types.ops"),
                                   rd.get<uint64_t>(to, "faa", "types.ops")}});
  }
  run.latency = read_histogram(rd, rd.object(j, "latency_histogram"), run.commits);
  const Json& e = rd.object(j, "engine");
  run.ops = {rd.get<uint64_t>(e, "commits", "engine"), rd.get<uint64_t>(e, "reads", "engine"),
             rd.get<uint64_t>(e, "writes", "engine"), rd.get<uint64_t>(e, "cas", "engine"),
             rd.get<uint64_t>(e, "faa", "engine")};
  const Json& tl = rd.object(j, "timeline");
  run.timeline.bucket_ms = rd.get<uint64_t>(tl, "bucket_ms", "timeline");
  run.timeline.warmup_ms = rd.get<uint64_t>(tl, "warmup_ms", "timeline");
  run.timeline.start_realtime_ns = rd.get<uint64_t>(tl, "start_realtime_ns", "timeline");
  run.timeline.commits = rd.get<std::vector<uint64_t>>(tl, "commits", "timeline");
  run.timeline.aborts = rd.get<std::vector<uint64_t>>(tl, "aborts", "timeline");
  if (rd.ok() && run.timeline.bucket_ms == 0) rd.fail("timeline.bucket_ms: must be at least 1");
  if (rd.ok() && run.timeline.commits.size() != run.timeline.aborts.size()) {
    rd.fail(fmt::format("timeline: {} commit buckets but {} abort buckets", run.timeline.commits.size(),
                        run.timeline.aborts.size()));
  }
  run.committed_delta = rd.get<int64_t>(j, "committed_delta");
  run.uncertain = rd.get<uint64_t>(j, "uncertain");
  run.total_commits = rd.get<uint64_t>(j, "total_commits");
  return run;
}

}  // namespace

Json report_to_json(const BenchReport& r) {
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["git_commit"] = r.git_commit;
  Json config = Json::object();
  for (const auto& [name, value] : r.config) config[name] = value;
  j["config"] = std::move(config);
  j["workload"] = r.workload;
  j["workload_options"] = r.workload_options;
  j["protocol"] = r.protocol;
  j["backend"] = r.backend;
  j["memory_nodes"] = r.memory_nodes;
  j["replicas"] = r.replicas;
  j["threads"] = r.threads;
  j["coordinators"] = r.coordinators;
  j["compute_id"] = r.compute_id;
  j["seed"] = r.seed;
  j["load_seconds"] = r.load_seconds;
  j["rows_loaded"] = r.rows_loaded;
  if (r.run) j.update(run_json(*r.run));
  if (r.invariant_before) j["invariant_before"] = *r.invariant_before;
  j["check"] = {{"ran", r.check.ran}, {"passed", r.check.passed}, {"message", r.check.message}};
  if (!r.processes.empty()) {
    Json procs = Json::array();
    for (const ReportProcess& p : r.processes) {
      procs.push_back({{"report", p.report},
                       {"compute_id", p.compute_id},
                       {"commits", p.commits},
                       {"commits_per_second", p.commits_per_second},
                       {"git_commit", p.git_commit}});
    }
    j["processes"] = std::move(procs);
    j["common_window"] = {{"start_realtime_ns", r.common_window_start_ns},
                          {"seconds", r.run ? r.run->seconds : 0.0}};
  }
  return j;
}

std::string format_json(const BenchReport& r) { return report_to_json(r).dump(2) + "\n"; }

Result<BenchReport> parse_report(std::string_view text, std::string_view origin) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions only to say where it broke.
    std::string where = "malformed JSON";
    try {
      (void)Json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      where = fmt::format("malformed JSON at byte {}", e.byte);
    }
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: not a valid pandora-bench report: {} (a truncated or damaged file?)", origin, where));
  }
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() || j["format"].get<std::string>() != kFormat) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: not a pandora-bench report (no \"format\": \"{}\"; written by another program, or "
                              "by a pandora-bench older than report version {})",
                              origin, kFormat, kVersion));
  }
  Reader rd(origin);
  BenchReport r;
  r.source = std::string(origin);
  if (const auto v = rd.get<uint64_t>(j, "version"); rd.ok() && v != kVersion) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{}: report version {}, this pandora-bench reads version {}", origin, v, kVersion));
  }
  r.git_commit = rd.get<std::string>(j, "git_commit");
  for (const auto& [k, v] : rd.object(j, "config").items()) {
    std::string value;
    rd.convert(v, "config." + k, &value);
    r.config.emplace_back(k, std::move(value));
  }
  r.workload = rd.get<std::string>(j, "workload");
  r.workload_options = rd.object(j, "workload_options");
  r.protocol = rd.get<std::string>(j, "protocol");
  r.backend = rd.get<std::string>(j, "backend");
  r.memory_nodes = rd.get<uint32_t>(j, "memory_nodes");
  r.replicas = rd.get<uint32_t>(j, "replicas");
  r.threads = rd.get<uint32_t>(j, "threads");
  r.coordinators = rd.get<uint32_t>(j, "coordinators");
  r.compute_id = rd.get<uint32_t>(j, "compute_id");
  r.seed = rd.get<uint64_t>(j, "seed");
  r.load_seconds = rd.get<double>(j, "load_seconds");
  r.rows_loaded = rd.get<uint64_t>(j, "rows_loaded");
  if (rd.has(j, "seconds")) r.run = read_run(rd, j);
  if (rd.has(j, "invariant_before")) r.invariant_before = rd.get<int64_t>(j, "invariant_before");
  const Json& check = rd.object(j, "check");
  r.check = {rd.get<bool>(check, "ran", "check"), rd.get<bool>(check, "passed", "check"),
             rd.get<std::string>(check, "message", "check")};
  if (rd.has(j, "processes")) {
    for (const Json& p : rd.array(j, "processes")) {
      if (!rd.ok()) break;
      r.processes.push_back({rd.get<std::string>(p, "report", "processes"),
                             rd.get<uint32_t>(p, "compute_id", "processes"),
                             rd.get<uint64_t>(p, "commits", "processes"),
                             rd.get<double>(p, "commits_per_second", "processes"),
                             rd.get<std::string>(p, "git_commit", "processes")});
    }
    r.common_window_start_ns = rd.get<uint64_t>(rd.object(j, "common_window"), "start_realtime_ns", "common_window");
  }
  if (!rd.ok()) return rd.status();
  return r;
}

Result<BenchReport> read_report(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(Errc::kIo, fmt::format("{}: cannot open the report: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (text.size() > kMaxReportBytes) {
    return Status(Errc::kInvalidArgument, fmt::format("{}: {} bytes is too large for a report", path, text.size()));
  }
  return parse_report(text, path);
}

std::string format_timeline_csv(const BenchReport& r) {
  std::string out = fmt::format("# pandora-bench timeline; build {}; workload {}, protocol {}, backend {}{}\n",
                                r.git_commit, r.workload, r.protocol, r.backend,
                                r.processes.empty() ? fmt::format(", compute id {}", r.compute_id)
                                                    : fmt::format(", {} processes summed", r.processes.size()));
  out += "# config:";
  for (const auto& [name, value] : r.config) out += fmt::format(" --{} {}", name, value.empty() ? "''" : value);
  out += "\n";
  if (!r.run) return out + "# no run (--seconds 0)\nbucket_start_ms,commits,aborts\n";
  const ReportTimeline& tl = r.run->timeline;
  out += fmt::format("# bucket_ms {}, warmup_ms {}, start_realtime_ns {}\n", tl.bucket_ms, tl.warmup_ms,
                     tl.start_realtime_ns);
  out += "bucket_start_ms,commits,aborts\n";
  for (size_t b = 0; b < tl.commits.size(); ++b) {
    out += fmt::format("{},{},{}\n", b * tl.bucket_ms, tl.commits[b], b < tl.aborts.size() ? tl.aborts[b] : 0);
  }
  return out;
}

Status write_report_files(const BenchReport& r, const std::string& json_path, const std::string& csv_path) {
  if (!json_path.empty()) {
    if (Status s = write_file_atomically(json_path, format_json(r)); !s) return s;
  }
  if (!csv_path.empty()) {
    if (Status s = write_file_atomically(csv_path, format_timeline_csv(r)); !s) return s;
  }
  return Status::ok();
}

}  // namespace pandora::workloads
