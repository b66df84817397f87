// The built programs a local cluster starts, for tests whose target calls
// pandora_use_cluster_binaries() (tests/recovery/CMakeLists.txt).
#pragma once

#include "tests/support/local_cluster.h"

namespace pandora::testing {

inline LocalClusterOptions built_cluster_options() {
  LocalClusterOptions o;
  o.fd_binary = PANDORA_CLUSTER_FD;
  o.ctl_binary = PANDORA_CLUSTER_CTL;
  o.bench_binary = PANDORA_CLUSTER_BENCH;
  o.memd_binary = PANDORA_CLUSTER_MEMD;
  return o;
}

}  // namespace pandora::testing
