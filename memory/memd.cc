#include "memory/memd.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/endpoint.h"
#include "common/heartbeat_sender.h"
#include "common/transport/fd_passing.h"
#include "common/logger.h"
#include "common/secret.h"
#include "memory/control_server.h"
#include "memory/exit_codes.h"
#include "memory/fence_table.h"
#include "memory/region.h"
#include "memory/shm_fd_server.h"
#include "memory/tcp_data_plane.h"
#include "memory/verbs_server.h"

namespace pandora::memd {
namespace {

// Writes "PORT\n" to `path` atomically (common/atomic_file.h: no symlink
// planted in the directory is followed), so a reader never sees a partial
// number.
Status write_port_file(const std::string& path, uint16_t port) {
  Status s = write_file_atomically(path, fmt::format("{}\n", port));
  if (!s) return Status(s.code(), "--port-file: " + s.message());
  return s;
}

// Shutdown requests arrive on a signalfd: SIGTERM/SIGINT are blocked in every
// thread (the mask is set before any thread starts and is inherited).
class ShutdownSignals {
 public:
  ShutdownSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    fd_ = ::signalfd(-1, &set_, SFD_NONBLOCK | SFD_CLOEXEC);
  }
  ~ShutdownSignals() {
    if (fd_ >= 0) ::close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  int fd() const { return fd_; }
  // Name of the signal received, for the log.
  std::string take() const {
    signalfd_siginfo si{};
    if (::read(fd_, &si, sizeof(si)) != sizeof(si)) return "signal";
    return si.ssi_signo == SIGTERM ? "SIGTERM" : si.ssi_signo == SIGINT ? "SIGINT" : "signal";
  }

 private:
  sigset_t set_{}, old_{};
  int fd_ = -1;
};

// --exit-with-pid: a pidfd becomes readable when the process ends, whoever
// its parent is; the watcher then asks for the usual clean shutdown by
// sending SIGTERM to this process (blocked in every thread, read from the
// signalfd by the control loop). The thread is detached: the process ends
// around it.
Status watch_process(pid_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return Status(Errc::kInvalidArgument, fmt::format("cannot watch process: {}", strerror(errno)));
  std::thread([fd] {
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    ::kill(::getpid(), SIGTERM);
  }).detach();
  return Status();
}

}  // namespace

void declare_options(OptionSet& opts, MemdConfig& cfg) {
  opts.add_string("pm-path", &cfg.pm_path,
                  "region file: a DAX file on persistent memory, else a file on /dev/shm or disk", true);
  opts.add_string("size", &cfg.size,
                "region size (e.g. 64M, 1G); required to create the region, must match an existing one");
  opts.add_u64("node-id", &cfg.node_id, "memory-node id within the cluster", 0, 65535, true);
  opts.add_u64("cluster-id", &cfg.cluster_id, "cluster id (decimal or 0x hex)", 1, UINT64_MAX, true);
  opts.add_string("secret-file", &cfg.secret_file,
                  "file holding the cluster secret (keep it private: mode 0600)", true);
  opts.add_string("listen", &cfg.listen, "HOST:PORT to listen on (port 0 picks a free port)");
  opts.add_string("port-file", &cfg.port_file,
                  "after listening, write the bound port number here (atomically)");
  opts.add_size("log-size", &cfg.log_size,
                "size of the log area at the end of the region (set when the region is created)");
  opts.add_u64("threads", &cfg.threads, "tcp data-plane threads", 1, TcpDataPlane::kMaxThreads);
  opts.add_flag("format", &cfg.format,
                "format an existing file whose first 4K are all zero (e.g. a fresh DAX device); "
                "never touches a file with a non-zero header");
  opts.add_flag("allow-unsafe-region-permissions", &cfg.allow_unsafe_region_permissions,
                "start even if the region file or a directory above it is owned by another user or writable by "
                "group/others (logged as a warning; by default such a region is refused with exit code 10)");
  opts.add_choice("log-level", &cfg.log_level, {"debug", "info", "warn", "error"}, "log verbosity");
  opts.add_u64("busy-poll-us", &cfg.busy_poll_us,
               "tcp data plane: keep polling this many microseconds after the last request before sleeping "
               "(lower round-trip latency at the cost of a busy core per data-plane thread: use it only when "
               "those cores are spare)",
               0, 1000000);
  opts.add_u64("handshake-timeout-ms", &cfg.handshake_timeout_ms,
               "a client that has not logged in this many milliseconds after connecting is dropped", 100, 600000);
  opts.add_u64("max-handshakes", &cfg.max_handshakes,
               "connections that have not logged in yet, in total; beyond it the oldest pending one of the busiest "
               "peer address is dropped (new connections are never refused)",
               1, 1000000);
  opts.add_u64("max-handshakes-per-peer", &cfg.max_handshakes_per_peer,
               "connections from one IP address that have not logged in yet; beyond it that address's oldest "
               "pending one is dropped",
               1, 1000000);
  opts.add_string("fd-replicas", &cfg.fd_replicas,
                  "HOST:PORT,... of the failure-detector replicas: heartbeat each of them (UDP, authenticated with "
                  "the cluster secret) so that they detect this node's failure (empty: no heartbeats)");
  opts.add_u64("fd-heartbeat-us", &cfg.fd_heartbeat_us,
               "microseconds between heartbeats to the --fd-replicas (keep well below their timeout, 5 ms by default)",
               100, 1000000);
  opts.add_choice("verbs", &cfg.verbs, {"auto", "on", "off"},
                  "verbs (RDMA) data plane: auto serves it when this host has an RDMA device with an active port, on "
                  "refuses to start without one (exit 8), off never opens a device");
  cfg.rdma.declare(opts);
  opts.add_u64("exit-with-pid", &cfg.exit_with_pid,
               "shut down cleanly (as on SIGTERM) when process PID ends - for test harnesses and supervisors that "
               "must not leave daemons behind if they die (0: off)",
               0, INT32_MAX);
}

int run(const MemdConfig& cfg, const OptionSet& opts) {
  LogLevel level = LogLevel::kInfo;
  parse_log_level(cfg.log_level, &level);
  Logger log("memd", level);
  auto usage_error = [&](const std::string& msg) {
    log.error("{}", msg);
    return kExitUsage;
  };

  Result<Endpoint> listen_ep = parse_endpoint(cfg.listen);
  if (!listen_ep) return usage_error("--listen " + cfg.listen + ": " + listen_ep.status().message());

  std::optional<uint64_t> size;
  if (!cfg.size.empty()) {
    Result<uint64_t> parsed = parse_size(cfg.size);
    if (!parsed) return usage_error("--size " + cfg.size + ": " + parsed.status().message());
    size = *parsed;
  }

  std::vector<Endpoint> fd_replicas;
  for (size_t at = 0; at < cfg.fd_replicas.size();) {
    size_t comma = cfg.fd_replicas.find(',', at);
    if (comma == std::string::npos) comma = cfg.fd_replicas.size();
    Result<Endpoint> ep = parse_endpoint(std::string_view(cfg.fd_replicas).substr(at, comma - at));
    if (!ep) return usage_error("--fd-replicas " + cfg.fd_replicas + ": " + ep.status().message());
    fd_replicas.push_back(std::move(ep.value()));
    at = comma + 1;
  }

  Result<VerbsOptions> verbs_options = cfg.rdma.to_options();
  if (!verbs_options) return usage_error(verbs_options.status().message());

  Result<std::string> secret = read_secret_file(cfg.secret_file);
  if (!secret) return usage_error("--secret-file: " + secret.status().message());

  // Before any thread exists, so every thread inherits the blocked mask.
  ShutdownSignals signals;
  if (signals.fd() < 0) {
    log.error("signalfd: {}", strerror(errno));
    return kExitIo;
  }
  if (cfg.exit_with_pid != 0) {
    if (Status s = watch_process(static_cast<pid_t>(cfg.exit_with_pid)); !s) {
      return usage_error("--exit-with-pid " + std::to_string(cfg.exit_with_pid) + ": " + s.message());
    }
  }
  ::signal(SIGPIPE, SIG_IGN);  // sockets use MSG_NOSIGNAL; this covers everything else
  // Growing a file past RLIMIT_FSIZE (ulimit -f) must be an error (EFBIG,
  // reported as disk full with exit code 8), not a silent death that leaves
  // a temporary file behind.
  ::signal(SIGXFSZ, SIG_IGN);
  // Every compute thread holds a connection: use all the descriptors we may.
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }

