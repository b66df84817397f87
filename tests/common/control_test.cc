#include "common/wire/control.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pandora::wire {
namespace {

// What a peer of protocol version 1 is told (names both versions).
std::string version_mismatch_text() { return "version 1, this build speaks " + std::to_string(kControlVersion); }

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string encoded(const ControlMessage& m) {
  std::string s;
  encode_control(s, m);
  return s;
}

void put16(std::string& s, size_t at, uint16_t v) {
  s[at] = static_cast<char>(v);
  s[at + 1] = static_cast<char>(v >> 8);
}

void put32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
}

std::array<uint8_t, 32> sample_token() {
  std::array<uint8_t, 32> t{};
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(0xA0 + i);
  return t;
}

QpAddress sample_qp() {
  QpAddress q;
  q.qpn = 0x123456;
  q.psn = 0xabcdef;
  for (size_t i = 0; i < q.gid.size(); ++i) q.gid[i] = static_cast<uint8_t>(0x10 + i);
  q.lid = 0x0203;
  q.mtu = 5;
  q.link_layer = 2;
  return q;
}

RegionInfo sample_region() {
  RegionInfo r;
  r.cluster_id = 0x0123456789ABCDEF;
  r.node_id = 3;
  r.layout_version = 2;
  r.region_size = 1ull << 30;
  r.data_offset = 4096;
  r.table_offset = 8192;
  r.log_offset = 1ull << 29;
  r.log_size = 1ull << 20;
  r.daemon_incarnation = 0xFEDCBA9876543210;
  return r;
}

// One message of every type, every field set to something distinctive.
std::vector<ControlMessage> samples() {
  ServerHello sh;
  for (size_t i = 0; i < sh.nonce.size(); ++i) sh.nonce[i] = static_cast<uint8_t>(i * 7 + 1);
  Hello h;
  h.cluster_id = 42;
  h.role = Role::kCompute;
  h.compute_id = 65535;
  h.pid = 123456;
  h.incarnation = 0xFEDCBA9876543210;
  for (size_t i = 0; i < h.client_nonce.size(); ++i) h.client_nonce[i] = static_cast<uint8_t>(i * 3 + 2);
  for (size_t i = 0; i < h.mac.size(); ++i) h.mac[i] = static_cast<uint8_t>(255 - i);
  Hello admin;
  admin.role = Role::kAdmin;
  StatsReply st;
  uint64_t v = 1;
  for (uint64_t* f : {&st.reads, &st.writes, &st.cas, &st.faa, &st.bytes_read, &st.bytes_written, &st.fenced_ops,
                      &st.malformed_frames, &st.auth_failures, &st.connections_current, &st.connections_total,
                      &st.fenced_nodes, &st.bad_frame_macs, &st.fence_requests}) {
    *f = v;
    v = v * 31 + 0x100000001ull;
  }
  return {
      sh,
      h,
      admin,
      HelloOk{sample_region(), h.mac},
      Error{Errc::kAuthFailed, "wrong cluster secret"},
      Error{Errc::kFenced, std::string("bin\0ary", 7)},
      Error{Errc::kUnsupported, ""},
      Ok{},
      SetupTcp{},
      SetupTcp{true},
      SetupShm{},
      ShmInfo{"/dev/shm/pandora-node-3.shm.Ab12Cd/sock", sample_token(), 1ull << 30, 0x803, 77, true},
      ShmInfo{"", {}, 0, 0, 0, false},
      Fence{{7}},
      Fence{{1, 2, 65535}},
      StatsRequest{},
      st,
      RegionInfoRequest{},
      RegionInfoReply{sample_region()},
      Unfence{9},
      SetupVerbs{sample_qp(), 16},
      VerbsInfo{sample_qp(), 0x1234abcd, 0x7f0012340000ull, 8},
  };
}

