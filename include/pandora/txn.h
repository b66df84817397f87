// The transaction API applications program against.
//
// A Txn belongs to one session (pandora/session.h) or, inside the engine,
// to one coordinator coroutine; every call that needs remote memory waits
// for its operations, so calls look blocking.
//
//   session->run([&](pandora::Txn& t) {
//     t.begin();
//     auto a = t.update(kChecking, alice);      // latched, current value
//     if (!a) return;                           // aborted: a.reason() says why
//     add(*a, -10);                             // edit in place
//     auto b = t.update(kChecking, bob);
//     if (!b) return;
//     add(*b, +10);
//     pandora::CommitOutcome o = t.commit();    // committed, or aborted with a reason
//   });
//
// Any failed call aborts the transaction (its latches are released) and
// every later call returns the same abort until the next begin(). Values are
// byte spans of the table's value size; keys are 64-bit. Spans returned by
// read/update stay valid until the next begin().
//
// Isolation: strict serializability (OCC: latch-then-read for written
// objects, versions + latches validated for read objects).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "pandora/status.h"

namespace pandora {

enum class AbortReason : uint8_t {
  kNone = 0,
  kLatched,           // an object was latched by a live transaction
  kValidationFailed,  // a read object changed or was latched before commit
  kNotFound,          // read/update/remove of a key that does not exist
  kDuplicate,         // insert of a key that exists
  kTableFull,         // insert found no free slot within the probe limit
  kTransport,         // a memory node failed, fenced us, or timed out
  kUser,              // the application called abort()
  kInvalid,           // bad argument (unknown table, wrong value size, ...)
  kFailedOver,        // a memory node failed under it and was failed over: nothing was written; run it again
};

std::string_view abort_reason_name(AbortReason r);

// A conflict with another transaction (kLatched, kValidationFailed): the
// same transaction may commit if run again. Every other abort would repeat.
constexpr bool is_conflict(AbortReason r) {
  return r == AbortReason::kLatched || r == AbortReason::kValidationFailed;
}

// Worth running again as it is: a conflict, or a memory node's fail-over
// that caught the transaction before it was logged (the next attempt runs
// on the surviving replicas).
constexpr bool is_retryable(AbortReason r) { return is_conflict(r) || r == AbortReason::kFailedOver; }

struct CommitOutcome {
  bool committed = false;
  AbortReason reason = AbortReason::kNone;  // when !committed
  Status detail;                            // extra context for kTransport/kInvalid
};

// Result of an item access: the value, or the abort that happened.
template <typename Span>
class ItemResult {
 public:
  ItemResult(Span v) : value_(v), reason_(AbortReason::kNone) {}  // NOLINT
  ItemResult(AbortReason r) : reason_(r) {}                         // NOLINT
  explicit operator bool() const { return reason_ == AbortReason::kNone; }
  Span operator*() const { return value_; }
  AbortReason reason() const { return reason_; }

 private:
  Span value_{};
  AbortReason reason_;
};

class Txn {
 public:
  virtual ~Txn() = default;

  // Starts a new transaction (the previous one must have committed/aborted).
  virtual void begin() = 0;

  // Read-only access: the value as of this transaction.
  virtual ItemResult<std::span<const uint8_t>> read(uint32_t table, uint64_t key) = 0;

  // Like read(), but a key that does not exist is an answer, not an abort:
  // nullopt. The absence is validated at commit like any read (a concurrent
  // insert of the key that commits first aborts this transaction with
  // kValidationFailed), so it is serializable.
  virtual ItemResult<std::optional<std::span<const uint8_t>>> read_if_present(uint32_t table, uint64_t key) = 0;

  // Read-modify-write: latches the object and returns a mutable copy of its
  // current value; whatever is in the span at commit is written.
  virtual ItemResult<std::span<uint8_t>> update(uint32_t table, uint64_t key) = 0;

  // The three calls below return kNone on success, else the abort reason.

  // Blind write of a whole value (latches the object).
  virtual AbortReason write(uint32_t table, uint64_t key, std::span<const uint8_t> value) = 0;

  // Inserts a new key (kDuplicate abort if present).
  virtual AbortReason insert(uint32_t table, uint64_t key, std::span<const uint8_t> value) = 0;

  // Deletes a key (kNotFound abort if absent).
  virtual AbortReason remove(uint32_t table, uint64_t key) = 0;

  // Validates, logs, writes all replicas, then reports; then unlatches.
  virtual CommitOutcome commit() = 0;

  // Releases exactly the latches this transaction acquired.
  virtual void abort() = 0;
};

}  // namespace pandora
