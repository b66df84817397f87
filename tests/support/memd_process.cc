#include "tests/support/memd_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pandora::testing {

const char* memd_binary() { return PANDORA_MEMD_PATH; }

TempDir::TempDir() : pandora::TempDir("pandora-test") {
  if (!ok()) throw std::runtime_error(status().message());
}

LocalMemdOptions local_memd_options(const MemdOptions& o) {
  LocalMemdOptions l;
  l.binary = memd_binary();
  l.node_id = o.node_id;
  l.cluster_id = o.cluster_id;
  l.size = o.size;
  l.log_size = o.log_size;
  l.threads = o.threads;
  l.secret = o.secret;
  l.extra_args = o.extra_args;
  return l;
}

int run_command(const std::vector<std::string>& argv, std::string* output, int timeout_seconds) {
  char templ[] = "/tmp/pandora-cmd-XXXXXX";
  const int fd = ::mkstemp(templ);
  if (fd < 0) return -1;
  ::close(fd);
  const std::string out_path = templ;
  auto pid = spawn_with_output(argv, out_path, /*append=*/false);
  if (!pid) {
    ::unlink(out_path.c_str());
    return -1;
  }
  const int rc = wait_child(*pid, std::chrono::seconds(timeout_seconds));
  if (rc < 0) {
    ::kill(*pid, SIGKILL);
    int status = 0;
    ::waitpid(*pid, &status, 0);
  }
  if (output) {
    std::ifstream in(out_path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    *output = ss.str();
  }
  ::unlink(out_path.c_str());
  return rc;
}

}  // namespace pandora::testing