TEST(Control, TypeNumbersAreStable) {
  const std::vector<std::pair<ControlMessage, uint16_t>> cases = {
      {ServerHello{}, 1}, {Hello{}, 2},      {HelloOk{}, 3},     {Error{}, 4},
      {Ok{}, 5},          {SetupTcp{}, 6},   {SetupShm{}, 7},    {ShmInfo{}, 8},
      {Fence{}, 9},       {StatsRequest{}, 10}, {StatsReply{}, 11}, {RegionInfoRequest{}, 12},
      {RegionInfoReply{}, 13}, {Unfence{}, 14}, {SetupVerbs{}, 15}, {VerbsInfo{}, 16},
  };
  for (const auto& [m, type] : cases) {
    EXPECT_EQ(static_cast<uint16_t>(control_type(m)), type);
    const std::string s = encoded(m);
    ASSERT_GE(s.size(), kControlHeaderBytes);
    EXPECT_EQ(static_cast<uint8_t>(s[6]) | (static_cast<uint8_t>(s[7]) << 8), type);
  }
}

TEST(Control, HeaderLayout) {
  const std::string s = encoded(Fence{{0x0102}});
  // Version 6: Fence names a list of ids; 5: the daemon's incarnation in
  // RegionInfo; 4: verbs set-up; 3: mutual login; 2: ShmInfo hands out a
  // socket and a token.
  const std::string expect("PCTL\x06\x00\x09\x00\x04\x00\x00\x00\x01\x00\x02\x01", 16);
  EXPECT_EQ(s, expect);
}

// A fence names 1..kMaxFenceIds ids: an empty one would be answered Ok with
// nobody fenced, and the count bounds what one request makes the daemon do.
TEST(Control, FenceListLimits) {
  auto fence_frame = [](uint16_t count, size_t ids) {
    std::string body;
    body.push_back(static_cast<char>(count));
    body.push_back(static_cast<char>(count >> 8));
    for (size_t i = 0; i < ids; ++i) {
      body.push_back(static_cast<char>((i % 65535) + 1));
      body.push_back(static_cast<char>(((i % 65535) + 1) >> 8));
    }
    std::string s = encoded(Fence{{1}}).substr(0, kControlHeaderBytes);
    put32(s, 8, static_cast<uint32_t>(body.size()));
    return s + body;
  };
  Result<ControlMessage> none = decode_control(bytes(fence_frame(0, 0)));
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("names 0 compute ids"), std::string::npos) << none.status().message();

  Result<ControlMessage> most = decode_control(bytes(fence_frame(kMaxFenceIds, kMaxFenceIds)));
  ASSERT_TRUE(most.is_ok()) << most.status().to_string();
  ASSERT_EQ(std::get<Fence>(*most).compute_ids.size(), kMaxFenceIds);
  EXPECT_EQ(std::get<Fence>(*most).compute_ids.back(), kMaxFenceIds);

  Result<ControlMessage> over = decode_control(bytes(fence_frame(kMaxFenceIds + 1, kMaxFenceIds + 1)));
  ASSERT_FALSE(over.is_ok());
  EXPECT_EQ(over.status().code(), Errc::kProtocol);

  // The encoder cannot fail: it cuts a longer list at the limit.
  std::vector<uint16_t> many(kMaxFenceIds + 5, 9);
  Result<ControlMessage> cut = decode_control(bytes(encoded(Fence{many})));
  ASSERT_TRUE(cut.is_ok()) << cut.status().to_string();
  EXPECT_EQ(std::get<Fence>(*cut).compute_ids.size(), kMaxFenceIds);
}

TEST(Control, EncodeAppends) {
  std::string s = "prefix";
  encode_control(s, Ok{});
  EXPECT_EQ(s.substr(0, 6), "prefix");
  EXPECT_EQ(s.size(), 6 + kControlHeaderBytes);
}

TEST(Control, RoundTripEveryType) {
  for (const ControlMessage& m : samples()) {
    const std::string s = encoded(m);
    Result<size_t> len = control_frame_length(bytes(s));
    ASSERT_TRUE(len.is_ok()) << len.status().to_string();
    EXPECT_EQ(*len, s.size());
    Result<ControlMessage> back = decode_control(bytes(s));
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->index(), m.index());
    // The encoding covers every field, so equal re-encodings mean equal messages.
    EXPECT_EQ(encoded(*back), s) << "type " << m.index() + 1;
  }
}

