// Stand-in for libFuzzer when the compiler has none (gcc): runs the target
// on every seed file, then on a fixed number of deterministic inputs - half
// random bytes, half mutated seeds - so the fuzz targets still run as tests
// and their invariants are still checked on every build.
//
//   fuzz_frame [--iterations=N] SEED_DIR_OR_FILE...
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

// xorshift64*: deterministic and independent of the standard library's
// distributions, so every platform replays the same inputs.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 0x2545F4914F6CDD1Dull;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Values that sit on the codecs' boundaries: lengths, limits, magics.
constexpr uint64_t kInteresting[] = {0,          1,          7,          8,          9,
                                     12,         0xFF,       0xFFFF,     0x10000,    4u << 20,
                                     (4u << 20) + 1,         4096,       4097,       0x5044,
                                     0x4C544350, 0x7FFFFFFF, 0xFFFFFFFF, 1ull << 63, UINT64_MAX - 7,
                                     UINT64_MAX};

void mutate(Bytes& b, const std::vector<Bytes>& seeds, Rng& rng) {
  const int steps = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < steps; ++i) {
    switch (rng.below(8)) {
      case 0:  // flip a bit
        if (!b.empty()) b[rng.below(b.size())] ^= static_cast<uint8_t>(1u << rng.below(8));
        break;
      case 1:  // set a byte
        if (!b.empty()) b[rng.below(b.size())] = static_cast<uint8_t>(rng.next());
        break;
      case 2:  // insert a byte
        b.insert(b.begin() + static_cast<ptrdiff_t>(rng.below(b.size() + 1)), static_cast<uint8_t>(rng.next()));
        break;
      case 3:  // erase a byte
        if (!b.empty()) b.erase(b.begin() + static_cast<ptrdiff_t>(rng.below(b.size())));
        break;
      case 4:  // truncate
        b.resize(rng.below(b.size() + 1));
        break;
      case 5: {  // append (part of) another seed: multi-frame streams
        const Bytes& other = seeds[rng.below(seeds.size())];
        const size_t n = rng.below(other.size() + 1);
        b.insert(b.end(), other.begin(), other.begin() + static_cast<ptrdiff_t>(n));
        break;
      }
      case 6: {  // overwrite 1, 2, 4 or 8 bytes with a boundary value
        const uint64_t v = kInteresting[rng.below(std::size(kInteresting))];
        const size_t width = size_t{1} << rng.below(4);
        if (b.size() >= width) {
          const size_t at = rng.below(b.size() - width + 1);
          for (size_t k = 0; k < width; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
        }
        break;
      }
      default:  // duplicate a range
        if (!b.empty()) {
          const size_t at = rng.below(b.size());
          const size_t n = 1 + rng.below(std::min<size_t>(16, b.size() - at));
          Bytes range(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + n));
          b.insert(b.begin() + static_cast<ptrdiff_t>(rng.below(b.size() + 1)), range.begin(), range.end());
        }
        break;
    }
  }
}

void run(const Bytes& b) { LLVMFuzzerTestOneInput(b.data(), b.size()); }

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 200000;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--iterations=")) {
      iterations = std::strtoull(argv[i] + 13, nullptr, 10);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());  // same order on every run
      for (const auto& f : files) seeds.push_back(read_file(f));
    } else if (std::filesystem::is_regular_file(arg, ec)) {
      seeds.push_back(read_file(arg));
    } else {
      std::fprintf(stderr, "%s: no such seed file or directory: %s\n", argv[0], argv[i]);
      return 2;
    }
  }

  const auto start = std::chrono::steady_clock::now();
  for (const Bytes& s : seeds) run(s);
  Rng rng(0x9E3779B97F4A7C15ull);
  for (uint64_t i = 0; i < iterations; ++i) {
    Bytes b;
    if (!seeds.empty() && i % 2 == 0) {
      b = seeds[rng.below(seeds.size())];
      mutate(b, seeds, rng);
    } else {
      b.resize(rng.below(257));
      for (uint8_t& x : b) x = static_cast<uint8_t>(rng.next());
    }
    run(b);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %zu seeds + %llu generated inputs in %.1f s (%.0f exec/s), no invariant violated\n", argv[0],
              seeds.size(), static_cast<unsigned long long>(iterations), secs,
              static_cast<double>(seeds.size() + iterations) / std::max(secs, 1e-9));
  return 0;
}
