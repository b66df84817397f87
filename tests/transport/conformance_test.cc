// Transport conformance suite: the contract of common/transport/transport.h,
// checked against every backend with a real pandora-memd per test.
//
// Decisions this suite pins down (where the headers leave room):
//  * Zero-length READ/WRITE and READ/WRITE above wire::kMaxIoBytes complete
//    with kInvalidArgument, locally, on every backend: the wire format has no
//    zero-length frame (decode_request calls it malformed, which would make
//    the daemon close the whole connection), and an empty access is a caller
//    bug. Out-of-range addresses (past the end, below data_begin(), or with
//    addr+len overflowing) complete with kOutOfBounds, also locally; a
//    misaligned CAS/FAA that is otherwise in bounds completes with
//    kMisaligned (bounds are checked first, as wire::check_access does).
//  * A locally rejected operation completes in posted order, after the
//    operations posted before it, and leaves the connection usable.
//  * Once broken, a connection stays broken; later operations complete with
//    health() (kFenced / kDisconnected / kTimeout).
//  * Fencing: a fenced tcp or verbs client sees kFenced; a fenced shm
//    client is SIGKILLed by the daemon before fence() returns.
//  * verbs runs only where an RDMA device is (the Soft-RoCE VM: ctest
//    softroce.conformance); elsewhere its cases skip, unless
//    PANDORA_REQUIRE_VERBS=1 makes a missing device a failure.
//  * An shm connection breaks (kDisconnected) when its control session ends,
//    because the daemon could no longer kill it when fencing.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/region_layout.h"
#include "common/transport/client.h"
#include "common/transport/socket_util.h"
#include "common/transport/transport.h"
#include "common/transport/verbs_connection.h"
#include "common/wire/control.h"
#include "common/wire/frame.h"
#include "common/checksum.h"
#include "tests/support/memd_process.h"
#include "tests/support/verbs_support.h"
#include "tests/transport/child_process.h"

