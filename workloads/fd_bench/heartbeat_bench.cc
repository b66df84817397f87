// pandora-heartbeat-bench: what one failure-detector datagram costs
// (common/wire/heartbeat.h). A compute node or memory daemon encodes one
// heartbeat per period; each replica decodes one per sender per period,
// and whatever a stranger sends it (a forged datagram fails only at the
// MAC). "secret": the MAC computed from the secret per datagram (a
// one-off HMAC); "keyed": one HmacSha256 keyed once and reused, as
// HeartbeatSender and HeartbeatReceiver do.
//
//   pandora-heartbeat-bench [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/checksum.h"
#include "common/wire/heartbeat.h"

namespace pandora::wire {
namespace {

constexpr uint64_t kCluster = 0x5eed;
constexpr std::string_view kSecret = "a cluster secret of 32 bytes ...";

HeartbeatMessage heartbeat(uint64_t seq) {
  HeartbeatMessage m;
  m.header = HeartbeatHeader{HeartbeatType::kHeartbeat, SenderKind::kCompute, kCluster, 7, 0x1234, seq, 1};
  return m;
}

// `key`: the secret (a one-off MAC per datagram) or a keyed HmacSha256.
template <typename Key>
void encode_each(benchmark::State& state, Key&& key) {
  std::string out;
  uint64_t seq = 0;
  for (auto _ : state) {
    out.clear();
    if (!encode_heartbeat(out, heartbeat(++seq), key)) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(out.data());
  }
}

// The same datagram decoded again and again; state.range(0) != 0: it
// carries a wrong MAC (a stranger's flood).
template <typename Key>
void decode_each(benchmark::State& state, Key&& key) {
  std::string d;
  (void)encode_heartbeat(d, heartbeat(1), kSecret);
  if (state.range(0) != 0) d.back() = static_cast<char>(d.back() ^ 1);
  for (auto _ : state) {
    auto m = decode_heartbeat(bytes_of(d), key, kCluster);
    benchmark::DoNotOptimize(m);
  }
}

void BM_Encode_Secret(benchmark::State& state) { encode_each(state, kSecret); }
void BM_Encode_Keyed(benchmark::State& state) { encode_each(state, HmacSha256(bytes_of(kSecret))); }
void BM_Decode_Secret(benchmark::State& state) { decode_each(state, kSecret); }
void BM_Decode_Keyed(benchmark::State& state) { decode_each(state, HmacSha256(bytes_of(kSecret))); }
BENCHMARK(BM_Encode_Secret);
BENCHMARK(BM_Encode_Keyed);
BENCHMARK(BM_Decode_Secret)->ArgName("forged")->Arg(0)->Arg(1);
BENCHMARK(BM_Decode_Keyed)->ArgName("forged")->Arg(0)->Arg(1);

}  // namespace
}  // namespace pandora::wire

BENCHMARK_MAIN();
