// Control-plane messages between compute nodes / tools and a memory daemon.
//
// Every connection to a daemon starts on the control plane with a mutual
// login (protocol version 3):
//
//   daemon -> client   ServerHello {protocol version, server nonce}
//   client -> daemon   Hello {cluster id, role, compute id, pid, incarnation,
//                             client nonce, mac}
//   daemon -> client   HelloOk {RegionInfo, mac}     or Error, then close
//
// Both nonces are 32 bytes from getrandom(2), fresh per connection.
//
//   Hello.mac   = HMAC-SHA256(secret, "pandora hello v2" || server nonce ||
//                 client nonce || cluster_id || role || compute_id || pid ||
//                 incarnation)                          (hello_mac_input)
//   HelloOk.mac = HMAC-SHA256(secret, "pandora hello-ok v2" || server nonce ||
//                 client nonce || the Hello's fields and mac || RegionInfo)
//                                                       (hello_ok_mac_input)
//
// The daemon checks Hello.mac (constant time) before anything else, so the
// client proves it knows the cluster secret; the client checks HelloOk.mac
// (constant time) before it trusts the daemon with a byte of data, so the
// daemon proves it too: a process that merely listens on the daemon's port
// cannot produce it. The distinct labels keep one side's MAC from ever being
// valid as the other's (no reflection), each side's own fresh nonce keeps a
// recorded message from being replayed to it, and the secret never crosses
// the wire. A failed login is answered with Error{kAuthFailed} that says only
// that the login failed (never the daemon's cluster id); the daemon logs why.
//
// Hello.incarnation is a random number a compute process draws once and
// sends on all its connections: the daemon serves a compute id to one
// incarnation at a time (a second process using the same compute id is
// refused while the first one's sessions are alive).
//
// After HelloOk the client sends requests and receives exactly one reply each
// (Ok, Error or a typed reply). `SetupTcp` switches the connection to the
// binary data plane (common/wire/frame.h) for the rest of its life, with a
// per-frame MAC when SetupTcp.frame_mac is set (keys: frame_mac_keys);
// `SetupShm` returns what a same-host client needs to obtain the region's
// file descriptor (never its path: see ShmInfo and common/wire/shm_handoff.h).
// `SetupVerbs` exchanges queue pair addresses and the region's rkey (see
// VerbsInfo).
//
// What this does not protect: after the login the data plane is neither
// authenticated (unless frame MACs are on) nor encrypted, like RDMA. The
// network between compute and memory nodes is trusted (see README,
// "Security").
//
// Framing: every message is `u32 magic | u16 version | u16 type | u32 len |
// body[len]`, little-endian, len <= kMaxControlBody. Bodies are sequences of
// fixed-width little-endian integers and length-prefixed strings (u16 len).
// Decoding is strict: trailing bytes, over-long strings, unknown types and
// unknown enum values are errors, and so is a frame of another protocol
// version (its header is still read, so either side can say which version
// the other speaks).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/checksum.h"
#include "common/status.h"