  RegionOptions ro;
  ro.path = cfg.pm_path;
  if (size) ro.size = *size;
  ro.log_size = cfg.log_size;
  ro.log_size_given = opts.was_set("log-size");
  ro.cluster_id = cfg.cluster_id;
  ro.node_id = static_cast<uint32_t>(cfg.node_id);
  ro.format_zeroed = cfg.format;
  ro.allow_unsafe_permissions = cfg.allow_unsafe_region_permissions;
  RegionError rerr;
  std::unique_ptr<Region> region = Region::open(ro, log.child("region"), &rerr);
  if (!region) {
    log.error("{}", rerr.message);
    return exit_code_for(rerr.failure);
  }
  if (region->is_pmem()) {
    log.info("persistence: persistent memory (cache-line flush + drain){}",
             getenv("PMEM_IS_PMEM_FORCE") != nullptr ? " [PMEM_IS_PMEM_FORCE set: not durable across reboot]" : "");
  } else {
    log.info("persistence: msync (not persistent memory; correct but slow, not for benchmarks)");
  }

  // Heartbeats start once the daemon serves (below) and stop as soon as it
  // stops serving, so the replicas' view follows the daemon's availability.
  // One incarnation per daemon start, on its heartbeats and in every login
  // reply: the cluster record binds the node id to it (a replacement's old
  // daemon that still runs is then not heard as the node).
  const uint64_t incarnation = random_incarnation();
  HeartbeatSenderOptions hb;
  hb.incarnation = incarnation;
  hb.cluster_id = cfg.cluster_id;
  hb.secret = secret.value();
  hb.kind = wire::SenderKind::kMemory;
  hb.id = static_cast<uint32_t>(cfg.node_id);
  hb.period = std::chrono::microseconds(cfg.fd_heartbeat_us);
  HeartbeatSender heartbeats(std::move(hb), log.child("fd"));
  if (Status s = heartbeats.set_targets(fd_replicas); !s) return usage_error("--fd-replicas: " + s.message());

