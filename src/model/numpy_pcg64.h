#pragma once
// NumPy's `np.random.default_rng(seed).integers(0, high, size, dtype=np.int64)`, reproduced for
// the one place the model depends on it: the Engram hash multipliers (spec §8.1), which the
// reference draws at init from default_rng(10007 · layer_id). Deriving them here (rather than
// pasting the released values) keeps any config — other layer ids, another compressed vocab
// size and therefore another bound — exact. tests/model/engram_test.cc checks the released
// constants of §8.1 and compares with numpy itself.
//
// The pieces, as NumPy ≥ 1.17 defines them:
//   SeedSequence(seed): the integer's 32-bit little-endian words mixed into a 4-word pool
//     (hashmix / mix with the constants of numpy/random/bit_generator.pyx), then
//     generate_state(4, uint64) with the second hash constant;
//   PCG64: 128-bit LCG state with the XSL-RR 64-bit output, seeded by
//     pcg_setseq_128_srandom(state = words 0,1; increment = words 2,3);
//   integers(0, high) for a 64-bit range: Lemire's multiply-shift with rejection
//     (random_bounded_uint64, use_masked = False); ranges below 2^32 use the 32-bit path, which
//     this engine never needs and refuses.
#include <cstdint>
#include <vector>

namespace dsv4 {

class NumpyPcg64 {
 public:
  explicit NumpyPcg64(std::uint64_t seed);
  std::uint64_t next64();
  // integers(0, high) for high − 1 ≥ 2^32 (throws dsv4::Error otherwise).
  std::uint64_t bounded(std::uint64_t high);

 private:
  unsigned __int128 state_ = 0, inc_ = 0;
};

// default_rng(seed).integers(0, high, size=n, dtype=np.int64).
std::vector<std::int64_t> numpy_integers(std::uint64_t seed, std::int64_t high, std::size_t n);

}  // namespace dsv4
