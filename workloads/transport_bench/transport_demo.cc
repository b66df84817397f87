// pandora-transport-demo: a verified one-sided workload against running
// memory daemons, for each backend (shm, tcp) and each memory node.
//
// Per (backend, node) it runs timed phases of READ, WRITE, CAS and FAA alone
// and then mixed, posting --batch operations per doorbell. Every operation is
// checked against a local shadow of the work area: a READ must return what
// the last WRITE posted before it wrote (operations on one connection execute
// in order), CAS/FAA must observe the shadow's word, a CAS with a wrong
// expected value must fail without effect; finally the whole area is read
// back and each FAA counter must equal the sum of the additions that were
// acknowledged. Any mismatch or failed completion fails the run (exit 1).
//
// The work area is small and sits at an offset derived from --compute-id so
// that demos with different compute ids can share daemons.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/endpoint.h"
#include "common/options.h"
#include "common/secret.h"
#include "common/status.h"
#include "common/transport/client.h"
#include "common/transport/transport.h"

namespace pandora {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kSlotBytes = 64;
constexpr uint32_t kSlotWords = kSlotBytes / 8;
constexpr uint32_t kSlots = 256;
constexpr uint32_t kCasWords = 64;
constexpr uint32_t kCounters = 64;
// slots | CAS words | counters, rounded up so areas of different compute
// ids never share a cache line.
constexpr uint64_t kAreaBytes = 32 * 1024;
constexpr uint64_t kAreaStride = kAreaBytes;
constexpr uint64_t kMaxAreas = 64;
static_assert(kSlots * kSlotBytes + (kCasWords + kCounters) * 8 <= kAreaBytes);

// A batch that does not complete within this time fails the run: the
// connection's own op timeout (5 s for tcp) should have fired long before.
constexpr auto kBatchDeadline = std::chrono::seconds(15);

struct DemoConfig {
  std::string nodes;
  uint64_t cluster_id = 0;
  std::string secret_file;
  std::string backend = "all";
  uint64_t seconds = 3;
  uint64_t batch = 16;
  uint64_t compute_id = 1;
  VerbsFlags rdma;
  VerbsOptions verbs;  // from rdma
};

enum class Phase { kRead, kWrite, kCas, kFaa, kMixed };
constexpr std::array<Phase, 5> kPhases = {Phase::kRead, Phase::kWrite, Phase::kCas, Phase::kFaa,
                                          Phase::kMixed};

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kRead: return "read";
    case Phase::kWrite: return "write";
    case Phase::kCas: return "cas";
    case Phase::kFaa: return "faa";
    case Phase::kMixed: return "mixed";
  }
  return "?";
}

using Slot = std::array<uint64_t, kSlotWords>;

// One posted operation and what its completion must show.
struct Pending {
  OpType op = OpType::kRead;
  uint32_t index = 0;     // slot, CAS word or counter
  uint64_t expect = 0;    // CAS/FAA: the word before the operation
  uint64_t add = 0;       // FAA: the addition (credited when acknowledged)
  bool counter = false;   // FAA on a counter (credit `add` on success)
  Slot expect_slot{};     // READ: the slot content the read must return
  bool done = false;
};

struct RunResult {
  std::array<double, kPhases.size()> ops_per_sec{};
  bool ok = true;
  std::string error;  // the first failure
};

// The verified workload on one connection.
class Workload {
 public:
  Workload(Connection& conn, uint64_t base, uint32_t batch, uint64_t seed, std::string label)
      : conn_(conn), base_(base), batch_(batch), rng_(seed), label_(std::move(label)),
        pending_(batch), bufs_(batch), completions_(batch) {
    slots_.resize(kSlots);
    cas_.assign(kCasWords, 0);
    counters_.assign(kCounters, 0);
    acked_adds_.assign(kCounters, 0);
  }

