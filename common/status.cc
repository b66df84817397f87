#include "common/status.h"

namespace pandora {

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::kOk: return "ok";
    case Errc::kFenced: return "fenced";
    case Errc::kDisconnected: return "disconnected";
    case Errc::kOutOfBounds: return "out-of-bounds";
    case Errc::kTimeout: return "timeout";
    case Errc::kMisaligned: return "misaligned";
    case Errc::kInvalidArgument: return "invalid-argument";
    case Errc::kProtocol: return "protocol-error";
    case Errc::kAuthFailed: return "auth-failed";
    case Errc::kIo: return "io-error";
    case Errc::kCorrupt: return "corrupt";
    case Errc::kMismatch: return "mismatch";
    case Errc::kUnsupported: return "unsupported";
    case Errc::kNotFound: return "not-found";
    case Errc::kAlreadyExists: return "already-exists";
    case Errc::kConflict: return "conflict";
    case Errc::kUnavailable: return "unavailable";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s(errc_name(code_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

}  // namespace pandora
