// One-sided access to a memory node: the interface every backend implements
// (shm, tcp, later verbs). Protocol code sees only this header.
//
// Model (that of an RDMA RC queue pair):
//  * A Connection links one worker thread to one memory node. It is not
//    thread-safe; use one per (thread, memory node).
//  * post_*() queues an operation; nothing is guaranteed to leave the
//    process until flush() (the doorbell), so callers batch posts and ring
//    once. Operations on one connection execute in the order posted.
//  * Completions are collected with poll() (non-blocking) or wait(); each
//    carries the caller's wr_id. Every posted operation completes exactly
//    once, successfully or with an error.
//  * Buffers passed to post_read/post_write must stay valid and untouched
//    until that operation completes.
//  * Addresses are byte offsets into the memory node's region. Compute nodes
//    may access [data_begin(), data_end()); anything else completes with
//    kOutOfBounds without being sent. CAS and FAA act on 8-byte words at
//    8-byte aligned addresses (else kMisaligned).
//  * After the memory node fences this compute node, every later operation
//    completes with kFenced. When the link is lost, every outstanding and
//    later operation completes with kDisconnected (or kTimeout for those
//    whose deadline passed first); a broken connection never recovers: open
//    a new one.
//  * Durability is chosen per operation (Durability below). A WRITE, CAS or
//    FAA posted kPersistent (the default) that completes successfully is
//    persistent in the memory node's region: it survives the memory node
//    losing power. One posted kVisible completes once the memory node has
//    executed it (later operations of every compute node see it) and
//    promises nothing about power loss: the word may come back with its
//    earlier value. A backend may make every operation persistent (tcp
//    does); kVisible only allows it to skip work.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"

namespace pandora {

enum class OpType : uint8_t { kRead = 1, kWrite = 2, kCas = 3, kFaa = 4 };

// What the completion of a WRITE, CAS or FAA promises (see above). The
// engine posts latch acquisitions and releases kVisible: a latch matters
// to the compute nodes that are running, and recovery from a compute
// node's crash needs it visible, not durable; after a memory node lost
// power every latch word is stale anyway (its owners are gone). Data, log
// records and commit versions stay kPersistent. On verbs kVisible saves
// the READ that makes writes durable (a round trip at depth 1); on shm,
// the cache-line flush.
enum class Durability : uint8_t { kPersistent = 0, kVisible = 1 };

std::string_view op_name(OpType op);

struct Completion {
  uint64_t wr_id = 0;
  OpType op = OpType::kRead;
  Errc status = Errc::kOk;
  // CAS: the word's value before the operation (success iff == expected).
  // FAA: the word's value before the addition. READ/WRITE: 0.
  uint64_t value = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Reads `len` bytes at region offset `remote` into `local`.
  virtual void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) = 0;
  // Writes `len` bytes from `local` to region offset `remote`.
  // Overrides repeat the defaults of `d`, so a call through a backend's own
  // type means the same as one through Connection.
  virtual void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                          Durability d = Durability::kPersistent) = 0;
  // Atomically: if word == expected then word = desired. Completion.value is
  // the word before.
  virtual void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                        Durability d = Durability::kPersistent) = 0;
  // Atomically: word += add. Completion.value is the word before.
  virtual void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) = 0;

  // Doorbell: hands every queued operation to the transport.
  virtual void flush() = 0;

  // Moves up to out.size() completions into `out` without blocking; returns
  // how many. Also makes progress on sending (partial writes, etc.).
  virtual size_t poll(std::span<Completion> out) = 0;

  // Like poll(), but blocks up to `timeout` until at least one completion is
  // available. Returns 0 on timeout or when nothing is outstanding.
  virtual size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) = 0;

  // Operations posted (or flushed) and not yet returned by poll/wait.
  virtual size_t outstanding() const = 0;

  // kOk while usable; otherwise the error that broke it (kFenced,
  // kDisconnected, kTimeout).
  virtual Errc health() const = 0;

  // The memory node is declared failed: break the connection now, every
  // outstanding operation completing with kDisconnected, instead of waiting
  // for the operation timeout (a node cut off, not dead, never answers nor
  // closes). Later posts complete locally as on any broken connection. A
  // transport whose operations cannot hang (shm) does nothing.
  virtual void abandon() {}

  // The accessible range of the region: [data_begin, data_end).
  virtual uint64_t data_begin() const = 0;
  virtual uint64_t data_end() const = 0;

  // "shm" or "tcp" (or "verbs").
  virtual std::string_view backend() const = 0;
};

}  // namespace pandora
