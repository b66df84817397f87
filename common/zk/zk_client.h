// A small C++ face on the ZooKeeper C client (libzookeeper-mt, THREADED):
// one RAII handle per session, synchronous calls bounded by a timeout, and
// errors mapped to Pandora's Status codes with messages that name the
// ensemble and the path.
//
//   ZkOptions o;  o.hosts = "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183";
//   auto zk = ZkClient::connect(o, logger);   // kUnavailable when no server answers in time
//   (*zk)->ensure_path("/pandora/config");
//   auto node = (*zk)->get("/pandora/config"); // node->data, node->stat.version
//   (*zk)->set("/pandora/config", "x", node->stat.version);  // kConflict if it moved
//
// Error mapping: ZNONODE -> kNotFound, ZNODEEXISTS -> kAlreadyExists,
// ZBADVERSION -> kConflict, ZCONNECTIONLOSS / ZOPERATIONTIMEOUT / no answer
// within ZkOptions::op_timeout -> kUnavailable (the operation may or may not
// have been applied: callers make their writes idempotent), ZSESSIONEXPIRED
// -> kUnavailable with "session expired" (the handle is dead: reconnect),
// ZNOTEMPTY / ZBADARGUMENTS -> kInvalidArgument, ZNOAUTH -> kAuthFailed,
// anything else -> kIo. Every message contains the path and the ZooKeeper
// error name (zerror()).
//
// Watches are one-shot, as in ZooKeeper: the callback runs once, on the
// client's completion thread, when the watched node (or its child list)
// changes or the session state changes; it must not block (post work to
// your own thread) and may call back into the client only asynchronously
// (i.e. not wait on a synchronous call from inside the callback). Re-arm by
// calling watch_* again. After the handle is destroyed no callback runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/logger.h"
#include "common/status.h"

namespace pandora::zk {

// A ZooKeeper "digest" identity. With one, every node this client creates
// is readable by anyone but changeable only by sessions that authenticated
// as the same identity (ACL world:anyone:r + auth:cdrwa): a process on the
// host that can reach the ensemble but lacks the cluster secret cannot
// publish a live pid as failed, delete a recovery record or take a lease.
struct DigestAuth {
  std::string user;
  std::string password;  // never logged
};

struct ZkOptions {
  // "host:port,host:port,..." (the ensemble's client ports).
  std::string hosts;
  // Authenticate the session with this identity and protect every node it
  // creates (see DigestAuth); none: nodes are created open to everyone.
  std::optional<DigestAuth> auth;
  // ZooKeeper session timeout negotiated with the servers (the server
  // clamps it to [2, 20] x tickTime). An ephemeral node vanishes this long
  // after its owner dies.
  std::chrono::milliseconds session_timeout{4000};
  // How long connect() waits for the first server to accept the session.
  std::chrono::milliseconds connect_timeout{5000};
  // Bound on every synchronous call.
  std::chrono::milliseconds op_timeout{5000};
};

enum class CreateMode : uint8_t {
  kPersistent,
  kEphemeral,
  kPersistentSequential,
  kEphemeralSequential,
};

struct Stat {
  int32_t version = 0;          // data version
  int32_t cversion = 0;         // child-list version
  int64_t czxid = 0;
  int64_t mzxid = 0;
  int64_t ephemeral_owner = 0;  // session id owning an ephemeral node, 0 otherwise
  int32_t num_children = 0;
  int32_t data_length = 0;
};

struct Node {
  std::string data;
  Stat stat;
};

// One operation of an atomic multi(): all apply or none does.
struct Op {
  enum class Kind : uint8_t { kCreate, kSet, kRemove, kCheck } kind = Kind::kCheck;
  std::string path;
  std::string data;             // kCreate, kSet
  CreateMode mode = CreateMode::kPersistent;  // kCreate
  int32_t version = -1;         // kSet, kRemove, kCheck: expected version, -1 = any