  // Writes a known pattern everywhere, then reads it all back.
  bool init() {
    for (uint32_t i = 0; i < kSlots; ++i) {
      if (!queue_write(i)) return false;
    }
    for (uint32_t i = 0; i < kCasWords; ++i) {
      if (!queue_zero(cas_addr(i))) return false;
    }
    for (uint32_t i = 0; i < kCounters; ++i) {
      if (!queue_zero(counter_addr(i))) return false;
    }
    if (!drain()) return false;
    return verify_all();
  }

  // Runs `phase` for `duration`; returns operations per second.
  std::optional<double> run(Phase phase, std::chrono::milliseconds duration) {
    uint64_t ops = 0;
    const auto start = Clock::now();
    const auto end = start + duration;
    do {
      for (uint32_t k = 0; k < batch_; ++k) {
        OpType op = OpType::kRead;
        switch (phase) {
          case Phase::kRead: op = OpType::kRead; break;
          case Phase::kWrite: op = OpType::kWrite; break;
          case Phase::kCas: op = OpType::kCas; break;
          case Phase::kFaa: op = OpType::kFaa; break;
          case Phase::kMixed: op = static_cast<OpType>(1 + rng_() % 4); break;
        }
        if (!queue(op)) return std::nullopt;
      }
      if (!drain()) return std::nullopt;
      ops += batch_;
    } while (Clock::now() < end);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    return static_cast<double>(ops) / secs;
  }

  // Reads the whole area back and compares it with the shadow; each counter
  // must equal the sum of the acknowledged additions.
  bool verify_all() {
    for (uint32_t i = 0; i < kSlots; ++i) {
      if (!queue_read(i)) return false;
    }
    for (uint32_t i = 0; i < kCasWords; ++i) {
      // FAA of 0 returns the word without changing it: a read of one word
      // whose completion is checked like any other FAA.
      if (!queue_faa(i, 0, /*cas_word=*/true)) return false;
    }
    for (uint32_t i = 0; i < kCounters; ++i) {
      if (!queue_faa(i, 0, /*cas_word=*/false)) return false;
    }
    if (!drain()) return false;
    for (uint32_t i = 0; i < kCounters; ++i) {
      if (counters_[i] != acked_adds_[i])
        return fail(fmt::format("counter {} is {} but the acknowledged FAAs add up to {}", i,
                                counters_[i], acked_adds_[i]));
    }
    return true;
  }

  const std::string& error() const { return error_; }
  uint64_t verified_ops() const { return verified_; }

 private:
  uint64_t slot_addr(uint32_t i) const { return base_ + uint64_t{i} * kSlotBytes; }
  uint64_t cas_addr(uint32_t i) const { return base_ + uint64_t{kSlots} * kSlotBytes + uint64_t{i} * 8; }
  uint64_t counter_addr(uint32_t i) const {
    return base_ + uint64_t{kSlots} * kSlotBytes + uint64_t{kCasWords} * 8 + uint64_t{i} * 8;
  }

  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  // Next free position in the current batch; drains (rings the doorbell and
  // waits) when the batch is full.
  std::optional<uint32_t> next_position() {
    if (used_ == batch_ && !drain()) return std::nullopt;
    pending_[used_] = Pending{};
    return used_++;
  }

  uint64_t wr_id(uint32_t pos) const { return (batch_seq_ << 16) | pos; }

  bool queue(OpType op) {
    switch (op) {
      case OpType::kRead: return queue_read(static_cast<uint32_t>(rng_() % kSlots));
      case OpType::kWrite: return queue_write(static_cast<uint32_t>(rng_() % kSlots));
      case OpType::kCas: return queue_cas(static_cast<uint32_t>(rng_() % kCasWords));
      case OpType::kFaa:
        return queue_faa(static_cast<uint32_t>(rng_() % kCounters), 1 + rng_() % 8, false);
    }
    return fail("unknown op");
  }

  bool queue_read(uint32_t slot) {
    auto pos = next_position();
    if (!pos) return false;
    Pending& p = pending_[*pos];
    p.op = OpType::kRead;
    p.index = slot;
    p.expect_slot = slots_[slot];
    bufs_[*pos].fill(0xdeadbeefdeadbeefULL);
    conn_.post_read(slot_addr(slot), bufs_[*pos].data(), kSlotBytes, wr_id(*pos));
    return true;
  }