namespace pandora::wire {

inline constexpr uint32_t kControlMagic = 0x4c544350;  // "PCTL"
// 2: ShmInfo carries a Unix socket path, a single-use token and the region
// file's device and inode instead of the region's path.
// 3: mutual authentication (client nonce, HelloOk.mac), incarnation,
// SetupTcp.frame_mac, StatsReply.bad_frame_macs.
// 4: SetupVerbs / VerbsInfo (the verbs data plane).
// 5: RegionInfo.daemon_incarnation.
// 6: Fence names a list of compute ids (one message, one quiescence wait for
// all the pids that failed together); StatsReply.fence_requests.
inline constexpr uint16_t kControlVersion = 6;
inline constexpr uint32_t kControlHeaderBytes = 12;
inline constexpr uint32_t kMaxControlBody = 64 * 1024;
inline constexpr size_t kMaxControlString = 4096;

enum class Role : uint8_t {
  kCompute = 1,  // runs transactions; needs a compute id (1..65535)
  kAdmin = 2,    // tools and the failure detector: fence, stats; no data plane
};

enum class ControlType : uint16_t {
  kServerHello = 1,
  kHello = 2,
  kHelloOk = 3,
  kError = 4,
  kOk = 5,
  kSetupTcp = 6,
  kSetupShm = 7,
  kShmInfo = 8,
  kFence = 9,
  kStatsRequest = 10,
  kStatsReply = 11,
  kRegionInfoRequest = 12,
  kRegionInfoReply = 13,
  kUnfence = 14,
  kSetupVerbs = 15,
  kVerbsInfo = 16,
};

using Nonce = std::array<uint8_t, 32>;

struct ServerHello {
  uint16_t protocol_version = kControlVersion;
  Nonce nonce{};  // the server nonce
};

struct Hello {
  uint64_t cluster_id = 0;
  Role role = Role::kCompute;
  uint16_t compute_id = 0;   // 0 for kAdmin
  // The client's OS pid, for the daemon's log only: fencing kills the process
  // the kernel names as the peer of the shm hand-off socket, never this one.
  uint32_t pid = 0;
  uint64_t incarnation = 0;  // kCompute: the process's random incarnation (never 0); kAdmin: 0
  Nonce client_nonce{};
  Digest256 mac{};
};

// What a client needs to know about the region behind a daemon.
struct RegionInfo {
  uint64_t cluster_id = 0;
  uint32_t node_id = 0;
  uint32_t layout_version = 0;
  uint64_t region_size = 0;
  uint64_t data_offset = 0;  // compute nodes may access [data_offset, region_size)
  uint64_t table_offset = 0;
  uint64_t log_offset = 0;
  uint64_t log_size = 0;
  // The serving daemon's incarnation: drawn at its start (never 0), carried
  // by its failure-detector heartbeats. The cluster record binds a memory
  // node id to it, so heartbeats of another daemon under the same id (an
  // old one of a replaced node that still runs) are not counted as the
  // node's. 0 only from a Region outside a daemon.
  uint64_t daemon_incarnation = 0;
};

struct HelloOk {
  RegionInfo region;
  Digest256 mac{};  // HMAC over hello_ok_mac_input: the daemon knows the secret
};

struct Error {
  Errc code = Errc::kProtocol;
  std::string message;
};

struct Ok {};
struct SetupTcp {
  // Every data-plane frame in both directions carries a MAC (frame.h,
  // FrameMac) keyed by frame_mac_keys. The daemon accepts both settings.
  bool frame_mac = false;
};
struct SetupShm {};

// The reply to SetupShm. The client connects to `socket_path` (a Unix
// SOCK_SEQPACKET socket in a directory only the daemon's user can write),
// presents `token` (common/wire/shm_handoff.h) and receives the open region
// file descriptor with SCM_RIGHTS; it maps it only if fstat shows `device`,
// `inode` and (for a regular file) `region_size`. The token is good for one
// hand-off, only while this control session lasts.
struct ShmInfo {
  std::string socket_path;
  std::array<uint8_t, 32> token{};
  uint64_t region_size = 0;
  uint64_t device = 0;   // st_dev of the region file
  uint64_t inode = 0;    // st_ino of the region file
  bool is_pmem = false;  // whether the daemon maps it as persistent memory
};

// Admin only: fences every listed compute id (1..kMaxFenceIds of them, each
// 1..65535) and is answered Ok once none of them can change memory any more.
// Body: u16 count | u16 compute_id[count].
inline constexpr size_t kMaxFenceIds = 1024;
struct Fence {
  std::vector<uint16_t> compute_ids;
};

struct StatsRequest {};

struct StatsReply {
  uint64_t reads = 0, writes = 0, cas = 0, faa = 0;
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t fenced_ops = 0;         // operations refused with kFenced
  uint64_t malformed_frames = 0;   // connections closed for a bad frame
  uint64_t auth_failures = 0;
  uint64_t connections_current = 0, connections_total = 0;
  uint64_t fenced_nodes = 0;       // bits set in the fence bitmap
  uint64_t bad_frame_macs = 0;     // tcp connections closed for a frame with a wrong MAC
  uint64_t fence_requests = 0;     // Fence requests answered Ok (each names one or more ids)
};

// Admin only: lets a compute id in again once pid recycling has released
// every latch it could hold (recovery/recycler.h). Every session the id had
// before stays refused (the daemon bumps the id's fence generation).
struct Unfence {
  uint16_t compute_id = 0;
};

// One end of an RDMA RC queue pair, as the other end needs it to connect
// (common/transport/verbs_device.h). `mtu` is an ibv_mtu value (1..5 =
// 256..4096 bytes): each side sends its port's active MTU and both use the
// smaller. `gid` is all zero on InfiniBand without a GRH (then `lid`
// addresses the port); on RoCE it is the GID both sides route by.
struct QpAddress {
  uint32_t qpn = 0;   // 24 bits
  uint32_t psn = 0;   // 24 bits: the first packet sequence number this end sends
  std::array<uint8_t, 16> gid{};
  uint16_t lid = 0;
  uint8_t mtu = 0;
  uint8_t link_layer = 0;  // 1 InfiniBand, 2 Ethernet (RoCE): both ends must agree
};

// Compute sessions only: asks for a verbs data plane. The client has
// created its queue pair (state INIT) and describes it; the daemon creates
// its own, connects it to the client's and answers with VerbsInfo, after
// which the client connects its queue pair and uses one-sided READ, WRITE,
// CAS and FAA on the region. The session stays a control session: its end
// destroys the daemon's queue pair. `max_rd_atomic` is how many READs and
// atomics the client keeps in flight; the daemon grants at most what its
// device allows.
struct SetupVerbs {
  QpAddress qp;
  uint8_t max_rd_atomic = 0;
};

// The reply to SetupVerbs. The compute node's accessible range
// [data_offset, region_size) is registered for it alone under `rkey`, at
// virtual address `base_va` + data_offset (so region offset x is remote
// address base_va + x). Fencing deregisters it: the rkey then fails every
// access with a remote access error, which the client reports as kFenced.
struct VerbsInfo {
  QpAddress qp;
  uint32_t rkey = 0;
  uint64_t base_va = 0;
  uint8_t max_rd_atomic = 0;  // what the daemon's queue pair accepts
};

struct RegionInfoRequest {};
struct RegionInfoReply {
  RegionInfo region;
};

using ControlMessage =
    std::variant<ServerHello, Hello, HelloOk, Error, Ok, SetupTcp, SetupShm, ShmInfo, Fence,
                 StatsRequest, StatsReply, RegionInfoRequest, RegionInfoReply, Unfence, SetupVerbs, VerbsInfo>;

ControlType control_type(const ControlMessage& m);

// Appends the framed encoding of `m` to `out`.
void encode_control(std::string& out, const ControlMessage& m);

// Length of the whole frame starting at `in`, once its 12-byte header is
// available: kNeedMore (returns 0) while fewer than 12 bytes; an error Status
// (kProtocol) for a bad magic/version or an oversized body.
Result<size_t> control_frame_length(std::span<const uint8_t> in);

// Decodes exactly one complete frame (as measured by control_frame_length).
// Pure; never reads outside `frame`.
Result<ControlMessage> decode_control(std::span<const uint8_t> frame);

// The bytes covered by Hello.mac: the label, both nonces and every field of
// `h` but its mac.
std::string hello_mac_input(const Nonce& server_nonce, const Hello& h);

// The bytes covered by HelloOk.mac: another label, both nonces, the whole
// Hello (its mac included) and the region the daemon describes.
std::string hello_ok_mac_input(const Nonce& server_nonce, const Hello& h, const RegionInfo& region);

// Session keys of the optional tcp frame MAC, one per direction, derived
// from the secret and the login's two nonces: HMAC-SHA256(secret, label ||
// server nonce || client nonce) with a label per direction. Fresh nonces
// make them unique to one connection.
struct FrameMacKeys {
  Digest256 client_to_daemon{};
  Digest256 daemon_to_client{};
};
FrameMacKeys frame_mac_keys(std::span<const uint8_t> secret, const Nonce& server_nonce, const Nonce& client_nonce);

}  // namespace pandora::wire
