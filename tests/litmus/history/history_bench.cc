// history_bench: how fast the history tools are on a large synthetic
// history (not a unit test; run it by hand, preferably from a Release
// build).
//
//   history_bench [TRANSACTIONS] [KEYS] [STALE]   defaults: 1000000 100000 0
//
// The history is a serial execution (every transaction reads two keys and
// updates two, installing the next versions) with overlapping real-time
// intervals, so it is strictly serializable and the checker must report
// nothing -- unless STALE > 0: then that many per million reads observe the
// previous version, which makes cycles (the cost of finding and reporting
// them shows up in the check time). Prints the time of checking (streamed, with the checker's peak
// resident set size), formatting, parsing and checking the parsed history.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "litmus/history/checker.h"
#include "compute/trace/history.h"
#include "litmus/history/report.h"

namespace {

using namespace pandora;
using namespace pandora::history;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Calls sink(trace) for each generated transaction.
template <typename Sink>
void generate(uint64_t n, uint64_t keys, uint64_t stale, Sink&& sink) {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> version(keys, 1);  // the loaded state is v1
  for (uint64_t i = 0; i < n; ++i) {
    TxnTrace t;
    t.pid = static_cast<uint16_t>(i % 4);
    t.coordinator = static_cast<uint16_t>(i % 64 / 4);
    t.seq = static_cast<uint32_t>(i / 64);
    // Serial order i; each interval overlaps the next two.
    t.begin_ns = 1'000'000 + i * 100;
    t.end_ns = t.begin_ns + 250;
    t.committed = rng() % 10 != 0;
    if (!t.committed) t.reason = AbortReason::kValidationFailed;
    for (int r = 0; r < 2; ++r) {
      TraceItem it;
      it.key = rng() % keys;
      it.op = TraceOp::kRead;
      it.read_version = version[it.key];
      if (it.read_version > 1 && rng() % 1'000'000 < stale) --it.read_version;
      t.items.push_back(it);
    }
    for (int w = 0; w < 2; ++w) {
      TraceItem it;
      it.key = rng() % keys;
      it.op = TraceOp::kUpdate;
      it.read_version = version[it.key];
      it.write_version = it.read_version + 1;
      bool dup = false;
      for (const TraceItem& o : t.items) dup |= o.op == TraceOp::kUpdate && o.key == it.key;
      if (dup) continue;
      t.items.push_back(it);
    }
    if (t.committed) {
      for (const TraceItem& it : t.items) {
        if (it.op == TraceOp::kUpdate) version[it.key] = it.write_version;
      }
    }
    sink(std::move(t));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const uint64_t keys = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100'000;
  const uint64_t stale = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  if (n == 0 || keys == 0) {
    std::fprintf(stderr, "usage: history_bench [TRANSACTIONS>0] [KEYS>0] [STALE_PER_MILLION]\n");
    return 2;
  }

  // First the checker alone, fed as it generates, so that the peak RSS is
  // the checker's own footprint.
  auto t0 = Clock::now();
  Checker checker;
  generate(n, keys, stale, [&](TxnTrace t) { checker.add(t); });
  const Report streamed = checker.finish();
  std::printf("generate+check (streaming): %llu transactions over %llu keys in %.2f s, peak RSS %ld MiB, %s\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(keys), seconds_since(t0),
              peak_rss_mib(), streamed.clean() ? "clean" : "ANOMALIES");

  t0 = Clock::now();
  History h;
  h.txns.reserve(n);
  generate(n, keys, stale, [&](TxnTrace t) { h.txns.push_back(std::move(t)); });
  std::printf("generate: %.2f s\n", seconds_since(t0));

  t0 = Clock::now();
  const std::string text = format_history(h);
  std::printf("format:   %.1f MiB in %.2f s\n", static_cast<double>(text.size()) / (1 << 20), seconds_since(t0));

  t0 = Clock::now();
  auto parsed = parse_history(text);
  if (!parsed.is_ok()) {
    std::fprintf(stderr, "parse failed: %s\n", parsed.status().message().c_str());
    return 1;
  }
  std::printf("parse:    %.2f s\n", seconds_since(t0));

  t0 = Clock::now();
  const Report r = check(*parsed);
  std::printf("check:    %.2f s (strict serializability)\n", seconds_since(t0));
  std::printf("peak RSS: %ld MiB\n", peak_rss_mib());
  const std::string text_report = format_report_text(r);
  // The summary, and the first anomalies of a large report.
  std::fwrite(text_report.data(), 1, std::min<size_t>(text_report.size(), 4000), stdout);
  std::printf("%s\n", text_report.size() > 4000 ? "\n..." : "");
  return r.clean() ? 0 : 1;
}
