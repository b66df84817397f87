#include "common/endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fmt/format.h>

namespace pandora {
namespace {

Status bad(std::string_view text, std::string_view why) {
  return Status(Errc::kInvalidArgument,
                fmt::format("bad endpoint '{}': {} (expected HOST:PORT, e.g. 127.0.0.1:7000 or [::1]:7000)",
                            text, why));
}

bool is_ipv4(const std::string& host) {
  in_addr a;
  return inet_pton(AF_INET, host.c_str(), &a) == 1;
}

bool is_ipv6(const std::string& host) {
  in6_addr a;
  return inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

}  // namespace

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<Endpoint> parse_endpoint(std::string_view text) {
  std::string_view host;
  std::string_view port;
  bool bracketed = false;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "'[' without a matching ']'");
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty()) return bad(text, "missing ':PORT' after the address");
    if (rest.front() != ':') return bad(text, "expected ':' after ']'");
    port = rest.substr(1);
    bracketed = true;
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad(text, "missing ':PORT'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad(text, "an IPv6 address must be written in brackets, as in [::1]:7000");
    }
  }

  if (host.empty()) return bad(text, "empty host");
  if (port.empty()) return bad(text, "empty port");
  // Only plain decimal digits: no sign, no spaces, no hex. Six digits are
  // enough to tell "too large" from garbage without overflowing.
  if (port.size() > 6) return bad(text, "port must be a number from 0 to 65535");
  uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad(text, fmt::format("port '{}' is not a number", port));
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return bad(text, fmt::format("port {} is out of range (0 to 65535)", value));

  const std::string h(host);
  if (bracketed) {
    if (!is_ipv6(h)) return bad(text, fmt::format("'{}' is not a numeric IPv6 address", h));
  } else if (h != "localhost" && !is_ipv4(h)) {
    return bad(text, fmt::format("'{}' is not a numeric IPv4 address or 'localhost'; host names are not resolved", h));
  }
  return Endpoint{h, static_cast<uint16_t>(value)};
}

}  // namespace pandora
