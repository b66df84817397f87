// What this build is: the git commit it was built from, embedded at build
// time (cmake/PandoraGitDescribe.cmake), so a report says which code made it.
#pragma once

namespace pandora::workloads {

// `git describe --always --dirty` of the source tree when it was built
// ("3f2a1c9", "3f2a1c9-dirty"), or "unknown" when built outside a git
// checkout (a tarball).
const char* build_git_commit();

}  // namespace pandora::workloads