namespace pandora {
namespace {

using namespace std::chrono_literals;
using testing::ChildExit;
using testing::ChildProcess;
using testing::MemdProcess;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

// Exit codes of forked workers.
constexpr int kChildOk = 0;
constexpr int kChildConnectFailed = 10;
constexpr int kChildOpFailed = 11;
constexpr int kChildNoCompletion = 12;
constexpr int kChildPipeFailed = 13;
constexpr int kChildSawFence = 42;

std::string describe(const ChildExit& e) {
  if (e.exited) return "exit code " + std::to_string(e.code);
  if (e.signaled) return "signal " + std::to_string(e.signal);
  return "unknown";
}

std::string describe(const Completion& c) {
  return std::string(op_name(c.op)) + " wr_id=" + std::to_string(c.wr_id) + " status=" +
         std::string(errc_name(c.status)) + " value=" + std::to_string(c.value);
}

// Collects `n` completions (or fewer if `limit` passes first).
std::vector<Completion> collect(Connection& c, size_t n, std::chrono::milliseconds limit = 20s) {
  std::vector<Completion> out;
  out.reserve(n);
  std::array<Completion, 64> buf;
  const auto deadline = Clock::now() + limit;
  while (out.size() < n) {
    auto now = Clock::now();
    if (now >= deadline) break;
    size_t want = std::min(buf.size(), n - out.size());
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + 1ms;
    size_t k = c.wait(std::span(buf.data(), want), left);
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<long>(k));
    if (k == 0 && c.outstanding() == 0) break;
  }
  return out;
}

Completion one(Connection& c) {
  c.flush();
  auto v = collect(c, 1);
  if (v.empty()) return Completion{~0ull, OpType::kRead, Errc::kTimeout, 0};
  return v[0];
}

Completion read_sync(Connection& c, uint64_t addr, void* buf, uint32_t len) {
  c.post_read(addr, buf, len, 1);
  return one(c);
}
Completion write_sync(Connection& c, uint64_t addr, const void* buf, uint32_t len) {
  c.post_write(addr, buf, len, 2);
  return one(c);
}
Completion cas_sync(Connection& c, uint64_t addr, uint64_t expected, uint64_t desired) {
  c.post_cas(addr, expected, desired, 3);
  return one(c);
}
Completion faa_sync(Connection& c, uint64_t addr, uint64_t add) {
  c.post_faa(addr, add, 4);
  return one(c);
}
uint64_t read_word(Connection& c, uint64_t addr) {
  uint64_t w = 0xdeadbeef;
  Completion r = read_sync(c, addr, &w, 8);
  EXPECT_EQ(r.status, Errc::kOk) << describe(r);
  return w;
}
void write_word(Connection& c, uint64_t addr, uint64_t w) {
  Completion r = write_sync(c, addr, &w, 8);
  EXPECT_EQ(r.status, Errc::kOk) << describe(r);
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

Result<std::unique_ptr<Connection>> connect_to(const MemdProcess& memd, uint16_t id, Backend b,
                                               std::chrono::milliseconds op_timeout = 10s, bool frame_mac = false) {
  ConnectOptions o;
  o.backend = b;
  o.frame_mac = frame_mac;
  o.op_timeout = op_timeout;
  return open_connection(memd.endpoint(), memd.identity(id), o);
}

// Worker body for forked children: `total` FAAs of +1 on `addr`, `batch` per
// doorbell.
int faa_worker(const MemdProcess& memd, uint16_t id, Backend b, uint64_t addr, int total, int batch,
               bool frame_mac = false) {
  auto conn = connect_to(memd, id, b, 10s, frame_mac);
  if (!conn) {
    fprintf(stderr, "child %u: %s\n", id, conn.status().to_string().c_str());
    return kChildConnectFailed;
  }
  Connection& c = **conn;
  for (int done = 0; done < total;) {
    int n = std::min(batch, total - done);
    for (int i = 0; i < n; ++i) c.post_faa(addr, 1, static_cast<uint64_t>(done + i));
    c.flush();
    auto got = collect(c, static_cast<size_t>(n));
    if (got.size() != static_cast<size_t>(n)) return kChildNoCompletion;
    for (const auto& x : got) {
      if (x.status != Errc::kOk) {
        fprintf(stderr, "child %u: %s\n", id, describe(x).c_str());
        return kChildOpFailed;
      }
    }
    done += n;
  }
  return kChildOk;
}

// Worker body: `n` successful CAS increments of the word at `addr`, retrying
// with the observed value after every failed CAS.
int cas_worker(const MemdProcess& memd, uint16_t id, Backend b, uint64_t addr, int n, bool frame_mac = false) {
  auto conn = connect_to(memd, id, b, 10s, frame_mac);
  if (!conn) return kChildConnectFailed;
  Connection& c = **conn;
  uint64_t guess = 0;
  for (int done = 0; done < n;) {
    Completion r = cas_sync(c, addr, guess, guess + 1);
    if (r.status != Errc::kOk) return kChildOpFailed;
    if (r.value == guess) {
      ++done;
      ++guess;
    } else {
      guess = r.value;
    }
  }
  return kChildOk;
}

// Whether every thread of `pid` is stopped (kill(SIGSTOP) returns before the
// group stop has completed, so a test must wait for it).
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  int threads = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(t.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Format: "tid (comm) S ..."; comm may contain spaces, so look after ')'.
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return false;
    char state = stat[close + 2];
    if (state != 'T' && state != 't') return false;
    ++threads;
  }
  return !ec && threads > 0;
}

bool stop_process(pid_t pid, std::chrono::milliseconds limit) {
  if (::kill(pid, SIGSTOP) != 0) return false;
  const auto deadline = Clock::now() + limit;
  while (!all_threads_stopped(pid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Resumes a SIGSTOPped process when the test leaves its scope, however it
// leaves.
struct ContinueOnExit {
  pid_t pid;
  ~ContinueOnExit() {
    if (pid > 0) ::kill(pid, SIGCONT);
  }
};

// The suite runs on every backend, and on tcp once more with frame MACs on
// (every frame sealed and checked: the same semantics must hold).
struct TransportParam {
  Backend backend;
  bool frame_mac = false;
};

class TransportConformance : public ::testing::TestWithParam<TransportParam> {
 protected:
  void SetUp() override {
    if (backend() == Backend::kVerbs) PANDORA_SKIP_WITHOUT_VERBS();
    memd_ = std::make_unique<MemdProcess>(dir_.path());
    ASSERT_TRUE(memd_->start()) << memd_->last_error();
  }
  void TearDown() override {
    if (HasFailure() && memd_) {
      fprintf(stderr, "---- pandora-memd log ----\n%s\n", memd_->stderr_text().c_str());
    }
  }

  Backend backend() const { return GetParam().backend; }
  bool frame_mac() const { return GetParam().frame_mac; }

  std::unique_ptr<Connection> connect(uint16_t id, std::chrono::milliseconds op_timeout = 10s) {
    auto r = connect_to(*memd_, id, backend(), op_timeout, frame_mac());
    EXPECT_TRUE(r) << "open_connection(" << id << "): " << r.status().to_string();
    if (!r) return nullptr;
    return std::move(r).value();
  }

  std::unique_ptr<ControlClient> admin() {
    auto r = ControlClient::connect(memd_->endpoint(), memd_->identity(0), 5s);
    EXPECT_TRUE(r) << r.status().to_string();
    if (!r) return nullptr;
    return std::move(r).value();
  }

  TempDir dir_;
  std::unique_ptr<MemdProcess> memd_;
};

// ---------------------------------------------------------------- basics

TEST_P(TransportConformance, DescribesTheRegion) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  auto a = admin();
  ASSERT_TRUE(a);
  auto info = a->region_info();
  ASSERT_TRUE(info) << info.status().to_string();
  EXPECT_EQ(c->backend(), backend_name(backend()));
  EXPECT_EQ(c->data_begin(), info->data_offset);
  EXPECT_EQ(c->data_end(), info->region_size);
  EXPECT_EQ(c->data_begin(), kDataOffset);
  EXPECT_EQ(c->health(), Errc::kOk);
  EXPECT_EQ(c->outstanding(), 0u);
}

// -------------------------------------------------------------- ordering

TEST_P(TransportConformance, OneBatchWritesThenReadSeesLastWrite) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t base = c->data_begin() + 4096;
  constexpr int kWrites = 60;
  constexpr size_t kWindow = 64 + 4 * 16;
  std::vector<uint8_t> model(kWindow, 0);
  std::vector<std::array<uint8_t, 64>> bufs(kWrites);
  std::vector<uint8_t> zero(kWindow, 0);
  std::vector<uint8_t> seen(kWindow, 0xee);
  uint64_t word_after = 0;
  std::array<uint8_t, 8> cas_word_before{};

  uint64_t wr = 100;
  c->post_write(base, zero.data(), kWindow, wr++);
  for (int i = 0; i < kWrites; ++i) {
    // Same and overlapping ranges: offsets cycle through 0, 16, 32, 48, 64.
    size_t off = static_cast<size_t>(i % 5) * 16;
    bufs[i].fill(static_cast<uint8_t>(i + 1));
    std::memcpy(&model[off], bufs[i].data(), 64);
    c->post_write(base + off, bufs[i].data(), 64, wr++);
  }
  c->post_read(base, seen.data(), kWindow, wr++);
  // A CAS after the writes, same batch, must see what they wrote.
  std::memcpy(cas_word_before.data(), &model[8], 8);
  uint64_t expected;
  std::memcpy(&expected, cas_word_before.data(), 8);
  c->post_cas(base + 8, expected, 0x1122334455667788ull, wr++);
  c->post_read(base + 8, &word_after, 8, wr++);
  c->flush();

  auto got = collect(*c, static_cast<size_t>(wr - 100));
  ASSERT_EQ(got.size(), wr - 100);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].wr_id, 100 + i) << "completions must come in posted order";
    EXPECT_EQ(got[i].status, Errc::kOk) << describe(got[i]);
  }
  EXPECT_EQ(got[kWrites + 1].op, OpType::kRead);
  EXPECT_EQ(seen, model) << "the READ must see the last WRITE of every byte";
  EXPECT_EQ(got[kWrites + 2].op, OpType::kCas);
  EXPECT_EQ(got[kWrites + 2].value, expected) << "the CAS must see the written word";
  EXPECT_EQ(word_after, 0x1122334455667788ull);
}

