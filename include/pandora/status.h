// Error codes and a small Result<T>: what every Pandora call returns, in the
// application's API and throughout the implementation.
//
// Every failure a caller can act on has its own code: a transaction that sees
// `kFenced` must stop using that memory node, one that sees `kDisconnected`
// may reconnect, `kOutOfBounds` is a bug in the caller. Codes are part of the
// tcp wire format (one byte), so their numeric values never change.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace pandora {

enum class Errc : uint8_t {
  kOk = 0,
  kFenced = 1,           // this compute node was fenced by the memory node
  kDisconnected = 2,     // the connection is gone; later operations fail too
  kOutOfBounds = 3,      // address range outside the exposed data area
  kTimeout = 4,          // no answer within the connection's time limit
  kMisaligned = 5,       // CAS/FAA on an address that is not 8-byte aligned
  kInvalidArgument = 6,  // bad input from the caller (flag, config, length)
  kProtocol = 7,         // the peer sent something that violates the protocol
  kAuthFailed = 8,       // wrong cluster id or secret
  kIo = 9,               // an operating-system call failed
  kCorrupt = 10,         // a persistent structure failed validation
  kMismatch = 11,        // a persistent structure belongs to something else
  kUnsupported = 12,     // the peer does not offer what was asked for
  // Coordination-service outcomes (ZooKeeper). They never cross the tcp data
  // plane, whose wire formats accept codes up to kUnsupported only.
  kNotFound = 13,        // the named node or record does not exist
  kAlreadyExists = 14,   // creating something that exists already
  kConflict = 15,        // a conditional update lost a race (version moved)
  kUnavailable = 16,     // no quorum / no ensemble answers: retry later
};

// Stable, lower-case name of a code ("fenced", "out-of-bounds", ...).
std::string_view errc_name(Errc code);

// A code plus a human-readable message saying what went wrong and, where the
// user can fix it, how.
class Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == Errc::kOk; }
  explicit operator bool() const { return is_ok(); }
  Errc code() const { return code_; }
  const std::string& message() const { return message_; }

  // "out-of-bounds: read of 64 bytes at 0x... exceeds region of ... bytes"
  std::string to_string() const;

 private:
  Errc code_ = Errc::kOk;
  std::string message_;
};

// Either a value or a non-ok Status. Deliberately tiny: std::expected is
// C++23 and not in the toolchains we target.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}    // NOLINT: implicit by design
  Result(Errc code, std::string message) : v_(Status(code, std::move(message))) {}

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }

  // The error; Status::ok() when a value is held.
  Status status() const { return is_ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace pandora
