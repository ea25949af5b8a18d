// RoPE with YaRN (§2.8). See rope.h.
#include "kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels/fp32_ops.h"
#include "kernels/transcendental.h"
#include "numeric/bf16.h"
#include "util/error.h"
#include "util/scratch_arena.h"

namespace dsv4::kernels {

std::pair<std::int64_t, std::int64_t> yarn_correction_range(double beta_fast, double beta_slow,
                                                            std::size_t dim, double base,
                                                            std::int64_t original_seq_len) {
  // corr(r) = dim · ln(orig / (r · 2π)) / (2 ln base), evaluated left to right as the Python
  // expression `dim * math.log(orig / (r * 2 * math.pi)) / (2 * math.log(base))`.
  const double d = static_cast<double>(dim);
  const double orig = static_cast<double>(original_seq_len);
  auto corr = [&](double r) {
    const double denom = fp64_barrier((r * 2.0) * std::numbers::pi);
    return fp64_barrier(d * std::log(orig / denom)) / (2.0 * std::log(base));
  };
  const std::int64_t low = std::max<std::int64_t>(static_cast<std::int64_t>(std::floor(corr(beta_fast))), 0);
  const std::int64_t high = std::min<std::int64_t>(static_cast<std::int64_t>(std::ceil(corr(beta_slow))),
                                                   static_cast<std::int64_t>(dim) - 1);
  return {low, high};
}

std::vector<float> yarn_ramp(std::int64_t low, std::int64_t high, std::size_t n) {
  // The reference divides by (high − low) unless the two are equal (then 0.001); both the
  // bounds and the span are converted to fp32 before the fp32 ops.
  const float span = high != low ? static_cast<float>(high - low) : static_cast<float>(0.001);
  const float lo = static_cast<float>(low);
  std::vector<float> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = div32(sub32(static_cast<float>(i), lo), span);
    // np.clip(v, 0, 1): NaN cannot occur (span ≠ 0, finite operands).
    r[i] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
  }
  return r;
}

std::vector<float> rope_freqs(const RopeParams& p) {
  if (p.dim == 0 || p.dim % 2 != 0) fail("rope_freqs: rope dim {} must be even and positive", p.dim);
  const std::size_t half = p.dim / 2;
  const float base32 = static_cast<float>(p.base);
  const float dim32 = static_cast<float>(p.dim);
  std::vector<float> freq(half);
  for (std::size_t i = 0; i < half; ++i) {
    const float expo = div32(static_cast<float>(2 * i), dim32);
    freq[i] = div32(1.0f, strict_pow(base32, expo));
  }
  if (p.yarn && p.original_seq_len > 0) {
    const auto [low, high] =
        yarn_correction_range(p.beta_fast, p.beta_slow, p.dim, p.base, p.original_seq_len);
    const std::vector<float> ramp = yarn_ramp(low, high, half);
    const float factor = static_cast<float>(p.factor);
    for (std::size_t i = 0; i < half; ++i) {
      const float smooth = sub32(1.0f, ramp[i]);
      const float t1 = div32(freq[i], factor);
      const float t2 = sub32(1.0f, smooth);
      freq[i] = add32(mul32(t1, t2), mul32(freq[i], smooth));
    }
  }
  return freq;
}

std::span<const float> RopeTable::cos_row(std::size_t pos) const {
  if (pos >= n_pos) fail("RopeTable: position {} outside the table of {}", pos, n_pos);
  return std::span<const float>(cos).subspan(pos * half, half);
}

std::span<const float> RopeTable::sin_row(std::size_t pos) const {
  if (pos >= n_pos) fail("RopeTable: position {} outside the table of {}", pos, n_pos);
  return std::span<const float>(sin).subspan(pos * half, half);
}

RopeTable rope_table(const RopeParams& p, std::size_t n_pos) {
  const std::vector<float> freq = rope_freqs(p);
  RopeTable t;
  t.n_pos = n_pos;
  t.half = freq.size();
  t.cos.resize(n_pos * t.half);
  t.sin.resize(n_pos * t.half);
  for (std::size_t pos = 0; pos < n_pos; ++pos) {
    const float pf = static_cast<float>(pos);  // np.arange(n, dtype=float32)
    for (std::size_t i = 0; i < t.half; ++i) {
      const float angle = mul32(pf, freq[i]);
      t.cos[pos * t.half + i] = strict_cos(angle);
      t.sin[pos * t.half + i] = strict_sin(angle);
    }
  }
  return t;
}

void apply_rope(std::span<float> x, std::size_t tokens, std::size_t n_vec, std::size_t d,
                std::span<const float> cos, std::span<const float> sin, std::size_t half,
                bool inverse) {
  if (2 * half > d) fail("apply_rope: {} rope dims exceed the vector width {}", 2 * half, d);
  if (x.size() != tokens * n_vec * d)
    fail("apply_rope: x has {} elements, expected {}x{}x{}", x.size(), tokens, n_vec, d);
  if (cos.size() != tokens * half || sin.size() != tokens * half)
    fail("apply_rope: cos/sin have {}/{} elements, expected {}x{}", cos.size(), sin.size(), tokens, half);
  const std::size_t off = d - 2 * half;
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* ct = cos.data() + t * half;
    const float* st = sin.data() + t * half;
    for (std::size_t v = 0; v < n_vec; ++v) {
      float* xv = x.data() + (t * n_vec + v) * d + off;
      for (std::size_t j = 0; j < half; ++j) {
        const double a = xv[2 * j], b = xv[2 * j + 1];
        const double c = ct[j], s = st[j];
        // Four exact products; each sum below is one float64 rounding of the exact value.
        const double ac = fp64_barrier(a * c), bs = fp64_barrier(b * s);
        const double as = fp64_barrier(a * s), bc = fp64_barrier(b * c);
        const double ra = inverse ? ac + bs : ac - bs;
        const double rb = inverse ? bc - as : as + bc;
        xv[2 * j] = round_bf16(static_cast<float>(ra));
        xv[2 * j + 1] = round_bf16(static_cast<float>(rb));
      }
    }
  }
}

void apply_rope(std::span<float> x, std::size_t n_vec, std::size_t d, const RopeTable& table,
                std::span<const std::int64_t> positions, bool inverse) {
  const std::size_t tokens = positions.size();
  ScratchFrame frame;
  const std::span<float> c = frame.uninit<float>(tokens * table.half), s = frame.uninit<float>(tokens * table.half);
  for (std::size_t t = 0; t < tokens; ++t) {
    if (positions[t] < 0) fail("apply_rope: negative position {}", positions[t]);
    const auto cr = table.cos_row(static_cast<std::size_t>(positions[t]));
    const auto sr = table.sin_row(static_cast<std::size_t>(positions[t]));
    std::copy(cr.begin(), cr.end(), c.begin() + static_cast<std::ptrdiff_t>(t * table.half));
    std::copy(sr.begin(), sr.end(), s.begin() + static_cast<std::ptrdiff_t>(t * table.half));
  }
  apply_rope(x, tokens, n_vec, d, c, s, table.half, inverse);
}

}  // namespace dsv4::kernels
