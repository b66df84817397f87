// The committed fuzz seeds (tests/fuzz/seeds, written by make_seeds.py from
// the documented layouts, not by the C++ encoders) must stay valid: a seed
// the decoders reject would only teach the fuzzer about error paths. This
// also cross-checks the codecs against that independent encoder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/wire/control.h"
#include "common/wire/frame.h"

namespace pandora::wire {
namespace {

std::vector<std::pair<std::string, std::string>> seed_files(const std::string& sub) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(PANDORA_FUZZ_SEED_DIR) / sub)) {
    std::ifstream in(e.path(), std::ios::binary);
    out.emplace_back(e.path().filename().string(),
                     std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  return out;
}

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(SeedCorpus, FrameSeedsAreStreamsOfValidFrames) {
  const auto seeds = seed_files("frame");
  ASSERT_GE(seeds.size(), 8u);
  for (const auto& [name, data] : seeds) {
    const bool is_request = name.starts_with("req_");
    ASSERT_TRUE(is_request || name.starts_with("resp_")) << name;
    std::span<const uint8_t> rest = bytes(data);
    int frames = 0;
    while (!rest.empty()) {
      std::string why;
      size_t consumed = 0;
      if (is_request) {
        DecodedRequest r;
        ASSERT_EQ(decode_request(rest, r, &why), DecodeResult::kOk) << name << ": " << why;
        consumed = r.consumed;
      } else {
        DecodedResponse r;
        ASSERT_EQ(decode_response(rest, r, &why), DecodeResult::kOk) << name << ": " << why;
        consumed = r.consumed;
      }
      rest = rest.subspan(consumed);
      ++frames;
    }
    EXPECT_GE(frames, 1) << name;
  }
}

TEST(SeedCorpus, ControlSeedsCoverEveryTypeAndDecode) {
  std::vector<bool> seen(static_cast<size_t>(ControlType::kVerbsInfo) + 1, false);
  for (const auto& [name, data] : seed_files("control")) {
    Result<size_t> len = control_frame_length(bytes(data));
    ASSERT_TRUE(len.is_ok()) << name;
    EXPECT_EQ(*len, data.size()) << name;
    Result<ControlMessage> m = decode_control(bytes(data));
    ASSERT_TRUE(m.is_ok()) << name << ": " << m.status().to_string();
    std::string again;
    encode_control(again, *m);
    EXPECT_EQ(again, data) << name;
    seen[static_cast<size_t>(control_type(*m))] = true;
  }
  for (size_t t = 1; t < seen.size(); ++t) EXPECT_TRUE(seen[t]) << "no seed of control type " << t;
}

}  // namespace
}  // namespace pandora::wire
