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

// Parses "HOST:PORT" or "[IPV6]:PORT". Rejects names other than localhost
// (we never resolve DNS: a typo must not send traffic somewhere unexpected).
Result<Endpoint> parse_endpoint(std::string_view text);

}  // namespace pandora