  bool queue_write(uint32_t slot) {
    auto pos = next_position();
    if (!pos) return false;
    Pending& p = pending_[*pos];
    p.op = OpType::kWrite;
    p.index = slot;
    // A value never written before: a stale read cannot match it by chance.
    ++write_seq_;
    Slot& v = bufs_[*pos];
    for (uint32_t w = 0; w < kSlotWords; ++w) v[w] = (write_seq_ << 16) ^ (uint64_t{slot} << 4) ^ w ^ rng_();
    slots_[slot] = v;
    conn_.post_write(slot_addr(slot), v.data(), kSlotBytes, wr_id(*pos));
    return true;
  }

  bool queue_zero(uint64_t addr) {
    auto pos = next_position();
    if (!pos) return false;
    pending_[*pos].op = OpType::kWrite;
    pending_[*pos].index = UINT32_MAX;  // not a slot: nothing to shadow
    bufs_[*pos].fill(0);
    conn_.post_write(addr, bufs_[*pos].data(), 8, wr_id(*pos));
    return true;
  }

  bool queue_cas(uint32_t word) {
    auto pos = next_position();
    if (!pos) return false;
    Pending& p = pending_[*pos];
    p.op = OpType::kCas;
    p.index = word;
    p.expect = cas_[word];
    const uint64_t desired = p.expect + 1 + (rng_() % 1000);
    // One CAS in four carries a wrong expected value: it must fail, report
    // the real word and change nothing.
    const bool wrong = rng_() % 4 == 0;
    const uint64_t expected = wrong ? ~p.expect : p.expect;
    if (!wrong) cas_[word] = desired;
    conn_.post_cas(cas_addr(word), expected, desired, wr_id(*pos));
    return true;
  }

  // cas_word: target a CAS word (only with add == 0, for verification).
  bool queue_faa(uint32_t index, uint64_t add, bool cas_word) {
    auto pos = next_position();
    if (!pos) return false;
    Pending& p = pending_[*pos];
    p.op = OpType::kFaa;
    p.index = index;
    p.counter = !cas_word;
    if (cas_word) {
      p.expect = cas_[index];
    } else {
      p.expect = counters_[index];
      p.add = add;
      counters_[index] += add;
    }
    conn_.post_faa(cas_word ? cas_addr(index) : counter_addr(index), add, wr_id(*pos));
    return true;
  }

  // Rings the doorbell for the queued batch and checks every completion.
  bool drain() {
    if (used_ == 0) return true;
    conn_.flush();
    uint32_t remaining = used_;
    const auto deadline = Clock::now() + kBatchDeadline;
    while (remaining > 0) {
      const size_t n = conn_.wait(completions_, std::chrono::milliseconds(100));
      for (size_t i = 0; i < n; ++i) {
        if (!check(completions_[i])) return false;
        --remaining;
      }
      if (n == 0 && Clock::now() > deadline)
        return fail(fmt::format("{} of {} operations not completed after {} s (connection health: {})",
                                remaining, used_, kBatchDeadline.count(), errc_name(conn_.health())));
    }
    used_ = 0;
    ++batch_seq_;
    return true;
  }

  bool check(const Completion& c) {
    const uint32_t pos = static_cast<uint32_t>(c.wr_id & 0xffff);
    if ((c.wr_id >> 16) != batch_seq_ || pos >= used_ || pending_[pos].done)
      return fail(fmt::format("unexpected completion wr_id {:#x}", c.wr_id));
    Pending& p = pending_[pos];
    p.done = true;
    if (c.op != p.op)
      return fail(fmt::format("completion of wr_id {:#x} says {} but a {} was posted", c.wr_id,
                              op_name(c.op), op_name(p.op)));
    if (c.status != Errc::kOk)
      return fail(fmt::format("{} failed: {}", op_name(p.op), errc_name(c.status)));
    switch (p.op) {
      case OpType::kRead:
        if (bufs_[pos] != p.expect_slot)
          return fail(fmt::format("READ of slot {} returned {:#x}... but the last WRITE before it wrote {:#x}...",
                                  p.index, bufs_[pos][0], p.expect_slot[0]));
        break;
      case OpType::kWrite:
        break;
      case OpType::kCas:
      case OpType::kFaa:
        if (c.value != p.expect)
          return fail(fmt::format("{} on {} {} observed {} but the word held {}", op_name(p.op),
                                  p.op == OpType::kCas || !p.counter ? "CAS word" : "counter", p.index,
                                  c.value, p.expect));
        if (p.counter) acked_adds_[p.index] += p.add;
        break;
    }
    ++verified_;
    return true;
  }

