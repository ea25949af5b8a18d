// See numpy_pcg64.h.
#include "model/numpy_pcg64.h"

#include <array>

#include "util/error.h"

namespace dsv4 {
namespace {

constexpr std::uint32_t kInitA = 0x43b0d7e5u, kMultA = 0x931e8875u;
constexpr std::uint32_t kInitB = 0x8b51f9ddu, kMultB = 0x58f38dedu;
constexpr std::uint32_t kMixMultL = 0xca01f9ddu, kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;  // 32-bit words: XSHIFT = 4 * 8 / 2
constexpr std::size_t kPool = 4;

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
  std::uint32_t r = kMixMultL * x - kMixMultR * y;
  r ^= r >> kXShift;
  return r;
}

// SeedSequence(seed).generate_state(4, np.uint64).
std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed) {
  std::vector<std::uint32_t> entropy;
  do {  // the integer as 32-bit words, least significant first (0 → one word 0)
    entropy.push_back(static_cast<std::uint32_t>(seed));
    seed >>= 32;
  } while (seed != 0);
  std::array<std::uint32_t, kPool> pool{};
  std::uint32_t hc = kInitA;
  for (std::size_t i = 0; i < kPool; ++i) pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0u, hc);
  for (std::size_t s = 0; s < kPool; ++s)
    for (std::size_t d = 0; d < kPool; ++d)
      if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], hc));
  for (std::size_t s = kPool; s < entropy.size(); ++s)
    for (std::size_t d = 0; d < kPool; ++d) pool[d] = mix(pool[d], hashmix(entropy[s], hc));

  std::array<std::uint32_t, 8> words{};
  std::uint32_t hb = kInitB;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint32_t v = pool[i % kPool];
    v ^= hb;
    hb *= kMultB;
    v *= hb;
    v ^= v >> kXShift;
    words[i] = v;
  }
  std::array<std::uint64_t, 4> out{};
  for (std::size_t i = 0; i < 4; ++i)
    out[i] = static_cast<std::uint64_t>(words[2 * i]) | (static_cast<std::uint64_t>(words[2 * i + 1]) << 32);
  return out;
}

constexpr unsigned __int128 kPcgMult =
    (static_cast<unsigned __int128>(2549297995355413924ull) << 64) | 4865540595714422341ull;

}  // namespace

NumpyPcg64::NumpyPcg64(std::uint64_t seed) {
  const auto v = seed_sequence_state(seed);
  const unsigned __int128 initstate = (static_cast<unsigned __int128>(v[0]) << 64) | v[1];
  const unsigned __int128 initseq = (static_cast<unsigned __int128>(v[2]) << 64) | v[3];
  state_ = 0;
  inc_ = (initseq << 1) | 1u;
  state_ = state_ * kPcgMult + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMult + inc_;
}

std::uint64_t NumpyPcg64::next64() {
  state_ = state_ * kPcgMult + inc_;
  const auto hi = static_cast<std::uint64_t>(state_ >> 64), lo = static_cast<std::uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  const std::uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64 - rot) & 63));
}

std::uint64_t NumpyPcg64::bounded(std::uint64_t high) {
  if (high == 0 || high - 1 <= 0xFFFFFFFFull)
    fail("NumpyPcg64::bounded: range {} uses numpy's 32-bit path, which is not reproduced", high);
  const std::uint64_t rng = high - 1;
  if (rng == ~0ull) return next64();
  const std::uint64_t rng_excl = high;
  unsigned __int128 m = static_cast<unsigned __int128>(next64()) * rng_excl;
  auto leftover = static_cast<std::uint64_t>(m);
  if (leftover < rng_excl) {
    const std::uint64_t threshold = (~0ull - rng) % rng_excl;
    while (leftover < threshold) {
      m = static_cast<unsigned __int128>(next64()) * rng_excl;
      leftover = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

std::vector<std::int64_t> numpy_integers(std::uint64_t seed, std::int64_t high, std::size_t n) {
  if (high <= 0) fail("numpy_integers: high must be positive, got {}", high);
  NumpyPcg64 g(seed);
  std::vector<std::int64_t> out(n);
  for (auto& v : out) v = static_cast<std::int64_t>(g.bounded(static_cast<std::uint64_t>(high)));
  return out;
}

}  // namespace dsv4
