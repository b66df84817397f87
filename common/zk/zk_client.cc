// ZkClient over the ZooKeeper C client's THREADED asynchronous API.
//
// Why asynchronous: the C client's synchronous calls wait without a bound
// when no quorum exists. Every call here is issued with zoo_a*(), and the
// caller waits on the call's own condition variable for at most
// op_timeout.
//
// Lifetime of what the C client holds pointers to: the `data` argument of a
// completion and the context of a watch are plain ids (never pointers), and
// the objects they name live in this client's maps (Impl::calls,
// Impl::watches). A completion or watch that arrives for an id no longer in
// the map (its caller gave up) does nothing. Everything still in the maps is
// freed after zookeeper_close() has joined the C client's threads, so no
// callback runs, and nothing is touched, after ~ZkClient.
#include "common/zk/zk_client.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <tuple>
#include <mutex>
#include <optional>

#include <fmt/format.h>

namespace pandora::zk {

Op Op::create(std::string path, std::string data, CreateMode mode) {
  Op op;
  op.kind = Kind::kCreate;
  op.path = std::move(path);
  op.data = std::move(data);
  op.mode = mode;
  return op;
}

Op Op::set(std::string path, std::string data, int32_t version) {
  Op op;
  op.kind = Kind::kSet;
  op.path = std::move(path);
  op.data = std::move(data);
  op.version = version;
  return op;
}

Op Op::remove(std::string path, int32_t version) {
  Op op;
  op.kind = Kind::kRemove;
  op.path = std::move(path);
  op.version = version;
  return op;
}

Op Op::check(std::string path, int32_t version) {
  Op op;
  op.kind = Kind::kCheck;
  op.path = std::move(path);
  op.version = version;
  return op;
}

namespace {

// The C client logs through a callback without a context argument, so its
// messages (errors only: the level is set to ERROR once) go to the logger of
// the most recent connect(). Never destroyed (the C client's threads may log
// during static destruction).
struct ClientLog {
  std::mutex mu;
  std::optional<Logger> logger;
};

ClientLog& client_log() {
  static ClientLog* log = new ClientLog();
  return *log;
}

void c_client_log(const char* message) {
  std::string_view m(message != nullptr ? message : "");
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
  ClientLog& log = client_log();
  std::lock_guard<std::mutex> lock(log.mu);
  if (log.logger) log.logger->warn("zookeeper client: {}", m);
}

void set_up_c_client_logging(const Logger& logger) {
  static std::once_flag once;
  std::call_once(once, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
  ClientLog& log = client_log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.logger.emplace(logger);
}

int create_flags(CreateMode mode) {
  switch (mode) {
    case CreateMode::kPersistent: return ZOO_PERSISTENT;
    case CreateMode::kEphemeral: return ZOO_EPHEMERAL;
    case CreateMode::kPersistentSequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::kEphemeralSequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

Stat to_stat(const struct ::Stat* s) {
  Stat out;
  if (s == nullptr) return out;
  out.version = s->version;
  out.cversion = s->cversion;
  out.czxid = s->czxid;
  out.mzxid = s->mzxid;
  out.ephemeral_owner = s->ephemeralOwner;
  out.num_children = s->numChildren;
  out.data_length = s->dataLength;
  return out;
}

Errc map_rc(int rc) {
  switch (rc) {
    case ZOK: return Errc::kOk;
    case ZNONODE: return Errc::kNotFound;
    case ZNODEEXISTS: return Errc::kAlreadyExists;
    case ZBADVERSION: return Errc::kConflict;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING:
    case ZSESSIONMOVED:
      return Errc::kUnavailable;
    case ZNOTEMPTY:
    case ZBADARGUMENTS:
      return Errc::kInvalidArgument;
    case ZNOAUTH:
    case ZAUTHFAILED:
      return Errc::kAuthFailed;
    default:
      return Errc::kIo;
  }
}

const char* mode_name(CreateMode mode) {
  switch (mode) {
    case CreateMode::kPersistent: return "persistent";
    case CreateMode::kEphemeral: return "ephemeral";
    case CreateMode::kPersistentSequential: return "persistent-sequential";
    case CreateMode::kEphemeralSequential: return "ephemeral-sequential";
  }
  return "?";
}

const char* op_kind_name(Op::Kind kind) {
  switch (kind) {
    case Op::Kind::kCreate: return "create";
    case Op::Kind::kSet: return "set";
    case Op::Kind::kRemove: return "remove";
    case Op::Kind::kCheck: return "check";
  }
  return "?";
}

// host:port[,host:port...][/chroot], ports 1..65535.
bool valid_hosts(std::string_view hosts) {
  if (hosts.empty()) return false;
  size_t slash = hosts.find('/');
  std::string_view list = hosts.substr(0, slash);
  if (list.empty()) return false;
  while (true) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    size_t colon = item.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 >= item.size()) return false;
    std::string_view port = item.substr(colon + 1);
    if (port.size() > 5) return false;
    unsigned value = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > 65535) return false;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return true;
}

// Set while one of our callbacks runs on the C client's completion thread,
// so a synchronous call from inside a callback fails fast instead of
// waiting out op_timeout (its answer would be delivered by this very
// thread).
thread_local const void* t_in_callback = nullptr;

struct CallbackScope {
  explicit CallbackScope(const void* impl) : prev(t_in_callback) { t_in_callback = impl; }
  ~CallbackScope() { t_in_callback = prev; }
  const void* prev;
};

}  // namespace


struct ZkClient::Impl {
  // One outstanding asynchronous call; `data` of its completion is the
  // Call*. It stays in Impl::calls (which owns it, with the waiting caller)
  // until its completion has run, so the pointer the C client holds is
  // always valid; a call the C client will never complete (submission
  // refused) is removed at once.
  struct Call {
    Impl* impl = nullptr;
    uint64_t watch_id = 0;          // watching call: its watch
    bool watch_on_nonode = false;   // exists: a watch is registered on ZNONODE too
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int rc = ZOK;
    std::string value;  // get: data; create: created path
    Stat stat;
    std::vector<std::string> strings;
    // get_acl: (perms, scheme, id) of each entry.
    std::vector<std::tuple<int32_t, std::string, std::string>> acl;
    // multi: what the C client writes into on completion.
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::vector<char>> path_bufs;
    std::vector<struct ::Stat> stats;
  };

