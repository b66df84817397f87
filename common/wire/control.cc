// Control-plane codec. The daemon decodes bytes from unauthenticated peers
// with this code (the Hello itself), so decoding is strict and bounded: every
// read is checked against the body, every enum against its known values, and
// a message must use its body exactly.
#include "common/wire/control.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "common/bytes.h"

namespace pandora::wire {
namespace {

constexpr uint8_t kLastErrc = static_cast<uint8_t>(Errc::kUnsupported);

uint32_t load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

Status protocol_error(std::string message) { return Status(Errc::kProtocol, std::move(message)); }

const char* type_name(ControlType t) {
  switch (t) {
    case ControlType::kServerHello: return "ServerHello";
    case ControlType::kHello: return "Hello";
    case ControlType::kHelloOk: return "HelloOk";
    case ControlType::kError: return "Error";
    case ControlType::kOk: return "Ok";
    case ControlType::kSetupTcp: return "SetupTcp";
    case ControlType::kSetupShm: return "SetupShm";
    case ControlType::kShmInfo: return "ShmInfo";
    case ControlType::kFence: return "Fence";
    case ControlType::kStatsRequest: return "StatsRequest";
    case ControlType::kStatsReply: return "StatsReply";
    case ControlType::kRegionInfoRequest: return "RegionInfoRequest";
    case ControlType::kRegionInfoReply: return "RegionInfoReply";
    case ControlType::kUnfence: return "Unfence";
    case ControlType::kSetupVerbs: return "SetupVerbs";
    case ControlType::kVerbsInfo: return "VerbsInfo";
  }
  return nullptr;
}

// Appends little-endian fields; byte order comes from shifts, not from the host.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  template <size_t N>
  void bytes(const std::array<uint8_t, N>& a) {
    out_.append(reinterpret_cast<const char*>(a.data()), a.size());
  }
  void qp(const QpAddress& q) {
    u32(q.qpn);
    u32(q.psn);
    bytes(q.gid);
    u16(q.lid);
    u8(q.mtu);
    u8(q.link_layer);
  }
  void label(std::string_view l) { out_.append(l); }
  // Strings longer than the wire allows are cut at kMaxControlString: an
  // encoder cannot fail, and the only long strings are error messages (a
  // region path longer than that is not a valid Linux path anyway).
  void str(const std::string& s) {
    const size_t n = std::min(s.size(), kMaxControlString);
    u16(static_cast<uint16_t>(n));
    out_.append(s.data(), n);
  }
  void region(const RegionInfo& r) {
    u64(r.cluster_id);
    u32(r.node_id);
    u32(r.layout_version);
    u64(r.region_size);
    u64(r.data_offset);
    u64(r.table_offset);
    u64(r.log_offset);
    u64(r.log_size);
    u64(r.daemon_incarnation);
  }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string& out_;
};

// Reads fields from a body. The first failure sticks and later reads are
// no-ops, so a decoder reads all its fields and checks once at the end.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> body) : body_(body) {}

  void u8(uint8_t& v) {
    if (const uint8_t* p = take(1)) v = p[0];
  }
  void u16(uint16_t& v) { v = static_cast<uint16_t>(get(2)); }
  void u32(uint32_t& v) { v = static_cast<uint32_t>(get(4)); }
  void u64(uint64_t& v) { v = get(8); }
  template <size_t N>
  void bytes(std::array<uint8_t, N>& a) {
    if (const uint8_t* p = take(a.size())) std::copy(p, p + a.size(), a.begin());
  }
  // Checked here so no consumer sees an address the verbs layer would
  // misread: 24-bit QPN and PSN, a known MTU and link layer.
  void qp(QpAddress& q) {
    u32(q.qpn);
    u32(q.psn);
    bytes(q.gid);
    u16(q.lid);
    u8(q.mtu);
    u8(q.link_layer);
    if (q.qpn == 0 || q.qpn > 0xffffff) fail(fmt::format("queue pair number {} is not a 24-bit QPN", q.qpn));
    if (q.psn > 0xffffff) fail(fmt::format("packet sequence number {} exceeds 24 bits", q.psn));
    if (q.mtu < 1 || q.mtu > 5) fail(fmt::format("MTU code {} is not 1..5 (256..4096 bytes)", q.mtu));
    if (q.link_layer != 1 && q.link_layer != 2) {
      fail(fmt::format("link layer {} is neither 1 (InfiniBand) nor 2 (Ethernet)", q.link_layer));
    }
  }
  void str(std::string& s, const char* field) {
    uint16_t n = 0;
    u16(n);
    if (!error_.empty()) return;
    if (n > kMaxControlString) {
      fail(fmt::format("string {} of {} bytes exceeds the limit of {}", field, n, kMaxControlString));
      return;
    }
    if (const uint8_t* p = take(n)) s.assign(reinterpret_cast<const char*>(p), n);
  }
  void region(RegionInfo& r) {
    u64(r.cluster_id);
    u32(r.node_id);
    u32(r.layout_version);
    u64(r.region_size);
    u64(r.data_offset);
    u64(r.table_offset);
    u64(r.log_offset);
    u64(r.log_size);
    u64(r.daemon_incarnation);
  }

  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  const std::string& error() const { return error_; }
  size_t remaining() const { return body_.size() - pos_; }