// Durability::kVisible changes what a completion promises about power loss
// only: results, order and what other compute nodes see are those of
// kPersistent operations.
TEST_P(TransportConformance, VisibleOperationsKeepOrderAndAreSeenByOthers) {
  auto c = connect(1);
  auto other = connect(2);
  ASSERT_TRUE(c && other);
  const uint64_t word = c->data_begin() + 8192;
  const uint64_t block = word + 64;
  constexpr auto kVisible = Durability::kVisible;
  uint64_t seven = 7;
  std::array<uint8_t, 64> pattern;
  pattern.fill(0xa5);
  uint64_t read_back = 0;
  c->post_write(word, &seven, 8, 10, kVisible);
  c->post_cas(word, 7, 8, 11, kVisible);
  c->post_faa(word, 2, 12, kVisible);
  c->post_write(block, pattern.data(), 64, 13, kVisible);
  c->post_read(word, &read_back, 8, 14);
  c->flush();
  auto got = collect(*c, 5);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].wr_id, 10 + i) << "completions must come in posted order";
    EXPECT_EQ(got[i].status, Errc::kOk) << describe(got[i]);
  }
  EXPECT_EQ(got[1].value, 7u) << "the CAS must see the WRITE before it";
  EXPECT_EQ(got[2].value, 8u) << "the FAA must see the CAS before it";
  EXPECT_EQ(read_back, 10u);

  // Completed kVisible operations are visible to another compute node.
  EXPECT_EQ(read_word(*other, word), 10u);
  std::array<uint8_t, 64> seen{};
  ASSERT_EQ(read_sync(*other, block, seen.data(), 64).status, Errc::kOk);
  EXPECT_EQ(seen, pattern);

  // A kVisible WRITE behind a kPersistent one to the same word wins.
  uint64_t one = 1, two = 2;
  c->post_write(word, &one, 8, 20);
  c->post_write(word, &two, 8, 21, kVisible);
  c->flush();
  ASSERT_EQ(collect(*c, 2).size(), 2u);
  EXPECT_EQ(read_word(*other, word), 2u);
}

// verbs makes a chain durable with one READ behind it; a chain of kVisible
// operations, or one that already ends with a READ, needs none.
TEST_P(TransportConformance, VerbsAddsTheDurabilityReadOnlyWhereNeeded) {
  if (backend() != Backend::kVerbs) GTEST_SKIP() << "verbs only";
  auto conn = connect(1);
  ASSERT_TRUE(conn);
  auto& c = dynamic_cast<VerbsConnection&>(*conn);
  const uint64_t word = c.data_begin() + 8192;
  uint64_t v = 3, r = 0;
  auto run = [&](auto post) {
    const uint64_t before = c.durability_reads();
    post();
    c.flush();
    const size_t n = c.outstanding();
    auto got = collect(c, n);
    EXPECT_EQ(got.size(), n);
    for (const Completion& x : got) EXPECT_EQ(x.status, Errc::kOk) << describe(x);
    return c.durability_reads() - before;
  };
  EXPECT_EQ(run([&] {
              c.post_write(word, &v, 8, 1, Durability::kVisible);
              c.post_cas(word, 3, 4, 2, Durability::kVisible);
              c.post_faa(word, 1, 3, Durability::kVisible);
            }),
            0u);
  EXPECT_EQ(run([&] { c.post_write(word, &v, 8, 4); }), 1u);
  EXPECT_EQ(run([&] { c.post_cas(word, 3, 9, 5); }), 1u);
  EXPECT_EQ(run([&] { c.post_faa(word, 1, 6); }), 1u);
  EXPECT_EQ(run([&] {
              c.post_write(word, &v, 8, 7);
              c.post_faa(word, 1, 8, Durability::kVisible);
            }),
            1u)
      << "a kVisible operation behind a kPersistent one does not make it durable";
  EXPECT_EQ(run([&] {
              c.post_write(word, &v, 8, 9);
              c.post_read(word, &r, 8, 10);
            }),
            0u)
      << "a chain that ends with a READ is durable without another";
  EXPECT_EQ(r, 3u);
}

TEST_P(TransportConformance, FaaSequenceCompletesInOrder) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 128;
  write_word(*c, addr, 1000);
  constexpr int kOps = 500;
  for (int i = 0; i < kOps; ++i) c->post_faa(addr, 1, static_cast<uint64_t>(i));
  EXPECT_EQ(c->outstanding(), static_cast<size_t>(kOps));
  c->flush();
  auto got = collect(*c, kOps);
  ASSERT_EQ(got.size(), static_cast<size_t>(kOps));
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(got[i].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(got[i].op, OpType::kFaa);
    EXPECT_EQ(got[i].status, Errc::kOk);
    EXPECT_EQ(got[i].value, 1000u + static_cast<uint64_t>(i));
  }
  EXPECT_EQ(c->outstanding(), 0u);
  EXPECT_EQ(read_word(*c, addr), 1000u + kOps);
}

TEST_P(TransportConformance, OrderHoldsAcrossFlushesWithoutWaiting) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 256;
  constexpr int kFlushes = 40;
  std::vector<uint64_t> values(kFlushes);
  uint64_t last_seen = 0;
  // Many doorbells in a row, nothing collected in between; each flush holds
  // one WRITE of a new value, the last one also a READ.
  for (int i = 0; i < kFlushes; ++i) {
    values[i] = 0xabc000u + static_cast<uint64_t>(i);
    c->post_write(addr, &values[i], 8, static_cast<uint64_t>(i));
    if (i == kFlushes - 1) c->post_read(addr, &last_seen, 8, 1000);
    c->flush();
  }
  auto got = collect(*c, kFlushes + 1);
  ASSERT_EQ(got.size(), static_cast<size_t>(kFlushes + 1));
  for (int i = 0; i < kFlushes; ++i) EXPECT_EQ(got[i].wr_id, static_cast<uint64_t>(i));
  EXPECT_EQ(got[kFlushes].wr_id, 1000u);
  for (const auto& x : got) EXPECT_EQ(x.status, Errc::kOk) << describe(x);
  EXPECT_EQ(last_seen, values.back());
}

