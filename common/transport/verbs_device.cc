#include "common/transport/verbs_device.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace pandora {

namespace {

Status verbs_error(std::string_view what, int err) {
  return Status(Errc::kIo, fmt::format("{}: {}", what, std::strerror(err)));
}

bool gid_is_zero(const ibv_gid& g) {
  for (uint8_t b : g.raw) {
    if (b != 0) return false;
  }
  return true;
}

// ::ffff:a.b.c.d, the form RoCE v2 GIDs of IPv4 addresses take.
bool gid_is_ipv4_mapped(const ibv_gid& g) {
  for (int i = 0; i < 10; ++i) {
    if (g.raw[i] != 0) return false;
  }
  return g.raw[10] == 0xff && g.raw[11] == 0xff;
}

std::string gid_text(const ibv_gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET6, g.raw, buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

const char* gid_type_name(int t) {
  switch (t) {
    case IBV_GID_TYPE_IB: return "IB";
    case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
  }
  return "unknown type";
}

const char* kNoDeviceHint =
    "check `rdma link` / `ibv_devices`; for Soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "
    "<interface>; in this repository, deploy/softroce-vm/run.sh runs commands in a VM that has one";

struct DeviceList {
  ibv_device** list = nullptr;
  int count = 0;
  ~DeviceList() {
    if (list != nullptr) ibv_free_device_list(list);
  }
};

// The first ACTIVE port of `ctx`, or 0.
uint8_t first_active_port(ibv_context* ctx, const ibv_device_attr& attr) {
  for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) return p;
  }
  return 0;
}

}  // namespace

Status VerbsOptions::validate() const {
  if (mtu != 0 && mtu_code(mtu) == 0) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("RDMA MTU {} must be 256, 512, 1024, 2048 or 4096 bytes (0: the port's active MTU)", mtu));
  }
  if (ack_timeout < 1 || ack_timeout > 31) {
    return Status(Errc::kInvalidArgument, fmt::format("RDMA ACK timeout exponent {} must be in 1..31", ack_timeout));
  }
  if (gid_index < -1 || gid_index > 65535) {
    return Status(Errc::kInvalidArgument, fmt::format("RDMA GID index {} must be -1 (discover) or 0..65535", gid_index));
  }
  if (device.size() > IBV_SYSFS_NAME_MAX) {
    return Status(Errc::kInvalidArgument, "RDMA device name is too long");
  }
  return Status::ok();
}

void VerbsFlags::declare(OptionSet& opts) {
  opts.add_string("rdma-device", &device,
                  "verbs: RDMA device (e.g. mlx5_0, rxe0; `ibv_devices` lists them); empty: the first one with an "
                  "active port");
  opts.add_u64("rdma-port", &port, "verbs: device port (1-based); 0: the first active one", 0, 255);
  opts.add_string("rdma-gid-index", &gid_index,
                  "verbs: GID table index (`show_gids` lists them); auto: the RoCE v2 GID of an IPv4 address, else "
                  "any RoCE v2 GID, else the first");
  opts.add_u64("rdma-mtu", &mtu, "verbs: path MTU in bytes (256..4096); 0: the port's active MTU", 0, 4096);
  opts.add_u64("rdma-ack-timeout", &ack_timeout,
               "verbs: local ACK timeout exponent, 4.096 us x 2^N per attempt (14 = 67 ms; raise it on slow or "
               "emulated networks, e.g. 18 in the Soft-RoCE VM)",
               1, 31);
}

Result<VerbsOptions> VerbsFlags::to_options() const {
  VerbsOptions o;
  o.device = device;
  o.port = static_cast<uint8_t>(port);
  o.mtu = static_cast<uint32_t>(mtu);
  o.ack_timeout = static_cast<uint8_t>(ack_timeout);
  if (gid_index != "auto") {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(gid_index.c_str(), &end, 10);
    if (gid_index.empty() || end == nullptr || *end != '\0' || errno != 0 || v < 0 || v > 65535) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("--rdma-gid-index '{}' must be 'auto' or a number in 0..65535", gid_index));
    }
    o.gid_index = static_cast<int>(v);
  }
  if (mtu != 0 && mtu_code(static_cast<uint32_t>(mtu)) == 0) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("--rdma-mtu {} must be 256, 512, 1024, 2048 or 4096 (0: the port's active MTU)", mtu));
  }
  if (Status s = o.validate(); !s) {
    return Status(Errc::kInvalidArgument, fmt::format("--rdma-device/--rdma-port: {}", s.message()));
  }
  return o;
}