TEST(Control, RoundTripPreservesFields) {
  Hello h;
  h.cluster_id = 0xFEDCBA9876543210;
  h.role = Role::kAdmin;
  h.compute_id = 0;
  h.pid = 0xFFFFFFFF;
  h.mac.fill(0xAB);
  Result<ControlMessage> m = decode_control(bytes(encoded(h)));
  ASSERT_TRUE(m.is_ok());
  const Hello& back = std::get<Hello>(*m);
  EXPECT_EQ(back.cluster_id, h.cluster_id);
  EXPECT_EQ(back.role, Role::kAdmin);
  EXPECT_EQ(back.pid, h.pid);
  EXPECT_EQ(back.mac, h.mac);

  Result<ControlMessage> e = decode_control(bytes(encoded(Error{Errc::kMismatch, "node id 4 != 3"})));
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(std::get<Error>(*e).code, Errc::kMismatch);
  EXPECT_EQ(std::get<Error>(*e).message, "node id 4 != 3");

  Result<ControlMessage> r = decode_control(bytes(encoded(RegionInfoReply{sample_region()})));
  ASSERT_TRUE(r.is_ok());
  const RegionInfo& ri = std::get<RegionInfoReply>(*r).region;
  EXPECT_EQ(ri.cluster_id, sample_region().cluster_id);
  EXPECT_EQ(ri.node_id, 3u);
  EXPECT_EQ(ri.layout_version, 2u);
  EXPECT_EQ(ri.region_size, 1ull << 30);
  EXPECT_EQ(ri.data_offset, 4096u);
  EXPECT_EQ(ri.table_offset, 8192u);
  EXPECT_EQ(ri.log_offset, 1ull << 29);
  EXPECT_EQ(ri.log_size, 1ull << 20);
  EXPECT_EQ(ri.daemon_incarnation, 0xFEDCBA9876543210u);

  Result<ControlMessage> shm = decode_control(bytes(encoded(ShmInfo{"/x", sample_token(), 77, 5, 6, true})));
  ASSERT_TRUE(shm.is_ok());
  EXPECT_EQ(std::get<ShmInfo>(*shm).socket_path, "/x");
  EXPECT_EQ(std::get<ShmInfo>(*shm).token, sample_token());
  EXPECT_EQ(std::get<ShmInfo>(*shm).region_size, 77u);
  EXPECT_EQ(std::get<ShmInfo>(*shm).device, 5u);
  EXPECT_EQ(std::get<ShmInfo>(*shm).inode, 6u);
  EXPECT_TRUE(std::get<ShmInfo>(*shm).is_pmem);
}

TEST(Control, FrameLengthNeedsTheWholeHeader) {
  const std::string s = encoded(ShmInfo{"/dev/shm/r", {}, 1, 0, 0, false});
  for (size_t n = 0; n < kControlHeaderBytes; ++n) {
    Result<size_t> len = control_frame_length(bytes(s.substr(0, n)));
    ASSERT_TRUE(len.is_ok());
    EXPECT_EQ(*len, 0u) << n;
  }
}

TEST(Control, EveryTruncationIsAnErrorNeverACrash) {
  for (const ControlMessage& m : samples()) {
    const std::string s = encoded(m);
    for (size_t n = 0; n < s.size(); ++n) {
      const std::string prefix = s.substr(0, n);
      Result<size_t> len = control_frame_length(bytes(prefix));
      ASSERT_TRUE(len.is_ok());
      // Either "need the header" or the full length, which is more than we have.
      EXPECT_TRUE(*len == 0 || *len == s.size()) << n;
      Result<ControlMessage> d = decode_control(bytes(prefix));
      ASSERT_FALSE(d.is_ok()) << "type " << m.index() + 1 << " prefix " << n;
      EXPECT_EQ(d.status().code(), Errc::kProtocol);
    }
  }
}

TEST(Control, TruncatedBodyWithConsistentHeaderIsAnError) {
  // A peer that sends a short body but a header matching it: every field is
  // mandatory, so every shortened body must be rejected.
  for (const ControlMessage& m : samples()) {
    const std::string s = encoded(m);
    for (size_t body = 0; body + kControlHeaderBytes < s.size(); ++body) {
      std::string t = s.substr(0, kControlHeaderBytes + body);
      put32(t, 8, static_cast<uint32_t>(body));
      Result<ControlMessage> d = decode_control(bytes(t));
      ASSERT_FALSE(d.is_ok()) << "type " << m.index() + 1 << " body " << body;
      EXPECT_EQ(d.status().code(), Errc::kProtocol);
    }
  }
}

