#include "common/endpoint.h"

#include <gtest/gtest.h>

namespace pandora {
namespace {

TEST(Endpoint, ParsesNumericAddressesAndLocalhost) {
  const struct {
    const char* text;
    const char* host;
    uint16_t port;
    const char* printed;
  } cases[] = {
      {"127.0.0.1:7000", "127.0.0.1", 7000, "127.0.0.1:7000"},
      {"0.0.0.0:0", "0.0.0.0", 0, "0.0.0.0:0"},
      {"10.1.2.3:65535", "10.1.2.3", 65535, "10.1.2.3:65535"},
      {"localhost:80", "localhost", 80, "localhost:80"},
      {"[::1]:7000", "::1", 7000, "[::1]:7000"},
      {"[::]:1", "::", 1, "[::]:1"},
      {"[fe80::1:2]:443", "fe80::1:2", 443, "[fe80::1:2]:443"},
      {"[::ffff:1.2.3.4]:9", "::ffff:1.2.3.4", 9, "[::ffff:1.2.3.4]:9"},
      {"127.0.0.1:007", "127.0.0.1", 7, "127.0.0.1:7"},
  };
  for (const auto& c : cases) {
    Result<Endpoint> ep = parse_endpoint(c.text);
    ASSERT_TRUE(ep.is_ok()) << c.text << ": " << ep.status().to_string();
    EXPECT_EQ(ep->host, c.host) << c.text;
    EXPECT_EQ(ep->port, c.port) << c.text;
    EXPECT_EQ(ep->to_string(), c.printed);
    // What to_string prints parses back to the same endpoint.
    Result<Endpoint> again = parse_endpoint(ep->to_string());
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(again->host, ep->host);
    EXPECT_EQ(again->port, ep->port);
  }
}

TEST(Endpoint, RejectsWithAClearMessage) {
  const struct {
    const char* text;
    const char* reason;
  } cases[] = {
      {"", "missing ':PORT'"},
      {"127.0.0.1", "missing ':PORT'"},
      {"127.0.0.1:", "empty port"},
      {":7000", "empty host"},
      {"[]:7000", "empty host"},
      {"127.0.0.1:65536", "out of range"},
      {"127.0.0.1:99999", "out of range"},
      {"127.0.0.1:1234567", "0 to 65535"},
      {"127.0.0.1:-1", "not a number"},
      {"127.0.0.1:+1", "not a number"},
      {"127.0.0.1:0x10", "not a number"},
      {"127.0.0.1: 80", "not a number"},
      {"127.0.0.1:80 ", "not a number"},
      {"127.0.0.1:http", "not a number"},
      {"example.com:80", "host names are not resolved"},
      {"db1:5432", "host names are not resolved"},
      {"LOCALHOST.:80", "host names are not resolved"},
      {"256.0.0.1:80", "not a numeric IPv4"},
      {"1.2.3:80", "not a numeric IPv4"},
      {" 127.0.0.1:80", "not a numeric IPv4"},
      {"::1:7000", "brackets"},
      {"[::1]", "missing ':PORT'"},
      {"[::1]7000", "expected ':'"},
      {"[::1:7000", "without a matching"},
      {"[127.0.0.1]:80", "not a numeric IPv6"},
      {"[localhost]:80", "not a numeric IPv6"},
      {"[::g]:80", "not a numeric IPv6"},
  };
  for (const auto& c : cases) {
    Result<Endpoint> ep = parse_endpoint(c.text);
    ASSERT_FALSE(ep.is_ok()) << "accepted '" << c.text << "'";
    EXPECT_EQ(ep.status().code(), Errc::kInvalidArgument);
    const std::string m = ep.status().message();
    EXPECT_NE(m.find(c.reason), std::string::npos) << c.text << ": " << m;
    EXPECT_NE(m.find(std::string("'") + c.text + "'"), std::string::npos) << "message should quote the input: " << m;
  }
}

}  // namespace
}  // namespace pandora