  struct Watch {
    std::function<void()> on_change;
    bool cancelled = false;  // its call timed out: never run on_change
  };

  ZkOptions options;
  Logger logger;
  std::function<void(SessionEvent)> on_session;
  zhandle_t* zh = nullptr;

  std::mutex mu;
  std::condition_variable state_cv;
  int state = 0;
  bool closing = false;
  uint64_t next_watch_id = 1;
  std::map<const Call*, std::shared_ptr<Call>> calls;
  std::map<uint64_t, std::unique_ptr<Watch>> watches;
  std::atomic<uint64_t> writes_waited{0};
  std::atomic<uint64_t> gets_waited{0};
  // guard_writes(); under `mu`.
  std::optional<std::string> write_guard;

  // The ACL of every node this client creates (see DigestAuth): the C
  // client takes non-const pointers, hence the owned buffers.
  char world_scheme[6] = "world";
  char world_id[7] = "anyone";
  char auth_scheme[5] = "auth";
  char auth_id[1] = "";
  ::ACL protected_entries[2] = {{ZOO_PERM_READ, {world_scheme, world_id}}, {ZOO_PERM_ALL, {auth_scheme, auth_id}}};
  ::ACL_vector protected_acl{2, protected_entries};

  ::ACL_vector* create_acl() { return options.auth ? &protected_acl : &ZOO_OPEN_ACL_UNSAFE; }

  Impl(ZkOptions o, Logger l, std::function<void(SessionEvent)> s)
      : options(std::move(o)), logger(std::move(l)), on_session(std::move(s)) {}