TEST(Control, TrailingBytesAreAnError) {
  for (const ControlMessage& m : samples()) {
    const std::string s = encoded(m);
    // Beyond the length the header declares.
    EXPECT_FALSE(decode_control(bytes(s + '\0')).is_ok()) << m.index() + 1;
    // Inside the declared body, after the last field.
    std::string t = s + 'x';
    put32(t, 8, static_cast<uint32_t>(t.size() - kControlHeaderBytes));
    Result<ControlMessage> d = decode_control(bytes(t));
    ASSERT_FALSE(d.is_ok()) << m.index() + 1;
    EXPECT_NE(d.status().message().find("trailing"), std::string::npos) << d.status().message();
  }
}

TEST(Control, BadMagicVersionAndSize) {
  const std::string good = encoded(Ok{});
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  std::string bad_version = good;
  put16(bad_version, 4, kControlVersion + 1);
  std::string old_version = good;  // version 1 clients opened the region by path
  put16(old_version, 4, 1);
  std::string version0 = good;
  put16(version0, 4, 0);
  std::string oversized = good;
  put32(oversized, 8, kMaxControlBody + 1);
  std::string huge = good;
  put32(huge, 8, UINT32_MAX);
  for (const std::string& s : {bad_magic, bad_version, old_version, version0, oversized, huge}) {
    Result<size_t> len = control_frame_length(bytes(s));
    ASSERT_FALSE(len.is_ok());
    EXPECT_EQ(len.status().code(), Errc::kProtocol);
    EXPECT_FALSE(decode_control(bytes(s)).is_ok());
  }
  EXPECT_NE(control_frame_length(bytes(bad_magic)).status().message().find("magic"), std::string::npos);
  EXPECT_NE(control_frame_length(bytes(bad_version)).status().message().find("version"), std::string::npos);
  EXPECT_NE(control_frame_length(bytes(oversized)).status().message().find("limit"), std::string::npos);

  std::string largest = good;
  put32(largest, 8, kMaxControlBody);
  Result<size_t> len = control_frame_length(bytes(largest));
  ASSERT_TRUE(len.is_ok());
  EXPECT_EQ(*len, kControlHeaderBytes + kMaxControlBody);
}

TEST(Control, UnknownTypesAreErrors) {
  for (uint16_t type : {uint16_t{0}, uint16_t{17}, uint16_t{0x100}, uint16_t{0xFFFF}}) {
    std::string s = encoded(Ok{});
    put16(s, 6, type);
    Result<ControlMessage> d = decode_control(bytes(s));
    ASSERT_FALSE(d.is_ok()) << type;
    EXPECT_NE(d.status().message().find("unknown control message type"), std::string::npos);
  }
}

TEST(Control, InvalidEnumValuesAreErrors) {
  // Hello.role is the byte after the 8-byte cluster id.
  const size_t role_at = kControlHeaderBytes + 8;
  for (uint8_t role : {0, 3, 255}) {
    std::string s = encoded(Hello{});
    s[role_at] = static_cast<char>(role);
    Result<ControlMessage> d = decode_control(bytes(s));
    ASSERT_FALSE(d.is_ok()) << int(role);
    EXPECT_NE(d.status().message().find("role"), std::string::npos);
  }
  // Error.code is the first body byte; kOk is not an error.
  for (uint8_t code : {0, 13, 255}) {
    std::string s = encoded(Error{Errc::kIo, "x"});
    s[kControlHeaderBytes] = static_cast<char>(code);
    Result<ControlMessage> d = decode_control(bytes(s));
    ASSERT_FALSE(d.is_ok()) << int(code);
    EXPECT_NE(d.status().message().find("error code"), std::string::npos);
  }
  for (uint8_t code = 1; code <= static_cast<uint8_t>(Errc::kUnsupported); ++code) {
    EXPECT_TRUE(decode_control(bytes(encoded(Error{static_cast<Errc>(code), "m"}))).is_ok()) << int(code);
  }
  // ShmInfo.is_pmem is a boolean byte at the very end.
  std::string s = encoded(ShmInfo{"/p", {}, 1, 0, 0, true});
  s.back() = 2;
  EXPECT_FALSE(decode_control(bytes(s)).is_ok());
}

