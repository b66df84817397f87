#include "common/transport/shm_connection.h"

#include <libpmem.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/region_layout.h"
#include "common/word_copy.h"
#include "common/transport/fd_passing.h"
#include "common/transport/op_check.h"
#include "common/wire/shm_handoff.h"

namespace pandora {

namespace {

using transport_detail::check_op;

// The control session is polled for EOF at most this often (one syscall).
constexpr std::chrono::milliseconds kSessionCheckInterval{1};

}  // namespace

Result<net::UniqueFd> ShmConnection::fetch_region_fd(const wire::ShmInfo& shm, std::chrono::milliseconds timeout) {
  const net::Deadline deadline = net::deadline_after(timeout);
  Result<net::UniqueFd> sock = net::connect_unix(shm.socket_path, deadline);
  if (!sock) {
    return Status(sock.status().code(), fmt::format("shm hand-off socket of the memory daemon: {}",
                                                    sock.status().message()));
  }
  wire::ShmFdRequest request;
  request.token = shm.token;
  if (Status s = net::send_message(sock->get(), {reinterpret_cast<const uint8_t*>(&request), sizeof(request)}, -1,
                                   deadline);
      !s) {
    return s;
  }
  wire::ShmFdReply reply;
  net::UniqueFd fd;
  Result<size_t> n =
      net::recv_message(sock->get(), {reinterpret_cast<uint8_t*>(&reply), sizeof(reply)}, &fd, deadline);
  if (!n) return n.status();
  if (*n != sizeof(reply) || reply.magic != wire::kShmHandoffMagic || reply.version != wire::kShmHandoffVersion) {
    return Status(Errc::kProtocol, "malformed reply on the shm hand-off socket");
  }
  if (reply.status != 0) {
    const auto code = reply.status <= static_cast<uint8_t>(Errc::kUnavailable) ? static_cast<Errc>(reply.status)
                                                                                : Errc::kProtocol;
    return Status(code, fmt::format("the memory daemon refused the shm hand-off: {}", reply.message_text()));
  }
  if (!fd.valid()) return Status(Errc::kProtocol, "the shm hand-off reply carries no file descriptor");
  return fd;
}

Result<std::unique_ptr<Connection>> ShmConnection::open(net::UniqueFd control_fd, const wire::RegionInfo& region,
                                                        const wire::ShmInfo& shm, net::UniqueFd region_fd,
                                                        uint16_t compute_id) {
  if (compute_id == 0) return Status(Errc::kInvalidArgument, "shm connection needs a compute id (1..65535)");
  const long page = ::sysconf(_SC_PAGESIZE);
  if (region.data_offset < kFenceBitmapOffset + kFenceBitmapBytes || region.data_offset > region.region_size ||
      region.data_offset % static_cast<uint64_t>(page) != 0 || shm.region_size != region.region_size) {
    return Status(Errc::kProtocol,
                  fmt::format("inconsistent region description: size {} (shm info {}), data offset {}",
                              region.region_size, shm.region_size, region.data_offset));
  }
  // The descriptor must be the very file the daemon described: a regular
  // file of exactly the region's size, or a DAX character device.
  struct stat st {};
  if (::fstat(region_fd.get(), &st) != 0) {
    return Status(Errc::kIo, fmt::format("fstat of the region descriptor: {}", std::strerror(errno)));
  }
  const bool regular = S_ISREG(st.st_mode);
  if ((!regular && !S_ISCHR(st.st_mode)) || static_cast<uint64_t>(st.st_dev) != shm.device ||
      static_cast<uint64_t>(st.st_ino) != shm.inode ||
      (regular && static_cast<uint64_t>(st.st_size) != shm.region_size)) {
    return Status(Errc::kMismatch,
                  fmt::format("the region descriptor is not the file the daemon described (device {:#x} inode {} "
                              "size {}; got device {:#x} inode {} size {})",
                              shm.device, shm.inode, shm.region_size, static_cast<uint64_t>(st.st_dev),
                              static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size)));
  }
  void* p = ::mmap(nullptr, region.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd.get(), 0);
  if (p == MAP_FAILED) {
    return Status(Errc::kIo, fmt::format("cannot map the region: {}", std::strerror(errno)));
  }
  region_fd.reset();  // the mapping keeps the file
  const size_t mapped_len = region.region_size;
  auto* base = static_cast<uint8_t*>(p);
  auto fail = [&](Errc code, std::string msg) -> Result<std::unique_ptr<Connection>> {
    ::munmap(p, mapped_len);
    return Status(code, std::move(msg));
  };
  RegionHeader header;
  std::memcpy(&header, base + kRegionHeaderOffset, sizeof(header));
  if (header.magic != kRegionMagic || header.cluster_id != region.cluster_id ||
      header.region_size != region.region_size || header.data_offset != region.data_offset) {
    return fail(Errc::kMismatch, fmt::format("the mapped file is not the region the daemon described (cluster {:#x})",
                                             region.cluster_id));
  }
  if (::mprotect(p, region.data_offset, PROT_READ) != 0) {
    return fail(Errc::kIo, fmt::format("mprotect of the region header: {}", std::strerror(errno)));
  }
  // The daemon owns the region and knows whether it is persistent memory
  // (real DAX or forced on /dev/shm); trust either verdict.
  bool is_pmem = shm.is_pmem || pmem_is_pmem(p, mapped_len) != 0;
  return std::unique_ptr<Connection>(
      new ShmConnection(std::move(control_fd), region, base, mapped_len, is_pmem, compute_id));
}

