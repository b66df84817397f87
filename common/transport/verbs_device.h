// RDMA device plumbing shared by both ends of the verbs data plane: opening
// a device and choosing its port, GID and MTU; RAII handles for verbs
// objects; the queue pair state transitions of an RC connection.
//
// Nothing is hard-coded: the device, port, GID index and MTU are discovered
// (first device with an active port, its first active port, the RoCE v2 GID
// of an IPv4 address when there is one, the port's active MTU) or given in
// VerbsOptions, and describe() says what was chosen so a user can check it
// (the most common failure of RDMA deployments is a wrong GID or MTU
// written into a config file).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/options.h"
#include "common/status.h"
#include "common/wire/control.h"

namespace pandora {

struct VerbsOptions {
  std::string device;  // e.g. "mlx5_0", "rxe0"; empty: the first device with an active port
  uint8_t port = 0;    // 1-based; 0: the device's first active port
  int gid_index = -1;  // -1: discover (RoCE v2 of an IPv4 address, then any RoCE v2, then index 0)
  uint32_t mtu = 0;    // bytes (256..4096, a power of two); 0: the port's active MTU
  // Local ACK timeout exponent: 4.096 us * 2^ack_timeout per attempt, 7
  // attempts. 14 (67 ms) suits a real network; a slow or emulated one
  // (Soft-RoCE under a starved vCPU) retransmits needlessly at 14.
  uint8_t ack_timeout = 14;

  // kInvalidArgument naming the bad field.
  Status validate() const;
};

// The command-line form of VerbsOptions, shared by pandora-memd and the
// compute binaries: --rdma-device, --rdma-port, --rdma-gid-index, --rdma-mtu,
// --rdma-ack-timeout.
struct VerbsFlags {
  std::string device;
  uint64_t port = 0;
  std::string gid_index = "auto";
  uint64_t mtu = 0;
  uint64_t ack_timeout = 14;

  void declare(OptionSet& opts);
  // kInvalidArgument naming the flag.
  Result<VerbsOptions> to_options() const;
};

struct VerbsDeleter {
  void operator()(ibv_context* p) const;
  void operator()(ibv_pd* p) const;
  void operator()(ibv_cq* p) const;
  void operator()(ibv_comp_channel* p) const;
  void operator()(ibv_qp* p) const;
  void operator()(ibv_mr* p) const;
};
template <typename T>
using VerbsPtr = std::unique_ptr<T, VerbsDeleter>;

// An opened device with one protection domain and the chosen port.
class VerbsDevice {
 public:
  // kUnsupported when there is no RDMA device (or none with an active
  // port), with a hint; kInvalidArgument for a named device/port/GID that
  // does not exist; kIo when a verbs call fails.
  static Result<std::unique_ptr<VerbsDevice>> open(const VerbsOptions& options);

  ibv_context* context() const { return ctx_.get(); }
  ibv_pd* pd() const { return pd_.get(); }
  const ibv_device_attr& attr() const { return attr_; }
  uint8_t port() const { return port_; }
  int gid_index() const { return gid_index_; }
  const ibv_gid& gid() const { return gid_; }
  uint16_t lid() const { return lid_; }
  uint8_t link_layer() const { return link_layer_; }  // wire::QpAddress::link_layer
  ibv_mtu mtu() const { return mtu_; }                // what this end offers (<= active)
  const std::string& name() const { return name_; }
  // "rxe0 port 1, GID[1] ::ffff:10.0.2.15 (RoCE v2), MTU 4096"
  std::string describe() const;

  // This end's address for a queue pair created on this device.
  wire::QpAddress address(const ibv_qp* qp, uint32_t psn) const;

 private:
  VerbsDevice() = default;
  VerbsPtr<ibv_context> ctx_;
  VerbsPtr<ibv_pd> pd_;
  ibv_device_attr attr_{};
  uint8_t port_ = 0;
  int gid_index_ = 0;
  ibv_gid gid_{};
  int gid_type_ = -1;
  uint16_t lid_ = 0;
  uint8_t link_layer_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  std::string name_;
};

// A random 24-bit packet sequence number (a fresh one per connection, so a
// late packet of an earlier connection is never taken for a new one's).
uint32_t random_psn();

// RC queue pair transitions. `access` is the remote access the responder
// side grants (IBV_ACCESS_REMOTE_*); the requester passes 0.
Status qp_to_init(ibv_qp* qp, uint8_t port, int access);
// Connects to `remote`: path MTU is the smaller of both ends' offers;
// `max_dest_rd_atomic` is how many READs/atomics of the peer this end accepts
// in flight. kInvalidArgument when the link layers differ.
Status qp_to_rtr(ibv_qp* qp, const VerbsDevice& dev, const wire::QpAddress& local, const wire::QpAddress& remote,
                 uint8_t max_dest_rd_atomic);
// `max_rd_atomic`: READs/atomics this end keeps in flight; `ack_timeout`:
// VerbsOptions::ack_timeout.
Status qp_to_rts(ibv_qp* qp, uint32_t psn, uint8_t max_rd_atomic, uint8_t ack_timeout = 14);

// ibv_reg_mr with the access flags as a plain int (the header's macro mixes
// two enum types when given an enumerator).
ibv_mr* register_memory(ibv_pd* pd, void* addr, size_t length, int access);

// MTU in bytes of an ibv_mtu code (0 for an unknown code).
uint32_t mtu_bytes(int mtu);
// The ibv_mtu code of an MTU in bytes (0 unless it is 256, 512, ..., 4096).
int mtu_code(uint32_t bytes);

}  // namespace pandora
