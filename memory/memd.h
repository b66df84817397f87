// pandora-memd assembly: configuration, option declaration and the run loop.
//
//   MemdConfig cfg;
//   OptionSet opts("pandora-memd", "...");
//   declare_options(opts, cfg);
//   ... opts.parse(argc, argv, &msg) ...
//   return run(cfg, opts);
//
// run() opens (or creates) the region, starts the tcp data plane, the verbs
// data plane (when an RDMA device is there, see MemdConfig::verbs) and the
// control server, writes the port file, heartbeats the failure-detector
// replicas named by --fd-replicas (common/heartbeat_sender.h; kind memory,
// id = node id) and serves until SIGTERM/SIGINT
// (received through a signalfd: no global state). Then it stops accepting,
// lets data-plane threads finish their current batch, closes connections,
// marks the region clean, persists, unmaps and returns kExitOk. Failures
// return the codes of memory/exit_codes.h with a message on stderr.
#pragma once

#include <cstdint>
#include <string>

#include "common/options.h"
#include "common/transport/verbs_device.h"

namespace pandora::memd {

struct MemdConfig {
  std::string pm_path;
  std::string size;  // empty: not given (parsed in run() so --help shows no bogus default)
  uint64_t node_id = 0;
  uint64_t cluster_id = 0;
  std::string secret_file;
  std::string listen = "127.0.0.1:7000";
  std::string port_file;
  uint64_t log_size = 16ull << 20;
  uint64_t threads = 1;
  bool format = false;
  bool allow_unsafe_region_permissions = false;
  std::string log_level = "info";
  uint64_t exit_with_pid = 0;  // 0: off
  uint64_t busy_poll_us = 0;   // 0: data-plane threads sleep in epoll_wait at once
  std::string fd_replicas;     // HOST:PORT,... of the FD replicas to heartbeat; empty: none
  uint64_t fd_heartbeat_us = 1000;
  // Connections that have not logged in yet (memory/control_server.h).
  uint64_t handshake_timeout_ms = 3000;
  uint64_t max_handshakes = 1024;
  uint64_t max_handshakes_per_peer = 128;
  // The verbs data plane: "auto" serves it when the host has an RDMA device
  // with an active port, "on" requires one, "off" never opens a device.
  std::string verbs = "auto";
  VerbsFlags rdma;
};

// Binds every flag of pandora-memd to `cfg`.
void declare_options(OptionSet& opts, MemdConfig& cfg);

// Runs the daemon; returns the process exit code. `opts` is the parsed set
// (used to tell given options from defaults).
int run(const MemdConfig& cfg, const OptionSet& opts);

// The whole program: parse argv (printing help or errors), then run().
int memd_main(int argc, const char* const* argv);

}  // namespace pandora::memd