  FenceTable fences(*region, cfg.threads, log.child("fence"));
  TcpDataPlane data_plane(*region, fences, cfg.threads, log.child("data"),
                          std::chrono::microseconds(cfg.busy_poll_us));
  // shm clients get the region's descriptor over a Unix socket in a
  // private directory next to the region (in $TMPDIR or /tmp when that
  // path would be too long for a Unix socket).
  ShmFdServer::remove_stale_dirs(region->real_path(), log.child("shm"));
  ShmFdServer shm(*region, fences, log.child("shm"));
  std::string shm_dir = region->real_path() + ".shm.XXXXXX";
  if (shm_dir.size() + 1 + std::strlen(ShmFdServer::kSocketName) > net::max_unix_path()) {
    const char* tmpdir = getenv("TMPDIR");
    shm_dir = std::string(tmpdir != nullptr && tmpdir[0] == '/' ? tmpdir : "/tmp") + "/pandora-memd.XXXXXX";
  }
  if (Status s = shm.start(shm_dir); !s) {
    log.error("{}", s.message());
    return kExitIo;
  }
  // The verbs data plane. Declared after the fence table (whose revoker
  // it becomes) and before the control server (which hands it sessions).
  std::unique_ptr<VerbsServer> verbs;
  if (cfg.verbs != "off") {
    Result<std::unique_ptr<VerbsServer>> vs =
        VerbsServer::open(*verbs_options, *region, fences, log.child("verbs"));
    if (vs) {
      verbs = std::move(vs).value();
      fences.set_revoker([v = verbs.get()](uint16_t id) { v->revoke(id); });
      log.info("verbs data plane on {}", verbs->device().describe());
    } else if (cfg.verbs == "on" || vs.status().code() != Errc::kUnsupported) {
      // Asked for, or a device is there but unusable: say so and stop.
      log.error("verbs data plane: {}{}", vs.status().message(),
                cfg.verbs == "on" ? "" : " (--verbs off runs without it)");
      return kExitIo;
    } else {
      log.info("verbs data plane: off ({})", vs.status().message());
    }
  }
  ControlLimits limits;
  limits.handshake_timeout = std::chrono::milliseconds(cfg.handshake_timeout_ms);
  limits.max_handshakes = cfg.max_handshakes;
  limits.max_handshakes_per_peer = cfg.max_handshakes_per_peer;
  ControlServer control(*region, fences, data_plane, shm, verbs.get(), cfg.cluster_id, incarnation,
                        std::move(secret.value()), log.child("control"), limits);
  Result<Endpoint> bound = control.listen(*listen_ep);
  if (!bound) {
    log.error("{}", bound.status().message());
    return bound.status().code() == Errc::kInvalidArgument ? kExitUsage : kExitIo;
  }
  if (Status s = data_plane.start(); !s) {
    log.error("{}", s.message());
    return kExitIo;
  }