// ------------------------------------------------------------ read/write

TEST_P(TransportConformance, LargeReadWriteRoundTrip) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  for (uint32_t len : {uint32_t{1} << 20, wire::kMaxIoBytes}) {
    SCOPED_TRACE("len " + std::to_string(len));
    const uint64_t addr = c->data_begin() + 4096 + 12345;  // deliberately unaligned
    ASSERT_LE(addr + len + 64, c->data_end());
    std::vector<uint8_t> guard(64, 0xab), data = pattern(len, len), back(len, 0);
    ASSERT_EQ(write_sync(*c, addr - 64, guard.data(), 64).status, Errc::kOk);
    ASSERT_EQ(write_sync(*c, addr + len, guard.data(), 64).status, Errc::kOk);
    Completion w = write_sync(*c, addr, data.data(), len);
    ASSERT_EQ(w.status, Errc::kOk) << describe(w);
    Completion r = read_sync(*c, addr, back.data(), len);
    ASSERT_EQ(r.status, Errc::kOk) << describe(r);
    EXPECT_TRUE(back == data) << "large READ differs from what was written";
    std::vector<uint8_t> g1(64), g2(64);
    ASSERT_EQ(read_sync(*c, addr - 64, g1.data(), 64).status, Errc::kOk);
    ASSERT_EQ(read_sync(*c, addr + len, g2.data(), 64).status, Errc::kOk);
    EXPECT_EQ(g1, guard) << "bytes before the written range changed";
    EXPECT_EQ(g2, guard) << "bytes after the written range changed";
  }
}

TEST_P(TransportConformance, UnalignedReadWriteLeaveNeighboursAlone) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  constexpr size_t kWindow = 16 * 1024;
  const uint64_t window = c->data_begin() + 64 * 1024;
  uint32_t seed = 1;
  for (uint64_t off : {1u, 3u, 7u, 63u, 65u, 127u, 4093u}) {
    for (uint32_t len : {1u, 3u, 7u, 9u, 63u, 65u, 129u, 4095u}) {
      SCOPED_TRACE("offset " + std::to_string(off) + " len " + std::to_string(len));
      std::vector<uint8_t> model = pattern(kWindow, seed++);
      std::vector<uint8_t> data = pattern(len, seed++);
      std::vector<uint8_t> seen(kWindow, 0), piece(len, 0);
      std::memcpy(&model[off], data.data(), len);
      std::vector<uint8_t> background = model;
      std::memcpy(&background[off], pattern(len, 777).data(), len);

      c->post_write(window, background.data(), kWindow, 1);
      c->post_write(window + off, data.data(), len, 2);
      c->post_read(window, seen.data(), kWindow, 3);
      c->post_read(window + off, piece.data(), len, 4);
      c->flush();
      auto got = collect(*c, 4);
      ASSERT_EQ(got.size(), 4u);
      for (const auto& x : got) ASSERT_EQ(x.status, Errc::kOk) << describe(x);
      ASSERT_TRUE(seen == model) << "window differs after an unaligned write";
      ASSERT_TRUE(piece == data) << "unaligned read differs";
    }
  }
}

// -------------------------------------------------------------- atomics

TEST_P(TransportConformance, CasSemantics) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 8 * 100;
  write_word(*c, addr, 100);

  Completion ok = cas_sync(*c, addr, 100, 200);
  ASSERT_EQ(ok.status, Errc::kOk);
  EXPECT_EQ(ok.op, OpType::kCas);
  EXPECT_EQ(ok.value, 100u) << "a successful CAS returns the expected value";
  EXPECT_EQ(read_word(*c, addr), 200u);

  Completion fail = cas_sync(*c, addr, 100, 300);
  ASSERT_EQ(fail.status, Errc::kOk) << "a failed comparison is not an error";
  EXPECT_EQ(fail.value, 200u) << "a failed CAS returns the observed word";
  EXPECT_EQ(read_word(*c, addr), 200u) << "a failed CAS leaves the word alone";

  // Full 64-bit values, both halves significant.
  const uint64_t big = 0xfedcba9876543210ull;
  ASSERT_EQ(cas_sync(*c, addr, 200, big).value, 200u);
  EXPECT_EQ(cas_sync(*c, addr, big & 0xffffffffull, 1).value, big);
  EXPECT_EQ(read_word(*c, addr), big);
  // Neighbouring words untouched.
  EXPECT_EQ(read_word(*c, addr - 8), 0u);
  EXPECT_EQ(read_word(*c, addr + 8), 0u);
}

TEST_P(TransportConformance, FaaReturnsOldValueAndWraps) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 8 * 200;
  write_word(*c, addr, 5);
  Completion f = faa_sync(*c, addr, 10);
  ASSERT_EQ(f.status, Errc::kOk);
  EXPECT_EQ(f.op, OpType::kFaa);
  EXPECT_EQ(f.value, 5u);
  EXPECT_EQ(read_word(*c, addr), 15u);

  write_word(*c, addr, UINT64_MAX - 1);
  EXPECT_EQ(faa_sync(*c, addr, 5).value, UINT64_MAX - 1);
  EXPECT_EQ(read_word(*c, addr), 3u) << "FAA wraps modulo 2^64";
  EXPECT_EQ(faa_sync(*c, addr, UINT64_MAX).value, 3u);  // adding 2^64-1 is -1
  EXPECT_EQ(read_word(*c, addr), 2u);
  EXPECT_EQ(faa_sync(*c, addr, 0).value, 2u);
}

