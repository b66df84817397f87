// Replacing a file atomically without trusting the directory's other users.
//
// The content goes to a temporary file created with mkostemp in the
// target's directory (O_CREAT|O_EXCL under an unpredictable name: a symlink
// planted at any name is never followed, and an existing file is never
// opened), is fsynced, and is renamed over the target (rename(2) replaces a
// symlink at the target itself, never the file it points to); then the
// directory is fsynced. A reader sees the old content or the new one, never
// a part. Every failure removes the temporary file.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace pandora {

// Writes `content` to `path` as described above; the file gets `mode`
// (not subject to the umask). kIo naming the path and the reason.
Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode = 0644);

}  // namespace pandora
