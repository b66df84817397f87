// host:port endpoints for daemons and clients.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace pandora {

struct Endpoint {
  std::string host;   // numeric IPv4/IPv6 address or "localhost"
  uint16_t port = 0;  // 0 when listening means "pick a free port"

  std::string to_string() const;  // "127.0.0.1:7000", "[::1]:7000"
  bool operator==(const Endpoint&) const = default;
};

// A memory node the failure detector declared failed: out of the
// configuration for good (its shards are served by their other replicas;
// nothing re-replicates them yet). Held by the cluster record
// (recovery/registry.h) and handed to compute nodes as it is
// (ComputeConfig::failed_memory_nodes).
struct FailedMemoryNode {
  uint32_t node_id = 0;
  Endpoint endpoint;
  bool operator==(const FailedMemoryNode&) const = default;
};

// Parses "HOST:PORT" or "[IPV6]:PORT". Rejects names other than localhost
// (we never resolve DNS: a typo must not send traffic somewhere unexpected).
Result<Endpoint> parse_endpoint(std::string_view text);

}  // namespace pandora
