// A tiny bank on Pandora, using only the public API (<pandora/pandora.h>):
// create an accounts table, load it, move money between random accounts
// from several threads (one session each), then check no money was made or
// lost. Run it against a local cluster (deploy/local/cluster.sh):
//
//   pandora-bank-example --memory-nodes HOST:PORT,... --cluster-id N --secret-file F --compute-id 1
//                        [--transport tcp|shm] [--accounts 1000] [--threads 4] [--transfers 2000]
#include <pandora/pandora.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kAccounts = 1;
constexpr int64_t kInitialBalance = 1000;

int64_t balance_of(std::span<const uint8_t> v) {
  int64_t b;
  std::memcpy(&b, v.data(), sizeof b);
  return b;
}
void set_balance(std::span<uint8_t> v, int64_t b) { std::memcpy(v.data(), &b, sizeof b); }

int usage(const char* why) {
  std::fprintf(stderr, "%s\nusage: pandora-bank-example --memory-nodes HOST:PORT,... --cluster-id N --secret-file F "
               "--compute-id ID [--transport tcp|shm] [--accounts N] [--threads N] [--transfers N]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags{{"--transport", "tcp"}, {"--accounts", "1000"},
                                           {"--threads", "4"}, {"--transfers", "2000"}};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help")) return usage("A small bank service on the Pandora client API."), 0;
    if (i + 1 >= argc || std::strncmp(argv[i], "--", 2)) return usage("flags come as --name value");
    flags[argv[i]] = argv[i + 1];
    ++i;
  }
  for (const char* f : {"--memory-nodes", "--cluster-id", "--secret-file", "--compute-id"}) {
    if (!flags.count(f)) return usage((std::string("missing ") + f).c_str());
  }
  pandora::ClientOptions o;
  o.memory_nodes = flags["--memory-nodes"];
  o.cluster_id = std::strtoull(flags["--cluster-id"].c_str(), nullptr, 0);
  o.secret_file = flags["--secret-file"];
  o.compute_id = static_cast<uint16_t>(std::atoi(flags["--compute-id"].c_str()));
  o.transport = flags["--transport"];
  const uint64_t accounts = std::strtoull(flags["--accounts"].c_str(), nullptr, 10);
  const int threads = std::atoi(flags["--threads"].c_str());
  const int transfers = std::atoi(flags["--transfers"].c_str());
  if (accounts < 2 || threads < 1 || transfers < 0) return usage("--accounts >= 2, --threads >= 1, --transfers >= 0");
  o.max_sessions = static_cast<uint32_t>(threads);

  auto client = pandora::Client::connect(o);
  if (!client) return std::fprintf(stderr, "connect: %s\n", client.status().to_string().c_str()), 1;

  const pandora::TableSpec table{kAccounts, "accounts", 16, accounts};
  if (auto s = (*client)->create_tables({&table, 1}, /*replace_existing=*/true); !s) {
    return std::fprintf(stderr, "create_tables: %s\n", s.to_string().c_str()), 1;
  }
  auto loader = (*client)->loader();
  if (!loader) return std::fprintf(stderr, "loader: %s\n", loader.status().to_string().c_str()), 1;
  std::vector<uint8_t> row(16, 0);
  for (uint64_t a = 0; a < accounts; ++a) {
    set_balance(row, kInitialBalance);
    if (auto s = (*loader)->add(kAccounts, a, row); !s) return std::fprintf(stderr, "load: %s\n", s.to_string().c_str()), 1;
  }
  if (auto s = (*loader)->finish(); !s) return std::fprintf(stderr, "load: %s\n", s.to_string().c_str()), 1;

  // Transfers: each thread with its own session; conflicts are retried.
  std::vector<std::thread> workers;
  std::vector<int> committed(threads, 0), failed(threads, 0);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto session = (*client)->session();
      if (!session) return void(failed[t] = transfers);
      std::mt19937_64 rng(t + 1);
      for (int i = t; i < transfers; i += threads) {
        const uint64_t from = rng() % accounts, to = (from + 1 + rng() % (accounts - 1)) % accounts;
        const int64_t amount = static_cast<int64_t>(rng() % 50);
        auto out = (*session)->transact_retry([&](pandora::Txn& txn) {
          auto a = txn.update(kAccounts, from);
          if (!a) return a.reason();
          if (balance_of(*a) < amount) return pandora::AbortReason::kUser;  // insufficient funds
          auto b = txn.update(kAccounts, to);
          if (!b) return b.reason();
          set_balance(*a, balance_of(*a) - amount);
          set_balance(*b, balance_of(*b) + amount);
          return pandora::AbortReason::kNone;
        });
        (out.committed || out.reason == pandora::AbortReason::kUser ? committed : failed)[t]++;
      }
    });
  }
  for (auto& w : workers) w.join();

  // The audit: one read-only transaction over every account.
  auto session = (*client)->session();
  if (!session) return std::fprintf(stderr, "session: %s\n", session.status().to_string().c_str()), 1;
  int64_t total = 0;
  auto audit = (*session)->transact_retry([&](pandora::Txn& txn) {
    total = 0;
    for (uint64_t a = 0; a < accounts; ++a) {
      auto v = txn.read(kAccounts, a);
      if (!v) return v.reason();
      total += balance_of(*v);
    }
    return pandora::AbortReason::kNone;
  });
  int done = 0, lost = 0;
  for (int t = 0; t < threads; ++t) done += committed[t], lost += failed[t];
  std::printf("pid %u: %d transfers done, %d failed; total money %lld (expected %lld)\n", (*client)->pid(), done, lost,
              static_cast<long long>(total), static_cast<long long>(kInitialBalance * static_cast<int64_t>(accounts)));
  if (!audit.committed) {
    const std::string_view why = pandora::abort_reason_name(audit.reason);
    return std::fprintf(stderr, "audit aborted: %.*s\n", static_cast<int>(why.size()), why.data()), 1;
  }
  return total == kInitialBalance * static_cast<int64_t>(accounts) && lost == 0 ? 0 : 1;
}