void VerbsDeleter::operator()(ibv_context* p) const { ibv_close_device(p); }
void VerbsDeleter::operator()(ibv_pd* p) const { ibv_dealloc_pd(p); }
void VerbsDeleter::operator()(ibv_cq* p) const { ibv_destroy_cq(p); }
void VerbsDeleter::operator()(ibv_comp_channel* p) const { ibv_destroy_comp_channel(p); }
void VerbsDeleter::operator()(ibv_qp* p) const { ibv_destroy_qp(p); }
void VerbsDeleter::operator()(ibv_mr* p) const { ibv_dereg_mr(p); }

ibv_mr* register_memory(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr(pd, addr, length, access);
}

int mtu_code(uint32_t bytes) {
  for (int m = IBV_MTU_256; m <= IBV_MTU_4096; ++m) {
    if (mtu_bytes(m) == bytes) return m;
  }
  return 0;
}

uint32_t mtu_bytes(int mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

Result<std::unique_ptr<VerbsDevice>> VerbsDevice::open(const VerbsOptions& options) {
  if (Status s = options.validate(); !s) return s;
  DeviceList devices;
  devices.list = ibv_get_device_list(&devices.count);
  if (devices.list == nullptr || devices.count == 0) {
    return Status(Errc::kUnsupported, fmt::format("no RDMA device on this host ({})", kNoDeviceHint));
  }

  std::unique_ptr<VerbsDevice> dev(new VerbsDevice());
  std::vector<std::string> tried;
  for (int i = 0; i < devices.count; ++i) {
    const char* name = ibv_get_device_name(devices.list[i]);
    if (!options.device.empty() && options.device != name) continue;
    VerbsPtr<ibv_context> ctx(ibv_open_device(devices.list[i]));
    if (!ctx) return verbs_error(fmt::format("ibv_open_device({})", name), errno);
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(ctx.get(), &attr); rc != 0) {
      return verbs_error(fmt::format("ibv_query_device({})", name), rc);
    }
    uint8_t port = options.port;
    if (port == 0) {
      port = first_active_port(ctx.get(), attr);
      if (port == 0) {
        tried.push_back(fmt::format("{} (no active port)", name));
        continue;
      }
    } else if (port > attr.phys_port_cnt) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("RDMA device {} has {} port(s); port {} does not exist", name, attr.phys_port_cnt, port));
    }
    dev->ctx_ = std::move(ctx);
    dev->attr_ = attr;
    dev->port_ = port;
    dev->name_ = name;
    break;
  }
  if (!dev->ctx_) {
    if (!options.device.empty() && tried.empty()) {
      std::string names;
      for (int i = 0; i < devices.count; ++i) names += fmt::format("{}{}", i ? ", " : "", ibv_get_device_name(devices.list[i]));
      return Status(Errc::kInvalidArgument,
                    fmt::format("no RDMA device named '{}' (this host has: {})", options.device, names));
    }
    return Status(Errc::kUnsupported, fmt::format("no RDMA device with an active port (found: {}; {})",
                                                  fmt::join(tried, ", "), kNoDeviceHint));
  }

  ibv_port_attr pa{};
  if (int rc = ibv_query_port(dev->ctx_.get(), dev->port_, &pa); rc != 0) {
    return verbs_error(fmt::format("ibv_query_port({} port {})", dev->name_, dev->port_), rc);
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    return Status(Errc::kUnavailable, fmt::format("RDMA device {} port {} is not active (state {})", dev->name_,
                                                  dev->port_, ibv_port_state_str(pa.state)));
  }
  dev->lid_ = pa.lid;
  dev->link_layer_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
  dev->mtu_ = pa.active_mtu;
  if (options.mtu != 0) {
    const auto want = static_cast<ibv_mtu>(mtu_code(options.mtu));  // validate() checked it
    if (want > pa.active_mtu) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("RDMA MTU {} exceeds the active MTU {} of {} port {} (the network interface's MTU "
                                "must be larger: ip link set <dev> mtu 9000)",
                                options.mtu, mtu_bytes(pa.active_mtu), dev->name_, dev->port_));
    }
    dev->mtu_ = want;
  }

  // GID: given, or discovered. On RoCE every path needs one; on InfiniBand
  // the LID addresses the port and the GID only matters across subnets.
  auto query = [&](int index, ibv_gid_entry* e) {
    return ibv_query_gid_ex(dev->ctx_.get(), dev->port_, static_cast<uint32_t>(index), e, 0) == 0 &&
           !gid_is_zero(e->gid);
  };
  ibv_gid_entry chosen{};
  bool found = false;
  if (options.gid_index >= 0) {
    if (options.gid_index >= pa.gid_tbl_len || !query(options.gid_index, &chosen)) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("GID index {} of {} port {} is empty or out of range (table of {}; `show_gids` "
                                "lists them)",
                                options.gid_index, dev->name_, dev->port_, pa.gid_tbl_len));
    }
    found = true;
  } else {
    int best_rank = 0;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid_entry e{};
      if (!query(i, &e)) continue;
      const int rank = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? (gid_is_ipv4_mapped(e.gid) ? 3 : 2) : 1;
      if (rank > best_rank) {
        best_rank = rank;
        chosen = e;
        found = true;
      }
    }
  }
  if (found) {
    dev->gid_index_ = static_cast<int>(chosen.gid_index);
    dev->gid_ = chosen.gid;
    dev->gid_type_ = static_cast<int>(chosen.gid_type);
  } else if (dev->link_layer_ == 2) {
    return Status(Errc::kUnavailable,
                  fmt::format("{} port {} is RoCE but has no GID: give its network interface an IP address",
                              dev->name_, dev->port_));
  }

  dev->pd_.reset(ibv_alloc_pd(dev->ctx_.get()));
  if (!dev->pd_) return verbs_error(fmt::format("ibv_alloc_pd({})", dev->name_), errno);
  return dev;
}