  ~Impl() { close(); }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mu);
      closing = true;
    }
    if (zh != nullptr) {
      // Sends the close request when connected (the session's ephemeral
      // nodes go at once), then joins the C client's I/O and completion
      // threads: no callback runs after this returns.
      zookeeper_close(zh);
      zh = nullptr;
    }
  }

  // --- the C client's callbacks ------------------------------------------

  static SessionEvent session_event(int state) {
    if (state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE) return SessionEvent::kConnected;
    if (state == ZOO_EXPIRED_SESSION_STATE) return SessionEvent::kExpired;
    if (state == ZOO_AUTH_FAILED_STATE) return SessionEvent::kAuthFailed;
    return SessionEvent::kConnecting;
  }

  // The session watcher given to zookeeper_init2; context = Impl*.
  static void session_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
    auto* self = static_cast<Impl*>(ctx);
    if (self == nullptr || type != ZOO_SESSION_EVENT) return;
    std::function<void(SessionEvent)> cb;
    {
      std::lock_guard<std::mutex> lock(self->mu);
      self->state = state;
      if (!self->closing) cb = self->on_session;
    }
    self->state_cv.notify_all();
    if (cb) {
      CallbackScope scope(self);
      cb(session_event(state));
    }
  }

  // A node watch (zoo_w* calls); context = watch id, the Impl is the
  // handle's context.
  static void node_watcher(zhandle_t* zh, int type, int state, const char*, void* ctx) {
    auto* self = static_cast<Impl*>(const_cast<void*>(zoo_get_context(zh)));
    if (self == nullptr) return;
    auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ctx));
    std::function<void()> cb;
    {
      std::lock_guard<std::mutex> lock(self->mu);
      auto it = self->watches.find(id);
      if (it == self->watches.end()) return;
      Watch& w = *it->second;
      if (type == ZOO_SESSION_EVENT) {
        // A transient disconnection does not fire a watch: the C client
        // re-arms it on reconnection. Expiry does: it can never fire again.
        if (state != ZOO_EXPIRED_SESSION_STATE && state != ZOO_AUTH_FAILED_STATE) return;
        // The C client keeps the watcher in its tables: leave the (now
        // cancelled) entry until close.
        if (!w.cancelled && !self->closing) cb = std::move(w.on_change);
        w.cancelled = true;
      } else {
        // A node event removes the watcher from the C client's tables, and
        // events are delivered in order on one thread: nothing refers to
        // this id afterwards.
        if (!w.cancelled && !self->closing) cb = std::move(w.on_change);
        self->watches.erase(it);
      }
    }
    if (cb) {
      CallbackScope scope(self);
      cb();
    }
  }

  // Takes the call out of its Impl's map and, for a watching call the C
  // client did not register a watch for, drops the watch.
  static std::shared_ptr<Call> take(const void* data, int rc) {
    auto* c = static_cast<const Call*>(data);
    Impl* self = c->impl;
    std::lock_guard<std::mutex> lock(self->mu);
    auto it = self->calls.find(c);
    if (it == self->calls.end()) return nullptr;
    std::shared_ptr<Call> call = std::move(it->second);
    self->calls.erase(it);
    if (call->watch_id != 0) {
      bool registered = rc == ZOK || (rc == ZNONODE && call->watch_on_nonode);
      if (!registered) self->watches.erase(call->watch_id);
    }
    return call;
  }

  template <typename Fill>
  static void complete(const void* data, int rc, Fill&& fill) {
    std::shared_ptr<Call> call = take(data, rc);
    if (!call) return;
    {
      std::lock_guard<std::mutex> lock(call->mu);
      call->rc = rc;
      fill(*call);
      call->done = true;
    }
    call->cv.notify_all();
  }

  static void void_done(int rc, const void* data) {
    complete(data, rc, [](Call&) {});
  }
  static void stat_done(int rc, const struct ::Stat* stat, const void* data) {
    complete(data, rc, [&](Call& c) { c.stat = to_stat(stat); });
  }
  static void data_done(int rc, const char* value, int value_len, const struct ::Stat* stat, const void* data) {
    complete(data, rc, [&](Call& c) {
      if (rc == ZOK && value != nullptr && value_len > 0) c.value.assign(value, static_cast<size_t>(value_len));
      c.stat = to_stat(stat);
    });
  }
  static void string_done(int rc, const char* value, const void* data) {
    complete(data, rc, [&](Call& c) {
      if (rc == ZOK && value != nullptr) c.value = value;
    });
  }
  static void acl_done(int rc, struct ACL_vector* acl, struct ::Stat*, const void* data) {
    complete(data, rc, [&](Call& c) {
      if (rc != ZOK || acl == nullptr) return;
      for (int32_t i = 0; i < acl->count; ++i) {
        const ::ACL& e = acl->data[i];
        c.acl.emplace_back(e.perms, e.id.scheme ? e.id.scheme : "", e.id.id ? e.id.id : "");
      }
    });
  }
  static void strings_done(int rc, const struct String_vector* strings, const void* data) {
    complete(data, rc, [&](Call& c) {
      if (rc == ZOK && strings != nullptr) {
        c.strings.reserve(static_cast<size_t>(strings->count));
        for (int32_t i = 0; i < strings->count; ++i) c.strings.emplace_back(strings->data[i]);
      }
    });
  }

  // --- issuing calls ------------------------------------------------------

  std::shared_ptr<Call> new_call(uint64_t watch_id = 0, bool watch_on_nonode = false) {
    auto call = std::make_shared<Call>();
    call->impl = this;
    call->watch_id = watch_id;
    call->watch_on_nonode = watch_on_nonode;
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace(call.get(), call);
    return call;
  }

  uint64_t new_watch(std::function<void()> on_change) {
    auto w = std::make_unique<Watch>();
    w->on_change = std::move(on_change);
    std::lock_guard<std::mutex> lock(mu);
    uint64_t id = next_watch_id++;
    watches.emplace(id, std::move(w));
    return id;
  }

  static void* watch_ctx(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }

  Status error(int rc, std::string_view op, std::string_view path) const {
    Errc code = map_rc(rc);
    if (rc == ZSESSIONEXPIRED ||
        (rc == ZINVALIDSTATE && zh != nullptr && zoo_state(zh) == ZOO_EXPIRED_SESSION_STATE)) {
      return Status(Errc::kUnavailable, fmt::format("zookeeper {} {}: session expired ({}) on {}: reconnect", op,
                                                    path, zerror(rc), options.hosts));
    }
    if (code == Errc::kUnavailable) {
      return Status(code, fmt::format("zookeeper {} {}: {} on {} (the operation may or may not have been applied)",
                                      op, path, zerror(rc), options.hosts));
    }
    return Status(code, fmt::format("zookeeper {} {}: {}", op, path, zerror(rc)));
  }

  // Submits with `submit(data)` (the C client's rc) and waits up to
  // op_timeout for the completion (await_call).
  template <typename Submit>
  Status run(std::string_view op, std::string_view path, const std::shared_ptr<Call>& call, Submit&& submit) {
    if (Status s = refuse_in_callback(op, path); !s) {
      forget(call);
      return s;
    }
    if (Status s = submitted(submit(static_cast<const void*>(call.get())), call, op, path); !s) return s;
    return await_call(*call, std::chrono::steady_clock::now() + options.op_timeout, op, path);
  }

  // A synchronous call from a ZooKeeper callback would wait for an answer
  // only that very thread can deliver.
  Status refuse_in_callback(std::string_view op, std::string_view path) const {
    if (t_in_callback != this) return Status::ok();
    return Status(Errc::kInvalidArgument,
                  fmt::format("zookeeper {} {}: synchronous call from inside a ZooKeeper callback (its answer "
                              "would be delivered by this very thread); call from another thread",
                              op, path));
  }

  // The C client's answer `rc` to submitting `call`. Refused before a
  // completion was queued, except ZMARSHALLINGERROR (out of memory after
  // queuing): the call is forgotten, but that one is kept until close.
  Status submitted(int rc, const std::shared_ptr<Call>& call, std::string_view op, std::string_view path) {
    if (rc == ZOK) return Status::ok();
    if (rc != ZMARSHALLINGERROR) forget(call);
    return error(rc, op, path);
  }

  // Waits until `deadline` for a submitted call's completion. On timeout
  // the call stays in the map until its completion arrives (or close), its
  // watch is cancelled, and kUnavailable is returned.
  Status await_call(Call& call, std::chrono::steady_clock::time_point deadline, std::string_view op,
                    std::string_view path) {
    std::unique_lock<std::mutex> lock(call.mu);
    if (!call.cv.wait_until(lock, deadline, [&] { return call.done; })) {
      lock.unlock();
      if (call.watch_id != 0) cancel_watch(call.watch_id);
      return Status(Errc::kUnavailable,
                    fmt::format("zookeeper {} {}: no answer within {} ms ({}) from {} (the operation may or may "
                                "not have been applied)",
                                op, path, options.op_timeout.count(), zerror(ZOPERATIONTIMEOUT), options.hosts));
    }
    if (call.rc != ZOK) return error(call.rc, op, path);
    return Status::ok();
  }

  // A call the C client will never complete.
  void forget(const std::shared_ptr<Call>& call) {
    std::lock_guard<std::mutex> lock(mu);
    calls.erase(call.get());
    if (call->watch_id != 0) watches.erase(call->watch_id);
  }

  void cancel_watch(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = watches.find(id);
    if (it != watches.end()) it->second->cancelled = true;
  }

  Result<Node> get(std::string_view path, std::function<void()>* on_change) {
    std::string p(path);
    uint64_t wid = on_change != nullptr ? new_watch(std::move(*on_change)) : 0;
    auto call = new_call(wid);
    Status s = run(wid ? "watch_get" : "get", path, call, [&](const void* data) {
      return wid ? zoo_awget(zh, p.c_str(), node_watcher, watch_ctx(wid), data_done, data)
                 : zoo_aget(zh, p.c_str(), 0, data_done, data);
    });
    if (!s) return s;
    std::lock_guard<std::mutex> lock(call->mu);
    return Node{std::move(call->value), call->stat};
  }

  Result<std::vector<std::string>> children(std::string_view path, std::function<void()>* on_change) {
    std::string p(path);
    uint64_t wid = on_change != nullptr ? new_watch(std::move(*on_change)) : 0;
    auto call = new_call(wid);
    Status s = run(wid ? "watch_children" : "children", path, call, [&](const void* data) {
      return wid ? zoo_awget_children(zh, p.c_str(), node_watcher, watch_ctx(wid), strings_done, data)
                 : zoo_aget_children(zh, p.c_str(), 0, strings_done, data);
    });
    if (!s) return s;
    std::lock_guard<std::mutex> lock(call->mu);
    std::vector<std::string> out = std::move(call->strings);
    std::sort(out.begin(), out.end());
    return out;
  }

  Result<bool> exists(std::string_view path, std::function<void()>* on_change) {
    std::string p(path);
    uint64_t wid = on_change != nullptr ? new_watch(std::move(*on_change)) : 0;
    auto call = new_call(wid, /*watch_on_nonode=*/true);
    Status s = run(wid ? "watch_exists" : "exists", path, call, [&](const void* data) {
      return wid ? zoo_awexists(zh, p.c_str(), node_watcher, watch_ctx(wid), stat_done, data)
                 : zoo_aexists(zh, p.c_str(), 0, stat_done, data);
    });
    if (s.code() == Errc::kNotFound) return false;
    if (!s) return s;
    return true;
  }
};