  static Op create(std::string path, std::string data, CreateMode mode = CreateMode::kPersistent);
  static Op set(std::string path, std::string data, int32_t version = -1);
  static Op remove(std::string path, int32_t version = -1);
  static Op check(std::string path, int32_t version);
};

// What a client has sent (for tests and measurements of the critical path).
struct ZkClientStats {
  uint64_t writes_waited = 0;  // create/set/remove/multi calls (each waits for its answer)
  uint64_t gets_waited = 0;    // get calls and get_many batches (each about one round trip)
};

// Session state changes, reported to the optional session callback.
enum class SessionEvent : uint8_t { kConnected, kConnecting, kExpired, kAuthFailed };

class ZkClient {
 public:
  // Opens a session and waits (up to options.connect_timeout) until it is
  // connected. kUnavailable, naming the hosts, when no server answers;
  // kInvalidArgument for an empty or malformed host list. `on_session`
  // (optional) is called on state changes for the life of the handle.
  static Result<std::unique_ptr<ZkClient>> connect(const ZkOptions& options, const Logger& logger,
                                                   std::function<void(SessionEvent)> on_session = {});
  ~ZkClient();  // closes the session (its ephemeral nodes go at once)
  ZkClient(const ZkClient&) = delete;
  ZkClient& operator=(const ZkClient&) = delete;

  // Returns the created path (with the sequence suffix for sequential modes).
  Result<std::string> create(std::string_view path, std::string_view data, CreateMode mode = CreateMode::kPersistent);
  Result<Node> get(std::string_view path);
  // Several gets in one round: every request is sent before any answer is
  // awaited (the server answers one session's requests in order), so n
  // reads cost about one round trip, not n. One result per path, in order
  // (kNotFound for a missing node), all within one op_timeout.
  // `meanwhile`, if given, runs once on the calling thread after every get
  // was sent and before any answer is awaited: work that needs no answer
  // overlaps the round trip (the recovery coordinator's fence).
  std::vector<Result<Node>> get_many(std::span<const std::string> paths,
                                     const std::function<void()>& meanwhile = {});
  Status set(std::string_view path, std::string_view data, int32_t expected_version = -1);
  Status remove(std::string_view path, int32_t expected_version = -1);
  // false when the node does not exist.
  Result<bool> exists(std::string_view path);
  // Child names (not full paths), sorted.
  Result<std::vector<std::string>> children(std::string_view path);
  // Creates `path` and every missing ancestor as empty persistent nodes;
  // ok when it exists already.
  Status ensure_path(std::string_view path);
  // Atomic multi-op. On failure the Status names the first failing op
  // (index and path) and its error.
  Status multi(std::span<const Op> ops);

  // Guarded writes. While a guard is set, every write of this client
  // (create, set, remove, multi, and the creates of ensure_path) goes to
  // ZooKeeper as one multi whose first op checks that the guard node
  // exists: once that node is gone, none of them applies, whatever this
  // process was doing when it went. The failure detector's leader guards
  // its writes with its own election node, so a replica that deposes it by
  // deleting that node - while the old leader's session lives on: a process
  // stopped or cut off, not dead - knows that nothing the old leader writes
  // afterwards lands (recovery/fd_replica.h). A write refused so fails with
  // kFenced, naming the guard ("nothing applied"); a caller's own failing
  // op is reported as without a guard (op indexes are the caller's).
  void guard_writes(std::string path);
  void clear_write_guard();
  std::optional<std::string> write_guard() const;

  // Whether anyone but this client's identity may change `path` (create
  // children, write, delete children, change its ACL): true when its ACL
  // grants more than READ to any identity other than the digest one this
  // session authenticated as (or to anyone, without auth).
  Result<bool> writable_by_others(std::string_view path);

  // As get/children/exists, and arms a one-shot watch (see above).
  Result<Node> watch_get(std::string_view path, std::function<void()> on_change);
  Result<std::vector<std::string>> watch_children(std::string_view path, std::function<void()> on_change);
  Result<bool> watch_exists(std::string_view path, std::function<void()> on_change);

  bool connected() const;
  // The session is over for good (expired, or authentication failed):
  // every call fails; the owner must connect a new client.
  bool expired() const;
  int64_t session_id() const;
  const std::string& hosts() const;
  ZkClientStats stats() const;

 private:
  struct Impl;
  explicit ZkClient(std::unique_ptr<Impl> impl);
  // multi() with `guard` (write_guard(), read once by the caller), if any,
  // checked first; `created` (may be null) gets the path the first caller
  // op created.
  Status guarded_multi(std::span<const Op> ops, const std::optional<std::string>& guard, std::string* created);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pandora::zk