TEST_P(TransportConformance, FaaFromTwoProcessesLosesNothing) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 8 * 300;
  write_word(*c, addr, 0);
  constexpr int kPerChild = 100000;
  ChildProcess a = ChildProcess::run([&] { return faa_worker(*memd_, 2, backend(), addr, kPerChild, 32, frame_mac()); });
  ChildProcess b = ChildProcess::run([&] { return faa_worker(*memd_, 3, backend(), addr, kPerChild, 32, frame_mac()); });
  ASSERT_GT(a.pid(), 0);
  ASSERT_GT(b.pid(), 0);
  auto ea = a.wait_for(240s);
  auto eb = b.wait_for(240s);
  ASSERT_TRUE(ea && eb) << "FAA workers did not finish in time";
  EXPECT_TRUE(ea->exited && ea->code == kChildOk) << describe(*ea);
  EXPECT_TRUE(eb->exited && eb->code == kChildOk) << describe(*eb);
  EXPECT_EQ(read_word(*c, addr), 2u * kPerChild) << "lost (or extra) increments";
}

TEST_P(TransportConformance, CasSpinCounterFromTwoProcesses) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 8 * 400;
  write_word(*c, addr, 0);
  constexpr int kPerChild = 10000;
  ChildProcess a = ChildProcess::run([&] { return cas_worker(*memd_, 2, backend(), addr, kPerChild, frame_mac()); });
  ChildProcess b = ChildProcess::run([&] { return cas_worker(*memd_, 3, backend(), addr, kPerChild, frame_mac()); });
  auto ea = a.wait_for(240s);
  auto eb = b.wait_for(240s);
  ASSERT_TRUE(ea && eb) << "CAS workers did not finish in time";
  EXPECT_TRUE(ea->exited && ea->code == kChildOk) << describe(*ea);
  EXPECT_TRUE(eb->exited && eb->code == kChildOk) << describe(*eb);
  EXPECT_EQ(read_word(*c, addr), 2u * kPerChild);
}

// ---------------------------------------------------------------- bounds

TEST_P(TransportConformance, BadAccessesFailLocallyInOrder) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t lo = c->data_begin(), hi = c->data_end();
  // A recognisable word at the end of the region, to prove that a rejected
  // WRITE overlapping it changed nothing.
  write_word(*c, hi - 8, 0x5151515151515151ull);
  std::vector<uint8_t> buf(64, 0xcc);
  uint64_t word = 0;

  struct Case {
    const char* what;
    Errc expect;
  };
  std::vector<Case> cases;
  uint64_t wr = 0;
  auto rd = [&](const char* what, uint64_t addr, uint32_t len, Errc e) {
    c->post_read(addr, buf.data(), len, wr++);
    cases.push_back({what, e});
  };
  auto wrt = [&](const char* what, uint64_t addr, uint32_t len, Errc e) {
    c->post_write(addr, buf.data(), len, wr++);
    cases.push_back({what, e});
  };
  rd("read across the end", hi - 8, 16, Errc::kOutOfBounds);
  wrt("write across the end", hi - 8, 16, Errc::kOutOfBounds);
  rd("read at the end", hi, 1, Errc::kOutOfBounds);
  rd("read of the last byte", hi - 1, 1, Errc::kOk);
  rd("read below data_begin", lo - 8, 8, Errc::kOutOfBounds);
  rd("read of the region header", 0, 64, Errc::kOutOfBounds);
  wrt("write into the fence bitmap", kFenceBitmapOffset, 8, Errc::kOutOfBounds);
  rd("read straddling data_begin", lo - 1, 2, Errc::kOutOfBounds);
  rd("read whose end overflows", UINT64_MAX - 3, 8, Errc::kOutOfBounds);
  wrt("write at UINT64_MAX", UINT64_MAX, 1, Errc::kOutOfBounds);
  rd("zero-length read", lo, 0, Errc::kInvalidArgument);
  wrt("zero-length write", lo, 0, Errc::kInvalidArgument);
  rd("read above kMaxIoBytes", lo, wire::kMaxIoBytes + 1, Errc::kInvalidArgument);
  c->post_cas(UINT64_MAX - 7, 0, 1, wr++);
  cases.push_back({"cas at UINT64_MAX-7", Errc::kOutOfBounds});
  c->post_faa(hi, 1, wr++);
  cases.push_back({"faa at the end", Errc::kOutOfBounds});
  c->post_cas(hi - 4, 0, 1, wr++);
  cases.push_back({"cas across the end (also misaligned)", Errc::kOutOfBounds});
  c->post_faa(8, 1, wr++);
  cases.push_back({"faa in the header", Errc::kOutOfBounds});
  c->post_cas(lo + 4, 0, 1, wr++);
  cases.push_back({"misaligned cas", Errc::kMisaligned});
  c->post_faa(lo + 1, 1, wr++);
  cases.push_back({"misaligned faa", Errc::kMisaligned});
  c->post_read(hi - 8, &word, 8, wr++);
  cases.push_back({"valid read after all that", Errc::kOk});
  c->flush();

  auto got = collect(*c, cases.size());
  ASSERT_EQ(got.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(got[i].wr_id, i) << cases[i].what << ": completion out of order";
    EXPECT_EQ(got[i].status, cases[i].expect) << cases[i].what << ": " << describe(got[i]);
  }
  EXPECT_EQ(word, 0x5151515151515151ull) << "a rejected WRITE touched memory";
  EXPECT_EQ(c->health(), Errc::kOk);

  // Still fully usable.
  const uint64_t addr = lo + 8 * 500;
  write_word(*c, addr, 41);
  EXPECT_EQ(faa_sync(*c, addr, 1).value, 41u);
  EXPECT_EQ(read_word(*c, addr), 42u);
  EXPECT_EQ(read_word(*c, hi - 8), 0x5151515151515151ull);
}

TEST_P(TransportConformance, RejectedOpWaitsForEarlierOps) {
  auto c = connect(1);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 8 * 600;
  write_word(*c, addr, 0);
  // Successful ops, then a bad one, then more successful ones: the bad one
  // must not overtake the ones before it.
  for (int i = 0; i < 16; ++i) c->post_faa(addr, 1, static_cast<uint64_t>(i));
  c->post_faa(addr + 3, 1, 16);
  for (int i = 17; i < 32; ++i) c->post_faa(addr, 1, static_cast<uint64_t>(i));
  c->flush();
  auto got = collect(*c, 32);
  ASSERT_EQ(got.size(), 32u);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(got[i].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(got[i].status, i == 16 ? Errc::kMisaligned : Errc::kOk) << describe(got[i]);
  }
  EXPECT_EQ(read_word(*c, addr), 31u);
}