ZkClient::ZkClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ZkClient::~ZkClient() = default;

Result<std::unique_ptr<ZkClient>> ZkClient::connect(const ZkOptions& options, const Logger& logger,
                                                    std::function<void(SessionEvent)> on_session) {
  if (!valid_hosts(options.hosts)) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("zookeeper hosts '{}': expected host:port[,host:port...] with ports 1..65535",
                              options.hosts));
  }
  if (options.session_timeout.count() <= 0 || options.connect_timeout.count() <= 0 ||
      options.op_timeout.count() <= 0) {
    return Status(Errc::kInvalidArgument, "zookeeper options: session, connect and op timeouts must be positive");
  }
  set_up_c_client_logging(logger);
  auto impl = std::make_unique<Impl>(options, logger, std::move(on_session));
  errno = 0;
  impl->zh = zookeeper_init2(options.hosts.c_str(), Impl::session_watcher,
                             static_cast<int>(options.session_timeout.count()), nullptr, impl.get(), 0,
                             c_client_log);
  if (impl->zh == nullptr) {
    int err = errno;
    return Status(err == EINVAL ? Errc::kInvalidArgument : Errc::kIo,
                  fmt::format("zookeeper hosts '{}': the client could not be created: {}", options.hosts,
                              err != 0 ? std::strerror(err) : "unknown error"));
  }
  int state = 0;
  {
    std::unique_lock<std::mutex> lock(impl->mu);
    impl->state_cv.wait_for(lock, options.connect_timeout, [&] {
      return impl->state == ZOO_CONNECTED_STATE || impl->state == ZOO_EXPIRED_SESSION_STATE ||
             impl->state == ZOO_AUTH_FAILED_STATE;
    });
    state = impl->state;
  }
  if (state == ZOO_CONNECTED_STATE) {
    logger.debug("zookeeper session 0x{:x} on {}", zoo_client_id(impl->zh)->client_id, options.hosts);
    if (options.auth) {
      // The C client keeps the identity and presents it again on every
      // reconnection of this session.
      if (options.auth->user.empty() || options.auth->user.find(':') != std::string::npos) {
        impl->close();
        return Status(Errc::kInvalidArgument, "zookeeper digest user must be non-empty and hold no ':'");
      }
      const std::string cred = options.auth->user + ":" + options.auth->password;
      auto call = impl->new_call();
      Status s = impl->run("add_auth (digest)", "/", call, [&](const void* d) {
        return zoo_add_auth(impl->zh, "digest", cred.data(), static_cast<int>(cred.size()), Impl::void_done, d);
      });
      if (!s) {
        impl->close();
        return s.code() == Errc::kUnavailable ? s : Status(Errc::kAuthFailed, s.message());
      }
    }
    return std::unique_ptr<ZkClient>(new ZkClient(std::move(impl)));
  }
  impl->close();
  if (state == ZOO_AUTH_FAILED_STATE) {
    return Status(Errc::kAuthFailed, fmt::format("zookeeper {}: authentication failed", options.hosts));
  }
  return Status(Errc::kUnavailable, fmt::format("zookeeper {}: no server accepted a session within {} ms",
                                                options.hosts, options.connect_timeout.count()));
}