  Connection& conn_;
  uint64_t base_;
  uint32_t batch_;
  std::mt19937_64 rng_;
  std::string label_;
  std::vector<Pending> pending_;
  std::vector<Slot> bufs_;
  std::vector<Completion> completions_;
  uint32_t used_ = 0;
  uint64_t batch_seq_ = 1;
  uint64_t write_seq_ = 0;
  uint64_t verified_ = 0;
  std::vector<Slot> slots_;
  std::vector<uint64_t> cas_;
  std::vector<uint64_t> counters_;
  std::vector<uint64_t> acked_adds_;
  std::string error_;
};

RunResult run_one(Backend backend, const Endpoint& ep, const ClientIdentity& id, const DemoConfig& cfg) {
  RunResult result;
  const std::string label = fmt::format("{} {}", backend_name(backend), ep.to_string());
  auto say = [&](std::string_view text) {
    fmt::print("  [{}] {}\n", label, text);
    std::fflush(stdout);
  };
  auto failed = [&](std::string message) {
    result.ok = false;
    result.error = std::move(message);
    say("FAILED: " + result.error);
    return result;
  };

  ConnectOptions options;
  options.backend = backend;
  options.verbs = cfg.verbs;
  auto conn = open_connection(ep, id, options);
  if (!conn) return failed("connect: " + conn.status().to_string());
  Connection& c = **conn;

  const uint64_t begin = (c.data_begin() + 4095) & ~uint64_t{4095};
  const uint64_t area = (id.compute_id % kMaxAreas) * kAreaStride;
  if (c.data_end() < begin || c.data_end() - begin < area + kAreaBytes)
    return failed(fmt::format("data area [{:#x}, {:#x}) too small for the {} KiB work area at +{:#x}",
                              c.data_begin(), c.data_end(), kAreaBytes / 1024, area));
  const uint64_t base = begin + area;
  say(fmt::format("connected; work area [{:#x}, {:#x})", base, base + kAreaBytes));

  Workload w(c, base, static_cast<uint32_t>(cfg.batch), (uint64_t{id.compute_id} << 32) ^ ep.port, label);
  if (!w.init()) return failed("init: " + w.error());
  say("init: area written and read back: ok");

  // --seconds is split evenly over the timed phases.
  const auto phase_time = std::chrono::milliseconds(cfg.seconds * 1000 / kPhases.size());
  for (size_t i = 0; i < kPhases.size(); ++i) {
    auto rate = w.run(kPhases[i], phase_time);
    if (!rate) return failed(fmt::format("{}: {}", phase_name(kPhases[i]), w.error()));
    result.ops_per_sec[i] = *rate;
    say(fmt::format("{:<5} {:>12.0f} ops/s  verified", phase_name(kPhases[i]), *rate));
  }
  if (!w.verify_all()) return failed("final read-back: " + w.error());
  say(fmt::format("final read-back: ok ({} operations verified)", w.verified_ops()));
  if (c.health() != Errc::kOk) return failed(fmt::format("connection unhealthy: {}", errc_name(c.health())));
  return result;
}