 private:
  const uint8_t* take(size_t n) {
    if (!error_.empty()) return nullptr;
    if (n > remaining()) {
      fail(fmt::format("body truncated: needs {} more bytes at offset {} of {}", n, pos_, body_.size()));
      return nullptr;
    }
    const uint8_t* p = body_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t get(int n) {
    const uint8_t* p = take(static_cast<size_t>(n));
    uint64_t v = 0;
    if (p != nullptr) {
      for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
  }

  std::span<const uint8_t> body_;
  size_t pos_ = 0;
  std::string error_;
};

void encode_body(Writer& w, const ServerHello& m) {
  w.u16(m.protocol_version);
  w.bytes(m.nonce);
}
// Every field of a Hello but its mac, in wire order (also the MACs' input).
void hello_fields(Writer& w, const Hello& m) {
  w.u64(m.cluster_id);
  w.u8(static_cast<uint8_t>(m.role));
  w.u16(m.compute_id);
  w.u32(m.pid);
  w.u64(m.incarnation);
  w.bytes(m.client_nonce);
}
void encode_body(Writer& w, const Hello& m) {
  hello_fields(w, m);
  w.bytes(m.mac);
}
void encode_body(Writer& w, const HelloOk& m) {
  w.region(m.region);
  w.bytes(m.mac);
}
void encode_body(Writer& w, const Error& m) {
  w.u8(static_cast<uint8_t>(m.code));
  w.str(m.message);
}
void encode_body(Writer&, const Ok&) {}
void encode_body(Writer& w, const SetupTcp& m) { w.u8(m.frame_mac ? 1 : 0); }
void encode_body(Writer&, const SetupShm&) {}
void encode_body(Writer& w, const ShmInfo& m) {
  w.str(m.socket_path);
  w.bytes(m.token);
  w.u64(m.region_size);
  w.u64(m.device);
  w.u64(m.inode);
  w.u8(m.is_pmem ? 1 : 0);
}
void encode_body(Writer& w, const Fence& m) {
  // The encoder cannot fail: a list longer than the wire allows is cut (the
  // decoder refuses an empty one, so nobody is fenced by accident).
  const size_t n = std::min(m.compute_ids.size(), kMaxFenceIds);
  w.u16(static_cast<uint16_t>(n));
  for (size_t i = 0; i < n; ++i) w.u16(m.compute_ids[i]);
}
void encode_body(Writer&, const StatsRequest&) {}
void encode_body(Writer& w, const StatsReply& m) {
  for (uint64_t v : {m.reads, m.writes, m.cas, m.faa, m.bytes_read, m.bytes_written, m.fenced_ops,
                     m.malformed_frames, m.auth_failures, m.connections_current, m.connections_total,
                     m.fenced_nodes, m.bad_frame_macs, m.fence_requests}) {
    w.u64(v);
  }
}
void encode_body(Writer&, const RegionInfoRequest&) {}
void encode_body(Writer& w, const RegionInfoReply& m) { w.region(m.region); }
void encode_body(Writer& w, const Unfence& m) { w.u16(m.compute_id); }
void encode_body(Writer& w, const SetupVerbs& m) {
  w.qp(m.qp);
  w.u8(m.max_rd_atomic);
}
void encode_body(Writer& w, const VerbsInfo& m) {
  w.qp(m.qp);
  w.u32(m.rkey);
  w.u64(m.base_va);
  w.u8(m.max_rd_atomic);
}

void decode_body(Reader& r, ServerHello& m) {
  r.u16(m.protocol_version);
  r.bytes(m.nonce);
}
void decode_body(Reader& r, Hello& m) {
  uint8_t role = 0;
  r.u64(m.cluster_id);
  r.u8(role);
  r.u16(m.compute_id);
  r.u32(m.pid);
  r.u64(m.incarnation);
  r.bytes(m.client_nonce);
  r.bytes(m.mac);
  if (r.error().empty() && role != static_cast<uint8_t>(Role::kCompute) && role != static_cast<uint8_t>(Role::kAdmin)) {
    r.fail(fmt::format("unknown role {}", role));
  }
  m.role = static_cast<Role>(role);
}
void decode_body(Reader& r, HelloOk& m) {
  r.region(m.region);
  r.bytes(m.mac);
}
void decode_body(Reader& r, Error& m) {
  uint8_t code = 0;
  r.u8(code);
  r.str(m.message, "message");
  // An Error carrying kOk would turn into an ok Status on the receiving side.
  if (r.error().empty() && (code == 0 || code > kLastErrc)) r.fail(fmt::format("invalid error code {}", code));
  m.code = static_cast<Errc>(code);
}
void decode_body(Reader&, Ok&) {}
void decode_body(Reader& r, SetupTcp& m) {
  uint8_t mac = 0;
  r.u8(mac);
  if (r.error().empty() && mac > 1) r.fail(fmt::format("frame_mac must be 0 or 1, got {}", mac));
  m.frame_mac = mac == 1;
}
void decode_body(Reader&, SetupShm&) {}
void decode_body(Reader& r, ShmInfo& m) {
  uint8_t pmem = 0;
  r.str(m.socket_path, "socket_path");
  r.bytes(m.token);
  r.u64(m.region_size);
  r.u64(m.device);
  r.u64(m.inode);
  r.u8(pmem);
  if (r.error().empty() && pmem > 1) r.fail(fmt::format("is_pmem must be 0 or 1, got {}", pmem));
  m.is_pmem = pmem == 1;
}
void decode_body(Reader& r, Fence& m) {
  uint16_t n = 0;
  r.u16(n);
  if (n == 0 || n > kMaxFenceIds) {
    r.fail(fmt::format("Fence names {} compute ids (1..{} allowed)", n, kMaxFenceIds));
    return;
  }
  m.compute_ids.resize(n);
  for (uint16_t& id : m.compute_ids) r.u16(id);
}
void decode_body(Reader&, StatsRequest&) {}
void decode_body(Reader& r, StatsReply& m) {
  for (uint64_t* v : {&m.reads, &m.writes, &m.cas, &m.faa, &m.bytes_read, &m.bytes_written, &m.fenced_ops,
                      &m.malformed_frames, &m.auth_failures, &m.connections_current, &m.connections_total,
                      &m.fenced_nodes, &m.bad_frame_macs, &m.fence_requests}) {
    r.u64(*v);
  }
}
void decode_body(Reader&, RegionInfoRequest&) {}
void decode_body(Reader& r, RegionInfoReply& m) { r.region(m.region); }
void decode_body(Reader& r, Unfence& m) { r.u16(m.compute_id); }
void decode_body(Reader& r, SetupVerbs& m) {
  r.qp(m.qp);
  r.u8(m.max_rd_atomic);
  if (m.max_rd_atomic == 0) r.fail("max_rd_atomic 0: a queue pair must allow at least one READ in flight");
}
void decode_body(Reader& r, VerbsInfo& m) {
  r.qp(m.qp);
  r.u32(m.rkey);
  r.u64(m.base_va);
  r.u8(m.max_rd_atomic);
  if (m.max_rd_atomic == 0) r.fail("max_rd_atomic 0: a queue pair must allow at least one READ in flight");
}

template <typename M>
Result<ControlMessage> decode_as(std::span<const uint8_t> body) {
  M m;
  Reader r(body);
  decode_body(r, m);
  if (r.error().empty() && r.remaining() != 0) {
    r.fail(fmt::format("{} trailing bytes after the body", r.remaining()));
  }
  if (!r.error().empty()) {
    const char* name = type_name(control_type(ControlMessage(m)));
    return protocol_error(fmt::format("malformed {} message: {}", name, r.error()));
  }
  return ControlMessage(std::move(m));
}

}  // namespace

ControlType control_type(const ControlMessage& m) {
  // The variant's alternatives are listed in ControlType order, starting at 1.
  static_assert(std::variant_size_v<ControlMessage> == static_cast<size_t>(ControlType::kVerbsInfo));
  static_assert(std::is_same_v<std::variant_alternative_t<0, ControlMessage>, ServerHello>);
  static_assert(std::is_same_v<std::variant_alternative_t<7, ControlMessage>, ShmInfo>);
  static_assert(std::is_same_v<std::variant_alternative_t<12, ControlMessage>, RegionInfoReply>);
  static_assert(std::is_same_v<std::variant_alternative_t<13, ControlMessage>, Unfence>);
  static_assert(std::is_same_v<std::variant_alternative_t<15, ControlMessage>, VerbsInfo>);
  return static_cast<ControlType>(m.index() + 1);
}

void encode_control(std::string& out, const ControlMessage& m) {
  Writer w(out);
  w.u32(kControlMagic);
  w.u16(kControlVersion);
  w.u16(static_cast<uint16_t>(control_type(m)));
  const size_t len_at = out.size();
  w.u32(0);  // patched below, once the body's size is known
  const size_t body_at = out.size();
  std::visit([&w](const auto& msg) { encode_body(w, msg); }, m);
  const uint32_t len = static_cast<uint32_t>(out.size() - body_at);
  for (int i = 0; i < 4; ++i) out[len_at + i] = static_cast<char>((len >> (8 * i)) & 0xff);
}

Result<size_t> control_frame_length(std::span<const uint8_t> in) {
  if (in.size() < kControlHeaderBytes) return size_t{0};
  const uint32_t magic = load32(in.data());
  if (magic != kControlMagic) {
    return protocol_error(fmt::format("bad control magic 0x{:08x} (expected 0x{:08x}): not a Pandora control stream",
                                      magic, kControlMagic));
  }
  const uint16_t version = load16(in.data() + 4);
  if (version != kControlVersion) {
    return protocol_error(fmt::format("the peer speaks control protocol version {}, this build speaks {}: run the "
                                      "same Pandora release on memory daemons, compute nodes and tools",
                                      version, kControlVersion));
  }
  const uint32_t len = load32(in.data() + 8);
  if (len > kMaxControlBody) {
    return protocol_error(
        fmt::format("control message body of {} bytes exceeds the limit of {}", len, kMaxControlBody));
  }
  return size_t{kControlHeaderBytes + len};
}

Result<ControlMessage> decode_control(std::span<const uint8_t> frame) {
  if (frame.size() < kControlHeaderBytes) {
    return protocol_error(fmt::format("control frame truncated: {} bytes, header needs {}", frame.size(),
                                      kControlHeaderBytes));
  }
  Result<size_t> length = control_frame_length(frame);
  if (!length) return length.status();
  if (frame.size() != *length) {
    return protocol_error(fmt::format("control frame is {} bytes but its header says {}", frame.size(), *length));
  }
  const uint16_t type = load16(frame.data() + 6);
  const std::span<const uint8_t> body = frame.subspan(kControlHeaderBytes);
  switch (static_cast<ControlType>(type)) {
    case ControlType::kServerHello: return decode_as<ServerHello>(body);
    case ControlType::kHello: return decode_as<Hello>(body);
    case ControlType::kHelloOk: return decode_as<HelloOk>(body);
    case ControlType::kError: return decode_as<Error>(body);
    case ControlType::kOk: return decode_as<Ok>(body);
    case ControlType::kSetupTcp: return decode_as<SetupTcp>(body);
    case ControlType::kSetupShm: return decode_as<SetupShm>(body);
    case ControlType::kShmInfo: return decode_as<ShmInfo>(body);
    case ControlType::kFence: return decode_as<Fence>(body);
    case ControlType::kStatsRequest: return decode_as<StatsRequest>(body);
    case ControlType::kStatsReply: return decode_as<StatsReply>(body);
    case ControlType::kRegionInfoRequest: return decode_as<RegionInfoRequest>(body);
    case ControlType::kRegionInfoReply: return decode_as<RegionInfoReply>(body);
    case ControlType::kUnfence: return decode_as<Unfence>(body);
    case ControlType::kSetupVerbs: return decode_as<SetupVerbs>(body);
    case ControlType::kVerbsInfo: return decode_as<VerbsInfo>(body);
  }
  return protocol_error(fmt::format("unknown control message type {}", type));
}

// Labels separate the uses of the one secret: a MAC computed for one purpose
// is never valid for another (a daemon cannot answer a Hello with the
// client's own MAC, a frame key is never a login MAC).
namespace {
constexpr std::string_view kHelloLabel = "pandora hello v2";
constexpr std::string_view kHelloOkLabel = "pandora hello-ok v2";
constexpr std::string_view kFrameKeyToDaemonLabel = "pandora frame-mac client-to-daemon v2";
constexpr std::string_view kFrameKeyToClientLabel = "pandora frame-mac daemon-to-client v2";
}  // namespace

std::string hello_mac_input(const Nonce& server_nonce, const Hello& h) {
  std::string out;
  Writer w(out);
  w.label(kHelloLabel);
  w.bytes(server_nonce);
  hello_fields(w, h);
  return out;
}

std::string hello_ok_mac_input(const Nonce& server_nonce, const Hello& h, const RegionInfo& region) {
  std::string out;
  Writer w(out);
  w.label(kHelloOkLabel);
  w.bytes(server_nonce);
  hello_fields(w, h);
  w.bytes(h.mac);
  w.region(region);
  return out;
}

FrameMacKeys frame_mac_keys(std::span<const uint8_t> secret, const Nonce& server_nonce, const Nonce& client_nonce) {
  auto derive = [&](std::string_view label) {
    std::string in;
    Writer w(in);
    w.label(label);
    w.bytes(server_nonce);
    w.bytes(client_nonce);
    return hmac_sha256(secret, bytes_of(in));
  };
  return FrameMacKeys{derive(kFrameKeyToDaemonLabel), derive(kFrameKeyToClientLabel)};
}

}  // namespace pandora::wire