void ZkClient::guard_writes(std::string path) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->write_guard = std::move(path);
}

void ZkClient::clear_write_guard() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->write_guard.reset();
}

std::optional<std::string> ZkClient::write_guard() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->write_guard;
}

Result<std::string> ZkClient::create(std::string_view path, std::string_view data, CreateMode mode) {
  if (std::optional<std::string> guard = write_guard()) {
    const Op op = Op::create(std::string(path), std::string(data), mode);
    std::string created;
    if (Status s = guarded_multi({&op, 1}, guard, &created); !s) return s;
    return created;
  }
  Impl& m = *impl_;
  std::string p(path);
  auto call = m.new_call();
  m.writes_waited.fetch_add(1, std::memory_order_relaxed);
  Status s = m.run(fmt::format("create ({})", mode_name(mode)), path, call, [&](const void* d) {
    return zoo_acreate(m.zh, p.c_str(), data.data(), static_cast<int>(data.size()), m.create_acl(),
                       create_flags(mode), Impl::string_done, d);
  });
  if (!s) return s;
  std::lock_guard<std::mutex> lock(call->mu);
  return std::move(call->value);
}

ZkClientStats ZkClient::stats() const {
  return ZkClientStats{.writes_waited = impl_->writes_waited.load(std::memory_order_relaxed),
                       .gets_waited = impl_->gets_waited.load(std::memory_order_relaxed)};
}

