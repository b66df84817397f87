#include "tests/workloads/workload_test_support.h"

#include <cstring>

#include <fmt/format.h>

#include "compute/scheduler.h"
#include "tests/transport/child_process.h"
#include "workloads/bench/runner.h"

namespace pandora::testing {

Logger quiet_logger() { return Logger("test", LogLevel::kWarn); }

namespace {

// A MAP_SHARED array of reports, written by forked children.
class SharedReports {
 public:
  explicit SharedReports(size_t n) : n_(n) {
    void* p = ::mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      reports_ = static_cast<ProcessReport*>(p);
      for (size_t i = 0; i < n_; ++i) new (&reports_[i]) ProcessReport();
    }
  }
  ~SharedReports() {
    if (reports_) ::munmap(reports_, bytes());
  }
  SharedReports(const SharedReports&) = delete;
  SharedReports& operator=(const SharedReports&) = delete;
  ProcessReport* at(size_t i) { return reports_ ? &reports_[i] : nullptr; }

 private:
  size_t bytes() const { return n_ * sizeof(ProcessReport); }
  size_t n_;
  ProcessReport* reports_ = nullptr;
};

void set_error(ProcessReport& r, int status, const std::string& what) {
  r.status = status;
  std::snprintf(r.error, sizeof r.error, "%s", what.c_str());
}

}  // namespace

std::vector<ProcessReport> run_in_children(const ComputeConfig& base, const workloads::Workload& workload,
                                           const ChildRunSpec& spec) {
  SharedReports shared(static_cast<size_t>(spec.processes));
  std::vector<ProcessReport> out(static_cast<size_t>(spec.processes));
  if (!shared.at(0)) return out;
  std::vector<ChildProcess> kids;
  for (int i = 0; i < spec.processes; ++i) {
    ComputeConfig cfg = base;
    cfg.compute_id = static_cast<uint16_t>(spec.first_pid + i);
    cfg.threads = spec.threads;
    cfg.coordinators = spec.coordinators;
    ProcessReport* rep = shared.at(static_cast<size_t>(i));
    kids.push_back(ChildProcess::run([cfg, rep, &workload, &spec] {
      auto fail = [rep](int code, const std::string& what) {
        set_error(*rep, code, what);
        return code;
      };
      auto cluster = Cluster::connect(cfg, quiet_logger());
      if (!cluster) return fail(1, cluster.status().to_string());
      if (Status s = (*cluster)->load_directory(); !s) return fail(2, s.to_string());
      auto sched = Scheduler::create(**cluster);
      if (!sched) return fail(3, sched.status().to_string());
      workloads::RunOptions ro;
      ro.warmup = std::chrono::milliseconds(0);
      ro.measure = spec.duration;
      ro.seed = spec.seed;
      auto stats = workloads::run_workload(**sched, workload, cfg.compute_id, ro);
      if (!stats) return fail(4, stats.status().to_string());
      rep->delta = stats->committed_delta;
      rep->commits = stats->total_commits;
      rep->attempts = stats->attempts;
      rep->uncertain = stats->uncertain;
      rep->status = 0;
      return 0;
    }));
  }
  // Bounded: the run itself takes spec.duration; sanitizer builds and a
  // busy machine need generous slack, but never unbounded.
  const auto limit = spec.duration + std::chrono::seconds(120);
  for (auto& k : kids) {
    if (k.pid() <= 0) continue;
    auto st = k.wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(limit));
    if (!st) k.kill_and_reap();
  }
  for (int i = 0; i < spec.processes; ++i) out[static_cast<size_t>(i)] = *shared.at(static_cast<size_t>(i));
  return out;
}

}  // namespace pandora::testing