ShmConnection::ShmConnection(net::UniqueFd control_fd, const wire::RegionInfo& region, uint8_t* base,
                             size_t mapped_len, bool is_pmem, uint16_t compute_id)
    : control_fd_(std::move(control_fd)),
      base_(base),
      mapped_len_(mapped_len),
      is_pmem_(is_pmem),
      lo_(region.data_offset),
      hi_(region.region_size),
      fence_word_(reinterpret_cast<const uint64_t*>(base + fence_word_offset(compute_id))),
      fence_mask_(fence_bit_mask(compute_id)) {}

ShmConnection::~ShmConnection() { ::munmap(base_, mapped_len_); }

void ShmConnection::post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) {
  post({OpType::kRead, len, remote, local, 0, 0, wr_id, Durability::kVisible});
}

void ShmConnection::post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id, Durability d) {
  // The pointer is only read from; constness is restored in execute().
  post({OpType::kWrite, len, remote, const_cast<void*>(local), 0, 0, wr_id, d});
}

void ShmConnection::post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id, Durability d) {
  post({OpType::kCas, 8, remote, nullptr, expected, desired, wr_id, d});
}

void ShmConnection::post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d) {
  post({OpType::kFaa, 8, remote, nullptr, add, 0, wr_id, d});
}

bool ShmConnection::fenced() const { return (__atomic_load_n(fence_word_, __ATOMIC_ACQUIRE) & fence_mask_) != 0; }

void ShmConnection::persist(const void* addr, size_t len) {
  ++persists_;
  if (is_pmem_) {
    pmem_persist(addr, len);
  } else if (pmem_msync(addr, len) != 0) {
    // Not durable: the operation must not report success.
    health_ = Errc::kIo;
  }
}

void ShmConnection::check_control_session() {
  if (health_ != Errc::kOk) return;
  auto now = std::chrono::steady_clock::now();
  if (now < next_session_check_) return;
  next_session_check_ = now + kSessionCheckInterval;
  if (net::peer_closed(control_fd_.get())) health_ = Errc::kDisconnected;
}

Completion ShmConnection::execute(const PostedOp& op) {
  Completion c{op.wr_id, op.op, Errc::kOk, 0};
  if (health_ != Errc::kOk) {
    c.status = health_;
    return c;
  }
  c.status = check_op(op.op, op.remote, op.len, lo_, hi_);
  if (c.status != Errc::kOk) return c;
  if (fenced()) {
    health_ = Errc::kFenced;
    c.status = Errc::kFenced;
    return c;
  }
  uint8_t* at = base_ + op.remote;
  const bool durable = op.durability == Durability::kPersistent;
  switch (op.op) {
    case OpType::kRead:
      copy_from_region(op.local, at, op.len);
      break;
    case OpType::kWrite:
      copy_to_region(at, op.local, op.len);
      if (durable) persist(at, op.len);
      break;
    case OpType::kCas: {
      uint64_t observed = op.a;
      __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(at), &observed, op.b, false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      c.value = observed;
      if (durable && observed == op.a) persist(at, 8);
      break;
    }
    case OpType::kFaa:
      c.value = __atomic_fetch_add(reinterpret_cast<uint64_t*>(at), op.a, __ATOMIC_SEQ_CST);
      if (durable) persist(at, 8);
      break;
  }
  // persist() breaks the connection when msync fails; this op failed too.
  if (health_ != Errc::kOk) c.status = health_;
  return c;
}

void ShmConnection::flush() {
  if (posted_.empty()) return;
  check_control_session();
  while (!posted_.empty()) {
    done_.push_back(execute(posted_.front()));
    posted_.pop_front();
  }
}

size_t ShmConnection::poll(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && !done_.empty()) {
    out[n++] = done_.front();
    done_.pop_front();
  }
  return n;
}

size_t ShmConnection::wait(std::span<Completion> out, std::chrono::milliseconds /*timeout*/) {
  // Everything flushed has already executed; unflushed operations cannot
  // complete by waiting. So there is never anything to block for.
  return poll(out);
}

}  // namespace pandora