// --------------------------------------------------------------- fencing

// Waits until `fd` is readable and returns one byte (or -1).
int read_byte(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return -1;
  uint8_t b = 0;
  return ::read(fd, &b, 1) == 1 ? b : -1;
}

TEST_P(TransportConformance, FenceStopsAFencedClientAndKeepsOthers) {
  constexpr uint16_t kVictim = 9;
  auto c = connect(1);
  ASSERT_TRUE(c);
  auto a = admin();
  ASSERT_TRUE(a);
  const uint64_t counter = c->data_begin() + 8 * 700;
  write_word(*c, counter, 0);

  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const Backend b = backend();
  // The victim increments the counter until it sees kFenced. It reports
  // 'R' after its first increment and 'F' when it sees the fence; on shm it
  // then waits to be killed (the daemon must do that), on tcp it exits.
  ChildProcess victim = ChildProcess::run([&]() -> int {
    ::close(pipefd[0]);
    auto conn = connect_to(*memd_, kVictim, b, 10s, frame_mac());
    if (!conn) return kChildConnectFailed;
    Connection& vc = **conn;
    bool reported = false;
    for (uint64_t i = 0;; ++i) {
      for (int k = 0; k < 4; ++k) vc.post_faa(counter, 1, i);
      vc.flush();
      auto got = collect(vc, 4);
      if (got.size() != 4) return kChildNoCompletion;
      for (const auto& x : got) {
        if (x.status == Errc::kFenced) {
          if (::write(pipefd[1], "F", 1) != 1) return kChildPipeFailed;
          if (b == Backend::kShm) {
            for (;;) ::pause();
          }
          return kChildSawFence;
        }
        if (x.status != Errc::kOk) return kChildOpFailed;
      }
      if (!reported) {
        if (::write(pipefd[1], "R", 1) != 1) return kChildPipeFailed;
        reported = true;
      }
    }
  });
  ::close(pipefd[1]);
  struct ClosePipe {
    int fd;
    ~ClosePipe() { ::close(fd); }
  } close_pipe{pipefd[0]};
  ASSERT_GT(victim.pid(), 0);
  ASSERT_EQ(read_byte(pipefd[0], 20s), 'R') << "the victim never got going";

  Status fenced = a->fence(kVictim);
  ASSERT_TRUE(fenced) << fenced.to_string();
  const uint64_t at_fence = read_word(*c, counter);
  EXPECT_GT(at_fence, 0u);

  if (b == Backend::kShm) {
    // fence() returns only after the fenced process has died.
    auto e = victim.try_wait();
    ASSERT_TRUE(e.has_value()) << "fence() returned while the fenced shm process was still alive";
    EXPECT_TRUE(e->signaled && e->signal == SIGKILL) << describe(*e);
  } else {
    auto e = victim.wait_for(20s);
    ASSERT_TRUE(e.has_value()) << "the fenced tcp client never saw kFenced";
    EXPECT_TRUE(e->exited && e->code == kChildSawFence) << describe(*e);
  }
  EXPECT_EQ(read_word(*c, counter), at_fence) << "memory changed after fence() returned";

  // The fenced id cannot come back; others are unaffected.
  auto again = connect_to(*memd_, kVictim, b, 10s, frame_mac());
  ASSERT_FALSE(again) << "a fenced compute id opened a connection";
  EXPECT_EQ(again.status().code(), Errc::kFenced) << again.status().to_string();
  auto other = connect(10);
  ASSERT_TRUE(other);
  EXPECT_EQ(faa_sync(*other, counter, 1).value, at_fence);
  EXPECT_EQ(faa_sync(*c, counter, 1).value, at_fence + 1);
  EXPECT_EQ(c->health(), Errc::kOk);

  // Fencing is idempotent; id 0 is never issued and cannot be fenced.
  EXPECT_TRUE(a->fence(kVictim));
  EXPECT_FALSE(a->fence(0));
}

TEST_P(TransportConformance, FencedConnectionFailsEveryLaterOp) {
  // Same process: the fence is observed by a live connection of ours. On
  // shm the daemon would kill this (test) process, so this runs only on tcp;
  // the shm side is covered by FenceStopsAFencedClientAndKeepsOthers.
  if (backend() == Backend::kShm) GTEST_SKIP() << "the daemon kills fenced shm processes";
  auto victim = connect(11);
  ASSERT_TRUE(victim);
  auto a = admin();
  ASSERT_TRUE(a);
  const uint64_t addr = victim->data_begin() + 8 * 800;
  write_word(*victim, addr, 7);
  ASSERT_TRUE(a->fence(11));
  Completion f = faa_sync(*victim, addr, 1);
  EXPECT_EQ(f.status, Errc::kFenced) << describe(f);
  EXPECT_EQ(victim->health(), Errc::kFenced);
  // Every later op, good or bad, fails the same way.
  uint64_t w = 0;
  victim->post_read(addr, &w, 8, 1);
  victim->post_write(addr, &w, 8, 2);
  victim->post_cas(addr, 7, 8, 3);
  victim->post_faa(addr, 1, 4);
  victim->flush();
  auto got = collect(*victim, 4);
  ASSERT_EQ(got.size(), 4u);
  for (const auto& x : got) EXPECT_EQ(x.status, Errc::kFenced) << describe(x);
  auto other = connect(12);
  ASSERT_TRUE(other);
  EXPECT_EQ(read_word(*other, addr), 7u) << "a fenced FAA changed memory";
}

// --------------------------------------------------------------- restart

