// Connecting an application to a Pandora cluster.
//
//   pandora::ClientOptions o;
//   o.memory_nodes = "127.0.0.1:7001,127.0.0.1:7002";   // or o.zookeeper = "127.0.0.1:2181,..."
//   o.compute_id = 1;                                    // static cluster only
//   o.cluster_id = 42;
//   o.secret_file = "/path/to/secret";
//   auto client = pandora::Client::connect(o);           // Result<std::unique_ptr<Client>>
//   if (!client) { fprintf(stderr, "%s\n", client.status().to_string().c_str()); return 1; }
//   auto session = (*client)->session();                 // one per thread (pandora/session.h)
//
// A process is one compute node with one pid. Two ways to join:
//  - static: `memory_nodes` + `compute_id`. You guarantee that no other
//    live process uses the same compute id; nothing watches this process,
//    so if it dies, its latches stay until `pandora-ctl recover <pid>`.
//  - managed: `zookeeper` (+ cluster id and secret). The registry assigns
//    the pid and log lanes, the failure detector (pandora-fd) watches this
//    process by heartbeats and recovers it if it dies, and the memory node
//    list comes from the cluster record. The library's heartbeat thread
//    asks for SCHED_FIFO (lowest priority; else nice -10) where the process
//    may have it: it sleeps between heartbeats, and a heartbeat delayed
//    past the detector's timeout gets a live process fenced.
// Either way the library assigns every session its coordinator and log
// lane; an application never picks one. On a managed ford cluster, when
// another compute node fails, recovery stops the world: a session's next
// transact()/run() waits until the pause is over (the process keeps
// running; calls already inside a transaction finish first).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pandora/session.h"
#include "pandora/status.h"
#include "pandora/table.h"

namespace pandora {

namespace detail {
struct ClientState;  // the implementation's; shared by a Client and its sessions
}  // namespace detail

struct ClientOptions {
  std::string memory_nodes;          // "HOST:PORT,..." control endpoints of pandora-memd (static mode)
  uint16_t compute_id = 0;           // static mode: this process's pid, 1..65535
  std::string zookeeper;             // "HOST:PORT,..." (managed mode; then leave the two above empty)
  std::string zk_root = "/pandora";  // managed mode: the cluster's ZooKeeper root
  uint64_t cluster_id = 0;           // required: the cluster's id (pandora-memd --cluster-id)
  std::string secret_file;           // required: the cluster secret (a file readable only by its owner)
  std::string protocol = "pandora";  // "pandora" | "ford" | "log-a-latch": the cluster's protocol
  std::string transport = "tcp";     // "shm" (same host) | "tcp" | "verbs" (RDMA)
  uint32_t replicas = 0;             // f+1 copies of every row; 0: min(2, memory nodes)
  uint32_t max_sessions = 4;         // sessions open at once; each holds one log lane
  uint32_t op_timeout_ms = 5000;     // a remote operation not answered by then fails the transaction
  std::string log_level = "warn";    // "debug" | "info" | "warn" | "error" | "off" (to stderr)
};

class Client {
 public:
  // Validates the options (kInvalidArgument naming the field), joins the
  // cluster and connects to every memory node; reads the table directory
  // when the tables exist (create_tables() otherwise).
  static Result<std::unique_ptr<Client>> connect(const ClientOptions& options);

  // Leaves the cluster cleanly (managed mode) once the last session is
  // gone; sessions may outlive the Client object.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // This process's pid in the cluster.
  uint16_t pid() const;
  // The failure detector declared this process failed and the memory
  // nodes refuse it: every transaction aborts with kTransport from now on.
  // Restart the process (it joins under a new pid).
  bool fenced() const;

  // Creates the tables (every memory node; kInvalidArgument when they do
  // not fit, kMismatch when tables exist and !replace_existing).
  Status create_tables(std::span<const TableSpec> tables, bool replace_existing = false);
  // The tables as created (expected_rows as planned); empty before creation.
  std::vector<TableSpec> tables() const;
  // A loader for freshly created tables: nothing else may write meanwhile.
  Result<std::unique_ptr<BulkLoader>> loader();

  // A new session; kUnavailable when max_sessions are open, kInvalidArgument
  // before the tables exist.
  Result<std::unique_ptr<Session>> session();

 private:
  explicit Client(std::shared_ptr<detail::ClientState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::ClientState> state_;
};

}  // namespace pandora