Result<Node> ZkClient::get(std::string_view path) {
  impl_->gets_waited.fetch_add(1, std::memory_order_relaxed);
  return impl_->get(path, nullptr);
}

std::vector<Result<Node>> ZkClient::get_many(std::span<const std::string> paths,
                                             const std::function<void()>& meanwhile) {
  Impl& m = *impl_;
  std::vector<Result<Node>> out;
  out.reserve(paths.size());
  if (paths.empty()) {
    if (meanwhile) meanwhile();
    return out;
  }
  m.gets_waited.fetch_add(1, std::memory_order_relaxed);
  if (!m.refuse_in_callback("get", paths.front())) {
    for (const std::string& p : paths) out.push_back(m.refuse_in_callback("get", p));
    if (meanwhile) meanwhile();
    return out;
  }
  std::vector<std::shared_ptr<Impl::Call>> calls;
  std::vector<Status> refused;
  for (const std::string& p : paths) {
    auto call = m.new_call();
    refused.push_back(m.submitted(zoo_aget(m.zh, p.c_str(), 0, Impl::data_done, call.get()), call, "get", p));
    calls.push_back(std::move(call));
  }
  // The answers' deadline starts after `meanwhile`: its time is not theirs.
  if (meanwhile) meanwhile();
  const auto deadline = std::chrono::steady_clock::now() + m.options.op_timeout;
  for (size_t i = 0; i < paths.size(); ++i) {
    Status s = refused[i] ? m.await_call(*calls[i], deadline, "get", paths[i]) : refused[i];
    if (!s) {
      out.push_back(s);
      continue;
    }
    std::lock_guard<std::mutex> lock(calls[i]->mu);
    out.push_back(Node{std::move(calls[i]->value), calls[i]->stat});
  }
  return out;
}

