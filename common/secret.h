// Cluster secrets: read from a file named on the command line, never from a
// flag value (flags show up in `ps`).
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace pandora {

// The shortest secret accepted: 16 bytes (128 bits when random). A shorter
// one can be guessed offline from one recorded handshake.
inline constexpr size_t kMinSecretBytes = 16;
inline constexpr size_t kMaxSecretBytes = 4096;

// Reads the secret in `path`: the file's content with one trailing newline
// removed. The one rule every program that reads a secret file applies
// (daemon, compute nodes, tools), so no binary is laxer than another.
// Refused, with an error naming the file (kInvalidArgument / kIo): missing,
// empty, shorter than kMinSecretBytes, longer than kMaxSecretBytes, or a
// regular file that its group or other users may read (chmod 600). Pipes
// (`--secret-file <(vault read ...)`) are accepted: their mode says nothing
// about who can read the secret.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace pandora