TEST(Control, QueuePairAddressesAreChecked) {
  // The daemon hands these to ibv_modify_qp: out-of-range values must never
  // get that far.
  auto refused = [](const QpAddress& q, std::string_view why) {
    Result<ControlMessage> d = decode_control(bytes(encoded(SetupVerbs{q, 4})));
    EXPECT_FALSE(d.is_ok()) << why;
    if (!d.is_ok()) EXPECT_NE(d.status().message().find(why), std::string::npos) << d.status().to_string();
    Result<ControlMessage> i = decode_control(bytes(encoded(VerbsInfo{q, 1, 2, 4})));
    EXPECT_FALSE(i.is_ok()) << why;
  };
  QpAddress q = sample_qp();
  q.qpn = 0;
  refused(q, "queue pair number");
  q.qpn = 0x1000000;
  refused(q, "queue pair number");
  q = sample_qp();
  q.psn = 0x1000000;
  refused(q, "24 bits");
  q = sample_qp();
  for (uint8_t mtu : {0, 6, 255}) {
    q.mtu = mtu;
    refused(q, "MTU");
  }
  q = sample_qp();
  for (uint8_t ll : {0, 3}) {
    q.link_layer = ll;
    refused(q, "link layer");
  }
  EXPECT_FALSE(decode_control(bytes(encoded(SetupVerbs{sample_qp(), 0}))).is_ok()) << "max_rd_atomic 0";
  EXPECT_TRUE(decode_control(bytes(encoded(SetupVerbs{sample_qp(), 1}))).is_ok());
}

TEST(Control, StringLimits) {
  // Exactly at the limit round-trips.
  const std::string at_limit(kMaxControlString, 'a');
  Result<ControlMessage> ok = decode_control(bytes(encoded(Error{Errc::kIo, at_limit})));
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(std::get<Error>(*ok).message, at_limit);

  // The encoder cuts longer strings to the limit rather than emit a frame the
  // peer would reject.
  Result<ControlMessage> cut = decode_control(bytes(encoded(Error{Errc::kIo, std::string(10000, 'b')})));
  ASSERT_TRUE(cut.is_ok());
  EXPECT_EQ(std::get<Error>(*cut).message, std::string(kMaxControlString, 'b'));

  // A hand-made frame with a longer string is rejected.
  std::string s = encoded(Error{Errc::kIo, at_limit});
  s += 'c';
  put16(s, kControlHeaderBytes + 1, kMaxControlString + 1);
  put32(s, 8, static_cast<uint32_t>(s.size() - kControlHeaderBytes));
  Result<ControlMessage> d = decode_control(bytes(s));
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("exceeds"), std::string::npos) << d.status().message();

  // A string length running past the body is a truncation, not a crash.
  std::string t = encoded(ShmInfo{"/abc", {}, 1, 0, 0, false});
  put16(t, kControlHeaderBytes, 1000);
  EXPECT_FALSE(decode_control(bytes(t)).is_ok());
}

TEST(Control, HelloMacInputCoversEveryField) {
  Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(i);
  Hello h;
  h.cluster_id = 0x1122334455667788;
  h.role = Role::kCompute;
  h.compute_id = 0x0102;
  h.pid = 0x0A0B0C0D;
  h.incarnation = 0x0102030405060708;
  h.client_nonce.fill(0xC1);
  const std::string in = hello_mac_input(nonce, h);
  std::string expect = "pandora hello v2";
  expect += std::string(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  expect += std::string("\x88\x77\x66\x55\x44\x33\x22\x11", 8);
  expect += '\x01';
  expect += std::string("\x02\x01", 2);
  expect += std::string("\x0D\x0C\x0B\x0A", 4);
  expect += std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8);
  expect += std::string(32, '\xC1');
  EXPECT_EQ(in, expect);

  // The mac itself is not part of its input, every other field is.
  Hello other = h;
  other.mac.fill(0xFF);
  EXPECT_EQ(hello_mac_input(nonce, other), in);
  other = h;
  other.cluster_id ^= 1;
  EXPECT_NE(hello_mac_input(nonce, other), in);
  other = h;
  other.role = Role::kAdmin;
  EXPECT_NE(hello_mac_input(nonce, other), in);
  other = h;
  other.compute_id ^= 1;
  EXPECT_NE(hello_mac_input(nonce, other), in);
  other = h;
  other.pid ^= 1;
  EXPECT_NE(hello_mac_input(nonce, other), in);
  other = h;
  other.incarnation ^= 1;
  EXPECT_NE(hello_mac_input(nonce, other), in);
  other = h;
  other.client_nonce[31] ^= 1;
  EXPECT_NE(hello_mac_input(nonce, other), in);
  Nonce nonce2 = nonce;
  nonce2[31] ^= 1;
  EXPECT_NE(hello_mac_input(nonce2, h), in);
}

