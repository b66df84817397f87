// Cluster secrets: read from a file named on the command line, never from a
// flag value (flags show up in `ps`).
#pragma once

#include <string>

#include "common/status.h"

namespace pandora {

// Reads the secret in `path`: the file's content with one trailing newline
// removed. Errors (kInvalidArgument / kIo) name the file: missing, empty,
// longer than 4096 bytes. Sets *world_readable when others may read it, so
// the caller can warn.
Result<std::string> read_secret_file(const std::string& path, bool* world_readable = nullptr);

}  // namespace pandora
