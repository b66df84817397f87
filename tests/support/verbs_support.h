// Whether a test may run the verbs backend here. Only hosts with an RDMA
// device can (the Soft-RoCE VM: tests/softroce); elsewhere verbs cases
// skip, unless PANDORA_REQUIRE_VERBS=1 (set by the VM ctests) turns a
// missing device into a failure, so a VM run cannot pass by skipping.
//
//   if (backend == Backend::kVerbs) PANDORA_SKIP_WITHOUT_VERBS();
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "common/transport/verbs_device.h"

namespace pandora::testing {

// Empty when a usable RDMA device is there; else why not.
inline std::string verbs_unavailable() {
  auto dev = VerbsDevice::open(VerbsOptions{});
  return dev ? std::string() : dev.status().to_string();
}

inline bool verbs_required() {
  const char* v = std::getenv("PANDORA_REQUIRE_VERBS");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace pandora::testing

// A macro because GTEST_SKIP and FAIL return from the test body.
#define PANDORA_SKIP_WITHOUT_VERBS()                                                                          \
  do {                                                                                                        \
    if (std::string why = ::pandora::testing::verbs_unavailable(); !why.empty()) {                            \
      if (::pandora::testing::verbs_required()) FAIL() << "PANDORA_REQUIRE_VERBS=1 but no RDMA device: " << why; \
      GTEST_SKIP() << "no RDMA device here (" << why << "); the tests/softroce ctests run this in a VM";       \
    }                                                                                                         \
  } while (0)