TEST_P(TransportConformance, DataSurvivesDaemonRestart) {
  std::vector<uint8_t> first = pattern(100000, 11), second = pattern(50000, 12);
  uint64_t addr1 = 0, addr2 = 0;
  {
    auto c = connect(1);
    ASSERT_TRUE(c);
    addr1 = c->data_begin() + 1001;
    addr2 = c->data_begin() + 300007;
    ASSERT_EQ(write_sync(*c, addr1, first.data(), static_cast<uint32_t>(first.size())).status, Errc::kOk);

    // Clean stop: the old connection must fail with kDisconnected, not hang.
    ASSERT_EQ(memd_->stop(), 0) << memd_->stderr_text();
    const auto deadline = Clock::now() + 5s;
    Completion r{};
    std::vector<uint8_t> tmp(16);
    do {
      r = read_sync(*c, addr1, tmp.data(), 16);
      if (r.status != Errc::kOk) break;
      std::this_thread::sleep_for(2ms);  // shm notices the closed session on a later flush
    } while (Clock::now() < deadline);
    EXPECT_EQ(r.status, Errc::kDisconnected) << describe(r);
    EXPECT_EQ(c->health(), Errc::kDisconnected);
  }
  ASSERT_TRUE(memd_->start()) << memd_->last_error();
  {
    auto c = connect(1);
    ASSERT_TRUE(c);
    std::vector<uint8_t> back(first.size());
    ASSERT_EQ(read_sync(*c, addr1, back.data(), static_cast<uint32_t>(back.size())).status, Errc::kOk);
    EXPECT_TRUE(back == first) << "data lost across a clean restart";
    ASSERT_EQ(write_sync(*c, addr2, second.data(), static_cast<uint32_t>(second.size())).status, Errc::kOk);
    ASSERT_EQ(faa_sync(*c, addr1 + 7, 1).status, Errc::kOk);  // addr1+7 is 8-byte aligned

    // Crash: an acknowledged WRITE/FAA must survive kill -9.
    memd_->kill9();
    const auto start = Clock::now();
    const auto deadline = start + 5s;
    Completion r{};
    std::vector<uint8_t> tmp(16);
    do {
      r = read_sync(*c, addr2, tmp.data(), 16);
      if (r.status != Errc::kOk) break;
      std::this_thread::sleep_for(2ms);
    } while (Clock::now() < deadline);
    EXPECT_EQ(r.status, Errc::kDisconnected) << describe(r);
    EXPECT_LT(Clock::now() - start, 5s);
  }
  ASSERT_TRUE(memd_->restart()) << memd_->last_error();
  {
    auto c = connect(1);
    ASSERT_TRUE(c);
    std::vector<uint8_t> back2(second.size());
    ASSERT_EQ(read_sync(*c, addr2, back2.data(), static_cast<uint32_t>(back2.size())).status, Errc::kOk);
    EXPECT_TRUE(back2 == second) << "acknowledged WRITE lost by kill -9";
    uint64_t w = 0;
    std::memcpy(&w, &first[7], 8);
    EXPECT_EQ(read_word(*c, addr1 + 7), w + 1) << "acknowledged FAA lost by kill -9";
  }
}

// --------------------------------------------------------------- timeout

TEST_P(TransportConformance, FrozenDaemon) {
  constexpr auto kOpTimeout = 500ms;
  auto c = connect(1, kOpTimeout);
  ASSERT_TRUE(c);
  const uint64_t addr = c->data_begin() + 8 * 900;
  write_word(*c, addr, 1);

  ContinueOnExit resume{memd_->pid()};
  ASSERT_TRUE(stop_process(memd_->pid(), 5s)) << "could not freeze pandora-memd";

  c->post_faa(addr, 1, 77);
  const auto start = Clock::now();
  c->flush();
  auto got = collect(*c, 1, 10s);
  const auto elapsed = Clock::now() - start;
  ASSERT_EQ(got.size(), 1u) << "no completion while the daemon is frozen";
  EXPECT_EQ(got[0].wr_id, 77u);
  if (backend() == Backend::kTcp) {
    EXPECT_EQ(got[0].status, Errc::kTimeout) << describe(got[0]);
    EXPECT_GE(elapsed, kOpTimeout - 50ms);
    EXPECT_LE(elapsed, kOpTimeout + 1500ms);
    EXPECT_EQ(c->health(), Errc::kTimeout);
    // Broken for good, without waiting again.
    auto t0 = Clock::now();
    EXPECT_EQ(faa_sync(*c, addr, 1).status, Errc::kTimeout);
    EXPECT_LT(Clock::now() - t0, 200ms);
  } else {
    // shm does not involve the daemon in data operations, nor does verbs
    // (the NIC serves them; Soft-RoCE's is in the kernel).
    EXPECT_EQ(got[0].status, Errc::kOk) << describe(got[0]);
    EXPECT_EQ(got[0].value, 1u);
    EXPECT_EQ(c->health(), Errc::kOk);
  }

  ::kill(memd_->pid(), SIGCONT);
  auto fresh = connect(2);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(faa_sync(*fresh, addr + 8, 1).status, Errc::kOk);
}

// ------------------------------------------------------------- handshake

TEST_P(TransportConformance, WrongSecretIsRefused) {
  ClientIdentity id = memd_->identity(5);
  id.secret = "not-the-secret";
  ConnectOptions o;
  o.backend = backend();
  auto r = open_connection(memd_->endpoint(), id, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kAuthFailed) << r.status().to_string();

  ClientIdentity admin_id = memd_->identity(0);
  admin_id.secret = "";
  auto a = ControlClient::connect(memd_->endpoint(), admin_id, 5s);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.status().code(), Errc::kAuthFailed) << a.status().to_string();
}

TEST_P(TransportConformance, WrongClusterIsRefused) {
  ClientIdentity id = memd_->identity(5);
  id.cluster_id += 1;
  ConnectOptions o;
  o.backend = backend();
  auto r = open_connection(memd_->endpoint(), id, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kAuthFailed) << r.status().to_string();
}