Status ZkClient::set(std::string_view path, std::string_view data, int32_t expected_version) {
  if (std::optional<std::string> guard = write_guard()) {
    const Op op = Op::set(std::string(path), std::string(data), expected_version);
    return guarded_multi({&op, 1}, guard, nullptr);
  }
  Impl& m = *impl_;
  std::string p(path);
  auto call = m.new_call();
  m.writes_waited.fetch_add(1, std::memory_order_relaxed);
  return m.run("set", path, call, [&](const void* d) {
    return zoo_aset(m.zh, p.c_str(), data.data(), static_cast<int>(data.size()), expected_version,
                    Impl::stat_done, d);
  });
}

Status ZkClient::remove(std::string_view path, int32_t expected_version) {
  if (std::optional<std::string> guard = write_guard()) {
    const Op op = Op::remove(std::string(path), expected_version);
    return guarded_multi({&op, 1}, guard, nullptr);
  }
  Impl& m = *impl_;
  std::string p(path);
  auto call = m.new_call();
  m.writes_waited.fetch_add(1, std::memory_order_relaxed);
  return m.run("remove", path, call,
               [&](const void* d) { return zoo_adelete(m.zh, p.c_str(), expected_version, Impl::void_done, d); });
}

Result<bool> ZkClient::exists(std::string_view path) { return impl_->exists(path, nullptr); }

Result<bool> ZkClient::writable_by_others(std::string_view path) {
  Impl& m = *impl_;
  std::string p(path);
  auto call = m.new_call();
  Status s = m.run("get_acl", path, call,
                   [&](const void* d) { return zoo_aget_acl(m.zh, p.c_str(), Impl::acl_done, d); });
  if (!s) return s;
  const std::string mine = m.options.auth ? m.options.auth->user + ":" : std::string();
  std::lock_guard<std::mutex> lock(call->mu);
  for (const auto& [perms, scheme, id] : call->acl) {
    if ((perms & ~ZOO_PERM_READ) == 0) continue;
    // The digest id is "user:base64(sha1(user:password))"; a node created
    // under the same user with another password is caught later: writes
    // under it fail with kAuthFailed.
    if (!mine.empty() && scheme == "digest" && id.rfind(mine, 0) == 0) continue;
    return true;
  }
  return false;
}

Result<std::vector<std::string>> ZkClient::children(std::string_view path) { return impl_->children(path, nullptr); }

Status ZkClient::ensure_path(std::string_view path) {
  if (path.empty() || path.front() != '/' || (path.size() > 1 && path.back() == '/')) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("zookeeper ensure_path '{}': not an absolute path without a trailing '/'", path));
  }
  if (path == "/") return Status::ok();
  auto found = exists(path);
  if (!found) return found.status();
  if (*found) return Status::ok();
  size_t pos = 1;
  while (true) {
    size_t slash = path.find('/', pos);
    std::string_view prefix = path.substr(0, slash);
    auto created = create(prefix, "", CreateMode::kPersistent);
    if (!created && created.status().code() != Errc::kAlreadyExists) return created.status();
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return Status::ok();
}

Status ZkClient::multi(std::span<const Op> ops) { return guarded_multi(ops, write_guard(), nullptr); }