// The daemon's proof covers the whole login: both nonces, the client's Hello
// (its MAC included) and the region it describes, under a label of its own.
TEST(Control, HelloOkMacInputBindsTheLoginAndTheRegion) {
  Nonce nonce{};
  nonce.fill(0x5A);
  Hello h;
  h.cluster_id = 9;
  h.compute_id = 3;
  h.incarnation = 77;
  h.client_nonce.fill(0x11);
  h.mac.fill(0x22);
  const RegionInfo r = sample_region();
  const std::string in = hello_ok_mac_input(nonce, h, r);
  EXPECT_TRUE(in.starts_with("pandora hello-ok v2"));
  // Never equal to (or a prefix-extension of) the client's MAC input.
  EXPECT_FALSE(in.starts_with(hello_mac_input(nonce, h)));

  Hello other = h;
  other.mac[0] ^= 1;
  EXPECT_NE(hello_ok_mac_input(nonce, other, r), in);
  other = h;
  other.client_nonce[0] ^= 1;
  EXPECT_NE(hello_ok_mac_input(nonce, other, r), in);
  other = h;
  other.incarnation ^= 1;
  EXPECT_NE(hello_ok_mac_input(nonce, other, r), in);
  Nonce nonce2 = nonce;
  nonce2[0] ^= 1;
  EXPECT_NE(hello_ok_mac_input(nonce2, h, r), in);
  RegionInfo r2 = r;
  r2.node_id ^= 1;
  EXPECT_NE(hello_ok_mac_input(nonce, h, r2), in);
  r2 = r;
  r2.log_size ^= 1;
  EXPECT_NE(hello_ok_mac_input(nonce, h, r2), in);
  r2 = r;
  r2.daemon_incarnation ^= 1;  // the incarnation a record binds is the daemon's word, under its MAC
  EXPECT_NE(hello_ok_mac_input(nonce, h, r2), in);
}

TEST(Control, FrameMacKeysDifferPerDirectionAndPerLogin) {
  const std::string secret = "0123456789abcdef0123";
  const std::span<const uint8_t> sk(reinterpret_cast<const uint8_t*>(secret.data()), secret.size());
  Nonce s{}, c{};
  s.fill(1);
  c.fill(2);
  const FrameMacKeys k = frame_mac_keys(sk, s, c);
  EXPECT_NE(k.client_to_daemon, k.daemon_to_client);
  Nonce c2 = c;
  c2[5] ^= 1;
  EXPECT_NE(frame_mac_keys(sk, s, c2).client_to_daemon, k.client_to_daemon);
  Nonce s2 = s;
  s2[5] ^= 1;
  EXPECT_NE(frame_mac_keys(sk, s2, c).daemon_to_client, k.daemon_to_client);
  const std::string other = "0123456789abcdef0124";
  EXPECT_NE(frame_mac_keys({reinterpret_cast<const uint8_t*>(other.data()), other.size()}, s, c).client_to_daemon,
            k.client_to_daemon);
  EXPECT_EQ(frame_mac_keys(sk, s, c).client_to_daemon, k.client_to_daemon);  // deterministic
}

// A peer of another protocol version is told which versions meet, instead
// of a generic decoding error.
TEST(Control, OtherProtocolVersionIsNamed) {
  std::string s = encoded(Ok{});
  put16(s, 4, 1);
  Result<size_t> len = control_frame_length(bytes(s));
  ASSERT_FALSE(len.is_ok());
  EXPECT_EQ(len.status().code(), Errc::kProtocol);
  EXPECT_NE(len.status().message().find(version_mismatch_text()), std::string::npos)
      << len.status().message();
}

}  // namespace
}  // namespace pandora::wire