std::string VerbsDevice::describe() const {
  std::string gid = gid_type_ >= 0 ? fmt::format("GID[{}] {} ({})", gid_index_, gid_text(gid_), gid_type_name(gid_type_))
                                   : std::string("no GID");
  return fmt::format("{} port {}, {}, LID {}, MTU {}", name_, port_, gid, lid_, mtu_bytes(mtu_));
}

wire::QpAddress VerbsDevice::address(const ibv_qp* qp, uint32_t psn) const {
  wire::QpAddress a;
  a.qpn = qp->qp_num;
  a.psn = psn & 0xffffff;
  std::memcpy(a.gid.data(), gid_.raw, a.gid.size());
  a.lid = lid_;
  a.mtu = static_cast<uint8_t>(mtu_);
  a.link_layer = link_layer_;
  return a;
}

uint32_t random_psn() {
  uint32_t v = 0;
  if (::getrandom(&v, sizeof(v), 0) != sizeof(v)) v = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&v));
  return v & 0xffffff;
}

Status qp_to_init(ibv_qp* qp, uint8_t port, int access) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port;
  a.qp_access_flags = access;
  if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS); rc != 0) {
    return verbs_error("queue pair to INIT", rc);
  }
  return Status::ok();
}

Status qp_to_rtr(ibv_qp* qp, const VerbsDevice& dev, const wire::QpAddress& local, const wire::QpAddress& remote,
                 uint8_t max_dest_rd_atomic) {
  if (remote.link_layer != local.link_layer) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("the peer's RDMA port is {} and ours is {}: they cannot connect",
                              remote.link_layer == 2 ? "Ethernet (RoCE)" : "InfiniBand",
                              local.link_layer == 2 ? "Ethernet (RoCE)" : "InfiniBand"));
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min(local.mtu, remote.mtu));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = max_dest_rd_atomic;
  // 12: 0.64 ms before a receiver-not-ready retry. One-sided operations
  // never need a posted receive, so RNR only happens with a broken peer.
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = dev.port();
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = 0;
  bool remote_gid = false;
  for (uint8_t b : remote.gid) remote_gid |= b != 0;
  if (local.link_layer == 2 || remote_gid) {
    // RoCE routes by GID (a global route header on every packet).
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), remote.gid.size());
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev.gid_index());
    a.ah_attr.grh.hop_limit = 64;
  }
  const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int rc = ibv_modify_qp(qp, &a, mask); rc != 0) return verbs_error("queue pair to RTR", rc);
  return Status::ok();
}

Status qp_to_rts(ibv_qp* qp, uint32_t psn, uint8_t max_rd_atomic, uint8_t ack_timeout) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = psn & 0xffffff;
  // 14: 4.096 us * 2^14 = 67 ms per attempt, 7 retries: a peer that stopped
  // answering fails the operation in about half a second (the control
  // session usually tells sooner).
  a.timeout = ack_timeout;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = max_rd_atomic;
  const int mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                   IBV_QP_MAX_QP_RD_ATOMIC;
  if (int rc = ibv_modify_qp(qp, &a, mask); rc != 0) return verbs_error("queue pair to RTS", rc);
  return Status::ok();
}

}  // namespace pandora