Status ZkClient::guarded_multi(std::span<const Op> caller_ops, const std::optional<std::string>& guard,
                               std::string* created) {
  if (caller_ops.empty()) return Status::ok();
  Impl& m = *impl_;
  // The guard's check goes first: op indexes past it are the caller's + 1.
  std::vector<Op> guarded;
  if (guard) {
    guarded.reserve(caller_ops.size() + 1);
    guarded.push_back(Op::check(*guard, -1));  // -1: any version, but the node must exist
    guarded.insert(guarded.end(), caller_ops.begin(), caller_ops.end());
  }
  const std::span<const Op> ops = guard ? std::span<const Op>(guarded) : caller_ops;
  const size_t first = guard ? 1 : 0;
  // The C client's zoo_amulti, on a session that is already unrecoverable,
  // fails the first op's path check and then frees the uninitialised path
  // of every later op (seen as an ASan bad free of one of our strings): do
  // not hand it a dead session.
  if (expired()) {
    return Status(Errc::kUnavailable, fmt::format("zookeeper multi of {} ops: session expired on {}: reconnect",
                                                  caller_ops.size(), hosts()));
  }
  auto call = m.new_call();
  size_t n = ops.size();
  // Filled before submission, read by the C client at submission and on
  // completion: owned by the call.
  call->ops.resize(n);
  call->results.resize(n);
  call->path_bufs.resize(n);
  call->stats.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    zoo_op_t* z = &call->ops[i];
    switch (op.kind) {
      case Op::Kind::kCreate:
        call->path_bufs[i].assign(op.path.size() + 32, '\0');
        zoo_create_op_init(z, op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                           m.create_acl(), create_flags(op.mode), call->path_bufs[i].data(),
                           static_cast<int>(call->path_bufs[i].size()));
        break;
      case Op::Kind::kSet:
        zoo_set_op_init(z, op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()), op.version,
                        &call->stats[i]);
        break;
      case Op::Kind::kRemove:
        zoo_delete_op_init(z, op.path.c_str(), op.version);
        break;
      case Op::Kind::kCheck:
        zoo_check_op_init(z, op.path.c_str(), op.version);
        break;
    }
  }
  // The ops point into `ops` (the caller's strings), which are serialized
  // at submission; only path_bufs, stats and results are written later.
  std::string what = guard ? fmt::format("multi of {} ops guarded by {}", caller_ops.size(), *guard)
                           : fmt::format("multi of {} ops", n);
  m.writes_waited.fetch_add(1, std::memory_order_relaxed);
  Status s = m.run("multi", what, call, [&](const void* d) {
    return zoo_amulti(m.zh, static_cast<int>(n), call->ops.data(), call->results.data(), Impl::void_done, d);
  });
  if (s) {
    if (created != nullptr && ops[first].kind == Op::Kind::kCreate) {
      std::lock_guard<std::mutex> lock(call->mu);
      *created = call->path_bufs[first].data();  // NUL-terminated by the C client
    }
    return s;
  }
  if (s.code() == Errc::kUnavailable) return s;
  // Name the first failing op: ZooKeeper reports the failing op's error and
  // ZRUNTIMEINCONSISTENCY (or ZOK) for the others.
  std::lock_guard<std::mutex> lock(call->mu);
  for (size_t pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < n; ++i) {
      int err = call->results[i].err;
      if (err == ZOK || (pass == 0 && err == ZRUNTIMEINCONSISTENCY)) continue;
      if (i < first && err == ZNONODE) {
        return Status(Errc::kFenced,
                      fmt::format("zookeeper write refused: its guard {} is gone (this process no longer holds the "
                                  "role it guarded its writes with; nothing applied)",
                                  *guard));
      }
      Status e = i < first ? m.error(err, "write guard check", ops[i].path)
                           : m.error(err, fmt::format("multi op {} ({})", i - first, op_kind_name(ops[i].kind)),
                                     ops[i].path);
      return Status(e.code(), e.message() + " (nothing applied)");
    }
  }
  return Status(s.code(), s.message() + " (nothing applied)");
}

Result<Node> ZkClient::watch_get(std::string_view path, std::function<void()> on_change) {
  return impl_->get(path, &on_change);
}

Result<std::vector<std::string>> ZkClient::watch_children(std::string_view path, std::function<void()> on_change) {
  return impl_->children(path, &on_change);
}

Result<bool> ZkClient::watch_exists(std::string_view path, std::function<void()> on_change) {
  return impl_->exists(path, &on_change);
}

bool ZkClient::connected() const { return zoo_state(impl_->zh) == ZOO_CONNECTED_STATE; }

bool ZkClient::expired() const {
  const int state = zoo_state(impl_->zh);
  return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

int64_t ZkClient::session_id() const {
  const clientid_t* id = zoo_client_id(impl_->zh);
  return id != nullptr ? id->client_id : 0;
}

const std::string& ZkClient::hosts() const { return impl_->options.hosts; }

}  // namespace pandora::zk