  bool unclean = region->mark_running();
  RegionState st = region->state();
  if (unclean) {
    log.warn("region state: start #{}; the previous daemon did not shut down cleanly (unclean starts: {}); data "
             "persisted before each acknowledgement is intact",
             st.start_count, st.unclean_starts);
  } else {
    log.info("region state: start #{} after a clean shutdown (unclean starts: {})", st.start_count,
             st.unclean_starts);
  }
  uint64_t fenced = fences.fenced_count();
  if (fenced > 0) log.info("{} compute node(s) are fenced (fences persist across restarts)", fenced);

  if (!cfg.port_file.empty()) {
    if (Status s = write_port_file(cfg.port_file, bound->port); !s) {
      log.error("{}", s.message());
      data_plane.stop();
      region->mark_clean();
      return kExitIo;
    }
  }
  log.info("serving region {} ({} bytes, node {}, cluster {:#x}) on {} with {} data-plane thread(s), incarnation "
           "{:#x}",
           region->real_path(), region->size(), region->header().node_id, region->header().cluster_id,
           bound->to_string(), cfg.threads, incarnation);

  if (!fd_replicas.empty()) {
    if (Status s = heartbeats.start(); !s) {
      log.error("--fd-replicas: {}", s.message());
      data_plane.stop();
      region->mark_clean();
      return kExitIo;
    }
    log.info("heartbeating {} failure-detector replica(s) every {} us", fd_replicas.size(), cfg.fd_heartbeat_us);
  }

  Status served = control.serve(signals.fd());
  heartbeats.stop();
  int code = kExitOk;
  if (!served) {
    log.error("control plane failed: {}; shutting down", served.message());
    code = kExitIo;
  } else {
    log.info("{} received; shutting down", signals.take());
  }
  shm.stop();
  data_plane.stop();
  wire::StatsReply s = control.stats();
  region->mark_clean();
  log.info("shutdown complete: served {} reads, {} writes, {} cas, {} faa ({} bytes read, {} bytes written), "
           "{} connections, {} fenced ops, {} malformed frames, {} auth failures; region marked clean",
           s.reads, s.writes, s.cas, s.faa, s.bytes_read, s.bytes_written, s.connections_total, s.fenced_ops,
           s.malformed_frames, s.auth_failures);
  return code;
}

int memd_main(int argc, const char* const* argv) {
  MemdConfig cfg;
  OptionSet opts("pandora-memd",
                 "Pandora memory node: serves one persistent region to compute nodes (control plane, tcp data "
                 "plane, fencing).");
  declare_options(opts, cfg);
  std::string message;
  switch (opts.parse(argc, argv, &message)) {
    case OptionSet::Outcome::kHelp:
      std::fputs(message.c_str(), stdout);
      if (!message.empty() && message.back() != '\n') std::fputc('\n', stdout);
      return kExitOk;
    case OptionSet::Outcome::kError:
      std::fprintf(stderr, "pandora-memd: %s\nRun pandora-memd --help for the list of options.\n", message.c_str());
      return kExitUsage;
    case OptionSet::Outcome::kRun:
      break;
  }
  return run(cfg, opts);
}

}  // namespace pandora::memd