int demo_main(int argc, char** argv) {
  DemoConfig cfg;
  OptionSet opts("pandora-transport-demo",
                 "Runs a verified READ/WRITE/CAS/FAA workload against each memory node over each "
                 "backend and prints ops/s per operation type.");
  opts.add_string("nodes", &cfg.nodes, "memory daemons: HOST:PORT[,HOST:PORT...]", true);
  opts.add_u64("cluster-id", &cfg.cluster_id, "cluster id of the daemons", 0, UINT64_MAX, true);
  opts.add_string("secret-file", &cfg.secret_file, "file holding the cluster secret", true);
  opts.add_choice("backend", &cfg.backend, {"shm", "tcp", "verbs", "all"},
                  "transport backend(s) to run (all: shm and tcp; verbs needs an RDMA device, see --rdma-*)");
  opts.add_u64("seconds", &cfg.seconds, "run time per backend and node (split over 5 phases)", 1, 3600);
  opts.add_u64("batch", &cfg.batch, "operations posted per doorbell", 1, 4096);
  opts.add_u64("compute-id", &cfg.compute_id, "compute node id to connect as", 1, 65535);
  cfg.rdma.declare(opts);

  std::string message;
  switch (opts.parse(argc, argv, &message)) {
    case OptionSet::Outcome::kHelp: fmt::print("{}", message); return 0;
    case OptionSet::Outcome::kError: fmt::print(stderr, "pandora-transport-demo: {}\n", message); return 2;
    case OptionSet::Outcome::kRun: break;
  }

  std::vector<Endpoint> nodes;
  for (size_t pos = 0; pos <= cfg.nodes.size();) {
    const size_t comma = std::min(cfg.nodes.find(',', pos), cfg.nodes.size());
    auto ep = parse_endpoint(std::string_view(cfg.nodes).substr(pos, comma - pos));
    if (!ep) {
      fmt::print(stderr, "pandora-transport-demo: --nodes: {}\n", ep.status().to_string());
      return 2;
    }
    nodes.push_back(*ep);
    pos = comma + 1;
  }

  Result<VerbsOptions> verbs = cfg.rdma.to_options();
  if (!verbs) {
    fmt::print(stderr, "pandora-transport-demo: {}\n", verbs.status().message());
    return 2;
  }
  cfg.verbs = *verbs;

  auto secret = read_secret_file(cfg.secret_file);
  if (!secret) {
    fmt::print(stderr, "pandora-transport-demo: --secret-file: {}\n", secret.status().to_string());
    return 2;
  }

  ClientIdentity id;
  id.cluster_id = cfg.cluster_id;
  id.secret = *secret;
  id.role = wire::Role::kCompute;
  id.compute_id = static_cast<uint16_t>(cfg.compute_id);
  id.incarnation = new_incarnation();  // one for every connection of this process

  std::vector<Backend> backends;
  if (cfg.backend == "all") {
    backends = {Backend::kShm, Backend::kTcp};
  } else {
    backends = {parse_backend(cfg.backend).value()};
  }

  struct Row {
    Backend backend;
    Endpoint node;
    RunResult result;
  };
  std::vector<Row> rows;
  for (Backend b : backends) {
    for (const Endpoint& ep : nodes) {
      fmt::print("==> {} on {}: {} s, batch {}\n", backend_name(b), ep.to_string(), cfg.seconds, cfg.batch);
      std::fflush(stdout);
      rows.push_back(Row{b, ep, run_one(b, ep, id, cfg)});
    }
  }

  bool all_ok = true;
  fmt::print("\n{:<8} {:<22}", "backend", "node");
  for (Phase p : kPhases) fmt::print(" {:>12}", fmt::format("{}/s", phase_name(p)));
  fmt::print("  {}\n", "verified");
  for (const Row& r : rows) {
    fmt::print("{:<8} {:<22}", backend_name(r.backend), r.node.to_string());
    for (size_t i = 0; i < kPhases.size(); ++i) {
      if (r.result.ok) {
        fmt::print(" {:>12.0f}", r.result.ops_per_sec[i]);
      } else {
        fmt::print(" {:>12}", "-");
      }
    }
    fmt::print("  {}\n", r.result.ok ? "verified: ok" : "verified: FAILED (" + r.result.error + ")");
    all_ok = all_ok && r.result.ok;
  }
  std::fflush(stdout);
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace pandora

int main(int argc, char** argv) { return pandora::demo_main(argc, argv); }
