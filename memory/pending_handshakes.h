// The control plane's book of connections that have not authenticated yet,
// and the choice of which one to give up when a new connection needs room.
//
// Anyone who can reach the port can open connections and never log in. A
// table that refuses new connections once full lets such a peer lock every
// real client out; this one never refuses. Instead, before a connection from
// address A is added:
//   1. if A already has `max_per_peer` pending handshakes, A's oldest is
//      evicted (a peer only ever competes with itself);
//   2. else if `max_total` are pending, the oldest handshake of the address
//      with the most pending ones is evicted (ties: the oldest handshake
//      among those addresses), so a flood from some addresses cannot push
//      out a client that has one handshake pending elsewhere.
// An address is the peer's IP address without the port (all of a host's
// sockets are one peer). Ids are the caller's connection ids, which must
// increase with the order of acceptance ("oldest" is the smallest id).
//
//   PendingHandshakes pending(1024, 128);
//   while (auto victim = pending.victim_for(addr)) close(*victim);  // close() calls remove()
//   pending.add(id, addr);
//   ... pending.remove(id);   // logged in, failed, timed out or evicted
//
// Cost: add/remove O(max_per_peer); choosing a victim for a full table scans
// the addresses (at most max_total). Not thread-safe (the control plane's
// event loop owns it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pandora::memd {

class PendingHandshakes {
 public:
  // Both limits are at least 1 (smaller values are raised to 1).
  PendingHandshakes(size_t max_total, size_t max_per_peer);

  // The pending handshake to evict before one more from `addr` may be
  // added, or nullopt when there is room. Call until nullopt, removing each
  // victim.
  std::optional<uint64_t> victim_for(std::string_view addr) const;
  // The oldest handshake of the address with the most pending ones (rule 2
  // above), or nullopt when nothing is pending: what to give up when the
  // process runs out of file descriptors.
  std::optional<uint64_t> busiest_oldest() const;

  // Records handshake `id` from `addr` (ids increase with acceptance).
  void add(uint64_t id, std::string_view addr);
  // Forgets `id`; unknown ids are ignored.
  void remove(uint64_t id);

  size_t size() const { return addr_of_.size(); }
  size_t count(std::string_view addr) const;
  size_t max_total() const { return max_total_; }
  size_t max_per_peer() const { return max_per_peer_; }

 private:
  size_t max_total_;
  size_t max_per_peer_;
  std::unordered_map<std::string, std::deque<uint64_t>> by_addr_;  // ids in acceptance order
  std::unordered_map<uint64_t, std::string> addr_of_;
};

}  // namespace pandora::memd