TEST_P(TransportConformance, ComputeIdZeroIsRefused) {
  // The client refuses to send it...
  ClientIdentity id = memd_->identity(5);
  id.compute_id = 0;
  ASSERT_EQ(id.role, wire::Role::kCompute);
  ConnectOptions o;
  o.backend = backend();
  auto r = open_connection(memd_->endpoint(), id, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kInvalidArgument) << r.status().to_string();

  // ...and the daemon refuses it too, even with a valid MAC.
  auto sock = net::connect_tcp(memd_->endpoint(), 5s);
  ASSERT_TRUE(sock) << sock.status().to_string();
  const auto deadline = net::deadline_after(5s);
  auto sh = net::recv_control(sock->get(), deadline);
  ASSERT_TRUE(sh) << sh.status().to_string();
  ASSERT_TRUE(std::holds_alternative<wire::ServerHello>(*sh));
  wire::Hello hello;
  hello.cluster_id = id.cluster_id;
  hello.role = wire::Role::kCompute;
  hello.compute_id = 0;
  hello.pid = static_cast<uint32_t>(::getpid());
  std::string input = wire::hello_mac_input(std::get<wire::ServerHello>(*sh).nonce, hello);
  hello.mac = hmac_sha256(std::span(reinterpret_cast<const uint8_t*>(id.secret.data()), id.secret.size()),
                          std::span(reinterpret_cast<const uint8_t*>(input.data()), input.size()));
  ASSERT_TRUE(net::send_control(sock->get(), hello, deadline));
  auto reply = net::recv_control(sock->get(), deadline);
  ASSERT_TRUE(reply) << "daemon closed without an Error: " << reply.status().to_string();
  ASSERT_TRUE(std::holds_alternative<wire::Error>(*reply))
      << "daemon accepted compute id 0 (message type " << static_cast<int>(wire::control_type(*reply)) << ")";
  EXPECT_NE(std::get<wire::Error>(*reply).code, Errc::kOk);
  // And closes the session.
  uint8_t byte;
  Status after = net::recv_exact(sock->get(), std::span(&byte, 1), deadline);
  EXPECT_EQ(after.code(), Errc::kDisconnected) << after.to_string();
}

TEST_P(TransportConformance, AdminSessionHasNoDataPlane) {
  ConnectOptions o;
  o.backend = backend();
  auto r = open_connection(memd_->endpoint(), memd_->identity(0), o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);

  auto a = admin();
  ASSERT_TRUE(a);
  wire::SetupVerbs verbs;  // well-formed, so only the role can be the reason
  verbs.qp.qpn = 1;
  verbs.qp.mtu = 5;
  verbs.qp.link_layer = 2;
  verbs.max_rd_atomic = 1;
  wire::ControlMessage setup = backend() == Backend::kTcp  ? wire::ControlMessage(wire::SetupTcp{})
                               : backend() == Backend::kShm ? wire::ControlMessage(wire::SetupShm{})
                                                            : wire::ControlMessage(verbs);
  auto reply = a->call(setup);
  ASSERT_FALSE(reply) << "the daemon set up a data plane for an admin session";
  EXPECT_EQ(reply.status().code(), Errc::kInvalidArgument) << reply.status().to_string();
}

TEST_P(TransportConformance, OneVerbsDataPlanePerSession) {
  if (backend() != Backend::kVerbs) GTEST_SKIP() << "verbs only";
  auto cc = ControlClient::connect(memd_->endpoint(), memd_->identity(3), 5s);
  ASSERT_TRUE(cc) << cc.status().to_string();
  auto qp = VerbsConnection::create(VerbsOptions{}, (*cc)->region(), 5s);
  ASSERT_TRUE(qp) << qp.status().to_string();
  auto first = (*cc)->call((*qp)->setup_request());
  ASSERT_TRUE(first) << first.status().to_string();
  ASSERT_TRUE(std::holds_alternative<wire::VerbsInfo>(*first));
  auto second = (*cc)->call((*qp)->setup_request());
  ASSERT_FALSE(second) << "a second queue pair on one session";
  EXPECT_EQ(second.status().code(), Errc::kInvalidArgument) << second.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Backends, TransportConformance,
                         ::testing::Values(TransportParam{Backend::kShm}, TransportParam{Backend::kTcp},
                                           TransportParam{Backend::kTcp, true}, TransportParam{Backend::kVerbs}),
                         [](const ::testing::TestParamInfo<TransportParam>& info) {
                           return std::string(backend_name(info.param.backend)) +
                                  (info.param.frame_mac ? "_frame_mac" : "");
                         });

// ------------------------------------------------------ mixed backends

TEST(TransportConformanceMixed, ShmAndTcpClientsShareAtomicWords) {
  TempDir dir;
  MemdProcess memd(dir.path());
  ASSERT_TRUE(memd.start()) << memd.last_error();
  auto conn = connect_to(memd, 1, Backend::kTcp);
  ASSERT_TRUE(conn) << conn.status().to_string();
  Connection& c = **conn;
  const uint64_t faa_addr = c.data_begin() + 8 * 1000;
  const uint64_t cas_addr = c.data_begin() + 8 * 1001;
  write_word(c, faa_addr, 0);
  write_word(c, cas_addr, 0);
  constexpr int kFaa = 100000, kCas = 10000;
  {
    ChildProcess a = ChildProcess::run([&] { return faa_worker(memd, 2, Backend::kShm, faa_addr, kFaa, 32); });
    ChildProcess b = ChildProcess::run([&] { return faa_worker(memd, 3, Backend::kTcp, faa_addr, kFaa, 32); });
    auto ea = a.wait_for(240s);
    auto eb = b.wait_for(240s);
    ASSERT_TRUE(ea && eb);
    EXPECT_TRUE(ea->exited && ea->code == kChildOk) << describe(*ea);
    EXPECT_TRUE(eb->exited && eb->code == kChildOk) << describe(*eb);
  }
  EXPECT_EQ(read_word(c, faa_addr), 2u * kFaa);
  {
    ChildProcess a = ChildProcess::run([&] { return cas_worker(memd, 4, Backend::kShm, cas_addr, kCas); });
    ChildProcess b = ChildProcess::run([&] { return cas_worker(memd, 5, Backend::kTcp, cas_addr, kCas); });
    auto ea = a.wait_for(240s);
    auto eb = b.wait_for(240s);
    ASSERT_TRUE(ea && eb);
    EXPECT_TRUE(ea->exited && ea->code == kChildOk) << describe(*ea);
    EXPECT_TRUE(eb->exited && eb->code == kChildOk) << describe(*eb);
  }
  EXPECT_EQ(read_word(c, cas_addr), 2u * kCas);
}

}  // namespace
}  // namespace pandora
